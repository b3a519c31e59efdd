/* Arms in and out: PNG through libpng, HDF5 datasets, frames stacked from
 * several files. Every value is kept exactly as stored.
 *
 * Each file is read by one function in two steps (drift_internal.h): what
 * it declares, checked against the limits before anything is allocated,
 * then its values into a place the caller made for them. The drift report
 * runs both steps in a sandbox child (drift_sandbox.c); adm_image_read_png
 * and adm_image_read_h5 run them in this process. */
#include "drift_internal.h"
#include "capture_h5.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/mman.h>
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
    if (img->map_len) munmap(img->data, img->map_len);
    else free(img->data);
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

static const unsigned char hdf5_magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* A PNG: with dst NULL, what it declares (after the expansions) into *pc;
 * else its values into dst, which holds what *pc declares. Everything the
 * header says is checked before a byte is allocated for the image. */
static adm_status png_piece(const char *path, drift_piece *pc, double *dst)
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
    DRIFT_TRACE("PNG", path, "its header");
    ADM_TRY(adm_file_open_regular(path, "PNG image", &fd, &fsize));
    if (!(f = fdopen(fd, "rb"))) {
        st = ADM_FAIL(ADM_ERR_IO, "%s: cannot open PNG image: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8)) {
        fclose(f);
        if (!memcmp(sig, hdf5_magic, 8))
            return ADM_FAIL(ADM_ERR_INVALID, "%s is an HDF5 file: name the dataset as %s:/DATASET", path, path);
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
    if (!dst) {
        pc->frames = 1;
        pc->height = h;
        pc->width = w;
        pc->channels = ch;
        pc->range = depth == 8 ? 255 : 65535;
        goto done;
    }
    if (pc->frames != 1 || pc->height != (int64_t)h || pc->width != (int64_t)w || pc->channels != ch ||
        pc->range != (depth == 8 ? 255 : 65535)) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: changed while it was being read (now %lu x %lu x %d of %d bits)", path,
                      (unsigned long)h, (unsigned long)w, ch, depth);
        goto done;
    }
    DRIFT_TRACE("PNG", path, "its image data");
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
                dst[(int64_t)r * n + k] = depth == 8 ? ctx->rows[r][k]
                                                     : (double)((ctx->rows[r][2 * k] << 8) | ctx->rows[r][2 * k + 1]);
    }
done:
    png_destroy_read_struct(&png, &info, NULL);
    free(ctx->buf);
    free(ctx->rows);
    free(ctx);
    fclose(f);
    return st;
}

adm_status adm_image_read_png(const char *path, adm_image *img)
{
    drift_piece pc;
    adm_status st;
    memset(img, 0, sizeof *img);
    memset(&pc, 0, sizeof pc);
    ADM_TRY(png_piece(path, &pc, NULL));
    if ((st = adm_image_alloc(img, 1, pc.height, pc.width, pc.channels)) != ADM_OK) {
        adm_error_prefix("%s: ", path);
        return st;
    }
    if ((st = png_piece(path, &pc, img->data)) == ADM_OK) {
        img->data_range = pc.range;
        st = set_source(img, path);
    }
    if (st != ADM_OK) adm_image_free(img);
    return st;
}

adm_status drift_png_temp(const adm_image *img, int64_t frame, double lo, double hi, const char *path, char **tmp_out)
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
    *tmp_out = NULL;
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
out:
    if (tmp && st != ADM_OK) {
        unlink(tmp);
        free(tmp);
        tmp = NULL;
    }
    *tmp_out = tmp;
    free(ctx->buf);
    free(ctx->rows);
    free(ctx);
    return st;
}

