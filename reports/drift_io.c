/* Arms in and out: PNG through libpng, HDF5 datasets, frames stacked from
 * several files. Every value is kept exactly as stored. */
#include "adm_drift.h"
#include "capture_h5.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

adm_status adm_image_alloc(adm_image *img, int64_t frames, int64_t height, int64_t width, int64_t channels)
{
    int64_t shape[4] = {frames, height, width, channels}, n;
    memset(img, 0, sizeof *img);
    for (int i = 0; i < 4; i++)
        if (shape[i] < 1) return ADM_FAIL(ADM_ERR_SHAPE, "an image needs extents >= 1, got %lld", (long long)shape[i]);
    ADM_TRY(adm_shape_numel(4, shape, &n));
    if ((uint64_t)n > SIZE_MAX / sizeof(double)) return ADM_FAIL(ADM_ERR_OVERFLOW, "image too large");
    img->data = calloc((size_t)n, sizeof(double));
    if (!img->data) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory for a %lld-value image", (long long)n);
    img->frames = frames;
    img->height = height;
    img->width = width;
    img->channels = channels;
    return ADM_OK;
}

void adm_image_free(adm_image *img)
{
    if (!img) return;
    free(img->data);
    free(img->source);
    memset(img, 0, sizeof *img);
}

int64_t adm_image_numel(const adm_image *img) { return img->frames * img->height * img->width * img->channels; }

static adm_status set_source(adm_image *img, const char *s)
{
    free(img->source);
    img->source = adm_strdup(s);
    return img->source ? ADM_OK : ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
}

/* ---------------------------------------------------------------- PNG */

typedef struct png_ctx {
    char msg[256];
    png_bytep buf;
    png_bytepp rows;
} png_ctx;

static void png_on_error(png_structp p, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(p);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(p, 1);
}
static void png_on_warning(png_structp p, png_const_charp msg) { (void)p; (void)msg; }

/* The largest ratio of inflated to stored bytes: deflate's limit is 1032:1
 * (258-byte matches in 2 bits); 1100 leaves room for the headers. */
#define PNG_MAX_INFLATE 1100u

/* The filtered bytes (a filter byte and the packed samples of each row of
 * each pass) that the IDAT stream of a w x h image must inflate to. */
static uint64_t png_filtered_bytes(png_uint_32 w, png_uint_32 h, int bits_per_pixel, int interlaced)
{
    uint64_t total = 0;
    for (int pass = 0; pass < (interlaced ? 7 : 1); pass++) {
        uint64_t cols = interlaced ? PNG_PASS_COLS(w, pass) : w, rows = interlaced ? PNG_PASS_ROWS(h, pass) : h;
        if (cols && rows) total += rows * (1 + (cols * (uint64_t)bits_per_pixel + 7) / 8);
    }
    return total;
}

