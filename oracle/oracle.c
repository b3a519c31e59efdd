/* The oracle: dispatch, the sharpness refinement, results. */
#include "oracle_internal.h"
#include "adm_env.h"
#include "adm_fpenv.h"

#include <omp.h>
#include <stdlib.h>
#include <unistd.h>

struct adm_oracle {
    adm_oracle_config cfg;
};

#ifdef ADM_ORACLE_TEST_HOOKS
adm_o_mutation adm_o_mutant;
int adm_o_libm_worst;

/* The farthest double from the exact f(x) that the libm assumption allows
 * on the side asked: N ulps of f's binade (2^-1074 below the normal
 * range), rounded back toward f. */
double adm_o_test_libm(int fn, double x, double r)
{
    mpfr_t f, t;
    int n = fn == 0 ? ADM_LIBM_EXP_ULP : ADM_LIBM_ERFC_ULP;
    mpfr_exp_t e;
    if (!adm_o_libm_worst || !isfinite(x)) return r;
    mpfr_inits2(256, f, t, (mpfr_ptr)0);
    mpfr_set_d(t, x, MPFR_RNDN);
    if (fn == 0) mpfr_exp(f, t, MPFR_RNDN);
    else mpfr_erfc(f, t, MPFR_RNDN);
    /* an exact value beyond the doubles (exp's overflow) must give inf: no room to err */
    if (!mpfr_zero_p(f) && mpfr_number_p(f) && mpfr_get_exp(f) <= 1024) {
        e = mpfr_get_exp(f) - 53; /* f in [2^(E-1), 2^E): ulp 2^(E-53) */
        if (e < -1074) e = -1074;
        mpfr_set_si_2exp(t, adm_o_libm_worst * n, e, MPFR_RNDN);
        mpfr_add(t, f, t, MPFR_RNDN);
        r = mpfr_get_d(t, adm_o_libm_worst > 0 ? MPFR_RNDD : MPFR_RNDU);
    }
    mpfr_clears(f, t, (mpfr_ptr)0);
    return r;
}

static void mutate(const adm_o_ctx *c, double *val, double *bnd, int64_t only, int refined)
{
    const adm_o_mutation *m = &adm_o_mutant;
    if (m->op != (int)adm_op_id_of(c->op) + 1 || m->refined != refined) return;
    for (int64_t i = only < 0 ? 0 : only; i < (only < 0 ? c->numel : only + 1); i++) {
        bnd[i] *= m->bound_factor;
        for (int k = 0; k < m->value_ulps; k++) val[i] = nextafter(val[i], INFINITY);
    }
}
#endif

/* What an op's fp64 bounds assume of the math library (oracle/scalar_fns.h,
 * where the assumption is stated); NULL: nothing, the bounds are proven. */
#define ADM_STR_(x) #x
#define ADM_STR(x) ADM_STR_(x)
static const char *libm_assumption(adm_op_id id, const adm_op_params *p, int on_gpu)
{
    int exp_ = 0, erfc_ = 0;
    switch (id) {
    case OP_GELU: case OP_LINEAR_GELU:
        if (p->gelu_tanh) exp_ = 1;
        else erfc_ = 1;
        break;
    case OP_SILU: case OP_SWIGLU: case OP_SOFTMAX: case OP_ATTENTION: exp_ = 1; break;
    case OP_RMSNORM: case OP_GROUPNORM: exp_ = p->silu; break;
    default: break;
    }
    if (erfc_)
        return on_gpu ? "assuming CUDA's erfc within " ADM_STR(ADM_LIBM_ERFC_ULP) " ulp"
                      : "assuming libm's erfc within " ADM_STR(ADM_LIBM_ERFC_ULP) " ulp";
    if (exp_)
        return on_gpu ? "assuming CUDA's exp within " ADM_STR(ADM_LIBM_EXP_ULP) " ulp"
                      : "assuming libm's exp within " ADM_STR(ADM_LIBM_EXP_ULP) " ulp";
    return NULL;
}

