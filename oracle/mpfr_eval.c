/* The MPFR evaluator: one output element of any catalog op at a given
 * precision. Every step is correctly rounded at the working precision
 * (the target's plus 32 bits); sums use mpfr_sum (correctly rounded over
 * all terms at once); no step cancels catastrophically except the sums,
 * which mpfr_sum makes exact to the working precision. The result is
 * within 2^(16 - prec) relative of the exact value (plus ADM_TINY for
 * results in the fp64 subnormal range), far below every fp64 bound. */
#include "oracle_internal.h"

#include <stdlib.h>

#define WP(y) (mpfr_get_prec(y) + 32)

static void get(mpfr_t r, const adm_tensor *t, int64_t i) { mpfr_set_d(r, adm_tensor_get(t, i), MPFR_RNDN); }

/* sum of n terms given as an array of mpfr_t, correctly rounded into r */
static void sum_terms(mpfr_t r, mpfr_t *terms, int64_t n)
{
    mpfr_ptr *ptr = malloc(sizeof *ptr * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) ptr[i] = terms[i];
    mpfr_sum(r, ptr, (unsigned long)n, MPFR_RNDN);
    free(ptr);
}

static mpfr_t *terms_new(int64_t n, mpfr_prec_t p)
{
    mpfr_t *t = malloc(sizeof *t * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) mpfr_init2(t[i], p);
    return t;
}

static void terms_free(mpfr_t *t, int64_t n)
{
    for (int64_t i = 0; i < n; i++) mpfr_clear(t[i]);
    free(t);
}

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

static void elementwise(const adm_o_ctx *c, adm_op_id id, int64_t i, mpfr_t y)
{
    mpfr_prec_t p = WP(y);
    mpfr_t x, t, g;
    mpfr_inits2(p, x, t, g, (mpfr_ptr)0);
    get(x, c->in[0], i);
    switch (id) {
    case OP_RELU:
        if (mpfr_sgn(x) > 0 || mpfr_nan_p(x)) mpfr_set(y, x, MPFR_RNDN);
        else mpfr_set_zero(y, 1);
        break;
    case OP_SCALE: mpfr_mul_d(y, x, c->p->factor, MPFR_RNDN); break;
    case OP_GELU:
        if (c->p->gelu_tanh) adm_o_gelu_tanh_mpfr(y, x);
        else adm_o_gelu_erf_mpfr(y, x);
        break;
    case OP_SILU: adm_o_silu_mpfr(y, x); break;
    case OP_SWIGLU:
        adm_o_silu_mpfr(t, x);
        get(g, c->in[1], i);
        mpfr_mul(y, t, g, MPFR_RNDN);
        break;
    case OP_GATED_RESIDUAL: {
        adm_tensor gv;
        (void)adm_tensor_broadcast(c->in[1], c->ndim, c->shape, &gv);
        get(g, &gv, i);
        get(t, c->in[2], i);
        mpfr_mul(t, t, g, MPFR_RNDN);
        mpfr_add(y, x, t, MPFR_RNDN);
        break;
    }
    default: break;
    }
    mpfr_clears(x, t, g, (mpfr_ptr)0);
}

static void gemm(const adm_o_ctx *c, adm_op_id id, int64_t index, mpfr_t y)
{
    const adm_tensor *x = c->in[0];
    adm_tensor wt;
    int64_t K = x->shape[x->ndim - 1], N, i, j;
    mpfr_t *terms, a, b;
    if (id == OP_MATMUL) (void)adm_tensor_transpose(c->in[1], 0, 1, &wt);
    else wt = *c->in[1];
    N = wt.shape[0];
    i = index / N;
    j = index % N;
    terms = terms_new(K + 1, 128);
    mpfr_inits2(WP(y), a, b, (mpfr_ptr)0);
    for (int64_t k = 0; k < K; k++) {
        get(a, x, i * K + k);
        get(b, &wt, j * K + k);
        mpfr_mul(terms[k], a, b, MPFR_RNDN); /* exact at 128 bits */
    }
    if (id != OP_MATMUL && c->in[2]) get(terms[K], c->in[2], j);
    else mpfr_set_zero(terms[K], 1);
    sum_terms(a, terms, K + 1);
    if (id == OP_LINEAR_GELU) {
        if (c->p->gelu_tanh) adm_o_gelu_tanh_mpfr(y, a);
        else adm_o_gelu_erf_mpfr(y, a);
    } else {
        mpfr_set(y, a, MPFR_RNDN);
    }
    mpfr_clears(a, b, (mpfr_ptr)0);
    terms_free(terms, K + 1);
}