adm_status adm_image_read_png(const char *path, adm_image *img)
{
    FILE *f;
    int fd;
    int64_t fsize;
    png_structp png;
    png_infop info;
    png_ctx *ctx;
    unsigned char sig[8];
    png_uint_32 w, h;
    int depth, ctype, ch;
    size_t rowbytes;
    uint64_t need;
    volatile adm_status st = ADM_OK; /* set after setjmp */
    memset(img, 0, sizeof *img);
    ADM_TRY(adm_file_open_regular(path, "PNG image", &fd, &fsize));
    if (!(f = fdopen(fd, "rb"))) {
        st = ADM_FAIL(ADM_ERR_IO, "%s: cannot open PNG image: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8)) {
        fclose(f);
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not a PNG file (no PNG signature)", path);
    }
    if (!(ctx = calloc(1, sizeof *ctx))) {
        fclose(f);
        return ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
    }
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_error, png_on_warning);
    info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        free(ctx);
        fclose(f);
        return ADM_FAIL(ADM_ERR_NOMEM, "%s: libpng could not start", path);
    }
    if (setjmp(png_jmpbuf(png))) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: malformed PNG: %s", path, ctx->msg);
        goto done;
    }
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, ADM_PNG_MAX_SIDE, ADM_PNG_MAX_SIDE);
    png_read_info(png, info);
    w = png_get_image_width(png, info);
    h = png_get_image_height(png, info);
    depth = png_get_bit_depth(png, info);
    ctype = png_get_color_type(png, info);
    need = png_filtered_bytes(w, h, depth * png_get_channels(png, info),
                              png_get_interlace_type(png, info) != PNG_INTERLACE_NONE);
    if (need > (uint64_t)fsize * PNG_MAX_INFLATE) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: declares %lu x %lu pixels of %d bits (%llu bytes of image data), more than "
                      "a file of %lld bytes can hold (deflate gives at most 1032:1): truncated or corrupt",
                      path, (unsigned long)w, (unsigned long)h, depth * png_get_channels(png, info),
                      (unsigned long long)need, (long long)fsize);
        goto done;
    }
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    /* after the expansions: drops an alpha channel, and the one tRNS would add */
    if ((ctype & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    depth = png_get_bit_depth(png, info);
    ch = png_get_channels(png, info);
    rowbytes = png_get_rowbytes(png, info);
    if ((ch != 1 && ch != 3) || (depth != 8 && depth != 16)) {
        st = ADM_FAIL(ADM_ERR_UNSUPPORTED, "%s: %d channels of %d bits after expansion; expected gray or RGB, 8 or 16 bits",
                      path, ch, depth);
        goto done;
    }
    if ((int64_t)w * h * ch > ADM_PNG_MAX_VALUES) {
        st = ADM_FAIL(ADM_ERR_SHAPE, "%s: %lu x %lu x %d is %lld values, above the limit of 2^28 (ADM_PNG_MAX_VALUES)",
                      path, (unsigned long)w, (unsigned long)h, ch, (long long)w * h * ch);
        goto done;
    }
    if ((st = adm_image_alloc(img, 1, h, w, ch)) != ADM_OK) {
        adm_error_prefix("%s: ", path);
        goto done;
    }
    ctx->buf = malloc(rowbytes * h);
    ctx->rows = malloc(sizeof *ctx->rows * h);
    if (!ctx->buf || !ctx->rows) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (png_uint_32 r = 0; r < h; r++) ctx->rows[r] = ctx->buf + r * rowbytes;
    png_read_image(png, ctx->rows);
    png_read_end(png, NULL);
    {
        int64_t n = (int64_t)w * ch;
        for (png_uint_32 r = 0; r < h; r++)
            for (int64_t k = 0; k < n; k++)
                img->data[(int64_t)r * n + k] = depth == 8 ? ctx->rows[r][k]
                                                           : (double)((ctx->rows[r][2 * k] << 8) | ctx->rows[r][2 * k + 1]);
    }
    img->data_range = depth == 8 ? 255 : 65535;
    st = set_source(img, path);
done:
    png_destroy_read_struct(&png, &info, NULL);
    free(ctx->buf);
    free(ctx->rows);
    free(ctx);
    fclose(f);
    if (st != ADM_OK) adm_image_free(img);
    return st;
}

adm_status adm_image_write_png(const adm_image *img, int64_t frame, double lo, double hi, const char *path)
{
    char *tmp = NULL;
    int fd;
    FILE *f;
    png_structp png;
    png_infop info;
    png_ctx *ctx;
    int ch = img->channels == 3 ? 3 : 1;
    int64_t W = img->width, H = img->height, plane = H * W * img->channels;
    volatile adm_status st = ADM_OK; /* set after setjmp */
    if (frame < 0 || frame >= img->frames) return ADM_FAIL(ADM_ERR_INVALID, "%s: no frame %lld", path, (long long)frame);
    if (!(hi > lo)) return ADM_FAIL(ADM_ERR_INVALID, "%s: empty value range [%g, %g]", path, lo, hi);
    if (W > ADM_PNG_MAX_SIDE || H > ADM_PNG_MAX_SIDE)
        return ADM_FAIL(ADM_ERR_SHAPE, "%s: %lld x %lld is too large for a PNG here", path, (long long)H, (long long)W);
    if (!(ctx = calloc(1, sizeof *ctx))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    ctx->buf = malloc((size_t)(W * ch * H));
    ctx->rows = malloc(sizeof *ctx->rows * (size_t)H);
    if (!ctx->buf || !ctx->rows) {
        free(ctx->buf);
        free(ctx->rows);
        free(ctx);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    for (int64_t r = 0; r < H; r++) {
        ctx->rows[r] = ctx->buf + r * W * ch;
        for (int64_t c = 0; c < W; c++)
            for (int k = 0; k < ch; k++) {
                double v = img->data[frame * plane + (r * W + c) * img->channels + k];
                double q = nearbyint(255.0 * (v - lo) / (hi - lo));
                ctx->rows[r][c * ch + k] = (png_byte)(q < 0 ? 0 : q > 255 ? 255 : q);
            }
    }
    if ((st = adm_temp_beside(path, &tmp, &fd)) != ADM_OK) goto out;
    if (!(f = fdopen(fd, "wb"))) {
        close(fd);
        st = ADM_FAIL(ADM_ERR_IO, "%s: %s", tmp, strerror(errno));
        goto out;
    }
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, png_on_error, png_on_warning);
    info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        fclose(f);
        st = ADM_FAIL(ADM_ERR_NOMEM, "%s: libpng could not start", path);
        goto out;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        st = ADM_FAIL(ADM_ERR_IO, "%s: libpng: %s", path, ctx->msg);
        goto out;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)W, (png_uint_32)H, 8, ch == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, ctx->rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (fclose(f) != 0) {
        st = ADM_FAIL(ADM_ERR_IO, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) st = ADM_FAIL(ADM_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
out:
    if (tmp && st != ADM_OK) unlink(tmp);
    free(tmp);
    free(ctx->buf);
    free(ctx->rows);
    free(ctx);
    return st;
}

/* ---------------------------------------------------------------- HDF5 */

static void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* A string attribute (fixed or variable length) into buf; 0 when absent,
 * -1 when present but not a readable string, -2 when a variable-length
 * string's heap reference is unsound (the arm is corrupt; *heap holds the
 * status, its message names where and the attribute): libhdf5 1.10 would
 * follow it blindly (issue 8 R5-R7). */
static int h5_string_attr(hid_t obj, const char *where, const char *name, char *buf, size_t n, adm_status *heap)
{
    hid_t a, t, mt;
    int ok = -1;
    if (H5Aexists(obj, name) <= 0) return 0;
    if ((a = H5Aopen(obj, name, H5P_DEFAULT)) < 0) return -1;
    t = H5Aget_type(a);
    if (H5Tget_class(t) == H5T_STRING) {
        if (H5Tis_variable_str(t) > 0) {
            char *s = NULL;
            if ((*heap = adm_cap_heap_check(a, where, name, n - 1)) != ADM_OK) {
                ok = -2;
                goto out;
            }
            mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, H5T_VARIABLE);
            H5Tset_cset(mt, H5Tget_cset(t)); /* h5py writes UTF-8 */
            if (H5Aread(a, mt, &s) >= 0 && s) {
                snprintf(buf, n, "%s", s);
                ok = 1;
                H5free_memory(s);
            }
            H5Tclose(mt);
        } else {
            size_t sz = H5Tget_size(t);
            char *s = calloc(1, sz + 1);
            mt = H5Tcopy(H5T_C_S1);
            H5Tset_size(mt, sz + 1);
            H5Tset_cset(mt, H5Tget_cset(t));
            if (s && H5Aread(a, mt, s) >= 0) {
                snprintf(buf, n, "%s", s);
                ok = 1;
            }
            free(s);
            H5Tclose(mt);
        }
    }
out:
    H5Tclose(t);
    H5Aclose(a);
    return ok;
}

/* Which source axis holds each of F, H, W, C (-1: absent). */
static adm_status parse_layout(const char *file, const char *ds, const char *layout, int rank, int axis[4])
{
    static const char *const valid[] = {"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW"};
    int ok = 0;
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++)
        if (!strcasecmp(layout, valid[i])) ok = 1;
    if (!ok)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': layout '%s' is not one of HW, HWC, CHW, FHW, FHWC, FCHW", file,
                        ds, layout);
    if ((int)strlen(layout) != rank)
        return ADM_FAIL(ADM_ERR_SHAPE, "%s: dataset '%s' has rank %d but layout '%s' has %zu axes", file, ds, rank,
                        layout, strlen(layout));
    for (int k = 0; k < 4; k++) axis[k] = -1;
    for (int i = 0; i < rank; i++) {
        const char *p = strchr("FHWC", layout[i] & ~0x20);
        axis[p - "FHWC"] = i;
    }
    return ADM_OK;
}

