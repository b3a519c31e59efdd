/* Exact sums of products with GMP.
 *
 * A finite double is an odd integer times a power of two, m 2^e with
 * |m| < 2^53; the product of two is m_a m_b 2^(e_a + e_b) (|m_a m_b| <
 * 2^106) and of three (linear attention's q k v, each of at most 24
 * significant bits) m_a m_b m_c 2^(e_a + e_b + e_c). A sum of such terms is
 * M 2^E exactly, M an integer (mpz) and E the smallest exponent among the
 * terms: no rounding whatever the dynamic range (exponents span at most
 * -3222 .. 3072, so M has at most a few thousand bits plus log2 of the
 * term count). The sum is rounded once, when it is read. */
#include "oracle_internal.h"

#include <string.h>

void adm_o_exact_init(adm_o_exact *x)
{
    mpz_init(x->m);
    mpz_init(x->t);
    x->e = 0;
    x->special = 0;
    x->has_special = 0;
}

void adm_o_exact_clear(adm_o_exact *x)
{
    mpz_clear(x->m);
    mpz_clear(x->t);
}

void adm_o_exact_zero(adm_o_exact *x)
{
    mpz_set_ui(x->m, 0);
    x->e = 0;
    x->special = 0;
    x->has_special = 0;
}

/* d = m 2^e with m odd (or 0); d finite. */
static int64_t split(double d, long *e)
{
    uint64_t b;
    int64_t m;
    int be;
    memcpy(&b, &d, 8);
    be = (int)((b >> 52) & 0x7ff);
    m = (int64_t)(b & ((UINT64_C(1) << 52) - 1));
    if (be) m |= INT64_C(1) << 52;
    *e = (be ? be : 1) - 1075;
    if (m == 0) { *e = 0; return 0; }
    while (!(m & 1)) { m >>= 1; (*e)++; }
    return (b >> 63) ? -m : m;
}

/* x += t 2^e, t held in x->t. */
static void add_scaled(adm_o_exact *x, long e)
{
    if (mpz_sgn(x->t) == 0) return;
    if (mpz_sgn(x->m) == 0) {
        mpz_swap(x->m, x->t);
        x->e = e;
        return;
    }
    if (e < x->e) {
        mpz_mul_2exp(x->m, x->m, (mp_bitcnt_t)(x->e - e));
        x->e = e;
    } else if (e > x->e) {
        mpz_mul_2exp(x->t, x->t, (mp_bitcnt_t)(e - x->e));
    }
    mpz_add(x->m, x->m, x->t);
}

/* Infinities and NaNs follow IEEE: the exact sum is their fp64 sum. */
static int special_term(adm_o_exact *x, double p)
{
    if (isfinite(p)) return 0;
    x->special = x->has_special ? x->special + p : p;
    x->has_special = 1;
    return 1;
}

void adm_o_exact_add(adm_o_exact *x, double a)
{
    long e;
    int64_t m;
    if (special_term(x, a)) return;
    m = split(a, &e);
    mpz_set_si(x->t, m);
    add_scaled(x, e);
}

void adm_o_exact_add_prod(adm_o_exact *x, double a, double b)
{
    long ea, eb;
    int64_t ma, mb;
    if (!isfinite(a) || !isfinite(b)) {
        special_term(x, a * b);
        return;
    }
    ma = split(a, &ea);
    mb = split(b, &eb);
    mpz_set_si(x->t, ma);
    mpz_mul_si(x->t, x->t, mb);
    add_scaled(x, ea + eb);
}

void adm_o_exact_add_prod3(adm_o_exact *x, double a, double b, double c)
{
    long ea, eb, ec;
    int64_t ma, mb, mc;
    if (!isfinite(a) || !isfinite(b) || !isfinite(c)) {
        special_term(x, a * b * c);
        return;
    }
    ma = split(a, &ea);
    mb = split(b, &eb);
    mc = split(c, &ec);
    mpz_set_si(x->t, ma);
    mpz_mul_si(x->t, x->t, mb);
    mpz_mul_si(x->t, x->t, mc);
    add_scaled(x, ea + eb + ec);
}

void adm_o_exact_add_exact(adm_o_exact *x, const adm_o_exact *y, long scale)
{
    if (y->has_special) {
        special_term(x, (double)scale * y->special);
        return;
    }
    mpz_mul_si(x->t, y->m, scale);
    add_scaled(x, y->e);
}

int adm_o_exact_special(const adm_o_exact *x, double *v)
{
    if (!x->has_special) return 0;
    *v = x->special;
    return 1;
}

mpfr_prec_t adm_o_exact_prec(const adm_o_exact *x)
{
    size_t b = mpz_sizeinbase(x->m, 2);
    return (mpfr_prec_t)(b < (size_t)MPFR_PREC_MIN ? MPFR_PREC_MIN : b);
}

int adm_o_exact_get_fr(mpfr_t r, const adm_o_exact *x, mpfr_rnd_t rnd)
{
    if (x->has_special) return mpfr_set_d(r, x->special, rnd);
    return mpfr_set_z_2exp(r, x->m, x->e, rnd);
}

double adm_o_exact_get_d(const adm_o_exact *x, double *dist_up)
{
    mpfr_t f, d;
    double v;
    if (x->has_special) {
        *dist_up = 0;
        return x->special;
    }
    mpfr_init2(f, adm_o_exact_prec(x));
    mpfr_set_z_2exp(f, x->m, x->e, MPFR_RNDN); /* exact: f holds every bit of m */
    v = mpfr_get_d(f, MPFR_RNDN);
    if (isinf(v)) {
        *dist_up = INFINITY;
    } else {
        /* f - v exactly: f = m 2^e spans B bits from 2^e; v, its rounding,
         * has its top bit at most one above f's and its lowest at or above
         * min(2^e, 2^(top - 54)): the difference spans at most B + 55 bits */
        mpfr_init2(d, adm_o_exact_prec(x) + 64);
        mpfr_sub_d(d, f, v, MPFR_RNDN);
        mpfr_abs(d, d, MPFR_RNDN);
        *dist_up = mpfr_get_d(d, MPFR_RNDU);
        mpfr_clear(d);
    }
    mpfr_clear(f);
    return v;
}
