/* core: status codes, numeric formats, tensors.
 *
 * The formats are proven three ways: known values (table), every 8- and
 * 16-bit encoding decoded and re-encoded (exhaustive), every fp32 input
 * rounded into bf16 and fp16 and checked against the defining property of
 * the rounding on an exact table of the format's values (exhaustive over
 * 2^32, split into parts ADM_SWEEP_PART=k/n so ctest runs them in
 * parallel), plus the generic encoder against MPFR on a sample. */
#include "adm_core.h"

#include <check.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ table tests */

typedef struct enc_case {
    adm_dtype dt;
    double x;
    adm_round mode;
    unsigned flags;
    uint64_t bits;
} enc_case;

static const enc_case enc_cases[] = {
    {ADM_BF16, 1.0, ADM_RNE, 0, 0x3f80},
    {ADM_BF16, 1.0 + 0x1p-8, ADM_RNE, 0, 0x3f80},        /* tie, to even */
    {ADM_BF16, 1.0 + 3 * 0x1p-8, ADM_RNE, 0, 0x3f82},    /* tie, to even (up) */
    {ADM_BF16, 1.0 + 0x1p-8 + 0x1p-30, ADM_RNE, 0, 0x3f81},
    {ADM_BF16, -2.0, ADM_RNE, 0, 0xc000},
    {ADM_BF16, 0x1.ffp127, ADM_RNE, 0, 0x7f80},          /* past max+half: Inf */
    {ADM_BF16, 0x1.ffp127, ADM_RTZ, 0, 0x7f7f},
    {ADM_BF16, 0x1p-133, ADM_RNE, 0, 0x0001},            /* min subnormal */
    {ADM_BF16, 0x1p-134, ADM_RNE, 0, 0x0000},            /* tie to even zero */
    {ADM_BF16, -0x1p-134, ADM_RNE, 0, 0x8000},           /* keeps the sign */
    {ADM_BF16, 1.0 + 0x1p-7 - 0x1p-20, ADM_RTZ, 0, 0x3f80},
    {ADM_BF16, 1.0 + 0x1p-20, ADM_RUP, 0, 0x3f81},
    {ADM_BF16, -1.0 - 0x1p-20, ADM_RDN, 0, 0xbf81},
    {ADM_BF16, -1.0 - 0x1p-20, ADM_RUP, 0, 0xbf80},
    {ADM_FP16, 65504.0, ADM_RNE, 0, 0x7bff},
    {ADM_FP16, 65519.99, ADM_RNE, 0, 0x7bff},
    {ADM_FP16, 65520.0, ADM_RNE, 0, 0x7c00},             /* tie at max+half: Inf */
    {ADM_FP16, 65520.0, ADM_RTZ, 0, 0x7bff},
    {ADM_FP16, 1e6, ADM_RNE, ADM_CVT_SATFINITE, 0x7bff},
    {ADM_FP16, 0x1p-24, ADM_RNE, 0, 0x0001},
    {ADM_FP16, 0x1p-25, ADM_RNE, 0, 0x0000},
    {ADM_FP16, 0x1.8p-25, ADM_RNE, 0, 0x0001},
    {ADM_FP16, 0x1p-14, ADM_RNE, 0, 0x0400},             /* min normal */
    {ADM_FP16, 0x1.ffcp-15, ADM_RNE, 0, 0x0400},         /* tie above max subnormal: to the even min normal */
    {ADM_FP16, 1.0 / 3.0, ADM_RNE, 0, 0x3555},
    {ADM_FP32, 1.0 / 3.0, ADM_RNE, 0, 0x3eaaaaab},
    {ADM_FP32, 1.0 / 3.0, ADM_RTZ, 0, 0x3eaaaaaa},
    {ADM_FP32, 0x1p-149, ADM_RNE, 0, 0x00000001},
    {ADM_FP32, 0x1p-150, ADM_RNE, 0, 0x00000000},
    {ADM_E4M3, 448.0, ADM_RNE, 0, 0x7e},
    {ADM_E4M3, 464.0, ADM_RNE, 0, 0x7e},                 /* tie, 448 is even */
    {ADM_E4M3, 465.0, ADM_RNE, 0, 0x7f},                 /* rounds to 480: NaN, as PyTorch */
    {ADM_E4M3, 465.0, ADM_RNE, ADM_CVT_SATFINITE, 0x7e},
    {ADM_E4M3, 1000.0, ADM_RTZ, 0, 0x7e},
    {ADM_E4M3, -INFINITY, ADM_RNE, 0, 0xff},
    {ADM_E4M3, -INFINITY, ADM_RNE, ADM_CVT_SATFINITE, 0xfe},
    {ADM_E4M3, 0x1p-9, ADM_RNE, 0, 0x01},
    {ADM_E4M3, 0x1p-10, ADM_RNE, 0, 0x00},
    {ADM_E4M3, 0x1.8p-10, ADM_RNE, 0, 0x01},
    {ADM_E4M3, 1.0, ADM_RNE, 0, 0x38},
    {ADM_E4M3, 0.0625 * 1.9375, ADM_RNE, 0, 0x20},       /* 0.12109375 rounds up to 0.125 */
    {ADM_E5M2, 57344.0, ADM_RNE, 0, 0x7b},
    {ADM_E5M2, 61440.0, ADM_RNE, 0, 0x7c},               /* tie at max+half: Inf */
    {ADM_E5M2, 61439.0, ADM_RNE, 0, 0x7b},
    {ADM_E5M2, 1e9, ADM_RNE, ADM_CVT_SATFINITE, 0x7b},
    {ADM_E5M2, 0x1p-16, ADM_RNE, 0, 0x01},
    {ADM_E5M2, 1.0, ADM_RNE, 0, 0x3c},
    {ADM_E2M1, 0.25, ADM_RNE, 0, 0x0},                   /* tie between 0 and 0.5: 0 */
    {ADM_E2M1, 0.75, ADM_RNE, 0, 0x2},                   /* tie between 0.5 and 1: 1 */
    {ADM_E2M1, 2.5, ADM_RNE, 0, 0x4},                    /* tie between 2 and 3: 2 */
    {ADM_E2M1, 5.0, ADM_RNE, 0, 0x6},                    /* tie between 4 and 6: 4 */
    {ADM_E2M1, 5.01, ADM_RNE, 0, 0x7},
    {ADM_E2M1, 7.0, ADM_RNE, 0, 0x7},                    /* no Inf: saturates */
    {ADM_E2M1, -INFINITY, ADM_RNE, 0, 0xf},
    {ADM_E2M1, -0.0, ADM_RNE, 0, 0x8},
    {ADM_E2M1, 1.5, ADM_RNE, 0, 0x3},
};

