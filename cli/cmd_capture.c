/* admit-kernel capture: synth, inspect, validate. */
#include "cli.h"
#include "adm_oracle.h"
#include "adm_candidates.h"
#include "adm_cuda.h"
#include "adm_harness.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char capture_usage[] =
    "usage: admit-kernel capture synth -o FILE [options]\n"
    "       admit-kernel capture inspect FILE\n"
    "       admit-kernel capture validate FILE...\n"
    "\n"
    "synth options (defaults reproduce the FLUX.1-dev MLP up-projection input):\n"
    "  -o, --output FILE       capture to write (required)\n"
    "  --op OP                 linear+gelu (default), linear, or any one-input op\n"
    "  --params JSON           op parameters (default {\"approximate\":\"tanh\"} for GELU ops)\n"
    "  --seed N                generator seed (default 0)\n"
    "  --tokens M              rows of x (default 4096)\n"
    "  --channels K            columns of x (default 3072)\n"
    "  --out-features N        rows of w for linear ops (default 4*K)\n"
    "  --dtype T               bf16 (default), fp16 or fp32\n"
    "  --max-over-p99 R        outlier calibration target (default 8)\n"
    "  --outlier-fraction F    fraction of outlier channels (default 0.005)\n"
    "  --token-sigma S         log-normal per-token scale (default 0.35)\n"
    "  --model M --layer L --step S   provenance\n"
    "  --gzip N                compression level 0-9 (default 4)\n"
    "  --with-outputs          add the outputs of every registered implementation of the op\n"
    "                          (the reference path as /reference, the others as candidates)\n"
    "                          and special cases (nan_row, empty) on the first 8 rows, for replay\n"
    "  --backend B             whose implementations --with-outputs runs: cpu (default: the CPU\n"
    "                          emulations) or cuda (the GPU kernels: the CUDA twins and cuBLASLt;\n"
    "                          without a usable GPU: exit 2); the first one registered is the reference\n"
    "  --nvfp4-grid            put x (and w) on the NVFP4 grid (e2m1 x e4m3 per 16)\n"
    "other ops: x [tokens, channels] (groupnorm: [1, tokens, channels] channels_last), and\n"
    "the op's other inputs synthesized by role (gates, weights, k and v, modulation)\n";

/* Inputs besides the first, by role, from the seed: gates and modulation
 * vectors small, weights near 1, second activations of the same kind. */
static adm_status synth_rest(adm_capture *cap, const char *op, const adm_op_params *p, const adm_synth_config *cfg,
                             const adm_tensor *x)
{
    int64_t M = cfg->tokens, C = cfg->channels, vec[1] = {C}, row[2] = {1, C}, col[2] = {M, 1};
    uint64_t s = cfg->seed;
    adm_tensor t;
    adm_synth_config c2 = *cfg;
    adm_status st = ADM_OK;
    c2.seed = s ^ 0x5345434f4e440000ull;
#define ADD(name, make)                                                                  \
    do {                                                                                 \
        if ((st = (make)) != ADM_OK) return st;                                          \
        st = adm_capture_add_input(cap, name, &t);                                       \
        adm_tensor_free(&t);                                                             \
        if (st != ADM_OK) return st;                                                     \
    } while (0)
    if (!strcmp(op, "gated_residual")) {
        ADD("g", adm_synth_gaussian(s ^ 0x47, 0.3, cfg->dtype, 2, col, &t));
        ADD("y", adm_synth_activations(&c2, &t));
    } else if (!strcmp(op, "swiglu")) {
        ADD("up", adm_synth_activations(&c2, &t));
    } else if (!strcmp(op, "rmsnorm")) {
        ADD("weight", adm_synth_gaussian(s ^ 0x57, 0.1, cfg->dtype, 1, vec, &t));
        for (int64_t i = 0; i < C; i++) {
            uint64_t b;
            adm_format_encode(cfg->dtype, 1.0 + adm_tensor_get(adm_capture_find_input(cap, "weight"), i), ADM_RNE, 0, &b);
            adm_tensor_set_bits((adm_tensor *)adm_capture_find_input(cap, "weight"), i, b);
        }
    } else if (!strcmp(op, "layernorm")) {
        if (p->modulate) {
            ADD("shift", adm_synth_gaussian(s ^ 0x53, 0.5, cfg->dtype, 2, row, &t));
            ADD("scale", adm_synth_gaussian(s ^ 0x43, 0.5, cfg->dtype, 2, row, &t));
        }
    } else if (!strcmp(op, "groupnorm")) {
        ADD("weight", adm_synth_gaussian(s ^ 0x57, 0.5, cfg->dtype, 1, vec, &t));
        ADD("bias", adm_synth_gaussian(s ^ 0x42, 0.1, cfg->dtype, 1, vec, &t));
    } else if (!strcmp(op, "attention") || !strcmp(op, "linear_attention")) {
        ADD("k", adm_synth_activations(&c2, &t));
        c2.seed ^= 0x56;
        ADD("v", adm_synth_activations(&c2, &t));
    } else if (!strcmp(op, "matmul")) {
        int64_t bs[2] = {C, C};
        ADD("b", adm_synth_gaussian(s ^ 0x42, 1.0 / sqrt((double)C), cfg->dtype, 2, bs, &t));
    }
#undef ADD
    (void)x;
    return st;
}

