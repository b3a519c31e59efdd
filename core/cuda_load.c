/* libadmit's CUDA surface: built with CUDA, the loader of the CUDA
 * module (core/adm_cuda_module.h says why it is separate), which hands
 * each module's host side the part it names, and the functions of
 * adm_cuda.h that are core's, through core's part; built without, every
 * part answers ADM_ERR_NO_DEVICE. This file, like all of core, includes
 * nothing of oracle/, harness/, candidates/ or toy/: the parts are named
 * by their callers and found in the module by name. */
#define _GNU_SOURCE /* dladdr */
#include "adm_cuda.h"
#include "adm_cuda_module.h"
#include "adm_trace.h"

#ifdef ADM_HAVE_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const adm_cuda_host host = {
    ADM_CUDA_MODULE_ABI,
    sizeof(adm_cuda_host),
    sizeof(adm_tensor),
    adm_error_set,
    adm_dtype_name,
    adm_tensor_alloc,
    adm_tensor_free,
    adm_tensor_numel,
    adm_tensor_transpose,
    adm_tensor_broadcast,
    adm_tensor_bits,
    adm_tensor_get,
    adm_tensor_to_f64,
};

static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static void *module; /* the dlopen handle */
static char module_path[4096];
static char module_error[900];

static void *open_at(const char *path, char *why, size_t n)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char *e;
    if (!h && (e = dlerror())) snprintf(why, n, "%s", e);
    return h;
}

/* Beside the object this code is in: libadmit.so, or the program that
 * holds a static copy of the library. */
static void *open_beside(char *why, size_t n)
{
    Dl_info info;
    char path[4096];
    const char *slash;
    if (!dladdr((void *)&open_beside, &info) || !info.dli_fname || !(slash = strrchr(info.dli_fname, '/')))
        return NULL;
    if (snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                 ADM_CUDA_MODULE_FILE) >= (int)sizeof path || access(path, F_OK) != 0)
        return NULL;
    return open_at(path, why, n);
}

static void load_module_untimed(void);

static void load_module(void)
{
    double t = adm_trace_ms();
    load_module_untimed();
    adm_trace_part("cuda.module_load", t, -1);
}

static void load_module_untimed(void)
{
    const char *env = getenv("ADM_CUDA_MODULE");
    char why[700] = "";
    void *h = NULL;
    adm_cuda_module_open_fn open;
    if (env && *env) {
        if (!(h = open_at(env, why, sizeof why))) {
            snprintf(module_error, sizeof module_error, "admit's CUDA module ADM_CUDA_MODULE=%s cannot be loaded: %s",
                     env, why);
            return;
        }
    } else {
        /* Without NVIDIA's driver library nothing in the module can run:
         * say so without mapping the CUDA runtime and cuBLAS, which cost a
         * CPU-only process some 220 MB of memory and 0.6 s at every report
         * (the driver library is small, and present wherever a GPU is). */
        void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (!drv) {
            snprintf(module_error, sizeof module_error, "no GPU/driver found (no NVIDIA driver is installed: "
                     "libcuda.so.1 cannot be loaded)");
            return;
        }
        dlclose(drv);
        h = open_beside(why, sizeof why);
        if (!h) h = open_at(ADM_CUDA_MODULE_FILE, why, sizeof why);
#ifdef ADM_CUDA_MODULE_BUILD_DIR
        if (!h && access(ADM_CUDA_MODULE_BUILD_DIR "/" ADM_CUDA_MODULE_FILE, F_OK) == 0)
            h = open_at(ADM_CUDA_MODULE_BUILD_DIR "/" ADM_CUDA_MODULE_FILE, why, sizeof why);
#endif
        if (!h) {
            snprintf(module_error, sizeof module_error, "admit was built with CUDA, but its CUDA module %s cannot "
                     "be loaded (%s); ADM_CUDA_MODULE names its path", ADM_CUDA_MODULE_FILE, why);
            return;
        }
    }
    *(void **)&open = dlsym(h, ADM_CUDA_MODULE_ENTRY);
    {
        Dl_info info;
        const char *where = open && dladdr((void *)open, &info) && info.dli_fname ? info.dli_fname
                            : env && *env                                            ? env
                                                                                     : ADM_CUDA_MODULE_FILE;
        snprintf(module_path, sizeof module_path, "%s", where);
    }
    if (!open || open(&host) != ADM_CUDA_MODULE_ABI) {
        snprintf(module_error, sizeof module_error, "admit's CUDA module %.700s is from another build of admit (%s)",
                 module_path, open ? "its interface differs" : "no " ADM_CUDA_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    /* never unloaded: the CUDA runtime stays for the process; released
     * for adm_cuda_module_loaded, which reads it outside pthread_once */
    __atomic_store_n(&module, h, __ATOMIC_RELEASE);
}

/* The parts found so far: a part's function runs once (it keeps its
 * host), and a lookup costs a few string compares. */
enum { MAX_PARTS = 16 };
static struct {
    char name[32];
    const adm_cuda_part_head *part;
} parts[MAX_PARTS];
static int n_parts;
static pthread_mutex_t parts_mu = PTHREAD_MUTEX_INITIALIZER;

static const adm_cuda_part_head *part_find(const char *name, const adm_cuda_part_head *host_part, char *why,
                                           size_t n)
{
    char sym[sizeof ADM_CUDA_PART_PREFIX + sizeof parts[0].name];
    adm_cuda_part_fn fn;
    const adm_cuda_part_head *p = NULL;
    int i;
    for (i = 0; i < n_parts; i++)
        if (!strcmp(parts[i].name, name)) return parts[i].part;
    if (strlen(name) >= sizeof parts[0].name) {
        snprintf(why, n, "a part's name has at most %zu characters", sizeof parts[0].name - 1);
        return NULL;
    }
    snprintf(sym, sizeof sym, "%s%s", ADM_CUDA_PART_PREFIX, name);
    *(void **)&fn = dlsym(module, sym);
    if (!fn) {
        snprintf(why, n, "it has no %s", sym);
        return NULL;
    }
    if (!(p = fn(host_part))) {
        snprintf(why, n, "the part refuses this libadmit's host table (ABI %u, %u bytes)",
                 host_part ? host_part->abi : 0, host_part ? host_part->size : 0);
        return NULL;
    }
    if (n_parts < MAX_PARTS) {
        snprintf(parts[n_parts].name, sizeof parts[n_parts].name, "%s", name);
        parts[n_parts++].part = p;
    }
    return p;
}

adm_status adm_cuda_module_part(const char *name, uint32_t abi, size_t size, const adm_cuda_part_head *host_part,
                                const adm_cuda_part_head **out)
{
    const adm_cuda_part_head *p;
    char why[300] = "";
    *out = NULL;
    pthread_once(&module_once, load_module);
    if (!module) return ADM_FAIL(ADM_ERR_NO_DEVICE, "%s", module_error);
    pthread_mutex_lock(&parts_mu);
    p = part_find(name, host_part, why, sizeof why);
    pthread_mutex_unlock(&parts_mu);
    if (!p)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit's CUDA module %s is from another build of admit: part \"%s\": %s",
                        module_path, name, why);
    if (p->abi != abi || p->size != size)
        return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit's CUDA module %s is from another build of admit: its part \"%s\" "
                        "has ABI %u and %u bytes, this libadmit's ABI %u and %zu bytes", module_path, name, p->abi,
                        p->size, abi, size);
    *out = p;
    return ADM_OK;
}