void adm_oracle_config_default(adm_oracle_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->sharpness = 1e-3;
    cfg->mpfr_bits = 256;
    /* an invalid ADM_MPFR_BUDGET makes an invalid configuration, which
     * adm_oracle_create refuses naming the variable */
    if (adm_env_i64("ADM_MPFR_BUDGET", ADM_MPFR_BUDGET_DEFAULT, &cfg->mpfr_budget) != ADM_OK) cfg->mpfr_budget = -1;
}

adm_status adm_oracle_create(const adm_oracle_config *cfg, adm_oracle **out)
{
    adm_oracle *o;
    adm_oracle_config d;
    if (!cfg) { adm_oracle_config_default(&d); cfg = &d; }
    if (cfg->mpfr_budget < 0) ADM_TRY(adm_env_check());
    if (!(cfg->resolve_scale >= 0) || !(cfg->sharpness > 0) || cfg->mpfr_bits < 64 || cfg->mpfr_bits > 65536 ||
        cfg->threads < 0 || cfg->mpfr_budget < 0)
        return ADM_FAIL(ADM_ERR_INVALID, "oracle: bad configuration (resolve_scale %g, sharpness %g, mpfr_bits %d, "
                        "threads %d)", cfg->resolve_scale, cfg->sharpness, cfg->mpfr_bits, cfg->threads);
    o = calloc(1, sizeof *o);
    if (!o) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    o->cfg = *cfg;
    /* OpenMP's default for the calling thread: OMP_NUM_THREADS, else the
     * cores this process may run on; a process that shares a machine (an
     * MPI rank) takes its share with omp_set_num_threads */
    if (o->cfg.threads == 0) o->cfg.threads = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    *out = o;
    return ADM_OK;
}

void adm_oracle_free(adm_oracle *o) { free(o); }

void adm_oracle_result_free(adm_oracle_result *r)
{
    if (!r) return;
    if (r->value.data) adm_o_cuda_forget(r->value.data);
    adm_tensor_free(&r->value);
    adm_tensor_free(&r->bound);
    adm_tensor_free(&r->cond);
    memset(r, 0, sizeof *r);
}

int adm_oracle_result_on_device(const adm_oracle_result *r)
{
    return r && r->value.data && adm_tensor_numel(&r->value) > 0 && adm_o_cuda_stale(r->value.data);
}

adm_status adm_oracle_result_fetch(adm_oracle_result *r)
{
    if (!adm_oracle_result_on_device(r)) return ADM_OK;
    return adm_o_cuda_fetch(r->value.data);
}

void adm_o_rows(const adm_tensor *t, int64_t K, int64_t r0, int64_t r1, double *out)
{
    if (adm_tensor_is_contiguous(t)) {
        int64_t n = (r1 - r0) * K, base = t->offset + r0 * K;
        switch (t->dtype) {
        case ADM_BF16: {
            const uint16_t *p = (const uint16_t *)t->data + base;
            for (int64_t i = 0; i < n; i++) out[i] = adm_bf16_to_f32(p[i]);
            return;
        }
        case ADM_FP16: {
            const uint16_t *p = (const uint16_t *)t->data + base;
            for (int64_t i = 0; i < n; i++) out[i] = adm_fp16_to_f32(p[i]);
            return;
        }
        case ADM_FP32: {
            const float *p = (const float *)t->data + base;
            for (int64_t i = 0; i < n; i++) out[i] = p[i];
            return;
        }
        default: break;
        }
    }
    for (int64_t r = r0; r < r1; r++)
        for (int64_t k = 0; k < K; k++) out[(r - r0) * K + k] = adm_tensor_get(t, r * K + k);
}

adm_status adm_o_need_narrow(const adm_tensor *t, const char *op, const char *name)
{
    if (adm_format_get(t->dtype)->man_bits <= 23) return ADM_OK;
    return ADM_FAIL(ADM_ERR_DTYPE, "oracle %s: input '%s' is %s; operands of products must be fp32 or narrower "
                    "(24 significant bits), so that every product is exact in fp64", op, name,
                    adm_dtype_name(t->dtype));
}

