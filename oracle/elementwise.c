/* Elementwise ops: relu, scale, gelu (tanh and erf), silu, swiglu,
 * gated_residual; the scalar functions with their error bounds. */
#include "oracle_internal.h"

#include <stdlib.h>

/* gelu_tanh(x) = 0.5 x (1 + tanh(z)), z = C (x + A x^3), C = sqrt(2/pi),
 * A = 0.044715, evaluated as x / (1 + exp(-2z)) (the same function; no
 * cancellation for negative x, where 1 + tanh(z) would cancel).
 *   z: x*x, *x, *A, x + (.) (same signs: no cancellation), *C, and the
 *      representation errors of A and C: |z^ - z| <= gamma_7 |z|.
 *   exp(w^), w = -2z: exp(w^) = exp(w) exp(w theta), so the relative error
 *      is <= |w| gamma_7 (1 + 1e-9) plus the library's ADM_LIBM_EXP_U u.
 *   1 + e (positive terms) and x / d: one rounding each; 1 + e^ keeps
 *      the relative error of e^ (e/(1+e) <= 1).
 * => |y^ - y| <= ((7.01 |w| + ADM_LIBM_EXP_U + 3) u) |y^| + ADM_TINY,
 * and where exp saturates (|w| > 708: y^ = x or 0) |y^ - y| <= |x| 2^-1000. */
double adm_o_gelu_tanh(double x, double *err)
{
    const double A = 0.044715, C = 0.79788456080286535588;
    double t, z, w, e, y;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    t = x * x;
    t = t * x;
    t = A * t;
    z = C * (x + t);
    w = -2.0 * z;
    e = exp(w);
    y = x / (1.0 + e);
    if (e == 0 || isinf(e)) {
        /* exp saturated: |w| > 708, whatever the error of w^; y^ is x or 0
         * and |y^ - y| <= |x| e^-708 <= |x| 2^-1000, plus one rounding */
        *err = adm_up(ADM_U * fabs(y) + fabs(x) * 0x1p-1000 + ADM_TINY);
        return y;
    }
    *err = adm_up((7.01 * fabs(w) + ADM_LIBM_EXP_U + 3.0) * ADM_U * fabs(y) + ADM_TINY);
    return y;
}

/* gelu_erf(x) = 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(t), t = -x / sqrt 2
 * (erfc: no cancellation for negative x).
 *   t^ = t (1 + theta), |theta| <= gamma_2 (the constant, the product).
 *   erfc(t^) = erfc(t) (1 + |t| gamma_2 L(t)), L(t) bounding |d ln erfc/dt|:
 *      t > 0: 2 e^-t^2 / (sqrt(pi) erfc t) < t + sqrt(t^2 + 2) <= 2t + 1.5
 *      (erfc t > 2 e^-t^2 / (sqrt(pi) (t + sqrt(t^2+2)))), t <= 0: 2/sqrt(pi) < 1.13;
 *      plus the library's ADM_LIBM_ERFC_U u.
 *   * 0.5 exact, * x one rounding.
 * => |y^ - y| <= ((2.01 |t| L(t) + ADM_LIBM_ERFC_U + 2) u) |y^| + ADM_TINY,
 * and where erfc underflows (t > 26.5) |y| <= |x| 2^-1000 more. */
double adm_o_gelu_erf(double x, double *err)
{
    const double R = 0.70710678118654752440;
    double t, e, y, L;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    t = -x * R;
    e = erfc(t);
    y = 0.5 * x * e;
    L = t > 0 ? 2.0 * t + 1.5 : 1.13;
    *err = adm_up((2.01 * fabs(t) * L + ADM_LIBM_ERFC_U + 2.0) * ADM_U * fabs(y) + ADM_TINY +
                  (t > 26.5 ? fabs(x) * 0x1p-1000 : 0.0));
    return y;
}

/* silu(x) = x / (1 + exp(-x)): exp's argument is exact (a negation), so
 * |y^ - y| <= ((ADM_LIBM_EXP_U + 3) u) |y^| + ADM_TINY, plus |x| 2^-1000
 * where exp overflows (x < -709, y^ = 0, |y| <= |x| e^x). */
double adm_o_silu(double x, double *err)
{
    double e, y;
    if (isnan(x)) { *err = 0; return x; }
    if (isinf(x)) { *err = 0; return x > 0 ? x : -0.0; }
    e = exp(-x);
    y = x / (1.0 + e);
    *err = adm_up((ADM_LIBM_EXP_U + 3.0) * ADM_U * fabs(y) + ADM_TINY + (isinf(e) ? fabs(x) * 0x1p-1000 : 0.0));
    return y;
}

/* MPFR: the same functions at the precision of y (the intermediate
 * working precision is y's plus 32 bits; every step is correctly rounded,
 * and none cancels, so the result is within a few units of 2^-prec). */
