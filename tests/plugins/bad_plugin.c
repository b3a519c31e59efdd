/* Deliberately broken plugin kernels for the plugin sandbox's tests
 * (candidates/plugin_sandbox.c), one per build: ADM_BAD_SEGV dereferences
 * NULL, ADM_BAD_LOOP never returns, ADM_BAD_ALLOC takes memory without
 * bound (up to 2 GiB) until malloc fails, ADM_BAD_OOB writes one
 * element past its output, ADM_BAD_UNDER one element before it. Each must
 * fail its own run with a message, and admit-kernel go on. */
#include "plugin.h"

#include <stdlib.h>
#include <string.h>

static int run(const char *params, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, char *err, size_t len)
{
    int64_t numel = 1;
    volatile uint16_t *y = (volatile uint16_t *)out->data;
    (void)params;
    (void)in;
    (void)n;
    (void)err;
    (void)len;
    for (int i = 0; i < out->ndim; i++) numel *= out->shape[i];
    for (int64_t i = 0; i < numel; i++) y[i] = 0;
#if defined(ADM_BAD_SEGV)
    *(volatile int *)(uintptr_t)numel = 1; /* a small address: unmapped */
#elif defined(ADM_BAD_LOOP)
    for (volatile int spin = 1; spin;) {}
#elif defined(ADM_BAD_ALLOC)
    /* 64 MiB at a time, each touched and kept, up to 2 GiB: a memory limit
     * below that makes malloc fail, and the kernel abort as C++'s
     * std::bad_alloc would (or a sanitizer stop it first); without one the
     * kernel returns holding 2 GiB, and the test's check of the run's peak
     * memory fails. */
    for (int k = 0; k < 32; k++) {
        volatile char *p = malloc((size_t)64 << 20);
        if (!p) abort();
        for (size_t i = 0; i < ((size_t)64 << 20); i += 4096) p[i] = 1;
    }
#elif defined(ADM_BAD_OOB)
    y[numel] = 0x7fc0;
#elif defined(ADM_BAD_UNDER)
    y[-1] = 0x7fc0;
#endif
    return 0;
}

static const adm_plugin_kernel kernel = {
    ADM_PLUGIN_ABI_VERSION, sizeof(adm_plugin_kernel), "bad", "linear+gelu", ADM_PLUGIN_BF16,
    "fp32", "bf16", "fp32", 2.0, 1, run, "a broken kernel for the sandbox's tests",
};

const adm_plugin_kernel *adm_plugin_query(const char *name);
const adm_plugin_kernel *adm_plugin_query(const char *name) { return strcmp(name, "bad") ? NULL : &kernel; }