static adm_status eval_dispatch(const adm_o_ctx *c, double *val, double *bnd)
{
    switch (adm_op_id_of(c->op)) {
    case OP_RELU: case OP_SCALE: case OP_GELU: case OP_SILU: case OP_SWIGLU: case OP_GATED_RESIDUAL:
        if (c->use_gpu) return adm_o_cuda_elementwise(c, val, bnd);
        return adm_o_eval_elementwise(c, val, bnd);
    case OP_MATMUL: case OP_LINEAR: case OP_LINEAR_GELU:
        if (c->use_gpu) return adm_o_cuda_gemm(c, val, bnd);
        return adm_o_eval_gemm(c, val, bnd);
    case OP_ROW_SUM: case OP_MEAN_SQ: case OP_SOFTMAX: return adm_o_eval_reduce(c, val, bnd);
    case OP_RMSNORM: case OP_LAYERNORM: case OP_GROUPNORM: return adm_o_eval_norm(c, val, bnd);
    case OP_ATTENTION: case OP_LINEAR_ATTENTION: return adm_o_eval_attention(c, val, bnd);
    case OP_QUANTIZE: return adm_o_eval_quantize(c, val, bnd);
    }
    return ADM_FAIL(ADM_ERR_INTERNAL, "oracle: no evaluator for op '%s'", adm_op_name(c->op));
}

/* The op's output shape from the inputs, as the validator computes it. */
static adm_status out_shape(const adm_op *op, const adm_op_params *p, const adm_tensor *const *in, int *ndim,
                            int64_t *shape)
{
    adm_op_shapes s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < adm_op_input_count(op); i++) {
        if (!in[i]) continue;
        s.present[i] = 1;
        s.ndim[i] = in[i]->ndim;
        memcpy(s.shape[i], in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim);
    }
    return adm_op_output_shape(op, p, &s, ndim, shape);
}

/* An enclosure [lo, hi] of the exact value as a double and a bound:
 * the value is the nearest double to the midpoint, the bound the larger
 * distance to an end, rounded up. NaN ends: NaN, bound 0 (the exact value
 * is undefined, as in fp64); an unbounded end: the bound is infinite. */
static void enclosure_to_double(const adm_o_iv *y, double *value, double *bound)
{
    mpfr_prec_t p = mpfr_get_prec(y->lo);
    mpfr_t m, d;
    double v, b;
    if (mpfr_nan_p(y->lo) || mpfr_nan_p(y->hi)) {
        *value = NAN;
        *bound = 0;
        return;
    }
    if (mpfr_equal_p(y->lo, y->hi)) {
        /* a point (exact, or infinite on both ends) */
        mpfr_init2(d, p + 64);
        v = mpfr_get_d(y->lo, MPFR_RNDN);
        b = 0;
        if (isfinite(v)) {
            mpfr_sub_d(d, y->lo, v, MPFR_RNDA);
            b = fabs(mpfr_get_d(d, MPFR_RNDA));
        } else if (!mpfr_inf_p(y->lo)) {
            b = INFINITY; /* a finite value beyond the doubles */
        }
        mpfr_clear(d);
        *value = v;
        *bound = b;
        return;
    }
    mpfr_inits2(p + 2, m, d, (mpfr_ptr)0);
    mpfr_add(m, y->lo, y->hi, MPFR_RNDN);
    mpfr_div_2ui(m, m, 1, MPFR_RNDN);
    v = mpfr_get_d(m, MPFR_RNDN);
    if (mpfr_inf_p(y->lo) || mpfr_inf_p(y->hi) || isinf(v)) {
        b = INFINITY;
        if (mpfr_inf_p(y->lo) && mpfr_inf_p(y->hi)) v = NAN;
    } else {
        /* hi - v and v - lo, each rounded up (MPFR's exponent range holds them) */
        mpfr_sub_d(d, y->hi, v, MPFR_RNDU);
        b = mpfr_get_d(d, MPFR_RNDU);
        mpfr_d_sub(d, v, y->lo, MPFR_RNDU);
        b = fmax(b, mpfr_get_d(d, MPFR_RNDU));
    }
    mpfr_clears(m, d, (mpfr_ptr)0);
    *value = v;
    *bound = b;
}

/* One element exactly where its value is a sum of exact products (GMP:
 * the nearest double and its exact distance), else with the MPFR
 * evaluator's enclosure at `bits`. */
