/* Loading plugins (candidates/plugin.h) into the registry's form. */
#include "adm_candidates.h"
#include "plugin.h"
#include "plugin_sandbox.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct plugin_impl {
    adm_impl impl;           /* first: the registry's view */
    void *handle;
    const adm_plugin_kernel *k;
    char name[128];
    char what[512];
} plugin_impl;

/* The plugin's dtype codes are adm_dtype's values: a plugin hands them over
 * as they are. */
_Static_assert(ADM_PLUGIN_BF16 == (int)ADM_BF16, "plugin dtype code of bf16");
_Static_assert(ADM_PLUGIN_FP16 == (int)ADM_FP16, "plugin dtype code of fp16");
_Static_assert(ADM_PLUGIN_FP32 == (int)ADM_FP32, "plugin dtype code of fp32");
_Static_assert(ADM_PLUGIN_FP64 == (int)ADM_FP64, "plugin dtype code of fp64");
_Static_assert(ADM_PLUGIN_FP8_E4M3 == (int)ADM_E4M3, "plugin dtype code of fp8 e4m3");
_Static_assert(ADM_PLUGIN_FP8_E5M2 == (int)ADM_E5M2, "plugin dtype code of fp8 e5m2");
_Static_assert(ADM_PLUGIN_FP4_E2M1 == (int)ADM_E2M1, "plugin dtype code of fp4 e2m1");
_Static_assert(ADM_DTYPE_COUNT == ADM_PLUGIN_FP4_E2M1 + 1, "a new adm_dtype needs its plugin dtype code");

/* Each version's documented struct size, indexed by version. Version 1's
 * is everything up to and including run (as sizeof was when it was built). */
static const size_t abi_size[ADM_PLUGIN_ABI_VERSION + 1] = {0, ADM_PLUGIN_SIZE_V1, ADM_PLUGIN_SIZE_V2};
_Static_assert(ADM_PLUGIN_SIZE_V1 == offsetof(adm_plugin_kernel, run) + sizeof(void (*)(void)),
               "version 1 ends at run");
_Static_assert(ADM_PLUGIN_SIZE_V2 == sizeof(adm_plugin_kernel), "the newest version is the whole struct");

static adm_dtype decl_dtype(const char *s)
{
    adm_dtype d = ADM_DTYPE_INVALID;
    if (s && adm_dtype_from_name(s, &d) != ADM_OK) d = ADM_DTYPE_INVALID;
    adm_error_clear();
    return d;
}

