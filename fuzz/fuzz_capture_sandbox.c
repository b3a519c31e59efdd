/* The capture reader through the sandbox boundary: every byte string is a
 * file read by adm_capture_read_sandboxed, so libhdf5 runs in a child with
 * limits, and what this process runs is the boundary itself (fork, the
 * limits, the decoding of the child's answer, the verdict on its death)
 * and the validator. A fault anywhere in this process is a finding; a
 * fault in the child must come back as ADM_ERR_FORMAT. */
#include "adm_capture.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static adm_sandbox_limits lim;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("ADM_CAPTURE_MAX_BYTES", "67108864", 1);
    /* Tight enough that a libhdf5 loop costs a second, not a minute. */
    lim.memory_bytes = (int64_t)512 << 20;
    lim.cpu_seconds = 1;
    lim.wall_seconds = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = adm_fuzz_put("in.h5", data, size);
    adm_capture *c = NULL;
    adm_status st;
    if (!path) return 0;
    st = adm_capture_read_sandboxed(path, &lim, &c);
    if (st == ADM_OK) {
        (void)adm_capture_validate(c);
        adm_capture_free(c);
    } else if (!strstr(adm_error_message(), "in.h5")) {
        /* Every refusal names the file. */
        fprintf(stderr, "a refusal without the file's name: %s\n", adm_error_message());
        abort();
    }
    return 0;
}
