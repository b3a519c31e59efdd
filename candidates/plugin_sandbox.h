/* Internal: a plugin kernel's run in a child process (plugin_sandbox.c). */
#ifndef ADM_PLUGIN_SANDBOX_H
#define ADM_PLUGIN_SANDBOX_H

#include "adm_core.h"
#include "plugin.h"

/* 0 when ADM_PLUGIN_SANDBOX=off (or 0, no) is in the environment. */
int adm_plugin_sandbox_enabled(void);
/* Runs k->run(params, in, n, out with its data in a guarded shared
 * mapping) in a child; on return the out_bytes of output are copied to
 * out->data, and *rc and err are the kernel's. A crash, a hang, the CPU or
 * memory limit, or a write outside the output: ADM_ERR_INVALID naming the
 * kernel and what happened. */
adm_status adm_plugin_run_sandboxed(const adm_plugin_kernel *k, const char *kname, const char *params,
                                    const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, size_t out_bytes,
                                    char *err, size_t err_len, int *rc);

#endif