START_TEST(test_encode_table)
{
    const enc_case *c = &enc_cases[_i];
    uint64_t b = 0;
    ck_assert_int_eq(adm_format_encode(c->dt, c->x, c->mode, c->flags, &b), ADM_OK);
    ck_assert_msg(b == c->bits, "%s(%a, mode %d, flags %u) = 0x%llx, expected 0x%llx", adm_dtype_name(c->dt),
                  c->x, (int)c->mode, c->flags, (unsigned long long)b, (unsigned long long)c->bits);
}
END_TEST

START_TEST(test_format_info)
{
    /* Largest finite and smallest subnormal decode to the documented values. */
    for (int d = ADM_BF16; d < ADM_DTYPE_COUNT; d++) {
        const adm_format_info *f = adm_format_get((adm_dtype)d);
        adm_dtype back;
        ck_assert_ptr_nonnull(f);
        ck_assert(adm_format_decode((adm_dtype)d, f->max_bits) == f->max_finite);
        ck_assert(adm_format_decode((adm_dtype)d, 1) == f->min_subnormal);
        ck_assert(adm_format_decode((adm_dtype)d, 1ull << f->man_bits) == f->min_normal);
        ck_assert_int_eq(adm_dtype_from_name(f->name, &back), ADM_OK);
        ck_assert_int_eq(back, d);
    }
    ck_assert_ptr_null(adm_format_get(ADM_DTYPE_INVALID));
    ck_assert_ptr_null(adm_format_get(ADM_DTYPE_COUNT));
    {
        adm_dtype dt;
        ck_assert_int_eq(adm_dtype_from_name("int7", &dt), ADM_ERR_DTYPE);
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "int7"));
    }
}
END_TEST

/* ------------------------------------------------------------ special values */

