/* admit captures: the HDF5 capture format v1 (captures/FORMAT.md), its
 * reader, writer and validator, statistics, and the synthetic DiT
 * activation generator.
 *
 * A capture is read whole into memory (tensors are checked against size
 * limits before anything is allocated) and is an opaque handle; the same
 * handle is built up in memory and written out atomically. */
#ifndef ADM_CAPTURE_H
#define ADM_CAPTURE_H

#include "adm_export.h"

#include "adm_core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ADM_CAPTURE_MAGIC "admit-capture"
/* Version 2 adds one rule to version 1: a special case's input that is
 * absent is the capture's /inputs one of that name (captures/FORMAT.md). */
#define ADM_CAPTURE_VERSION 2
/* A reader refuses any one tensor larger than this many bytes (16 GiB)
 * before allocating; ADM_CAPTURE_MAX_BYTES in the environment lowers or
 * raises it. */
#define ADM_CAPTURE_DEFAULT_MAX_BYTES ((int64_t)16 << 30)

typedef struct adm_capture adm_capture;

/* A tensor with a name, as the capture lists them. Borrowed from the
 * capture: valid until adm_capture_free. */
typedef struct adm_named_tensor {
    const char *name;
    const adm_tensor *tensor;
} adm_named_tensor;

/* ---- reading */
/* Opens and reads a capture, checking its structure: magic, version, the
 * datasets and their dtype attributes, sizes. The op's shape rule is the
 * validator's (adm_capture_validate). Errors name the file and dataset. */
ADM_API adm_status adm_capture_read(const char *path, adm_capture **out);
/* What a caller will do with a capture, judged from what the file
 * declares before any tensor data is read: the capture as read so far,
 * every tensor with its name, dtype and shape but no data (each tensor's
 * data is NULL). ADM_OK lets the read go on; any other status refuses the
 * capture with the plan's message (harness/adm_harness.h: adm_plan_check
 * bounds a command's memory and work). */
typedef adm_status (*adm_capture_plan_fn)(const adm_capture *declared, void *user);
/* As adm_capture_read, in two passes: the declared layout (every check of
 * the reader, no data), which must declare at most 64 MiB + 64 x the
 * file's size (ADM_CAPTURE_MAX_RATIO) and which plan (when not NULL) then
 * judges; only then the data. */
ADM_API adm_status adm_capture_read_plan(const char *path, adm_capture_plan_fn plan, void *user, adm_capture **out);
/* Structural read plus the op's catalog checks: known op, parameters,
 * every tensor's shape against the op's rule. */
ADM_API adm_status adm_capture_validate(const adm_capture *c);
ADM_API void adm_capture_free(adm_capture *c);

/* ---- reading in a sandbox
 * libhdf5 itself can crash, hang or allocate gigabytes on a few corrupted
 * bytes (issue 8). adm_capture_read_sandboxed runs adm_capture_read in a
 * child process (fork) under these limits and takes the capture back
 * through a pipe; when the child dies, overruns or hangs, the capture is
 * refused with ADM_ERR_FORMAT and "capture FILE is corrupt: the HDF5
 * library failed reading attribute 'NAME' of ..." (what the reader had
 * asked libhdf5 for last). The calling process never runs libhdf5 on the
 * file. */
typedef struct adm_sandbox_limits {
    int64_t memory_bytes;  /* address space the child may add (RLIMIT_AS); 0: no limit */
    int cpu_seconds;       /* RLIMIT_CPU of the child; 0: no limit */
    int wall_seconds;      /* the parent kills the child (SIGKILL) after this; 0: never */
} adm_sandbox_limits;
/* The defaults for a file: memory 1 GiB + 16 x its size (at most the
 * machine's), CPU 5 s + 1 s per 16 MiB, wall clock three times the CPU;
 * ADM_SANDBOX_MEMORY (bytes, or with a K/M/G suffix), ADM_SANDBOX_CPU and
 * ADM_SANDBOX_TIMEOUT (seconds) in the environment replace them. */
ADM_API void adm_sandbox_limits_for(const char *path, adm_sandbox_limits *lim);
/* 0 when the environment has ADM_SANDBOX=off (or 0, no): for debugging
 * the reader in one process. */
