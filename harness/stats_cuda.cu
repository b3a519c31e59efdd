/* Gates 1 and 2's raw sums on the GPU: the arrays of harness/stat_elem.h
 * (per row, per stripe and channel, per block) from the oracle's values,
 * its condition scale and the two outputs resident on the device, with
 * the per-element functions of stat_elem.h in the CPU's summation order
 * (a row's sums in channel order, a stripe's channel sums in row order, a
 * block's magnitude sums row by row), so every sum is the CPU's
 * bits. Built with -fmad=false: each operation rounds once, as on the CPU
 * (-ffp-contract=off). Only the sums come back, never the outputs. The
 * oracle's values and scale are the GPU oracle's own device copies where
 * it still holds them (oracle/oracle_cuda.cu, adm_o_cuda_kept_take), so
 * after a GPU evaluation only the reference and the candidates go up. */
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <cuda_runtime.h>

extern "C" {
#include "stat_elem.h"
#include "stats_cuda.h"
#include "oracle_cuda.h"
#include "adm_trace.h"
}
#include "adm_cuda_check.h"

namespace {

/* Warps of a thread block: rows and blocks are one warp each. */
enum { WARPS = 4, LANES = 32 };

/* Uploads from the host's pageable memory go through pinned pieces of
 * UP_PIECE bytes, UP_THREADS threads copying theirs (every UP_THREADS-th)
 * at once and beside the transfers (upload). */
enum { UP_THREADS = 4, UP_PIECE = 4 << 20 };

struct sess {
    int64_t R = 0, N = 0, ns = 0, nb = 0;
    adm_dtype fmt = ADM_FP64, ref_dt = ADM_FP64, cand_dt = ADM_FP64;
    int has_cnd = 0;
    double *o = nullptr, *cnd = nullptr, *colrms = nullptr, *rowfloor = nullptr;
    void *ref = nullptr, *cand = nullptr;
    size_t cand_cap = 0;
    double *rows = nullptr, *chans = nullptr, *ctot = nullptr, *mg = nullptr, *rowmg = nullptr;
    unsigned long long *ph = nullptr, *first = nullptr;
    void *kept = nullptr; /* o and cnd borrowed from the GPU oracle (adm_o_cuda_kept_take), not owned */
    cudaStream_t st0 = nullptr;
    /* upload's pinned pieces, two a thread, and their transfers' events */
    void *pin[UP_THREADS][2] = {};
    cudaEvent_t pinned[UP_THREADS][2] = {};
    bool staged = false;
    ~sess()
    {
        if (st0) cudaStreamSynchronize(st0);
        for (int t = 0; t < UP_THREADS; t++)
            for (int b = 0; b < 2; b++) {
                if (pinned[t][b]) cudaEventDestroy(pinned[t][b]);
                if (pin[t][b]) cudaFreeHost(pin[t][b]);
            }
        if (kept) {
            adm_o_cuda_kept_put(kept);
        } else {
            cudaFree(o);
            cudaFree(cnd);
        }
        cudaFree(colrms);
        cudaFree(rowfloor);
        cudaFree(ref);
        cudaFree(cand);
        cudaFree(rows);
        cudaFree(chans);
        cudaFree(ctot);
        cudaFree(mg);
        cudaFree(rowmg);
        cudaFree(ph);
        cudaFree(first);
        if (st0) cudaStreamDestroy(st0);
    }
};

/* ADM_CUDA_TRACE=1 (core/adm_trace.h): each part as "adm-trace
 * stats.<part> MS at=START [gpu=MS]", kernels timed by events as well;
 * the device is synchronized around a part only then. */
struct span {
    char name[48];
    bool kernel, done = false;
    cudaStream_t st;
    cudaEvent_t b = nullptr, e = nullptr;
    double h0 = 0;
    span(const char *n, bool k, cudaStream_t s = 0) : kernel(k), st(s)
    {
        if (!adm_trace_on()) return;
        snprintf(name, sizeof name, "stats.%s", n);
        (void)cudaDeviceSynchronize();
        h0 = adm_trace_ms();
        if (kernel && (cudaEventCreate(&b) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess ||
                       cudaEventRecord(b, st) != cudaSuccess))
            kernel = false;
    }
    void end()
    {
        float ms = 0;
        if (!adm_trace_on() || done) return;
        done = true;
        if (kernel && cudaEventRecord(e, st) == cudaSuccess && cudaEventSynchronize(e) == cudaSuccess &&
            cudaEventElapsedTime(&ms, b, e) == cudaSuccess) {
            adm_trace_part(name, h0, (double)ms);
            return;
        }
        (void)cudaDeviceSynchronize();
        adm_trace_part(name, h0, -1);
    }
    ~span()
    {
        if (b) cudaEventDestroy(b);
        if (e) cudaEventDestroy(e);
    }
};

size_t storage(adm_dtype dt) { return dt == ADM_FP64 ? 8 : dt == ADM_FP32 ? 4 : 2; }

int supported(int dt) { return dt == ADM_BF16 || dt == ADM_FP16 || dt == ADM_FP32 || dt == ADM_FP64; }

/* Element i of an output in its stored format, exactly (adm_h_at). */
__device__ double at(const void *p, adm_dtype dt, int64_t i)
{
    switch (dt) {
    case ADM_BF16: return (double)__uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    case ADM_FP16: return (double)__half2float(__ushort_as_half(((const unsigned short *)p)[i]));
    case ADM_FP32: return (double)((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}

struct args {
    int64_t R, N, ns, nb;
    adm_dtype fmt, ref_dt, cand_dt;
    int has_cnd;
    const double *o, *cnd, *colrms, *rowfloor;
    const void *ref, *cand;
};

/* The operands of element (row, j) */
struct operands {
    double r, c, o, cnd, rowfloor;
};

__device__ operands load(const args &a, int64_t row, int64_t j)
{
    int64_t i = row * a.N + j;
    operands v;
    v.r = at(a.ref, a.ref_dt, i);
    v.c = at(a.cand, a.cand_dt, i);
    v.o = a.o[i];
    v.cnd = a.has_cnd ? a.cnd[i] : 0.0;
    v.rowfloor = a.has_cnd ? 0.0 : a.rowfloor[row];
    return v;
}

/* An element measured from its operands: 0 when skipped. */
__device__ int measure(const args &a, const operands &v, int64_t j, double *oi, double *d, adm_se_elem *e)
{
    *oi = v.o;
    *d = v.c - v.r;
    return adm_se_measure(a.fmt, v.o, v.r, v.c, a.has_cnd, v.cnd, v.rowfloor, a.has_cnd ? 0.0 : a.colrms[j], e);
}

/* The element (row, j) measured: 0 when skipped. */
__device__ int elem(const args &a, int64_t row, int64_t j, double *oi, double *d, adm_se_elem *e)
{
    return measure(a, load(a, row, j), j, oi, d, e);
}

/* Without a condition scale: each channel's and each row's RMS of the
 * finite oracle values, summed in the CPU's order (rows, then channels). */
__global__ void col_rms(const double *o, int64_t R, int64_t N, double *out)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < N; j += (int64_t)gridDim.x * blockDim.x) {
        double s = 0;
        for (int64_t row = 0; row < R; row++) {
            double x = o[row * N + j];
            if (isfinite(x)) s += x * x;
        }
        out[j] = sqrt(s / (double)(R ? R : 1));
    }
}

__global__ void row_rms(const double *o, int64_t R, int64_t N, double *out)
{
    for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < R;
         row += (int64_t)gridDim.x * blockDim.x) {
        double s = 0;
        for (int64_t j = 0; j < N; j++) {
            double x = o[row * N + j];
            if (isfinite(x)) s += x * x;
        }
        out[row] = sqrt(s / (double)N);
    }
}

/* Term tables in shared memory: one element's addends a row, the rows'
 * stride odd so that the lanes storing one number each (8 bytes, two
 * banks) of consecutive elements hit distinct banks. A row's raw terms
 * and then its magnitude terms take turns in one table. */
enum { MG_LD = MG_NS | 1, UNROLL = 16 };
static_assert(LANES % UNROLL == 0, "row_sums: a chunk is whole unrolled steps");
static_assert((int)MG_NS == (int)LANES, "row_sums: one lane per magnitude number");
static_assert((int)RAW_NS <= (int)MG_NS, "row_sums: the raw terms fit the magnitude terms' table");
static_assert(ADM_SE_RB % WARPS == 0, "row_sums: a thread block's rows lie in one block of rows");

/* Adds 1 to bin slot of H for each active lane, lanes of one bin in one
 * atomic (counts: any order). Called by the whole warp. */
__device__ void hist_add(unsigned long long *H, int slot, bool active)
{
    unsigned act = __ballot_sync(0xffffffffu, active);
    if (!active) return;
    unsigned peers = __match_any_sync(act, slot);
    if (__ffs(peers) - 1 == (int)(threadIdx.x % LANES)) atomicAdd(&H[slot], (unsigned long long)__popc(peers));
}

/* One warp per row, WARPS consecutive rows a thread block (one block of
 * rows): each lane measures one element of a chunk of 32 once and stores
 * its raw addends (adm_se_raw_terms), lane k adding the chunk's to raw
 * sum k in channel order, as raw_add2 on the CPU; then its magnitude
 * addends (adm_se_mag_terms), lane k adding them to the row's magnitude
 * number k (adm_se_mag_acc), as adm_se_mag_add; the histogram counts
 * gathered in shared memory and added to the block's (ph, zeroed) once a
 * thread block's rows are done. The rows' magnitude numbers go to rowmg,
 * folded into the blocks' by mag_fold. */
__global__ void row_sums(args a, double *rows, double *rowmg, unsigned long long *ph)
{
    __shared__ double T[WARPS][LANES][MG_LD];
    __shared__ int ok[WARPS][LANES];
    __shared__ unsigned long long H[HIST_BLOCK];
    int w = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    for (int64_t r0 = blockIdx.x * (int64_t)WARPS; r0 < a.R; r0 += (int64_t)gridDim.x * WARPS) {
        int64_t row = r0 + w;
        for (int k = threadIdx.x; k < HIST_BLOCK; k += blockDim.x) H[k] = 0;
        __syncthreads();
        if (row < a.R) {
            double g = 0, m = 0;
            for (int64_t j0 = 0; j0 < a.N; j0 += LANES) {
                int64_t j = j0 + lane;
                double oi = 0, d = 0;
                adm_se_elem e;
                int slot[4] = {0, 0, 0, 0};
                int good = j < a.N && elem(a, row, j, &oi, &d, &e);
                if (good) {
                    adm_se_raw_terms(oi, e.u, d, e.er, e.ec, T[w][lane]);
                    adm_se_hist_slots(&e, slot);
                }
                ok[w][lane] = good;
                for (int k = 0; k < 4; k++) hist_add(H, slot[k], good != 0);
                __syncwarp();
                if (lane < RAW_NS)
                    for (int k = 0; k < LANES; k++)
                        if (ok[w][k]) g += T[w][k][lane];
                __syncwarp();
                if (good)
                    adm_se_mag_terms(&e, oi, d,
                                     adm_se_nontrivial(a.has_cnd, oi, a.has_cnd ? a.cnd[row * a.N + j] : 0.0),
                                     T[w][lane]);
                __syncwarp();
                /* UNROLL terms loaded at once, then added in order: the
                 * chain waits on its additions only, not on each load */
                for (int k0 = 0; k0 < LANES; k0 += UNROLL) {
                    double t[UNROLL];
                    int f[UNROLL];
#pragma unroll
                    for (int u = 0; u < UNROLL; u++) {
                        f[u] = ok[w][k0 + u];
                        t[u] = T[w][k0 + u][lane];
                    }
#pragma unroll
                    for (int u = 0; u < UNROLL; u++)
                        if (f[u]) m = adm_se_mag_acc(lane, m, t[u]);
                }
                __syncwarp();
            }
            if (lane < RAW_NS) rows[row * RAW_NS + lane] = g;
            rowmg[row * MG_NS + lane] = m;
        }
        __syncthreads();
        for (int k = threadIdx.x; k < HIST_BLOCK; k += blockDim.x)
            if (H[k]) atomicAdd(&ph[r0 / ADM_SE_RB * HIST_BLOCK + k], H[k]);
        __syncthreads();
    }
}

/* The rows' magnitude numbers into their blocks', in row order (one warp
 * a block, lane k number k: adm_se_mag_fold). */
__global__ void mag_fold(const double *rowmg, int64_t R, int64_t nb, double *mg)
{
    int lane = threadIdx.x % LANES;
    for (int64_t bk = blockIdx.x * (int64_t)(blockDim.x / LANES) + threadIdx.x / LANES; bk < nb;
         bk += (int64_t)gridDim.x * (blockDim.x / LANES)) {
        double m = 0;
        for (int64_t row = bk * ADM_SE_RB; row < R && row < (bk + 1) * ADM_SE_RB; row++)
            m = adm_se_mag_acc(lane, m, rowmg[row * MG_NS + lane]);
        mg[bk * MG_NS + lane] = m;
    }
}

/* One thread per stripe and channel: the stripe's rows in order. */
__global__ void chan_sums(args a, double *chans)
{
    int64_t total = a.ns * a.N;
    for (int64_t id = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; id < total;
         id += (int64_t)gridDim.x * blockDim.x) {
        int64_t st = id / a.N, j = id % a.N;
        int64_t r0 = st * a.nb / a.ns * ADM_SE_RB, r1 = (st + 1) * a.nb / a.ns * ADM_SE_RB;
        double h[RAW_NS], scratch[RAW_NS];
        int64_t end = r1 < a.R ? r1 : a.R;
        operands next = {0, 0, 0, 0, 0};
        for (int t = 0; t < RAW_NS; t++) h[t] = scratch[t] = 0;
        /* the next row's operands load while this row is measured: the
         * loads' latency off the chain of additions (H200, FLUX.1 MLP:
         * -11% for session 7's version, -1.6% in one run of this one;
         * ncu: the kernel is latency-bound at a quarter of the warps) */
        if (r0 < end) next = load(a, r0, j);
        for (int64_t row = r0; row < end; row++) {
            double oi, d;
            adm_se_elem e;
            operands cur = next;
            if (row + 1 < end) next = load(a, row + 1, j);
            if (measure(a, cur, j, &oi, &d, &e)) raw_add2(scratch, h, oi, e.u, d, e.er, e.ec);
        }
        for (int t = 0; t < RAW_NS; t++) chans[(st * a.N + j) * RAW_NS + t] = h[t];
    }
}

/* The stripes' channel sums added in stripe order (adm_h_stats_finish's
 * merge on the CPU, the same additions): m = N RAW_NS numbers a stripe. */
__global__ void chan_merge(const double *chans, int64_t ns, int64_t m, double *tot)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < m; t += (int64_t)gridDim.x * blockDim.x) {
        double x = chans[t];
        for (int64_t st = 1; st < ns; st++) x += chans[st * m + t];
        tot[t] = x;
    }
}

