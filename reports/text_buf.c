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
