/* The reports' growing text buffer (text_buf.h). */
#include "text_buf.h"

#include "adm_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void adm_buf_put(adm_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? 2 * b->cap : 4096) + n;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void adm_buf_puts(adm_buf *b, const char *s) { adm_buf_put(b, s, strlen(s)); }

void adm_buf_printf(adm_buf *b, const char *fmt, ...)
{
    char t[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    adm_buf_put(b, t, (size_t)n < sizeof t ? (size_t)n : sizeof t - 1);
}

void adm_buf_xml(adm_buf *b, const char *s)
{
    char small[512], *buf = small;
    size_t need = adm_xml_escape(small, sizeof small, s);
    if (need >= sizeof small) {
        if (!(buf = malloc(need + 1))) {
            b->oom = 1;
            return;
        }
        adm_xml_escape(buf, need + 1, s);
    }
    adm_buf_put(b, buf, need);
    if (buf != small) free(buf);
}

/* ---------------------------------------------------------------- the terminal */

int adm_text_cols(const char *s)
{
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

void adm_text_pad(FILE *f, const char *s, int width)
{
    int n = adm_text_cols(s);
    fputs(s, f);
    for (; n < width; n++) fputc(' ', f);
}

/* A word that must stay on the line of the number before it. */
static int is_unit(const char *w, size_t len)
{
    static const char *const units[] = {"D", "dB", "ulp", "ulps", "x"};
    size_t k = 0;
    while (k < len && ((w[k] >= 'a' && w[k] <= 'z') || (w[k] >= 'A' && w[k] <= 'Z'))) k++;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (k == strlen(units[u]) && !strncmp(w, units[u], k)) {
            for (size_t j = k; j < len; j++)
                if (!strchr(",.;:)", w[j])) return 0;
            return 1;
        }
    return 0;
}

void adm_text_wrap(FILE *f, const char *lead, int indent, int width, const char *text)
{
    int col = adm_text_cols(lead), bol = 0; /* bol: at the start of a continuation line */
    const char *p = text;
    fputs(lead, f);
    while (*p == ' ') p++;
    while (*p) {
        const char *w = p, *e;
        int len;
        while (*p && *p != ' ') p++;
        e = p;
        /* a number and its unit move together */
        {
            const char *q = p;
            while (*q == ' ') q++;
            if (*q) {
                const char *qe = q;
                while (*qe && *qe != ' ') qe++;
                if (is_unit(q, (size_t)(qe - q))) e = qe;
            }
        }
        len = 0;
        for (const char *c = w; c < e; c++) len += ((unsigned char)*c & 0xC0) != 0x80;
        if (!bol && col + 1 + len > width && col > indent) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            bol = 1;
        }
        if (!bol) {
            fputc(' ', f);
            col++;
        }
        fwrite(w, 1, (size_t)(e - w), f);
        col += len;
        bol = 0;
        p = e;
        while (*p == ' ') p++;
    }
    fputc('\n', f);
}
