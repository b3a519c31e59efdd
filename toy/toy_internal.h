/* Internal to the toy DiT (toy/). */
#ifndef ADM_TOY_INTERNAL_H
#define ADM_TOY_INTERNAL_H

#include "adm_toy.h"

/* One rank's view of TP2 in a process of its own. */
struct adm_toy_comm {
    int rank, world;
    int gpu;        /* FC2 partials by cuBLAS on this process's GPU */
    void *nccl;     /* the NCCL communicator; NULL: the pipes below */
    int wr, rd;     /* to the peer, from the peer */
};

/* The in-place bf16 sum all-reduce of n values over comm: NCCL, or the
 * pipes (rank 0 sends first, so any size passes without deadlock). The
 * sum of two bf16 values is computed in fp32 and rounded once, as NCCL's
 * bf16 reduction does; with two ranks it is the same on both. */
adm_status adm_toy_allreduce(adm_toy_comm *comm, uint16_t *buf, int64_t n);

#endif
