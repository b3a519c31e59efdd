/* Replay: the gates over the outputs stored in a capture. */
#include "adm_capture.h"
#include "adm_fpenv.h"
#include "adm_harness.h"
#include "adm_oracle.h"
#include "harness_internal.h"
#include "adm_trace.h"

#include <stdio.h>
#include <stdlib.h>

void adm_replay_result_free(adm_replay_result *r)
{
    if (!r) return;
    for (int i = 0; i < r->n; i++) free(r->names ? r->names[i] : NULL);
    free(r->names);
    free(r->verdicts);
    memset(r, 0, sizeof *r);
}

adm_status adm_h_oracle_sharpen(adm_oracle *o, const adm_op *op, const adm_op_params *p,
                                const adm_tensor *const *in, adm_oracle_result *orc, const adm_tensor *ref,
                                const adm_tensor *const *cands, int nc, adm_h_stats_dev **sdev)
{
    double scale = 0, tt = adm_trace_ms();
    int have_scale = 0;
    *sdev = NULL;
    if (adm_oracle_result_on_device(orc)) {
        int all = 1;
        ADM_TRY(adm_h_stats_dev_try(&orc->value, orc->has_cond ? &orc->cond : NULL, ref, sdev));
        for (int k = 0; k < nc && *sdev && all; k++) {
            adm_judge_input ji;
            memset(&ji, 0, sizeof ji);
            ji.oracle = &orc->value;
            ji.cond = orc->has_cond ? &orc->cond : NULL;
            ji.ref = ref;
            ji.cand = cands[k];
            all = adm_h_stats_dev_serves(*sdev, &ji);
        }
        if (*sdev && all) {
            ADM_TRY(adm_h_stats_dev_resolve_scale(*sdev, &scale));
            have_scale = 1;
        } else {
            adm_h_stats_dev_free(*sdev);
            *sdev = NULL;
            ADM_TRY(adm_oracle_result_fetch(orc));
        }
        adm_trace_part("oracle.resolve_scale_device", tt, -1);
    }
    if (!have_scale) {
        tt = adm_trace_ms();
        scale = adm_judge_resolve_scale(&orc->value, ref);
        adm_trace_part("oracle.resolve_scale", tt, -1);
    }
    tt = adm_trace_ms();
    ADM_TRY(adm_oracle_refine(o, op, p, in, orc, scale));
    /* refinement fetched and changed the values: the session's copy is old */
    if (*sdev && !adm_oracle_result_on_device(orc)) {
        adm_h_stats_dev_free(*sdev);
        *sdev = NULL;
    }
    adm_trace_part("oracle.refine", tt, -1);
    return ADM_OK;
}