START_TEST(test_special_values)
{
    uint64_t b;
    double lo, hi;
    /* NaN keeps its sign and is quiet; e2m1 has none to give. */
    ck_assert_int_eq(adm_format_encode(ADM_BF16, -NAN, ADM_RNE, 0, &b), ADM_OK);
    ck_assert(adm_format_isnan(ADM_BF16, b) && (b & 0x8000));
    ck_assert_int_eq(adm_format_encode(ADM_E4M3, NAN, ADM_RNE, ADM_CVT_SATFINITE, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x7f);
    ck_assert_int_eq(adm_format_encode(ADM_E2M1, NAN, ADM_RNE, 0, &b), ADM_ERR_RANGE);
    /* Infinities stay infinite where the format has them, whatever the mode. */
    ck_assert_int_eq(adm_format_encode(ADM_FP16, INFINITY, ADM_RTZ, 0, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x7c00);
    ck_assert_int_eq(adm_format_encode(ADM_E5M2, -INFINITY, ADM_RNE, ADM_CVT_SATFINITE, &b), ADM_OK);
    ck_assert_uint_eq(b, 0xfb);
    /* Signed zeros. */
    ck_assert_int_eq(adm_format_encode(ADM_FP16, -0.0, ADM_RNE, 0, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x8000);
    ck_assert(signbit(adm_format_decode(ADM_BF16, 0x8000)));
    /* Decoding specials. */
    ck_assert(isnan(adm_format_decode(ADM_E4M3, 0xff)));
    ck_assert(adm_format_decode(ADM_E4M3, 0x7e) == 448.0);
    ck_assert(isinf(adm_format_decode(ADM_E5M2, 0xfc)) && adm_format_decode(ADM_E5M2, 0xfc) < 0);
    ck_assert(adm_format_decode(ADM_E2M1, 0xf) == -6.0);
    /* ulp: Goldberg's definition, clamped at the ends. */
    ck_assert(adm_format_ulp(ADM_BF16, 1.0) == 0x1p-7);
    ck_assert(adm_format_ulp(ADM_BF16, 1.99) == 0x1p-7);
    ck_assert(adm_format_ulp(ADM_BF16, 2.0) == 0x1p-6);
    ck_assert(adm_format_ulp(ADM_FP16, 0.0) == 0x1p-24);
    ck_assert(adm_format_ulp(ADM_FP16, 1e-7) == 0x1p-24);
    ck_assert(adm_format_ulp(ADM_FP16, 1e9) == 32.0);
    ck_assert(adm_format_ulp(ADM_E4M3, 300.0) == 32.0);
    ck_assert(adm_format_ulp(ADM_E2M1, 5.0) == 2.0);
    ck_assert(isnan(adm_format_ulp(ADM_FP32, INFINITY)));
    /* Neighbours. */
    ck_assert_int_eq(adm_format_neighbors(ADM_BF16, 1.0 + 0x1p-9, &lo, &hi), ADM_OK);
    ck_assert(lo == 1.0 && hi == 1.0 + 0x1p-7);
    ck_assert_int_eq(adm_format_neighbors(ADM_BF16, -1.0, &lo, &hi), ADM_OK);
    ck_assert(lo == -1.0 && hi == -1.0);
    ck_assert_int_eq(adm_format_neighbors(ADM_FP16, 70000.0, &lo, &hi), ADM_OK);
    ck_assert(lo == 65504.0 && isinf(hi));
    ck_assert_int_eq(adm_format_neighbors(ADM_E4M3, 500.0, &lo, &hi), ADM_ERR_RANGE);
    ck_assert_int_eq(adm_format_neighbors(ADM_E2M1, NAN, &lo, &hi), ADM_ERR_RANGE);
    /* next: through zero, to the ends. */
    ck_assert_int_eq(adm_format_next(ADM_FP16, 0x0000, -1, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x8001);
    ck_assert_int_eq(adm_format_next(ADM_FP16, 0x8001, +1, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x8000);
    ck_assert_int_eq(adm_format_next(ADM_FP16, 0x7bff, +1, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x7c00);
    ck_assert_int_eq(adm_format_next(ADM_FP16, 0x7c00, +1, &b), ADM_ERR_RANGE);
    ck_assert_int_eq(adm_format_next(ADM_E4M3, 0x7e, +1, &b), ADM_ERR_RANGE);
    ck_assert_int_eq(adm_format_next(ADM_E4M3, 0x7f, +1, &b), ADM_ERR_RANGE);
    ck_assert_int_eq(adm_format_next(ADM_E2M1, 0xf, -1, &b), ADM_ERR_RANGE);
    ck_assert_int_eq(adm_format_next(ADM_E2M1, 0x8, -1, &b), ADM_OK);
    ck_assert_uint_eq(b, 0x9);
    /* Bad arguments. */
    ck_assert_int_eq(adm_format_encode(ADM_DTYPE_INVALID, 1.0, ADM_RNE, 0, &b), ADM_ERR_DTYPE);
    ck_assert_int_eq(adm_format_encode(ADM_BF16, 1.0, (adm_round)9, 0, &b), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_format_next(ADM_BF16, 0, 0, &b), ADM_ERR_INVALID);
}
END_TEST

START_TEST(test_status)
{
    adm_status s;
    for (int i = 0; i < ADM_STATUS_COUNT; i++) {
        ck_assert_int_eq(adm_status_from_name(adm_status_name((adm_status)i), &s), ADM_OK);
        ck_assert_int_eq(s, i);
        ck_assert_str_ne(adm_strerror((adm_status)i), "unknown status");
    }
    ck_assert_str_eq(adm_strerror((adm_status)999), "unknown status");
    ck_assert_int_eq(ADM_FAIL(ADM_ERR_SHAPE, "dataset '%s' bad", "w"), ADM_ERR_SHAPE);
    adm_error_prefix("%s: ", "f.h5");
    ck_assert_str_eq(adm_error_message(), "f.h5: dataset 'w' bad");
    ck_assert_int_eq(adm_error_code(), ADM_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(adm_error_where(), "check_core.c"));
    adm_error_clear();
    ck_assert_int_eq(adm_error_code(), ADM_OK);
}
END_TEST

/* ------------------------------------------------------------ text from inputs */

typedef struct text_case {
    const char *in;
    const char *out;   /* escaped, with room to spare */
    int clean;
} text_case;

static const text_case text_cases[] = {
    {"plain.h5", "plain.h5", 1},
    {"a\nb.h5", "a\\nb.h5", 0},
    {"rms\rnorm", "rms\\rnorm", 0},
    {"tab\there", "tab\\there", 0},
    {"ctl\x01x\x7f", "ctl\\x01x\\x7f", 0},
    {"esc\x1b[2J", "esc\\x1b[2J", 0},
    {"caf\xc3\xa9", "caf\xc3\xa9", 1},                 /* well-formed UTF-8 passes */
    {"\xe2\x82\xac \xf0\x9f\x98\x80", "\xe2\x82\xac \xf0\x9f\x98\x80", 1},
    {"cand\xff\xfe", "cand\\xff\\xfe", 0},             /* not UTF-8 */
    {"\xc0\xaf", "\\xc0\\xaf", 0},                     /* overlong '/' */
    {"\xed\xa0\x80", "\\xed\\xa0\\x80", 0},            /* a surrogate */
    {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", 0},   /* above U+10FFFF */
    {"cut\xe2\x82", "cut\\xe2\\x82", 0},               /* truncated sequence */
    {"csi\xc2\x9b", "csi\\u009b", 0},                  /* a C1 control */
    {"", "", 1},
};

START_TEST(test_text_escape)
{
    const text_case *t = &text_cases[_i];
    char out[128];
    size_t n = adm_text_escape(out, sizeof out, t->in);
    ck_assert_str_eq(out, t->out);
    ck_assert_uint_eq(n, strlen(t->out));
    ck_assert_int_eq(adm_text_clean(t->in), t->clean);
}
END_TEST

/* XML and HTML text: the same escapes, then the markup characters. */
static const text_case xml_cases[] = {
    {"plain.h5", "plain.h5", 1},
    {"a<b>&\"c'd", "a&lt;b&gt;&amp;&quot;c&#39;d", 1},
    {"it's\x01", "it&#39;s\\x01", 0},
    {"caf\xc3\xa9 & \xe2\x82\xac", "caf\xc3\xa9 &amp; \xe2\x82\xac", 1},
    {"\xff<\xc2\x9b", "\\xff&lt;\\u009b", 0},
    {"line\nnext", "line\\nnext", 0},
    {"", "", 1},
};

START_TEST(test_xml_escape)
{
    const text_case *t = &xml_cases[_i];
    char out[128];
    size_t n = adm_xml_escape(out, sizeof out, t->in);
    ck_assert_str_eq(out, t->out);
    ck_assert_uint_eq(n, strlen(t->out));
    /* never an entity cut in two */
    ck_assert_uint_eq(adm_xml_escape(out, 5, "ab&c"), 8);
    ck_assert_str_eq(out, "ab");
}
END_TEST

START_TEST(test_text_special)
{
    char out[8];
    /* never an escape or a sequence cut in two: the pieces that fit whole */
    ck_assert_uint_eq(adm_text_escape(out, sizeof out, "abcd\nxyz"), 9);
    ck_assert_str_eq(out, "abcd\\nx");
    ck_assert_uint_eq(adm_text_escape(out, 8, "abcde\x01"), 9);
    ck_assert_str_eq(out, "abcde");
    ck_assert_uint_eq(adm_text_escape(out, 6, "abcd\xc3\xa9"), 6);
    ck_assert_str_eq(out, "abcd");
    ck_assert_uint_eq(adm_text_escape(out, 1, "abc"), 3);
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(adm_text_escape(NULL, 0, "a\n"), 3);
    /* messages carry no control character from their arguments */
    ADM_FAIL(ADM_ERR_IO, "%s: cannot open", "a\nb.h5");
    adm_error_prefix("%s: ", "entry\r");
    ck_assert_str_eq(adm_error_message(), "entry\\r: a\\nb.h5: cannot open");
    adm_error_clear();
}
END_TEST

typedef struct name_case {
    const char *name;
    adm_status want;
} name_case;

static const name_case name_cases[] = {
    {"fused_fp32", ADM_OK},
    {"a-b.c+d_9", ADM_OK},
    {"x", ADM_OK},
    {"", ADM_ERR_INVALID},
    {"a b", ADM_ERR_INVALID},
    {"a/b", ADM_ERR_INVALID},
    {"a:b", ADM_ERR_INVALID},
    {"cand\xff\xfe", ADM_ERR_INVALID},
    {"ctl\x01x", ADM_ERR_INVALID},
    {"<script>", ADM_ERR_INVALID},
    {"caf\xc3\xa9", ADM_ERR_INVALID},
};

START_TEST(test_name_check)
{
    const name_case *t = &name_cases[_i];
    ck_assert_int_eq(adm_name_check("candidate", t->name), t->want);
    if (t->want != ADM_OK) {
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "candidate '"));
        ck_assert(adm_text_clean(adm_error_message()));
    }
    adm_error_clear();
}
END_TEST

START_TEST(test_name_special)
{
    char n[ADM_NAME_MAX + 2];
    memset(n, 'a', sizeof n);
    n[ADM_NAME_MAX] = '\0';
    ck_assert_int_eq(adm_name_check("name", n), ADM_OK);
    n[ADM_NAME_MAX] = 'a';
    n[ADM_NAME_MAX + 1] = '\0';
    ck_assert_int_eq(adm_name_check("name", n), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_name_check("name", NULL), ADM_ERR_INVALID);
}
END_TEST

/* Not a regular file: refused at once, never a blocking open. */
START_TEST(test_regular_file)
{
    char dir[] = "/tmp/adm_check_core.XXXXXX", fifo[64], reg[64];
    int fd;
    int64_t size = -1;
    FILE *f;
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(reg, sizeof reg, "%s/reg", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(adm_file_check_regular(fifo, "the capture"), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "the capture must be a regular file, this is a FIFO"));
    ck_assert_int_eq(adm_file_check_regular(dir, "the table"), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "a directory"));
    ck_assert_int_eq(adm_file_check_regular("/dev/null", "the table"), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "a character device"));
    ck_assert_int_eq(adm_file_check_regular(reg, "the table"), ADM_ERR_IO);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "cannot open the table"));
    f = fopen(reg, "w");
    ck_assert_ptr_nonnull(f);
    fputs("12345", f);
    fclose(f);
    ck_assert_int_eq(adm_file_open_regular(reg, "the table", &fd, &size), ADM_OK);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(size, 5);
    close(fd);
    unlink(fifo);
    unlink(reg);
    rmdir(dir);
}
END_TEST

/* ------------------------------------------------------------ exhaustive small formats */

/* Every encoding decodes to a value that re-encodes to itself in every
 * mode (NaN to a NaN), and the decoded values are strictly increasing in
 * the magnitude bits: the encoding order is the value order. */
static void roundtrip_all(adm_dtype dt)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t n = 1ull << f->bits, sign = 1ull << (f->bits - 1);
    double prev = -1;
    for (uint64_t b = 0; b < n; b++) {
        double v = adm_format_decode(dt, b);
        for (int mode = ADM_RNE; mode <= ADM_RUP; mode++) {
            uint64_t back;
            if (isnan(v)) {
                ck_assert(adm_format_isnan(dt, b));
                ck_assert_int_eq(adm_format_encode(dt, v, (adm_round)mode, 0, &back), ADM_OK);
                ck_assert(adm_format_isnan(dt, back));
                continue;
            }
            ck_assert_int_eq(adm_format_encode(dt, v, (adm_round)mode, 0, &back), ADM_OK);
            ck_assert_msg(back == b, "%s: 0x%llx -> %a -> 0x%llx (mode %d)", f->name, (unsigned long long)b, v,
                          (unsigned long long)back, mode);
        }
        if (b < sign && !isnan(v)) {
            ck_assert_msg(v > prev || (b == 0 && v == 0), "%s: not increasing at 0x%llx", f->name,
                          (unsigned long long)b);
            prev = v;
            /* The mirror image. */
            ck_assert(adm_format_decode(dt, b | sign) == -v);
            /* ulp is the gap to the next value (inside the finite range). */
            if (b + 1 < sign && !adm_format_isnan(dt, b + 1) && !adm_format_isinf(dt, b + 1)) {
                double next = adm_format_decode(dt, b + 1);
                ck_assert_msg(next - v == adm_format_ulp(dt, v), "%s: ulp at %a", f->name, v);
            }
        }
    }
}

