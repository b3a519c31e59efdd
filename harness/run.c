/* Run: implementations on a capture's inputs, on special-value probes and
 * on non-contiguous views of its first rows and output channels
 * (adm_harness_probe_inputs, probe_cut_cols),
 * then the gates. */
#include "harness_internal.h"
#include "adm_fpenv.h"
#include "adm_oracle.h"
#include "adm_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *phase_names[ADM_RUN_PHASES] = {"read", "implementations", "oracle", "probes_views", "statistics",
                                                  "other_gates"};

const char *adm_run_phase_name(int phase)
{
    return phase >= 0 && phase < ADM_RUN_PHASES ? phase_names[phase] : "invalid";
}

#define N_PROBES 8
static const char *probe_names[N_PROBES] = {"nan_element", "nan_row", "pos_inf", "neg_inf", "signed_zeros",
                                            "subnormals", "near_overflow", "empty"};

/* A copy of x (contiguous, owned) with probe k written into it. */
adm_status adm_harness_probe(const adm_tensor *x, int k, adm_tensor *out)
{
    const adm_format_info *f = adm_format_get(x->dtype);
    int64_t n, last = x->ndim ? x->shape[x->ndim - 1] : 1, rows;
    if (k == 7) {
        int64_t shape[ADM_MAX_DIMS];
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        if (x->ndim) shape[0] = 0;
        return adm_tensor_alloc(out, x->dtype, x->ndim, shape);
    }
    ADM_TRY(adm_tensor_contiguous(x, out));
    n = adm_tensor_numel(out);
    rows = last ? n / last : 0;
    if (n == 0) return ADM_OK;
    switch (k) {
    case 0: adm_tensor_set_bits(out, n / 2, f->nan_bits ? f->nan_bits : f->max_bits); break;
    case 1:
        for (int64_t j = 0; j < last; j++)
            adm_tensor_set_bits(out, (rows > 1 ? 1 : 0) * last + j, f->nan_bits ? f->nan_bits : f->max_bits);
        break;
    case 2: adm_tensor_set_bits(out, 0, f->has_inf ? f->inf_bits : f->max_bits); break;
    case 3: adm_tensor_set_bits(out, n - 1, (f->has_inf ? f->inf_bits : f->max_bits) | (1ull << (f->bits - 1))); break;
    case 4:
        for (int64_t j = 0; j < last; j++) adm_tensor_set_bits(out, j, (j & 1) ? (1ull << (f->bits - 1)) : 0);
        break;
    case 5:
        for (int64_t j = 0; j < last; j++) adm_tensor_set_bits(out, j, 1 + (uint64_t)(j % 3));
        break;
    case 6:
        /* one value near the format's max and one near its negative max in
         * the last row: large enough to test the range, too few to make an
         * overflow that depends on the order of a reduction */
        adm_tensor_set_bits(out, (rows - 1) * last, f->max_bits - 1);
        if (last > 1) adm_tensor_set_bits(out, (rows - 1) * last + 1, (f->max_bits - 1) | (1ull << (f->bits - 1)));
        break;
    default: break;
    }
    return ADM_OK;
}

int adm_h_probe_axis(const adm_op *op, const adm_op_params *p, int ndim, const int64_t *shape)
{
    const char *name = adm_op_name(op);
    int red = -1, chan = -1;
    if (ndim < 2) return -1;
    if (!strcmp(name, "attention") || !strcmp(name, "linear_attention"))
        return shape[ndim - 2] > ADM_PROBE_ROWS ? ndim - 2 : -1;
    if (!strcmp(name, "row_sum") || !strcmp(name, "mean_sq") || !strcmp(name, "softmax"))
        red = p->axis < 0 ? p->axis + ndim : p->axis;
    if (!strcmp(name, "groupnorm")) chan = p->channels_last ? ndim - 1 : 1;
    for (int d = 0; d < ndim - 1; d++)
        if (d != red && d != chan && shape[d] > ADM_PROBE_ROWS) return d;
    return -1;
}

int adm_h_probe_col_axis(const adm_op *op, int i)
{
    const char *name = adm_op_name(op);
    if (!strcmp(name, "linear") || !strcmp(name, "linear+gelu")) return i == 1 || i == 2 ? 0 : -1; /* w [N, K], bias [N] */
    if (!strcmp(name, "matmul")) return i == 1 ? 1 : -1;                                       /* b [K, N] */
    return -1;
}