adm_status adm_image_write_png(const adm_image *img, int64_t frame, double lo, double hi, const char *path)
{
    char *tmp = NULL;
    adm_status st;
    ADM_TRY(drift_png_temp(img, frame, lo, hi, path, &tmp));
    st = rename(tmp, path) == 0 ? ADM_OK : ADM_FAIL(ADM_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (st != ADM_OK) unlink(tmp);
    free(tmp);
    return st;
}

/* ---------------------------------------------------------------- HDF5 */

#define H5_PATH_MAX 1024 /* a dataset's path, and a soft link's target, in bytes */
#define H5_MAX_SOFT 16   /* soft links followed on one path (libhdf5's own default) */
#define LAYOUT_MAX 16    /* bytes of a 'layout' attribute (the longest layout has 4 letters) */

static htri_t h5_is_hdf5(const char *path)
{
#if H5_VERSION_GE(1, 12, 0)
    return H5Fis_accessible(path, H5P_DEFAULT);
#else
    return H5Fis_hdf5(path);
#endif
}

/* The dataset's path with every soft link replaced by its target, and each
 * link on the way a hard or a soft link within the file: an external or
 * user-defined link is refused wherever it is on the path, a soft link to a
 * path through an external link included. libhdf5 is asked about a link
 * only when every group before it was reached through hard links, so it
 * never follows a link of another kind on the way. */
static adm_status h5_resolve(hid_t f, const char *file, const char *dataset, char *out)
{
    char done[H5_PATH_MAX] = "", rest[H5_PATH_MAX], cand[H5_PATH_MAX], comp[H5_PATH_MAX], target[H5_PATH_MAX];
    int hops = 0;
    if (dataset[0] != '/')
        return ADM_FAIL(ADM_ERR_INVALID, "%s: dataset '%s': expected an absolute path such as /img", file, dataset);
    if (strlen(dataset) >= sizeof rest)
        return ADM_FAIL(ADM_ERR_INVALID, "%s: a dataset path of %zu bytes, at most %d", file, strlen(dataset),
                        H5_PATH_MAX - 1);
    snprintf(rest, sizeof rest, "%s", dataset);
    for (;;) {
        char *p = rest;
        size_t k;
        H5L_info_t li;
        htri_t ex;
        while (*p == '/') p++;
        if (!*p) break;
        k = strcspn(p, "/");
        memcpy(comp, p, k);
        comp[k] = '\0';
        memmove(rest, p + k, strlen(p + k) + 1);
        if (!strcmp(comp, ".")) continue;
        if (strlen(done) + 1 + k >= sizeof cand)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': its path grows past %d bytes through soft links", file,
                            dataset, H5_PATH_MAX - 1);
        {
            size_t nd = strlen(done);
            memcpy(cand, done, nd);
            cand[nd] = '/';
            memcpy(cand + nd + 1, comp, k + 1);
        }
        DRIFT_TRACE("HDF5", file, "the link '%s'", cand);
        ex = H5Lexists(f, cand, H5P_DEFAULT);
        if (ex <= 0) {
            if (!strcmp(cand, dataset)) return ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: no dataset '%s'", file, dataset);
            return ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: no dataset '%s' (no link '%s')", file, dataset, cand);
        }
        if (H5Lget_info(f, cand, &li, H5P_DEFAULT) < 0)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': the link '%s' cannot be read", file, dataset, cand);
        if (li.type == H5L_TYPE_HARD) {
            memcpy(done, cand, strlen(cand) + 1);
            continue;
        }
        if (li.type != H5L_TYPE_SOFT)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': '%s' is %s link; an arm is one self-contained file, "
                            "its path may hold only hard and soft links (external links are not allowed)", file, dataset,
                            cand, li.type == H5L_TYPE_EXTERNAL ? "an external" : "a user-defined");
        if (++hops > H5_MAX_SOFT)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': more than %d soft links on its path (a loop?)", file,
                            dataset, H5_MAX_SOFT);
        if (li.u.val_size < 2 || li.u.val_size > sizeof target)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': the soft link '%s' has a target of %zu bytes, expected "
                            "1 to %d", file, dataset, cand, li.u.val_size, H5_PATH_MAX - 1);
        memset(target, 0, sizeof target);
        if (H5Lget_val(f, cand, target, sizeof target, H5P_DEFAULT) < 0)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': the soft link '%s' cannot be read", file, dataset, cand);
        target[li.u.val_size - 1] = '\0';
        if (strlen(target) + strlen(rest) >= sizeof comp)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: dataset '%s': its path grows past %d bytes through soft links", file,
                            dataset, H5_PATH_MAX - 1);
        /* what is left of the path now starts at the target: from the root
         * for an absolute one, else from the group that holds the link */
        {
            size_t nt = strlen(target);
            memmove(rest + nt, rest, strlen(rest) + 1);
            memcpy(rest, target, nt);
        }
        if (target[0] == '/') done[0] = '\0';
    }
    if (!done[0]) return ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: '%s' is the root group, not a dataset", file, dataset);
    memcpy(out, done, strlen(done) + 1);
    return ADM_OK;
}