adm_status adm_image_read_h5(const char *path, const char *dataset, const char *layout, adm_image *img)
{
    hid_t f = -1, d = -1, t = -1, s = -1;
    int rank, axis[4];
    hsize_t dims[8];
    int64_t ext[4], n = 1;
    double *raw = NULL, range = 0;
    char lay[32], where[600];
    adm_status st = ADM_OK, heap = ADM_OK;
    memset(img, 0, sizeof *img);
    h5_quiet();
    ADM_TRY(adm_file_check_regular(path, "HDF5 arm"));
    if ((f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: not an HDF5 file", path);
    if (H5Lexists(f, dataset, H5P_DEFAULT) <= 0 || (d = H5Dopen2(f, dataset, H5P_DEFAULT)) < 0) {
        st = ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: no dataset '%s'", path, dataset);
        goto done;
    }
    t = H5Dget_type(d);
    s = H5Dget_space(d);
    if (H5Tget_class(t) != H5T_INTEGER && H5Tget_class(t) != H5T_FLOAT) {
        st = ADM_FAIL(ADM_ERR_DTYPE, "%s: dataset '%s' is neither integer nor float", path, dataset);
        goto done;
    }
    rank = H5Sget_simple_extent_ndims(s);
    if (rank < 2 || rank > 4) {
        st = ADM_FAIL(ADM_ERR_SHAPE, "%s: dataset '%s' has rank %d; an arm has rank 2 to 4 (HW, HWC, CHW, FHW, FHWC, FCHW)",
                      path, dataset, rank);
        goto done;
    }
    H5Sget_simple_extent_dims(s, dims, NULL);
    snprintf(where, sizeof where, "%s: dataset '%s'", path, dataset);
    switch (h5_string_attr(d, where, "layout", lay, sizeof lay, &heap)) {
    case 0: snprintf(lay, sizeof lay, "%s", layout ? layout : rank == 2 ? "HW" : rank == 3 ? "HWC" : "FHWC"); break;
    case 1: break;
    case -2: st = heap; goto done;
    default:
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': attribute 'layout' is not a string", path, dataset);
        goto done;
    }
    if ((st = parse_layout(path, dataset, lay, rank, axis)) != ADM_OK) goto done;
    for (int k = 0; k < 4; k++) ext[k] = axis[k] < 0 ? 1 : (int64_t)dims[axis[k]];
    {
        int64_t v = 1;
        for (int i = 0; i < rank; i++) v = dims[i] && v > ADM_ARM_MAX_VALUES / (int64_t)dims[i] ? ADM_ARM_MAX_VALUES + 1
                                                                                             : v * (int64_t)dims[i];
        if (v > ADM_ARM_MAX_VALUES) {
            st = ADM_FAIL(ADM_ERR_SHAPE, "%s: more than 2^30 values, the limit of an arm (ADM_ARM_MAX_VALUES)", where);
            goto done;
        }
        if (v > 0 && (st = adm_cap_storage_holds(d, dims, rank, v * (int64_t)H5Tget_size(t), where)) != ADM_OK)
            goto done;
    }
    if ((st = adm_image_alloc(img, ext[0], ext[1], ext[2], ext[3])) != ADM_OK) {
        adm_error_prefix("%s: dataset '%s': ", path, dataset);
        goto done;
    }
    n = adm_image_numel(img);
    if (!(raw = malloc(sizeof *raw * (size_t)n))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0) {
        st = ADM_FAIL(ADM_ERR_HDF5, "%s: dataset '%s' could not be read as numbers", path, dataset);
        goto done;
    }
    {
        /* source strides, then the permutation into F, H, W, C */
        int64_t sstride[8], str[4];
        sstride[rank - 1] = 1;
        for (int i = rank - 2; i >= 0; i--) sstride[i] = sstride[i + 1] * (int64_t)dims[i + 1];
        for (int k = 0; k < 4; k++) str[k] = axis[k] < 0 ? 0 : sstride[axis[k]];
        for (int64_t fr = 0, o = 0; fr < ext[0]; fr++)
            for (int64_t y = 0; y < ext[1]; y++)
                for (int64_t x = 0; x < ext[2]; x++)
                    for (int64_t c = 0; c < ext[3]; c++, o++) {
                        double v = raw[fr * str[0] + y * str[1] + x * str[2] + c * str[3]];
                        if (!isfinite(v)) {
                            st = ADM_FAIL(ADM_ERR_RANGE, "%s: dataset '%s' holds %g at [frame %lld, row %lld, column "
                                          "%lld, channel %lld]; arms must be finite",
                                          path, dataset, v, (long long)fr, (long long)y, (long long)x, (long long)c);
                            goto done;
                        }
                        img->data[o] = v;
                    }
    }
    if (H5Aexists(d, "data_range") > 0) {
        hid_t a = H5Aopen(d, "data_range", H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &range) < 0 || !(range > 0) || !isfinite(range)) {
            if (a >= 0) H5Aclose(a);
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': attribute 'data_range' must be a positive number", path,
                          dataset);
            goto done;
        }
        H5Aclose(a);
    } else if (H5Tget_class(t) == H5T_INTEGER) {
        /* skimage's dtype_range: the type's full span (255 for uint8 and int8) */
        size_t bytes = H5Tget_size(t);
        range = ldexp(1.0, 8 * (int)bytes) - 1;
    }
    img->data_range = range;
    {
        char src[1200];
        snprintf(src, sizeof src, "%s:%s", path, dataset);
        st = set_source(img, src);
    }
done:
    free(raw);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (d >= 0) H5Dclose(d);
    adm_cap_heap_forget();
    if (f >= 0) H5Fclose(f);
    if (st != ADM_OK) adm_image_free(img);
    return st;
}

