/* A growing text buffer for the reports (reports/report.c, drift*.c):
 * appends never fail on the spot, out of memory is sticky (oom) and
 * checked once when the text is complete. Internal to reports/. */
#ifndef ADM_TEXT_BUF_H
#define ADM_TEXT_BUF_H

#include <stddef.h>

typedef struct adm_buf {
    char *p;        /* NUL-terminated after every append; NULL while empty */
    size_t n, cap;
    int oom;
} adm_buf;

void adm_buf_put(adm_buf *b, const char *s, size_t n);
void adm_buf_puts(adm_buf *b, const char *s);
/* Formatted text of at most 1023 bytes (longer is cut). */
void adm_buf_printf(adm_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* XML and HTML text, escaped by adm_xml_escape. */
void adm_buf_xml(adm_buf *b, const char *s);

#endif