/* Gates 3 and 7's scans (harness/gates.c, gate_special and
 * bits_identical): the first element whose kind (finite, NaN, +Inf, -Inf)
 * differs from the reference's, and, where the candidate's format is the
 * reference's, the first whose bits differ (two NaNs are equal whatever
 * their payloads); n where none. Each thread keeps its first (the grid
 * strides upward), the warp its least, then one atomic a warp. */
__device__ int kind_of(double x) { return isnan(x) ? 1 : (isinf(x) ? (x > 0 ? 2 : 3) : 0); }

__device__ uint64_t bits_at(const void *p, adm_dtype dt, int64_t i)
{
    switch (dt) {
    case ADM_BF16:
    case ADM_FP16: return ((const uint16_t *)p)[i];
    case ADM_FP32: return ((const uint32_t *)p)[i];
    default: return ((const unsigned long long *)p)[i];
    }
}

__device__ bool nan_bits(adm_dtype dt, uint64_t b)
{
    switch (dt) {
    case ADM_BF16: return (b & 0x7fffu) > 0x7f80u;
    case ADM_FP16: return (b & 0x7fffu) > 0x7c00u;
    case ADM_FP32: return (b & 0x7fffffffu) > 0x7f800000u;
    default: return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
}

__device__ unsigned long long warp_min(unsigned long long x)
{
    for (int o = LANES / 2; o > 0; o /= 2) {
        unsigned long long y = __shfl_down_sync(0xffffffffu, x, o);
        x = y < x ? y : x;
    }
    return x;
}

/* The resolve scale's sums of block b (one thread a block, its elements
 * in order: harness/stat_elem.h's adm_se_scale_add, as gates.c's
 * scale_block adds them on the host). */
__global__ void scale_blocks(const double *o, const void *ref, adm_dtype ref_dt, int64_t n, int64_t nblk, double *part)
{
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < nblk; b += (int64_t)gridDim.x * blockDim.x) {
        double acc[2] = {0, 0};
        int64_t end = (b + 1) * ADM_SE_SCALE_BLK < n ? (b + 1) * ADM_SE_SCALE_BLK : n;
        for (int64_t i = b * ADM_SE_SCALE_BLK; i < end; i++) adm_se_scale_add(o[i], at(ref, ref_dt, i), acc);
        part[2 * b] = acc[0];
        part[2 * b + 1] = acc[1];
    }
}

