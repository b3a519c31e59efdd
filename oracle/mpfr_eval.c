/* The MPFR evaluator: one output element of any catalog op as an
 * enclosure lo <= exact <= hi, for refinement and for proving the fp64
 * bounds.
 *
 * How the enclosure is obtained (its error is derived, not assumed):
 * - Sums of products of the inputs (GEMM outputs, row sums, the dot
 *   products of attention, the sums and squared deviations of the norms,
 *   the gated residual) are exact, accumulated with GMP (oracle/exact.c).
 * - Every other step is interval arithmetic at the working precision p
 *   (mpfr_get_prec of lo): the lower end rounded down (MPFR_RNDD), the
 *   upper end up (MPFR_RNDU), the transcendental steps (exp, erfc, sqrt,
 *   pi) through MPFR's functions, correctly rounded in every direction.
 *   Interval arithmetic is inclusion-isotone, so exact lies in [lo, hi]
 *   by construction, whatever the cancellation.
 * How wide it is (the a-priori width; tests/check_oracle.c measures it
 * against these): a step rounded outward widens its result by at most one
 * ulp on each side, 2^(2-p) relative in total, and passes on the widths
 * of its operands (relative widths add through products and quotients,
 * absolute widths through sums; exp turns an absolute width of its
 * argument into that relative width of its value). So
 * - sums, GEMMs, the gated residual: exact, then rounded once:
 *   hi - lo <= 2^(2-p) |y|;
 * - scale: one product, 2^(2-p) |y|; mean_sq: one more division;
 * - gelu (tanh): z = C (x + A x^3) in 6 steps with A and C held to
 *   2^(2-p): relative width of w = -2z below 8 2^(2-p); exp, 1 + e and the
 *   quotient add 2^(2-p) each: hi - lo <= (8 |w| + 3) 2^(2-p) |y| to
 *   first order; gelu (erf) (3 |t| L(t) + 3) 2^(2-p) |y| with L(t) <= 2|t|
 *   + 1.5 (oracle/scalar_fns.h); silu (|x| + 3) 2^(2-p) |y|;
 * - softmax and attention: the scores carry (|s| + 2) 2^(2-p) each
 *   (exact dot, the scale); the exponentials add |s_j - M| times that,
 *   and the output is a quotient of two sums of positive terms, so
 *   hi - lo <= (2 max_j (|s_j - M| + |s_j| + 2) + 4) 2^(2-p) sum_j p_j |v_j|:
 *   relative to the sum of |terms|, not to |y|, which may cancel;
 * - norms: mean and variance exact, the rest about ten steps:
 *   hi - lo <= 12 2^(2-p) (|y| + |w||d/sd| + |b| ...) times the Lipschitz
 *   factor of a SiLU;
 * - quantize: exact (the rounding decisions are taken on exact quotients).
 * At p >= 64 all of these are below 2^-40 of the fp64 bounds they check. */
#include "oracle_internal.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- intervals */

void adm_o_iv_init(adm_o_iv *a, mpfr_prec_t p) { mpfr_inits2(p, a->lo, a->hi, (mpfr_ptr)0); }
void adm_o_iv_clear(adm_o_iv *a) { mpfr_clears(a->lo, a->hi, (mpfr_ptr)0); }

void adm_o_iv_set_d(adm_o_iv *r, double d)
{
    mpfr_set_d(r->lo, d, MPFR_RNDD);
    mpfr_set_d(r->hi, d, MPFR_RNDU);
}

static void iv_set_fr(adm_o_iv *r, const mpfr_t x)
{
    mpfr_set(r->lo, x, MPFR_RNDD);
    mpfr_set(r->hi, x, MPFR_RNDU);
}

static void iv_set(adm_o_iv *r, const adm_o_iv *a)
{
    mpfr_set(r->lo, a->lo, MPFR_RNDD);
    mpfr_set(r->hi, a->hi, MPFR_RNDU);
}

static void iv_set_exact(adm_o_iv *r, const adm_o_exact *x)
{
    adm_o_exact_get_fr(r->lo, x, MPFR_RNDD);
    adm_o_exact_get_fr(r->hi, x, MPFR_RNDU);
}

static void iv_whole(adm_o_iv *r)
{
    mpfr_set_inf(r->lo, -1);
    mpfr_set_inf(r->hi, 1);
}

static int iv_nan(const adm_o_iv *a) { return mpfr_nan_p(a->lo) || mpfr_nan_p(a->hi); }

static void iv_set_nan(adm_o_iv *r)
{
    mpfr_set_nan(r->lo);
    mpfr_set_nan(r->hi);
}

