/* The harness's part of the CUDA module (harness/stats_cuda.h): its
 * table. Its device code calls nothing of the harness's host code. */
#include "stats_cuda.h"

static const adm_stats_cuda_part part = {
    .head = {ADM_STATS_CUDA_ABI, sizeof(adm_stats_cuda_part)},
    .open = adm_stats_cuda_open,
    .run = adm_stats_cuda_run,
    .close = adm_stats_cuda_close,
    .borrowed = adm_stats_cuda_borrowed,
    .scale = adm_stats_cuda_scale,
    .flip = adm_stats_cuda_flip,
};

ADM_CUDA_PART_PLAIN(harness, part)
