/* Elementwise ops: relu, scale, gelu (tanh and erf), silu, swiglu,
 * gated_residual; the scalar functions with their error bounds.
 *
 * Condition scale (adm_oracle_result.cond): |value| where the output is
 * one function of exact inputs (nothing cancels that a path could round
 * before); |x| + |g y| for the gated residual, whose sum cancels. */
#include "oracle_internal.h"
#include "adm_fpenv.h"
#include "scalar_fns.h"

#include <stdlib.h>

/* The fp64 scalar functions and their bounds live in scalar_fns.h, shared
 * with the CUDA oracle. */
double adm_o_gelu_tanh(double x, double *err) { return adm_fn_gelu_tanh(x, err); }
double adm_o_gelu_erf(double x, double *err) { return adm_fn_gelu_erf(x, err); }
double adm_o_silu(double x, double *err) { return adm_fn_silu(x, err); }

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
    /* the gated residual's product g y is exact when both have at most 26
     * significant bits (53 >= 2 x 26, and no fp32-or-narrower product
     * underflows fp64) */
    int prod_exact = id == OP_GATED_RESIDUAL && adm_format_get(c->in[1]->dtype)->man_bits <= 25 &&
                     adm_format_get(c->in[2]->dtype)->man_bits <= 25;
    if ((st = dense(c->in[0], n, &x)) != ADM_OK) return st;
    if (id == OP_SWIGLU && (st = dense(c->in[1], n, &y)) != ADM_OK) goto done;
    if (id == OP_GATED_RESIDUAL) {
        if ((st = dense(c->in[2], n, &y)) != ADM_OK) goto done;
        if ((st = adm_tensor_broadcast(c->in[1], c->ndim, c->shape, &gview)) != ADM_OK) goto done;
    }
#pragma omp parallel num_threads(c->threads)
    {
        adm_fpenv fe;
        adm_fpenv_enter(&fe);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            double v = 0, e = 0, s, g, prod = 0;
            switch (id) {
            case OP_RELU: v = x[i] > 0 ? x[i] : (isnan(x[i]) ? x[i] : 0.0); e = 0; break;
            case OP_SCALE:
                /* one rounding of a product */
                v = x[i] * c->p->factor;
                e = adm_rn_err(v);
                break;
            case OP_GELU: v = c->p->gelu_tanh ? adm_o_gelu_tanh(x[i], &e) : adm_o_gelu_erf(x[i], &e); break;
            case OP_SILU: v = adm_o_silu(x[i], &e); break;
            case OP_SWIGLU:
                /* silu(gate) with its bound, times up: |up| err_s + one rounding */
                s = adm_o_silu(x[i], &e);
                v = s * y[i];
                e = adm_add_up(adm_mul_up(fabs(y[i]), e), adm_rn_err(v));
                break;
            case OP_GATED_RESIDUAL:
                /* x + g y: the product is one rounding (none when exact), the
                 * sum one more (exact below the normal range) */
                g = adm_tensor_get(&gview, i);
                prod = g * y[i];
                v = x[i] + prod;
                e = adm_mul_up(ADM_U, fabs(v));
                if (!prod_exact) e = adm_add_up(e, adm_rn_err(prod));
                break;
            default: break;
            }
            val[i] = v;
            bnd[i] = e;
            if (c->cond) c->cond[i] = id == OP_GATED_RESIDUAL ? fabs(x[i]) + fabs(prod) : fabs(v);
        }
        adm_fpenv_leave(&fe);
    }
    st = ADM_OK;
done:
    free(x);
    free(y);
    return st;
}
