/* admit-kernel: the command line of admit. */
#include "cli.h"
#include "dist.h"
#include "adm_cuda.h"
#include "adm_report.h"
#include "adm_trace.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: admit-kernel <command> [options]\n"
    "\n"
    "commands:\n"
    "  capture synth    write a capture of synthetic DiT-shaped activations\n"
    "  capture inspect  print a capture's op, parameters and tensor statistics\n"
    "  capture validate check captures against the format and the op catalog\n"
    "  oracle           evaluate a capture's op exactly, with certified bounds\n"
    "  replay           score the candidate outputs stored in captures\n"
    "  run              run implementations on a capture, its probes and views, and score them\n"
    "  table            measure every entry of a fusion table against its declared tier\n"
    "  drift            the end-to-end gate: tier drift against the TP1/TP2 band (--toy: built-in DiT)\n"
    "  version          print the version and what this build can run\n"
    "  help [COMMAND]   this text, or a command's options (the same as COMMAND --help)\n"
    "\n"
    "exit status: 0 the claims hold; 1 a verdict disagrees with a claim;\n"
    "             2 bad input or usage\n"
    "Run 'admit-kernel COMMAND --help' for a command's options.\n";

int adm_cli_fail(void)
{
    adm_cli_progress_done();
    /* every rank parses the same command line: rank 0 alone says what is wrong */
    if (adm_dist_rank() == 0) fprintf(stderr, "admit-kernel: %s\n", adm_error_message());
    return ADM_EXIT_INPUT;
}

int adm_cli_fail_with(adm_status st)
{
    (void)st;
    return adm_cli_fail();
}

int adm_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    char raw[ADM_CLI_TEXT_MAX];
    adm_cli_progress_done();
    if (adm_dist_rank() > 0) return ADM_EXIT_INPUT;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    fprintf(stderr, "admit-kernel: %s\n", adm_cli_text(raw));
    return ADM_EXIT_INPUT;
}

int adm_cli_getopt_short(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *lo,
                         const char **arg, int *first)
{
    /* getopt_long wants a program name first: the subcommand's slot */
    char **av = argv - 1;
    char so[64];
    int ch;
    /* ':' first: a missing value returns ':' rather than '?' */
    snprintf(so, sizeof so, ":%s", shortopts);
    ch = getopt_long(argc + 1, av, so, lo, NULL);
    *arg = optarg;
    *first = optind - 1;
    if (ch == ':') {
        adm_cli_usage_error("%s: option '%s' needs a value", cmd, av[optind - 1]);
        return -2;
    }
    if (ch == '?') {
        /* an unknown short option (optopt) may sit inside a cluster, where
         * av[optind - 1] is not the argument that holds it */
        if (optopt > 0 && optopt < 128 && strncmp(av[optind - 1], "--", 2) != 0)
            adm_cli_usage_error("%s: unknown option '-%c'", cmd, optopt);
        else /* the option's name, without "=VALUE" */
            adm_cli_usage_error("%s: unknown option '%.*s'", cmd, (int)strcspn(av[optind - 1], "="), av[optind - 1]);
        return -2;
    }
    return ch;
}

int adm_cli_getopt(int argc, char **argv, const char *cmd, const struct option *lo, const char **arg, int *first)
{
    return adm_cli_getopt_short(argc, argv, cmd, "h", lo, arg, first);
}

int adm_cli_set_mpfr_budget(const char *v)
{
    int64_t b;
    if (!adm_cli_parse_i64(v, 0, INT64_MAX, &b))
        return adm_cli_usage_error("--mpfr-budget: expected a number of terms >= 0 (0: no limit), got '%s'", v);
    /* the oracle's default configuration reads it (adm_oracle_config_default) */
    setenv("ADM_MPFR_BUDGET", v, 1);
    return ADM_EXIT_OK;
}

int adm_cli_parse_device(const char *v, int *device)
{
    int64_t k;
    if (!strcmp(v, "auto")) *device = -2;
    else if (!strcmp(v, "cpu")) *device = -1;
    else if (!strcmp(v, "cuda")) *device = -3;
    else if (!strncmp(v, "cuda:", 5) && adm_cli_parse_i64(v + 5, 0, 4095, &k)) *device = (int)k;
    else return adm_cli_usage_error("--device: expected auto, cpu, cuda or cuda:N, got '%s'", v);
    return ADM_EXIT_OK;
}

