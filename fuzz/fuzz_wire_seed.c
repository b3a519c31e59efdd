/* Seeds for fuzz_sandbox_wire: the answer a reader child sends for each
 * capture given. Usage: fuzz_wire_seed OUTDIR CAPTURE... */
#include "adm_capture.h"
#include "capture_internal.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        adm_capture *c = NULL;
        char out[1024], base[512];
        int fd;
        if (adm_capture_read(argv[i], &c) != ADM_OK) {
            fprintf(stderr, "fuzz_wire_seed: %s\n", adm_error_message());
            rc = 2;
            continue;
        }
        snprintf(base, sizeof base, "%s", argv[i]);
        snprintf(out, sizeof out, "%s/%s.wire", argv[1], basename(base));
        fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || adm_sandbox_encode(fd, c) != 0) rc = 2;
        if (fd >= 0) close(fd);
        adm_capture_free(c);
    }
    return rc;
}
