/* candidates/adm_libm.h against this machine's libm: the port of glibc's
 * expf (both of its x86-64 builds), tanhf, erff and expm1f that the CUDA
 * twins compute with must give the libm's bits, since the CPU emulations
 * call the libm. A dense sample (every 4093rd fp32 encoding, ~1M inputs)
 * plus the inputs where the branches of the algorithms change and those
 * where the two builds of expf differ; all 2^32 inputs with
 * ADM_LIBM_EXHAUSTIVE=1 (OpenMP; about 5 CPU-minutes). */
#include "adm_libm.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fn_result { unsigned long long inputs, differ; uint32_t first_bad; } fn_result;

enum { F_EXPF, F_TANHF, F_ERFF, F_EXPM1F, F_COUNT };
static const char *fn_names[F_COUNT] = {"expf", "tanhf", "erff", "expm1f"};

static float libm_fn(int f, float x)
{
    volatile float v = x; /* a call, not a constant the compiler folds */
    switch (f) {
    case F_EXPF: return expf(v);
    case F_TANHF: return tanhf(v);
    case F_ERFF: return erff(v);
    default: return expm1f(v);
    }
}

static float port_fn(int f, float x, int variant)
{
    switch (f) {
    case F_EXPF: return adm_lm_expf(x, variant);
    case F_TANHF: return adm_lm_tanhf(x);
    case F_ERFF: return adm_lm_erff(x, variant);
    default: return adm_lm_expm1f(x);
    }
}

/* bits equal; a NaN for a NaN (payloads are not the algorithms') */
static int same(float a, float b) { return adm_lm_bits(a) == adm_lm_bits(b) || (a != a && b != b); }

static void check_one(int f, uint32_t u, int variant, fn_result *r)
{
    float x = adm_lm_float(u);
    r->inputs++;
    if (!same(libm_fn(f, x), port_fn(f, x, variant))) {
        r->differ++;
        if (u < r->first_bad) r->first_bad = u;
    }
}

/* The thresholds of the algorithms' branches, and their neighbours. */
static const uint32_t edges[] = {
    0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x04000000u, 0x24000000u, 0x31800000u, 0x32800000u,
    0x33000000u, 0x3eb17218u, 0x3f580000u, 0x3f800000u, 0x3f851592u, 0x3fa00000u, 0x4036db6eu, 0x40c00000u,
    0x4195b844u, 0x41b00000u, 0x42b00000u, 0x42b17180u, 0x42b17218u, 0x42cff1b4u, 0x42ce8ed0u, 0x7f7fffffu,
    0x7f800000u, 0x7fc00000u, 0x7f800001u};

START_TEST(test_port)
{
    static const uint32_t split[] = ADM_LM_EXPF_SPLIT_INPUTS;
    const char *ex = getenv("ADM_LIBM_EXHAUSTIVE");
    int exhaustive = ex && !strcmp(ex, "1"), variant = adm_lm_host_variant();
    const uint64_t step = exhaustive ? 1 : 4093, n = ((1ull << 32) + step - 1) / step;
    ck_assert_msg(variant >= 0, "this libm's expf is neither of glibc 2.36's x86-64 builds on the inputs where "
                  "they differ: the CUDA twins' transcendentals cannot match the emulations here");
    printf("libm: expf is glibc's %s build here\n", variant == ADM_LM_FMA ? "FMA" : "SSE2");
    /* the inputs that tell the builds apart do */
    for (size_t k = 0; k < sizeof split / sizeof split[0]; k++)
        ck_assert_msg(!same(adm_lm_expf(adm_lm_float(split[k]), ADM_LM_FMA),
                            adm_lm_expf(adm_lm_float(split[k]), ADM_LM_SSE2)),
                      "expf's builds agree on 0x%08x, listed as telling them apart", split[k]);
    for (int f = 0; f < F_COUNT; f++) {
        fn_result r = {0, 0, 0xffffffffu};
        unsigned long long differ = 0;
        uint32_t first = 0xffffffffu;
#pragma omp parallel for schedule(static, 1 << 16) reduction(+ : differ) reduction(min : first)
        for (uint64_t k = 0; k < n; k++) {
            uint32_t u = (uint32_t)(k * step);
            float x = adm_lm_float(u);
            if (!same(libm_fn(f, x), port_fn(f, x, variant))) {
                differ++;
                if (u < first) first = u;
            }
        }
        r.inputs = n;
        r.differ = differ;
        r.first_bad = first;
        for (size_t k = 0; k < sizeof edges / sizeof edges[0] + sizeof split / sizeof split[0]; k++)
            for (int d = -2; d <= 2; d++)
                for (int s = 0; s < 2; s++) {
                    uint32_t base = k < sizeof edges / sizeof edges[0] ? edges[k]
                                                                       : split[k - sizeof edges / sizeof edges[0]];
                    check_one(f, (base + (uint32_t)d) ^ (s ? 0x80000000u : 0), variant, &r);
                }
        printf("libm %-6s %llu inputs (%s), %llu differ from the port", fn_names[f], r.inputs,
               exhaustive ? "every fp32 and the branch edges" : "every 4093rd fp32 and the branch edges", r.differ);
        if (r.differ) {
            float x = adm_lm_float(r.first_bad);
            printf(": e.g. x = %a (0x%08x), libm 0x%08x, port 0x%08x", (double)x, r.first_bad,
                   adm_lm_bits(libm_fn(f, x)), adm_lm_bits(port_fn(f, x, variant)));
        }
        printf("\n");
        fflush(stdout);
        ck_assert_msg(r.differ == 0, "%s: %llu inputs where the port differs from this libm", fn_names[f], r.differ);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("libm");
    TCase *tc = tcase_create("Port");
    SRunner *sr;
    int failed;
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, test_port);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
