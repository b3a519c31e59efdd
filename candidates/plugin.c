/* Loading plugins (candidates/plugin.h) into the registry's form. */
#include "adm_candidates.h"
#include "plugin.h"
#include "plugin_sandbox.h"
#include "adm_fpenv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plugin_impl {
    adm_impl impl;           /* first: the registry's view */
    void *handle;            /* in-process (ADM_PLUGIN_SANDBOX=off) only: the library and its kernel */
    const adm_plugin_kernel *k;
    adm_plugin_desc desc;    /* what the query said, checked */
    adm_fpenv loaded;        /* in-process: the environment the library's loading left, the kernel's */
    char *path;
    char name[ADM_NAME_MAX + 1];
    char *what;
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

static adm_dtype decl_dtype(const adm_plugin_desc *d, int which, const char *name)
{
    adm_dtype dt = ADM_DTYPE_INVALID;
    if (d->str_state[which] != ADM_PD_ABSENT && adm_dtype_from_name(name, &dt) != ADM_OK) dt = ADM_DTYPE_INVALID;
    adm_error_clear();
    return dt;
}

int adm_impl_spec_is_plugin(const char *spec)
{
    const char *colon = strrchr(spec, ':');
    return colon && strstr(spec, ".so") != NULL;
}

/* Copies src (NULL: absent) into dst of cap bytes, marking it too long
 * when it does not end within them. */