static void iv_add(adm_o_iv *r, const adm_o_iv *a, const adm_o_iv *b)
{
    mpfr_add(r->lo, a->lo, b->lo, MPFR_RNDD);
    mpfr_add(r->hi, a->hi, b->hi, MPFR_RNDU);
}

static void iv_add_d(adm_o_iv *r, const adm_o_iv *a, double d)
{
    mpfr_add_d(r->lo, a->lo, d, MPFR_RNDD);
    mpfr_add_d(r->hi, a->hi, d, MPFR_RNDU);
}

static void iv_neg(adm_o_iv *r, const adm_o_iv *a)
{
    if (r == a) {
        mpfr_swap(r->lo, r->hi);
        mpfr_neg(r->lo, r->lo, MPFR_RNDD);
        mpfr_neg(r->hi, r->hi, MPFR_RNDU);
    } else {
        mpfr_neg(r->lo, a->hi, MPFR_RNDD);
        mpfr_neg(r->hi, a->lo, MPFR_RNDU);
    }
}

/* f(-inf) = -0 for gelu and silu (the limit; the formulas give inf/inf) */
static int neg_inf_point(adm_o_iv *y, const adm_o_iv *x)
{
    if (!(mpfr_inf_p(x->lo) && mpfr_inf_p(x->hi) && mpfr_sgn(x->hi) < 0)) return 0;
    mpfr_set_zero(y->lo, -1);
    mpfr_set_zero(y->hi, -1);
    return 1;
}

/* The four endpoint products (quotients), each rounded down and up. */
static void iv_corners(adm_o_iv *r, const adm_o_iv *a, const adm_o_iv *b, int div)
{
    mpfr_prec_t p = mpfr_get_prec(r->lo);
    mpfr_t lo, hi, t;
    const mpfr_srcptr x[2] = {a->lo, a->hi}, y[2] = {b->lo, b->hi};
    if (iv_nan(a) || iv_nan(b)) { iv_set_nan(r); return; }
    mpfr_inits2(p, lo, hi, t, (mpfr_ptr)0);
    mpfr_set_inf(lo, 1);
    mpfr_set_inf(hi, -1);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            if (div) mpfr_div(t, x[i], y[j], MPFR_RNDD);
            else mpfr_mul(t, x[i], y[j], MPFR_RNDD);
            if (mpfr_nan_p(t)) { mpfr_set_inf(lo, -1); mpfr_set_inf(hi, 1); goto out; } /* 0 * inf */
            mpfr_min(lo, lo, t, MPFR_RNDD);
            if (div) mpfr_div(t, x[i], y[j], MPFR_RNDU);
            else mpfr_mul(t, x[i], y[j], MPFR_RNDU);
            mpfr_max(hi, hi, t, MPFR_RNDU);
        }
out:
    mpfr_set(r->lo, lo, MPFR_RNDD);
    mpfr_set(r->hi, hi, MPFR_RNDU);
    mpfr_clears(lo, hi, t, (mpfr_ptr)0);
}

static void iv_mul(adm_o_iv *r, const adm_o_iv *a, const adm_o_iv *b) { iv_corners(r, a, b, 0); }

/* A divisor interval that holds 0 gives the whole line (or NaN if the
 * dividend holds 0 as well: 0/0, undefined, as fp64 says). */
static void iv_div(adm_o_iv *r, const adm_o_iv *a, const adm_o_iv *b)
{
    if (!iv_nan(b) && mpfr_sgn(b->lo) <= 0 && mpfr_sgn(b->hi) >= 0) {
        if (!iv_nan(a) && mpfr_sgn(a->lo) <= 0 && mpfr_sgn(a->hi) >= 0) iv_set_nan(r);
        else iv_whole(r);
        return;
    }
    iv_corners(r, a, b, 1);
}

static void iv_mul_d(adm_o_iv *r, const adm_o_iv *a, double d)
{
    adm_o_iv b;
    adm_o_iv_init(&b, 64);
    adm_o_iv_set_d(&b, d);
    iv_mul(r, a, &b);
    adm_o_iv_clear(&b);
}

/* increasing f: [f(lo) down, f(hi) up] */
static void iv_exp(adm_o_iv *r, const adm_o_iv *a)
{
    mpfr_exp(r->lo, a->lo, MPFR_RNDD);
    mpfr_exp(r->hi, a->hi, MPFR_RNDU);
}