/* The largest |o| of the finite values, as the bits of a non-negative
 * double (which order as the doubles: atomicMax is the max). */
__global__ void finite_amax(const double *o, int64_t n, unsigned long long *out)
{
    unsigned long long m = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        if (isfinite(o[i])) {
            unsigned long long b = (unsigned long long)__double_as_longlong(fabs(o[i]));
            m = b > m ? b : m;
        }
    for (int k = LANES / 2; k > 0; k /= 2) {
        unsigned long long y = __shfl_down_sync(0xffffffffu, m, k);
        m = y > m ? y : m;
    }
    if (threadIdx.x % LANES == 0 && m) atomicMax(out, m);
}

/* Gate 5's counts (harness/stat_elem.h adm_se_flip): integers, the same
 * in any order. */
__global__ void flip_counts(args a, adm_se_reader rd, int64_t n, unsigned long long *cnt)
{
    int64_t c[4] = {0, 0, 0, 0};
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        adm_se_flip(&rd, a.ref_dt, a.o[i], at(a.ref, a.ref_dt, i), at(a.cand, a.cand_dt, i), c);
    for (int k = 0; k < 4; k++) {
        unsigned long long x = (unsigned long long)c[k];
        for (int o = LANES / 2; o > 0; o /= 2) x += __shfl_down_sync(0xffffffffu, x, o);
        if (threadIdx.x % LANES == 0 && x) atomicAdd(&cnt[k], x);
    }
}

