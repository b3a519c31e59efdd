/* The PNG reader of the drift report (adm_image_read_png, libpng): every
 * byte string is a file handed to the reader, which must either give back
 * a sane image (one frame, sides of 1 to ADM_PNG_MAX_SIDE, at most
 * ADM_PNG_MAX_VALUES values, gray or RGB, every value an integer in
 * 0..data_range, data_range 255 or 65535, every value read here so that
 * ASan sees a short buffer) or refuse with a message that names the file,
 * leaving the image empty. Anything else aborts: a finding.
 * libpng refuses a critical chunk whose CRC does not match, so nearly every
 * mutation would stop there; an input of even size is therefore written
 * with every chunk's CRC recomputed (mutations reach the decoder and the
 * reader's checks), one of odd size as it is (the CRC and framing paths). */
#include "adm_drift.h"
#include "fuzz_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc_table[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
        crc_table[n] = c;
    }
    return 0;
}

static void broken(const char *what, const adm_image *img)
{
    fprintf(stderr, "fuzz_png: %s (frames %lld, %lld x %lld x %lld, range %g)\n", what, (long long)img->frames,
            (long long)img->height, (long long)img->width, (long long)img->channels, img->data_range);
    abort();
}

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return ~c;
}

/* Recomputes the CRC of every whole chunk after the 8-byte signature. */
static void fix_crcs(uint8_t *b, size_t size)
{
    size_t at = 8;
    while (at + 12 <= size) {
        uint32_t len = (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3];
        uint32_t crc;
        if (len > size - at - 12) break;
        crc = crc32_of(b + at + 4, 4 + (size_t)len);
        at += 8 + len;
        b[at] = (uint8_t)(crc >> 24);
        b[at + 1] = (uint8_t)(crc >> 16);
        b[at + 2] = (uint8_t)(crc >> 8);
        b[at + 3] = (uint8_t)crc;
        at += 4;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path;
    adm_image img;
    adm_status st;
    if (size % 2 == 0 && size >= 8) {
        uint8_t *copy = malloc(size);
        if (!copy) return 0;
        memcpy(copy, data, size);
        fix_crcs(copy, size);
        path = adm_fuzz_put("in.png", copy, size);
        free(copy);
    } else {
        path = adm_fuzz_put("in.png", data, size);
    }
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
