/* The environment's limits (core/env.c) and long messages (core/status.c),
 * through the library as a runtime calls it, without the CLI's checks.
 *
 * Env: every ADM_* numeric variable parsed strictly in its range; the
 * library's entry points refuse an invalid one naming it (the capture
 * reader, the oracle, a measurement) rather than replace it.
 * Messages: a message longer than the buffer keeps its head and its tail
 * (the field and the reason), never cuts a UTF-8 sequence.
 * Fork: the sandboxes' fork gate (core/adm_child.h): no fork, the
 * sandboxes' or a plain one, starts while another thread holds the gate
 * (the CUDA start-up), the holder's own does, and a hook runs once in the
 * parent after the next sandbox fork. */
#include "adm_capture.h"
#include "adm_child.h"
#include "adm_core.h"
#include "adm_env.h"
#include "adm_harness.h"
#include "adm_oracle.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* ------------------------------------------------------------ messages */

static char *repeat(const char *unit, size_t times, const char *tail)
{
    size_t u = strlen(unit), t = strlen(tail);
    char *s = malloc(u * times + t + 1);
    ck_assert_ptr_nonnull(s);
    for (size_t i = 0; i < times; i++) memcpy(s + i * u, unit, u);
    memcpy(s + u * times, tail, t + 1);
    return s;
}

static int ends_with(const char *s, const char *end)
{
    size_t n = strlen(s), e = strlen(end);
    return n >= e && !strcmp(s + n - e, end);
}

START_TEST(test_long_messages)
{
    /* a path of 40 KB: the message keeps its head, the field and reason */
    char *path = repeat("/dir", 10000, "/x.h5");
    const char *m;
    adm_status st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '/inputs/x': the reason", path);
    ck_assert_int_eq(st, ADM_ERR_FORMAT);
    m = adm_error_message();
    ck_assert_uint_lt(strlen(m), 16384);
    ck_assert_uint_gt(strlen(m), 8000);
    ck_assert_msg(!strncmp(m, "/dir/dir/dir", 12), "the head is lost: %.40s", m);
    ck_assert_ptr_nonnull(strstr(m, " [...] "));
    ck_assert_msg(ends_with(m, "/x.h5: dataset '/inputs/x': the reason"), "the tail is lost: ...%s",
                  m + strlen(m) - 60);
    /* a long prefix on a short message; then a short one on a long one */
    ADM_FAIL(ADM_ERR_FORMAT, "dataset '/inputs/x': the reason");
    adm_error_prefix("%s: ", path);
    m = adm_error_message();
    ck_assert_uint_lt(strlen(m), 16384);
    ck_assert(!strncmp(m, "/dir/dir", 8) && ends_with(m, "/x.h5: dataset '/inputs/x': the reason"));
    adm_error_prefix("table.json:1:2: fusions[0].captures[0]: ");
    m = adm_error_message();
    ck_assert(!strncmp(m, "table.json:1:2: fusions[0].captures[0]: /dir", 44));
    ck_assert(ends_with(m, "the reason"));
    /* a message that fits is whole, with no mark */
    ADM_FAIL(ADM_ERR_FORMAT, "%.4095s: the reason", path);
    m = adm_error_message();
    ck_assert_uint_eq(strlen(m), 4095 + strlen(": the reason"));
    ck_assert_ptr_null(strstr(m, " [...] "));
    free(path);
    /* two-byte characters: no cut inside one; the message stays clean UTF-8 */
    path = repeat("\xc3\xa9", 20001, "/x.h5");
    ADM_FAIL(ADM_ERR_FORMAT, "%s: the reason", path);
    m = adm_error_message();
    ck_assert_msg(adm_text_clean(m), "a cut UTF-8 sequence");
    ck_assert(ends_with(m, "/x.h5: the reason"));
    ADM_FAIL(ADM_ERR_FORMAT, "x%s: the reason", path); /* the other parity */
    ck_assert_msg(adm_text_clean(adm_error_message()), "a cut UTF-8 sequence");
    adm_error_prefix("%s", path);
    ck_assert_msg(adm_text_clean(adm_error_message()), "a cut UTF-8 sequence");
    free(path);
    /* control characters are still escaped in a long message */
    path = repeat("a\n", 20000, "");
    ADM_FAIL(ADM_ERR_FORMAT, "%s: the reason", path);
    ck_assert_ptr_null(strchr(adm_error_message(), '\n'));
    ck_assert(ends_with(adm_error_message(), "\\n: the reason"));
    free(path);
    adm_error_clear();
}
END_TEST