/* pin's inputs cut along adm_h_probe_col_axis to their first
 * ADM_PROBE_COLS entries, as owned contiguous copies in cut[]; *cols 1
 * when one was cut. On an error cut[] still holds only owned tensors. */
static adm_status probe_cut_cols(const adm_op *op, const adm_tensor **pin, adm_tensor *cut, int *cols)
{
    *cols = 0;
    for (int i = 0; i < adm_op_input_count(op); i++) {
        int a = adm_h_probe_col_axis(op, i);
        adm_tensor v, c;
        if (a < 0 || !pin[i] || a >= pin[i]->ndim || pin[i]->shape[a] <= ADM_PROBE_COLS) continue;
        ADM_TRY(adm_tensor_slice(pin[i], a, 0, ADM_PROBE_COLS, 1, &v));
        ADM_TRY(adm_tensor_contiguous(&v, &c));
        if (pin[i] == &cut[i]) adm_tensor_free(&cut[i]);
        cut[i] = c;
        pin[i] = &cut[i];
        *cols = 1;
    }
    return ADM_OK;
}

adm_status adm_harness_probe_inputs(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                    adm_tensor *cut, const adm_tensor **out, int *axis)
{
    const char *name = adm_op_name(op);
    const adm_tensor *x = inputs[0];
    int n = adm_op_input_count(op), a, aligned;
    memset(cut, 0, sizeof *cut * ADM_OP_MAX_INPUTS);
    for (int i = 0; i < ADM_OP_MAX_INPUTS; i++) out[i] = i < n ? inputs[i] : NULL;
    *axis = -1;
    if (!x || (a = adm_h_probe_axis(op, p, x->ndim, x->shape)) < 0) return ADM_OK;
    aligned = !strcmp(name, "gated_residual") || !strcmp(name, "swiglu") || !strcmp(name, "layernorm");
    for (int i = 0; i < n; i++) {
        adm_tensor v;
        adm_status st;
        if (!inputs[i] || (i > 0 && !(aligned && inputs[i]->ndim == x->ndim && inputs[i]->shape[a] == x->shape[a])))
            continue;
        if ((st = adm_tensor_slice(inputs[i], a, 0, ADM_PROBE_ROWS, 1, &v)) != ADM_OK ||
            (st = adm_tensor_contiguous(&v, &cut[i])) != ADM_OK) {
            for (int j = 0; j < i; j++) adm_tensor_free(&cut[j]);
            return st;
        }
        out[i] = &cut[i];
    }
    *axis = a;
    return ADM_OK;
}

static int same_bits(const adm_tensor *a, const adm_tensor *b)
{
    int64_t n;
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
        return 0;
    n = adm_tensor_numel(a);
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = adm_tensor_bits(a, i), y = adm_tensor_bits(b, i);
        if (x != y && !(adm_format_isnan(a->dtype, x) && adm_format_isnan(a->dtype, y))) return 0;
    }
    return 1;
}

/* Views of x with the same logical contents: transposed storage, a row
 * stride of 2x, an offset; and a stride-0 broadcast of x's first row,
 * whose contiguous twin is returned in *twin. storage holds the memory. */
