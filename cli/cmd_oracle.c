/* admit-kernel oracle: evaluate a capture's op exactly, with certified
 * bounds, and optionally store value and bound beside its tensors. */
#include "cli.h"
#include "adm_cuda.h"
#include "adm_harness.h"
#include "adm_oracle.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char oracle_usage[] =
    "usage: admit-kernel oracle CAPTURE [-o OUT.h5] [options]\n"
    "\n"
    "Evaluates the capture's op on its inputs in fp64 with a certified bound per\n"
    "element; elements whose bound is above SHARPNESS x the scale to resolve are\n"
    "recomputed with MPFR. The scale defaults to the RMS error of the capture's\n"
    "reference output (never below that of the correctly rounded output).\n"
    "\n"
    "  -o, --output OUT.h5   write the capture with /oracle and /oracle_bound\n"
    "  --resolve SCALE       the error scale to resolve (overrides the default)\n"
    "  --sharpness S         bound / scale allowed (default 1e-3)\n"
    "  --mpfr-bits B         MPFR precision for refinement (default 256)\n"
    "  --mpfr-budget T       the most MPFR work, in input terms read (default 2^24,\n"
    "                        ADM_MPFR_BUDGET; 0: no limit); beyond it: exit 2\n"
    "  --threads N           CPU threads (default: all)\n"
    "  --gpu                 every op on the GPU; without a usable GPU: exit 2\n"
    ADM_CLI_BUDGET_HELP;

/* RMS of (ref - value) over elements where both are finite, and of
 * (round(value) - value) in ref's format: the reference path's error and
 * the floor the design puts under it. */
static void reference_scale(const adm_tensor *ref, const adm_tensor *val, double *rms_ref, double *rms_round)
{
    int64_t n = adm_tensor_numel(val), m = 0;
    double s = 0, q = 0;
    const double *v = val->data;
    for (int64_t i = 0; i < n; i++) {
        double r = adm_tensor_get(ref, i), rr;
        if (!isfinite(r) || !isfinite(v[i])) continue;
        rr = adm_format_round(ref->dtype, v[i], ADM_RNE, 0);
        s += (r - v[i]) * (r - v[i]);
        if (isfinite(rr)) q += (rr - v[i]) * (rr - v[i]);
        m++;
    }
    *rms_ref = m ? sqrt(s / (double)m) : 0;
    *rms_round = m ? sqrt(q / (double)m) : 0;
}