static void h5_close3(hid_t a, hid_t t, hid_t s)
{
    adm_cap_h5_close(s);
    adm_cap_h5_close(t);
    adm_cap_h5_close(a);
}

/* Opens attribute name of d with its type and space; *a < 0 when absent. */
static adm_status h5_attr_open(hid_t d, const char *file, const char *dataset, const char *where, const char *name,
                               hid_t *a, hid_t *t, hid_t *s)
{
    htri_t ex;
    *a = *t = *s = -1;
    DRIFT_TRACE("HDF5", file, "attribute '%s' of dataset '%s'", name, dataset);
    if ((ex = H5Aexists(d, name)) < 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be looked up", where, name);
    if (ex == 0) return ADM_OK;
    if ((*a = H5Aopen(d, name, H5P_DEFAULT)) < 0 || (*t = H5Aget_type(*a)) < 0 || (*s = H5Aget_space(*a)) < 0) {
        h5_close3(*a, *t, *s);
        *a = *t = *s = -1;
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute '%s' cannot be read", where, name);
    }
    return ADM_OK;
}

/* The 'layout' attribute into buf (LAYOUT_MAX + 1 bytes): one string, of
 * fixed or variable length, of at most LAYOUT_MAX bytes. Its class, its
 * number of elements and its length are checked before H5Aread writes a
 * byte: an array of strings would be written whole into the one string's
 * buffer. */
static adm_status h5_layout_attr(hid_t d, const char *file, const char *dataset, const char *where, char *buf,
                                 int *present)
{
    hid_t a, t, s, mt = -1;
    adm_status st = ADM_OK;
    *present = 0;
    ADM_TRY(h5_attr_open(d, file, dataset, where, "layout", &a, &t, &s));
    if (a < 0) return ADM_OK;
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'layout' must be one string such as \"CHW\" (this is %s)", where,
                      H5Tget_class(t) != H5T_STRING ? "not a string" : "not one element");
        goto done;
    }
    memset(buf, 0, LAYOUT_MAX + 1);
    mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(t)); /* h5py writes UTF-8 */
    if (H5Tis_variable_str(t) > 0) {
        char *v = NULL;
        /* the heap reference and its collection, before libhdf5 follows it */
        if ((st = adm_cap_heap_check(a, where, "layout", LAYOUT_MAX)) != ADM_OK) goto done;
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &v) < 0 || !v) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'layout' cannot be read", where);
            goto done;
        }
        if (strlen(v) > LAYOUT_MAX) st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'layout' is longer than %d bytes", where, LAYOUT_MAX);
        else memcpy(buf, v, strlen(v) + 1);
        H5free_memory(v);
    } else {
        size_t n = H5Tget_size(t);
        if (n == 0 || n > LAYOUT_MAX) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'layout' is a string of %zu bytes; a layout has 2 to 4 letters",
                          where, n);
            goto done;
        }
        H5Tset_size(mt, n);
        H5Tset_strpad(mt, H5T_STR_NULLPAD);
        if (H5Aread(a, mt, buf) < 0) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'layout' cannot be read", where);
            goto done;
        }
    }
    if (st == ADM_OK) *present = 1;