static void iv_sqrt(adm_o_iv *r, const adm_o_iv *a)
{
    if (mpfr_sgn(a->lo) < 0) mpfr_set_zero(r->lo, 1);
    else mpfr_sqrt(r->lo, a->lo, MPFR_RNDD);
    mpfr_sqrt(r->hi, a->hi, MPFR_RNDU);
}

/* decreasing erfc: [erfc(hi) down, erfc(lo) up] */
static void iv_erfc(adm_o_iv *r, const adm_o_iv *a)
{
    mpfr_t t;
    mpfr_init2(t, mpfr_get_prec(r->lo));
    mpfr_erfc(t, a->hi, MPFR_RNDD);
    mpfr_erfc(r->hi, a->lo, MPFR_RNDU);
    mpfr_set(r->lo, t, MPFR_RNDD);
    mpfr_clear(t);
}

static void iv_relu(adm_o_iv *r, const adm_o_iv *a)
{
    if (mpfr_sgn(a->lo) < 0) mpfr_set_zero(r->lo, 1);
    else mpfr_set(r->lo, a->lo, MPFR_RNDD);
    if (mpfr_sgn(a->hi) < 0) mpfr_set_zero(r->hi, 1);
    else mpfr_set(r->hi, a->hi, MPFR_RNDU);
}

/* sum of n intervals: mpfr_sum rounds the exact sum of its inputs
 * correctly in the direction asked */
static void iv_sum(adm_o_iv *r, adm_o_iv *t, int64_t n)
{
    mpfr_ptr *lo = malloc(sizeof *lo * (size_t)(2 * n + 2)), *hi = lo + n + 1;
    for (int64_t i = 0; i < n; i++) {
        lo[i] = t[i].lo;
        hi[i] = t[i].hi;
    }
    mpfr_sum(r->lo, lo, (unsigned long)n, MPFR_RNDD);
    mpfr_sum(r->hi, hi, (unsigned long)n, MPFR_RNDU);
    free(lo);
}

static adm_o_iv *ivs_new(int64_t n, mpfr_prec_t p)
{
    adm_o_iv *t = malloc(sizeof *t * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) adm_o_iv_init(&t[i], p);
    return t;
}

static void ivs_free(adm_o_iv *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) adm_o_iv_clear(&t[i]);
    free(t);
}

/* ---------------------------------------------------------------- scalar functions */

/* gelu (tanh) = x / (1 + exp(-2 C (x + A x^3))), C = sqrt(2/pi), A = 0.044715
 * (the fp64 formula of oracle/scalar_fns.h, the same real function). */
void adm_o_gelu_tanh_iv(adm_o_iv *y, const adm_o_iv *x)
{
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    adm_o_iv t, c, a, xx;
    if (neg_inf_point(y, x)) return;
    adm_o_iv_init(&t, p);
    adm_o_iv_init(&c, p);
    adm_o_iv_init(&a, p);
    adm_o_iv_init(&xx, mpfr_get_prec(x->lo));
    iv_set(&xx, x);
    mpfr_set_str(a.lo, "0.044715", 10, MPFR_RNDD);
    mpfr_set_str(a.hi, "0.044715", 10, MPFR_RNDU);
    mpfr_const_pi(c.lo, MPFR_RNDD);
    mpfr_const_pi(c.hi, MPFR_RNDU);
    mpfr_ui_div(t.lo, 2, c.hi, MPFR_RNDD); /* 2/pi */
    mpfr_ui_div(t.hi, 2, c.lo, MPFR_RNDU);
    iv_sqrt(&c, &t);
    iv_mul(&t, &xx, &xx);
    iv_mul(&t, &t, &xx);
    iv_mul(&t, &t, &a);
    iv_add(&t, &t, &xx);
    iv_mul(&t, &t, &c);
    iv_mul_d(&t, &t, -2.0);
    iv_exp(&t, &t);
    iv_add_d(&t, &t, 1.0);
    iv_div(y, &xx, &t);
    adm_o_iv_clear(&t);
    adm_o_iv_clear(&c);
    adm_o_iv_clear(&a);
    adm_o_iv_clear(&xx);
}