START_TEST(test_exhaustive_bf16) { roundtrip_all(ADM_BF16); }
END_TEST
START_TEST(test_exhaustive_fp16) { roundtrip_all(ADM_FP16); }
END_TEST
START_TEST(test_exhaustive_fp8_fp4)
{
    roundtrip_all(ADM_E4M3);
    roundtrip_all(ADM_E5M2);
    roundtrip_all(ADM_E2M1);
    /* 16-bit fast decoders agree with the generic one everywhere. */
    for (uint32_t b = 0; b < 65536; b++) {
        double g = adm_format_decode(ADM_BF16, b), h = adm_format_decode(ADM_FP16, b);
        float fb = adm_bf16_to_f32((uint16_t)b), fh = adm_fp16_to_f32((uint16_t)b);
        ck_assert(isnan(g) ? isnan(fb) : (double)fb == g);
        ck_assert(isnan(h) ? isnan(fh) : (double)fh == h);
        if (!isnan(g)) ck_assert(!signbit(g) == !signbit(fb));
        if (!isnan(h)) ck_assert(!signbit(h) == !signbit(fh));
    }
}
END_TEST

/* Every midpoint between neighbouring values of the small formats rounds
 * to the even one; just below goes down, just above goes up. */
static void midpoints(adm_dtype dt)
{
    const adm_format_info *f = adm_format_get(dt);
    uint64_t sign = 1ull << (f->bits - 1);
    for (uint64_t b = 0; b < f->max_bits; b++) {
        double lo = adm_format_decode(dt, b), hi = adm_format_decode(dt, b + 1), mid = (lo + hi) / 2;
        uint64_t r, even = (b & 1) ? b + 1 : b;
        ck_assert_int_eq(adm_format_encode(dt, mid, ADM_RNE, 0, &r), ADM_OK);
        ck_assert_msg(r == even, "%s: midpoint %a -> 0x%llx", f->name, mid, (unsigned long long)r);
        ck_assert_int_eq(adm_format_encode(dt, -mid, ADM_RNE, 0, &r), ADM_OK);
        ck_assert(r == (even | sign));
        ck_assert_int_eq(adm_format_encode(dt, nextafter(mid, 0), ADM_RNE, 0, &r), ADM_OK);
        ck_assert(r == b);
        ck_assert_int_eq(adm_format_encode(dt, nextafter(mid, INFINITY), ADM_RNE, 0, &r), ADM_OK);
        ck_assert(r == b + 1);
        ck_assert_int_eq(adm_format_encode(dt, nextafter(hi, 0), ADM_RTZ, 0, &r), ADM_OK);
        ck_assert(r == b);
        ck_assert_int_eq(adm_format_encode(dt, nextafter(lo, INFINITY), ADM_RUP, 0, &r), ADM_OK);
        ck_assert(r == b + 1);
    }
}