static adm_status plugin_run(const adm_impl *self, const adm_op_params *p, const adm_tensor *const *in, adm_tensor *out)
{
    const plugin_impl *pi = (const plugin_impl *)self->ctx;
    const adm_op *op = adm_op_find(self->op);
    adm_plugin_tensor pin[ADM_OP_MAX_INPUTS], pout;
    adm_op_shapes sh;
    int ndim = 0, n = adm_op_input_count(op), rc;
    int64_t shape[ADM_MAX_DIMS];
    char err[256] = "";
    memset(pin, 0, sizeof pin);
    memset(&sh, 0, sizeof sh);
    for (int i = 0; i < n; i++) {
        const adm_tensor *t = in[i];
        if (!t) continue;
        sh.present[i] = 1;
        sh.ndim[i] = t->ndim;
        memcpy(sh.shape[i], t->shape, sizeof(int64_t) * (size_t)t->ndim);
        pin[i].dtype = (int32_t)t->dtype;
        pin[i].ndim = t->ndim;
        memcpy(pin[i].shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        memcpy(pin[i].stride, t->stride, sizeof(int64_t) * (size_t)t->ndim);
        pin[i].data = (char *)t->data + (size_t)t->offset * (size_t)adm_format_get(t->dtype)->storage_bytes;
    }
    ADM_TRY(adm_op_output_shape(op, p, &sh, &ndim, shape));
    ADM_TRY(adm_tensor_alloc(out, (adm_dtype)pi->k->output_dtype, ndim, shape));
    memset(&pout, 0, sizeof pout);
    pout.dtype = pi->k->output_dtype;
    pout.ndim = ndim;
    memcpy(pout.shape, out->shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(pout.stride, out->stride, sizeof(int64_t) * (size_t)ndim);
    pout.data = out->data;
    if (adm_plugin_sandbox_enabled()) {
        size_t bytes = (size_t)adm_tensor_numel(out) * (size_t)adm_format_get(out->dtype)->storage_bytes;
        adm_status st = adm_plugin_run_sandboxed(pi->k, pi->name, p->json ? p->json : "{}", pin, n, &pout, bytes, err,
                                                 sizeof err, &rc);
        if (st != ADM_OK) {
            adm_tensor_free(out);
            return st;
        }
    } else {
        rc = pi->k->run(p->json ? p->json : "{}", pin, n, &pout, err, sizeof err);
    }
    if (rc != 0) {
        adm_tensor_free(out);
        err[sizeof err - 1] = '\0';
        return ADM_FAIL(rc > 0 && rc < ADM_STATUS_COUNT ? (adm_status)rc : ADM_ERR_INVALID,
                        "plugin kernel '%s' refuses: %s", pi->name, err[0] ? err : "no reason given");
    }
    return ADM_OK;
}

adm_status adm_plugin_load(const char *path, const char *name, const adm_impl **out)
{
    void *h;
    adm_plugin_query_fn q;
    const adm_plugin_kernel *k;
    plugin_impl *pi;
    *out = NULL;
    ADM_TRY(adm_name_check("plugin kernel name", name));
    /* dlopen of a FIFO blocks; a path without '/' is looked up by the
     * loader in the library path, not here */
    if (strchr(path, '/') && adm_file_check_regular(path, "the plugin") != ADM_OK) {
        adm_error_prefix("cannot load plugin: ");
        return adm_error_code();
    }
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return ADM_FAIL(ADM_ERR_IO, "plugin %s: cannot load: %s", path, dlerror());
    *(void **)(&q) = dlsym(h, ADM_PLUGIN_QUERY_SYMBOL);
    if (!q) {
        dlclose(h);
        return ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no symbol '%s' (expected the entry point of "
                        "candidates/plugin.h)", path, ADM_PLUGIN_QUERY_SYMBOL);
    }
    k = q(name);
    if (!k) {
        dlclose(h);
        return ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no kernel named '%s'", path, name);
    }
    if (k->abi_version < 1 || k->abi_version > ADM_PLUGIN_ABI_VERSION) {
        uint32_t v = k->abi_version;
        dlclose(h);
        return ADM_FAIL(ADM_ERR_VERSION, "plugin %s: kernel '%s' was built for plugin ABI version %u; this admit "
                        "understands versions 1 to %d", path, name, v, ADM_PLUGIN_ABI_VERSION);
    }
    if (k->struct_size < abi_size[k->abi_version]) {
        uint32_t sz = k->struct_size, v = k->abi_version;
        dlclose(h);
        return ADM_FAIL(ADM_ERR_VERSION, "plugin %s: kernel '%s' declares a struct of %u bytes, smaller than "
                        "version %u's %zu", path, name, sz, v, abi_size[v]);
    }
    if (!k->run || !k->op || !adm_op_find(k->op) || !adm_format_get((adm_dtype)k->output_dtype)) {
        dlclose(h);
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s' lacks a run function, a catalog op or a valid "
                        "output dtype", path, name);
    }
    pi = calloc(1, sizeof *pi);
    if (!pi) {
        dlclose(h);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    snprintf(pi->name, sizeof pi->name, "%s", name);
    pi->handle = h;
    pi->k = k;
    pi->impl.op = k->op;
    pi->impl.name = pi->name;
    pi->impl.backend = "plugin";
    pi->impl.decl.accumulator = decl_dtype(k->accumulator);
    pi->impl.decl.operand = decl_dtype(k->operand);
    pi->impl.decl.intermediate = decl_dtype(k->intermediate);
    pi->impl.decl.transcendental_ulps = k->transcendental_ulps;
    pi->impl.decl.stable = k->stable;
    pi->impl.run = plugin_run;
    /* only the fields of the declared version are read */
    if (k->abi_version >= 2 && k->description)
        snprintf(pi->what, sizeof pi->what, "%s (%s)", k->description, path);
    else
        snprintf(pi->what, sizeof pi->what, "%s", path);
    pi->impl.what = pi->what;
    pi->impl.ctx = pi;
    *out = &pi->impl;
    return ADM_OK;
}

void adm_plugin_free(const adm_impl *impl)
{
    plugin_impl *pi;
    if (!impl || strcmp(impl->backend, "plugin") != 0) return;
    pi = (plugin_impl *)impl->ctx;
    dlclose(pi->handle);
    free(pi);
}
