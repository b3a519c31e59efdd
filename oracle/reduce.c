/* Reductions along an axis: row_sum, mean_sq, softmax (max-subtracted). */
#include "oracle_internal.h"

#include <stdlib.h>

adm_axis_geom adm_o_axis_geom(const adm_tensor *x, int axis)
{
    adm_axis_geom g = {1, x->shape[axis], 1};
    for (int d = 0; d < axis; d++) g.outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) g.inner *= x->shape[d];
    return g;
}

int adm_o_norm_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

/* row_sum: |s^ - s| <= gamma_(n-1) sum |x| in any order; the sum of |x| is
 * computed alongside (positive terms: below the exact by at most a factor
 * 1 + gamma_n) and inflated.
 * mean_sq: squares of fp32-or-narrower values are exact, else one
 * rounding; n - 1 additions of positive terms and the division:
 * relative gamma_(n+1).
 * softmax: d_j = x_j - m rounds once (|d| u), exp adds ADM_LIBM_EXP_U u:
 * e^_j = e_j (1 + eta_j), eta_j <= (1.01 |d_j| + ADM_LIBM_EXP_U + 1) u;
 * the sum of positive terms keeps max eta and adds gamma_(n-1); the
 * division one u. Terms with d_j < -745 are exactly 0 in fp64 and below
 * 2^-1074 exactly: an absolute n 2^-1074 against a sum >= 1 (the max term
 * is exp(0)). => |y^_i - y_i| <= (eta_i + max eta + gamma_n + 2u) y^_i
 * + (n + 1) ADM_TINY.
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
    double gn = adm_gamma((double)(n + 1));
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
    adm_tensor_to_f64(x, xd);
#pragma omp parallel for num_threads(c->threads) schedule(static) collapse(2)
    for (int64_t o = 0; o < g.outer; o++) {
        for (int64_t in = 0; in < g.inner; in++) {
            const double *p = xd + o * n * g.inner + in;
            if (id == OP_ROW_SUM || id == OP_MEAN_SQ) {
                double s = 0, a = 0;
                for (int64_t j = 0; j < n; j++) {
                    double v = p[j * g.inner];
                    if (id == OP_ROW_SUM) { s += v; a += fabs(v); }
                    else s += v * v;
                }
                if (id == OP_MEAN_SQ) {
                    s = n ? s / (double)n : NAN;
                    a = fabs(s);
                }
                val[o * g.inner + in] = s;
                if (c->cond) c->cond[o * g.inner + in] = a;
                bnd[o * g.inner + in] = adm_up(gn * a * (1.0 + 2.0 * gn) + ADM_TINY);
            } else {
                double m = -INFINITY, sum = 0, etamax = 0;
                for (int64_t j = 0; j < n; j++) m = fmax(m, p[j * g.inner]);
                for (int64_t j = 0; j < n; j++) {
                    double d = p[j * g.inner] - m;
                    if (d >= -745.0) etamax = fmax(etamax, (1.01 * fabs(d) + ADM_LIBM_EXP_U + 1.0) * ADM_U);
                    sum += ADM_EXP(d);
                }
                for (int64_t j = 0; j < n; j++) {
                    int64_t idx = o * n * g.inner + j * g.inner + in;
                    double d = p[j * g.inner] - m, y = ADM_EXP(d) / sum;
                    double eta = d >= -745.0 ? (1.01 * fabs(d) + ADM_LIBM_EXP_U + 1.0) * ADM_U : 0.0;
                    val[idx] = y;
                    if (c->cond) c->cond[idx] = fabs(y);
                    bnd[idx] = adm_up((eta + etamax + gn + 2.0 * ADM_U) * fabs(y) + (double)(n + 1) * ADM_TINY);
                }
            }
        }
    }
    free(xd);
    return ADM_OK;
}