static void reduce(const adm_o_ctx *c, adm_op_id id, int64_t index, mpfr_t y)
{
    const adm_tensor *x = c->in[0];
    int axis = adm_o_norm_axis(c->p->axis, x->ndim);
    adm_axis_geom g = adm_o_axis_geom(x, axis);
    int64_t o, in, j0 = 0, n = g.n;
    mpfr_prec_t p = WP(y);
    mpfr_t *terms = terms_new(n, p), t, m;
    mpfr_inits2(p, t, m, (mpfr_ptr)0);
    if (id == OP_SOFTMAX) {
        o = index / (n * g.inner);
        j0 = (index / g.inner) % n;
        in = index % g.inner;
    } else {
        o = index / g.inner;
        in = index % g.inner;
    }
    for (int64_t j = 0; j < n; j++) {
        get(terms[j], x, o * n * g.inner + j * g.inner + in);
        if (id == OP_MEAN_SQ) mpfr_sqr(terms[j], terms[j], MPFR_RNDN);
    }
    if (id == OP_SOFTMAX) {
        mpfr_set_inf(m, -1);
        for (int64_t j = 0; j < n; j++) mpfr_max(m, m, terms[j], MPFR_RNDN);
        for (int64_t j = 0; j < n; j++) {
            mpfr_sub(terms[j], terms[j], m, MPFR_RNDN);
            mpfr_exp(terms[j], terms[j], MPFR_RNDN);
        }
        mpfr_set(t, terms[j0], MPFR_RNDN);
        sum_terms(m, terms, n);
        mpfr_div(y, t, m, MPFR_RNDN);
    } else {
        sum_terms(t, terms, n);
        if (id == OP_MEAN_SQ) mpfr_div_ui(y, t, (unsigned long)n, MPFR_RNDN);
        else mpfr_set(y, t, MPFR_RNDN);
    }
    mpfr_clears(t, m, (mpfr_ptr)0);
    terms_free(terms, n);
}

static void norm(const adm_o_ctx *c, adm_op_id id, int64_t index, mpfr_t y)
{
    const adm_tensor *x = c->in[0];
    int64_t n, cc, base_chan = 0, C;
    int64_t *off;
    mpfr_prec_t p = WP(y);
    mpfr_t *terms, mu, var, t, v;
    if (id == OP_GROUPNORM) {
        int cl = c->p->channels_last;
        int64_t B = x->shape[0], L = cl ? x->shape[1] : x->shape[2], G = c->p->groups, cpg;
        int64_t b, ch, g;
        C = cl ? x->shape[2] : x->shape[1];
        (void)B;
        cpg = C / G;
        if (cl) { b = index / (L * C); ch = index % C; }
        else { b = index / (C * L); ch = (index / L) % C; }
        g = ch / cpg;
        n = cpg * L;
        off = malloc(sizeof *off * (size_t)n);
        for (int64_t k = 0; k < n; k++) {
            int64_t kc = g * cpg + (cl ? k % cpg : k / L), kl = cl ? k / cpg : k % L;
            off[k] = cl ? (b * L + kl) * C + kc : (b * C + kc) * L + kl;
        }
        cc = ch;
    } else {
        C = x->shape[x->ndim - 1];
        n = C;
        base_chan = index / C * C;
        off = malloc(sizeof *off * (size_t)n);
        for (int64_t k = 0; k < n; k++) off[k] = base_chan + k;
        cc = index % C;
    }
    terms = terms_new(n, 2 * p);
    mpfr_inits2(p, mu, var, t, v, (mpfr_ptr)0);
    /* rmsnorm is the same computation about zero instead of the mean */
    for (int64_t k = 0; k < n; k++) get(terms[k], x, off[k]);
    if (id == OP_RMSNORM) {
        mpfr_set_zero(mu, 1);
    } else {
        sum_terms(mu, terms, n);
        mpfr_div_ui(mu, mu, (unsigned long)n, MPFR_RNDN);
    }
    for (int64_t k = 0; k < n; k++) {
        mpfr_sub(terms[k], terms[k], mu, MPFR_RNDN);
        mpfr_sqr(terms[k], terms[k], MPFR_RNDN);
    }
    sum_terms(var, terms, n);
    mpfr_div_ui(var, var, (unsigned long)n, MPFR_RNDN);
    mpfr_add_d(var, var, c->p->eps, MPFR_RNDN);
    mpfr_sqrt(var, var, MPFR_RNDN);
    get(t, x, index);
    mpfr_sub(t, t, mu, MPFR_RNDN);
    mpfr_div(v, t, var, MPFR_RNDN);
    if (c->in[1]) { get(t, c->in[1], cc); mpfr_mul(v, v, t, MPFR_RNDN); }
    if (id != OP_RMSNORM && c->in[2]) { get(t, c->in[2], cc); mpfr_add(v, v, t, MPFR_RNDN); }
    if (id == OP_LAYERNORM && c->p->modulate) {
        adm_tensor sh, sc;
        (void)adm_tensor_broadcast(c->in[3], c->ndim, c->shape, &sh);
        (void)adm_tensor_broadcast(c->in[4], c->ndim, c->shape, &sc);
        get(t, &sc, index);
        mpfr_add_ui(t, t, 1, MPFR_RNDN);
        mpfr_mul(v, v, t, MPFR_RNDN);
        get(t, &sh, index);
        mpfr_add(v, v, t, MPFR_RNDN);
    }
    if ((id == OP_GROUPNORM || id == OP_RMSNORM) && c->p->silu) {
        mpfr_set(t, v, MPFR_RNDN);
        adm_o_silu_mpfr(v, t);
    }
    mpfr_set(y, v, MPFR_RNDN);
    mpfr_clears(mu, var, t, v, (mpfr_ptr)0);
    terms_free(terms, n);
    free(off);
}