/* gelu (erf) = 0.5 x erfc(-x / sqrt 2) */
void adm_o_gelu_erf_iv(adm_o_iv *y, const adm_o_iv *x)
{
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    adm_o_iv t, r, xx;
    if (neg_inf_point(y, x)) return;
    adm_o_iv_init(&t, p);
    adm_o_iv_init(&r, p);
    adm_o_iv_init(&xx, mpfr_get_prec(x->lo));
    iv_set(&xx, x);
    mpfr_sqrt_ui(r.lo, 2, MPFR_RNDD);
    mpfr_sqrt_ui(r.hi, 2, MPFR_RNDU);
    iv_div(&t, &xx, &r);
    iv_neg(&t, &t);
    iv_erfc(&t, &t);
    iv_mul(&t, &t, &xx);
    mpfr_div_2ui(y->lo, t.lo, 1, MPFR_RNDD);
    mpfr_div_2ui(y->hi, t.hi, 1, MPFR_RNDU);
    adm_o_iv_clear(&t);
    adm_o_iv_clear(&r);
    adm_o_iv_clear(&xx);
}

/* silu = x / (1 + exp(-x)) */
void adm_o_silu_iv(adm_o_iv *y, const adm_o_iv *x)
{
    adm_o_iv t, xx;
    if (neg_inf_point(y, x)) return;
    adm_o_iv_init(&t, mpfr_get_prec(y->lo));
    adm_o_iv_init(&xx, mpfr_get_prec(x->lo));
    iv_set(&xx, x);
    iv_neg(&t, &xx);
    iv_exp(&t, &t);
    iv_add_d(&t, &t, 1.0);
    iv_div(y, &xx, &t);
    adm_o_iv_clear(&t);
    adm_o_iv_clear(&xx);
}

/* ---------------------------------------------------------------- ops */

static double get(const adm_tensor *t, int64_t i) { return adm_tensor_get(t, i); }

/* Correctly rounded a / b into dt (RNE), saturating at its max. */
static double div_to_format(adm_dtype dt, const mpfr_t a, const mpfr_t b)
{
    const adm_format_info *f = adm_format_get(dt);
    mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
    mpfr_t q;
    int inex;
    double r;
    if (mpfr_zero_p(b)) return mpfr_nan_p(a) ? NAN : 0.0;
    mpfr_set_emin(f->emin - (f->man_bits + 1) + 2);
    mpfr_set_emax(f->emax + 1);
    mpfr_init2(q, f->man_bits + 1);
    inex = mpfr_div(q, a, b, MPFR_RNDN);
    inex = mpfr_check_range(q, inex, MPFR_RNDN);
    mpfr_subnormalize(q, inex, MPFR_RNDN);
    r = mpfr_get_d(q, MPFR_RNDN);
    mpfr_clear(q);
    mpfr_set_emin(emin);
    mpfr_set_emax(emax);
    if (fabs(r) > f->max_finite) r = copysign(f->max_finite, r);
    return r;
}

static void elementwise(const adm_o_ctx *c, adm_op_id id, int64_t i, adm_o_iv *y)
{
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    adm_o_iv x, t;
    double xv = get(c->in[0], i);
    adm_o_iv_init(&x, 64);
    adm_o_iv_init(&t, p);
    adm_o_iv_set_d(&x, xv);
    switch (id) {
    case OP_RELU:
        if (isnan(xv)) iv_set_nan(y);
        else iv_relu(y, &x);
        break;
    case OP_SCALE: iv_mul_d(y, &x, c->p->factor); break;
    case OP_GELU:
        if (c->p->gelu_tanh) adm_o_gelu_tanh_iv(y, &x);
        else adm_o_gelu_erf_iv(y, &x);
        break;
    case OP_SILU: adm_o_silu_iv(y, &x); break;
    case OP_SWIGLU:
        adm_o_silu_iv(&t, &x);
        iv_mul_d(y, &t, get(c->in[1], i));
        break;
    default: break;
    }
    adm_o_iv_clear(&x);
    adm_o_iv_clear(&t);
}

/* x_i . w_j (+ bias_j) exactly */
void adm_o_gemm_exact(const adm_o_ctx *c, int64_t index, adm_o_exact *s)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0];
    adm_tensor wt;
    int64_t K = x->shape[x->ndim - 1], N, i, j;
    if (id == OP_MATMUL) (void)adm_tensor_transpose(c->in[1], 0, 1, &wt);
    else wt = *c->in[1];
    N = wt.shape[0];
    i = index / N;
    j = index % N;
    adm_o_exact_zero(s);
    for (int64_t k = 0; k < K; k++) adm_o_exact_add_prod(s, get(x, i * K + k), get(&wt, j * K + k));
    if (id != OP_MATMUL && c->in[2]) adm_o_exact_add(s, get(c->in[2], j));
}

