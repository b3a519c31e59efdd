/* libadmit's CUDA surface: built with CUDA, the functions of adm_cuda.h
 * call into the CUDA module, loaded on first use (core/adm_cuda_module.h
 * says why it is separate); built without, they answer
 * ADM_ERR_NO_DEVICE. */
#define _GNU_SOURCE /* dladdr */
#include "adm_cuda.h"
#include "adm_cuda_module.h"
#include "oracle_internal.h"
#include "adm_trace.h"

#ifdef ADM_HAVE_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int op_id_of(const adm_op *op) { return (int)adm_op_id_of(op); }

static const adm_cuda_host host = {
    ADM_CUDA_MODULE_ABI,
    sizeof(adm_cuda_host),
    sizeof(adm_tensor),
    sizeof(adm_o_ctx),
    sizeof(adm_op_params),
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
    adm_op_name,
    adm_op_input_name,
    op_id_of,
    adm_o_rows,
    adm_o_need_narrow,
};

static pthread_once_t module_once = PTHREAD_ONCE_INIT;
static const adm_cuda_module *module;
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
    const adm_cuda_module *m;
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
    m = open ? open(&host) : NULL;
    if (!m || m->abi != ADM_CUDA_MODULE_ABI || m->size != sizeof(adm_cuda_module)) {
        Dl_info info;
        const char *where = dladdr((void *)open, &info) && info.dli_fname ? info.dli_fname : ADM_CUDA_MODULE_FILE;
        snprintf(module_error, sizeof module_error, "admit's CUDA module %s is from another build of admit (%s)",
                 open ? where : (env && *env ? env : ADM_CUDA_MODULE_FILE),
                 open ? "its interface differs" : "no " ADM_CUDA_MODULE_ENTRY);
        dlclose(h);
        return;
    }
    /* never unloaded: the CUDA runtime stays for the process; released
     * for adm_cuda_module_loaded, which reads it outside pthread_once */
    __atomic_store_n(&module, m, __ATOMIC_RELEASE);
}

adm_status adm_cuda_module_get(const adm_cuda_module **out)
{
    pthread_once(&module_once, load_module);
    *out = module;
    return module ? ADM_OK : ADM_FAIL(ADM_ERR_NO_DEVICE, "%s", module_error);
}

const adm_cuda_module *adm_cuda_module_loaded(void) { return __atomic_load_n(&module, __ATOMIC_ACQUIRE); }

int adm_cuda_built(void) { return 1; }

static pthread_t warm_thread;
static int warm_running;

static int warm_device;
static unsigned warm_what;

static void *warm_main(void *arg)
{
    const adm_cuda_module *m;
    double t = adm_trace_ms();
    (void)arg;
    if (adm_cuda_module_get(&m) == ADM_OK) (void)m->warm(warm_device, warm_what);
    adm_error_clear(); /* this thread's: the callers that need the GPU say what fails */
    adm_trace_part("cuda.warm", t, -1);
    return NULL;
}

void adm_cuda_warm_start(int device, unsigned what)
{
    if (warm_running) return;
    warm_device = device;
    warm_what = what;
    warm_running = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
}

void adm_cuda_warm_wait(void)
{
    double t = adm_trace_ms();
    if (!warm_running) return;
    pthread_join(warm_thread, NULL);
    warm_running = 0;
    adm_trace_part("cuda.warm_wait", t, -1);
}

adm_status adm_cuda_device_count(int *count)
{
    const adm_cuda_module *m;
    *count = 0;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->device_count(count);
}

adm_status adm_cuda_select(int device)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->device_select(device);
}

adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor)
{
    const adm_cuda_module *m;
    if (n) buf[0] = '\0';
    *cc_major = *cc_minor = 0;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->device_name(buf, n, cc_major, cc_minor);
}

adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags, const float *in, uint16_t *out,
                                size_t n)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->convert_f32(dt, mode, flags, in, out, n);
}

adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags, uint32_t first, uint16_t *out,
                                      size_t n)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->convert_f32_range(dt, mode, flags, first, out, n);
}

adm_status adm_cuda_libm_f32_range(int fn, uint32_t first, uint32_t *out, size_t n)
{
    const adm_cuda_module *m;
    ADM_TRY(adm_cuda_module_get(&m));
    return m->libm_f32_range(fn, first, out, n);
}

#else /* built without CUDA */

adm_status adm_cuda_module_get(const adm_cuda_module **out)
{
    *out = NULL;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

const adm_cuda_module *adm_cuda_module_loaded(void) { return NULL; }

int adm_cuda_built(void) { return 0; }

void adm_cuda_warm_start(int device, unsigned what) { (void)device; (void)what; }

void adm_cuda_warm_wait(void) {}

adm_status adm_cuda_device_count(int *count)
{
    *count = 0;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_select(int device)
{
    (void)device;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_device_name(char *buf, size_t n, int *cc_major, int *cc_minor)
{
    if (n) buf[0] = '\0';
    *cc_major = *cc_minor = 0;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_convert_f32(adm_dtype dt, adm_round mode, unsigned flags,
                                const float *in, uint16_t *out, size_t n)
{
    (void)dt; (void)mode; (void)flags; (void)in; (void)out; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_convert_f32_range(adm_dtype dt, adm_round mode, unsigned flags,
                                      uint32_t first, uint16_t *out, size_t n)
{
    (void)dt; (void)mode; (void)flags; (void)first; (void)out; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}

adm_status adm_cuda_libm_f32_range(int fn, uint32_t first, uint32_t *out, size_t n)
{
    (void)fn; (void)first; (void)out; (void)n;
    return ADM_FAIL(ADM_ERR_NO_DEVICE, "admit was built without CUDA");
}
#endif