/* Values on the NVFP4 grid with a unit global scale: per block of 16
 * along the last axis, an e4m3 block scale near amax/6 and e2m1 values;
 * every product is exact in bf16 (2 + 4 significant bits). */
static void nvfp4_grid(adm_tensor *t)
{
    int64_t n = adm_tensor_numel(t);
    for (int64_t b0 = 0; b0 + 16 <= n; b0 += 16) {
        double amax = 0, sb;
        for (int64_t i = b0; i < b0 + 16; i++) amax = fmax(amax, fabs(adm_tensor_get(t, i)));
        sb = adm_format_round(ADM_E4M3, amax / 6.0, ADM_RNE, ADM_CVT_SATFINITE);
        for (int64_t i = b0; i < b0 + 16; i++) {
            double q = sb > 0 ? adm_format_round(ADM_E2M1, adm_tensor_get(t, i) / sb, ADM_RNE, ADM_CVT_SATFINITE) * sb : 0.0;
            uint64_t bits;
            adm_format_encode(t->dtype, q, ADM_RNE, 0, &bits);
            adm_tensor_set_bits(t, i, bits);
        }
    }
}

/* Every registered implementation of the op on the capture's inputs: the
 * first (the reference path) as /reference, the others as candidates;
 * likewise on two special cases built from the first rows of the inputs
 * (adm_harness_probe_inputs): a row of NaN and an empty input (M = 0).
 * A case stores its own first input and the inputs cut with it; the
 * others it leaves to /inputs (version 2, captures/FORMAT.md). */