ADM_API int adm_sandbox_enabled(void);
/* As adm_capture_read (the same checks and messages), in a child. limits
 * NULL: adm_sandbox_limits_for(path). With the sandbox turned off, reads
 * in-process. An invalid ADM_* limit in the environment is refused first
 * (adm_env_check: ADM_ERR_INVALID naming it). */
ADM_API adm_status adm_capture_read_sandboxed(const char *path, const adm_sandbox_limits *limits, adm_capture **out);
/* As adm_capture_read_plan in the child (plan runs there, before the data
 * is read), and plan again in the calling process on the capture the
 * child sent, before it is returned: a child subverted by its file cannot
 * skip it. */
ADM_API adm_status adm_capture_read_sandboxed_plan(const char *path, const adm_sandbox_limits *limits,
                                                   adm_capture_plan_fn plan, void *user, adm_capture **out);

ADM_API const char *adm_capture_path(const adm_capture *c);     /* NULL when built in memory */
ADM_API int adm_capture_version(const adm_capture *c);
ADM_API const char *adm_capture_op(const adm_capture *c);
ADM_API const char *adm_capture_params(const adm_capture *c);   /* JSON object text */
ADM_API const char *adm_capture_model(const adm_capture *c);    /* "" when absent */
ADM_API const char *adm_capture_layer(const adm_capture *c);
ADM_API int64_t adm_capture_step(const adm_capture *c);          /* -1 when absent */
ADM_API const char *adm_capture_source(const adm_capture *c);

ADM_API int adm_capture_input_count(const adm_capture *c);
ADM_API adm_named_tensor adm_capture_input(const adm_capture *c, int i);
ADM_API const adm_tensor *adm_capture_find_input(const adm_capture *c, const char *name);
ADM_API const adm_tensor *adm_capture_reference(const adm_capture *c); /* NULL when absent */
ADM_API int adm_capture_candidate_count(const adm_capture *c);
ADM_API adm_named_tensor adm_capture_candidate(const adm_capture *c, int i);
ADM_API const adm_tensor *adm_capture_oracle(const adm_capture *c);    /* user fp64, or NULL */
/* Written by admit's own oracle (`admit-kernel oracle -o`): the certified
 * bound of /oracle; NULL for a user's evaluation. */
ADM_API const adm_tensor *adm_capture_oracle_bound(const adm_capture *c);
ADM_API int adm_capture_oracle_certified(const adm_capture *c);

/* Special-value cases: inputs, optionally the reference's output or its
 * refusal, and candidate outputs. */
ADM_API int adm_capture_special_count(const adm_capture *c);
ADM_API const char *adm_capture_special_name(const adm_capture *c, int i);
ADM_API int adm_capture_special_input_count(const adm_capture *c, int i);
ADM_API adm_named_tensor adm_capture_special_input(const adm_capture *c, int i, int j);
/* The input of that name case i runs on: its own, or, in a capture of
 * version 2 and later, the capture's where the case has none; NULL when
 * neither has it. */
ADM_API const adm_tensor *adm_capture_special_find_input(const adm_capture *c, int i, const char *name);
ADM_API const adm_tensor *adm_capture_special_reference(const adm_capture *c, int i);
/* ADM_OK, or the status the reference path refused this case with. */
ADM_API adm_status adm_capture_special_refusal(const adm_capture *c, int i);
ADM_API int adm_capture_special_candidate_count(const adm_capture *c, int i);
ADM_API adm_named_tensor adm_capture_special_candidate(const adm_capture *c, int i, int j);

/* ---- building and writing */
ADM_API adm_status adm_capture_create(const char *op, const char *params_json, adm_capture **out);
/* A capture over the caller's own tensors, built in memory with no file:
 * as adm_capture_create, but every tensor given to it afterwards (inputs,
 * reference, candidates, oracle, special cases) is borrowed, not copied.
 * The capture reads each where it lies, with its strides (any: 0,
 * negative, transposed), after checking it as adm_tensor_wrap checks a
 * view (every element it addresses within its capacity) and that its data
 * is there and aligned to its element size; the caller keeps the storage
 * alive and unchanged until adm_capture_free. It validates, judges
 * (adm_harness_replay, adm_report_add_replay) and writes
 * (adm_capture_write) exactly as the same tensors written to a file and
 * read back. Computes nothing. */