static adm_status refine_mpfr(const adm_o_ctx *c, int64_t i, int bits, double *value, double *bound)
{
    adm_o_exact s;
    adm_o_iv y;
    adm_status st;
    adm_o_exact_init(&s);
    if (adm_o_exact_element(c, i, &s)) {
        *value = adm_o_exact_get_d(&s, bound);
        adm_o_exact_clear(&s);
        return ADM_OK;
    }
    adm_o_exact_clear(&s);
    adm_o_iv_init(&y, bits);
    st = adm_o_mpfr_element(c, i, &y);
    if (st == ADM_OK) enclosure_to_double(&y, value, bound);
    adm_o_iv_clear(&y);
    return st;
}

/* The input terms one output element reads (its MPFR cost): an upper
 * estimate from the shapes. */
static int64_t mpfr_terms(const adm_o_ctx *c)
{
    const adm_tensor *x = c->in[0];
    int64_t last = x && x->ndim ? x->shape[x->ndim - 1] : 1, t = 1;
    switch (adm_op_id_of(c->op)) {
    case OP_MATMUL: case OP_LINEAR: case OP_LINEAR_GELU: case OP_RMSNORM: case OP_LAYERNORM: case OP_QUANTIZE:
        t = last;
        break;
    case OP_ROW_SUM: case OP_MEAN_SQ: case OP_SOFTMAX:
        t = x->shape[adm_o_norm_axis(c->p->axis, x->ndim)];
        break;
    case OP_GROUPNORM:
        t = adm_tensor_numel(x) / (x->shape[0] > 0 ? x->shape[0] : 1) / (c->p->groups > 0 ? c->p->groups : 1);
        break;
    case OP_ATTENTION: case OP_LINEAR_ATTENTION:
        t = adm_tensor_numel(c->in[1]) + adm_tensor_numel(c->in[2]);
        break;
    default:
        t = 1;
        break;
    }
    return t > 0 ? t : 1;
}

static adm_status over_budget(const adm_oracle *o, const adm_o_ctx *c, int64_t blunt, int64_t terms, double scale,
                              double thr)
{
    return ADM_FAIL(ADM_ERR_RANGE, "oracle %s: MPFR budget hit: %lld of %lld elements are not resolved by fp64 to "
                    "%.3g (%.2g x the reference path's error scale %.3g), about %lld terms each, beyond the "
                    "budget of %lld terms (--mpfr-budget, ADM_MPFR_BUDGET; 0: no limit); a verdict on an oracle "
                    "that is not sharp could be wrong either way, so none is given", adm_op_name(c->op),
                    (long long)blunt, (long long)c->numel, thr, o->cfg.sharpness, scale, (long long)terms,
                    (long long)o->cfg.mpfr_budget);
}

/* Recomputes the elements whose bound exceeds sharpness * scale: GEMMs
 * first with the sharper |x||w| bound, then anything still too blunt with
 * MPFR; refuses when even MPFR's double cannot resolve the scale, and
 * when the work would exceed the budget. Both budget checks come before
 * the work they count, so a refusal costs at most the fp64 re-bounding. */
