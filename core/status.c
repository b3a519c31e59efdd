/* Status codes and the per-thread last error. */
#include "adm_core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    const char *text;
} status_table[ADM_STATUS_COUNT] = {
    [ADM_OK] = {"ADM_OK", "success"},
    [ADM_ERR_INVALID] = {"ADM_ERR_INVALID", "invalid argument"},
    [ADM_ERR_NOMEM] = {"ADM_ERR_NOMEM", "out of memory"},
    [ADM_ERR_OVERFLOW] = {"ADM_ERR_OVERFLOW", "size overflow"},
    [ADM_ERR_RANGE] = {"ADM_ERR_RANGE", "value out of range"},
    [ADM_ERR_DTYPE] = {"ADM_ERR_DTYPE", "unsupported element type"},
    [ADM_ERR_SHAPE] = {"ADM_ERR_SHAPE", "shape mismatch"},
    [ADM_ERR_IO] = {"ADM_ERR_IO", "input/output error"},
    [ADM_ERR_FORMAT] = {"ADM_ERR_FORMAT", "malformed file"},
    [ADM_ERR_VERSION] = {"ADM_ERR_VERSION", "unsupported format version"},
    [ADM_ERR_NOT_FOUND] = {"ADM_ERR_NOT_FOUND", "not found"},
    [ADM_ERR_UNSUPPORTED] = {"ADM_ERR_UNSUPPORTED", "not supported"},
    [ADM_ERR_HDF5] = {"ADM_ERR_HDF5", "HDF5 error"},
    [ADM_ERR_JSON] = {"ADM_ERR_JSON", "malformed JSON"},
    [ADM_ERR_CUDA] = {"ADM_ERR_CUDA", "CUDA error"},
    [ADM_ERR_NO_DEVICE] = {"ADM_ERR_NO_DEVICE", "no usable GPU"},
    [ADM_ERR_INTERNAL] = {"ADM_ERR_INTERNAL", "internal error"},
};

const char *adm_strerror(adm_status s)
{
    if ((int)s < 0 || s >= ADM_STATUS_COUNT) return "unknown status";
    return status_table[s].text;
}

const char *adm_status_name(adm_status s)
{
    if ((int)s < 0 || s >= ADM_STATUS_COUNT) return "ADM_ERR_UNKNOWN";
    return status_table[s].name;
}

adm_status adm_status_from_name(const char *name, adm_status *out)
{
    for (int i = 0; i < ADM_STATUS_COUNT; i++)
        if (name && strcmp(name, status_table[i].name) == 0) {
            *out = (adm_status)i;
            return ADM_OK;
        }
    return ADM_FAIL(ADM_ERR_INVALID, "unknown status name '%s'", name ? name : "(null)");
}

/* Length of the well-formed UTF-8 sequence at p (2 to 4), or 0. */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c >= 0xc2 && c <= 0xdf) return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf; /* no overlongs, no surrogates */
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf; /* at most U+10FFFF */
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* The escape of the character at p into e (at most 8 bytes, NUL-terminated)
 * and how many input bytes it takes; e is "" when it passes unchanged.
 * xml adds the five markup characters as entities. */
static int escape_at(const unsigned char *p, char *e, int xml)
{
    int n;
    e[0] = '\0';
    if (*p < 0x20 || *p == 0x7f) {
        if (*p == '\n') strcpy(e, "\\n");
        else if (*p == '\r') strcpy(e, "\\r");
        else if (*p == '\t') strcpy(e, "\\t");
        else snprintf(e, 8, "\\x%02x", *p);
        return 1;
    }
    if (*p < 0x80) {
        if (xml) {
            switch (*p) {
            case '&': strcpy(e, "&amp;"); break;
            case '<': strcpy(e, "&lt;"); break;
            case '>': strcpy(e, "&gt;"); break;
            case '"': strcpy(e, "&quot;"); break;
            case '\'': strcpy(e, "&#39;"); break;
            default: break;
            }
        }
        return 1;
    }
    n = utf8_len(p);
    if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) { /* C1 controls, U+0080..U+009F */
        snprintf(e, 8, "\\u%04x", p[1]);
        return 2;
    }
    if (n) return n;
    snprintf(e, 8, "\\x%02x", *p);
    return 1;
}

/* Never cuts an escape or a UTF-8 sequence at the buffer's end: what does
 * not fit whole is left out, and the return value says what was needed. */
static size_t escape(char *out, size_t cap, const char *in, int xml)
{
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    size_t need = 0, end = 0;
    int fits = 1;
    while (*p) {
        char e[8];
        int n = escape_at(p, e, xml);
        size_t len = e[0] ? strlen(e) : (size_t)n;
        if (fits && need + len < cap) {
            memcpy(out + need, e[0] ? e : (const char *)p, len);
            end = need + len;
        } else {
            fits = 0;
        }
        need += len;
        p += n;
    }
    if (cap) out[end] = '\0';
    return need;
}

size_t adm_text_escape(char *out, size_t cap, const char *in) { return escape(out, cap, in, 0); }

size_t adm_xml_escape(char *out, size_t cap, const char *in) { return escape(out, cap, in, 1); }