done:
    adm_cap_h5_close(mt);
    h5_close3(a, t, s);
    return st;
}

/* The 'data_range' attribute: one positive finite number, of an integer or
 * a float type. Its class and its number of elements are checked before
 * H5Aread writes into the one double (an array would be written whole). */
static adm_status h5_range_attr(hid_t d, const char *file, const char *dataset, const char *where, double *range,
                                int *present)
{
    hid_t a, t, s;
    H5T_class_t cls;
    adm_status st = ADM_OK;
    *present = 0;
    ADM_TRY(h5_attr_open(d, file, dataset, where, "data_range", &a, &t, &s));
    if (a < 0) return ADM_OK;
    cls = H5Tget_class(t);
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_npoints(s) != 1)
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'data_range' must be one positive number (this is %s)", where,
                      cls != H5T_INTEGER && cls != H5T_FLOAT ? "not a number" : "not one element");
    else if (H5Aread(a, H5T_NATIVE_DOUBLE, range) < 0 || !(*range > 0) || !isfinite(*range))
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: attribute 'data_range' must be a positive number", where);
    else
        *present = 1;
    h5_close3(a, t, s);
    return st;
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

/* An HDF5 dataset, as png_piece: with dst NULL what it declares, else its
 * values. Every link of its path, its type, extents, attributes and
 * storage are checked before a byte is allocated for values. */
