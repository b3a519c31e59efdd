/* The capture reader in-process, without the sandbox: every byte string is
 * a file handed to adm_capture_read and, when it reads, to the validator.
 * Faults inside libhdf5 itself show up here (issue 8, R5-R7); the sandbox
 * target (fuzz_capture_sandbox.c) is the boundary that contains them. */
#include "adm_capture.h"
#include "fuzz_util.h"

#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Legitimate large declarations are not findings: bound what one
     * input may allocate well below libFuzzer's -rss_limit_mb. */
    setenv("ADM_CAPTURE_MAX_BYTES", "67108864", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = adm_fuzz_put("in.h5", data, size);
    adm_capture *c = NULL;
    if (!path) return 0;
    if (adm_capture_read(path, &c) == ADM_OK) {
        (void)adm_capture_validate(c);
        adm_capture_free(c);
    }
    return 0;
}