int adm_text_clean(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        char e[8];
        int n = escape_at(p, e, 0);
        if (e[0]) return 0;
        p += n;
    }
    return 1;
}

adm_status adm_name_check(const char *what, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    char esc[600];
    adm_text_escape(esc, sizeof esc, name ? name : "");
    if (n == 0 || n > ADM_NAME_MAX)
        return ADM_FAIL(ADM_ERR_INVALID, "%s '%s' must have 1 to %d characters", what, esc, ADM_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-' || ch == '.' || ch == '+'))
            return ADM_FAIL(ADM_ERR_INVALID, "%s '%s' may hold only letters, digits and _ - . + (character %zu is "
                            "not one)", what, esc, i + 1);
    }
    return ADM_OK;
}

/* Room for two paths of PATH_MAX bytes (a table's and a capture's) with
 * the field and the reason. A longer message keeps its head (the file and
 * the field) and its tail (the reason) and loses its middle. */
#define ADM_ERRBUF 16384
static _Thread_local struct {
    adm_status code;
    char msg[ADM_ERRBUF];
    char where[256];
} last_error;

/* s (n bytes, escaped) into last_error.msg: whole when it fits, else half
 * the room from its head, " [...] ", and the rest from its tail; no cut
 * inside a UTF-8 sequence. */
static void set_message(const char *s, size_t n)
{
    static const char mark[] = " [...] ";
    size_t room = ADM_ERRBUF - 1 - (sizeof mark - 1), head = room / 2, tail;
    if (n < ADM_ERRBUF) {
        memmove(last_error.msg, s, n);
        last_error.msg[n] = '\0';
        return;
    }
    while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80) head--;
    tail = n - (room - head);
    while (tail < n && ((unsigned char)s[tail] & 0xc0) == 0x80) tail++;
    memmove(last_error.msg, s, head);
    memcpy(last_error.msg + head, mark, sizeof mark - 1);
    memmove(last_error.msg + head + sizeof mark - 1, s + tail, n - tail);
    last_error.msg[head + sizeof mark - 1 + n - tail] = '\0';
}

/* raw escaped (adm_text_escape) into last_error.msg by set_message; the
 * escaped text goes through the heap when it is longer than the buffer. */
static void set_escaped(const char *raw)
{
    char small[ADM_ERRBUF], *big;
    size_t need = adm_text_escape(small, sizeof small, raw);
    if (need < sizeof small) {
        set_message(small, need);
    } else if ((big = malloc(need + 1))) {
        adm_text_escape(big, need + 1, raw);
        set_message(big, need);
        free(big);
    } else {
        set_message(small, strlen(small));
    }
}

/* The formatted text: in buf when it fits, else on the heap (*heap, to
 * free), else what fits. */
static const char *format(char *buf, size_t cap, char **heap, const char *fmt, va_list ap)
{
    va_list again;
    int n;
    *heap = NULL;
    va_copy(again, ap);
    n = vsnprintf(buf, cap, fmt, ap);
    if (n >= 0 && (size_t)n >= cap && (*heap = malloc((size_t)n + 1))) vsnprintf(*heap, (size_t)n + 1, fmt, again);
    va_end(again);
    return *heap ? *heap : buf;
}

adm_status adm_error_set(adm_status code, const char *file, int line,
                         const char *fmt, ...)
{
    va_list ap;
    char raw[ADM_ERRBUF], *heap;
    const char *text;
    va_start(ap, fmt);
    /* formatted before the message changes: an argument may be it */
    text = format(raw, sizeof raw, &heap, fmt, ap);
    va_end(ap);
    last_error.code = code;
    set_escaped(text);
    free(heap);
    snprintf(last_error.where, sizeof last_error.where, "%s:%d", file ? file : "?", line);
    return code;
}

void adm_error_prefix(const char *fmt, ...)
{
    char raw[ADM_ERRBUF], pre[ADM_ERRBUF], *heap, *big = NULL;
    const char *text;
    size_t np, nold = strlen(last_error.msg);
    va_list ap;
    va_start(ap, fmt);
    text = format(raw, sizeof raw, &heap, fmt, ap);
    va_end(ap);
    np = adm_text_escape(pre, sizeof pre, text);
    if (np + nold < ADM_ERRBUF) {
        memmove(last_error.msg + np, last_error.msg, nold + 1);
        memcpy(last_error.msg, pre, np);
    } else if ((big = malloc(np + nold + 1))) {
        /* the whole text on the heap, then its head and tail kept */
        adm_text_escape(big, np + 1, text);
        memcpy(big + np, last_error.msg, nold + 1);
        set_message(big, np + nold);
    } else {
        set_message(last_error.msg, nold);
    }
    free(big);
    free(heap);
}

const char *adm_error_message(void)
{
    if (last_error.msg[0] == '\0') return adm_strerror(last_error.code);
    return last_error.msg;
}

const char *adm_error_where(void) { return last_error.where; }
adm_status adm_error_code(void) { return last_error.code; }

void adm_error_clear(void)
{
    last_error.code = ADM_OK;
    last_error.msg[0] = '\0';
    last_error.where[0] = '\0';
}