int adm_cmd_oracle(int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    double resolve = -1, rms_ref = 0, rms_round = 0, scale;
    int64_t bits = 256, threads = 0;
    adm_oracle_config cfg;
    adm_capture *cap = NULL;
    const adm_op *op;
    adm_op_params p;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0};
    adm_oracle *o = NULL;
    adm_oracle_result r;
    adm_plan plan;
    char shape[160];
    int rc = ADM_EXIT_OK;

    adm_oracle_config_default(&cfg);
    memset(&r, 0, sizeof r);
    {
        static const struct option lo[] = {{"output", required_argument, 0, 'o'}, {"resolve", required_argument, 0, 'r'},
                                           {"sharpness", required_argument, 0, 's'}, {"mpfr-bits", required_argument, 0, 'b'},
                                           {"mpfr-budget", required_argument, 0, 'B'}, {"threads", required_argument, 0, 't'},
                                           {"gpu", no_argument, 0, 'g'}, {"help", no_argument, 0, 'h'},
                                           {"max-memory", required_argument, 0, 'M'}, {"max-work", required_argument, 0, 'W'},
                                           {0, 0, 0, 0}};
        const char *v;
        int ch, first = argc;
        while ((ch = adm_cli_getopt_short(argc, argv, "oracle", "ho:", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: return ADM_EXIT_INPUT;
            case 'h': fputs(oracle_usage, stdout); return ADM_EXIT_OK;
            case 'g': cfg.use_gpu = 1; break;
            case 'o': out = v; break;
            case 'r':
                if (!adm_cli_parse_f64(v, &resolve) || resolve < 0) return adm_cli_usage_error("--resolve: expected a number >= 0, got '%s'", v);
                break;
            case 's':
                if (!adm_cli_parse_f64(v, &cfg.sharpness) || !(cfg.sharpness > 0)) return adm_cli_usage_error("--sharpness: expected a number > 0, got '%s'", v);
                break;
            case 'b':
                if (!adm_cli_parse_i64(v, 64, 65536, &bits)) return adm_cli_usage_error("--mpfr-bits: expected 64 to 65536, got '%s'", v);
                break;
            case 'B':
                if (!adm_cli_parse_i64(v, 0, INT64_MAX, &cfg.mpfr_budget))
                    return adm_cli_usage_error("--mpfr-budget: expected a number of terms >= 0 (0: no limit), got '%s'", v);
                break;
            case 't':
                if (!adm_cli_parse_i64(v, 0, 1024, &threads)) return adm_cli_usage_error("--threads: expected 0 to 1024, got '%s'", v);
                break;
            case 'M': if ((rc = adm_cli_set_budget("--max-memory", v)) != ADM_EXIT_OK) return rc; break;
            case 'W': if ((rc = adm_cli_set_budget("--max-work", v)) != ADM_EXIT_OK) return rc; break;
            default: return adm_cli_usage_error("oracle: unknown option");
            }
        }
        for (int i = first; i < argc; i++) {
            if (path) return adm_cli_usage_error("oracle: expected one CAPTURE, got '%s' too", argv[i]);
            path = argv[i];
        }
    }
    if (!path) { fputs(oracle_usage, stderr); return adm_cli_usage_error("oracle: expected a CAPTURE"); }
    if (cfg.use_gpu) {
        /* asked for the GPU: none is a refusal, not a quiet run on the CPU */
        int ndev = 0;
        if (adm_cuda_device_count(&ndev) != ADM_OK)
            return adm_cli_usage_error("oracle --gpu: %s (without --gpu the oracle runs on the CPU)",
                                       adm_error_message());
    }
    cfg.mpfr_bits = (int)bits;
    cfg.threads = (int)threads;
    /* what the oracle will hold and compute, judged before the data is read */
    if (adm_plan_init(&plan, ADM_PLAN_ORACLE) != ADM_OK) return adm_cli_fail();
    plan.write = out != NULL;
    if (adm_capture_read_sandboxed_plan(path, NULL, adm_plan_check, &plan, &cap) != ADM_OK ||
        adm_capture_validate(cap) != ADM_OK) {
        rc = adm_cli_fail();
        goto done;
    }
    op = adm_op_find(adm_capture_op(cap));
    if (!op) {
        rc = adm_cli_usage_error("%s: op '%s' is not in the catalog; its /oracle is the user's and stays uncertified",
                                 path, adm_capture_op(cap));
        goto done;
    }
    if (adm_op_params_parse(op, adm_capture_params(cap), &p) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
    if (adm_oracle_create(&cfg, &o) != ADM_OK || adm_oracle_eval(o, op, &p, in, &r) != ADM_OK) {
        adm_error_prefix("%s: ", path);
        rc = adm_cli_fail();
        goto done;
    }
    if (adm_capture_reference(cap)) reference_scale(adm_capture_reference(cap), &r.value, &rms_ref, &rms_round);
    scale = resolve >= 0 ? resolve : fmax(rms_ref, rms_round);
    if (adm_oracle_refine(o, op, &p, in, &r, scale) != ADM_OK) {
        adm_error_prefix("%s: ", path);
        rc = adm_cli_fail();
        goto done;
    }
    printf("capture        %s\n", adm_cli_text(path));
    printf("op             %s %s\n", adm_cli_text(adm_capture_op(cap)), adm_cli_text(adm_capture_params(cap)));
    printf("output         %s fp64, certified bound per element\n",
           adm_shape_str(r.value.ndim, r.value.shape, shape, sizeof shape));
    if (adm_capture_reference(cap))
        printf("reference      RMS error %.4g (correctly rounded %s: %.4g)\n", rms_ref,
               adm_dtype_name(adm_capture_reference(cap)->dtype), rms_round);
    printf("resolve scale  %.4g%s\n", scale, resolve >= 0 ? " (given)" : (scale > 0 ? "" : " (none: no reference)"));
    printf("max bound      %.4g", r.max_bound);
    if (scale > 0) printf("  (%.3g of the scale; required <= %g)", r.max_bound / scale, cfg.sharpness);
    printf("\nMPFR refined   %lld element(s) at %d bits\n", (long long)r.mpfr_refined, cfg.mpfr_bits);
    printf("evaluated on   %s\n", r.on_gpu ? "the GPU (cuBLAS DGEMM and CUDA kernels)" : "the CPU (OpenBLAS DGEMM)");
    printf("bounds         %s\n", r.assumption ? r.assumption : "proven (IEEE arithmetic, exact GMP sums, MPFR)");
    if (out) {
        if (adm_capture_set_certified_oracle(cap, &r.value, &r.bound) != ADM_OK ||
            /* no filter: the fp64 value and bound compress about 1.2:1
             * with gzip (and shuffle) at six times the time of writing them
             * plain, which runs at the disk's speed
             * (bench/results/2026-12-02-cpu-lean.md) */
            adm_capture_write(cap, out, 0) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
        printf("wrote          %s\n", adm_cli_text(out));
    }
done:
    adm_oracle_result_free(&r);
    adm_oracle_free(o);
    adm_capture_free(cap);
    return rc;
}