static void take(adm_plugin_desc *d, int which, char *dst, size_t cap, const char *src)
{
    size_t n;
    if (!src) {
        d->str_state[which] = ADM_PD_ABSENT;
        return;
    }
    n = strnlen(src, cap);
    if (n == cap) {
        d->str_state[which] = ADM_PD_TOO_LONG;
        n = cap - 1;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void adm_plugin_describe(const adm_plugin_kernel *k, adm_plugin_desc *d)
{
    memset(d, 0, sizeof *d);
    d->abi_version = k->abi_version;
    d->struct_size = k->struct_size;
    if (d->abi_version < 1 || d->abi_version > ADM_PLUGIN_ABI_VERSION || d->struct_size < abi_size[d->abi_version])
        return;
    /* only the fields of the declared version */
    d->fields_read = 1;
    take(d, ADM_PD_NAME, d->name, sizeof d->name, k->name);
    take(d, ADM_PD_OP, d->op, sizeof d->op, k->op);
    d->output_dtype = k->output_dtype;
    take(d, ADM_PD_ACCUMULATOR, d->accumulator, sizeof d->accumulator, k->accumulator);
    take(d, ADM_PD_OPERAND, d->operand, sizeof d->operand, k->operand);
    take(d, ADM_PD_INTERMEDIATE, d->intermediate, sizeof d->intermediate, k->intermediate);
    d->transcendental_ulps = k->transcendental_ulps;
    d->stable = k->stable;
    d->has_run = k->run != NULL;
    if (d->abi_version >= 2) take(d, ADM_PD_DESCRIPTION, d->description, sizeof d->description, k->description);
    else d->str_state[ADM_PD_DESCRIPTION] = ADM_PD_ABSENT;
}

adm_status adm_plugin_desc_check(const adm_plugin_desc *d, const char *path, const char *kname)
{
    static const char *field[ADM_PD_STRINGS] = {"name", "op", "accumulator", "operand", "intermediate",
                                                "description"};
    const char *str[ADM_PD_STRINGS] = {d->name, d->op, d->accumulator, d->operand, d->intermediate, d->description};
    const size_t cap[ADM_PD_STRINGS] = {sizeof d->name, sizeof d->op, sizeof d->accumulator, sizeof d->operand,
                                        sizeof d->intermediate, sizeof d->description};
    if (d->abi_version < 1 || d->abi_version > ADM_PLUGIN_ABI_VERSION)
        return ADM_FAIL(ADM_ERR_VERSION, "plugin %s: kernel '%s' was built for plugin ABI version %u; this admit "
                        "understands versions 1 to %d", path, kname, d->abi_version, ADM_PLUGIN_ABI_VERSION);
    if (d->struct_size < abi_size[d->abi_version])
        return ADM_FAIL(ADM_ERR_VERSION, "plugin %s: kernel '%s' declares a struct of %u bytes, smaller than "
                        "version %u's %zu", path, kname, d->struct_size, d->abi_version, abi_size[d->abi_version]);
    if (d->fields_read != 1)
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its struct was not read", path, kname);
    for (int i = 0; i < ADM_PD_STRINGS; i++) {
        int state = d->str_state[i];
        if (!memchr(str[i], '\0', cap[i]) || (state != 0 && state != ADM_PD_ABSENT && state != ADM_PD_TOO_LONG) ||
            (state == ADM_PD_ABSENT && str[i][0]))
            return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its %s arrived malformed from the plugin's "
                            "process", path, kname, field[i]);
        if (state == ADM_PD_TOO_LONG)
            return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its %s is longer than %zu bytes", path, kname,
                            field[i], cap[i] - 1);
        if (!adm_text_clean(str[i]))
            return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its %s holds control characters or malformed "
                            "UTF-8", path, kname, field[i]);
    }
    if (d->str_state[ADM_PD_OP] == ADM_PD_ABSENT || !adm_op_find(d->op))
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its op '%s' is not in admit's catalog (admit-kernel "
                        "run --list)", path, kname, d->op);
    if (!adm_format_get((adm_dtype)d->output_dtype))
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': its output dtype %d is not one of plugin.h's codes "
                        "(1 to %d)", path, kname, (int)d->output_dtype, ADM_PLUGIN_FP4_E2M1);
    for (int i = ADM_PD_ACCUMULATOR; i <= ADM_PD_INTERMEDIATE; i++)
        if (d->str_state[i] != ADM_PD_ABSENT && decl_dtype(d, i, str[i]) == ADM_DTYPE_INVALID)
            return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': it declares %s '%s', not a dtype name (fp32, "
                            "bf16, ...; NULL when undeclared)", path, kname, field[i], str[i]);
    if (!(d->transcendental_ulps < 0) && !(d->transcendental_ulps <= 1e300))
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': it declares transcendental_ulps %g (a finite count, "
                        "or negative when undeclared)", path, kname, d->transcendental_ulps);
    if (d->stable > 1)
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s': it declares stable %d (1, 0, or negative when "
                        "undeclared)", path, kname, (int)d->stable);
    if (d->has_run != 1)
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: kernel '%s' has no run function", path, kname);
    return ADM_OK;
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
    ADM_TRY(adm_tensor_alloc(out, (adm_dtype)pi->desc.output_dtype, ndim, shape));
    memset(&pout, 0, sizeof pout);
    pout.dtype = pi->desc.output_dtype;
    pout.ndim = ndim;
    memcpy(pout.shape, out->shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(pout.stride, out->stride, sizeof(int64_t) * (size_t)ndim);
    pout.data = out->data;
    if (!pi->handle) {
        size_t bytes = (size_t)adm_tensor_numel(out) * (size_t)adm_format_get(out->dtype)->storage_bytes;
        adm_status st = adm_plugin_run_sandboxed(pi->path, pi->name, &pi->desc, p->json ? p->json : "{}", pin, n,
                                                 &pout, bytes, err, sizeof err, &rc);
        if (st != ADM_OK) {
            adm_tensor_free(out);
            return st;
        }
    } else {
        /* in-process: the kernel runs in the environment its library's
         * loading left, as in its sandbox, and what it sets does not
         * outlive the call */
        adm_fpenv fe;
        adm_fpenv_save(&fe);
        adm_fpenv_leave(&pi->loaded);
        rc = pi->k->run(p->json ? p->json : "{}", pin, n, &pout, err, sizeof err);
        adm_fpenv_leave(&fe);
    }
    if (rc != 0) {
        adm_tensor_free(out);
        err[sizeof err - 1] = '\0';
        return ADM_FAIL(rc > 0 && rc < ADM_STATUS_COUNT ? (adm_status)rc : ADM_ERR_INVALID,
                        "plugin kernel '%s' refuses: %s", pi->name, err[0] ? err : "no reason given");
    }
    return ADM_OK;
}

