/* What the gates add to the oracle, side by side in one run: a FLUX.1
 * MLP-sized capture (x 4096 x 3072, w 12288 x 3072, bias, tanh-GELU:
 * 4096 x 12288 outputs) with one candidate. The reference is the
 * correctly rounded oracle and the candidate its truncation (content does
 * not change the cost). Usage: bench_replay [M K N] [reps]. */
#include "adm_capture.h"
#include "adm_harness.h"
#include "adm_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_util.h"


int main(int argc, char **argv)
{
    int64_t M = 4096, K = 3072, N = 12288, ws[2], bs[1];
    int reps = 3;
    adm_synth_config cfg;
    adm_tensor x, w, b, ref, cand;
    const adm_op *op = adm_op_find("linear+gelu");
    adm_op_params p;
    adm_oracle *o;
    adm_oracle_result res;
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {&x, &w, &b};
    double t_or[16], t_judge[16];
    if (argc >= 4) { M = atoll(argv[1]); K = atoll(argv[2]); N = atoll(argv[3]); }
    if (argc >= 5) reps = atoi(argv[4]);
    if (reps < 1 || reps > 16) return 2;
    ws[0] = N; ws[1] = K; bs[0] = N;
    adm_synth_config_default(&cfg);
    cfg.tokens = M;
    cfg.channels = K;
    if (adm_synth_activations(&cfg, &x) || adm_synth_gaussian(1, 1.0 / sqrt((double)K), ADM_BF16, 2, ws, &w) ||
        adm_synth_gaussian(2, 0.02, ADM_BF16, 1, bs, &b)) {
        fprintf(stderr, "bench_replay: %s\n", adm_error_message());
        return 2;
    }
    adm_op_params_parse(op, "{\"approximate\":\"tanh\"}", &p);
    adm_oracle_create(NULL, &o);
    for (int r = 0; r < reps; r++) {
        adm_judge_input ji;
        adm_verdict v;
        double t0 = bench_now();
        if (adm_oracle_eval(o, op, &p, in, &res) != ADM_OK) { fprintf(stderr, "%s\n", adm_error_message()); return 2; }
        t_or[r] = bench_now() - t0;
        if (r == 0) {
            adm_tensor_from_f64(&ref, ADM_BF16, 2, res.value.shape, res.value.data, ADM_RNE, 0);
            adm_tensor_from_f64(&cand, ADM_BF16, 2, res.value.shape, res.value.data, ADM_RTZ, 0);
        }
        memset(&ji, 0, sizeof ji);
        ji.oracle = &res.value;
        ji.bound = &res.bound;
        ji.cond = &res.cond;
        ji.oracle_certified = 1;
        ji.ref = &ref;
        ji.cand = &cand;
        ji.n_views = -1;
        t0 = bench_now();
        if (adm_judge(&ji, NULL, &v) != ADM_OK) { fprintf(stderr, "%s\\n", adm_error_message()); return 2; }
        t_judge[r] = bench_now() - t0;
        if (r == 0) printf("verdict %s (rms %.3gx)\n", adm_tier_name(v.tier), v.rms_ratio);
        adm_oracle_result_free(&res);
    }
    double med_or = bench_median(t_or, reps), med_judge = bench_median(t_judge, reps);
    printf("outputs %lld x %lld, %d reps (median)\n", (long long)M, (long long)N, reps);
    printf("oracle (value, bound, cond) %.3f s\n", med_or);
    printf("gates 1-7 and the verdict   %.3f s\n", med_judge);
    printf("gates / oracle              %.3f\n", med_judge / med_or);
    adm_tensor_free(&x);
    adm_tensor_free(&w);
    adm_tensor_free(&b);
    adm_tensor_free(&ref);
    adm_tensor_free(&cand);
    adm_oracle_free(o);
    return 0;
}