static void attention(const adm_o_ctx *c, adm_op_id id, int64_t index, mpfr_t y)
{
    const adm_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    int r = q->ndim;
    int64_t S = q->shape[r - 2], D = q->shape[r - 1], T = k->shape[r - 2], E = v->shape[r - 1];
    int64_t h = index / (S * E), i = (index / E) % S, e = index % E;
    mpfr_prec_t p = WP(y);
    mpfr_t *dot = terms_new(D + 1, 2 * p), *sc = terms_new(T, p), *acc = terms_new(T, 2 * p), a, b, s, m;
    int64_t tend = T;
    mpfr_inits2(p, a, b, s, m, (mpfr_ptr)0);
    if (id == OP_ATTENTION) {
        if (c->p->causal) tend = i + 1 < T ? i + 1 : T;
        if (c->p->attn_scale > 0) mpfr_set_d(s, c->p->attn_scale, MPFR_RNDN);
        else { mpfr_set_ui(s, (unsigned long)D, MPFR_RNDN); mpfr_rec_sqrt(s, s, MPFR_RNDN); }
        mpfr_set_inf(m, -1);
        for (int64_t j = 0; j < tend; j++) {
            for (int64_t d = 0; d < D; d++) {
                get(a, q, (h * S + i) * D + d);
                get(b, k, (h * T + j) * D + d);
                mpfr_mul(dot[d], a, b, MPFR_RNDN);
            }
            sum_terms(sc[j], dot, D);
            mpfr_mul(sc[j], sc[j], s, MPFR_RNDN);
            mpfr_max(m, m, sc[j], MPFR_RNDN);
        }
        for (int64_t j = 0; j < tend; j++) {
            mpfr_sub(sc[j], sc[j], m, MPFR_RNDN);
            mpfr_exp(sc[j], sc[j], MPFR_RNDN);
        }
        sum_terms(s, sc, tend);
        for (int64_t j = 0; j < tend; j++) {
            get(a, v, (h * T + j) * E + e);
            mpfr_mul(acc[j], sc[j], a, MPFR_RNDN);
        }
        sum_terms(a, acc, tend);
        mpfr_div(y, a, s, MPFR_RNDN);
    } else {
        /* num = sum_j (phi(q_i) . phi(k_j)) v_je, den = sum_j phi(q_i) . phi(k_j) + eps */
        mpfr_t *wts = terms_new(T + 1, p);
        for (int64_t j = 0; j < T; j++) {
            for (int64_t d = 0; d < D; d++) {
                get(a, q, (h * S + i) * D + d);
                get(b, k, (h * T + j) * D + d);
                if (mpfr_sgn(a) < 0) mpfr_set_zero(a, 1);
                if (mpfr_sgn(b) < 0) mpfr_set_zero(b, 1);
                mpfr_mul(dot[d], a, b, MPFR_RNDN);
            }
            sum_terms(wts[j], dot, D);
            get(a, v, (h * T + j) * E + e);
            mpfr_mul(acc[j], wts[j], a, MPFR_RNDN);
        }
        mpfr_set_d(wts[T], c->p->eps, MPFR_RNDN);
        sum_terms(s, wts, T + 1);
        sum_terms(a, acc, T);
        mpfr_div(y, a, s, MPFR_RNDN);
        terms_free(wts, T + 1);
    }
    mpfr_clears(a, b, s, m, (mpfr_ptr)0);
    terms_free(dot, D + 1);
    terms_free(sc, T);
    terms_free(acc, T);
}

