/* The parent's half of the sandbox boundary: bytes are what a reader child
 * sent (a subverted child can send anything), decoded by the same code as
 * adm_capture_read_sandboxed uses; the result must be a capture that
 * passes through the validator and free, or a refusal naming the file. */
#include "adm_capture.h"
#include "capture_internal.h"
#include "fuzz_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    adm_capture *c = NULL;
    if (adm_sandbox_decode_buffer(data, size, "wire.h5", &c) == ADM_OK) {
        (void)adm_capture_validate(c);
        for (int i = 0; i < adm_capture_input_count(c); i++) (void)adm_capture_input(c, i);
        adm_capture_free(c);
    } else if (!strstr(adm_error_message(), "wire.h5")) {
        fprintf(stderr, "a refusal without the file's name: %s\n", adm_error_message());
        abort();
    }
    return 0;
}