int adm_cuda_module_loaded(void) { return __atomic_load_n(&module, __ATOMIC_ACQUIRE) != NULL; }

int adm_cuda_built(void) { return 1; }

#else /* built without CUDA */

adm_status adm_cuda_module_part(const char *name, uint32_t abi, size_t size, const adm_cuda_part_head *host_part,
                                const adm_cuda_part_head **out)
{
    (void)name; (void)abi; (void)size; (void)host_part;
    *out = NULL;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

int adm_cuda_module_loaded(void) { return 0; }

int adm_cuda_built(void) { return 0; }
#endif

static adm_status core_part(const adm_cuda_core_part **p)
{
    const adm_cuda_part_head *h;
    ADM_TRY(adm_cuda_module_part(ADM_CUDA_CORE_PART, ADM_CUDA_CORE_ABI, sizeof **p, NULL, &h));
    *p = (const adm_cuda_core_part *)h;
    return ADM_OK;
}

adm_status adm_cuda_warm_device(int device)
{
    const adm_cuda_core_part *p;
    ADM_TRY(core_part(&p));
    return p->warm(device);
}

adm_status adm_cuda_device_count(int *count)
{
    const adm_cuda_core_part *p;
    *count = 0;
    ADM_TRY(core_part(&p));
    return p->device_count(count);
}

adm_status adm_cuda_select(int device)
{
    const adm_cuda_core_part *p;
    ADM_TRY(core_part(&p));
    return p->device_select(device);
}

adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor)
{
    const adm_cuda_core_part *p;
    if (n) buf[0] = '\0';
    *cc_major = *cc_minor = 0;
    ADM_TRY(core_part(&p));
    return p->device_name(buf, n, cc_major, cc_minor);
}

adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags, const float *in, uint16_t *out,
                                size_t n)
{
    const adm_cuda_core_part *p;
    ADM_TRY(core_part(&p));
    return p->convert_f32(dt, mode, flags, in, out, n);
}

adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags, uint32_t first, uint16_t *out,
                                      size_t n)
{
    const adm_cuda_core_part *p;
    ADM_TRY(core_part(&p));
    return p->convert_f32_range(dt, mode, flags, first, out, n);
}