__global__ void scan(args a, int64_t n, unsigned long long *first)
{
    unsigned long long fk = (unsigned long long)n, fb = (unsigned long long)n;
    bool same = a.ref_dt == a.cand_dt;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if (fk == (unsigned long long)n && kind_of(at(a.ref, a.ref_dt, i)) != kind_of(at(a.cand, a.cand_dt, i)))
            fk = (unsigned long long)i;
        if (same && fb == (unsigned long long)n) {
            uint64_t x = bits_at(a.ref, a.ref_dt, i), y = bits_at(a.cand, a.cand_dt, i);
            if (x != y && !(nan_bits(a.ref_dt, x) && nan_bits(a.ref_dt, y))) fb = (unsigned long long)i;
        }
        if (fk < (unsigned long long)n && (fb < (unsigned long long)n || !same)) break;
    }
    fk = warp_min(fk);
    fb = warp_min(fb);
    if (threadIdx.x % LANES == 0) {
        if (fk < (unsigned long long)n) atomicMin(&first[0], fk);
        if (fb < (unsigned long long)n) atomicMin(&first[1], fb);
    }
}

int grid(int64_t items, int per_block)
{
    int64_t g = (items + per_block - 1) / per_block;
    return (int)(g > 65536 ? 65536 : (g ? g : 1));
}