void adm_o_gelu_tanh_mpfr(mpfr_t y, const mpfr_t x)
{
    mpfr_prec_t p = mpfr_get_prec(y) + 32;
    mpfr_t t, c, a;
    if (mpfr_inf_p(x) && mpfr_sgn(x) < 0) { mpfr_set_zero(y, -1); return; }
    mpfr_inits2(p, t, c, a, (mpfr_ptr)0);
    mpfr_set_str(a, "0.044715", 10, MPFR_RNDN);
    mpfr_const_pi(c, MPFR_RNDN);
    mpfr_ui_div(c, 2, c, MPFR_RNDN);
    mpfr_sqrt(c, c, MPFR_RNDN);               /* sqrt(2/pi) */
    mpfr_pow_ui(t, x, 3, MPFR_RNDN);
    mpfr_mul(t, t, a, MPFR_RNDN);
    mpfr_add(t, t, x, MPFR_RNDN);
    mpfr_mul(t, t, c, MPFR_RNDN);             /* z */
    mpfr_mul_si(t, t, -2, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_div(y, x, t, MPFR_RNDN);
    mpfr_clears(t, c, a, (mpfr_ptr)0);
}

void adm_o_gelu_erf_mpfr(mpfr_t y, const mpfr_t x)
{
    mpfr_prec_t p = mpfr_get_prec(y) + 32;
    mpfr_t t;
    if (mpfr_inf_p(x) && mpfr_sgn(x) < 0) { mpfr_set_zero(y, -1); return; }
    mpfr_init2(t, p);
    mpfr_sqrt_ui(t, 2, MPFR_RNDN);
    mpfr_div(t, x, t, MPFR_RNDN);
    mpfr_neg(t, t, MPFR_RNDN);
    mpfr_erfc(t, t, MPFR_RNDN);
    mpfr_mul(t, t, x, MPFR_RNDN);
    mpfr_div_2ui(y, t, 1, MPFR_RNDN);
    mpfr_clear(t);
}

void adm_o_silu_mpfr(mpfr_t y, const mpfr_t x)
{
    mpfr_prec_t p = mpfr_get_prec(y) + 32;
    mpfr_t t;
    if (mpfr_inf_p(x) && mpfr_sgn(x) < 0) { mpfr_set_zero(y, -1); return; }
    mpfr_init2(t, p);
    mpfr_neg(t, x, MPFR_RNDN);
    mpfr_exp(t, t, MPFR_RNDN);
    mpfr_add_ui(t, t, 1, MPFR_RNDN);
    mpfr_div(y, x, t, MPFR_RNDN);
    mpfr_clear(t);
}

static adm_status dense(const adm_tensor *t, int64_t n, double **out)
{
    *out = malloc(sizeof **out * (size_t)(n ? n : 1));
    if (!*out) return ADM_FAIL(ADM_ERR_NOMEM, "oracle: cannot allocate %lld doubles", (long long)n);
    adm_tensor_to_f64(t, *out);
    return ADM_OK;
}

adm_status adm_o_eval_elementwise(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    int64_t n = c->numel;
    double *x = NULL, *y = NULL;
    adm_tensor gview;
    adm_status st;
    if ((st = dense(c->in[0], n, &x)) != ADM_OK) return st;
    if (id == OP_SWIGLU && (st = dense(c->in[1], n, &y)) != ADM_OK) goto done;
    if (id == OP_GATED_RESIDUAL) {
        if ((st = dense(c->in[2], n, &y)) != ADM_OK) goto done;
        if ((st = adm_tensor_broadcast(c->in[1], c->ndim, c->shape, &gview)) != ADM_OK) goto done;
    }
#pragma omp parallel for num_threads(c->threads) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        double v = 0, e = 0, s, g, prod;
        switch (id) {
        case OP_RELU: v = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0); e = 0; break;
        case OP_SCALE:
            /* one rounding of a product */
            v = x[i] * c->p->factor;
            e = adm_up(ADM_U * fabs(v) + ADM_TINY);
            break;
        case OP_GELU: v = c->p->gelu_tanh ? adm_o_gelu_tanh(x[i], &e) : adm_o_gelu_erf(x[i], &e); break;
        case OP_SILU: v = adm_o_silu(x[i], &e); break;
        case OP_SWIGLU:
            /* silu(gate) with its bound, times up: |up| err_s + one rounding */
            s = adm_o_silu(x[i], &e);
            v = s * y[i];
            e = adm_up(fabs(y[i]) * e + ADM_U * fabs(v) + ADM_TINY);
            break;
        case OP_GATED_RESIDUAL:
            /* x + g y: the product is one rounding at most (exact for
             * fp32-or-narrower g, y), the sum one more */
            g = adm_tensor_get(&gview, i);
            prod = g * y[i];
            v = x[i] + prod;
            e = adm_up(ADM_U * fabs(prod) + ADM_U * fabs(v) + ADM_TINY);
            break;
        default: break;
        }
        val[i] = v;
        bnd[i] = e;
    }
    st = ADM_OK;
done:
    free(x);
    free(y);
    return st;
}
