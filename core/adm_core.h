/* admit core: status codes, numeric formats and tensors.
 *
 * Everything a verdict rests on is decided here at the bit level: how a
 * value rounds into bf16/fp16/fp8/fp4, what its ulp is, and which bytes a
 * strided view reads. The fast inline conversions at the bottom are the
 * ones emulations use on hot paths; the generic encoder in format.c is the
 * independent definition they are tested against (exhaustively).
 */
#ifndef ADM_CORE_H
#define ADM_CORE_H

#include "adm_export.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_VERSION_MAJOR 0
#define ADM_VERSION_MINOR 1
#define ADM_VERSION_PATCH 0
#define ADM_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* Status codes                                                        */
/* ------------------------------------------------------------------ */

/* Stable numbers: they appear in captures (refusal of a special case) and
 * in JSON reports. Append only. */
typedef enum adm_status {
    ADM_OK = 0,
    ADM_ERR_INVALID = 1,      /* bad argument, parameter or usage */
    ADM_ERR_NOMEM = 2,        /* an allocation failed */
    ADM_ERR_OVERFLOW = 3,     /* a size or index does not fit */
    ADM_ERR_RANGE = 4,        /* a value is not representable */
    ADM_ERR_DTYPE = 5,        /* unknown or unsupported element type */
    ADM_ERR_SHAPE = 6,        /* a shape does not fit */
    ADM_ERR_IO = 7,           /* a file could not be read or written */
    ADM_ERR_FORMAT = 8,       /* a file is malformed */
    ADM_ERR_VERSION = 9,      /* a file is of a newer format version */
    ADM_ERR_NOT_FOUND = 10,   /* a named thing does not exist */
    ADM_ERR_UNSUPPORTED = 11, /* valid, but not implemented here */
    ADM_ERR_HDF5 = 12,        /* the HDF5 library reported an error */
    ADM_ERR_JSON = 13,        /* malformed JSON */
    ADM_ERR_CUDA = 14,        /* CUDA, cuBLAS or cublasLt reported an error */
    ADM_ERR_NO_DEVICE = 15,   /* no usable GPU */
    ADM_ERR_INTERNAL = 16,    /* a broken invariant: a bug in admit */
    ADM_STATUS_COUNT
} adm_status;

ADM_API const char *adm_strerror(adm_status s);
/* Short stable identifier ("ADM_ERR_SHAPE"), for reports and captures. */
ADM_API const char *adm_status_name(adm_status s);
ADM_API adm_status adm_status_from_name(const char *name, adm_status *out);

/* The last error of this thread: a code, a message and where it was raised.
 * Library functions that fail set it; callers may prefix context (the file,
 * the dataset) with adm_error_prefix before returning the code upward. */