args args_of(const sess *s)
{
    args a;
    a.R = s->R;
    a.N = s->N;
    a.ns = s->ns;
    a.nb = s->nb;
    a.fmt = s->fmt;
    a.ref_dt = s->ref_dt;
    a.cand_dt = s->cand_dt;
    a.has_cnd = s->has_cnd;
    a.o = s->o;
    a.cnd = s->cnd;
    a.colrms = s->colrms;
    a.rowfloor = s->rowfloor;
    a.ref = s->ref;
    a.cand = s->cand;
    return a;
}

/* The pinned pieces, once a session (false, nothing held: uploads stay
 * pageable). */
bool stage_init(sess *s)
{
    if (s->staged) return true;
    for (int t = 0; t < UP_THREADS; t++)
        for (int b = 0; b < 2; b++)
            if (cudaHostAlloc(&s->pin[t][b], UP_PIECE, cudaHostAllocDefault) != cudaSuccess ||
                cudaEventCreateWithFlags(&s->pinned[t][b], cudaEventDisableTiming) != cudaSuccess) {
                (void)cudaGetLastError();
                return false;
            }
    s->staged = true;
    return true;
}

/* bytes from host memory src to dst on the device, queued on st0 (the
 * host's memory reusable on return). Smaller than two pieces, or without
 * pinned memory, as one pageable copy. */
adm_status upload(sess *s, void *dst, const void *src, size_t bytes)
{
    size_t npieces = (bytes + UP_PIECE - 1) / UP_PIECE;
    cudaError_t err[UP_THREADS];
    std::thread th[UP_THREADS];
    bool started[UP_THREADS] = {};
    int dev = 0;
    if (bytes < 2 * (size_t)UP_PIECE || !stage_init(s)) {
        ADM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s->st0));
        return ADM_OK;
    }
    ADM_CUDA_CHECK(cudaGetDevice(&dev));
    auto work = [&](int t) {
        cudaError_t e = cudaSetDevice(dev);
        int b = 0;
        for (size_t p = (size_t)t; p < npieces && e == cudaSuccess; p += UP_THREADS, b ^= 1) {
            size_t off = p * UP_PIECE, len = bytes - off < (size_t)UP_PIECE ? bytes - off : (size_t)UP_PIECE;
            if ((e = cudaEventSynchronize(s->pinned[t][b])) != cudaSuccess) break; /* the piece's last transfer */
            memcpy(s->pin[t][b], (const char *)src + off, len);
            if ((e = cudaMemcpyAsync((char *)dst + off, s->pin[t][b], len, cudaMemcpyHostToDevice, s->st0)) !=
                cudaSuccess)
                break;
            e = cudaEventRecord(s->pinned[t][b], s->st0);
        }
        err[t] = e;
    };
    for (int t = 1; t < UP_THREADS; t++) {
        try {
            th[t] = std::thread(work, t);
            started[t] = true;
        } catch (...) { /* no thread: this one copies those pieces after its own */
        }
    }
    work(0);
    for (int t = 1; t < UP_THREADS; t++) {
        if (started[t]) th[t].join();
        else work(t);
    }
    for (int t = 0; t < UP_THREADS; t++)
        if (err[t] != cudaSuccess)
            return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "statistics on the GPU: upload: %s",
                                 cudaGetErrorString(err[t]));
    return ADM_OK;
}

