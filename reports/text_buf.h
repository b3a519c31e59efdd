/* A growing text buffer for the reports (reports/report.c, drift*.c):
 * appends never fail on the spot, out of memory is sticky (oom) and
 * checked once when the text is complete. Internal to reports/. */
#ifndef ADM_TEXT_BUF_H
#define ADM_TEXT_BUF_H

#include <stddef.h>
#include <stdio.h>

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

/* ---------------------------------------------------------------- the terminal */

/* Columns s takes on a terminal: its UTF-8 code points (the escaped text
 * the reports print is well-formed UTF-8; wide characters count one). */
int adm_text_cols(const char *s);
/* s (already escaped) left-aligned in width columns, never cut: a longer s
 * is printed whole. */
void adm_text_pad(FILE *f, const char *s, int width);
/* Prints text from column `indent`, wrapped at spaces so that no line
 * passes width columns (a word longer than a line stands alone); `lead`
 * (its own columns wide) is printed first in place of the indent of the
 * first line. A unit ("D", "dB", "ulps", "x") is never left at the start
 * of a line apart from its number. */
void adm_text_wrap(FILE *f, const char *lead, int indent, int width, const char *text);
/* An SGR colour sequence when colour is on, else "". */
#define ADM_SGR_RESET "\033[0m"
#define ADM_SGR_RED "\033[1;31m"   /* a violated claim, an error, a failure: only these */
#define ADM_SGR_GREEN "\033[32m"   /* a claim that holds, a pass */
#define ADM_SGR_PURPLE "\033[35m"  /* promotable: stricter than claimed */
#define ADM_SGR_BOLD "\033[1m"
static inline const char *adm_sgr(int color, const char *seq) { return color ? seq : ""; }

/* The stylesheet of every HTML page admit writes (report and drift), one
 * text so that the pages look and behave alike at every width. */
extern const char adm_page_style[];

#endif
