/* Reductions along an axis: row_sum, mean_sq, softmax (max-subtracted). */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "line_fns.h"

#include <stdlib.h>

adm_axis_geom adm_o_axis_geom(const adm_tensor *x, int axis)
{
    adm_axis_geom g = {1, x->shape[axis], 1};
    for (int d = 0; d < axis; d++) g.outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) g.inner *= x->shape[d];
    return g;
}

int adm_o_norm_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

/* softmax over n doubles with its bound (adm_o_softmax, oracle/line_fns.h;
 * every step rounded upward):
 *   m = max x; d_j = RN(x_j - m) with its exact error r_j (two-difference);
 *   e_j = exp(d_j) by libm: |e_j - exp(x_j - m)| <= delta_j = libm_err(e_j)
 *      + exp(d_j) (e^|r_j| - 1) (zero where the difference was exact).
 *   S^ = fp64 sum of e_j (n - 1 additions of positive terms):
 *      |S^ - sum exp(x_j - m)| <= DS = gamma_(n-1) S^ / (1 - gamma_(n-1))
 *      + sum_j delta_j.
 *   y_i = RN(e_i / S^) against E_i / S with |e_i - E_i| <= delta_i and
 *      |S^ - S| <= DS: |y_i - E_i/S| <= u|y_i| + 2^-1075 + delta_i / S^
 *      + (e_i + delta_i) DS / (S^ (S^ - DS)).
 * S^ >= exp(0) within the libm assumption, so nothing divides by ~0.
 *
 * row_sum: |s^ - s| <= gamma_(n-1) sum |x| in any order, the sum of |x|
 * accumulated upward alongside (>= the exact one).
 * mean_sq: squares of values with at most 26 significant bits are exact,
 * else one rounding each (and below 2^-511 an absolute 2^-1075); n - 1
 * additions of positive terms and the division: |s^ - s| <= gamma_k s /
 * (1 - gamma_k) <= gamma_k s^ / (1 - gamma_k)^2, k = n (exact squares) or
 * n + 1, plus n 2^-1074 when squares may underflow.
 * Each line: adm_o_reduce_line (oracle/line_fns.h), on the CPU or the GPU.
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
    double gms = adm_gamma_up((double)(sq_exact ? n : n + 1));
    adm_o_reduce_job j;
    adm_status st = ADM_OK;
    if (!xd) return ADM_FAIL(ADM_ERR_NOMEM, "oracle %s: out of memory", adm_op_name(c->op));
    j.kind = id == OP_ROW_SUM ? ADM_O_ROW_SUM : (id == OP_MEAN_SQ ? ADM_O_MEAN_SQ : ADM_O_SOFTMAX);
    j.outer = g.outer;
    j.n = n;
    j.inner = g.inner;
    j.gsum = adm_gamma_up((double)(n - 1));
    j.ms_rel = adm_div_up(gms, adm_mul_up(adm_sub_dn(1.0, gms), adm_sub_dn(1.0, gms)));
    j.ms_abs = sq_exact ? 0.0 : adm_mul_up((double)n, ADM_TINY);
    adm_tensor_to_f64(x, xd);
    if (c->use_gpu) {
        st = adm_o_cuda_reduce(&j, total, xd, val, bnd, c->cond);
        free(xd);
        return st;
    }
#pragma omp parallel num_threads(c->threads)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static) collapse(2)
        for (int64_t o = 0; o < g.outer; o++)
            for (int64_t in = 0; in < g.inner; in++) adm_o_reduce_line(&j, xd, o, in, val, bnd, c->cond);
        adm_fpenv_leave(&fe);
    }
    free(xd);
    return ADM_OK;
}
