/* The admit plugin ABI, version 2: how a kernel author brings a CPU or
 * CUDA kernel into admit as a shared object.
 *
 * A plugin exports one C symbol, adm_plugin_query, which returns the
 * kernel of a given name (or NULL). The kernel struct starts with the ABI
 * version it was built for and its own size; versions only append fields.
 * admit accepts any version from 1 up to its own whose struct is at least
 * that version's documented size (ADM_PLUGIN_SIZE_V1, _V2), and reads only
 * the fields of the version declared; a newer version, version 0, or a
 * struct smaller than its version's is refused with a message. This header
 * needs nothing of admit's: a plugin includes it alone.
 *
 * admit loads the library, calls the query and runs the kernel in a child
 * process of its own, once for the query and once per run, each time
 * asking the query again (candidates/plugin_sandbox.c): keep constructors
 * and the query cheap and free of side effects, and answer the same every
 * time. The kernel runs in the floating-point environment the library's
 * loading leaves (a constructor's FTZ/DAZ counts), not in what the query
 * sets. The struct's strings are checked: UTF-8 without control
 * characters, name at most 128 bytes, op at most 63, dtype names at most
 * 15, description at most 383; dtype names must be admit's.
 *
 *   version 1: everything up to and including run
 *   version 2: + description
 *
 *   admit-kernel run CAPTURE --reference eager --candidate ./my.so:my_kernel
 */
#ifndef ADM_PLUGIN_H
#define ADM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_PLUGIN_ABI_VERSION 2
#define ADM_PLUGIN_QUERY_SYMBOL "adm_plugin_query"

/* dtype codes: admit's adm_dtype values (tied at compile time in
 * candidates/plugin.c) */
enum { ADM_PLUGIN_BF16 = 1, ADM_PLUGIN_FP16 = 2, ADM_PLUGIN_FP32 = 3, ADM_PLUGIN_FP64 = 4,
       ADM_PLUGIN_FP8_E4M3 = 5, ADM_PLUGIN_FP8_E5M2 = 6, ADM_PLUGIN_FP4_E2M1 = 7 };

typedef struct adm_plugin_tensor {
    int32_t dtype;
    int32_t ndim;            /* at most 8 */
    int64_t shape[8];
    int64_t stride[8];       /* in elements; 0 broadcasts */
    void *data;              /* the address of element [0, ..., 0] (host memory) */
} adm_plugin_tensor;

typedef struct adm_plugin_kernel {
    uint32_t abi_version;    /* ADM_PLUGIN_ABI_VERSION when built */
    uint32_t struct_size;    /* sizeof(adm_plugin_kernel) when built */
    const char *name;
    const char *op;          /* an op of admit's catalog, e.g. "linear+gelu" */
    int32_t output_dtype;    /* the output's dtype code */
    /* Static declarations (gate 6): dtype names ("fp32", "bf16", ...) or
     * NULL when undeclared; ulps finite, < 0 when undeclared; stable 1 or
     * 0, < 0 when undeclared. */
    const char *accumulator, *operand, *intermediate;
    double transcendental_ulps;
    int32_t stable;
    /* Computes the op. inputs are in the catalog's order (NULL data for an
     * absent optional input); out is allocated by admit, contiguous, with
     * the catalog's output shape and output_dtype. Returns 0, or an admit
     * status code to refuse (e.g. 6, ADM_ERR_SHAPE) with a message in err. */
    int (*run)(const char *params_json, const adm_plugin_tensor *inputs, int n_inputs, adm_plugin_tensor *out,
               char *err, size_t err_len);
    /* version 2 */
    const char *description; /* one line: what the kernel computes and how; NULL: none */
} adm_plugin_kernel;

/* The documented size of each version's struct: a plugin built against
 * version v declares at least this many bytes. */
#define ADM_PLUGIN_SIZE_V1 offsetof(adm_plugin_kernel, description)
#define ADM_PLUGIN_SIZE_V2 (offsetof(adm_plugin_kernel, description) + sizeof(const char *))

typedef const adm_plugin_kernel *(*adm_plugin_query_fn)(const char *name);

#ifdef __cplusplus
}
#endif
#endif