/* ---------------------------------------------------------------- sources */

static int is_hdf5_file(const char *path)
{
    static const unsigned char magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char b[8];
    int fd, yes;
    /* not a regular file: no (the reader then refuses it, without blocking) */
    if (adm_file_open_regular(path, "image", &fd, NULL) != ADM_OK) return 0;
    yes = read(fd, b, 8) == 8 && !memcmp(b, magic, 8);
    close(fd);
    return yes;
}

/* One file: "a.png" or "x.h5:/dataset". */
static adm_status load_one(const char *piece, const char *layout, adm_image *img)
{
    const char *colon = strstr(piece, ":/");
    if (colon) {
        char file[1024];
        size_t n = (size_t)(colon - piece);
        if (n >= sizeof file) return ADM_FAIL(ADM_ERR_INVALID, "path too long: %s", piece);
        memcpy(file, piece, n);
        file[n] = '\0';
        return adm_image_read_h5(file, colon + 1, layout, img);
    }
    if (is_hdf5_file(piece))
        return ADM_FAIL(ADM_ERR_INVALID, "%s is an HDF5 file: name the dataset as %s:/DATASET", piece, piece);
    return adm_image_read_png(piece, img);
}

adm_status adm_image_load(const char *source, const char *layout, adm_image *img)
{
    char *text = adm_strdup(source), *save = NULL, *piece;
    adm_image acc, one;
    int count = 0;
    adm_status st = ADM_OK;
    memset(img, 0, sizeof *img);
    memset(&acc, 0, sizeof acc);
    if (!text) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    if (!*text) {
        free(text);
        return ADM_FAIL(ADM_ERR_INVALID, "an arm's source is empty");
    }
    for (piece = strtok_r(text, ",", &save); piece; piece = strtok_r(NULL, ",", &save), count++) {
        if ((st = load_one(piece, layout, &one)) != ADM_OK) break;
        if (count == 0) {
            acc = one;
            continue;
        }
        if (one.height != acc.height || one.width != acc.width || one.channels != acc.channels ||
            one.data_range != acc.data_range) {
            st = ADM_FAIL(ADM_ERR_SHAPE, "%s is %lld x %lld x %lld (range %g) but the first frame %s is %lld x %lld x %lld "
                          "(range %g): the frames of a video must agree",
                          piece, (long long)one.height, (long long)one.width, (long long)one.channels, one.data_range,
                          acc.source, (long long)acc.height, (long long)acc.width, (long long)acc.channels,
                          acc.data_range);
            adm_image_free(&one);
            break;
        }
        {
            int64_t na = adm_image_numel(&acc), no = adm_image_numel(&one);
            double *p = realloc(acc.data, sizeof *p * (size_t)(na + no));
            if (!p) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory stacking %s", piece);
                adm_image_free(&one);
                break;
            }
            memcpy(p + na, one.data, sizeof *p * (size_t)no);
            acc.data = p;
            acc.frames += one.frames;
            adm_image_free(&one);
        }
    }
    free(text);
    if (st == ADM_OK) st = set_source(&acc, source);
    if (st != ADM_OK) {
        adm_image_free(&acc);
        return st;
    }
    *img = acc;
    return ADM_OK;
}
