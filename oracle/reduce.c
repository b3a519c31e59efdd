/* Reductions along an axis: row_sum, mean_sq, softmax (max-subtracted). */
#include "oracle_internal.h"
#include "adm_fpenv.h"

#include <stdlib.h>

adm_axis_geom adm_o_axis_geom(const adm_tensor *x, int axis)
{
    adm_axis_geom g = {1, x->shape[axis], 1};
    for (int d = 0; d < axis; d++) g.outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) g.inner *= x->shape[d];
    return g;
}

int adm_o_norm_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

/* softmax over n doubles with its bound (every step rounded upward):
 *   m = max x; d_j = RN(x_j - m) with its exact error r_j (two-difference);
 *   e_j = exp(d_j) by libm: |e_j - exp(x_j - m)| <= delta_j = libm_err(e_j)
 *      + exp(d_j) (e^|r_j| - 1) (zero where the difference was exact).
 *   S^ = fp64 sum of e_j (n - 1 additions of positive terms):
 *      |S^ - sum exp(x_j - m)| <= DS = gamma_(n-1) S^ / (1 - gamma_(n-1))
 *      + sum_j delta_j.
 *   y_i = RN(e_i / S^) against E_i / S with |e_i - E_i| <= delta_i and
 *      |S^ - S| <= DS: |y_i - E_i/S| <= u|y_i| + 2^-1075 + delta_i / S^
 *      + (e_i + delta_i) DS / (S^ (S^ - DS)).
 * S^ >= exp(0) within the libm assumption, so nothing divides by ~0. */
static double two_diff(double a, double b, double *err)
{
    double s = a - b, bb = s - a;
    *err = (a - (s - bb)) + (-b - bb);
    return s;
}

static double softmax_term(double x, double m, double *e, double *delta)
{
    double r, d = two_diff(x, m, &r), fu;
    *e = ADM_EXP(d);
    *delta = adm_libm_err(*e, ADM_LIBM_EXP_ULP, &fu);
    if (r != 0) *delta = adm_add_up(*delta, adm_mul_up(fu, adm_expm1_up(fabs(r))));
    return d;
}

void adm_o_softmax(const double *x, int64_t n, int64_t stride, double *y, double *bnd)
{
    double m = -INFINITY, S = 0, D = 0, DS, g = adm_gamma_up((double)(n - 1)), e, de;
    for (int64_t j = 0; j < n; j++) m = fmax(m, x[j * stride]);
    for (int64_t j = 0; j < n; j++) {
        softmax_term(x[j * stride], m, &e, &de);
        S += e;
        D = adm_add_up(D, de);
    }
    DS = adm_add_up(adm_div_up(adm_mul_up(g, S), adm_sub_dn(1.0, g)), D);
    for (int64_t j = 0; j < n; j++) {
        double v;
        softmax_term(x[j * stride], m, &e, &de);
        v = e / S;
        y[j * stride] = v;
        bnd[j * stride] = adm_add_up(adm_add_up(adm_rn_err(v), adm_div_up(de, S)),
                                     adm_div_up(adm_mul_up(adm_add_up(e, de), DS), adm_mul_up(S, adm_sub_dn(S, DS))));
    }
}

/* row_sum: |s^ - s| <= gamma_(n-1) sum |x| in any order, the sum of |x|
 * accumulated upward alongside (>= the exact one).
 * mean_sq: squares of values with at most 26 significant bits are exact,
 * else one rounding each (and below 2^-511 an absolute 2^-1075); n - 1
 * additions of positive terms and the division: |s^ - s| <= gamma_k s /
 * (1 - gamma_k) <= gamma_k s^ / (1 - gamma_k)^2, k = n (exact squares) or
 * n + 1, plus n 2^-1074 when squares may underflow.
 * softmax: adm_o_softmax above.
 * Condition scale: sum |x| for row_sum (the sum cancels), the value for
 * mean_sq and softmax (positive terms, nothing cancels). */
adm_status adm_o_eval_reduce(const adm_o_ctx *c, double *val, double *bnd)
{
    adm_op_id id = adm_op_id_of(c->op);
    const adm_tensor *x = c->in[0];
    int axis = adm_o_norm_axis(c->p->axis, x->ndim);
    adm_axis_geom g = adm_o_axis_geom(x, axis);
    int64_t n = g.n, total = adm_tensor_numel(x);
    double *xd = malloc(sizeof *xd * (size_t)(total ? total : 1));
    int sq_exact = adm_format_get(x->dtype)->man_bits <= 25;
    double gsum = adm_gamma_up((double)(n - 1)), gms = adm_gamma_up((double)(sq_exact ? n : n + 1));
    double ms_rel = adm_div_up(gms, adm_mul_up(adm_sub_dn(1.0, gms), adm_sub_dn(1.0, gms)));
    double ms_abs = sq_exact ? 0.0 : adm_mul_up((double)n, ADM_TINY);
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
    adm_tensor_to_f64(x, xd);
#pragma omp parallel num_threads(c->threads)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static) collapse(2)
        for (int64_t o = 0; o < g.outer; o++) {
            for (int64_t in = 0; in < g.inner; in++) {
                const double *p = xd + o * n * g.inner + in;
                if (id == OP_ROW_SUM || id == OP_MEAN_SQ) {
                    double s = 0, a = 0, ac = 0, b;
                    for (int64_t j = 0; j < n; j++) {
                        double v = p[j * g.inner];
                        if (id == OP_ROW_SUM) {
                            s += v;
                            a = adm_add_up(a, fabs(v));
                            ac += fabs(v);
                        } else {
                            s += v * v;
                        }
                    }
                    if (id == OP_MEAN_SQ) {
                        s = n ? s / (double)n : NAN;
                        a = ac = fabs(s);
                        b = adm_add_up(adm_mul_up(ms_rel, a), ms_abs);
                    } else {
                        b = adm_mul_up(gsum, a);
                    }
                    val[o * g.inner + in] = s;
                    if (c->cond) c->cond[o * g.inner + in] = ac;
                    bnd[o * g.inner + in] = b;
                } else {
                    int64_t base = o * n * g.inner + in;
                    adm_o_softmax(p, n, g.inner, val + base, bnd + base);
                    if (c->cond)
                        for (int64_t j = 0; j < n; j++) c->cond[base + j * g.inner] = fabs(val[base + j * g.inner]);
                }
            }
        }
        adm_fpenv_leave(&fe);
    }
    free(xd);
    return ADM_OK;
}