static adm_status add_registry_outputs(adm_capture *cap, const adm_op *op, const adm_op_params *p,
                                       const char *backend)
{
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {0}, *pin[ADM_OP_MAX_INPUTS];
    adm_tensor out, probe[2], cut[ADM_OP_MAX_INPUTS];
    int idx[2], axis;
    static const int kinds[2] = {1, 7};
    static const char *names[2] = {"nan_row", "empty"};
    adm_status st = ADM_OK;
    memset(probe, 0, sizeof probe);
    for (int i = 0; i < adm_op_input_count(op); i++) in[i] = adm_capture_find_input(cap, adm_op_input_name(op, i));
    ADM_TRY(adm_harness_probe_inputs(op, p, in, cut, pin, &axis));
    for (int c = 0; c < 2 && st == ADM_OK; c++) {
        if ((st = adm_harness_probe(pin[0], kinds[c], &probe[c])) != ADM_OK) break;
        if ((st = adm_capture_add_special(cap, names[c], &idx[c])) != ADM_OK) break;
        for (int i = 0; i < adm_op_input_count(op) && st == ADM_OK; i++)
            if (pin[i] && (i == 0 || pin[i] != in[i]))
                st = adm_capture_special_add_input(cap, idx[c], adm_op_input_name(op, i), i ? pin[i] : &probe[c]);
    }
    int first = 1;
    for (int k = 0; k < adm_impl_count() && st == ADM_OK; k++) {
        const adm_impl *im = adm_impl_at(k);
        /* by default the CPU emulations: what any machine can reproduce */
        if (strcmp(im->op, adm_op_name(op)) != 0 || strcmp(im->backend, backend) != 0) continue;
        if ((st = im->run(im, p, in, &out)) != ADM_OK) break;
        st = first ? adm_capture_set_reference(cap, &out) : adm_capture_add_candidate(cap, im->name, &out);
        adm_tensor_free(&out);
        for (int c = 0; c < 2 && st == ADM_OK; c++) {
            const adm_tensor *cin[ADM_OP_MAX_INPUTS];
            adm_status rs;
            memcpy(cin, pin, sizeof cin);
            cin[0] = &probe[c];
            rs = im->run(im, p, cin, &out);
            if (rs == ADM_OK) {
                st = first ? adm_capture_special_set_reference(cap, idx[c], &out)
                           : adm_capture_special_add_candidate(cap, idx[c], im->name, &out);
                adm_tensor_free(&out);
            } else {
                adm_error_clear();
                if (first) st = adm_capture_special_set_refusal(cap, idx[c], rs);
            }
        }
        first = 0;
    }
    adm_tensor_free(&probe[0]);
    adm_tensor_free(&probe[1]);
    for (int i = 0; i < ADM_OP_MAX_INPUTS; i++) adm_tensor_free(&cut[i]);
    if (st == ADM_OK && first)
        return ADM_FAIL(ADM_ERR_INVALID, "capture synth: --with-outputs: op '%s' has no registered %s implementation",
                        adm_op_name(op), backend);
    return st;
}

