/* admit-kernel: shared pieces of the subcommands. */
#ifndef ADM_CLI_H
#define ADM_CLI_H

#include "adm_capture.h"
#include "adm_harness.h"

/* Exit codes: the claims hold; a verdict disagrees with a claim; bad input
 * or usage. */
#define ADM_EXIT_OK 0
#define ADM_EXIT_CLAIM 1
#define ADM_EXIT_INPUT 2

/* Prints "admit-kernel: <last error message>" and returns ADM_EXIT_INPUT. */
int adm_cli_fail(void);
/* The same, for a status just returned (its message is the last error). */
int adm_cli_fail_with(adm_status st);
int adm_cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* The longest line adm_cli_text and adm_cli_usage_error print whole: the
 * library's longest message (core/status.c: two paths of PATH_MAX bytes with
 * the field and the reason). */
#define ADM_CLI_TEXT_MAX 32768
/* s with control characters and malformed UTF-8 escaped (adm_text_escape),
 * for printing text that came from an input; one of four rotating static
 * buffers of ADM_CLI_TEXT_MAX bytes. */
const char *adm_cli_text(const char *s);
struct option;
/* getopt_long over a subcommand's arguments (argv[0] is its first
 * argument): `--x=V` and `--x V`, `--` ends the options, options and
 * operands in any order. Returns the next option's value as getopt_long
 * does, -1 at the end (operands then start at *first), or -2 after
 * printing a usage error (unknown option, a missing value: exit 2). */
int adm_cli_getopt(int argc, char **argv, const char *cmd, const struct option *lo, const char **arg, int *first);
/* The same with the short options shortopts (getopt's syntax, "ho:" for
 * -h and -o VALUE) in place of -h alone. */
int adm_cli_getopt_short(int argc, char **argv, const char *cmd, const char *shortopts, const struct option *lo,
                         const char **arg, int *first);
int adm_cli_set_mpfr_budget(const char *v);
/* --device V: auto (the default), cpu, cuda or cuda:N, into *device (-2
 * auto, -1 cpu, -3 cuda, N >= 0). Returns an exit code. */
int adm_cli_parse_device(const char *v, int *device);
/* Where cmd's oracle runs for --device `device`: *use_gpu; auto without a
 * usable GPU runs on the CPU and says why in why (empty otherwise); cuda
 * or cuda:N without one is a usage error (exit 2), as is a cuda:N that is
 * not there. Returns an exit code. */
int adm_cli_resolve_device(const char *cmd, int device, int *use_gpu, char *why, size_t n);
/* --max-memory or --max-work (option) = v, strictly parsed
 * (adm_plan_parse_limit), for the library's plans. Returns an exit code. */
int adm_cli_set_budget(const char *option, const char *v);
/* The lines of a usage text for both. */
#define ADM_CLI_BUDGET_HELP                                                                                      \
    "  --max-memory B     the most memory measuring a capture may need (default: half the machine's;\n"          \
    "                     ADM_MAX_MEMORY; K/M/G/T suffixes; 0: no limit); beyond it: exit 2 before reading\n"    \
    "  --max-work W       the most multiply-adds a capture may need (default 1e13, ADM_MAX_WORK; 0: no limit)\n"
/* --unit-timeout v (seconds, 0: none) for an MPI job's units (cli/dist.h).
 * Returns an exit code. */
int adm_cli_set_unit_timeout(const char *v);
#define ADM_CLI_MPI_HELP                                                                                          \
    "  --unit-timeout S   under mpirun or srun: the most seconds a rank may take on one unit of work before it\n"  \
    "                     is taken for stopped and the unit is handed to another rank (default 3600; 0: none)\n"
/* Strict number parsing: the whole string, in range. */
int adm_cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
int adm_cli_parse_f64(const char *s, double *out);
/* "--claim NAME=TIER": *name is allocated (free it). Returns an exit code:
 * ADM_EXIT_OK, or ADM_EXIT_INPUT after printing why. */
int adm_cli_parse_claim(const char *v, char **name, adm_tier *tier);

/* A progress line on stderr, only when it is a terminal: "[k/n] what".
 * adm_cli_progress_done clears it. */
void adm_cli_progress(int k, int n, const char *what);
void adm_cli_progress_done(void);
/* The terminal the reports are printed for: its width (COLUMNS when set
 * to a number, else the TTY's; 0 when neither: the report's default) and
 * whether to colour (stdout a TTY, NO_COLOR unset or empty, TERM not
 * dumb). */
int adm_cli_term_width(void);
int adm_cli_term_color(void);

struct adm_report;
/* Sets key = value (key NULL: none) and the GPU's place in the report's
 * header. */
void adm_cli_report_context(struct adm_report *rep, const char *key, const char *value);
/* What an MPI job lost or measured again (cli/dist.h), as the report's
 * "MPI" and a line on stderr; nothing when all went well, so that the
 * reports are one process's. */
void adm_cli_report_dist_note(struct adm_report *rep);
/* Fills in the GPU, prints the report, writes the requested files (NULL:
 * none), and returns the exit code: 1 when a verdict breaks its claim, 2
 * when a file cannot be written. */
int adm_cli_finish_report(struct adm_report *rep, const char *json, const char *junit, const char *html);

/* The report options of the measuring commands (replay, run, table): the
 * same spellings and meaning in each, and these lines of their usage. A
 * claim is a --claim of replay and run, an entry's "declared" in a table. */
#define ADM_CLI_REPORT_USAGE                                                                      \
    "  --json FILE        write the full report as JSON\n"                                         \
    "  --junit FILE       write a JUnit XML report (a failure per violated claim)\n"               \
    "  --html DIR         write DIR/index.html: what was run, the verdicts, each candidate's detail\n" \
    "  --strict           exit 1 also when a verdict is stricter than its claim (promotable)\n"

int adm_cmd_capture(int argc, char **argv);
int adm_cmd_oracle(int argc, char **argv);
int adm_cmd_replay(int argc, char **argv);
int adm_cmd_run(int argc, char **argv);
int adm_cmd_table(int argc, char **argv);
int adm_cmd_drift(int argc, char **argv);

#endif