static adm_status make_view(const adm_tensor *x, int k, adm_tensor *storage, adm_tensor *view, adm_tensor *twin)
{
    int r = x->ndim;
    int64_t n = adm_tensor_numel(x), last = r ? x->shape[r - 1] : 1;
    memset(twin, 0, sizeof *twin);
    if (k == 0) { /* transposed: the last two dims swapped in storage */
        adm_tensor t;
        if (r < 2) return ADM_ERR_UNSUPPORTED;
        ADM_TRY(adm_tensor_transpose(x, r - 2, r - 1, &t));
        ADM_TRY(adm_tensor_contiguous(&t, storage));
        return adm_tensor_transpose(storage, r - 2, r - 1, view);
    }
    if (k == 1) { /* every other element of rows twice as long */
        int64_t shape[ADM_MAX_DIMS];
        adm_tensor wide;
        memcpy(shape, x->shape, sizeof(int64_t) * (size_t)r);
        shape[r - 1] = 2 * last;
        ADM_TRY(adm_tensor_alloc(storage, x->dtype, r, shape));
        ADM_TRY(adm_tensor_slice(storage, r - 1, 0, 2 * last, 2, &wide));
        for (int64_t i = 0; i < n; i++) adm_tensor_set_bits(&wide, i, adm_tensor_bits(x, i));
        *view = wide;
        return ADM_OK;
    }
    if (k == 2) { /* an offset of 7 elements into the storage */
        int64_t one[1] = {n + 7};
        ADM_TRY(adm_tensor_alloc(storage, x->dtype, 1, one));
        ADM_TRY(adm_tensor_wrap(view, x->dtype, r, x->shape, NULL, 7, storage->data, n + 7));
        for (int64_t i = 0; i < n; i++) adm_tensor_set_bits(view, i, adm_tensor_bits(x, i));
        return ADM_OK;
    }
    { /* the first row broadcast with stride 0 */
        adm_tensor row;
        if (r < 2 || x->shape[0] < 1) return ADM_ERR_UNSUPPORTED;
        ADM_TRY(adm_tensor_contiguous(x, storage));
        ADM_TRY(adm_tensor_slice(storage, 0, 0, 1, 1, &row));
        ADM_TRY(adm_tensor_broadcast(&row, r, x->shape, view));
        return adm_tensor_contiguous(view, twin);
    }
}

adm_status adm_harness_check_inputs(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs)
{
    adm_op_shapes sh;
    int nd;
    int64_t shape[ADM_MAX_DIMS];
    memset(&sh, 0, sizeof sh);
    for (int i = 0; i < adm_op_input_count(op); i++) {
        if (!inputs[i]) continue;
        sh.present[i] = 1;
        sh.ndim[i] = inputs[i]->ndim;
        memcpy(sh.shape[i], inputs[i]->shape, sizeof(int64_t) * (size_t)inputs[i]->ndim);
    }
    if (adm_op_output_shape(op, p, &sh, &nd, shape) != ADM_OK) {
        adm_error_prefix("the inputs do not fit op '%s' with these parameters: ", adm_op_name(op));
        return ADM_ERR_SHAPE;
    }
    return ADM_OK;
}

static const char *view_names[4] = {"transposed", "strided", "offset", "broadcast"};

