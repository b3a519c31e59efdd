/* Deliberately broken plugin kernels for the plugin sandbox's tests
 * (candidates/plugin_sandbox.c), one per build: ADM_BAD_SEGV dereferences
 * NULL, ADM_BAD_LOOP never returns, ADM_BAD_ALLOC asks for 64 GiB and uses
 * it unchecked, ADM_BAD_OOB writes one element past its output,
 * ADM_BAD_UNDER one element before it. Each must fail its own run with a
 * message, and admit-kernel go on. */
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
    {
        volatile char *p = malloc((size_t)1 << 36);
        for (size_t i = 0; i < ((size_t)1 << 36); i += 4096) p[i] = 1; /* NULL when refused: a crash */
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