adm_status open_body(const adm_stats_dev_desc *d, sess *s)
{
    size_t n = (size_t)(d->R * d->N);
    s->R = d->R;
    s->N = d->N;
    s->ns = d->ns;
    s->nb = d->nb;
    s->fmt = (adm_dtype)d->fmt;
    s->ref_dt = (adm_dtype)d->ref_dt;
    s->has_cnd = d->cond != nullptr;
    ADM_CUDA_CHECK(cudaStreamCreateWithFlags(&s->st0, cudaStreamNonBlocking));
    /* the oracle's work on the device (its own streams) done before ours reads it */
    ADM_CUDA_CHECK(cudaDeviceSynchronize());
    {
        /* the GPU oracle's copies where it still holds them (the kernels
         * only read o and cnd), else the host's uploaded */
        const double *ko = nullptr, *kc = nullptr;
        span t("open_oracle", false);
        if ((s->kept = adm_o_cuda_kept_take(d->o, d->cond, (int64_t)n, &ko, &kc))) {
            s->o = const_cast<double *>(ko);
            s->cnd = const_cast<double *>(kc);
        } else if (n > 0 && adm_o_cuda_stale(d->o)) {
            /* the host's values are not filled: uploading them would judge zeros */
            return adm_error_set(ADM_ERR_INTERNAL, __FILE__, __LINE__,
                                 "statistics on the GPU: the oracle's result is on the device only and cannot be "
                                 "borrowed");
        } else {
            ADM_CUDA_CHECK(cudaMalloc(&s->o, 8 * (n ? n : 1)));
            ADM_TRY(upload(s, s->o, d->o, 8 * n));
            if (s->has_cnd) {
                ADM_CUDA_CHECK(cudaMalloc(&s->cnd, 8 * (n ? n : 1)));
                ADM_TRY(upload(s, s->cnd, d->cond, 8 * n));
            }
        }
        t.end();
    }
    {
        span t("open_ref_upload", false);
        ADM_CUDA_CHECK(cudaMalloc(&s->ref, storage(s->ref_dt) * (n ? n : 1)));
        ADM_TRY(upload(s, s->ref, d->ref, storage(s->ref_dt) * n));
        t.end();
    }
    if (!s->has_cnd) {
        ADM_CUDA_CHECK(cudaMalloc(&s->colrms, 8 * (size_t)(d->N + 1)));
        ADM_CUDA_CHECK(cudaMalloc(&s->rowfloor, 8 * (size_t)(d->R + 1)));
        span t("col_rms", true, s->st0);
        col_rms<<<grid(d->N, 256), 256, 0, s->st0>>>(s->o, d->R, d->N, s->colrms);
        ADM_CUDA_CHECK(cudaGetLastError());
        t.end();
        span u("row_rms", true, s->st0);
        row_rms<<<grid(d->R, 256), 256, 0, s->st0>>>(s->o, d->R, d->N, s->rowfloor);
        ADM_CUDA_CHECK(cudaGetLastError());
        u.end();
    }
    span t("open_alloc", false);
    ADM_CUDA_CHECK(cudaMalloc(&s->rows, 8 * (size_t)(d->R * RAW_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->chans, 8 * (size_t)(d->ns * d->N * RAW_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->ctot, 8 * (size_t)(d->N * RAW_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->mg, 8 * (size_t)(d->nb * MG_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->rowmg, 8 * (size_t)(d->R * MG_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->ph, 8 * (size_t)(d->nb * HIST_BLOCK + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->first, 2 * sizeof *s->first));
    /* the uploads and RMS kernels done: a failure is open's */
    ADM_CUDA_CHECK(cudaStreamSynchronize(s->st0));
    t.end();
    return ADM_OK;
}

adm_status run_body(sess *s, const void *cand, int cand_dt, double *rows, double *chans, double *mg, int64_t *ph,
                    int64_t *first)
{
    unsigned long long none[2] = {(unsigned long long)(s->R * s->N), (unsigned long long)(s->R * s->N)}, got[2];
    size_t n = (size_t)(s->R * s->N), bytes = storage((adm_dtype)cand_dt) * n, m = (size_t)(s->N * RAW_NS);
    args a;
    span up("cand_upload", false, s->st0);
    if (bytes > s->cand_cap) {
        ADM_CUDA_CHECK(cudaStreamSynchronize(s->st0));
        cudaFree(s->cand);
        s->cand = nullptr;
        s->cand_cap = 0;
        ADM_CUDA_CHECK(cudaMalloc(&s->cand, bytes ? bytes : 1));
        s->cand_cap = bytes;
    }
    s->cand_dt = (adm_dtype)cand_dt;
    ADM_TRY(upload(s, s->cand, cand, bytes));
    up.end();
    a = args_of(s);
    if (n) {
        {
            span k("row_sums", true, s->st0);
            ADM_CUDA_CHECK(cudaMemsetAsync(s->ph, 0, 8 * (size_t)(s->nb * HIST_BLOCK), s->st0));
            row_sums<<<grid(s->R, WARPS), WARPS * LANES, 0, s->st0>>>(a, s->rows, s->rowmg, s->ph);
            ADM_CUDA_CHECK(cudaGetLastError());
            mag_fold<<<grid(s->nb, WARPS), WARPS * LANES, 0, s->st0>>>(s->rowmg, s->R, s->nb, s->mg);
            ADM_CUDA_CHECK(cudaGetLastError());
            k.end();
        }
        {
            span k("chan_sums", true, s->st0);
            chan_sums<<<grid(s->ns * s->N, 128), 128, 0, s->st0>>>(a, s->chans);
            ADM_CUDA_CHECK(cudaGetLastError());
            k.end();
        }
        {
            span k("scan", true, s->st0);
            ADM_CUDA_CHECK(cudaMemcpyAsync(s->first, none, sizeof none, cudaMemcpyHostToDevice, s->st0));
            scan<<<grid((int64_t)n, 256), 256, 0, s->st0>>>(a, (int64_t)n, s->first);
            ADM_CUDA_CHECK(cudaGetLastError());
            k.end();
        }
        {
            span k("chan_merge", true, s->st0);
            chan_merge<<<grid((int64_t)m, 256), 256, 0, s->st0>>>(s->chans, s->ns, (int64_t)m, s->ctot);
            ADM_CUDA_CHECK(cudaGetLastError());
            k.end();
        }
    } else { /* no element: the sums are zero, as the CPU's */
        ADM_CUDA_CHECK(cudaMemsetAsync(s->rows, 0, 8 * (size_t)(s->R * RAW_NS + 1), s->st0));
        ADM_CUDA_CHECK(cudaMemsetAsync(s->ctot, 0, 8 * (m + 1), s->st0));
        ADM_CUDA_CHECK(cudaMemsetAsync(s->mg, 0, 8 * (size_t)(s->nb * MG_NS + 1), s->st0));
        ADM_CUDA_CHECK(cudaMemsetAsync(s->ph, 0, 8 * (size_t)(s->nb * HIST_BLOCK + 1), s->st0));
        ADM_CUDA_CHECK(cudaMemcpyAsync(s->first, none, sizeof none, cudaMemcpyHostToDevice, s->st0));
    }
    span dn("download", false, s->st0);
    ADM_CUDA_CHECK(cudaMemcpyAsync(rows, s->rows, 8 * (size_t)(s->R * RAW_NS), cudaMemcpyDeviceToHost, s->st0));
    ADM_CUDA_CHECK(cudaMemcpyAsync(chans, s->ctot, 8 * m, cudaMemcpyDeviceToHost, s->st0));
    ADM_CUDA_CHECK(cudaMemcpyAsync(mg, s->mg, 8 * (size_t)(s->nb * MG_NS), cudaMemcpyDeviceToHost, s->st0));
    ADM_CUDA_CHECK(cudaMemcpyAsync(ph, s->ph, 8 * (size_t)(s->nb * HIST_BLOCK), cudaMemcpyDeviceToHost, s->st0));
    ADM_CUDA_CHECK(cudaMemcpyAsync(got, s->first, sizeof got, cudaMemcpyDeviceToHost, s->st0));
    ADM_CUDA_CHECK(cudaStreamSynchronize(s->st0));
    dn.end();
    first[0] = (int64_t)got[0];
    first[1] = s->ref_dt == s->cand_dt ? (int64_t)got[1] : -1;
    return ADM_OK;
}

} // namespace

extern "C" adm_status adm_stats_cuda_open(const adm_stats_dev_desc *d, void **out)
{
    sess *s;
    adm_status st;
    *out = nullptr;
    if (!supported(d->ref_dt) || !supported(d->fmt))
        return adm_error_set(ADM_ERR_UNSUPPORTED, __FILE__, __LINE__,
                             "statistics on the GPU: outputs of bf16, fp16, fp32 or fp64 only");
    if (!(s = new (std::nothrow) sess))
        return adm_error_set(ADM_ERR_NOMEM, __FILE__, __LINE__, "statistics on the GPU: out of memory");
    if ((st = open_body(d, s)) != ADM_OK) {
        delete s;
        return st;
    }
    *out = s;
    return ADM_OK;
}

extern "C" adm_status adm_stats_cuda_run(void *h, const void *cand, int cand_dt, double *rows, double *chans,
                                         double *mg, int64_t *ph, int64_t *first)
{
    if (!supported(cand_dt))
        return adm_error_set(ADM_ERR_UNSUPPORTED, __FILE__, __LINE__,
                             "statistics on the GPU: outputs of bf16, fp16, fp32 or fp64 only");
    return run_body((sess *)h, cand, cand_dt, rows, chans, mg, ph, first);
}

extern "C" adm_status adm_stats_cuda_scale(void *h, double *part)
{
    sess *s = (sess *)h;
    int64_t n = s->R * s->N, nblk = (n + ADM_SE_SCALE_BLK - 1) / ADM_SE_SCALE_BLK;
    double *dp = nullptr;
    adm_status st = ADM_OK;
    if (nblk == 0) return ADM_OK;
    span t("scale_blocks", true, s->st0);
    ADM_CUDA_CHECK(cudaMalloc(&dp, 16 * (size_t)nblk));
    scale_blocks<<<grid(nblk, 64), 64, 0, s->st0>>>(s->o, s->ref, s->ref_dt, n, nblk, dp);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(part, dp, 16 * (size_t)nblk, cudaMemcpyDeviceToHost, s->st0);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->st0);
    if (e != cudaSuccess)
        st = adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "statistics on the GPU: the resolve scale's sums: %s",
                           cudaGetErrorString(e));
    cudaFree(dp);
    t.end();
    return st;
}

extern "C" adm_status adm_stats_cuda_flip(void *h, const adm_stats_flip_desc *d, int64_t *cnt)
{
    sess *s = (sess *)h;
    int64_t n = s->R * s->N;
    unsigned long long got[5] = {0, 0, 0, 0, 0}, *dc = nullptr;
    adm_se_reader rd;
    cudaError_t e;
    for (int k = 0; k < 4; k++) cnt[k] = 0;
    if (n == 0) return ADM_OK;
    span t("flip", true, s->st0);
    rd.kind = d->kind;
    rd.fmt = d->fmt;
    rd.has_nan = d->has_nan;
    rd.threshold = d->threshold;
    rd.maxf = d->maxf;
    rd.scale = 1;
    ADM_CUDA_CHECK(cudaMalloc(&dc, sizeof got));
    e = cudaMemsetAsync(dc, 0, sizeof got, s->st0);
    if (e == cudaSuccess && d->kind == ADM_READER_QUANTIZE) {
        double amax;
        finite_amax<<<grid(n, 256), 256, 0, s->st0>>>(s->o, n, dc + 4);
        e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaMemcpyAsync(&got[4], dc + 4, 8, cudaMemcpyDeviceToHost, s->st0);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s->st0);
        memcpy(&amax, &got[4], 8);
        /* gates.c's: amax > 0 ? amax / max finite : 1 */
        rd.scale = amax > 0 ? amax / d->maxf : 1;
    }
    if (e == cudaSuccess) {
        flip_counts<<<grid(n, 256), 256, 0, s->st0>>>(args_of(s), rd, n, dc);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(got, dc, 4 * sizeof got[0], cudaMemcpyDeviceToHost, s->st0);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->st0);
    cudaFree(dc);
    t.end();
    if (e != cudaSuccess)
        return adm_error_set(ADM_ERR_CUDA, __FILE__, __LINE__, "statistics on the GPU: the flip rate: %s",
                             cudaGetErrorString(e));
    for (int k = 0; k < 4; k++) cnt[k] = (int64_t)got[k];
    return ADM_OK;
}

extern "C" void adm_stats_cuda_close(void *h) { delete (sess *)h; }

extern "C" int adm_stats_cuda_borrowed(void *h) { return ((sess *)h)->kept != nullptr; }