static void quantize(const adm_o_ctx *c, int64_t index, mpfr_t y)
{
    const adm_tensor *x = c->in[0];
    int64_t n = c->numel, N = x->shape[x->ndim - 1], lo = 0, hi = n;
    mpfr_t a, b, t;
    double amax = 0, s, qv;
    mpfr_inits2(128, a, b, t, (mpfr_ptr)0);
    if (c->p->scheme == ADM_Q_FP8_ROW) { lo = index / N * N; hi = lo + N; }
    for (int64_t i = lo; i < hi; i++) {
        double v = adm_tensor_get(x, i);
        amax = isnan(v) || isnan(amax) ? NAN : fmax(amax, fabs(v));
    }
    mpfr_set_d(a, amax, MPFR_RNDN);
    mpfr_set_ui(b, c->p->scheme == ADM_Q_NVFP4 ? 6 * 448 : 448, MPFR_RNDN);
    s = div_to_format(ADM_FP32, a, b);
    get(a, x, index);
    if (c->p->scheme == ADM_Q_NVFP4) {
        int64_t b0 = index / 16 * 16;
        double ba = 0, sb;
        for (int64_t i = b0; i < b0 + 16; i++) {
            double v = adm_tensor_get(x, i);
            ba = isnan(v) || isnan(ba) ? NAN : fmax(ba, fabs(v));
        }
        mpfr_set_d(t, ba, MPFR_RNDN);
        mpfr_set_d(b, 6.0 * s, MPFR_RNDN);
        sb = s == 0 ? 0.0 : div_to_format(ADM_E4M3, t, b);
        mpfr_set_d(b, sb * s, MPFR_RNDN);
        qv = div_to_format(ADM_E2M1, a, b);
        mpfr_set_d(y, qv, MPFR_RNDN);
        mpfr_mul(y, y, b, MPFR_RNDN);
    } else {
        mpfr_set_d(b, s, MPFR_RNDN);
        qv = div_to_format(ADM_E4M3, a, b);
        mpfr_set_d(y, qv, MPFR_RNDN);
        mpfr_mul(y, y, b, MPFR_RNDN);
    }
    if (mpfr_nan_p(b) || isnan(qv)) mpfr_set_nan(y);
    mpfr_clears(a, b, t, (mpfr_ptr)0);
}

adm_status adm_o_mpfr_element(const adm_o_ctx *c, int64_t index, mpfr_t y)
{
    adm_op_id id = adm_op_id_of(c->op);
    if (index < 0 || index >= c->numel)
        return ADM_FAIL(ADM_ERR_INVALID, "oracle: element %lld outside 0..%lld", (long long)index, (long long)c->numel - 1);
    switch (id) {
    case OP_RELU: case OP_SCALE: case OP_GELU: case OP_SILU: case OP_SWIGLU: case OP_GATED_RESIDUAL:
        elementwise(c, id, index, y);
        break;
    case OP_MATMUL: case OP_LINEAR: case OP_LINEAR_GELU: gemm(c, id, index, y); break;
    case OP_ROW_SUM: case OP_MEAN_SQ: case OP_SOFTMAX: reduce(c, id, index, y); break;
    case OP_RMSNORM: case OP_LAYERNORM: case OP_GROUPNORM: norm(c, id, index, y); break;
    case OP_ATTENTION: case OP_LINEAR_ATTENTION: attention(c, id, index, y); break;
    case OP_QUANTIZE: quantize(c, index, y); break;
    }
    return ADM_OK;
}