static adm_status refine(const adm_oracle *o, const adm_o_ctx *c, adm_oracle_result *r, double scale)
{
    double *val = r->value.data, *bnd = r->bound.data, thr = o->cfg.sharpness * scale;
    adm_op_id id = adm_op_id_of(c->op);
    int gemm = id == OP_MATMUL || id == OP_LINEAR || id == OP_LINEAR_GELU;
    int64_t terms = mpfr_terms(c), budget = o->cfg.mpfr_budget, blunt = 0, left = 0;
    double spent = 0, maxb = 0;
    if (adm_oracle_result_on_device(r)) {
        /* resident: the same count and max on the device; the host's
         * arrays are fetched only where elements must be recomputed */
        ADM_TRY(adm_o_cuda_scan(val, thr, &blunt, &maxb));
        if (!(thr > 0 && blunt > 0)) {
            r->max_bound = maxb;
            return ADM_OK;
        }
        ADM_TRY(adm_oracle_result_fetch(r));
        blunt = 0;
        maxb = 0;
    }
    /* one pass counts the blunt elements and takes the max bound, which
     * stands where there are none to refine (the usual case); over the
     * oracle's threads: a count and a max come out the same in any order
     * (100 ms on one thread for FLUX.1's MLP output, 50M elements) */
#pragma omp parallel for num_threads(c->threads) schedule(static) reduction(+ : blunt) reduction(max : maxb)
    for (int64_t i = 0; i < c->numel; i++) {
        int fin = isfinite(val[i]);
        blunt += fin && bnd[i] > thr;
        if (fin && bnd[i] > maxb) maxb = bnd[i];
    }
    if (thr > 0 && blunt > 0) {
        /* the host's values change here: the GPU's copy no longer stands for them */
        adm_o_cuda_forget(val);
        if (gemm && blunt > 0) {
            /* a GEMM element is first re-bounded in fp64 (K / 32 each) */
            spent = (double)blunt * (double)((terms + 31) / 32);
            if (budget > 0 && spent > (double)budget) return over_budget(o, c, blunt, terms, scale, thr);
            for (int64_t i = 0; i < c->numel; i++)
                if (isfinite(val[i]) && bnd[i] > thr) ADM_TRY(adm_o_gemm_tighten(c, i, &val[i], &bnd[i]));
        }
        for (int64_t i = 0; i < c->numel; i++) left += isfinite(val[i]) && bnd[i] > thr;
        if (budget > 0 && left > 0 && spent + (double)left * (double)terms > (double)budget)
            return over_budget(o, c, left, terms, scale, thr);
        for (int64_t i = 0; i < c->numel; i++) {
            if (!isfinite(val[i]) || bnd[i] <= thr) continue;
            ADM_TRY(refine_mpfr(c, i, o->cfg.mpfr_bits, &val[i], &bnd[i]));
#ifdef ADM_ORACLE_TEST_HOOKS
            mutate(c, val, bnd, i, 1);
#endif
            r->mpfr_refined++;
            if (bnd[i] > thr)
                return ADM_FAIL(ADM_ERR_RANGE, "oracle %s: element %lld = %g cannot be resolved to %g even with "
                                "MPFR (fp64 holds it only to %g)", adm_op_name(c->op), (long long)i, val[i], thr,
                                bnd[i]);
        }
    }
    if (r->mpfr_refined == c->numel) r->assumption = NULL; /* every element proven */
    r->max_bound = maxb;
    if (thr > 0 && blunt > 0) {
        double m = 0;
#pragma omp parallel for num_threads(c->threads) schedule(static) reduction(max : m)
        for (int64_t i = 0; i < c->numel; i++)
            if (isfinite(val[i]) && bnd[i] > m) m = bnd[i];
        r->max_bound = m;
    }
    return ADM_OK;
}

static adm_status make_ctx(const adm_oracle *o, const adm_op *op, const adm_op_params *p,
                           const adm_tensor *const *in, const adm_tensor *out, adm_o_ctx *c)
{
    c->op = op;
    c->p = p;
    c->in = in;
    c->ndim = out->ndim;
    c->shape = out->shape;
    c->numel = adm_tensor_numel(out);
    c->threads = o->cfg.threads;
    c->use_gpu = o->cfg.use_gpu && adm_o_cuda_usable();
    c->cond = NULL;
    c->resident = c->use_gpu && o->cfg.keep_on_device;
    return ADM_OK;
}