ADM_API adm_status adm_capture_create_borrowed(const char *op, const char *params_json, adm_capture **out);
ADM_API adm_status adm_capture_set_provenance(adm_capture *c, const char *model, const char *layer,
                                              int64_t step, const char *source);
/* Each add copies the tensor (contiguous) into the capture; a borrowed
 * capture's keeps a view of it. */
ADM_API adm_status adm_capture_add_input(adm_capture *c, const char *name, const adm_tensor *t);
ADM_API adm_status adm_capture_set_reference(adm_capture *c, const adm_tensor *t);
ADM_API adm_status adm_capture_add_candidate(adm_capture *c, const char *name, const adm_tensor *t);
ADM_API adm_status adm_capture_set_oracle(adm_capture *c, const adm_tensor *t);
/* admit's certified oracle: value and bound (fp64, the same shape). */
ADM_API adm_status adm_capture_set_certified_oracle(adm_capture *c, const adm_tensor *value, const adm_tensor *bound);
/* Returns the new case's index in *index. */
ADM_API adm_status adm_capture_add_special(adm_capture *c, const char *name, int *index);
ADM_API adm_status adm_capture_special_add_input(adm_capture *c, int index, const char *name,
                                                 const adm_tensor *t);
ADM_API adm_status adm_capture_special_set_reference(adm_capture *c, int index, const adm_tensor *t);
ADM_API adm_status adm_capture_special_set_refusal(adm_capture *c, int index, adm_status refused);
ADM_API adm_status adm_capture_special_add_candidate(adm_capture *c, int index, const char *name,
                                                     const adm_tensor *t);
/* Writes the capture to a temporary file beside path, then renames it into
 * place: a failure leaves no partial file. gzip level 0 stores raw. */
ADM_API adm_status adm_capture_write(const adm_capture *c, const char *path, int gzip_level);

/* ---- statistics */
typedef struct adm_tensor_stats {
    int64_t count, nan_count, posinf_count, neginf_count, zero_count;
    double min, max;           /* over finite elements; NaN when none */
    double mean, rms;          /* over finite elements */
    double absmax, p99_abs;    /* p99 of |x| over finite elements */
    double max_over_p99;       /* absmax / p99_abs; Inf when p99 is 0 */
} adm_tensor_stats;
ADM_API adm_status adm_tensor_stats_compute(const adm_tensor *t, adm_tensor_stats *s);
/* The q-quantile (0..1) of |x| over finite values (nearest-rank), in
 * O(n) expected time; values is clobbered. */
ADM_API double adm_quantile_abs_inplace(double *values, int64_t n, double q);

/* ---- synthetic DiT activations */
typedef struct adm_synth_config {
    uint64_t seed;
    int64_t tokens, channels;      /* x is [tokens, channels] */
    adm_dtype dtype;
    double token_scale_sigma;      /* per-token scale is exp(N(0, sigma)) */
    double outlier_fraction;       /* fraction of channels that are outliers */
    double target_max_over_p99;    /* outlier gain is calibrated to this */
} adm_synth_config;
/* FLUX.1-dev MLP input: 4096 x 3072 bf16, max/p99 about 8. */
ADM_API void adm_synth_config_default(adm_synth_config *cfg);
/* x[t, c] = s_t * z[t, c] * g_c, z ~ N(0, 1), s_t log-normal, g_c = 1 except
 * on the outlier channels, whose common gain is chosen so that
 * max|x| / p99|x| equals the target (within the format's rounding). */
ADM_API adm_status adm_synth_activations(const adm_synth_config *cfg, adm_tensor *x);
/* Gaussian weights N(0, 1/fan_in) of shape [rows, cols], and a bias
 * N(0, 0.02^2), from the seed; rounded RNE into dt. */
ADM_API adm_status adm_synth_gaussian(uint64_t seed, double sigma, adm_dtype dt, int ndim,
                                      const int64_t *shape, adm_tensor *out);

#ifdef __cplusplus
}
#endif
#endif