static int synth(int argc, char **argv)
{
    adm_synth_config cfg;
    const char *out = NULL, *op_name = "linear+gelu", *params = NULL, *v;
    const char *model = "synthetic", *layer = "", *dtype = "bf16";
    int64_t seed = 0, tokens, channels, out_features = -1, step = -1, gzip = 4;
    const adm_op *op;
    adm_op_params p;
    adm_capture *cap = NULL;
    adm_tensor x, w, bias;
    char source[512];
    int rc = ADM_EXIT_OK, linear, with_outputs = 0, nvfp4 = 0;
    const char *backend = "cpu";

    adm_synth_config_default(&cfg);
    tokens = cfg.tokens;
    channels = cfg.channels;
    memset(&x, 0, sizeof x);
    memset(&w, 0, sizeof w);
    memset(&bias, 0, sizeof bias);
    {
        enum { O_OP = 256, O_PARAMS, O_DTYPE, O_MODEL, O_LAYER, O_SEED, O_TOKENS, O_CHANNELS, O_OUTF, O_STEP, O_GZIP,
               O_MOP99, O_OFRAC, O_TSIGMA, O_WITH, O_NVFP4, O_BACKEND };
        static const struct option lo[] = {
            {"output", required_argument, 0, 'o'},         {"op", required_argument, 0, O_OP},
            {"params", required_argument, 0, O_PARAMS},    {"dtype", required_argument, 0, O_DTYPE},
            {"model", required_argument, 0, O_MODEL},      {"layer", required_argument, 0, O_LAYER},
            {"seed", required_argument, 0, O_SEED},        {"tokens", required_argument, 0, O_TOKENS},
            {"channels", required_argument, 0, O_CHANNELS}, {"out-features", required_argument, 0, O_OUTF},
            {"step", required_argument, 0, O_STEP},        {"gzip", required_argument, 0, O_GZIP},
            {"max-over-p99", required_argument, 0, O_MOP99}, {"outlier-fraction", required_argument, 0, O_OFRAC},
            {"token-sigma", required_argument, 0, O_TSIGMA}, {"with-outputs", no_argument, 0, O_WITH},
            {"nvfp4-grid", no_argument, 0, O_NVFP4},       {"help", no_argument, 0, 'h'},
            {"backend", required_argument, 0, O_BACKEND},
            {0, 0, 0, 0}};
        int ch, first = argc;
        while ((ch = adm_cli_getopt_short(argc, argv, "capture synth", "ho:", lo, &v, &first)) != -1) {
            switch (ch) {
            case -2: return ADM_EXIT_INPUT;
            case 'h': fputs(capture_usage, stdout); return ADM_EXIT_OK;
            case O_WITH: with_outputs = 1; break;
            case O_NVFP4: nvfp4 = 1; break;
            case O_BACKEND:
                if (strcmp(v, "cpu") && strcmp(v, "cuda"))
                    return adm_cli_usage_error("capture synth: --backend: expected cpu or cuda, got '%s'", v);
                backend = v;
                break;
            case 'o': out = v; break;
            case O_OP: op_name = v; break;
            case O_PARAMS: params = v; break;
            case O_DTYPE: dtype = v; break;
            case O_MODEL: model = v; break;
            case O_LAYER: layer = v; break;
            case O_SEED:
                if (!adm_cli_parse_i64(v, 0, INT64_MAX, &seed)) return adm_cli_usage_error("--seed: expected an integer >= 0, got '%s'", v);
                break;
            case O_TOKENS:
                if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 24, &tokens)) return adm_cli_usage_error("--tokens: expected 1 to 2^24, got '%s'", v);
                break;
            case O_CHANNELS:
                if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 20, &channels)) return adm_cli_usage_error("--channels: expected 1 to 2^20, got '%s'", v);
                break;
            case O_OUTF:
                if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 20, &out_features)) return adm_cli_usage_error("--out-features: expected 1 to 2^20, got '%s'", v);
                break;
            case O_STEP:
                if (!adm_cli_parse_i64(v, 0, INT64_MAX, &step)) return adm_cli_usage_error("--step: expected an integer >= 0, got '%s'", v);
                break;
            case O_GZIP:
                if (!adm_cli_parse_i64(v, 0, 9, &gzip)) return adm_cli_usage_error("--gzip: expected 0 to 9, got '%s'", v);
                break;
            case O_MOP99:
                if (!adm_cli_parse_f64(v, &cfg.target_max_over_p99)) return adm_cli_usage_error("--max-over-p99: expected a number, got '%s'", v);
                break;
            case O_OFRAC:
                if (!adm_cli_parse_f64(v, &cfg.outlier_fraction)) return adm_cli_usage_error("--outlier-fraction: expected a number, got '%s'", v);
                break;
            case O_TSIGMA:
                if (!adm_cli_parse_f64(v, &cfg.token_scale_sigma)) return adm_cli_usage_error("--token-sigma: expected a number, got '%s'", v);
                break;
            default: return adm_cli_usage_error("capture synth: unknown option");
            }
        }
        if (first < argc) return adm_cli_usage_error("capture synth: unexpected argument '%s'", argv[first]);
    }
    if (!out) return adm_cli_usage_error("capture synth: -o FILE is required");
    if (!(op = adm_op_find(op_name))) return adm_cli_usage_error("capture synth: op '%s' is not in the catalog", op_name);
    if (!params) params = strstr(op_name, "gelu") ? "{\"approximate\":\"tanh\"}" : "{}";
    if (adm_op_params_parse(op, params, &p) != ADM_OK) return adm_cli_fail();
    linear = strcmp(op_name, "linear") == 0 || strcmp(op_name, "linear+gelu") == 0;
    if (adm_dtype_from_name(dtype, &cfg.dtype) != ADM_OK) return adm_cli_fail();
    if (cfg.dtype != ADM_BF16 && cfg.dtype != ADM_FP16 && cfg.dtype != ADM_FP32)
        return adm_cli_usage_error("capture synth: --dtype must be bf16, fp16 or fp32");
    cfg.seed = (uint64_t)seed;
    cfg.tokens = tokens;
    cfg.channels = channels;
    if (out_features < 0) out_features = 4 * channels;

    if (adm_synth_activations(&cfg, &x) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    if (adm_capture_create(op_name, params, &cap) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    snprintf(source, sizeof source, "admit-kernel %s capture synth --seed %lld --tokens %lld --channels %lld "
             "--out-features %lld --max-over-p99 %g --outlier-fraction %g --token-sigma %g",
             ADM_VERSION_STRING, (long long)seed, (long long)tokens, (long long)channels,
             (long long)out_features, cfg.target_max_over_p99, cfg.outlier_fraction, cfg.token_scale_sigma);
    if (nvfp4) nvfp4_grid(&x);
    if (!strcmp(op_name, "groupnorm")) {
        /* [1, tokens, channels] channels_last, or its [1, channels, tokens] transpose */
        int64_t s3[3] = {1, tokens, channels};
        adm_tensor x3, xt;
        if (adm_tensor_wrap(&x3, x.dtype, 3, s3, NULL, 0, x.data, tokens * channels) != ADM_OK ||
            (p.channels_last ? adm_tensor_contiguous(&x3, &xt) : (adm_tensor_transpose(&x3, 1, 2, &xt) == ADM_OK
                                                                ? adm_tensor_contiguous(&xt, &xt) : ADM_ERR_SHAPE)) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
        adm_tensor_free(&x);
        x = xt;
    }
    if (adm_capture_set_provenance(cap, model, layer, step, source) != ADM_OK ||
        adm_capture_add_input(cap, adm_op_input_name(op, 0), &x) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    if (!linear && synth_rest(cap, op_name, &p, &cfg, &x) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    if (linear) {
        int64_t ws[2] = {out_features, channels}, bs[1] = {out_features};
        /* Independent streams for x, w and bias from one seed. */
        if (adm_synth_gaussian((uint64_t)seed ^ 0x5745494748545321ull, 1.0 / sqrt((double)channels),
                               cfg.dtype, 2, ws, &w) != ADM_OK ||
            adm_synth_gaussian((uint64_t)seed ^ 0x4249415321212121ull, 0.02, cfg.dtype, 1, bs, &bias) != ADM_OK ||
            adm_capture_add_input(cap, "w", &w) != ADM_OK || adm_capture_add_input(cap, "bias", &bias) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
        if (nvfp4) nvfp4_grid((adm_tensor *)adm_capture_find_input(cap, "w"));
    }
    if (with_outputs) {
        if (!adm_impl_reference(op_name)) {
            rc = adm_cli_usage_error("capture synth: --with-outputs: op '%s' has no registered implementation", op_name);
            goto done;
        }
        if (!strcmp(backend, "cuda")) {
            /* asked for the GPU: none is a refusal, not a quiet run on the CPU */
            int ndev = 0;
            if (adm_cuda_device_count(&ndev) != ADM_OK) {
                rc = adm_cli_usage_error("capture synth: --backend cuda: %s", adm_error_message());
                goto done;
            }
        }
        if (add_registry_outputs(cap, op, &p, backend) != ADM_OK) { rc = adm_cli_fail(); goto done; }
    }
    if (adm_capture_validate(cap) != ADM_OK || adm_capture_write(cap, out, (int)gzip) != ADM_OK) {
        rc = adm_cli_fail();
        goto done;
    }
    printf("wrote %s: %s, x %lldx%lld %s\n", out, op_name, (long long)tokens, (long long)channels, dtype);
done:
    adm_capture_free(cap);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&bias);
    return rc;
}

static void print_tensor_row(const char *name, const adm_tensor *t)
{
    adm_tensor_stats s;
    char shape[160];
    adm_shape_str(t->ndim, t->shape, shape, sizeof shape);
    if (adm_tensor_stats_compute(t, &s) != ADM_OK) {
        printf("  %-28s %-9s %-16s (statistics: %s)\n", adm_cli_text(name), adm_dtype_name(t->dtype), shape,
               adm_error_message());
        return;
    }
    printf("  %-28s %-9s %-16s %11.4g %11.4g %11.4g %8.2f %8lld %6lld %6lld\n", adm_cli_text(name), adm_dtype_name(t->dtype),
           shape, s.min, s.max, s.p99_abs, s.max_over_p99, (long long)s.nan_count, (long long)s.posinf_count,
           (long long)s.neginf_count);
}

static const char inspect_usage[] =
    "usage: admit-kernel capture inspect FILE\n"
    "\n"
    "Prints the capture's op, parameters and provenance, and per tensor its dtype,\n"
    "shape, min, max, p99 of |x|, max/p99 and the counts of NaN and +-Inf.\n"
    "The file is read by a sandboxed child process (RELIABILITY.md).\n";

static const char validate_usage[] =
    "usage: admit-kernel capture validate FILE...\n"
    "\n"
    "Checks each capture against the format (captures/FORMAT.md) and the op\n"
    "catalog, and prints one line per valid file. Exit 2 when any is not valid,\n"
    "with one line naming the file, the dataset or attribute, and why.\n";

/* The operands of inspect and validate: after -h/--help (exit 0 with *first
 * = -1) and `--`; -2 after a usage error. */
static int files_only(int argc, char **argv, const char *cmd, const char *help, int *first)
{
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *v;
    int ch;
    *first = argc;
    while ((ch = adm_cli_getopt(argc, argv, cmd, lo, &v, first)) != -1) {
        if (ch == 'h') {
            fputs(help, stdout);
            *first = -1;
            return ADM_EXIT_OK;
        }
        if (ch == -2) return ADM_EXIT_INPUT;
        return adm_cli_usage_error("%s: unknown option", cmd);
    }
    return ADM_EXIT_OK;
}

static int inspect(int argc, char **argv)
{
    adm_capture *c;
    char name[400];
    int first, rc = files_only(argc, argv, "capture inspect", inspect_usage, &first);
    if (rc != ADM_EXIT_OK || first < 0) return rc;
    argc -= first;
    argv += first;
    if (argc != 1) return adm_cli_usage_error("capture inspect: expected one FILE");
    if (adm_capture_read_sandboxed(argv[0], NULL, &c) != ADM_OK) return adm_cli_fail();
    printf("file     %s\n", adm_cli_text(argv[0]));
    printf("format   %s v%d\n", ADM_CAPTURE_MAGIC, adm_capture_version(c));
    printf("op       %s %s%s\n", adm_cli_text(adm_capture_op(c)), adm_cli_text(adm_capture_params(c)),
           adm_op_find(adm_capture_op(c)) ? "" : "  (not in the catalog: user oracle)");
    printf("model    %s\n", *adm_capture_model(c) ? adm_cli_text(adm_capture_model(c)) : "-");
    printf("layer    %s\n", *adm_capture_layer(c) ? adm_cli_text(adm_capture_layer(c)) : "-");
    if (adm_capture_step(c) >= 0) printf("step     %lld\n", (long long)adm_capture_step(c));
    else printf("step     -\n");
    printf("source   %s\n", *adm_capture_source(c) ? adm_cli_text(adm_capture_source(c)) : "-");
    printf("\n  %-28s %-9s %-16s %11s %11s %11s %8s %8s %6s %6s\n", "tensor", "dtype", "shape", "min", "max",
           "p99|x|", "max/p99", "NaN", "+Inf", "-Inf");
    for (int i = 0; i < adm_capture_input_count(c); i++) {
        adm_named_tensor t = adm_capture_input(c, i);
        snprintf(name, sizeof name, "inputs/%s", t.name);
        print_tensor_row(name, t.tensor);
    }
    if (adm_capture_reference(c)) print_tensor_row("reference", adm_capture_reference(c));
    for (int i = 0; i < adm_capture_candidate_count(c); i++) {
        adm_named_tensor t = adm_capture_candidate(c, i);
        snprintf(name, sizeof name, "candidates/%s", t.name);
        print_tensor_row(name, t.tensor);
    }
    if (adm_capture_oracle(c))
        print_tensor_row(adm_capture_oracle_certified(c) ? "oracle (admit, certified)" : "oracle (user, uncertified)",
                         adm_capture_oracle(c));
    if (adm_capture_oracle_bound(c)) print_tensor_row("oracle_bound", adm_capture_oracle_bound(c));
    for (int i = 0; i < adm_capture_special_count(c); i++) {
        const char *sn = adm_capture_special_name(c, i);
        for (int j = 0; j < adm_capture_special_input_count(c, i); j++) {
            adm_named_tensor t = adm_capture_special_input(c, i, j);
            snprintf(name, sizeof name, "special/%s/inputs/%s", sn, t.name);
            print_tensor_row(name, t.tensor);
        }
        if (adm_capture_special_reference(c, i)) {
            snprintf(name, sizeof name, "special/%s/reference", sn);
            print_tensor_row(name, adm_capture_special_reference(c, i));
        } else if (adm_capture_special_refusal(c, i) != ADM_OK) {
            printf("  special/%s/reference refused: %s\n", sn, adm_status_name(adm_capture_special_refusal(c, i)));
        }
        for (int j = 0; j < adm_capture_special_candidate_count(c, i); j++) {
            adm_named_tensor t = adm_capture_special_candidate(c, i, j);
            snprintf(name, sizeof name, "special/%s/candidates/%s", sn, t.name);
            print_tensor_row(name, t.tensor);
        }
    }
    adm_capture_free(c);
    return ADM_EXIT_OK;
}

static int validate(int argc, char **argv)
{
    int first, rc = files_only(argc, argv, "capture validate", validate_usage, &first);
    if (rc != ADM_EXIT_OK || first < 0) return rc;
    argc -= first;
    argv += first;
    if (argc < 1) return adm_cli_usage_error("capture validate: expected at least one FILE");
    for (int i = 0; i < argc; i++) {
        adm_capture *c;
        if (adm_capture_read_sandboxed(argv[i], NULL, &c) != ADM_OK) { rc = adm_cli_fail(); continue; }
        if (adm_capture_validate(c) != ADM_OK) rc = adm_cli_fail();
        else
            printf("%s: valid %s v%d, op %s, %d input(s), %s, %d candidate(s), %d special case(s)%s\n",
                   adm_cli_text(argv[i]), ADM_CAPTURE_MAGIC, adm_capture_version(c), adm_cli_text(adm_capture_op(c)),
                   adm_capture_input_count(c), adm_capture_reference(c) ? "reference" : "no reference",
                   adm_capture_candidate_count(c), adm_capture_special_count(c),
                   adm_capture_oracle(c) ? ", user oracle" : "");
        adm_capture_free(c);
    }
    return rc;
}

int adm_cmd_capture(int argc, char **argv)
{
    if (argc < 1) { fputs(capture_usage, stderr); return ADM_EXIT_INPUT; }
    if (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) { fputs(capture_usage, stdout); return ADM_EXIT_OK; }
    if (strcmp(argv[0], "synth") == 0) return synth(argc - 1, argv + 1);
    if (strcmp(argv[0], "inspect") == 0) return inspect(argc - 1, argv + 1);
    if (strcmp(argv[0], "validate") == 0) return validate(argc - 1, argv + 1);
    fputs(capture_usage, stderr);
    return adm_cli_usage_error("capture: unknown subcommand '%s'", argv[0]);
}