static adm_status h5_piece(const char *file, const char *dataset, const char *layout, drift_piece *pc, double *dst)
{
    hid_t f = -1, d = -1, t = -1, s = -1;
    int rank, axis[4], present, identity = 1;
    hsize_t dims[H5S_MAX_RANK];
    int64_t ext[4], v = 1;
    double range = 0, *raw = NULL;
    char lay[LAYOUT_MAX + 1], where[5200], path[H5_PATH_MAX];
    H5T_class_t cls;
    size_t tsize;
    adm_status st = ADM_OK;
    adm_cap_h5_init(); /* no HDF5 plugin is ever loaded for an arm either */
    ADM_TRY(adm_file_check_regular(file, "HDF5 arm"));
    adm_cap_heap_forget();
    DRIFT_TRACE("HDF5", file, "the file's superblock");
    if (h5_is_hdf5(file) <= 0) return ADM_FAIL(ADM_ERR_FORMAT, "%s: not an HDF5 file", file);
    if ((f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT)) < 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the HDF5 file cannot be opened (truncated or corrupt)", file);
    snprintf(where, sizeof where, "%s: dataset '%s'", file, dataset);
    if ((st = h5_resolve(f, file, dataset, path)) != ADM_OK) goto done;
    DRIFT_TRACE("HDF5", file, "dataset '%s'", dataset);
    if ((d = H5Dopen2(f, path, H5P_DEFAULT)) < 0) {
        st = ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: no dataset '%s' (it names a group or another kind of object)", file, dataset);
        goto done;
    }
    DRIFT_TRACE("HDF5", file, "the type and extent of dataset '%s'", dataset);
    if ((t = H5Dget_type(d)) < 0 || (s = H5Dget_space(d)) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its type or extent cannot be read", where);
        goto done;
    }
    cls = H5Tget_class(t);
    tsize = H5Tget_size(t);
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || tsize == 0) {
        st = ADM_FAIL(ADM_ERR_DTYPE, "%s: dataset '%s' is neither integer nor float", file, dataset);
        goto done;
    }
    if (cls == H5T_INTEGER && tsize > 8) {
        st = ADM_FAIL(ADM_ERR_UNSUPPORTED, "%s: integers of %zu bytes; an arm's integers have at most 8", where, tsize);
        goto done;
    }
    rank = H5Sget_simple_extent_type(s) == H5S_SIMPLE ? H5Sget_simple_extent_ndims(s) : 0;
    if (rank < 2 || rank > 4) {
        st = ADM_FAIL(ADM_ERR_SHAPE, "%s: dataset '%s' has rank %d; an arm has rank 2 to 4 (HW, HWC, CHW, FHW, FHWC, FCHW)",
                      file, dataset, rank);
        goto done;
    }
    H5Sget_simple_extent_dims(s, dims, NULL);
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) {
            st = ADM_FAIL(ADM_ERR_SHAPE, "%s: extent 0 in dimension %d; an arm holds at least one value", where, i);
            goto done;
        }
        /* saturates at 2^30 + 1 */
        if (dims[i] > (hsize_t)ADM_ARM_MAX_VALUES || v > ADM_ARM_MAX_VALUES / (int64_t)dims[i]) v = ADM_ARM_MAX_VALUES + 1;
        else v *= (int64_t)dims[i];
    }
    if (v > ADM_ARM_MAX_VALUES) {
        st = ADM_FAIL(ADM_ERR_SHAPE, "%s: more than 2^30 values, the limit of an arm (ADM_ARM_MAX_VALUES)", where);
        goto done;
    }
    if ((st = h5_layout_attr(d, file, dataset, where, lay, &present)) != ADM_OK) goto done;
    if (!present) snprintf(lay, sizeof lay, "%s", layout ? layout : rank == 2 ? "HW" : rank == 3 ? "HWC" : "FHWC");
    if ((st = parse_layout(file, dataset, lay, rank, axis)) != ADM_OK) goto done;
    for (int k = 0; k < 4; k++) ext[k] = axis[k] < 0 ? 1 : (int64_t)dims[axis[k]];
    DRIFT_TRACE("HDF5", file, "the storage of dataset '%s'", dataset);
    if ((st = adm_cap_storage_holds(d, dims, rank, v * (int64_t)tsize, where)) != ADM_OK) goto done;
    if ((st = h5_range_attr(d, file, dataset, where, &range, &present)) != ADM_OK) goto done;
    /* skimage's dtype_range without one: the integer type's full span (255 for uint8 and int8) */
    if (!present) range = cls == H5T_INTEGER ? ldexp(1.0, 8 * (int)tsize) - 1 : 0;
    if (!dst) {
        pc->frames = ext[0];
        pc->height = ext[1];
        pc->width = ext[2];
        pc->channels = ext[3];
        pc->range = range;
        goto done;
    }
    if (pc->frames != ext[0] || pc->height != ext[1] || pc->width != ext[2] || pc->channels != ext[3] ||
        pc->range != range) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: changed while it was being read", where);
        goto done;
    }
    /* in the arm's order already (HW, HWC, FHW, FHWC): read into place */
    for (int k = 0, last = -1; k < 4; k++)
        if (axis[k] >= 0) {
            identity &= axis[k] > last;
            last = axis[k];
        }
    DRIFT_TRACE("HDF5", file, "the data of dataset '%s'", dataset);
    if (!identity && !(raw = malloc(sizeof *raw * (size_t)v))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "%s: out of memory for %lld values", where, (long long)v);
        goto done;
    }
    if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, identity ? dst : raw) < 0) {
        st = ADM_FAIL(ADM_ERR_HDF5, "%s: dataset '%s' could not be read as numbers (a truncated or corrupt file, or a "
                      "compression filter this libhdf5 lacks)", file, dataset);
        goto done;
    }
    if (!identity) {
        /* source strides, then the permutation into F, H, W, C */
        int64_t sstride[4], str[4];
        sstride[rank - 1] = 1;
        for (int i = rank - 2; i >= 0; i--) sstride[i] = sstride[i + 1] * (int64_t)dims[i + 1];
        for (int k = 0; k < 4; k++) str[k] = axis[k] < 0 ? 0 : sstride[axis[k]];
        for (int64_t fr = 0, o = 0; fr < ext[0]; fr++)
            for (int64_t y = 0; y < ext[1]; y++)
                for (int64_t x = 0; x < ext[2]; x++)
                    for (int64_t c = 0; c < ext[3]; c++, o++)
                        dst[o] = raw[fr * str[0] + y * str[1] + x * str[2] + c * str[3]];
    }
