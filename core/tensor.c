/* Tensors: shapes with overflow checks, strided views that cannot read
 * outside their storage, exact element access. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "adm_core.h"
#include "adm_mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

void adm_mem_huge(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, e = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
    if (p && bytes >= ((size_t)4 << 20) && e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

adm_status adm_shape_numel(int ndim, const int64_t *shape, int64_t *numel)
{
    int64_t n = 1;
    char buf[160];
    if (ndim < 0 || ndim > ADM_MAX_DIMS)
        return ADM_FAIL(ADM_ERR_SHAPE, "rank %d is outside 0..%d", ndim, ADM_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return ADM_FAIL(ADM_ERR_SHAPE, "negative extent in shape %s",
                            adm_shape_str(ndim, shape, buf, sizeof buf));
    /* The non-zero extents too: an empty tensor's strides are their
     * products (found by fuzzing the sandbox's decoder: [0, 2^39, 2^39]
     * overflowed the stride computation). */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) continue;
        if (n > ADM_MAX_ELEMENTS / shape[i])
            return ADM_FAIL(ADM_ERR_OVERFLOW, "shape %s has more than 2^40 elements",
                            adm_shape_str(ndim, shape, buf, sizeof buf));
        n *= shape[i];
    }
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) n = 0;
    *numel = n;
    return ADM_OK;
}

const char *adm_shape_str(int ndim, const int64_t *shape, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

static void contiguous_strides(int ndim, const int64_t *shape, int64_t *stride)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

/* Smallest and largest storage offset a view addresses; requires numel>0. */
static void extent(const adm_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t a = t->offset, b = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        int64_t span = (t->shape[i] - 1) * t->stride[i];
        if (span > 0) b += span; else a += span;
    }
    *lo = a;
    *hi = b;
}

static adm_status check_view(const adm_tensor *t)
{
    int64_t n, lo, hi;
    char buf[160];
    ADM_TRY(adm_shape_numel(t->ndim, t->shape, &n));
    if (n == 0) return ADM_OK;
    for (int i = 0; i < t->ndim; i++) {
        int64_t s = t->stride[i] < 0 ? -t->stride[i] : t->stride[i];
        if (s > ADM_MAX_ELEMENTS)
            return ADM_FAIL(ADM_ERR_OVERFLOW, "stride %lld is absurd", (long long)t->stride[i]);
    }
    extent(t, &lo, &hi);
    if (lo < 0 || hi >= t->capacity)
        return ADM_FAIL(ADM_ERR_SHAPE,
                        "view %s reads storage offsets %lld..%lld outside 0..%lld",
                        adm_shape_str(t->ndim, t->shape, buf, sizeof buf),
                        (long long)lo, (long long)hi, (long long)t->capacity - 1);
    return ADM_OK;
}

adm_status adm_tensor_alloc(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape)
{
    const adm_format_info *f = adm_format_get(dt);
    int64_t n;
    memset(t, 0, sizeof *t);
    if (!f) return ADM_FAIL(ADM_ERR_DTYPE, "alloc: invalid dtype %d", (int)dt);
    ADM_TRY(adm_shape_numel(ndim, shape, &n));
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    contiguous_strides(ndim, shape, t->stride);
    t->data = calloc((size_t)(n > 0 ? n : 1), (size_t)f->storage_bytes);
    adm_mem_huge(t->data, (size_t)(n > 0 ? n : 1) * (size_t)f->storage_bytes);
    if (!t->data) {
        memset(t, 0, sizeof *t);
        return ADM_FAIL(ADM_ERR_NOMEM, "cannot allocate %lld elements of %s",
                        (long long)n, f->name);
    }
    t->capacity = n;
    t->owned = 1;
    return ADM_OK;
}