int adm_cli_resolve_device(const char *cmd, int device, int *use_gpu, char *why, size_t n)
{
    int ndev = 0;
    if (n) why[0] = '\0';
    *use_gpu = 0;
    if (device == -1) return ADM_EXIT_OK;
    if (device == -2) {
        /* auto: the GPU where there is a usable one; the report says why not */
        *use_gpu = adm_cuda_device_count(&ndev) == ADM_OK && ndev > 0;
        if (!*use_gpu) snprintf(why, n, " (no usable GPU: %s)", adm_error_message());
        adm_error_clear();
        return ADM_EXIT_OK;
    }
    /* asked for the GPU: none is a refusal, not a quiet run on the CPU */
    if (adm_cuda_device_count(&ndev) != ADM_OK || (device >= 0 && adm_cuda_select(device) != ADM_OK))
        return adm_cli_usage_error("%s --device %s: %s (--device cpu runs the oracle on the CPU)", cmd,
                                   device >= 0 ? "cuda:N" : "cuda", adm_error_message());
    *use_gpu = 1;
    return ADM_EXIT_OK;
}

int adm_cli_set_budget(const char *option, const char *v)
{
    int bytes = !strcmp(option, "--max-memory");
    int64_t x;
    if (adm_plan_parse_limit(option, v, bytes, &x) != ADM_OK) return adm_cli_fail();
    /* the library's plan reads it (adm_plan_init) */
    setenv(bytes ? "ADM_MAX_MEMORY" : "ADM_MAX_WORK", v, 1);
    return ADM_EXIT_OK;
}

int adm_cli_set_unit_timeout(const char *v)
{
    int64_t t;
    if (!adm_cli_parse_i64(v, 0, 90 * 86400, &t))
        return adm_cli_usage_error("--unit-timeout: expected seconds from 0 (no limit) to 7776000, got '%s'", v);
    adm_dist_set_unit_timeout(t);
    return ADM_EXIT_OK;
}

const char *adm_cli_text(const char *s)
{
    static char buf[4][ADM_CLI_TEXT_MAX];
    static int k;
    k = (k + 1) % 4;
    adm_text_escape(buf[k], sizeof buf[k], s);
    return buf[k];
}

int adm_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    long long v;
    errno = 0;
    if (!s || !*s) return 0;
    v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int adm_cli_parse_f64(const char *s, double *out)
{
    char *end;
    double v;
    errno = 0;
    if (!s || !*s) return 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

int adm_cli_parse_claim(const char *v, char **name, adm_tier *tier)
{
    const char *eq = v ? strchr(v, '=') : NULL;
    *name = NULL;
    if (!eq || eq == v) return adm_cli_usage_error("--claim: expected NAME=TIER, got '%s'", v ? v : "");
    if (adm_tier_from_name(eq + 1, tier) != ADM_OK) {
        adm_error_prefix("--claim %s: ", v);
        return adm_cli_fail();
    }
    if (!(*name = malloc((size_t)(eq - v) + 1))) return adm_cli_usage_error("out of memory");
    memcpy(*name, v, (size_t)(eq - v));
    (*name)[eq - v] = '\0';
    return ADM_EXIT_OK;
}

#include <sys/ioctl.h>
#include <unistd.h>

int adm_cli_term_width(void)
{
    const char *c = getenv("COLUMNS");
    int64_t w;
    struct winsize ws;
    if (c && adm_cli_parse_i64(c, 20, 10000, &w)) return (int)w;
    /* under mpirun rank 0 writes to a pseudo-terminal of the launcher's,
     * whatever the launcher's own output is: it says nothing of a reader */
    if (adm_dist_size() > 1) return 0;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
    return 0;
}

int adm_cli_term_color(void)
{
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    /* no-color.org: NO_COLOR present and not empty turns colour off */
    if (nc && *nc) return 0;
    if (term && !strcmp(term, "dumb")) return 0;
    if (adm_dist_size() > 1) return 0; /* a launcher's pseudo-terminal (adm_cli_term_width) */
    return isatty(STDOUT_FILENO);
}

static int progress_shown;

void adm_cli_progress(int k, int n, const char *what)
{
    char t[512];
    int w = 80;
    struct winsize ws;
    if (!isatty(STDERR_FILENO)) return;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) w = ws.ws_col;
    adm_text_escape(t, sizeof t, what);
    {
        /* one line: what would wrap is left out (a progress line, not a
         * report), at a character */
        int cols = 0, room = w - 16 > 4 ? w - 16 : 4;
        char *p = t;
        for (; *p; p++)
            if (((unsigned char)*p & 0xC0) != 0x80 && ++cols > room) break;
        *p = '\0';
    }
    fprintf(stderr, "\r\033[K[%d/%d] %s", k, n, t);
    fflush(stderr);
    progress_shown = 1;
}

