/* The PNG reader of the drift report (adm_image_read_png, libpng): every
 * byte string is a file handed to the reader, which must either give back
 * a sane image (one frame, sides of 1 to ADM_PNG_MAX_SIDE, at most
 * ADM_PNG_MAX_VALUES values, gray or RGB, every value an integer in
 * 0..data_range, data_range 255 or 65535, every value read here so that
 * ASan sees a short buffer) or refuse with a message that names the file,
 * leaving the image empty. Anything else aborts: a finding. */
#include "adm_drift.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static void broken(const char *what, const adm_image *img)
{
    fprintf(stderr, "fuzz_png: %s (frames %lld, %lld x %lld x %lld, range %g)\n", what, (long long)img->frames,
            (long long)img->height, (long long)img->width, (long long)img->channels, img->data_range);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = adm_fuzz_put("in.png", data, size);
    adm_image img;
    adm_status st;
    if (!path) return 0;
    st = adm_image_read_png(path, &img);
    if (st == ADM_OK) {
        int64_t n;
        if (img.frames != 1 || img.height < 1 || img.height > ADM_PNG_MAX_SIDE || img.width < 1 ||
            img.width > ADM_PNG_MAX_SIDE || (img.channels != 1 && img.channels != 3))
            broken("extents outside the reader's limits", &img);
        n = adm_image_numel(&img);
        if (n > ADM_PNG_MAX_VALUES) broken("more values than ADM_PNG_MAX_VALUES", &img);
        if (img.data_range != 255 && img.data_range != 65535) broken("data_range is neither 255 nor 65535", &img);
        if (!img.data || !img.source || !strstr(img.source, "in.png")) broken("no data or no source", &img);
        for (int64_t i = 0; i < n; i++) {
            double v = img.data[i];
            if (!(v >= 0 && v <= img.data_range) || v != floor(v)) broken("a value outside 0..data_range", &img);
        }
        adm_image_free(&img);
    } else {
        const char *msg = adm_error_message();
        if (img.data || img.source) {
            fprintf(stderr, "fuzz_png: a refusal that leaves the image allocated\n");
            abort();
        }
        if (!msg || !*msg || !strstr(msg, "in.png")) {
            /* Every refusal names the file. */
            fprintf(stderr, "a refusal without the file's name: %s\n", msg ? msg : "(null)");
            abort();
        }
    }
    return 0;
}
