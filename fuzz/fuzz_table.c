/* The fusion-table command: bytes are the table (DIR/fusions/t.json); its
 * capture paths resolve, as in fusions/dit.json, to ../captures/data/,
 * which holds small captures of the bundled names, so that a well-formed
 * table is measured end to end (parameter overrides, static declarations,
 * readers) at a cost of milliseconds. */
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("ADM_CAPTURE_MAX_BYTES", "67108864", 1);
    adm_fuzz_make_small_captures();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[512];
    const char *p;
    char *argv[4];
    snprintf(path, sizeof path, "fusions/t.json");
    if (!(p = adm_fuzz_put(path, data, size))) return 0;
    snprintf(path, sizeof path, "%s", p);
    argv[0] = "admit-kernel";
    argv[1] = "table";
    argv[2] = path;
    argv[3] = NULL;
    (void)adm_cli_main(3, argv);
    return 0;
}