static int gate_held, gate_released;

/* holds the gate for 200 ms, as the CUDA start-up does for hundreds */
static void *gate_holder(void *arg)
{
    struct timespec d = {0, 200 * 1000 * 1000};
    (void)arg;
    adm_child_hold_forks();
    __atomic_store_n(&gate_held, 1, __ATOMIC_SEQ_CST);
    nanosleep(&d, NULL);
    __atomic_store_n(&gate_released, 1, __ATOMIC_SEQ_CST);
    adm_child_release_forks();
    return NULL;
}

/* forks (through the sandboxes' adm_child_fork when sandbox_fork, else
 * plainly, as the plugin sandbox does) while another thread holds the
 * gate: the fork must wait for its release, in parent and child */
static void fork_while_held(int sandbox_fork)
{
    pthread_t t;
    int pfd[2], ws, seen;
    pid_t pid;
    struct timespec d = {0, 1000 * 1000};
    gate_held = gate_released = 0;
    adm_child_gate_forks();
    ck_assert_int_eq(pthread_create(&t, NULL, gate_holder, NULL), 0);
    while (!__atomic_load_n(&gate_held, __ATOMIC_SEQ_CST)) nanosleep(&d, NULL);
    ck_assert_int_eq(pipe(pfd), 0);
    pid = sandbox_fork ? adm_child_fork(pfd) : fork();
    ck_assert_int_ge(pid, 0);
    seen = __atomic_load_n(&gate_released, __ATOMIC_SEQ_CST);
    if (pid == 0) _exit(seen ? 0 : 3);
    close(pfd[0]);
    close(pfd[1]);
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert_msg(seen, "the parent's fork returned while the gate was held");
    ck_assert_msg(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the child started while the gate was held");
    ck_assert_int_eq(pthread_join(t, NULL), 0);
}

static int hook_runs;
static pid_t hook_pid;
static void hook(void)
{
    hook_runs++;
    hook_pid = getpid();
}

/* a sandbox fork: the child exits with its own count of hook runs */
static void fork_once(void)
{
    int pfd[2], ws, before = hook_runs;
    pid_t pid;
    ck_assert_int_eq(pipe(pfd), 0);
    pid = adm_child_fork(pfd);
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(10 + hook_runs);
    close(pfd[0]);
    close(pfd[1]);
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert(WIFEXITED(ws));
    /* the child never runs it */
    ck_assert_int_eq(WEXITSTATUS(ws), 10 + before);
}

START_TEST(test_fork_gate)
{
    int ws;
    pid_t pid;
    fork_while_held(1);
    fork_while_held(0);
    /* the holder's own fork (the driver's start-up may fork) passes: a
     * wait on itself would hang, ended here by the alarm */
    alarm(20);
    adm_child_hold_forks();
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(7);
    adm_child_release_forks();
    ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 7);
    /* and the gate is free again for the others' forks */
    fork_while_held(1);
    alarm(0);
}
END_TEST

START_TEST(test_after_fork)
{
    hook_runs = 0;
    hook_pid = 0;
    ck_assert_int_eq(adm_child_after_next_fork(hook), 0);
    fork_once();
    ck_assert_int_eq(hook_runs, 1);
    ck_assert_int_eq(hook_pid, getpid());
    fork_once(); /* once only */
    ck_assert_int_eq(hook_runs, 1);
    /* withdrawn before any fork: never runs */
    ck_assert_int_eq(adm_child_after_next_fork(hook), 0);
    ck_assert_int_eq(adm_child_after_next_fork(NULL), 1);
    ck_assert_int_eq(adm_child_after_next_fork(NULL), 0);
    fork_once();
    ck_assert_int_eq(hook_runs, 1);
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
    tc = tcase_create("Messages");
    tcase_add_test(tc, test_long_messages);
    suite_add_tcase(s, tc);
    tc = tcase_create("Fork");
    tcase_add_test(tc, test_fork_gate);
    tcase_add_test(tc, test_after_fork);
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