START_TEST(test_midpoints)
{
    midpoints(ADM_E4M3);
    midpoints(ADM_E5M2);
    midpoints(ADM_E2M1);
    midpoints(ADM_BF16);
    midpoints(ADM_FP16);
}
END_TEST

/* ------------------------------------------------------------ the 2^32 sweep */

/* Positive values of a 16-bit format, exactly, and the value one step past
 * the top of the finite range (2^(emax+1)), the bound of its rounding. */
typedef struct table16 {
    double v[32768];
    uint32_t max_bits, inf_bits;
    double top;
} table16;

static void table_build(adm_dtype dt, table16 *t)
{
    const adm_format_info *f = adm_format_get(dt);
    for (uint32_t b = 0; b < 32768; b++) t->v[b] = adm_format_decode(dt, b);
    t->max_bits = (uint32_t)f->max_bits;
    t->inf_bits = (uint32_t)f->inf_bits;
    t->top = ldexp(1.0, f->emax + 1);
}

/* The defining property of a correctly rounded result r of the finite
 * fp32 magnitude m: for RNE, m lies within half a gap of v(r) on both
 * sides, a tie only where r is even, and Inf exactly from the midpoint of
 * max and 2^(emax+1) on; for RTZ, v(r) <= m < v(r+1). */
static int rne_ok(const table16 *t, double m, uint32_t r)
{
    double v, lo, hi;
    if (r == t->inf_bits) return m >= (t->v[t->max_bits] + t->top) / 2;
    if (r > t->max_bits) return 0;
    v = t->v[r];
    lo = r ? t->v[r - 1] : -t->v[1];
    hi = r < t->max_bits ? t->v[r + 1] : t->top;
    if (m < (lo + v) / 2 || m > (v + hi) / 2) return 0;
    if ((m == (lo + v) / 2 || m == (v + hi) / 2) && (r & 1)) return 0;
    return 1;
}

static int rtz_ok(const table16 *t, double m, uint32_t r)
{
    double hi;
    if (r > t->max_bits) return 0;
    hi = r < t->max_bits ? t->v[r + 1] : INFINITY;
    return t->v[r] <= m && m < hi;
}

static table16 tbf, thf;