done:
    free(raw);
    adm_cap_h5_close(s);
    adm_cap_h5_close(t);
    adm_cap_h5_close(d);
    adm_cap_heap_forget();
    if (f >= 0) {
        DRIFT_TRACE("HDF5", file, "the file's metadata while closing it");
        H5Fclose(f);
    }
    return st;
}

adm_status adm_image_read_h5(const char *path, const char *dataset, const char *layout, adm_image *img)
{
    drift_piece pc;
    adm_status st;
    char *src;
    size_t n;
    memset(img, 0, sizeof *img);
    memset(&pc, 0, sizeof pc);
    pc.file = (char *)path;
    pc.dataset = (char *)dataset;
    ADM_TRY(h5_piece(path, dataset, layout, &pc, NULL));
    if ((st = adm_image_alloc(img, pc.frames, pc.height, pc.width, pc.channels)) != ADM_OK) {
        adm_error_prefix("%s: dataset '%s': ", path, dataset);
        return st;
    }
    n = strlen(path) + strlen(dataset) + 2;
    if ((st = drift_piece_run(&pc, layout, img->data)) == ADM_OK) {
        img->data_range = pc.range;
        if (!(src = malloc(n))) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        } else {
            snprintf(src, n, "%s:%s", path, dataset);
            img->source = src;
        }
    }
    if (st != ADM_OK) adm_image_free(img);
    return st;
}

/* ---------------------------------------------------------------- arms */

adm_status drift_piece_finite(const drift_piece *pc, const double *v)
{
    int64_t H = pc->height, W = pc->width, C = pc->channels, n = pc->frames * H * W * C;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            long long c = i % C, x = i / C % W, y = i / C / W % H, fr = i / C / W / H;
            if (pc->dataset)
                return ADM_FAIL(ADM_ERR_RANGE, "%s: dataset '%s' holds %g at [frame %lld, row %lld, column %lld, "
                                "channel %lld]; arms must be finite", pc->file, pc->dataset, v[i], fr, y, x, c);
            return ADM_FAIL(ADM_ERR_RANGE, "%s holds %g at [row %lld, column %lld, channel %lld]; arms must be finite",
                            pc->file, v[i], y, x, c);
        }
    return ADM_OK;
}

adm_status drift_piece_run(drift_piece *pc, const char *layout, double *dst)
{
    ADM_TRY(pc->dataset ? h5_piece(pc->file, pc->dataset, layout, pc, dst) : png_piece(pc->file, pc, dst));
    return dst ? drift_piece_finite(pc, dst) : ADM_OK;
}

static adm_status plan_fail(const drift_plan *p, adm_status st)
{
    adm_error_prefix("%s", p->prefix ? p->prefix : "");
    return st;
}

void drift_plan_free(drift_plan *p)
{
    for (int i = 0; i < p->n_pieces; i++) {
        free(p->pieces[i].file);
        free(p->pieces[i].dataset);
    }
    free(p->pieces);
    free(p->name);
    free(p->source);
    free(p->layout);
    free(p->prefix);
    memset(p, 0, sizeof *p);
}