static void linear_gelu(const adm_o_ctx *c, int64_t index, adm_o_iv *y)
{
    adm_o_exact s;
    adm_o_iv a;
    adm_o_exact_init(&s);
    adm_o_gemm_exact(c, index, &s);
    adm_o_iv_init(&a, adm_o_exact_prec(&s) + 2);
    iv_set_exact(&a, &s); /* exact: a holds every bit */
    if (c->p->gelu_tanh) adm_o_gelu_tanh_iv(y, &a);
    else adm_o_gelu_erf_iv(y, &a);
    adm_o_iv_clear(&a);
    adm_o_exact_clear(&s);
}

static void row_exact(const adm_o_ctx *c, int64_t index, adm_o_exact *s, int squares)
{
    const adm_tensor *x = c->in[0];
    adm_axis_geom g = adm_o_axis_geom(x, adm_o_norm_axis(c->p->axis, x->ndim));
    int64_t o = index / g.inner, in = index % g.inner;
    adm_o_exact_zero(s);
    for (int64_t j = 0; j < g.n; j++) {
        double v = get(x, o * g.n * g.inner + j * g.inner + in);
        if (squares) adm_o_exact_add_prod(s, v, v);
        else adm_o_exact_add(s, v);
    }
}

int adm_o_exact_element(const adm_o_ctx *c, int64_t index, adm_o_exact *s)
{
    switch (adm_op_id_of(c->op)) {
    case OP_MATMUL: case OP_LINEAR:
        adm_o_gemm_exact(c, index, s);
        return 1;
    case OP_ROW_SUM:
        row_exact(c, index, s, 0);
        return 1;
    case OP_GATED_RESIDUAL: {
        adm_tensor gv;
        (void)adm_tensor_broadcast(c->in[1], c->ndim, c->shape, &gv);
        adm_o_exact_zero(s);
        adm_o_exact_add(s, get(c->in[0], index));
        adm_o_exact_add_prod(s, get(&gv, index), get(c->in[2], index));
        return 1;
    }
    default:
        return 0;
    }
}