static void sweep_check(uint32_t x)
{
    float f = adm_f32_from_bits(x);
    uint32_t mag = x & 0x7fffffffu, s16 = (x >> 16) & 0x8000u;
    uint16_t b_rn = adm_bf16_from_f32(f), b_rz = adm_bf16_from_f32_rtz(f);
    uint16_t h_rn = adm_fp16_from_f32(f), h_rz = adm_fp16_from_f32_rtz(f);
    double m = fabs((double)f);
    _Float16 hw = (_Float16)f; /* libgcc or F16C: an independent converter */
    uint16_t hwb;
    memcpy(&hwb, &hw, 2);
    if (mag > 0x7f800000u) {
        if (!(adm_format_isnan(ADM_BF16, b_rn) && adm_format_isnan(ADM_BF16, b_rz) &&
              adm_format_isnan(ADM_FP16, h_rn) && adm_format_isnan(ADM_FP16, h_rz) &&
              adm_format_isnan(ADM_FP16, hwb)))
            ck_abort_msg("NaN input 0x%08x not NaN", x);
        return;
    }
    if ((b_rn & 0x8000u) != s16 || (b_rz & 0x8000u) != s16 || (h_rn & 0x8000u) != s16 || (h_rz & 0x8000u) != s16)
        ck_abort_msg("sign lost for 0x%08x", x);
    if (mag == 0x7f800000u) {
        if ((b_rn & 0x7fffu) != 0x7f80u || (b_rz & 0x7fffu) != 0x7f80u || (h_rn & 0x7fffu) != 0x7c00u ||
            (h_rz & 0x7fffu) != 0x7c00u)
            ck_abort_msg("Inf input 0x%08x", x);
        return;
    }
    if (!rne_ok(&tbf, m, b_rn & 0x7fffu)) ck_abort_msg("bf16 RNE of 0x%08x (%a) = 0x%04x", x, m, b_rn);
    if (!rtz_ok(&tbf, m, b_rz & 0x7fffu)) ck_abort_msg("bf16 RTZ of 0x%08x (%a) = 0x%04x", x, m, b_rz);
    if (!rne_ok(&thf, m, h_rn & 0x7fffu)) ck_abort_msg("fp16 RNE of 0x%08x (%a) = 0x%04x", x, m, h_rn);
    if (!rtz_ok(&thf, m, h_rz & 0x7fffu)) ck_abort_msg("fp16 RTZ of 0x%08x (%a) = 0x%04x", x, m, h_rz);
    if (hwb != h_rn) ck_abort_msg("fp16 RNE of 0x%08x: 0x%04x, _Float16 gives 0x%04x", x, h_rn, hwb);
}

START_TEST(test_sweep_fp32)
{
    const char *part = getenv("ADM_SWEEP_PART");
    unsigned k = 0, n = 1;
    uint64_t first, last, stride = 1;
    if (part && sscanf(part, "%u/%u", &k, &n) != 2) ck_abort_msg("ADM_SWEEP_PART must be k/n");
    ck_assert(n >= 1 && k < n);
    /* ADM_SWEEP_STRIDE thins the sweep for slow (sanitizer) builds; the
     * stride is odd so every residue class of the low bits is visited. */
    if (getenv("ADM_SWEEP_STRIDE")) stride = strtoull(getenv("ADM_SWEEP_STRIDE"), NULL, 10) | 1u;
    table_build(ADM_BF16, &tbf);
    table_build(ADM_FP16, &thf);
    first = ((1ull << 32) / n) * k;
    last = (k + 1 == n) ? (1ull << 32) : ((1ull << 32) / n) * (k + 1);
    for (uint64_t x = first; x < last; x += stride) sweep_check((uint32_t)x);
    /* The generic encoder agrees with the fast path on a thinned set. */
    for (uint64_t x = first; x < last; x += 65521) {
        float f = adm_f32_from_bits((uint32_t)x);
        uint64_t gb, gh;
        if (isnan(f)) continue;
        ck_assert_int_eq(adm_format_encode(ADM_BF16, f, ADM_RNE, 0, &gb), ADM_OK);
        ck_assert_int_eq(adm_format_encode(ADM_FP16, f, ADM_RNE, 0, &gh), ADM_OK);
        ck_assert_msg(gb == adm_bf16_from_f32(f), "generic bf16 of 0x%08llx", (unsigned long long)x);
        ck_assert_msg(gh == adm_fp16_from_f32(f), "generic fp16 of 0x%08llx", (unsigned long long)x);
        ck_assert_int_eq(adm_format_encode(ADM_BF16, f, ADM_RTZ, 0, &gb), ADM_OK);
        ck_assert_int_eq(adm_format_encode(ADM_FP16, f, ADM_RTZ, 0, &gh), ADM_OK);
        ck_assert(gb == adm_bf16_from_f32_rtz(f));
        ck_assert(gh == adm_fp16_from_f32_rtz(f));
    }
}
END_TEST

/* ------------------------------------------------------------ MPFR */

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* MPFR rounds to p bits with IEEE gradual underflow when its exponent
 * range is set to [emin - p + 2, emax + 1] and the result subnormalized. */
static double ref_mpfr_round(const adm_format_info *f, double x, mpfr_rnd_t rnd)
{
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_t y;
    int inex;
    double r;
    mpfr_set_emin(f->emin - (f->man_bits + 1) + 2);
    mpfr_set_emax(f->emax + 1);
    mpfr_init2(y, f->man_bits + 1);
    inex = mpfr_set_d(y, x, rnd);
    inex = mpfr_check_range(y, inex, rnd);
    mpfr_subnormalize(y, inex, rnd);
    r = mpfr_get_d(y, MPFR_RNDN);
    mpfr_clear(y);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    return r;
}

