/* admit-kernel capture: synth, inspect, validate. */
#include "cli.h"
#include "adm_oracle.h"
#include "adm_candidates.h"

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
    "  --with-outputs          linear ops: add the eager reference output and emulated\n"
    "                          candidates (fused_epilogue, splitk4, bf16_accum, fp8_operand,\n"
    "                          truncate) and special cases (nan_row, empty), for replay\n";

/* Matches "--name VALUE" or "--name=VALUE"; advances *i past the value. */
static int opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') { *value = argv[*i] + n + 1; return 1; }
    if (argv[*i][n] != '\0') return 0;
    if (*i + 1 >= argc) { *value = NULL; return 1; }
    *value = argv[++*i];
    return 1;
}

/* The eager reference and a set of emulated candidates on x, and on two
 * special cases: a row of NaN and an empty input (M = 0). */
static adm_status add_emulated_outputs(adm_capture *cap, const adm_tensor *x, const adm_tensor *w,
                                       const adm_tensor *bias, adm_gelu_kind gelu)
{
    static const char *names[] = {"fused_epilogue", "splitk4", "bf16_accum", "fp8_operand", "truncate"};
    adm_gemm_emu ref, e[5];
    adm_tensor out, nanx, empty;
    int64_t K = x->shape[1], ns[2] = {2, K}, es[2] = {0, K};
    int idx;
    adm_status st;
    adm_gemm_emu_reference(&ref);
    ref.gelu = gelu;
    for (int k = 0; k < 5; k++) e[k] = ref;
    e[0].bias_in_accumulator = 1;
    e[0].gelu_fused = 1;
    e[1].splitk = 4;
    e[2].accumulator = ADM_BF16;
    e[3].operand = ADM_E4M3;
    e[4].out_round = ADM_RTZ;
    ADM_TRY(adm_emu_gemm(x, w, bias, &ref, &out));
    st = adm_capture_set_reference(cap, &out);
    adm_tensor_free(&out);
    ADM_TRY(st);
    for (int k = 0; k < 5; k++) {
        ADM_TRY(adm_emu_gemm(x, w, bias, &e[k], &out));
        st = adm_capture_add_candidate(cap, names[k], &out);
        adm_tensor_free(&out);
        ADM_TRY(st);
    }
    /* special cases: the first two rows of x, the second all NaN; and M = 0 */
    ADM_TRY(adm_tensor_alloc(&nanx, x->dtype, 2, ns));
    for (int64_t k = 0; k < K; k++) {
        adm_tensor_set_bits(&nanx, k, adm_tensor_bits(x, k));
        adm_tensor_set_bits(&nanx, K + k, adm_format_get(x->dtype)->nan_bits);
    }
    ADM_TRY(adm_tensor_alloc(&empty, x->dtype, 2, es));
    for (int c = 0; c < 2; c++) {
        const adm_tensor *in = c == 0 ? &nanx : &empty;
        ADM_TRY(adm_capture_add_special(cap, c == 0 ? "nan_row" : "empty", &idx));
        ADM_TRY(adm_capture_special_add_input(cap, idx, "x", in));
        ADM_TRY(adm_capture_special_add_input(cap, idx, "w", w));
        ADM_TRY(adm_capture_special_add_input(cap, idx, "bias", bias));
        ADM_TRY(adm_emu_gemm(in, w, bias, &ref, &out));
        st = adm_capture_special_set_reference(cap, idx, &out);
        adm_tensor_free(&out);
        ADM_TRY(st);
        for (int k = 0; k < 5; k++) {
            ADM_TRY(adm_emu_gemm(in, w, bias, &e[k], &out));
            st = adm_capture_special_add_candidate(cap, idx, names[k], &out);
            adm_tensor_free(&out);
            ADM_TRY(st);
        }
    }
    adm_tensor_free(&nanx);
    adm_tensor_free(&empty);
    return ADM_OK;
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
    int rc = ADM_EXIT_OK, linear, with_outputs = 0;

    adm_synth_config_default(&cfg);
    tokens = cfg.tokens;
    channels = cfg.channels;
    memset(&x, 0, sizeof x);
    memset(&w, 0, sizeof w);
    memset(&bias, 0, sizeof bias);
    for (int i = 0; i < argc; i++) {
        v = NULL;
        if (!strcmp(argv[i], "--with-outputs")) { with_outputs = 1; continue; }
        /* every other synth option takes a value */
        if (argv[i][0] == '-' && !strchr(argv[i], '=') && i + 1 >= argc)
            return adm_cli_usage_error("capture synth: option '%s' needs a value", argv[i]);
        if (opt(argc, argv, &i, "-o", &v) || opt(argc, argv, &i, "--output", &v)) out = v;
        else if (opt(argc, argv, &i, "--op", &v)) op_name = v;
        else if (opt(argc, argv, &i, "--params", &v)) params = v;
        else if (opt(argc, argv, &i, "--dtype", &v)) dtype = v;
        else if (opt(argc, argv, &i, "--model", &v)) model = v;
        else if (opt(argc, argv, &i, "--layer", &v)) layer = v;
        else if (opt(argc, argv, &i, "--seed", &v)) {
            if (!adm_cli_parse_i64(v, 0, INT64_MAX, &seed)) return adm_cli_usage_error("--seed: expected an integer >= 0, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--tokens", &v)) {
            if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 24, &tokens)) return adm_cli_usage_error("--tokens: expected 1 to 2^24, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--channels", &v)) {
            if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 20, &channels)) return adm_cli_usage_error("--channels: expected 1 to 2^20, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--out-features", &v)) {
            if (!adm_cli_parse_i64(v, 1, (int64_t)1 << 20, &out_features)) return adm_cli_usage_error("--out-features: expected 1 to 2^20, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--step", &v)) {
            if (!adm_cli_parse_i64(v, 0, INT64_MAX, &step)) return adm_cli_usage_error("--step: expected an integer >= 0, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--gzip", &v)) {
            if (!adm_cli_parse_i64(v, 0, 9, &gzip)) return adm_cli_usage_error("--gzip: expected 0 to 9, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--max-over-p99", &v)) {
            if (!adm_cli_parse_f64(v, &cfg.target_max_over_p99)) return adm_cli_usage_error("--max-over-p99: expected a number, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--outlier-fraction", &v)) {
            if (!adm_cli_parse_f64(v, &cfg.outlier_fraction)) return adm_cli_usage_error("--outlier-fraction: expected a number, got '%s'", v ? v : "");
        } else if (opt(argc, argv, &i, "--token-sigma", &v)) {
            if (!adm_cli_parse_f64(v, &cfg.token_scale_sigma)) return adm_cli_usage_error("--token-sigma: expected a number, got '%s'", v ? v : "");
        } else return adm_cli_usage_error("capture synth: unknown option '%s'", argv[i]);
        if (!v) return adm_cli_usage_error("capture synth: option '%s' needs a value", argv[i]);
    }
    if (!out) return adm_cli_usage_error("capture synth: -o FILE is required");
    if (!(op = adm_op_find(op_name))) return adm_cli_usage_error("capture synth: op '%s' is not in the catalog", op_name);
    if (!params) params = strstr(op_name, "gelu") ? "{\"approximate\":\"tanh\"}" : "{}";
    if (adm_op_params_parse(op, params, &p) != ADM_OK) return adm_cli_fail();
    linear = strcmp(op_name, "linear") == 0 || strcmp(op_name, "linear+gelu") == 0;
    if (!linear && adm_op_input_count(op) - 1 != 0) {
        int need = 0;
        for (int i = 1; i < adm_op_input_count(op); i++) need |= !adm_op_input_optional(op, i);
        if (need) return adm_cli_usage_error("capture synth: op '%s' needs more than one input; synth makes "
                                             "linear, linear+gelu and one-input ops", op_name);
    }
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
    if (adm_capture_set_provenance(cap, model, layer, step, source) != ADM_OK ||
        adm_capture_add_input(cap, "x", &x) != ADM_OK) { rc = adm_cli_fail(); goto done; }
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
    }
    if (with_outputs) {
        if (!linear) { rc = adm_cli_usage_error("capture synth: --with-outputs needs op linear or linear+gelu"); goto done; }
        if (add_emulated_outputs(cap, &x, &w, &bias, strcmp(op_name, "linear+gelu") == 0 ? (p.gelu_tanh ? ADM_GELU_TANH : ADM_GELU_ERF)
                                                                                       : ADM_GELU_NONE) != ADM_OK) {
            rc = adm_cli_fail();
            goto done;
        }
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
        printf("  %-28s %-9s %-16s (statistics: %s)\n", name, adm_dtype_name(t->dtype), shape, adm_error_message());
        return;
    }
    printf("  %-28s %-9s %-16s %11.4g %11.4g %11.4g %8.2f %8lld %6lld %6lld\n", name, adm_dtype_name(t->dtype),
           shape, s.min, s.max, s.p99_abs, s.max_over_p99, (long long)s.nan_count, (long long)s.posinf_count,
           (long long)s.neginf_count);
}