void adm_cli_progress_done(void)
{
    if (!progress_shown) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    progress_shown = 0;
}

/* The GPU in the report's header is asked for when the report is
 * finished: asking loads the CUDA module (the CUDA runtime and cuBLAS), and
 * a process that has them mapped pays for them in every sandbox child it
 * forks for the captures it reads (bench/results/2026-11-30-cpu-sandbox-cost.md).
 * A run that has used the GPU has the module loaded by then anyway. */
static void report_gpu(adm_report *rep)
{
    char name[256];
    int major, minor;
    if (!adm_cuda_built()) adm_report_set_context(rep, "GPU", "none (built without CUDA)");
    else if (adm_cuda_device_name(name, sizeof name, &major, &minor) == ADM_OK) {
        char t[300];
        snprintf(t, sizeof t, "%s (sm_%d%d)", name, major, minor);
        adm_report_set_context(rep, "GPU", t);
    } else {
        adm_report_set_context(rep, "GPU", "none usable");
    }
    adm_error_clear();
}

void adm_cli_report_context(adm_report *rep, const char *key, const char *value)
{
    if (key) adm_report_set_context(rep, key, value);
    /* its place in the header; adm_cli_finish_report fills it */
    adm_report_set_context(rep, "GPU", "-");
}

void adm_cli_report_dist_note(adm_report *rep)
{
    if (!adm_dist_note()[0]) return;
    adm_cli_progress_done();
    fprintf(stderr, "admit-kernel: %s\n", adm_dist_note());
    adm_report_set_context(rep, "MPI", adm_dist_note());
}

int adm_cli_finish_report(adm_report *rep, const char *json, const char *junit, const char *html)
{
    int written;
    adm_cli_progress_done();
    report_gpu(rep);
    adm_report_set_terminal(rep, adm_cli_term_width(), adm_cli_term_color());
    /* The files first: a terminal that has gone away (a closed pipe,
     * `| head -1`) costs the terminal's copy only. */
    written = !(json || junit || html) || adm_report_write_all(rep, json, junit, html) == ADM_OK;
    adm_report_print(rep, stdout);
    fflush(stdout);
    if (!written) return adm_cli_fail();
    if (adm_report_any_error(rep)) {
        int n = 0;
        for (int i = 0; i < adm_report_count(rep); i++) n += adm_report_row_at(rep, i)->error != NULL;
        fprintf(stderr, "admit-kernel: %d of %d rows could not be measured (marked error in the reports)\n", n,
                adm_report_count(rep));
        return ADM_EXIT_INPUT;
    }
    return adm_report_any_violation(rep) ? ADM_EXIT_CLAIM : ADM_EXIT_OK;
}

static int cmd_version(void)
{
    char name[256];
    int major, minor;
    printf("admit-kernel %s\n", ADM_VERSION_STRING);
    printf("cuda: %s", adm_cuda_built() ? "built" : "not built");
    if (adm_cuda_built()) {
        if (adm_cuda_device_name(name, sizeof name, &major, &minor) == ADM_OK)
            printf(", device %s (sm_%d%d)", name, major, minor);
        else /* the GPU commands run on the CPU, or refuse (oracle --gpu) */
            printf(", no GPU usable: %s", adm_error_message());
    }
    printf("\n");
    adm_dist_describe(stdout);
    return ADM_EXIT_OK;
}