START_TEST(test_mpfr_sample)
{
    static const adm_dtype dts[] = {ADM_BF16, ADM_FP16, ADM_FP32, ADM_E4M3, ADM_E5M2, ADM_E2M1};
    static const struct { adm_round a; mpfr_rnd_t m; } modes[] = {
        {ADM_RNE, MPFR_RNDN}, {ADM_RTZ, MPFR_RNDZ}, {ADM_RDN, MPFR_RNDD}, {ADM_RUP, MPFR_RNDU}};
    uint64_t seed = 12345;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        const adm_format_info *f = adm_format_get(dts[d]);
        for (int i = 0; i < 200000; i++) {
            /* log-uniform magnitudes across the whole range, both signs,
             * random low bits so ties and near-ties are rare but present. */
            double span = (double)(f->emax - f->emin + f->man_bits + 4);
            double e = (double)(f->emin - f->man_bits - 2) + span * (double)(lcg(&seed) & 0xffffff) / 0x1p24;
            double x = ldexp(1.0 + (double)lcg(&seed) * 0x1p-53, (int)floor(e));
            if (i % 7 == 0) x = adm_format_decode(dts[d], lcg(&seed) & f->max_bits) * (1 + 0x1p-30);
            if (i % 11 == 0) /* exact midpoints */
                x = (adm_format_decode(dts[d], (lcg(&seed) % f->max_bits)) +
                     adm_format_decode(dts[d], (lcg(&seed) % f->max_bits))) / 2;
            if (lcg(&seed) & 1) x = -x;
            if (!f->has_inf && fabs(x) > f->max_finite) continue; /* no IEEE overflow to compare */
            for (size_t m = 0; m < 4; m++) {
                double want = ref_mpfr_round(f, x, modes[m].m);
                double got = adm_format_round(dts[d], x, modes[m].a, 0);
                ck_assert_msg(got == want && !signbit(got) == !signbit(want), "%s(%a) mode %d: %a, MPFR %a",
                              f->name, x, (int)modes[m].a, got, want);
            }
        }
    }
}
END_TEST

/* ------------------------------------------------------------ tensors */

START_TEST(test_tensor_views)
{
    adm_tensor t, v, w, c;
    int64_t shape[2] = {3, 4};
    char buf[64];
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_FP32, 2, shape), ADM_OK);
    for (int64_t i = 0; i < 12; i++) ((float *)t.data)[i] = (float)i;
    ck_assert(adm_tensor_is_contiguous(&t));
    /* transpose */
    ck_assert_int_eq(adm_tensor_transpose(&t, 0, 1, &v), ADM_OK);
    ck_assert(!adm_tensor_is_contiguous(&v));
    ck_assert(v.shape[0] == 4 && v.shape[1] == 3);
    ck_assert(adm_tensor_get(&v, 1) == 4.0);  /* v[0][1] = t[1][0] */
    ck_assert(adm_tensor_get(&v, 5) == 9.0);  /* v[1][2] = t[2][1] */
    /* slice with step: columns 1, 3 */
    ck_assert_int_eq(adm_tensor_slice(&t, 1, 1, 4, 2, &w), ADM_OK);
    ck_assert(w.shape[1] == 2 && w.stride[1] == 2 && w.offset == 1);
    ck_assert(adm_tensor_get(&w, 0) == 1.0 && adm_tensor_get(&w, 1) == 3.0 && adm_tensor_get(&w, 5) == 11.0);
    ck_assert_int_eq(adm_tensor_contiguous(&w, &c), ADM_OK);
    ck_assert(adm_tensor_is_contiguous(&c) && ((float *)c.data)[3] == 7.0f);
    adm_tensor_free(&c);
    /* empty slice */
    ck_assert_int_eq(adm_tensor_slice(&t, 0, 2, 2, 1, &w), ADM_OK);
    ck_assert(adm_tensor_numel(&w) == 0);
    /* broadcast a row [4] to [3, 4] with stride 0 */
    {
        adm_tensor row, b;
        int64_t rs[1] = {4}, bs[2] = {3, 4}, bad[2] = {3, 5};
        ck_assert_int_eq(adm_tensor_slice(&t, 0, 1, 2, 1, &row), ADM_OK);
        row.ndim = 1;
        row.shape[0] = 4;
        row.stride[0] = 1;
        ck_assert_int_eq(adm_tensor_broadcast(&row, 2, bs, &b), ADM_OK);
        ck_assert(b.stride[0] == 0);
        ck_assert(adm_tensor_get(&b, 9) == 5.0); /* b[2][1] = row[1] = t[1][1] */
        ck_assert_int_eq(adm_tensor_broadcast(&row, 2, bad, &b), ADM_ERR_SHAPE);
        (void)rs;
    }
    ck_assert_str_eq(adm_shape_str(2, shape, buf, sizeof buf), "[3, 4]");
    adm_tensor_free(&t);
}
END_TEST

