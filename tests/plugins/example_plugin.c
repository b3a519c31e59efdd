/* An example admit plugin: a fused linear + tanh-GELU epilogue written the
 * way a kernel author would, against candidates/plugin.h alone. It runs on
 * the CPU (a CUDA kernel would copy in and out the same way): fp32
 * accumulation in k order, bias and GELU on the fp32 value, one rounding
 * to bf16. Strided inputs are honoured through the strides. */
#include "plugin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float at(const adm_plugin_tensor *t, int64_t i, int64_t j)
{
    const uint16_t *p = (const uint16_t *)t->data;
    return bf16_to_f32(p[i * t->stride[0] + j * t->stride[1]]);
}

static int run(const char *params, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, char *err, size_t len)
{
    const adm_plugin_tensor *x = &in[0], *w = &in[1], *b = n > 2 && in[2].data ? &in[2] : NULL;
    int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
    uint16_t *y = (uint16_t *)out->data;
    (void)params;
    if (x->ndim != 2 || x->dtype != ADM_PLUGIN_BF16 || w->dtype != ADM_PLUGIN_BF16) {
        snprintf(err, len, "example_fused_gelu takes 2-D bf16 x and w");
        return 11; /* ADM_ERR_UNSUPPORTED */
    }
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float acc = 0, v;
            for (int64_t k = 0; k < K; k++) acc += at(x, i, k) * at(w, j, k);
            if (b) acc += bf16_to_f32(((const uint16_t *)b->data)[j * b->stride[0]]);
            v = 0.5f * acc * (1.0f + tanhf(0.7978845608028654f * (acc + 0.044715f * acc * acc * acc)));
            y[i * N + j] = f32_to_bf16(v);
        }
    return 0;
}

static const adm_plugin_kernel kernel = {
    ADM_PLUGIN_ABI_VERSION, sizeof(adm_plugin_kernel), "example_fused_gelu", "linear+gelu", ADM_PLUGIN_BF16,
    "fp32", "bf16", "fp32", 2.0, 1, run,
    "fp32 accumulation in k order, bias and tanh-GELU on the fp32 value, one rounding to bf16",
};

#ifndef ADM_TEST_NO_SYMBOL
const adm_plugin_kernel *adm_plugin_query(const char *name);
const adm_plugin_kernel *adm_plugin_query(const char *name)
{
    static adm_plugin_kernel k;
    if (strcmp(name, kernel.name) != 0) return NULL;
    k = kernel;
#ifdef ADM_TEST_V1
    /* as built against version 1's header: the struct ends at run, and the
     * loader must not read past it (the field there now is a trap) */
    k.abi_version = 1;
    k.struct_size = (uint32_t)ADM_PLUGIN_SIZE_V1;
    k.description = "NOT PART OF A VERSION 1 STRUCT";
#endif
#ifdef ADM_TEST_BROKEN_VERSION
    k.abi_version = 99;       /* built for an ABI this admit does not know */
#endif
#ifdef ADM_TEST_VERSION_ZERO
    k.abi_version = 0;        /* no such version */
#endif
#ifdef ADM_TEST_BROKEN_SIZE
    k.abi_version = 1;
    k.struct_size = 16;       /* smaller than version 1's struct */
#endif
#ifdef ADM_TEST_SHORT_V2
    k.struct_size = (uint32_t)ADM_PLUGIN_SIZE_V1; /* version 2 declared, version 1's size */
#endif
    return &k;
}
#else
int adm_plugin_something_else(void);
int adm_plugin_something_else(void) { return (int)kernel.struct_size; }
#endif