static int dispatch(int argc, char **argv);

/* `help` and `help COMMAND` (COMMAND --help). */
static int cmd_help(int argc, char **argv)
{
    char *av[4];
    if (argc < 1) {
        fputs(usage, stdout);
        return ADM_EXIT_OK;
    }
    if (argc > 1 && strcmp(argv[0], "capture") != 0)
        return adm_cli_usage_error("help: expected one COMMAND, got '%s' too", argv[1]);
    av[0] = "admit-kernel";
    av[1] = argv[0];
    if (!strcmp(argv[0], "capture") && argc > 1) {
        av[2] = argv[1];
        av[3] = "--help";
        return dispatch(4, av);
    }
    av[2] = "--help";
    return dispatch(3, av);
}

int main(int argc, char **argv)
{
    int rc;
    adm_trace_part("main", 0, -1); /* from the process's start: loading, the libraries' constructors */
    /* A closed stdout (`| head -1`) makes writes fail with EPIPE, which
     * the commands ignore, rather than end the process with SIGPIPE before
     * its reports are written and its exit status is the verdicts'. */
    signal(SIGPIPE, SIG_IGN);
    /* under mpirun or srun: join the job (cli/dist.h) */
    adm_dist_init(&argc, &argv);
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        if (adm_dist_rank() == 0) fputs(usage, argc < 2 ? stderr : stdout);
        return adm_dist_end(argc < 2 ? ADM_EXIT_INPUT : ADM_EXIT_OK);
    }
    /* Each call parses its argv from the start: optind 0 makes glibc's
     * getopt reinitialize (a cluster half read by an earlier call, in a
     * process that calls main more than once, as the fuzz targets do). */
    optind = 0;
    opterr = 0;
    /* The commands with units of work (table, replay, drift) run on every
     * rank, which serve rank 0 once their options are parsed; any other
     * runs on rank 0 alone, the others waiting for its exit status. */
    if (adm_dist_rank() > 0 && strcmp(argv[1], "table") && strcmp(argv[1], "replay") && strcmp(argv[1], "drift"))
        rc = adm_dist_serve(NULL);
    else
        rc = dispatch(argc, argv);
    return adm_dist_end(rc);
}

static int dispatch(int argc, char **argv)
{
    if (strcmp(argv[1], "help") == 0) return cmd_help(argc - 2, argv + 2);
    /* the limits and budgets from the environment, before any work: an
     * invalid one is a usage error naming the variable */
    if (strcmp(argv[1], "version") != 0 && strcmp(argv[1], "--version") != 0 && adm_env_check() != ADM_OK)
        return adm_cli_fail();
    if (strcmp(argv[1], "capture") == 0) return adm_cmd_capture(argc - 2, argv + 2);
    if (strcmp(argv[1], "oracle") == 0) return adm_cmd_oracle(argc - 2, argv + 2);
    if (strcmp(argv[1], "replay") == 0) return adm_cmd_replay(argc - 2, argv + 2);
    if (strcmp(argv[1], "run") == 0) return adm_cmd_run(argc - 2, argv + 2);
    if (strcmp(argv[1], "table") == 0) return adm_cmd_table(argc - 2, argv + 2);
    if (strcmp(argv[1], "drift") == 0) return adm_cmd_drift(argc - 2, argv + 2);
    if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
        if (argc > 2 && strcmp(argv[2], "--help") && strcmp(argv[2], "-h"))
            return adm_cli_usage_error("version: unexpected argument '%s'", argv[2]);
        if (argc > 2) {
            puts("usage: admit-kernel version\n\nPrints the version and what this build can run (CUDA, the GPU, MPI; under mpirun\nor srun, where each rank runs).");
            return ADM_EXIT_OK;
        }
        return cmd_version();
    }
    fputs(usage, stderr);
    return adm_cli_usage_error("unknown command '%s'", argv[1]);
}
