/* Shared pieces of the libFuzzer targets: a private scratch directory
 * (in /dev/shm when there is one: the inputs are written to files, as
 * admit reads files), small captures to point tables and argv at, and the
 * CLI's entry point (cli/admit_kernel.c built with main renamed). */
#ifndef ADM_FUZZ_UTIL_H
#define ADM_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Creates the scratch directory once and returns its path. */
const char *adm_fuzz_dir(void);
/* Removes the scratch directory (the replay driver, at its end). */
void adm_fuzz_cleanup(void);
/* Writes the bytes to DIR/name (replacing it); returns the full path in a
 * static buffer, or NULL when the file cannot be written. */
const char *adm_fuzz_put(const char *name, const uint8_t *data, size_t size);
/* DIR/captures/data/ holds small captures (8 tokens) under the bundled
 * captures' names and DIR/fusions/ a copy of the bundled table's
 * structure, so that seeds from the fusions/ tables resolve to cheap files. */
void adm_fuzz_make_small_captures(void);
/* admit-kernel's main (cli/admit_kernel.c compiled with main renamed). */
int adm_cli_main(int argc, char **argv);

#endif
