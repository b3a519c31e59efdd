/* Gates 1 and 2's raw sums on the GPU: the arrays of harness/stat_elem.h
 * (per row, per stripe and channel, per block) from the oracle's values,
 * its condition scale and the two outputs resident on the device, with
 * the per-element functions of stat_elem.h in the CPU's summation order
 * (a row's sums in channel order, a stripe's channel sums in row order, a
 * block's magnitude sums in element order), so every sum is the CPU's
 * bits. Built with -fmad=false: each operation rounds once, as on the CPU
 * (-ffp-contract=off). Only the sums come back, never the outputs. The
 * oracle's values and scale are the GPU oracle's own device copies where
 * it still holds them (oracle/oracle_cuda.cu, adm_o_cuda_kept_take), so
 * after a GPU evaluation only the reference and the candidates go up. */
#include <cuda_fp16.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <cuda_runtime.h>

extern "C" {
#include "stat_elem.h"
#include "adm_cuda_module.h"
}
#include "adm_cuda_check.h"

namespace {

/* Warps of a thread block: rows and blocks are one warp each. */
enum { WARPS = 4, LANES = 32 };

struct sess {
    int64_t R = 0, N = 0, ns = 0, nb = 0;
    adm_dtype fmt = ADM_FP64, ref_dt = ADM_FP64, cand_dt = ADM_FP64;
    int has_cnd = 0;
    double *o = nullptr, *cnd = nullptr, *colrms = nullptr, *rowfloor = nullptr;
    void *ref = nullptr, *cand = nullptr;
    size_t cand_cap = 0;
    double *rows = nullptr, *chans = nullptr, *mg = nullptr;
    unsigned long long *ph = nullptr;
    void *kept = nullptr; /* o and cnd borrowed from the GPU oracle (adm_o_cuda_kept_take), not owned */
    ~sess()
    {
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
        cudaFree(mg);
        cudaFree(ph);
    }
};

/* ADM_CUDA_TRACE=1 (read once): each part's milliseconds on stderr as
 * "adm-trace stats.<part> <ms>", kernels timed by events, the rest by the
 * host's clock; the device is synchronized around a part only then. */
bool tracing()
{
    static const bool on = [] {
        const char *e = getenv("ADM_CUDA_TRACE");
        return e && !strcmp(e, "1");
    }();
    return on;
}

double host_ms()
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct span {
    const char *name;
    bool kernel, done = false;
    cudaEvent_t b = nullptr, e = nullptr;
    double h0 = 0;
    span(const char *n, bool k) : name(n), kernel(k)
    {
        if (!tracing()) return;
        (void)cudaDeviceSynchronize();
        h0 = host_ms();
        if (kernel && (cudaEventCreate(&b) != cudaSuccess || cudaEventCreate(&e) != cudaSuccess ||
                       cudaEventRecord(b) != cudaSuccess))
            kernel = false;
    }
    void end()
    {
        float ms = 0;
        if (!tracing() || done) return;
        done = true;
        if (kernel && cudaEventRecord(e) == cudaSuccess && cudaEventSynchronize(e) == cudaSuccess &&
            cudaEventElapsedTime(&ms, b, e) == cudaSuccess) {
            fprintf(stderr, "adm-trace stats.%s %.3f\n", name, (double)ms);
            return;
        }
        (void)cudaDeviceSynchronize();
        fprintf(stderr, "adm-trace stats.%s %.3f\n", name, host_ms() - h0);
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

/* The element (row, j) measured: 0 when skipped. */
__device__ int elem(const args &a, int64_t row, int64_t j, double *oi, double *d, adm_se_elem *e)
{
    int64_t i = row * a.N + j;
    double r = at(a.ref, a.ref_dt, i), c = at(a.cand, a.cand_dt, i);
    *oi = a.o[i];
    *d = c - r;
    return adm_se_measure(a.fmt, *oi, r, c, a.has_cnd, a.has_cnd ? a.cnd[i] : 0.0,
                          a.has_cnd ? 0.0 : a.rowfloor[row], a.has_cnd ? 0.0 : a.colrms[j], e);
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

/* A warp's elements measured in parallel, then taken in order by lane 0. */
struct lane_elem {
    adm_se_elem e;
    double o, d, nontriv;
    int ok;
};

/* One warp per row: the row's sums in channel order. */
__global__ void row_sums(args a, double *rows)
{
    __shared__ lane_elem sh[WARPS][LANES];
    int w = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    for (int64_t row = blockIdx.x * (int64_t)WARPS + w; row < a.R; row += (int64_t)gridDim.x * WARPS) {
        double g[RAW_NS], scratch[RAW_NS];
        for (int t = 0; t < RAW_NS; t++) g[t] = scratch[t] = 0;
        for (int64_t j0 = 0; j0 < a.N; j0 += LANES) {
            lane_elem *le = &sh[w][lane];
            int64_t j = j0 + lane;
            le->ok = j < a.N && elem(a, row, j, &le->o, &le->d, &le->e);
            __syncwarp();
            if (lane == 0)
                for (int k = 0; k < LANES; k++) {
                    const lane_elem *x = &sh[w][k];
                    if (x->ok) raw_add2(g, scratch, x->o, x->e.u, x->d, x->e.er, x->e.ec);
                }
            __syncwarp();
        }
        if (lane == 0)
            for (int t = 0; t < RAW_NS; t++) rows[row * RAW_NS + t] = g[t];
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
        for (int t = 0; t < RAW_NS; t++) h[t] = scratch[t] = 0;
        for (int64_t row = r0; row < r1 && row < a.R; row++) {
            double oi, d;
            adm_se_elem e;
            if (elem(a, row, j, &oi, &d, &e)) raw_add2(scratch, h, oi, e.u, d, e.er, e.ec);
        }
        for (int t = 0; t < RAW_NS; t++) chans[(st * a.N + j) * RAW_NS + t] = h[t];
    }
}

/* One warp per block of rows: magnitude sums, maxima and counts in element
 * order, the histograms. */
__global__ void block_sums(args a, double *mg, unsigned long long *ph)
{
    __shared__ lane_elem sh[WARPS][LANES];
    int w = threadIdx.x / LANES, lane = threadIdx.x % LANES;
    for (int64_t bk = blockIdx.x * (int64_t)WARPS + w; bk < a.nb; bk += (int64_t)gridDim.x * WARPS) {
        adm_se_mag m;
        unsigned long long *H = ph + bk * HIST_BLOCK;
        memset(&m, 0, sizeof m);
        for (int64_t row = bk * ADM_SE_RB; row < a.R && row < (bk + 1) * ADM_SE_RB; row++)
            for (int64_t j0 = 0; j0 < a.N; j0 += LANES) {
                lane_elem *le = &sh[w][lane];
                int64_t j = j0 + lane;
                le->ok = j < a.N && elem(a, row, j, &le->o, &le->d, &le->e);
                if (le->ok) {
                    int slot[4];
                    le->nontriv = adm_se_nontrivial(a.has_cnd, le->o, a.has_cnd ? a.cnd[row * a.N + j] : 0.0);
                    adm_se_hist_slots(&le->e, slot);
                    for (int k = 0; k < 4; k++) atomicAdd(&H[slot[k]], 1ull); /* counts: any order */
                }
                __syncwarp();
                if (lane == 0)
                    for (int k = 0; k < LANES; k++)
                        if (sh[w][k].ok) adm_se_mag_add(&m, &sh[w][k].e, sh[w][k].o, sh[w][k].d, sh[w][k].nontriv);
                __syncwarp();
            }
        if (lane == 0) adm_se_mag_store(&m, mg + bk * MG_NS);
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
    {
        /* the GPU oracle's copies where it still holds them (the kernels
         * only read o and cnd), else the host's uploaded */
        const double *ko = nullptr, *kc = nullptr;
        span t("open_oracle", false);
        if ((s->kept = adm_o_cuda_kept_take(d->o, d->cond, (int64_t)n, &ko, &kc))) {
            s->o = const_cast<double *>(ko);
            s->cnd = const_cast<double *>(kc);
        } else {
            ADM_CUDA_CHECK(cudaMalloc(&s->o, 8 * (n ? n : 1)));
            ADM_CUDA_CHECK(cudaMemcpy(s->o, d->o, 8 * n, cudaMemcpyHostToDevice));
            if (s->has_cnd) {
                ADM_CUDA_CHECK(cudaMalloc(&s->cnd, 8 * (n ? n : 1)));
                ADM_CUDA_CHECK(cudaMemcpy(s->cnd, d->cond, 8 * n, cudaMemcpyHostToDevice));
            }
        }
        t.end();
    }
    {
        span t("open_ref_upload", false);
        ADM_CUDA_CHECK(cudaMalloc(&s->ref, storage(s->ref_dt) * (n ? n : 1)));
        ADM_CUDA_CHECK(cudaMemcpy(s->ref, d->ref, storage(s->ref_dt) * n, cudaMemcpyHostToDevice));
        t.end();
    }
    if (!s->has_cnd) {
        ADM_CUDA_CHECK(cudaMalloc(&s->colrms, 8 * (size_t)(d->N + 1)));
        ADM_CUDA_CHECK(cudaMalloc(&s->rowfloor, 8 * (size_t)(d->R + 1)));
        span t("col_rms", true);
        col_rms<<<grid(d->N, 256), 256>>>(s->o, d->R, d->N, s->colrms);
        ADM_CUDA_CHECK(cudaGetLastError());
        t.end();
        span u("row_rms", true);
        row_rms<<<grid(d->R, 256), 256>>>(s->o, d->R, d->N, s->rowfloor);
        ADM_CUDA_CHECK_LAUNCH();
        u.end();
    }
    span t("open_alloc", false);
    ADM_CUDA_CHECK(cudaMalloc(&s->rows, 8 * (size_t)(d->R * RAW_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->chans, 8 * (size_t)(d->ns * d->N * RAW_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->mg, 8 * (size_t)(d->nb * MG_NS + 1)));
    ADM_CUDA_CHECK(cudaMalloc(&s->ph, 8 * (size_t)(d->nb * HIST_BLOCK + 1)));
    t.end();
    return ADM_OK;
}

adm_status run_body(sess *s, const void *cand, int cand_dt, double *rows, double *chans, double *mg, int64_t *ph)
{
    size_t n = (size_t)(s->R * s->N), bytes = storage((adm_dtype)cand_dt) * n;
    args a;
    span up("cand_upload", false);
    if (bytes > s->cand_cap) {
        cudaFree(s->cand);
        s->cand = nullptr;
        s->cand_cap = 0;
        ADM_CUDA_CHECK(cudaMalloc(&s->cand, bytes ? bytes : 1));
        s->cand_cap = bytes;
    }
    s->cand_dt = (adm_dtype)cand_dt;
    ADM_CUDA_CHECK(cudaMemcpy(s->cand, cand, bytes, cudaMemcpyHostToDevice));
    ADM_CUDA_CHECK(cudaMemset(s->ph, 0, 8 * (size_t)(s->nb * HIST_BLOCK + 1)));
    ADM_CUDA_CHECK(cudaMemset(s->mg, 0, 8 * (size_t)(s->nb * MG_NS + 1)));
    up.end();
    a = args_of(s);
    if (n) {
        span k1("row_sums", true);
        row_sums<<<grid(s->R, WARPS), WARPS * LANES>>>(a, s->rows);
        ADM_CUDA_CHECK(cudaGetLastError());
        k1.end();
        span k2("chan_sums", true);
        chan_sums<<<grid(s->ns * s->N, 128), 128>>>(a, s->chans);
        ADM_CUDA_CHECK(cudaGetLastError());
        k2.end();
        span k3("block_sums", true);
        block_sums<<<grid(s->nb, WARPS), WARPS * LANES>>>(a, s->mg, s->ph);
        ADM_CUDA_CHECK_LAUNCH();
        k3.end();
    } else { /* no element: the sums are zero, as the CPU's */
        ADM_CUDA_CHECK(cudaMemset(s->rows, 0, 8 * (size_t)(s->R * RAW_NS + 1)));
        ADM_CUDA_CHECK(cudaMemset(s->chans, 0, 8 * (size_t)(s->ns * s->N * RAW_NS + 1)));
    }
    span dn("download", false);
    ADM_CUDA_CHECK(cudaMemcpy(rows, s->rows, 8 * (size_t)(s->R * RAW_NS), cudaMemcpyDeviceToHost));
    ADM_CUDA_CHECK(cudaMemcpy(chans, s->chans, 8 * (size_t)(s->ns * s->N * RAW_NS), cudaMemcpyDeviceToHost));
    ADM_CUDA_CHECK(cudaMemcpy(mg, s->mg, 8 * (size_t)(s->nb * MG_NS), cudaMemcpyDeviceToHost));
    ADM_CUDA_CHECK(cudaMemcpy(ph, s->ph, 8 * (size_t)(s->nb * HIST_BLOCK), cudaMemcpyDeviceToHost));
    dn.end();
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
                                         double *mg, int64_t *ph)
{
    if (!supported(cand_dt))
        return adm_error_set(ADM_ERR_UNSUPPORTED, __FILE__, __LINE__,
                             "statistics on the GPU: outputs of bf16, fp16, fp32 or fp64 only");
    return run_body((sess *)h, cand, cand_dt, rows, chans, mg, ph);
}

extern "C" void adm_stats_cuda_close(void *h) { delete (sess *)h; }

extern "C" int adm_stats_cuda_borrowed(void *h) { return ((sess *)h)->kept != nullptr; }