ADM_FPENV_BODY
static adm_status oracle_refine_body(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                     const adm_tensor *const *inputs, adm_oracle_result *r, double resolve_scale)
{
    adm_o_ctx c;
    if (!(resolve_scale >= 0)) return ADM_FAIL(ADM_ERR_INVALID, "oracle: resolve scale %g", resolve_scale);
    if (!r->certified) return ADM_FAIL(ADM_ERR_INVALID, "oracle: a user evaluation cannot be refined");
    ADM_TRY(make_ctx(o, op, p, inputs, &r->value, &c));
    ADM_TRY(refine(o, &c, r, resolve_scale));
    return ADM_OK;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_oracle_refine(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                             const adm_tensor *const *inputs, adm_oracle_result *r, double resolve_scale)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = oracle_refine_body(o, op, p, inputs, r, resolve_scale);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static adm_status oracle_eval_body(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                   const adm_tensor *const *inputs, adm_oracle_result *out)
{
    adm_o_ctx c;
    int ndim = 0;
    int64_t shape[ADM_MAX_DIMS];
    adm_oracle_result r;
    adm_status st;
    memset(&r, 0, sizeof r);
    memset(out, 0, sizeof *out);
    if (!op) return ADM_FAIL(ADM_ERR_INVALID, "oracle: no op");
    ADM_TRY(out_shape(op, p, inputs, &ndim, shape));
    ADM_TRY(adm_tensor_alloc(&r.value, ADM_FP64, ndim, shape));
    if ((st = adm_tensor_alloc(&r.bound, ADM_FP64, ndim, shape)) != ADM_OK) {
        adm_tensor_free(&r.value);
        return st;
    }
    make_ctx(o, op, p, inputs, &r.value, &c);
    /* quantize has no sound condition scale: its output is the input
     * rounded on a grid the scheme chooses (block and tensor scales), not
     * a sum of terms; gate 1 reports the ulp form there, ungated */
    if (adm_op_id_of(op) != OP_QUANTIZE) {
        if ((st = adm_tensor_alloc(&r.cond, ADM_FP64, ndim, shape)) != ADM_OK) goto fail;
        r.has_cond = 1;
        c.cond = r.cond.data;
    }
    if ((st = eval_dispatch(&c, r.value.data, r.bound.data)) != ADM_OK) goto fail;
#ifdef ADM_ORACLE_TEST_HOOKS
    /* the mutants write the host's values */
    if ((st = adm_oracle_result_fetch(&r)) != ADM_OK) goto fail;
    mutate(&c, r.value.data, r.bound.data, -1, 0);
    adm_o_cuda_forget(r.value.data);
#endif
    r.certified = 1;
    switch (adm_op_id_of(op)) {
    case OP_MATMUL: case OP_LINEAR: case OP_LINEAR_GELU: case OP_RELU: case OP_SCALE: case OP_GELU: case OP_SILU:
    case OP_SWIGLU: case OP_GATED_RESIDUAL: case OP_ROW_SUM: case OP_MEAN_SQ: case OP_SOFTMAX: case OP_RMSNORM:
    case OP_LAYERNORM: case OP_GROUPNORM: case OP_ATTENTION: case OP_LINEAR_ATTENTION: case OP_QUANTIZE:
        r.on_gpu = c.use_gpu;
        break;
    default:
        r.on_gpu = 0;
        break;
    }
    r.assumption = libm_assumption(adm_op_id_of(op), p, r.on_gpu);
    if ((st = refine(o, &c, &r, o->cfg.resolve_scale)) != ADM_OK) goto fail;
    *out = r;
    return ADM_OK;
fail:
    adm_oracle_result_free(&r);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_oracle_eval(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                           const adm_tensor *const *inputs, adm_oracle_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = oracle_eval_body(o, op, p, inputs, out);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static adm_status oracle_eval_mpfr_body(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                        int64_t index, int bits, double *value, double *err)
{
    adm_o_ctx c;
    int ndim = 0;
    int64_t shape[ADM_MAX_DIMS];
    if (bits < 64) return ADM_FAIL(ADM_ERR_INVALID, "oracle: MPFR precision %d is below 64 bits", bits);
    ADM_TRY(out_shape(op, p, inputs, &ndim, shape));
    c.op = op;
    c.p = p;
    c.in = inputs;
    c.ndim = ndim;
    c.shape = shape;
    ADM_TRY(adm_shape_numel(ndim, shape, &c.numel));
    c.threads = 1;
    c.use_gpu = 0;
    c.cond = NULL;
    return refine_mpfr(&c, index, bits, value, err);
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_oracle_eval_mpfr(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                int64_t index, int bits, double *value, double *err)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = oracle_eval_mpfr_body(op, p, inputs, index, bits, value, err);
    adm_fpenv_leave(&fe);
    return rv;
}
