/* The command line: the input is argv, its arguments separated by NUL
 * bytes, run in the scratch directory, which holds small captures
 * (captures/data/NAME.h5) and a table (fusions/t.json) to name. Arguments
 * that leave the directory (absolute paths, "..") are refused by this
 * harness, so that output options cannot write elsewhere; sizes that ask
 * synth or the oracle for legitimate minutes of work (above 256 rows or
 * columns) are skipped as well: they are load, not faults. */
#include "fuzz_util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARGS 24

static const char table[] =
    "{\"admit_fusion_table\":1,\"fusions\":[{\"name\":\"e\",\"op\":\"linear\",\"reference\":\"eager\","
    "\"candidate\":\"splitk_fp32\",\"declared\":\"lossless\",\"captures\":[\"../captures/data/flux_fc1_linear_small.h5\"]}]}";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("ADM_CAPTURE_MAX_BYTES", "67108864", 1);
    adm_fuzz_make_small_captures();
    adm_fuzz_put("fusions/t.json", (const uint8_t *)table, sizeof table - 1);
    if (chdir(adm_fuzz_dir()) != 0) abort();
    return 0;
}

static int size_option(const char *a)
{
    static const char *const names[] = {"--tokens", "--channels", "--out-features"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(a, names[i], strlen(names[i]))) return 1;
    return 0;
}

/* 1 when the numeric text is at most 256 (or not a number at all: then
 * the CLI refuses it, which is what is being fuzzed). */
static int small_value(const char *v)
{
    char *end;
    long long n = strtoll(v, &end, 10);
    return end == v || n <= 256;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *argv[MAX_ARGS + 2];
    int argc = 1, synth = 0, sized = 0;
    size_t start = 0;
    if (size > 4096) return 0;
    if (!(buf = malloc(size + 1))) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "admit-kernel";
    for (size_t i = 0; i <= size && argc <= MAX_ARGS; i++) {
        if (i == size || buf[i] == '\0') {
            argv[argc++] = buf + start;
            start = i + 1;
        }
    }
    argv[argc] = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        if (a[0] == '/' || strstr(a, "..")) goto skip;
        if (!strcmp(a, "synth")) synth = 1;
        if (size_option(a)) {
            const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : "");
            if (!small_value(v)) goto skip;
            sized++;
        }
    }
    /* synth's defaults are the FLUX size (4096 x 3072): seconds of work */
    if (synth && sized < 2) goto skip;
    optind = 0; /* GNU getopt: start over for the next argv */
    (void)adm_cli_main(argc, argv);
skip:
    free(buf);
    return 0;
}