ADM_FPENV_BODY
static adm_status harness_run_body(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                                   const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                                   const adm_gate_config *gcfg, const adm_oracle_config *ocfg, adm_run_result *out)
{
    adm_tensor r, c, cs, pr[N_PROBES], pc[N_PROBES], probe_in[N_PROBES], cut[ADM_OP_MAX_INPUTS];
    adm_special_outcome so[N_PROBES];
    adm_view_outcome vo[4];
    adm_oracle *o = NULL;
    adm_oracle_result orc;
    adm_judge_input ji;
    adm_h_stats_dev *sdev = NULL;
    const adm_tensor *in2[ADM_OP_MAX_INPUTS], *pin[ADM_OP_MAX_INPUTS], *cref;
    adm_status st;
    int nv = 0, axis = -1, cols = 0;
    double t0 = adm_h_now(), t1, tt = adm_trace_ms();

    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    memset(&c, 0, sizeof c);
    memset(&cs, 0, sizeof cs);
    memset(pr, 0, sizeof pr);
    memset(pc, 0, sizeof pc);
    memset(probe_in, 0, sizeof probe_in);
    memset(cut, 0, sizeof cut);
    memset(&orc, 0, sizeof orc);
    /* a parameter set elsewhere (a fusion table's "params") may ask for
     * inputs the capture lacks */
    if ((st = adm_harness_check_inputs(op, p, inputs)) != ADM_OK) return st;
    if ((st = ref->run(ref, p, inputs, &r)) != ADM_OK) {
        adm_error_prefix("reference '%s' refuses the capture's inputs: ", ref->name);
        return st;
    }
    adm_trace_part("run.impl_reference", tt, -1);
    tt = adm_trace_ms();
    if ((st = cand->run(cand, p, inputs, &c)) != ADM_OK) {
        adm_error_prefix("candidate '%s' refuses the capture's inputs: ", cand->name);
        adm_tensor_free(&r);
        return st;
    }
    t1 = adm_h_now();
    out->seconds[1] = t1 - t0;
    adm_trace_part("run.impl_candidate", tt, -1);
    tt = adm_trace_ms();
    /* the oracle, sharp to the reference's error scale; on the GPU its
     * result stays there where every gate can read it there (replay's
     * rule, harness/replay.c: a top-k reader reads it on the host) */
    {
        adm_oracle_config kc;
        double scale = 0;
        int have_scale = 0;
        if (ocfg) {
            kc = *ocfg;
            kc.keep_on_device = ocfg->use_gpu && !(reader && reader->kind == ADM_READER_TOPK);
        }
        if ((st = adm_oracle_create(ocfg ? &kc : NULL, &o)) != ADM_OK) goto done;
        if ((st = adm_oracle_eval(o, op, p, inputs, &orc)) != ADM_OK) goto done;
        if (adm_oracle_result_on_device(&orc)) {
            adm_judge_input si;
            memset(&si, 0, sizeof si);
            si.oracle = &orc.value;
            si.cond = orc.has_cond ? &orc.cond : NULL;
            si.ref = &r;
            si.cand = &c;
            if ((st = adm_h_stats_dev_try(si.oracle, si.cond, &r, &sdev)) != ADM_OK) goto done;
            if (sdev && adm_h_stats_dev_serves(sdev, &si)) {
                if ((st = adm_h_stats_dev_resolve_scale(sdev, &scale)) != ADM_OK) goto done;
                have_scale = 1;
            } else {
                adm_h_stats_dev_free(sdev);
                sdev = NULL;
                if ((st = adm_oracle_result_fetch(&orc)) != ADM_OK) goto done;
            }
        }
        if (!have_scale) scale = adm_judge_resolve_scale(&orc.value, &r);
        if ((st = adm_oracle_refine(o, op, p, inputs, &orc, scale)) != ADM_OK) goto done;
        /* refinement fetched and changed the values: the session's copy is old */
        if (sdev && !adm_oracle_result_on_device(&orc)) {
            adm_h_stats_dev_free(sdev);
            sdev = NULL;
        }
    }
    t0 = adm_h_now();
    out->seconds[2] = t0 - t1;
    adm_trace_part("run.oracle", tt, -1);
    tt = adm_trace_ms();
    /* probes and views on the first ADM_PROBE_ROWS rows and the first
     * ADM_PROBE_COLS output channels; the views compare with the
     * candidate's own output on that cut */
    if ((st = adm_harness_probe_inputs(op, p, inputs, cut, pin, &axis)) != ADM_OK) goto done;
    if ((st = probe_cut_cols(op, pin, cut, &cols)) != ADM_OK) goto done;
    cref = &c;
    if (axis >= 0 || cols) {
        if ((st = cand->run(cand, p, pin, &cs)) != ADM_OK) {
            adm_error_prefix("candidate '%s' refuses the probes' cut of the capture's inputs (the first %d rows, "
                             "%d output channels): ", cand->name, ADM_PROBE_ROWS, ADM_PROBE_COLS);
            goto done;
        }
        cref = &cs;
    }
    /* special-value probes on the first input */
    memcpy(in2, pin, sizeof in2);
    for (int k = 0; k < N_PROBES; k++) {
        so[k].name = probe_names[k];
        so[k].ref = so[k].cand = NULL;
        if ((st = adm_harness_probe(pin[0], k, &probe_in[k])) != ADM_OK) goto done;
        in2[0] = &probe_in[k];
        so[k].ref_status = ref->run(ref, p, in2, &pr[k]);
        so[k].cand_status = cand->run(cand, p, in2, &pc[k]);
        if (so[k].ref_status == ADM_OK) so[k].ref = &pr[k];
        if (so[k].cand_status == ADM_OK) so[k].cand = &pc[k];
        adm_error_clear();
    }
    in2[0] = pin[0];
    /* views of the first input */
    for (int k = 0; k < 4; k++) {
        adm_tensor storage, view, twin, out_v, out_t, ref_v;
        adm_status sv;
        memset(&storage, 0, sizeof storage);
        memset(&out_v, 0, sizeof out_v);
        memset(&out_t, 0, sizeof out_t);
        memset(&ref_v, 0, sizeof ref_v);
        sv = make_view(pin[0], k, &storage, &view, &twin);
        if (sv == ADM_ERR_UNSUPPORTED) { adm_tensor_free(&storage); continue; }
        if (sv != ADM_OK) { adm_tensor_free(&storage); st = sv; goto done; }
        vo[nv].name = view_names[k];
        in2[0] = &view;
        vo[nv].ref_status = ref->run(ref, p, in2, &ref_v);
        vo[nv].cand_status = cand->run(cand, p, in2, &out_v);
        vo[nv].cand_identical = 0;
        if (vo[nv].cand_status == ADM_OK) {
            if (k < 3) vo[nv].cand_identical = same_bits(&out_v, cref);
            else {
                in2[0] = &twin;
                if (cand->run(cand, p, in2, &out_t) == ADM_OK) vo[nv].cand_identical = same_bits(&out_v, &out_t);
            }
        }
        adm_error_clear();
        in2[0] = pin[0];
        nv++;
        adm_tensor_free(&out_v);
        adm_tensor_free(&out_t);
        adm_tensor_free(&ref_v);
        adm_tensor_free(&twin);
        adm_tensor_free(&storage);
    }
    out->seconds[3] = adm_h_now() - t0;
    adm_trace_part("run.probes_views", tt, -1);
    tt = adm_trace_ms();
    memset(&ji, 0, sizeof ji);
    ji.oracle = &orc.value;
    ji.bound = &orc.bound;
    ji.cond = orc.has_cond ? &orc.cond : NULL;
    ji.oracle_certified = 1;
    ji.oracle_assumption = orc.assumption;
    ji.ref = &r;
    ji.cand = &c;
    ji.ref_decl = &ref->decl;
    ji.cand_decl = &cand->decl;
    ji.reader = reader;
    ji.special = so;
    ji.n_special = N_PROBES;
    ji.views = vo;
    ji.n_views = nv;
    ji.seconds = out->seconds + 4;
    /* with the oracle on the GPU, gates 1 and 2's statistics too where the
     * outputs allow (replay's rule: harness/replay.c) */
    if (!sdev && ocfg && ocfg->use_gpu && adm_tensor_numel(&orc.value) > 0) {
        if ((st = adm_h_stats_dev_try(&orc.value, orc.has_cond ? &orc.cond : NULL, &r, &sdev)) != ADM_OK) goto done;
        adm_trace_part("run.stats_open", tt, -1);
        tt = adm_trace_ms();
    }
    if (sdev) {
        ji.stats_dev = sdev;
        out->stats_device = adm_h_stats_dev_serves(sdev, &ji);
        /* refinement's max bound is the judge's (over finite values): taken once */
        adm_h_stats_dev_keep_max_bound(sdev, &ji, orc.max_bound);
    }
    st = adm_judge(&ji, gcfg, &out->verdict);
    if (adm_trace_on()) {
        char part[160];
        snprintf(part, sizeof part, "run.judge stats=%.1f other=%.1f", 1e3 * out->seconds[4], 1e3 * out->seconds[5]);
        adm_trace_part(part, tt, -1);
    }
    out->mpfr_refined = orc.mpfr_refined;
    out->probes = N_PROBES;
    out->views = nv;
done:
    for (int k = 0; k < N_PROBES; k++) {
        adm_tensor_free(&pr[k]);
        adm_tensor_free(&pc[k]);
        adm_tensor_free(&probe_in[k]);
    }
    for (int i = 0; i < ADM_OP_MAX_INPUTS; i++) adm_tensor_free(&cut[i]);
    adm_h_stats_dev_free(sdev);
    adm_oracle_result_free(&orc);
    adm_oracle_free(o);
    adm_tensor_free(&r);
    adm_tensor_free(&c);
    adm_tensor_free(&cs);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_run(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                           const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                           const adm_gate_config *gcfg, adm_run_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_run_body(op, p, inputs, ref, cand, reader, gcfg, NULL, out);
    adm_fpenv_leave(&fe);
    return rv;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_run_on(const adm_op *op, const adm_op_params *p, const adm_tensor *const *inputs,
                              const adm_impl *ref, const adm_impl *cand, const adm_reader *reader,
                              const adm_gate_config *gcfg, const adm_oracle_config *ocfg, adm_run_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_run_body(op, p, inputs, ref, cand, reader, gcfg, ocfg, out);
    adm_fpenv_leave(&fe);
    return rv;
}
