/* Internal: the emulations behind the registry entries. */
#ifndef ADM_NORM_EMU_H
#define ADM_NORM_EMU_H

#include "adm_candidates.h"

enum { NORM_STATS_SEQ = 0, NORM_STATS_BLOCKED = 1, NORM_STATS_BF16 = 2 };

adm_status adm_emu_rmsnorm(const adm_op_params *p, const adm_tensor *const *in, int how, int fused_out, int silu_after,
                           adm_tensor *out);
adm_status adm_emu_mean_sq(const adm_op_params *p, const adm_tensor *const *in, int how, adm_tensor *out);
adm_status adm_emu_layernorm(const adm_op_params *p, const adm_tensor *const *in, int folded, adm_tensor *out);
adm_status adm_emu_groupnorm(const adm_op_params *p, const adm_tensor *const *in, int fused, adm_tensor *out);
adm_status adm_emu_gated_residual(const adm_op_params *p, const adm_tensor *const *in, int early, adm_tensor *out);
adm_status adm_emu_linear_attention(const adm_op_params *p, const adm_tensor *const *in, int bf16_state,
                                    adm_tensor *out);

#endif
