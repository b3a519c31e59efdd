/* Internal: the harness's part of the CUDA module
 * (core/adm_cuda_module.h): the gates' raw sums on the GPU. Its device
 * code is harness/stats_cuda.cu, its table is defined beside it
 * (harness/stats_cuda_part.c), and libadmit's harness/stats_dev.c
 * reaches it by the part's name. */
#ifndef ADM_STATS_CUDA_H
#define ADM_STATS_CUDA_H

#include "adm_cuda_module.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_STATS_CUDA_PART "harness"
/* Raise on any change to the table or to a structure that crosses, the
 * layout of the raw sums' arrays included (harness/stat_elem.h: RAW_NS,
 * MG_NS, HIST_BLOCK; 3: RAW_NS 27; 4: the resolve scale's 2 sums a
 * block). */
#define ADM_STATS_CUDA_ABI 4

/* One output of R rows x N channels in the partition of
 * harness/stat_elem.h (ns stripes, nb blocks), the oracle's values o and
 * condition scale cond (NULL: none) in fp64 and the reference output in
 * its stored format ref_dt (contiguous; fmt: the format the ulps are
 * taken in), all on the host, uploaded once by stats_open for every
 * candidate of the output (o and cond are borrowed instead where the GPU
 * oracle still holds them: oracle/oracle_cuda.h, adm_o_cuda_kept_take). */
typedef struct adm_stats_dev_desc {
    int64_t R, N, ns, nb;
    int fmt, ref_dt;
    const double *o, *cond;
    const void *ref;
} adm_stats_dev_desc;

/* open: the device copies in *sess (ADM_ERR_UNSUPPORTED for formats
 * other than bf16, fp16, fp32, fp64). run: a candidate output
 * (contiguous, cand_dt, R x N) uploaded and its raw sums into the host
 * arrays rows (R x RAW_NS), chans (N x RAW_NS: the ns stripes' channel
 * sums already added in stripe order, as adm_h_stats_finish adds them),
 * mg (nb x MG_NS) and ph (nb x HIST_BLOCK); first[0] the first element
 * whose kind (finite, NaN, +Inf, -Inf) differs from the reference's,
 * first[1] the first whose bits differ (NaN payloads aside) where cand_dt
 * is the reference's format, else -1; R N where none (gates 3 and 7).
 * borrowed: 1 where open borrowed the GPU oracle's device copies of o and
 * cond. scale: the resolve scale's block sums (harness/stat_elem.h,
 * adm_se_scale_add) over a session's oracle values and reference: 2
 * doubles a block of ADM_SE_SCALE_BLK elements into part, in block
 * order. */
adm_status adm_stats_cuda_open(const adm_stats_dev_desc *d, void **sess);
adm_status adm_stats_cuda_run(void *sess, const void *cand, int cand_dt, double *rows, double *chans, double *mg,
                              int64_t *ph, int64_t *first);
void adm_stats_cuda_close(void *sess);
int adm_stats_cuda_borrowed(void *sess);
adm_status adm_stats_cuda_scale(void *sess, double *part);
/* Gate 5 on the device (harness/stat_elem.h adm_se_flip) over the
 * session's oracle, reference and last candidate: reader's scale set
 * there for a quantize reader (max |o| over the finite values over
 * reader.maxf, 1 where that is 0); cnt: ties, decisions, the reference's
 * and the candidate's flips. */
typedef struct adm_stats_flip_desc {
    int kind, fmt, has_nan; /* harness/stat_elem.h's adm_se_reader, but its scale */
    double threshold, maxf;
} adm_stats_flip_desc;
adm_status adm_stats_cuda_flip(void *sess, const adm_stats_flip_desc *d, int64_t *cnt);

typedef struct adm_stats_cuda_part {
    adm_cuda_part_head head;
    adm_status (*open)(const adm_stats_dev_desc *d, void **sess);
    adm_status (*run)(void *sess, const void *cand, int cand_dt, double *rows, double *chans, double *mg,
                      int64_t *ph, int64_t *first);
    void (*close)(void *sess);
    int (*borrowed)(void *sess);
    adm_status (*scale)(void *sess, double *part);
    adm_status (*flip)(void *sess, const adm_stats_flip_desc *d, int64_t *cnt);
} adm_stats_cuda_part;

#ifdef __cplusplus
}
#endif
#endif