START_TEST(test_tensor_special)
{
    adm_tensor t, v;
    int64_t huge[3] = {1 << 20, 1 << 20, 2}, neg[1] = {-1}, zero[2] = {0, 7}, n;
    int64_t empty_huge[3] = {0, (int64_t)1 << 39, (int64_t)1 << 39};
    uint16_t store[8] = {0};
    int64_t s4[1] = {4}, st[1] = {3};
    /* overflowing and negative shapes */
    ck_assert_int_eq(adm_shape_numel(3, huge, &n), ADM_ERR_OVERFLOW);
    /* empty, but its strides would overflow (a fuzzing finding) */
    ck_assert_int_eq(adm_shape_numel(3, empty_huge, &n), ADM_ERR_OVERFLOW);
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_BF16, 3, empty_huge), ADM_ERR_OVERFLOW);
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_BF16, 3, huge), ADM_ERR_OVERFLOW);
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_BF16, 1, neg), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_BF16, ADM_MAX_DIMS + 1, zero), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_DTYPE_INVALID, 1, s4), ADM_ERR_DTYPE);
    /* empty tensors allocate and view fine */
    ck_assert_int_eq(adm_tensor_alloc(&t, ADM_BF16, 2, zero), ADM_OK);
    ck_assert(adm_tensor_numel(&t) == 0);
    ck_assert_int_eq(adm_tensor_transpose(&t, 0, 1, &v), ADM_OK);
    ck_assert_int_eq(adm_tensor_transpose(&t, 0, 2, &v), ADM_ERR_INVALID);
    adm_tensor_free(&t);
    /* a borrowed view may not reach past its storage */
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_BF16, 1, s4, st, 0, store, 8), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_BF16, 1, s4, NULL, 4, store, 8), ADM_OK);
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_BF16, 1, s4, NULL, 5, store, 8), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_BF16, 1, s4, NULL, -1, store, 8), ADM_ERR_SHAPE);
    ck_assert_int_eq(adm_tensor_wrap(&t, ADM_BF16, 1, s4, NULL, 0, store, 8), ADM_OK);
    ck_assert_int_eq(adm_tensor_slice(&t, 0, 0, 4, 0, &v), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_tensor_slice(&t, 0, 5, 6, 1, &v), ADM_ERR_INVALID);
    ck_assert_int_eq(adm_tensor_slice(&t, 0, 1, 100, 2, &v), ADM_OK);
    ck_assert(v.shape[0] == 2);
    /* from_f64 refuses what a format cannot hold, naming the element */
    {
        double vals[2] = {1.0, NAN};
        int64_t two[1] = {2};
        ck_assert_int_eq(adm_tensor_from_f64(&t, ADM_E2M1, 1, two, vals, ADM_RNE, 0), ADM_ERR_RANGE);
        ck_assert_ptr_nonnull(strstr(adm_error_message(), "element 1"));
        ck_assert_int_eq(adm_tensor_from_f64(&t, ADM_E4M3, 1, two, vals, ADM_RNE, 0), ADM_OK);
        ck_assert(adm_tensor_bits(&t, 0) == 0x38 && adm_tensor_bits(&t, 1) == 0x7f);
        adm_tensor_free(&t);
    }
}
END_TEST

/* The fast fp32 -> bf16 / fp16 conversions against MPFR directly, on
 * random fp32 encodings (the sweep checks every input against the
 * rounding's defining property; this ties the same path to MPFR). */
START_TEST(test_mpfr_fp32_sample)
{
    const adm_format_info *fb = adm_format_get(ADM_BF16), *fh = adm_format_get(ADM_FP16);
    uint64_t seed = 777;
    for (int i = 0; i < 300000; i++) {
        float f = adm_f32_from_bits((uint32_t)lcg(&seed));
        double b, h;
        if (isnan(f)) continue;
        b = ref_mpfr_round(fb, f, MPFR_RNDN);
        h = ref_mpfr_round(fh, f, MPFR_RNDN);
        ck_assert_msg(adm_bf16_to_f32(adm_bf16_from_f32(f)) == b || (isinf(b) && isinf(adm_bf16_to_f32(adm_bf16_from_f32(f)))),
                      "bf16(%a): MPFR %a", (double)f, b);
        ck_assert_msg((double)adm_fp16_to_f32(adm_fp16_from_f32(f)) == h, "fp16(%a): MPFR %a", (double)f, h);
        ck_assert((double)adm_bf16_to_f32(adm_bf16_from_f32_rtz(f)) == ref_mpfr_round(fb, f, MPFR_RNDZ));
        ck_assert((double)adm_fp16_to_f32(adm_fp16_from_f32_rtz(f)) == ref_mpfr_round(fh, f, MPFR_RNDZ));
    }
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc;
    tc = tcase_create("Formats");
    tcase_add_loop_test(tc, test_encode_table, 0, (int)(sizeof enc_cases / sizeof enc_cases[0]));
    tcase_add_test(tc, test_format_info);
    tcase_add_test(tc, test_status);
    suite_add_tcase(s, tc);
    tc = tcase_create("Special");
    tcase_add_test(tc, test_special_values);
    tcase_add_loop_test(tc, test_text_escape, 0, (int)(sizeof text_cases / sizeof text_cases[0]));
    tcase_add_loop_test(tc, test_xml_escape, 0, (int)(sizeof xml_cases / sizeof xml_cases[0]));
    tcase_add_test(tc, test_text_special);
    tcase_add_loop_test(tc, test_name_check, 0, (int)(sizeof name_cases / sizeof name_cases[0]));
    tcase_add_test(tc, test_name_special);
    tcase_add_test(tc, test_regular_file);
    tcase_add_test(tc, test_tensor_special);
    suite_add_tcase(s, tc);
    tc = tcase_create("Exhaustive");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_exhaustive_bf16);
    tcase_add_test(tc, test_exhaustive_fp16);
    tcase_add_test(tc, test_exhaustive_fp8_fp4);
    tcase_add_test(tc, test_midpoints);
    suite_add_tcase(s, tc);
    tc = tcase_create("Sweep32");
    tcase_set_timeout(tc, 1200);
    tcase_add_test(tc, test_sweep_fp32);
    suite_add_tcase(s, tc);
    tc = tcase_create("MPFR");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_mpfr_sample);
    tcase_add_test(tc, test_mpfr_fp32_sample);
    suite_add_tcase(s, tc);
    tc = tcase_create("Tensor");
    tcase_add_test(tc, test_tensor_views);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