adm_status adm_tensor_wrap(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape,
                           const int64_t *stride, int64_t offset, void *data,
                           int64_t capacity)
{
    adm_tensor v;
    memset(&v, 0, sizeof v);
    if (!adm_format_get(dt)) return ADM_FAIL(ADM_ERR_DTYPE, "wrap: invalid dtype %d", (int)dt);
    if (ndim < 0 || ndim > ADM_MAX_DIMS)
        return ADM_FAIL(ADM_ERR_SHAPE, "rank %d is outside 0..%d", ndim, ADM_MAX_DIMS);
    if (capacity < 0) return ADM_FAIL(ADM_ERR_INVALID, "wrap: negative capacity");
    v.dtype = dt;
    v.ndim = ndim;
    memcpy(v.shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (stride) memcpy(v.stride, stride, sizeof(int64_t) * (size_t)ndim);
    else contiguous_strides(ndim, shape, v.stride);
    v.offset = offset;
    v.data = data;
    v.capacity = capacity;
    ADM_TRY(check_view(&v));
    *t = v;
    return ADM_OK;
}

void adm_tensor_free(adm_tensor *t)
{
    if (!t) return;
    if (t->owned) free(t->data);
    memset(t, 0, sizeof *t);
}

int64_t adm_tensor_numel(const adm_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

int adm_tensor_is_contiguous(const adm_tensor *t)
{
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

int64_t adm_tensor_offset_of(const adm_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->stride[i];
    return off;
}

int64_t adm_tensor_offset_linear(const adm_tensor *t, int64_t i)
{
    int64_t off = t->offset;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t ext = t->shape[d];
        if (ext <= 0) return t->offset;
        off += (i % ext) * t->stride[d];
        i /= ext;
    }
    return off;
}

static adm_status check_dim(const adm_tensor *t, int d, const char *what)
{
    if (d < 0 || d >= t->ndim)
        return ADM_FAIL(ADM_ERR_INVALID, "%s: dimension %d out of range for rank %d", what, d, t->ndim);
    return ADM_OK;
}

adm_status adm_tensor_transpose(const adm_tensor *src, int d0, int d1, adm_tensor *view)
{
    adm_tensor v = *src;
    int64_t tmp;
    ADM_TRY(check_dim(src, d0, "transpose"));
    ADM_TRY(check_dim(src, d1, "transpose"));
    tmp = v.shape[d0]; v.shape[d0] = v.shape[d1]; v.shape[d1] = tmp;
    tmp = v.stride[d0]; v.stride[d0] = v.stride[d1]; v.stride[d1] = tmp;
    v.owned = 0;
    *view = v;
    return ADM_OK;
}

adm_status adm_tensor_slice(const adm_tensor *src, int dim, int64_t start, int64_t stop,
                            int64_t step, adm_tensor *view)
{
    adm_tensor v = *src;
    int64_t ext;
    ADM_TRY(check_dim(src, dim, "slice"));
    if (step < 1) return ADM_FAIL(ADM_ERR_INVALID, "slice: step %lld must be >= 1", (long long)step);
    ext = src->shape[dim];
    if (start < 0 || start > ext)
        return ADM_FAIL(ADM_ERR_INVALID, "slice: start %lld outside 0..%lld", (long long)start, (long long)ext);
    if (stop > ext) stop = ext;
    if (stop < start) stop = start;
    v.shape[dim] = (stop - start + step - 1) / step;
    if (v.shape[dim] > 0) v.offset += start * src->stride[dim];
    if (src->stride[dim] != 0 && step > ADM_MAX_ELEMENTS / (src->stride[dim] < 0 ? -src->stride[dim] : src->stride[dim]))
        return ADM_FAIL(ADM_ERR_OVERFLOW, "slice: step %lld overflows the stride", (long long)step);
    v.stride[dim] = src->stride[dim] * step;
    v.owned = 0;
    ADM_TRY(check_view(&v));
    *view = v;
    return ADM_OK;
}

adm_status adm_tensor_broadcast(const adm_tensor *src, int ndim, const int64_t *shape,
                                adm_tensor *view)
{
    adm_tensor v = *src;
    int lead = ndim - src->ndim;
    char a[160], b[160];
    if (ndim > ADM_MAX_DIMS || lead < 0)
        return ADM_FAIL(ADM_ERR_SHAPE, "cannot broadcast rank %d to rank %d", src->ndim, ndim);
    for (int i = 0; i < ndim; i++) {
        int s = i - lead;
        int64_t from = s >= 0 ? src->shape[s] : 1;
        if (shape[i] < 0) return ADM_FAIL(ADM_ERR_SHAPE, "broadcast: negative extent");
        if (from != shape[i] && from != 1)
            return ADM_FAIL(ADM_ERR_SHAPE, "cannot broadcast %s to %s",
                            adm_shape_str(src->ndim, src->shape, a, sizeof a),
                            adm_shape_str(ndim, shape, b, sizeof b));
        v.shape[i] = shape[i];
        v.stride[i] = (s >= 0 && from == shape[i]) ? src->stride[s] : 0;
    }
    v.ndim = ndim;
    v.owned = 0;
    ADM_TRY(check_view(&v));
    *view = v;
    return ADM_OK;
}

uint64_t adm_tensor_bits(const adm_tensor *t, int64_t i)
{
    int64_t off = adm_tensor_offset_linear(t, i);
    switch (adm_format_get(t->dtype)->storage_bytes) {
    case 1: return ((const uint8_t *)t->data)[off];
    case 2: return ((const uint16_t *)t->data)[off];
    case 4: return ((const uint32_t *)t->data)[off];
    default: return ((const uint64_t *)t->data)[off];
    }
}

void adm_tensor_set_bits(adm_tensor *t, int64_t i, uint64_t bits)
{
    int64_t off = adm_tensor_offset_linear(t, i);
    switch (adm_format_get(t->dtype)->storage_bytes) {
    case 1: ((uint8_t *)t->data)[off] = (uint8_t)bits; break;
    case 2: ((uint16_t *)t->data)[off] = (uint16_t)bits; break;
    case 4: ((uint32_t *)t->data)[off] = (uint32_t)bits; break;
    default: ((uint64_t *)t->data)[off] = bits; break;
    }
}

double adm_tensor_get(const adm_tensor *t, int64_t i)
{
    uint64_t b = adm_tensor_bits(t, i);
    switch (t->dtype) {
    case ADM_BF16: return adm_bf16_to_f32((uint16_t)b);
    case ADM_FP16: return adm_fp16_to_f32((uint16_t)b);
    case ADM_FP32: return adm_f32_from_bits((uint32_t)b);
    case ADM_FP64: return adm_f64_from_bits(b);
    default: return adm_format_decode(t->dtype, b);
    }
}

adm_status adm_tensor_contiguous(const adm_tensor *src, adm_tensor *dst)
{
    adm_tensor out;
    int64_t n = adm_tensor_numel(src);
    size_t es = (size_t)adm_format_get(src->dtype)->storage_bytes;
    ADM_TRY(adm_tensor_alloc(&out, src->dtype, src->ndim, src->shape));
    if (adm_tensor_is_contiguous(src)) {
        if (n > 0) memcpy(out.data, (const char *)src->data + (size_t)src->offset * es, (size_t)n * es);
    } else {
        for (int64_t i = 0; i < n; i++) adm_tensor_set_bits(&out, i, adm_tensor_bits(src, i));
    }
    *dst = out;
    return ADM_OK;
}

adm_status adm_tensor_to_f64(const adm_tensor *t, double *out)
{
    int64_t n = adm_tensor_numel(t);
    if (adm_tensor_is_contiguous(t)) {
        switch (t->dtype) {
        case ADM_BF16: {
            const uint16_t *p = (const uint16_t *)t->data + t->offset;
            for (int64_t i = 0; i < n; i++) out[i] = adm_bf16_to_f32(p[i]);
            return ADM_OK;
        }
        case ADM_FP16: {
            const uint16_t *p = (const uint16_t *)t->data + t->offset;
            for (int64_t i = 0; i < n; i++) out[i] = adm_fp16_to_f32(p[i]);
            return ADM_OK;
        }
        case ADM_FP32: {
            const float *p = (const float *)t->data + t->offset;
            for (int64_t i = 0; i < n; i++) out[i] = p[i];
            return ADM_OK;
        }
        case ADM_FP64:
            memcpy(out, (const double *)t->data + t->offset, sizeof(double) * (size_t)n);
            return ADM_OK;
        default:
            break;
        }
    }
    for (int64_t i = 0; i < n; i++) out[i] = adm_tensor_get(t, i);
    return ADM_OK;
}

adm_status adm_tensor_from_f64(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape,
                               const double *values, adm_round mode, unsigned flags)
{
    adm_tensor out;
    int64_t n;
    ADM_TRY(adm_tensor_alloc(&out, dt, ndim, shape));
    n = adm_tensor_numel(&out);
    for (int64_t i = 0; i < n; i++) {
        uint64_t b;
        adm_status s = adm_format_encode(dt, values[i], mode, flags, &b);
        if (s != ADM_OK) {
            adm_tensor_free(&out);
            adm_error_prefix("element %lld: ", (long long)i);
            return s;
        }
        adm_tensor_set_bits(&out, i, b);
    }
    *t = out;
    return ADM_OK;
}