/* ADM_PLUGIN_SANDBOX=off: the library loaded and queried in admit's own
 * process (for a debugger), from the default floating-point environment,
 * the caller's restored after; *loaded is what the loading left, for the
 * kernel. A crash or an exit there is admit's. */
static adm_status load_in_process(const char *path, const char *name, void **handle, const adm_plugin_kernel **k,
                                  adm_fpenv *loaded)
{
    adm_plugin_query_fn q;
    adm_fpenv fe;
    adm_status st = ADM_OK;
    void *h;
    adm_fpenv_enter(&fe);
    *k = NULL;
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    adm_fpenv_save(loaded);
    if (!h)
        st = ADM_FAIL(ADM_ERR_IO, "plugin %s: cannot load: %s", path, dlerror());
    else if (!(*(void **)(&q) = dlsym(h, ADM_PLUGIN_QUERY_SYMBOL)))
        st = ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no symbol '%s' (expected the entry point of "
                      "candidates/plugin.h)", path, ADM_PLUGIN_QUERY_SYMBOL);
    else if (!(*k = q(name)))
        st = ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no kernel named '%s'", path, name);
    adm_fpenv_leave(&fe);
    if (st != ADM_OK && h) dlclose(h);
    *handle = st == ADM_OK ? h : NULL;
    return st;
}

adm_status adm_plugin_load(const char *path, const char *name, const adm_impl **out)
{
    void *h = NULL;
    const adm_plugin_kernel *k = NULL;
    adm_plugin_desc d;
    adm_fpenv loaded;
    plugin_impl *pi;
    adm_status st;
    size_t wlen;
    *out = NULL;
    ADM_TRY(adm_name_check("plugin kernel name", name));
    /* dlopen of a FIFO blocks; a path without '/' is looked up by the
     * loader in the library path, not here */
    if (strchr(path, '/') && adm_file_check_regular(path, "the plugin") != ADM_OK) {
        adm_error_prefix("cannot load plugin: ");
        return adm_error_code();
    }
    if (adm_plugin_sandbox_enabled()) {
        ADM_TRY(adm_plugin_query_sandboxed(path, name, &d));
    } else {
        ADM_TRY(load_in_process(path, name, &h, &k, &loaded));
        adm_plugin_describe(k, &d);
    }
    if ((st = adm_plugin_desc_check(&d, path, name)) != ADM_OK) {
        if (h) dlclose(h);
        return st;
    }
    wlen = strlen(d.description) + strlen(path) + 4;
    pi = calloc(1, sizeof *pi);
    if (!pi || !(pi->path = adm_strdup(path)) || !(pi->what = malloc(wlen))) {
        if (pi) free(pi->path);
        free(pi);
        if (h) dlclose(h);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    snprintf(pi->name, sizeof pi->name, "%s", name);
    pi->handle = h;
    pi->k = k;
    if (h) pi->loaded = loaded;
    pi->desc = d;
    pi->impl.op = pi->desc.op;
    pi->impl.name = pi->name;
    pi->impl.backend = "plugin";
    pi->impl.decl.accumulator = decl_dtype(&d, ADM_PD_ACCUMULATOR, d.accumulator);
    pi->impl.decl.operand = decl_dtype(&d, ADM_PD_OPERAND, d.operand);
    pi->impl.decl.intermediate = decl_dtype(&d, ADM_PD_INTERMEDIATE, d.intermediate);
    pi->impl.decl.transcendental_ulps = d.transcendental_ulps;
    pi->impl.decl.stable = d.stable;
    pi->impl.run = plugin_run;
    if (d.description[0]) snprintf(pi->what, wlen, "%s (%s)", d.description, path);
    else snprintf(pi->what, wlen, "%s", path);
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
    if (pi->handle) dlclose(pi->handle);
    free(pi->path);
    free(pi->what);
    free(pi);
}