ADM_API adm_status adm_error_set(adm_status code, const char *file, int line,
                                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
ADM_API void adm_error_prefix(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
ADM_API const char *adm_error_message(void);
ADM_API const char *adm_error_where(void);
ADM_API adm_status adm_error_code(void);
ADM_API void adm_error_clear(void);

#define ADM_FAIL(code, ...) adm_error_set((code), __FILE__, __LINE__, __VA_ARGS__)
#define ADM_TRY(expr)                                                        \
    do {                                                                     \
        adm_status adm_try_s_ = (expr);                                      \
        if (adm_try_s_ != ADM_OK) return adm_try_s_;                         \
    } while (0)

/* Text from inputs (file names, JSON strings, HDF5 attributes) on its way
 * into a message or a report. adm_text_escape copies in to out (cap bytes,
 * always NUL-terminated when cap > 0) with C0 and C1 control characters,
 * DEL and every byte that is not part of well-formed UTF-8 written as \n,
 * \r, \t or \xHH, so that an input cannot split, overwrite or corrupt a
 * line; it never cuts an escape or a UTF-8 sequence in two. Returns the
 * length the whole escaped text needs (without the NUL). */
ADM_API size_t adm_text_escape(char *out, size_t cap, const char *in);
/* The same for XML and HTML text and attribute values: everything
 * adm_text_escape escapes, written as it writes it (XML 1.0 allows most
 * control characters not even as character references, and no malformed
 * UTF-8), then & < > " ' as entities. The one escaper of every XML and
 * HTML report (JUnit, the verdict page, the drift page). */
ADM_API size_t adm_xml_escape(char *out, size_t cap, const char *in);
/* 1 when s is well-formed UTF-8 without control characters (nothing for
 * adm_text_escape to change). */
ADM_API int adm_text_clean(const char *s);
/* The name alphabet of captures and tables: 1 to 128 characters of
 * [A-Za-z0-9_.+-]. ADM_ERR_INVALID naming `what` (escaped) otherwise. */
#define ADM_NAME_MAX 128
ADM_API adm_status adm_name_check(const char *what, const char *name);

/* Opens path for reading only when it is a regular file: a FIFO, a device,
 * a socket or a directory is refused (ADM_ERR_IO, "not a regular file")
 * without blocking; O_NONBLOCK on the open and fstat on the descriptor, so
 * the file checked is the file read. `what` names it in messages ("capture",
 * "fusion table"). Returns the descriptor in *fd (close it), its size in
 * *size (may be NULL). */
ADM_API adm_status adm_file_open_regular(const char *path, const char *what, int *fd, int64_t *size);
/* The same check without keeping the file open (for libraries that open
 * by name: libhdf5, dlopen). */
ADM_API adm_status adm_file_check_regular(const char *path, const char *what);

/* The ADM_* environment variables the library reads (ADM_SANDBOX_MEMORY,
 * _CPU, _TIMEOUT; ADM_PLUGIN_MEMORY, _CPU, _TIMEOUT; ADM_CAPTURE_MAX_BYTES;
 * ADM_MPFR_BUDGET; the switches ADM_SANDBOX and ADM_PLUGIN_SANDBOX), each
 * checked against its range (RELIABILITY.md, Limits): ADM_OK, or
 * ADM_ERR_INVALID naming the first invalid variable and its range. The
 * library refuses to work under an invalid one rather than replace it. */
ADM_API adm_status adm_env_check(void);

/* A copy of s ("" for NULL), or NULL when out of memory. */
ADM_API char *adm_strdup(const char *s);
/* A new temporary file beside path (path.tmp.XXXXXX, the usual mode), open
 * as *fd, its name in *tmp (free it); the caller renames it into place when
 * complete, or unlinks it. ADM_ERR_IO when path exists and is not a regular
 * file (a device, a FIFO, a folder): the rename would replace it. */
ADM_API adm_status adm_temp_beside(const char *path, char **tmp, int *fd);

/* ------------------------------------------------------------------ */
/* Numeric formats                                                     */
/* ------------------------------------------------------------------ */

typedef enum adm_dtype {
    ADM_DTYPE_INVALID = 0,
    ADM_BF16,
    ADM_FP16,
    ADM_FP32,
    ADM_FP64,
    ADM_E4M3,   /* fp8 e4m3 "fn": no Inf, NaN only at S.1111.111, max 448 */
    ADM_E5M2,   /* fp8 e5m2: IEEE-like, Inf and NaN, max 57344 */
    ADM_E2M1,   /* fp4 e2m1: no Inf, no NaN, max 6; one per byte in memory */
    ADM_DTYPE_COUNT
} adm_dtype;

typedef struct adm_format_info {
    const char *name;    /* as written in captures: "bf16", "fp8_e4m3", ... */
    int bits;            /* encoding width */
    int exp_bits;
    int man_bits;        /* stored fraction bits; precision p = man_bits + 1 */
    int bias;
    int emin;            /* exponent of the smallest normal, 1 - bias */
    int emax;            /* exponent of the largest finite binade */
    int has_inf;
    int has_nan;
    int storage_bytes;   /* bytes per element in memory and in captures */
    double max_finite;
    double min_normal;
    double min_subnormal;
    uint64_t inf_bits;   /* +Inf pattern; 0 when the format has none */
    uint64_t nan_bits;   /* canonical +NaN pattern; 0 when it has none */
    uint64_t max_bits;   /* +max finite pattern */
} adm_format_info;

/* NULL for ADM_DTYPE_INVALID or out of range. */
ADM_API const adm_format_info *adm_format_get(adm_dtype dt);
ADM_API const char *adm_dtype_name(adm_dtype dt);
ADM_API adm_status adm_dtype_from_name(const char *name, adm_dtype *out);

typedef enum adm_round {
    ADM_RNE = 0,  /* to nearest, ties to even */
    ADM_RTZ = 1,  /* toward zero */
    ADM_RDN = 2,  /* toward -Inf */
    ADM_RUP = 3   /* toward +Inf */
} adm_round;

/* Overflow (and +-Inf input) becomes +-max finite instead of Inf (or NaN in
 * e4m3). This is the cuda_fp8 __NV_SATFINITE behaviour and what quantizers
 * do by clamping; a plain cast (PyTorch, ml_dtypes) does not saturate. */
#define ADM_CVT_SATFINITE 1u

/* Rounds the double x into dt exactly as IEEE 754 prescribes for the mode,
 * with gradual underflow; the result is correctly rounded (error 0 ulp
 * beyond the rounding itself). Overflow without ADM_CVT_SATFINITE:
 *   RNE, and directed modes rounding away from zero: Inf where the format
 *   has one, NaN in e4m3 (as PyTorch and ml_dtypes cast), max in e2m1;
 *   RTZ, and directed modes rounding toward zero: +-max finite.
 * NaN keeps its sign and becomes the canonical quiet NaN; in e2m1, which has
 * no NaN, it is refused with ADM_ERR_RANGE. Signed zeros are kept. */
ADM_API adm_status adm_format_encode(adm_dtype dt, double x, adm_round mode,
                                     unsigned flags, uint64_t *bits);
/* Exact: every value of every format is a double. */
ADM_API double adm_format_decode(adm_dtype dt, uint64_t bits);
/* decode(encode(x)); NaN where encode refuses. */
ADM_API double adm_format_round(adm_dtype dt, double x, adm_round mode, unsigned flags);
/* ulp(x) = 2^(max(floor(log2|x|), emin) - man_bits): the spacing of dt's
 * values in the binade of |x| (Goldberg's definition); ulp(0) is the
 * smallest subnormal. Beyond max finite, the spacing of the top binade.
 * NaN for NaN or Inf. */
ADM_API double adm_format_ulp(adm_dtype dt, double x);
/* The largest value of dt <= x and the smallest >= x (equal when x is
 * representable). Beyond the finite range they are +-max and +-Inf (or
 * ADM_ERR_RANGE where the format has no Inf). */
ADM_API adm_status adm_format_neighbors(adm_dtype dt, double x, double *below,
                                        double *above);
/* The next encoding toward +Inf (dir > 0) or -Inf (dir < 0), as IEEE
 * nextUp/nextDown; ADM_ERR_RANGE past the end of the format or for NaN. */
ADM_API adm_status adm_format_next(adm_dtype dt, uint64_t bits, int dir,
                                   uint64_t *out);
/* Classification of an encoding, without decoding. */
ADM_API int adm_format_isnan(adm_dtype dt, uint64_t bits);
ADM_API int adm_format_isinf(adm_dtype dt, uint64_t bits);

/* Fast conversions for the emulations' hot loops. Each is bit-identical to
 * adm_format_encode of the float's value (NaN: quiet, sign kept, payload
 * not specified) - proven by tests over all 2^32 inputs. */
static inline uint32_t adm_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float adm_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t adm_f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double adm_f64_from_bits(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static inline float adm_bf16_to_f32(uint16_t h) { return adm_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t adm_bf16_from_f32(float f)
{
    uint32_t x = adm_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    /* Adding 0x7fff plus the kept lsb rounds half to even; a carry out of
     * the fraction moves into the exponent, and past 0x7f7f into Inf, as
     * IEEE requires. */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static inline uint16_t adm_bf16_from_f32_rtz(float f)
{
    uint32_t x = adm_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)(x >> 16);
}

static inline float adm_fp16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f) return adm_f32_from_bits(s | 0x7f800000u | (m << 13));
    if (e != 0) return adm_f32_from_bits(s | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return adm_f32_from_bits(s);
    /* subnormal fp16 m * 2^-24 is a normal fp32 */
    {
        int sh = 0;
        while (!(m & 0x400u)) { m <<= 1; sh++; }
        return adm_f32_from_bits(s | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ffu) << 13));
    }
}

static inline uint16_t adm_fp16_from_f32_mode(float f, int rtz)
{
    uint32_t x = adm_f32_bits(f);
    uint16_t s = (uint16_t)((x >> 16) & 0x8000u);
    x &= 0x7fffffffu;
    if (x >= 0x7f800000u)
        return (uint16_t)(s | (x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u));
    if (rtz) {
        if (x >= 0x47800000u) return (uint16_t)(s | 0x7bffu);      /* >= 65536 */
        if (x >= 0x38800000u)                                       /* normal */
            return (uint16_t)(s | ((x - ((uint32_t)112 << 23)) >> 13));
        if (x < 0x33800000u) return s;                              /* < 2^-24 */
        {
            uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
            return (uint16_t)(s | (m >> (126u - e)));
        }
    }
    if (x >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);           /* >= 65520 */
    if (x >= 0x38800000u) {                                         /* >= 2^-14 */
        uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        return (uint16_t)(s | (x >> 13));
    }
    if (x <= 0x33000000u) return s;                                 /* <= 2^-25 */
    {
        /* value m * 2^(e-150) in units of the subnormal quantum 2^-24 */
        uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
        uint32_t sh = 126u - e, r = m >> sh, rem = m & ((1u << sh) - 1u),
                 half = 1u << (sh - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(s | r);
    }
}
static inline uint16_t adm_fp16_from_f32(float f) { return adm_fp16_from_f32_mode(f, 0); }
static inline uint16_t adm_fp16_from_f32_rtz(float f) { return adm_fp16_from_f32_mode(f, 1); }

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

#define ADM_MAX_DIMS 8
/* No tensor may hold more elements than this (2^40): far beyond any DiT
 * activation, small enough that byte counts cannot overflow int64. */
#define ADM_MAX_ELEMENTS ((int64_t)1 << 40)

/* A plain descriptor. Strides and offset count elements; a stride of 0
 * broadcasts. `capacity` is how many elements may be addressed from
 * `data`: every view is checked against it, so no view reads outside its
 * storage. An owned tensor frees `data` in adm_tensor_free; a view never
 * owns and must not outlive the tensor it looks at. */
typedef struct adm_tensor {
    adm_dtype dtype;
    int ndim;
    int64_t shape[ADM_MAX_DIMS];
    int64_t stride[ADM_MAX_DIMS];
    int64_t offset;
    void *data;
    int64_t capacity;
    int owned;
} adm_tensor;

/* Element count with overflow checks; ADM_ERR_OVERFLOW past
 * ADM_MAX_ELEMENTS, ADM_ERR_SHAPE for a negative extent. */
ADM_API adm_status adm_shape_numel(int ndim, const int64_t *shape, int64_t *numel);
/* "[4096, 3072]" into buf (always terminated). */
ADM_API const char *adm_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

/* Contiguous row-major, zero-filled, owned. */
ADM_API adm_status adm_tensor_alloc(adm_tensor *t, adm_dtype dt, int ndim,
                                    const int64_t *shape);
/* A borrowed view of caller storage; NULL stride means contiguous. */
ADM_API adm_status adm_tensor_wrap(adm_tensor *t, adm_dtype dt, int ndim,
                                   const int64_t *shape, const int64_t *stride,
                                   int64_t offset, void *data, int64_t capacity);
ADM_API void adm_tensor_free(adm_tensor *t);
ADM_API int64_t adm_tensor_numel(const adm_tensor *t);
ADM_API int adm_tensor_is_contiguous(const adm_tensor *t);
/* Storage offset (elements) of a multi-index; no bounds check. */
ADM_API int64_t adm_tensor_offset_of(const adm_tensor *t, const int64_t *idx);
/* Storage offset of the i-th element in row-major logical order. */
ADM_API int64_t adm_tensor_offset_linear(const adm_tensor *t, int64_t i);

ADM_API adm_status adm_tensor_transpose(const adm_tensor *src, int d0, int d1,
                                        adm_tensor *view);
/* Elements start, start+step, ... below stop along dim (step >= 1; stop is
 * clamped to the extent). */
ADM_API adm_status adm_tensor_slice(const adm_tensor *src, int dim, int64_t start,
                                    int64_t stop, int64_t step, adm_tensor *view);
/* NumPy broadcasting to a shape of ndim >= src->ndim: new leading dims and
 * extents of 1 get stride 0. */
ADM_API adm_status adm_tensor_broadcast(const adm_tensor *src, int ndim,
                                        const int64_t *shape, adm_tensor *view);
/* An owned contiguous copy with the same dtype (bits copied, not values). */
ADM_API adm_status adm_tensor_contiguous(const adm_tensor *src, adm_tensor *dst);
/* Raw encoding of element i (row-major logical order). */
ADM_API uint64_t adm_tensor_bits(const adm_tensor *t, int64_t i);
ADM_API void adm_tensor_set_bits(adm_tensor *t, int64_t i, uint64_t bits);
/* Exact value of element i. */
ADM_API double adm_tensor_get(const adm_tensor *t, int64_t i);
/* All elements, exactly, into out[numel] (row-major). */
ADM_API adm_status adm_tensor_to_f64(const adm_tensor *t, double *out);
/* Rounds out-of-place values into an owned contiguous tensor of dt. */
ADM_API adm_status adm_tensor_from_f64(adm_tensor *t, adm_dtype dt, int ndim,
                                       const int64_t *shape, const double *values,
                                       adm_round mode, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
