/* admit's shared interface between the oracle, the implementations and
 * the harness: the op catalog, an implementation's static declarations
 * (adm_decl) and the implementation itself (adm_impl), with the registry
 * that resolves them by name. oracle/ implements the catalog, candidates/
 * the registry and the plugins, harness/ runs and judges adm_impls; none of
 * candidates/ and harness/ includes the other's header.
 *
 * The op catalog: each op names its parameters (parsed from the JSON a
 * capture or a fusion table carries), its inputs, and a shape rule. The
 * shape rule is what the capture validator applies to a file before
 * anything is computed from it.
 */
#ifndef ADM_OPS_H
#define ADM_OPS_H

#include "adm_export.h"

#include "adm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_OP_MAX_INPUTS 6

typedef enum adm_qscheme {
    ADM_Q_NONE = 0,
    ADM_Q_FP8_TENSOR,   /* fp8 e4m3, one fp32 scale amax/448 per tensor */
    ADM_Q_FP8_ROW,      /* fp8 e4m3, one fp32 scale per row */
    ADM_Q_NVFP4         /* e2m1 values, e4m3 scales per 16, fp32 global amax/(6*448) */
} adm_qscheme;

/* Every parameter of every op, with its default; an op reads the ones it
 * declares and refuses any other key. */
typedef struct adm_op_params {
    int axis;            /* row_sum, mean_sq, softmax; default -1 */
    double factor;       /* scale */
    int gelu_tanh;       /* gelu, linear+gelu: approximate="tanh" (1) or "none" (0) */
    double eps;          /* rmsnorm 1e-6, layernorm/groupnorm 1e-5, linear_attention 1e-6 */
    int modulate;        /* layernorm: y*(1+scale)+shift */
    int groups;          /* groupnorm */
    int silu;            /* groupnorm, rmsnorm: SiLU after the affine (VAE decoders) */
    int channels_last;   /* groupnorm: x is [B, L, C] rather than [B, C, L] */
    int causal;          /* attention */
    double attn_scale;   /* attention: 0 means 1/sqrt(D) */
    adm_qscheme scheme;  /* quantize */
    const char *json;    /* the text parsed (borrowed from the caller), for plugins */
} adm_op_params;

typedef struct adm_op adm_op;

/* The shapes handed to a shape rule, aligned with the op's input list. */
typedef struct adm_op_shapes {
    int present[ADM_OP_MAX_INPUTS];
    int ndim[ADM_OP_MAX_INPUTS];
    int64_t shape[ADM_OP_MAX_INPUTS][ADM_MAX_DIMS];
} adm_op_shapes;

ADM_API const adm_op *adm_op_find(const char *name);
ADM_API int adm_op_count(void);
ADM_API const adm_op *adm_op_at(int i);
ADM_API const char *adm_op_name(const adm_op *op);
ADM_API int adm_op_input_count(const adm_op *op);
ADM_API const char *adm_op_input_name(const adm_op *op, int i);
ADM_API int adm_op_input_optional(const adm_op *op, int i);
/* Index of the input called name, or -1. */
ADM_API int adm_op_input_index(const adm_op *op, const char *name);

/* Parses a JSON object ("" or NULL means {}) into p, applying defaults.
 * An unknown key, a wrong type or an out-of-range value is refused with a
 * message that names the key. */
ADM_API adm_status adm_op_params_parse(const adm_op *op, const char *json, adm_op_params *p);
/* The output shape the op produces from these inputs, or ADM_ERR_SHAPE
 * naming the input and what was expected. Also checks that required
 * inputs are present and that parameters fit the shapes (an axis in
 * range, a group count that divides the channels). */
ADM_API adm_status adm_op_output_shape(const adm_op *op, const adm_op_params *p,
                                       const adm_op_shapes *in, int *ndim, int64_t *shape);

/* ------------------------------------------------------------------ */
/* Implementations                                                      */
/* ------------------------------------------------------------------ */

/* Static declarations of an implementation (gate 6). ADM_DTYPE_INVALID,
 * a negative ulps or stable = -1: not declared. */
typedef struct adm_decl {
    adm_dtype accumulator;
    adm_dtype operand;
    adm_dtype intermediate;
    double transcendental_ulps;
    int stable;
} adm_decl;
ADM_API void adm_decl_undeclared(adm_decl *d);

/* An implementation runs on the op's inputs (aligned with the catalog's input list, NULL for
 * an absent optional one; any strides) and allocates out. A refusal is a
 * status other than ADM_OK, with out untouched. */
struct adm_impl;
typedef adm_status (*adm_impl_run)(const struct adm_impl *self, const adm_op_params *p, const adm_tensor *const *in,
                                   adm_tensor *out);

typedef struct adm_impl {
    const char *op;           /* catalog op */
    const char *name;         /* unique per op */
    const char *backend;      /* "cpu", "cuda", "plugin", "stored" */
    adm_decl decl;            /* static declarations (gate 6) */
    adm_impl_run run;
    const char *what;         /* one line: what it emulates */
    const void *ctx;          /* the backend's own (a plugin's entry) */
} adm_impl;

/* The registry (candidates/registry.c): implementations per op,
 * reference path first. */
ADM_API int adm_impl_count(void);
ADM_API const adm_impl *adm_impl_at(int i);
/* NULL when the op has no implementation of that name. */
ADM_API const adm_impl *adm_impl_find(const char *op, const char *name);
/* The op's reference path (the first registered). */
ADM_API const adm_impl *adm_impl_reference(const char *op);

/* A kernel from a plugin (candidates/plugin.h): path.so and its name.
 * The library is loaded and its query asked in a child process, and the
 * kernel's struct shipped back and checked; each run of the impl is a
 * child process too (ADM_PLUGIN_SANDBOX=off: all in this process). Any
 * ABI version from 1 up to ADM_PLUGIN_ABI_VERSION with a struct at least
 * that version's documented size loads; a missing file or symbol,
 * version 0 or a newer version, or a smaller struct is refused with a
 * message naming the file, and so is a loading or a query that crashes,
 * exits or loops, or a struct with a bad field. */
ADM_API adm_status adm_plugin_load(const char *path, const char *name, const adm_impl **out);
ADM_API void adm_plugin_free(const adm_impl *impl);
/* "eager" from the registry, or "path.so:name" from a plugin; a plugin's
 * impl must be freed with adm_plugin_free. */
ADM_API adm_status adm_impl_resolve(const char *op, const char *spec, const adm_impl **out);

#ifdef __cplusplus
}
#endif
#endif