adm_status drift_plan_init(drift_plan *p, const char *name, const char *source, const char *layout, const char *prefix)
{
    char *text, *save = NULL, *piece;
    int cap = 0;
    adm_status st = ADM_OK;
    memset(p, 0, sizeof *p);
    p->name = adm_strdup(name);
    p->source = adm_strdup(source);
    p->prefix = adm_strdup(prefix);
    p->layout = layout ? adm_strdup(layout) : NULL;
    text = adm_strdup(source);
    if (!p->name || !p->source || !p->prefix || (layout && !p->layout) || !text) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (piece = strtok_r(text, ",", &save); piece; piece = strtok_r(NULL, ",", &save)) {
        const char *colon = strstr(piece, ":/");
        drift_piece *pc;
        if (p->n_pieces == DRIFT_MAX_FRAMES) {
            st = plan_fail(p, ADM_FAIL(ADM_ERR_INVALID, "more than %d files; an arm has at most %d frames", DRIFT_MAX_FRAMES,
                                       DRIFT_MAX_FRAMES));
            goto done;
        }
        if (p->n_pieces == cap) {
            int c = cap ? 2 * cap : 4;
            drift_piece *q = realloc(p->pieces, sizeof *q * (size_t)c);
            if (!q) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
                goto done;
            }
            p->pieces = q;
            cap = c;
        }
        pc = &p->pieces[p->n_pieces];
        memset(pc, 0, sizeof *pc);
        pc->file = colon ? malloc((size_t)(colon - piece) + 1) : adm_strdup(piece);
        pc->dataset = colon ? adm_strdup(colon + 1) : NULL;
        p->n_pieces++;
        if (!pc->file || (colon && !pc->dataset)) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (colon) {
            memcpy(pc->file, piece, (size_t)(colon - piece));
            pc->file[colon - piece] = '\0';
        }
    }
    if (p->n_pieces == 0) st = plan_fail(p, ADM_FAIL(ADM_ERR_INVALID, "an arm's source is empty"));
done:
    free(text);
    return st;
}

static const char *piece_text(const drift_piece *pc, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", pc->file, pc->dataset ? ":" : "", pc->dataset ? pc->dataset : "");
    return buf;
}

adm_status drift_plan_check(drift_plan *p)
{
    const drift_piece *a = &p->pieces[0];
    p->frames = p->values = 0;
    for (int j = 0; j < p->n_pieces; j++) {
        const drift_piece *b = &p->pieces[j];
        char ta[600], tb[600];
        if (b->height != a->height || b->width != a->width || b->channels != a->channels || b->range != a->range)
            return plan_fail(p, ADM_FAIL(ADM_ERR_SHAPE, "%s is %lld x %lld x %lld (range %g) but the first frame %s is "
                                         "%lld x %lld x %lld (range %g): the frames of a video must agree",
                                         piece_text(b, tb, sizeof tb), (long long)b->height, (long long)b->width,
                                         (long long)b->channels, b->range, piece_text(a, ta, sizeof ta),
                                         (long long)a->height, (long long)a->width, (long long)a->channels, a->range));
        /* each piece was checked to hold at most 2^30 values, and there
         * are at most DRIFT_MAX_FRAMES: no overflow */
        p->frames += b->frames;
        p->values += b->frames * b->height * b->width * b->channels;
        if (p->values > ADM_ARM_MAX_VALUES)
            return plan_fail(p, ADM_FAIL(ADM_ERR_SHAPE, "%lld frames of %lld x %lld x %lld (up to %s) are %lld values, "
                                         "above 2^30, the limit of an arm (ADM_ARM_MAX_VALUES)", (long long)p->frames,
                                         (long long)a->height, (long long)a->width, (long long)a->channels,
                                         piece_text(b, tb, sizeof tb), (long long)p->values));
    }
    return ADM_OK;
}

adm_status adm_image_load(const char *source, const char *layout, adm_image *img)
{
    drift_plan p;
    adm_status st;
    memset(img, 0, sizeof *img);
    if ((st = drift_plan_init(&p, "", source, layout, "")) == ADM_OK && (st = drift_plans_declare(&p, 1)) == ADM_OK &&
        (st = drift_plan_check(&p)) == ADM_OK)
        st = drift_plans_read(&p, 1, img);
    drift_plan_free(&p);
    return st;
}