static void reduce(const adm_o_ctx *c, adm_op_id id, int64_t index, adm_o_iv *y)
{
    const adm_tensor *x = c->in[0];
    int axis = adm_o_norm_axis(c->p->axis, x->ndim);
    adm_axis_geom g = adm_o_axis_geom(x, axis);
    int64_t o, in, j0 = 0, n = g.n;
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    if (id == OP_SOFTMAX) {
        o = index / (n * g.inner);
        j0 = (index / g.inner) % n;
        in = index % g.inner;
    } else {
        o = index / g.inner;
        in = index % g.inner;
    }
    if (id == OP_SOFTMAX) {
        /* shift-invariant: exp(x_j - M) / sum_l exp(x_l - M), M = max x
         * (a double: the differences are exact at the working precision
         * or rounded outward) */
        adm_o_iv *e = ivs_new(n, p), s;
        double M = -INFINITY;
        int nan = 0;
        for (int64_t j = 0; j < n; j++) {
            double v = get(x, o * n * g.inner + j * g.inner + in);
            if (isnan(v)) nan = 1;
            M = fmax(M, v);
        }
        adm_o_iv_init(&s, p);
        if (nan || isinf(M)) {
            /* fp64 semantics: NaN in, or an infinite max (inf - inf) */
            iv_set_nan(y);
        } else {
            for (int64_t j = 0; j < n; j++) {
                adm_o_iv_set_d(&e[j], get(x, o * n * g.inner + j * g.inner + in));
                iv_add_d(&e[j], &e[j], -M);
                iv_exp(&e[j], &e[j]);
            }
            iv_sum(&s, e, n);
            iv_div(y, &e[j0], &s);
        }
        adm_o_iv_clear(&s);
        ivs_free(e, n);
    } else { /* mean_sq: the exact sum of squares, one division */
        adm_o_exact s;
        adm_o_iv t;
        adm_o_exact_init(&s);
        row_exact(c, index, &s, 1);
        adm_o_iv_init(&t, adm_o_exact_prec(&s) + 2);
        iv_set_exact(&t, &s);
        mpfr_div_ui(y->lo, t.lo, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(y->hi, t.hi, (unsigned long)n, MPFR_RNDU);
        adm_o_iv_clear(&t);
        adm_o_exact_clear(&s);
    }
}

static void norm(const adm_o_ctx *c, adm_op_id id, int64_t index, adm_o_iv *y)
{
    const adm_tensor *x = c->in[0];
    int64_t n, cc, C, kk = 0;
    int64_t *off;
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    adm_o_exact S, Q, d;
    adm_o_iv v, t, sd;
    if (id == OP_GROUPNORM) {
        int cl = c->p->channels_last;
        int64_t L = cl ? x->shape[1] : x->shape[2], G = c->p->groups, cpg, b, ch, g;
        C = cl ? x->shape[2] : x->shape[1];
        cpg = C / G;
        if (cl) { b = index / (L * C); ch = index % C; }
        else { b = index / (C * L); ch = (index / L) % C; }
        g = ch / cpg;
        n = cpg * L;
        off = malloc(sizeof *off * (size_t)n);
        for (int64_t k = 0; k < n; k++) {
            int64_t kc = g * cpg + (cl ? k % cpg : k / L), kl = cl ? k / cpg : k % L;
            off[k] = cl ? (b * L + kl) * C + kc : (b * C + kc) * L + kl;
            if (off[k] == index) kk = k;
        }
        cc = ch;
    } else {
        int64_t base;
        C = x->shape[x->ndim - 1];
        n = C;
        base = index / C * C;
        off = malloc(sizeof *off * (size_t)n);
        for (int64_t k = 0; k < n; k++) off[k] = base + k;
        cc = index % C;
        kk = cc;
    }
    /* Exact statistics: S = sum x, d_k = n x_k - S = n (x_k - mean), and
     * Q = sum d_k^2 = n^2 sum (x_k - mean)^2, so the variance is Q / n^3
     * and x_k - mean = d_k / n, all without rounding. rmsnorm: the same
     * about zero (S = 0). */
    adm_o_exact_init(&S);
    adm_o_exact_init(&Q);
    adm_o_exact_init(&d);
    if (id != OP_RMSNORM)
        for (int64_t k = 0; k < n; k++) adm_o_exact_add(&S, get(x, off[k]));
    for (int64_t k = 0; k < n; k++) {
        adm_o_exact_zero(&d);
        adm_o_exact_add(&d, get(x, off[k]));
        mpz_mul_si(d.m, d.m, (long)n);
        adm_o_exact_add_exact(&d, &S, -1);
        if (d.has_special) {
            Q.has_special = 1;
            Q.special = Q.special + d.special * d.special;
        } else {
            mpz_mul(d.t, d.m, d.m);
            if (mpz_sgn(Q.m) == 0) { mpz_set(Q.m, d.t); Q.e = 2 * d.e; }
            else {
                /* every d_k has the exponent of x_k or S: align */
                if (2 * d.e < Q.e) { mpz_mul_2exp(Q.m, Q.m, (mp_bitcnt_t)(Q.e - 2 * d.e)); Q.e = 2 * d.e; }
                else mpz_mul_2exp(d.t, d.t, (mp_bitcnt_t)(2 * d.e - Q.e));
                mpz_add(Q.m, Q.m, d.t);
            }
        }
    }
    adm_o_iv_init(&v, p);
    adm_o_iv_init(&t, p);
    adm_o_iv_init(&sd, p);
    /* sd = sqrt(Q / n^3 + eps) */
    {
        adm_o_iv q;
        adm_o_iv_init(&q, adm_o_exact_prec(&Q) + 2);
        iv_set_exact(&q, &Q);
        mpfr_div_ui(sd.lo, q.lo, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(sd.hi, q.hi, (unsigned long)n, MPFR_RNDU);
        mpfr_div_ui(sd.lo, sd.lo, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(sd.hi, sd.hi, (unsigned long)n, MPFR_RNDU);
        mpfr_div_ui(sd.lo, sd.lo, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(sd.hi, sd.hi, (unsigned long)n, MPFR_RNDU);
        adm_o_iv_clear(&q);
    }
    iv_add_d(&sd, &sd, c->p->eps);
    iv_sqrt(&sd, &sd);
    /* x_k - mean = d_k / n */
    adm_o_exact_zero(&d);
    adm_o_exact_add(&d, get(x, off[kk]));
    mpz_mul_si(d.m, d.m, (long)n);
    adm_o_exact_add_exact(&d, &S, -1);
    {
        adm_o_iv e;
        adm_o_iv_init(&e, adm_o_exact_prec(&d) + 2);
        iv_set_exact(&e, &d);
        mpfr_div_ui(t.lo, e.lo, (unsigned long)n, MPFR_RNDD);
        mpfr_div_ui(t.hi, e.hi, (unsigned long)n, MPFR_RNDU);
        adm_o_iv_clear(&e);
    }
    iv_div(&v, &t, &sd);
    if (c->in[1]) iv_mul_d(&v, &v, get(c->in[1], cc));
    if (id != OP_RMSNORM && c->in[2]) iv_add_d(&v, &v, get(c->in[2], cc));
    if (id == OP_LAYERNORM && c->p->modulate) {
        adm_tensor sh, sc;
        (void)adm_tensor_broadcast(c->in[3], c->ndim, c->shape, &sh);
        (void)adm_tensor_broadcast(c->in[4], c->ndim, c->shape, &sc);
        adm_o_iv_set_d(&t, get(&sc, index));
        iv_add_d(&t, &t, 1.0);
        iv_mul(&v, &v, &t);
        iv_add_d(&v, &v, get(&sh, index));
    }
    if ((id == OP_GROUPNORM || id == OP_RMSNORM) && c->p->silu) {
        iv_set(&t, &v);
        adm_o_silu_iv(&v, &t);
    }
    iv_set(y, &v);
    adm_o_iv_clear(&v);
    adm_o_iv_clear(&t);
    adm_o_iv_clear(&sd);
    adm_o_exact_clear(&S);
    adm_o_exact_clear(&Q);
    adm_o_exact_clear(&d);
    free(off);
}

static void attention(const adm_o_ctx *c, adm_op_id id, int64_t index, adm_o_iv *y)
{
    const adm_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    int r = q->ndim;
    int64_t S = q->shape[r - 2], D = q->shape[r - 1], T = k->shape[r - 2], E = v->shape[r - 1];
    int64_t h = index / (S * E), i = (index / E) % S, e = index % E;
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    adm_o_exact dot;
    adm_o_exact_init(&dot);
    if (id == OP_ATTENTION) {
        int64_t tend = T;
        adm_o_iv *sc = ivs_new(T, p), *acc = ivs_new(T, p), s, num, den;
        mpfr_t M;
        adm_o_iv_init(&s, p);
        adm_o_iv_init(&num, p);
        adm_o_iv_init(&den, p);
        mpfr_init2(M, p);
        if (c->p->causal) tend = i + 1 < T ? i + 1 : T;
        if (c->p->attn_scale > 0) {
            adm_o_iv_set_d(&s, c->p->attn_scale);
        } else {
            /* 1/sqrt(D): mpfr_rec_sqrt is correctly rounded each way */
            mpfr_set_ui(M, (unsigned long)D, MPFR_RNDN);
            mpfr_rec_sqrt(s.lo, M, MPFR_RNDD);
            mpfr_rec_sqrt(s.hi, M, MPFR_RNDU);
        }
        mpfr_set_inf(M, -1);
        for (int64_t j = 0; j < tend; j++) {
            adm_o_iv t;
            adm_o_exact_zero(&dot);
            for (int64_t d = 0; d < D; d++) adm_o_exact_add_prod(&dot, get(q, (h * S + i) * D + d), get(k, (h * T + j) * D + d));
            adm_o_iv_init(&t, adm_o_exact_prec(&dot) + 2);
            iv_set_exact(&t, &dot);
            iv_mul(&sc[j], &t, &s);
            adm_o_iv_clear(&t);
            mpfr_max(M, M, sc[j].hi, MPFR_RNDU);
        }
        /* softmax is shift-invariant: subtract the number M */
        for (int64_t j = 0; j < tend; j++) {
            mpfr_sub(sc[j].lo, sc[j].lo, M, MPFR_RNDD);
            mpfr_sub(sc[j].hi, sc[j].hi, M, MPFR_RNDU);
            iv_exp(&sc[j], &sc[j]);
            iv_mul_d(&acc[j], &sc[j], get(v, (h * T + j) * E + e));
        }
        iv_sum(&den, sc, tend);
        iv_sum(&num, acc, tend);
        iv_div(y, &num, &den);
        mpfr_clear(M);
        adm_o_iv_clear(&s);
        adm_o_iv_clear(&num);
        adm_o_iv_clear(&den);
        ivs_free(sc, T);
        ivs_free(acc, T);
    } else {
        /* num = sum_j (phi(q_i) . phi(k_j)) v_je and den = sum_j phi(q_i) .
         * phi(k_j) + eps, phi = relu: both exact sums of products */
        adm_o_exact num;
        adm_o_iv a, b;
        adm_o_exact_init(&num);
        for (int64_t j = 0; j < T; j++) {
            double vv = get(v, (h * T + j) * E + e);
            for (int64_t d = 0; d < D; d++) {
                double qa = fmax(get(q, (h * S + i) * D + d), 0.0), kb = fmax(get(k, (h * T + j) * D + d), 0.0);
                if (isnan(get(q, (h * S + i) * D + d))) qa = NAN;
                if (isnan(get(k, (h * T + j) * D + d))) kb = NAN;
                adm_o_exact_add_prod(&dot, qa, kb);
                adm_o_exact_add_prod3(&num, qa, kb, vv);
            }
        }
        adm_o_exact_add(&dot, c->p->eps);
        adm_o_iv_init(&a, adm_o_exact_prec(&num) + 2);
        adm_o_iv_init(&b, adm_o_exact_prec(&dot) + 2);
        iv_set_exact(&a, &num);
        iv_set_exact(&b, &dot);
        iv_div(y, &a, &b);
        adm_o_iv_clear(&a);
        adm_o_iv_clear(&b);
        adm_o_exact_clear(&num);
    }
    adm_o_exact_clear(&dot);
}

static void quantize(const adm_o_ctx *c, int64_t index, adm_o_iv *y)
{
    const adm_tensor *x = c->in[0];
    int64_t n = c->numel, N = x->shape[x->ndim - 1], lo = 0, hi = n;
    mpfr_t a, b, t, r;
    double amax = 0, s, qv;
    mpfr_inits2(128, a, b, t, r, (mpfr_ptr)0);
    if (c->p->scheme == ADM_Q_FP8_ROW) { lo = index / N * N; hi = lo + N; }
    for (int64_t i = lo; i < hi; i++) {
        double v = get(x, i);
        amax = isnan(v) || isnan(amax) ? NAN : fmax(amax, fabs(v));
    }
    mpfr_set_d(a, amax, MPFR_RNDN);
    mpfr_set_ui(b, c->p->scheme == ADM_Q_NVFP4 ? 6 * 448 : 448, MPFR_RNDN);
    s = div_to_format(ADM_FP32, a, b);
    mpfr_set_d(a, get(x, index), MPFR_RNDN);
    if (c->p->scheme == ADM_Q_NVFP4) {
        int64_t b0 = index / 16 * 16;
        double ba = 0, sb;
        for (int64_t i = b0; i < b0 + 16; i++) {
            double v = get(x, i);
            ba = isnan(v) || isnan(ba) ? NAN : fmax(ba, fabs(v));
        }
        mpfr_set_d(t, ba, MPFR_RNDN);
        mpfr_set_d(b, 6.0 * s, MPFR_RNDN); /* exact: s is fp32 */
        sb = s == 0 ? 0.0 : div_to_format(ADM_E4M3, t, b);
        mpfr_set_d(b, sb * s, MPFR_RNDN); /* exact: 4 + 24 bits */
    } else {
        mpfr_set_d(b, s, MPFR_RNDN);
    }
    qv = div_to_format(c->p->scheme == ADM_Q_NVFP4 ? ADM_E2M1 : ADM_E4M3, a, b);
    mpfr_set_d(r, qv, MPFR_RNDN);
    mpfr_mul(r, r, b, MPFR_RNDN); /* exact at 128 bits */
    iv_set_fr(y, r);
    if (mpfr_nan_p(b) || isnan(qv)) iv_set_nan(y);
    mpfr_clears(a, b, t, r, (mpfr_ptr)0);
}

adm_status adm_o_mpfr_element(const adm_o_ctx *c, int64_t index, adm_o_iv *y)
{
    adm_op_id id = adm_op_id_of(c->op);
    adm_o_exact s;
    if (index < 0 || index >= c->numel)
        return ADM_FAIL(ADM_ERR_INVALID, "oracle: element %lld outside 0..%lld", (long long)index, (long long)c->numel - 1);
    adm_o_exact_init(&s);
    if (adm_o_exact_element(c, index, &s)) {
        iv_set_exact(y, &s);
        adm_o_exact_clear(&s);
        return ADM_OK;
    }
    adm_o_exact_clear(&s);
    switch (id) {
    case OP_RELU: case OP_SCALE: case OP_GELU: case OP_SILU: case OP_SWIGLU: case OP_GATED_RESIDUAL:
        elementwise(c, id, index, y);
        break;
    case OP_MATMUL: case OP_LINEAR: case OP_LINEAR_GELU: linear_gelu(c, index, y); break;
    case OP_ROW_SUM: case OP_MEAN_SQ: case OP_SOFTMAX: reduce(c, id, index, y); break;
    case OP_RMSNORM: case OP_LAYERNORM: case OP_GROUPNORM: norm(c, id, index, y); break;
    case OP_ATTENTION: case OP_LINEAR_ATTENTION: attention(c, id, index, y); break;
    case OP_QUANTIZE: quantize(c, index, y); break;
    }
    return ADM_OK;
}
