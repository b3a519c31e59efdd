/* Internal: the boundary between libadmit and its CUDA module.
 *
 * The CUDA code of every module (core/cuda.cu, oracle/oracle_cuda.cu,
 * oracle/quantize_cuda.cu, harness/stats_cuda.cu, candidates/cuda_impl.cu,
 * candidates/cuda_twins.cu, toy/toy_cuda.cu) is built as one separate
 * shared object, libadmit_cuda.so, that libadmit loads with dlopen the
 * first time a GPU path is asked for (core/cuda_load.c). A process that
 * never uses a GPU never maps the CUDA runtime, cuBLAS and cuBLASLt: linked
 * in, their constructors cost some 0.6 s of CPU and 220 MB of resident
 * memory at every start, and every fork of a sandbox copied and tore down
 * their mappings (bench/results/2026-11-30-cpu-sandbox-cost.md).
 *
 * The module links no part of libadmit: what its code calls of core comes
 * through the host table libadmit hands to its entry point, so that it
 * works beside libadmit.so, beside a static copy of the library inside a
 * program, and with libadmit's internals hidden.
 *
 * Inside the module each of admit's modules has a part of its own: a
 * table of its device entry points, declared in that module's directory
 * (oracle/oracle_cuda.h, harness/stats_cuda.h,
 * candidates/candidates_cuda.h, toy/toy_cuda.h; core's own below),
 * defined beside its device code, and reached from that module's host
 * side through adm_cuda_module_part by the part's name. The loader knows
 * none of them: core includes nothing of oracle/, harness/, candidates/
 * or toy/. Every table carries its ABI version and size: the module
 * refuses a host from another build, each part a part host from another
 * build, and libadmit a part whose ABI or size is not its own. */
#ifndef ADM_CUDA_MODULE_H
#define ADM_CUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "adm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raise on any change to the host table or to a structure that crosses
 * in it; each part has its own version. */
#define ADM_CUDA_MODULE_ABI 12
#define ADM_CUDA_MODULE_FILE "libadmit_cuda.so"
#define ADM_CUDA_MODULE_ENTRY "adm_cuda_module_open"
/* A part named NAME is the module's exported function
 * ADM_CUDA_PART_PREFIX NAME (adm_cuda_part_fn). Exported by name rather
 * than listed behind the entry point: the dynamic linker's symbol table
 * is then the only list of parts, so that neither the loader nor the
 * entry point has to know them, and a module adds a part without a line
 * in core (core/cuda_module.map exports the entry point and this prefix
 * only). */
#define ADM_CUDA_PART_PREFIX "adm_cuda_part_"

/* What the module's code calls of core (core/cuda_module.c defines these
 * names inside the module and forwards them here). */
typedef struct adm_cuda_host {
    uint32_t abi, size;
    uint32_t tensor_size;
    adm_status (*error_set)(adm_status code, const char *file, int line, const char *fmt, ...);
    const char *(*dtype_name)(adm_dtype dt);
    adm_status (*tensor_alloc)(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape);
    void (*tensor_free)(adm_tensor *t);
    int64_t (*tensor_numel)(const adm_tensor *t);
    adm_status (*tensor_transpose)(const adm_tensor *src, int d0, int d1, adm_tensor *view);
    adm_status (*tensor_broadcast)(const adm_tensor *src, int ndim, const int64_t *shape, adm_tensor *view);
    uint64_t (*tensor_bits)(const adm_tensor *t, int64_t i);
    double (*tensor_get)(const adm_tensor *t, int64_t i);
    adm_status (*tensor_to_f64)(const adm_tensor *t, double *out);
} adm_cuda_host;

/* The module's entry point: ADM_CUDA_MODULE_ABI where it accepts host,
 * 0 where host is from another build. */
typedef uint32_t (*adm_cuda_module_open_fn)(const adm_cuda_host *host);

/* The head of every part's table and of every part's host table (what a
 * part calls of its own module's host code, where it calls anything). */
typedef struct adm_cuda_part_head {
    uint32_t abi, size;
} adm_cuda_part_head;

/* A part: its table, or NULL where host (NULL for a part that calls
 * nothing of its module's host code) is from another build. Called once
 * per process, under the loader's lock; a part keeps host for its
 * forwarders. */
typedef const adm_cuda_part_head *(*adm_cuda_part_fn)(const adm_cuda_part_head *host);
/* The export of a part that needs no host table of its own (core's, the
 * harness's, the toy's): ADM_CUDA_PART_PLAIN(harness, part) defines
 * adm_cuda_part_harness returning &part.head. */
#define ADM_CUDA_PART_PLAIN(name, table)                                                     \
    const adm_cuda_part_head *adm_cuda_part_##name(const adm_cuda_part_head *h);             \
    const adm_cuda_part_head *adm_cuda_part_##name(const adm_cuda_part_head *h)              \
    {                                                                                        \
        (void)h;                                                                             \
        return &(table).head;                                                                \
    }

/* libadmit's side (core/cuda_load.c): part `name` of the module, the
 * module loaded on the first call (thread-safe), the part looked up on its
 * first call and handed host then (later calls find it and ignore host).
 * ADM_ERR_NO_DEVICE, saying why: libadmit built without CUDA, the module
 * not loadable, no such part, the part refusing host, or a part whose ABI
 * or size is not abi and size. The module is looked for at
 * $ADM_CUDA_MODULE when set (there only), else beside the object that
 * holds libadmit (libadmit.so, or the program a static copy is in), then
 * on the dynamic linker's search path, then in the build tree. */
adm_status adm_cuda_module_part(const char *name, uint32_t abi, size_t size, const adm_cuda_part_head *host,
                                const adm_cuda_part_head **out);
/* 1 where the module is loaded already; never loads it (for releasing
 * what only a loaded module can hold). */
int adm_cuda_module_loaded(void);

/* core's part ("core": core/cuda.cu, core/cuda_module.c): the device
 * functions of adm_cuda.h with their contracts, and warm, the module's
 * side of adm_cuda_warm_device. */
#define ADM_CUDA_CORE_PART "core"
#define ADM_CUDA_CORE_ABI 1
typedef struct adm_cuda_core_part {
    adm_cuda_part_head head;
    adm_status (*device_count)(int *count);
    adm_status (*device_name)(char *buf, size_t n, int *cc_major, int *cc_minor);
    adm_status (*device_select)(int device);
    adm_status (*convert_f32)(adm_dtype dt, adm_round mode, unsigned flags, const float *in, uint16_t *out,
                              size_t n);
    adm_status (*convert_f32_range)(adm_dtype dt, adm_round mode, unsigned flags, uint32_t first, uint16_t *out,
                                    size_t n);
    adm_status (*warm)(int device);
} adm_cuda_core_part;
/* warm's definition (core/cuda.cu) */
adm_status adm_cuda_warm_module(int device);

/* The first step of adm_cuda_warm_start (harness/cuda_warm.c, which knows
 * what else to warm): device selected where device >= 0 (on the calling
 * thread) and its context created. */
adm_status adm_cuda_warm_device(int device);

#ifdef __cplusplus
}
#endif
#endif
