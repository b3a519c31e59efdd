/* The environment's limits (core/env.c), through the library as a runtime
 * calls it, without the CLI's checks.
 *
 * Env: every ADM_* numeric variable parsed strictly in its range; the
 * library's entry points refuse an invalid one naming it (the capture
 * reader, the oracle, a measurement) rather than replace it. */
#include "adm_capture.h"
#include "adm_core.h"
#include "adm_env.h"
#include "adm_harness.h"
#include "adm_oracle.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

static const char *const all_vars[] = {"ADM_SANDBOX_MEMORY", "ADM_SANDBOX_CPU", "ADM_SANDBOX_TIMEOUT",
                                       "ADM_PLUGIN_MEMORY", "ADM_PLUGIN_CPU", "ADM_PLUGIN_TIMEOUT",
                                       "ADM_CAPTURE_MAX_BYTES", "ADM_MPFR_BUDGET", "ADM_SANDBOX",
                                       "ADM_PLUGIN_SANDBOX"};

static void clean_env(void)
{
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++) unsetenv(all_vars[i]);
    adm_error_clear();
}

/* the value, or -1 with the message checked to name the variable */
static int64_t parsed(const char *name, const char *value)
{
    int64_t v;
    setenv(name, value, 1);
    if (adm_env_i64(name, 7, &v) != ADM_OK) {
        ck_assert_msg(strstr(adm_error_message(), name) && strstr(adm_error_message(), "expected"),
                      "%s=%s: %s", name, value, adm_error_message());
        ck_assert_int_eq(v, 7);
        v = -1;
    }
    unsetenv(name);
    return v;
}

START_TEST(test_parse)
{
    int64_t v;
    clean_env();
    ck_assert_int_eq(adm_env_i64("ADM_SANDBOX_CPU", 5, &v), ADM_OK);
    ck_assert_int_eq(v, 5); /* unset: the default */
    ck_assert_int_eq(parsed("ADM_SANDBOX_CPU", ""), 7);
    ck_assert_int_eq(parsed("ADM_SANDBOX_CPU", "1"), 1);
    ck_assert_int_eq(parsed("ADM_SANDBOX_CPU", "2592000"), 2592000);
    ck_assert_int_eq(parsed("ADM_SANDBOX_TIMEOUT", "7776000"), 7776000);
    /* what used to switch a limit off or wrap it */
    static const char *const bad_seconds[] = {"0", "-5", "4294967296", "4294967297", "7776001", "5K", "5s", "0x10",
                                              "+5", " 5", "5 ", "1e3", "garbage", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad_seconds / sizeof bad_seconds[0]; i++) {
        ck_assert_msg(parsed("ADM_SANDBOX_CPU", bad_seconds[i]) == -1, "ADM_SANDBOX_CPU=%s accepted", bad_seconds[i]);
        ck_assert_msg(parsed("ADM_PLUGIN_TIMEOUT", bad_seconds[i]) == -1, "ADM_PLUGIN_TIMEOUT=%s accepted",
                      bad_seconds[i]);
    }
    ck_assert_int_eq(parsed("ADM_SANDBOX_TIMEOUT", "0"), -1);
    ck_assert_int_eq(parsed("ADM_SANDBOX_CPU", "2592001"), -1);
    /* bytes: K/M/G, at least 16 MiB for the sandboxes, no overflow */
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "16M"), (int64_t)16 << 20);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "1g"), (int64_t)1 << 30);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "16777216"), (int64_t)16 << 20);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "16777215"), -1);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "1"), -1);
    ck_assert_int_eq(parsed("ADM_PLUGIN_MEMORY", "1K"), -1);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "9223372036854775807K"), -1);
    ck_assert_int_eq(parsed("ADM_SANDBOX_MEMORY", "16MB"), -1);
    ck_assert_int_eq(parsed("ADM_CAPTURE_MAX_BYTES", "1"), 1);
    ck_assert_int_eq(parsed("ADM_CAPTURE_MAX_BYTES", "0"), -1);
    /* terms: 0 is "no limit", by definition (RELIABILITY.md) */
    ck_assert_int_eq(parsed("ADM_MPFR_BUDGET", "0"), 0);
    ck_assert_int_eq(parsed("ADM_MPFR_BUDGET", "9223372036854775807"), INT64_MAX);
    ck_assert_int_eq(parsed("ADM_MPFR_BUDGET", "garbage"), -1);
    ck_assert_int_eq(parsed("ADM_MPFR_BUDGET", "-5"), -1);
    ck_assert_int_eq(parsed("ADM_MPFR_BUDGET", "16M"), -1); /* terms, not bytes */
}
END_TEST

START_TEST(test_check)
{
    clean_env();
    ck_assert_int_eq(adm_env_check(), ADM_OK);
    setenv("ADM_SANDBOX", "off", 1);
    setenv("ADM_PLUGIN_SANDBOX", "1", 1);
    setenv("ADM_PLUGIN_MEMORY", "8G", 1);
    ck_assert_int_eq(adm_env_check(), ADM_OK);
    setenv("ADM_SANDBOX", "false", 1);
    ck_assert_int_eq(adm_env_check(), ADM_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "ADM_SANDBOX='false'"));
    clean_env();
    setenv("ADM_PLUGIN_CPU", "0", 1);
    ck_assert_int_eq(adm_env_check(), ADM_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "ADM_PLUGIN_CPU='0'"));
    clean_env();
}
END_TEST

/* The library's entry points refuse an invalid limit naming it. */
START_TEST(test_entry_points)
{
    adm_capture *cap = NULL;
    adm_oracle *o = NULL;
    adm_oracle_config cfg;
    adm_measure_result mr;
    const char *caps[1] = {ADM_SOURCE_DIR "/captures/data/dit_rmsnorm.h5"};
    clean_env();
    setenv("ADM_SANDBOX_CPU", "4294967296", 1);
    ck_assert_int_eq(adm_capture_read_sandboxed(caps[0], NULL, &cap), ADM_ERR_INVALID);
    ck_assert_ptr_null(cap);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "ADM_SANDBOX_CPU='4294967296'"));
    clean_env();
    setenv("ADM_MPFR_BUDGET", "garbage", 1);
    adm_oracle_config_default(&cfg);
    ck_assert_int_lt(cfg.mpfr_budget, 0);
    ck_assert_int_eq(adm_oracle_create(NULL, &o), ADM_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "ADM_MPFR_BUDGET='garbage'"));
    ck_assert_int_eq(adm_oracle_create(&cfg, &o), ADM_ERR_INVALID);
    clean_env();
    setenv("ADM_MPFR_BUDGET", "12345", 1);
    adm_oracle_config_default(&cfg);
    ck_assert_int_eq(cfg.mpfr_budget, 12345);
    clean_env();
    setenv("ADM_PLUGIN_MEMORY", "1", 1);
    ck_assert_int_eq(adm_harness_measure("t", "rmsnorm", caps, 1, NULL, "eager", "fused_fp32", NULL, &mr),
                     ADM_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(adm_error_message(), "ADM_PLUGIN_MEMORY='1'"));
    clean_env();
}
END_TEST

static Suite *env_suite(void)
{
    Suite *s = suite_create("env");
    TCase *tc = tcase_create("Env");
    tcase_add_test(tc, test_parse);
    tcase_add_test(tc, test_check);
    tcase_add_test(tc, test_entry_points);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(env_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
