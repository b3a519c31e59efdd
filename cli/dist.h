/* admit-kernel over the ranks of an MPI job (cli/dist.c): a command's
 * units of work handed out by rank 0, largest first, to every rank (rank
 * 0's own share in a thread of its own); each unit's result (bytes the
 * command encodes: statistics, never tensors) comes back to rank 0, which
 * alone reads inputs that are not units, assembles and writes the reports.
 * Built without MPI (ADM_MPI=OFF), or run as one process, every function
 * here is a no-op and a command runs as it always has. */
#ifndef ADM_CLI_DIST_H
#define ADM_CLI_DIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* First thing in main: under an MPI launcher (mpirun, srun) with more than
 * one process, in a build with MPI, joins the job: one GPU per rank where
 * there are GPUs (CUDA_VISIBLE_DEVICES by the local rank), else the rank's
 * share of the cores for its threads; the other ranks' standard output is
 * closed. */
void adm_dist_init(int *argc, char ***argv);
/* Last thing in main, with the command's exit status: rank 0 tells the
 * other ranks to end with the same status and leaves the job (ending it
 * where a rank was lost, so that a stopped rank cannot keep it alive);
 * returns the status this process exits with. */
int adm_dist_end(int rc);

int adm_dist_rank(void);   /* 0 without MPI */
int adm_dist_size(void);   /* 1 without MPI */
/* What `admit-kernel version` says about MPI: built or not, the library,
 * and under a launcher each rank's host, GPU and threads. */
void adm_dist_describe(FILE *f);

/* A growable byte buffer for the units' descriptions and results. A
 * failed allocation or a read past the end sets failed; the readers then
 * return zeros and NULL. */
typedef struct adm_dist_buf {
    unsigned char *p;
    size_t len, cap, pos;
    int failed;
    /* 1: a buffer MPI sends or receives from: page-aligned, and its memory
     * is never handed back to malloc before the job ends (dist.c says why) */
    int msg;
} adm_dist_buf;
void adm_dist_buf_free(adm_dist_buf *b);
void adm_dist_put(adm_dist_buf *b, const void *p, size_t n);
void adm_dist_put_i64(adm_dist_buf *b, int64_t v);
void adm_dist_put_str(adm_dist_buf *b, const char *s); /* NULL travels as NULL */
void adm_dist_get(adm_dist_buf *b, void *p, size_t n);
int64_t adm_dist_get_i64(adm_dist_buf *b);
/* A pointer into b (NUL-terminated there), or NULL. */
const char *adm_dist_get_str(adm_dist_buf *b);
/* A static string the same as s: pointers that must stay valid for the
 * process's life (a verdict's oracle_assumption) are interned here. */
const char *adm_dist_intern(const char *s);

struct adm_verdict;
/* A verdict's bytes without its unused reason space, and back. */
void adm_dist_put_verdict(adm_dist_buf *b, const struct adm_verdict *v);
void adm_dist_get_verdict(adm_dist_buf *b, struct adm_verdict *v);

/* A command's units. run is called on any rank, in any thread, with a
 * unit's description; the others on rank 0's main thread only. */
typedef struct adm_dist_ops {
    void (*describe)(void *ctx, int unit, adm_dist_buf *out);
    void (*run)(const unsigned char *desc, size_t len, adm_dist_buf *out);
    /* the result of a unit, exactly once per unit that was run (late
     * results of a unit that was handed out again are dropped) */
    void (*done)(void *ctx, int unit, adm_dist_buf *result);
    /* a unit no rank could measure (why: a sentence), instead of done;
     * returns 1 when rank 0 will measure it itself afterwards (the note
     * then says so), 0 when it is lost */
    int (*lost)(void *ctx, int unit, const char *why);
    /* 0 when the unit is no longer wanted (an earlier capture of its entry
     * failed); may be NULL */
    int (*needed)(void *ctx, int unit);
    /* "entry 'x' captures[2]", for messages */
    void (*name)(void *ctx, int unit, char *buf, size_t n);
    /* what run kept between units (a cache), given back when a rank has
     * no more units; may be NULL */
    void (*release)(void);
} adm_dist_ops;

/* The most seconds a rank may take on one unit before it is taken for
 * stopped and its unit handed to another rank (0: no limit). */
#define ADM_DIST_UNIT_TIMEOUT_DEFAULT 3600
void adm_dist_set_unit_timeout(int64_t seconds);

/* 1 when the job has more than one rank: the command hands its units to
 * adm_dist_run (rank 0) or adm_dist_serve (the others). */
int adm_dist_active(void);
/* Rank 0: runs n units over the ranks, largest `size` first; returns when
 * each is done or lost. progress (or NULL) is told each unit's end. The
 * ranks that stopped answering and the units handed out again are then in
 * adm_dist_note; nothing is said when none were. */
void adm_dist_run(const adm_dist_ops *ops, void *ctx, int n, const int64_t *size,
                  void (*progress)(int done, int n, const char *name));
/* Empty, or a sentence for the reports on what the job lost or redid. */
const char *adm_dist_note(void);
/* Ranks other than 0: measure the units rank 0 hands out (ops NULL: none,
 * for a command that rank 0 runs alone) until it says the job is over;
 * returns the exit status rank 0 gives. */
int adm_dist_serve(const adm_dist_ops *ops);

#endif