ADM_FPENV_BODY
static adm_status harness_replay_body(const adm_capture *c, const adm_oracle_config *ocfg,
                                      const adm_gate_config *gcfg,
                                      adm_replay_result *out)
{
    const char *path = adm_capture_path(c) ? adm_capture_path(c) : "(capture)";
    const adm_op *op = adm_op_find(adm_capture_op(c));
    const adm_tensor *ref = adm_capture_reference(c);
    adm_oracle_result orc;
    adm_oracle *o = NULL;
    adm_tensor zero_bound, dense_oracle;
    const adm_tensor *ov, *ob, *oc = NULL;
    adm_special_outcome *so = NULL;
    int ns = adm_capture_special_count(c), nc = adm_capture_candidate_count(c);
    adm_status st = ADM_OK;
    adm_gate_config gd;
    adm_h_stats_dev *sdev = NULL;
    adm_h_stats_batch *sbat = NULL;
    const adm_tensor **cands = NULL;
    double t0 = adm_h_now();

    memset(out, 0, sizeof *out);
    memset(&orc, 0, sizeof orc);
    memset(&zero_bound, 0, sizeof zero_bound);
    memset(&dense_oracle, 0, sizeof dense_oracle);
    if (!gcfg) { adm_gate_config_default(&gd); gcfg = &gd; }
    if (!ref)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: no dataset '/reference': replay judges candidates against the "
                        "reference path's stored output", path);
    if (nc == 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: no candidate outputs under '/candidates' to judge", path);
    if (op) {
        adm_op_params p;
        const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
        if ((st = adm_op_params_parse(op, adm_capture_params(c), &p)) != ADM_OK) goto fail_prefix;
        for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(c, adm_op_input_name(op, i));
        double tt = adm_trace_ms();
        adm_oracle_config kc;
        /* on the GPU the oracle's result stays there for the statistics
         * (adm_oracle_config.keep_on_device), fetched only where something
         * reads it on the host */
        if (ocfg) {
            kc = *ocfg;
            kc.keep_on_device = ocfg->use_gpu;
        }
        if ((st = adm_oracle_create(ocfg ? &kc : NULL, &o)) != ADM_OK) goto fail_prefix;
        if ((st = adm_oracle_eval(o, op, &p, in, &orc)) != ADM_OK) goto fail_prefix;
        adm_trace_part("replay.oracle_eval", tt, -1);
        if (!(cands = calloc((size_t)nc, sizeof *cands))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
        for (int k = 0; k < nc; k++) cands[k] = adm_capture_candidate(c, k).tensor;
        if ((st = adm_h_oracle_sharpen(o, op, &p, in, &orc, ref, cands, nc, &sdev)) != ADM_OK) goto fail_prefix;
        ov = &orc.value;
        ob = &orc.bound;
        oc = orc.has_cond ? &orc.cond : NULL;
        out->certified = 1;
        out->mpfr_refined = orc.mpfr_refined;
        out->assumption = orc.assumption;
    } else {
        ov = adm_capture_oracle(c);
        if (!ov) return ADM_FAIL(ADM_ERR_FORMAT, "%s: op '%s' is not in the catalog and there is no '/oracle'", path,
                                 adm_capture_op(c));
        /* The gates read an oracle as dense fp64 from its first element; a
         * borrowed capture's (adm_capture_create_borrowed) may be a view. */
        if (!adm_tensor_is_contiguous(ov) || ov->offset != 0) {
            if ((st = adm_tensor_contiguous(ov, &dense_oracle)) != ADM_OK) goto fail_prefix;
            ov = &dense_oracle;
        }
        if ((st = adm_tensor_alloc(&zero_bound, ADM_FP64, ov->ndim, ov->shape)) != ADM_OK) goto fail_prefix;
        ob = &zero_bound;
        out->certified = 0;
    }
    out->seconds[0] = adm_h_now() - t0;
    /* --device cuda: the oracle, its scale and the reference go up once
     * for every candidate; a reference the GPU path does not read (fp8, a
     * view) keeps the statistics on the CPU, and so does a build or a
     * machine without a GPU where the oracle ran on the CPU */
    if (!sdev && ocfg && ocfg->use_gpu && adm_tensor_numel(ov) > 0) {
        double tt = adm_trace_ms();
        if ((st = adm_h_stats_dev_try(ov, oc, ref, &sdev)) != ADM_OK) goto fail_prefix;
        adm_trace_part("replay.stats_open", tt, -1);
    }
    if (sdev && out->certified) {
        /* refinement's max bound is the judge's (over finite values): taken once */
        adm_judge_input mi;
        memset(&mi, 0, sizeof mi);
        mi.oracle = ov;
        mi.bound = ob;
        adm_h_stats_dev_keep_max_bound(sdev, &mi, orc.max_bound);
    }
    /* on the CPU: every candidate's statistics in one pass over the outputs */
    if (!sdev && adm_tensor_numel(ov) > 0) {
        if (!cands && !(cands = calloc((size_t)nc, sizeof *cands))) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (int k = 0; k < nc; k++) cands[k] = adm_capture_candidate(c, k).tensor;
        if ((st = adm_h_stats_batch_open(ov, oc, ref, cands, nc, &sbat)) != ADM_OK) goto fail_prefix;
    }
    out->names = calloc((size_t)nc, sizeof *out->names);
    out->verdicts = calloc((size_t)nc, sizeof *out->verdicts);
    so = calloc((size_t)(ns ? ns : 1), sizeof *so);
    if (!out->names || !out->verdicts || !so) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
    for (int k = 0; k < nc; k++) {
        adm_named_tensor cand = adm_capture_candidate(c, k);
        adm_judge_input in;
        memset(&in, 0, sizeof in);
        for (int s = 0; s < ns; s++) {
            so[s].name = adm_capture_special_name(c, s);
            so[s].ref_status = adm_capture_special_refusal(c, s);
            so[s].ref = adm_capture_special_reference(c, s);
            if (so[s].ref_status == ADM_OK && !so[s].ref) so[s].ref_status = ADM_ERR_NOT_FOUND;
            so[s].cand_status = ADM_ERR_NOT_FOUND;
            so[s].cand = NULL;
            for (int j = 0; j < adm_capture_special_candidate_count(c, s); j++) {
                adm_named_tensor sc = adm_capture_special_candidate(c, s, j);
                if (!strcmp(sc.name, cand.name)) {
                    so[s].cand_status = ADM_OK;
                    so[s].cand = sc.tensor;
                }
            }
            /* no stored reference output: nothing to compare the case with */
            if (so[s].ref_status == ADM_ERR_NOT_FOUND) so[s].cand_status = ADM_ERR_NOT_FOUND;
        }
        in.oracle = ov;
        in.bound = ob;
        in.cond = oc; /* a user oracle has none: the ulp form is reported, not gated */
        in.oracle_certified = out->certified;
        in.oracle_assumption = out->assumption;
        in.ref = ref;
        in.cand = cand.tensor;
        in.special = so;
        in.n_special = ns;
        in.n_views = -1;
        in.stats_dev = sdev;
        in.stats_batch = sbat;
        in.seconds = out->seconds + 1;
        if (!(out->names[k] = malloc(strlen(cand.name) + 1))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto done; }
        strcpy(out->names[k], cand.name);
        out->n = k + 1;
        out->stats_device += adm_h_stats_dev_serves(sdev, &in);
        double tt = adm_trace_ms();
        if ((st = adm_judge(&in, gcfg, &out->verdicts[k])) != ADM_OK) {
            adm_error_prefix("%s: candidate '%s': ", path, cand.name);
            goto done;
        }
        if (adm_trace_on()) {
            char part[160];
            snprintf(part, sizeof part, "replay.judge %s stats=%.1f other=%.1f", cand.name,
                     1e3 * out->seconds[1], 1e3 * out->seconds[2]);
            adm_trace_part(part, tt, -1);
        }
    }
done:
    free(so);
    adm_h_stats_dev_free(sdev);
    adm_h_stats_batch_free(sbat);
    free(cands);
    adm_oracle_result_free(&orc);
    adm_oracle_free(o);
    adm_tensor_free(&zero_bound);
    adm_tensor_free(&dense_oracle);
    if (st != ADM_OK) adm_replay_result_free(out);
    return st;
fail_prefix:
    adm_error_prefix("%s: ", path);
    goto done;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_harness_replay(const adm_capture *c, const adm_oracle_config *ocfg, const adm_gate_config *gcfg,
                              adm_replay_result *out)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = harness_replay_body(c, ocfg, gcfg, out);
    adm_fpenv_leave(&fe);
    return rv;
}
