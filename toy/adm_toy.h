/* admit toy: a small DiT that makes drift arms with no model to download.
 *
 * A few blocks of adaLN-modulated LayerNorm, attention with RMSNorm on q
 * and k, an MLP with tanh-GELU and gated residuals, run for a few Euler
 * steps of flow matching on a latent and decoded to an 8-bit RGB image by
 * a fixed linear map. Weights are seeded Gaussians in bf16. Every op but
 * the attention core is a registered implementation (candidates/), so a
 * tier is a choice of implementations per site, read from a fusion table.
 * TP2 is tensor parallelism as Megatron-style runtimes lay it out: QKV
 * and FC1 column-parallel (no change to any value), the attention output
 * projection and FC2 row-parallel over their K, each followed by a sum
 * all-reduce of the bf16 partials, then the bias: emulated in one process,
 * over two processes (pipes), or over two GPUs (cuBLAS partials, NCCL
 * all-reduce, one process per GPU). The same math also runs in fp64,
 * block by block and step by step, for compounding. */
#ifndef ADM_TOY_H
#define ADM_TOY_H

#include "adm_export.h"

#include <stdio.h>

#include "adm_candidates.h"
#include "adm_drift.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum adm_toy_site {
    ADM_TOY_EMBED = 0,    /* linear: latent -> hidden */
    ADM_TOY_TEMB,         /* linear: timestep embedding */
    ADM_TOY_ADALN,        /* linear: SiLU(c) -> shift, scale, gate (per block, and the final layer's) */
    ADM_TOY_NORM,         /* layernorm with modulate */
    ADM_TOY_QKV,          /* linear */
    ADM_TOY_QK_NORM,      /* rmsnorm on q and k per head */
    ADM_TOY_PROJ,         /* linear: attention out projection, row-parallel under TP2 */
    ADM_TOY_RESIDUAL,     /* gated_residual */
    ADM_TOY_FC1,          /* linear+gelu (tanh) */
    ADM_TOY_FC2,          /* linear: MLP down-projection, row-parallel under TP2 */
    ADM_TOY_FINAL,        /* linear: hidden -> velocity */
    ADM_TOY_SITE_COUNT
} adm_toy_site;

ADM_API const char *adm_toy_site_name(adm_toy_site s);
ADM_API const char *adm_toy_site_op(adm_toy_site s);
ADM_API adm_status adm_toy_site_from_name(const char *name, adm_toy_site *out);
ADM_API void adm_toy_print_sites(FILE *f);

typedef struct adm_toy_config {
    uint64_t seed;   /* 1 */
    int grid;        /* tokens per side: T = grid^2 (16) */
    int patch;       /* pixels per token side (4): the image is grid*patch square, RGB */
    int latent;      /* latent channels per token (16) */
    int hidden;      /* 64 */
    int heads;       /* 4 */
    int mlp;         /* 256 */
    int blocks;      /* 3 */
    int steps;       /* 4 Euler steps from t = 1 to 0 */
} adm_toy_config;
ADM_API void adm_toy_config_default(adm_toy_config *c);

/* The model: its weights and noise, from the seed. */
typedef struct adm_toy adm_toy;
ADM_API adm_status adm_toy_create(const adm_toy_config *cfg, adm_toy **out);
ADM_API void adm_toy_free(adm_toy *t);
ADM_API const adm_toy_config *adm_toy_get_config(const adm_toy *t);

/* A choice of implementation per site. */
typedef struct adm_toy_tier {
    const adm_impl *impl[ADM_TOY_SITE_COUNT];
    char entry[ADM_TOY_SITE_COUNT][96];   /* what mounted it: a table entry, "reference", "--mount" */
} adm_toy_tier;

/* Every site on the registry's reference path. */
ADM_API void adm_toy_tier_reference(adm_toy_tier *t);
/* From a fusion table (JSON; fusions/toy.json, the toy runtime's): exact =
 * each op's reference as the table names it (else the registry's);
 * lossless = exact with the lossless entries mounted, each at the sites
 * its optional "sites" list names (else every site of its op), the first
 * entry for a site winning; high = lossless with the entry `high` mounted
 * ("NAME" at its sites, or "NAME@SITE"; NULL: none). Errors name the file
 * and the field. */
ADM_API adm_status adm_toy_tier_from_table(const char *path, adm_tier tier, const char *high, adm_toy_tier *t);
/* Mounts "SITE=IMPL" (a registered implementation of the site's op, or
 * path.so:name is refused: plugins are for `run`). */
ADM_API adm_status adm_toy_tier_mount(adm_toy_tier *t, const char *spec);

/* How FC2 runs. */
typedef struct adm_toy_comm adm_toy_comm;

/* Depth trace: the hidden state after every block of every step (layer
 * by layer), and the latent after every Euler step (step by step). */
typedef struct adm_toy_trace {
    int n_hidden;           /* steps * blocks */
    int64_t hidden_size;    /* tokens * hidden */
    double *hidden;         /* [n_hidden][hidden_size] */
    int n_latent;           /* steps */
    int64_t latent_size;    /* tokens * latent */
    double *latent;         /* [n_latent][latent_size] */
} adm_toy_trace;
ADM_API void adm_toy_trace_free(adm_toy_trace *tr);