static int inspect(int argc, char **argv)
{
    adm_capture *c;
    char name[400];
    if (argc != 1) return adm_cli_usage_error("capture inspect: expected one FILE");
    if (adm_capture_read(argv[0], &c) != ADM_OK) return adm_cli_fail();
    printf("file     %s\n", argv[0]);
    printf("format   %s v%d\n", ADM_CAPTURE_MAGIC, adm_capture_version(c));
    printf("op       %s %s%s\n", adm_capture_op(c), adm_capture_params(c),
           adm_op_find(adm_capture_op(c)) ? "" : "  (not in the catalog: user oracle)");
    printf("model    %s\n", *adm_capture_model(c) ? adm_capture_model(c) : "-");
    printf("layer    %s\n", *adm_capture_layer(c) ? adm_capture_layer(c) : "-");
    if (adm_capture_step(c) >= 0) printf("step     %lld\n", (long long)adm_capture_step(c));
    else printf("step     -\n");
    printf("source   %s\n", *adm_capture_source(c) ? adm_capture_source(c) : "-");
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
    int rc = ADM_EXIT_OK;
    if (argc < 1) return adm_cli_usage_error("capture validate: expected at least one FILE");
    for (int i = 0; i < argc; i++) {
        adm_capture *c;
        if (adm_capture_read(argv[i], &c) != ADM_OK) { rc = adm_cli_fail(); continue; }
        if (adm_capture_validate(c) != ADM_OK) rc = adm_cli_fail();
        else
            printf("%s: valid %s v%d, op %s, %d input(s), %s, %d candidate(s), %d special case(s)%s\n",
                   argv[i], ADM_CAPTURE_MAGIC, adm_capture_version(c), adm_capture_op(c),
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
