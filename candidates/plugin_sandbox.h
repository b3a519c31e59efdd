/* Internal: a plugin's code (loading it, its query, its kernel) run in a
 * child process (plugin_sandbox.c), and what the query says of a kernel. */
#ifndef ADM_PLUGIN_SANDBOX_H
#define ADM_PLUGIN_SANDBOX_H

#include "adm_core.h"
#include "plugin.h"

/* 0 when ADM_PLUGIN_SANDBOX=off (or 0, no) is in the environment. */
int adm_plugin_sandbox_enabled(void);

/* 1 when spec names a plugin kernel (path.so:name), as adm_impl_resolve
 * reads it. */
int adm_impl_spec_is_plugin(const char *spec);

/* What a kernel's struct says, copied out of the plugin by the process
 * that asked its query: fixed-size, so that it can cross from the child
 * as it is. Strings are cut at their capacity minus one and marked too
 * long; a NULL string is marked absent. Nothing in it is trusted before
 * adm_plugin_desc_check: the child may have been subverted by the plugin. */
enum { ADM_PD_NAME = 0, ADM_PD_OP, ADM_PD_ACCUMULATOR, ADM_PD_OPERAND, ADM_PD_INTERMEDIATE, ADM_PD_DESCRIPTION,
       ADM_PD_STRINGS };
#define ADM_PD_ABSENT 1
#define ADM_PD_TOO_LONG 2
typedef struct adm_plugin_desc {
    uint32_t abi_version, struct_size;
    int32_t fields_read;        /* 0: the version or size is refused, only those two were read */
    int32_t output_dtype, stable, has_run;
    double transcendental_ulps;
    int32_t str_state[ADM_PD_STRINGS];
    char name[ADM_NAME_MAX + 1];
    char op[64];
    char accumulator[16], operand[16], intermediate[16];
    char description[384];
} adm_plugin_desc;

/* Reads k's fields of its declared version into *d (zeroed first). A bad
 * pointer in k faults here: in the child that is the plugin's failure. */
void adm_plugin_describe(const adm_plugin_kernel *k, adm_plugin_desc *d);
/* ADM_OK when d describes a kernel admit can run: a version from 1 to
 * ADM_PLUGIN_ABI_VERSION with at least that version's size (else
 * ADM_ERR_VERSION), every string NUL-terminated within its capacity, not
 * too long, well-formed UTF-8 without control characters, an op of the
 * catalog, a valid output dtype, dtype names or absent declarations, a
 * finite or negative ulp count, stable 1, 0 or negative, a run function
 * (else ADM_ERR_INVALID). Messages name path, the kernel and the field. */
adm_status adm_plugin_desc_check(const adm_plugin_desc *d, const char *path, const char *kname);

/* Loads path in a child, asks its query for kname and ships the kernel's
 * descriptor back in *d (unchecked: see adm_plugin_desc_check). A plugin
 * that cannot be loaded (ADM_ERR_IO), lacks the entry point or the kernel
 * (ADM_ERR_NOT_FOUND), or whose loading or query crashes, ends its
 * process, loops or runs past its limits (ADM_ERR_INVALID, naming which)
 * fails this call only; nothing it does reaches admit's process. */
adm_status adm_plugin_query_sandboxed(const char *path, const char *kname, adm_plugin_desc *d);

/* Loads path in a child, asks its query for kname again, and runs the
 * kernel only if its descriptor is still *expect: run(params, in, n, out
 * with its data in a guarded shared mapping). On return the out_bytes of
 * output are copied to out->data, and *rc and err are the kernel's. A
 * crash, a hang, the CPU or memory limit, a write outside the output, or
 * a query that answers differently: ADM_ERR_INVALID naming the kernel and
 * what happened. */
adm_status adm_plugin_run_sandboxed(const char *path, const char *kname, const adm_plugin_desc *expect,
                                    const char *params, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out,
                                    size_t out_bytes, char *err, size_t err_len, int *rc);

#endif