/* Runs the toy with the tier's implementations, TP1 (tp = 1) or TP2 with
 * both ranks in this process (tp = 2), into an 8-bit RGB image
 * [1, grid*patch, grid*patch, 3] with data_range 255. trace may be NULL. */
ADM_API adm_status adm_toy_run(const adm_toy *t, const adm_toy_tier *tier, int tp, adm_image *img, adm_toy_trace *trace);
/* One rank of TP2 in a process of its own (comm from adm_toy_comm_*). */
ADM_API adm_status adm_toy_run_rank(const adm_toy *t, const adm_toy_tier *tier, adm_toy_comm *comm, adm_image *img);
/* The same math in fp64 (no rounding but fp64's own), and its decode. */
ADM_API adm_status adm_toy_run_f64(const adm_toy *t, adm_image *img, adm_toy_trace *trace);

/* Relative RMS error of each state of a trace against the fp64 trace:
 * err[k] = ||s_k - r_k|| / ||r_k|| over the hidden states (latent = 0) or
 * the latents (latent = 1); compensated sums, so each err[k] carries a
 * relative error <= 6 u + n u^2 (u = 2^-53) beyond the states' own. */
ADM_API adm_status adm_toy_trace_error(const adm_toy_trace *tr, const adm_toy_trace *ref, int latent, double *err);

/* TP2 over two processes: each rank computes its FC2 partial, and the
 * bf16 partials are summed by an all-reduce. mode: ADM_TOY_TP2_PROCESSES
 * (CPU partials with the tier's implementation, pipes), ADM_TOY_TP2_NCCL
 * (cuBLAS partials on GPU `rank`, NCCL; with world 1, one GPU and no
 * all-reduce). The image comes from rank 0; both ranks' images must be
 * bit-identical (checked). */
typedef enum adm_toy_tp2_mode {
    ADM_TOY_TP2_EMULATED = 0,
    ADM_TOY_TP2_PROCESSES = 1,
    ADM_TOY_TP2_NCCL = 2
} adm_toy_tp2_mode;
ADM_API adm_status adm_toy_run_processes(const adm_toy *t, const adm_toy_tier *tier, adm_toy_tp2_mode mode, int world,
                                         adm_image *img);

/* ------------------------------------------------------------------ */
/* The toy's drift report                                               */
/* ------------------------------------------------------------------ */

typedef struct adm_toy_options {
    adm_toy_config config;
    const char *table;        /* NULL: fusions/toy.json here, beside the executable's folder, or installed
                               * (share/admit/fusions/toy.json); ADM_ERR_NOT_FOUND when in none */
    const char *high;         /* NULL: flux2_nvfp4_fc1_swiglu_quant */
    int depth;                /* compounding: blocks of the layer run, steps of the step run (16) */
    char **mounts;            /* SITE=IMPL for the lossless tier */
    int n_mounts;
    adm_toy_tp2_mode tp2;
    /* called before each run of the toy (k of n, which run); NULL: none */
    adm_drift_progress_fn progress;
    void *progress_user;
} adm_toy_options;
ADM_API void adm_toy_options_default(adm_toy_options *o);
ADM_API void adm_toy_options_free(adm_toy_options *o);
ADM_API adm_status adm_toy_options_add_mount(adm_toy_options *o, const char *spec);

/* Runs the arms (exact TP1 twice, exact TP2, lossless TP1 and TP2, high
 * TP1), adds them with the seed's pairs (control, band, the tier at TP1
 * and TP2, both at once, exact vs high) and the compounding series to d:
 * exact, lossless and high against fp64, layer by layer (the hidden state
 * after each block of a one-step run `depth` blocks deep) and step by step
 * (the latent after each step of a one-block run `depth` steps long), on
 * an 8 x 8-token toy of the same seed. */
ADM_API adm_status adm_toy_drift(const adm_toy_options *o, adm_drift *d, int set_title);
/* Every arm of d as DIR/NAME.png. */
ADM_API adm_status adm_toy_save_arms(const adm_drift *d, const char *dir);

/* ------------------------------------------------------------------ */
/* The GPU surface (toy/toy_cuda.cu; ADM_ERR_NO_DEVICE without CUDA)     */
/* ------------------------------------------------------------------ */

/* Selects GPU `device` for this process. */
ADM_API adm_status adm_toy_cuda_select(int device);
/* y [M, N] bf16 = x [M, K] bf16 . w [N, K]^T through cuBLAS (bf16
 * operands, fp32 compute, one rounding to bf16), host buffers. */
ADM_API adm_status adm_toy_cuda_gemm_bf16(const uint16_t *x, const uint16_t *w, int64_t M, int64_t K, int64_t N, uint16_t *y);
/* NCCL through dlopen (ADM_NCCL_LIB, else libnccl.so.2): the 128-byte
 * unique id, a communicator, and an in-place bf16 sum all-reduce of a
 * host buffer. */
#define ADM_TOY_NCCL_ID_BYTES 128
ADM_API adm_status adm_toy_nccl_unique_id(unsigned char id[ADM_TOY_NCCL_ID_BYTES]);
ADM_API adm_status adm_toy_nccl_init(const unsigned char id[ADM_TOY_NCCL_ID_BYTES], int rank, int world, void **comm);
ADM_API adm_status adm_toy_nccl_allreduce_bf16(void *comm, uint16_t *buf, int64_t n);
ADM_API void adm_toy_nccl_free(void *comm);

#ifdef __cplusplus
}
#endif
#endif
