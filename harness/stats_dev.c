/* Gates 1 and 2's raw sums on the GPU: the host's side of
 * harness/stats_cuda.cu, through the harness's part of the CUDA module
 * (harness/stats_cuda.h). */
#define _POSIX_C_SOURCE 200809L
#include "harness_internal.h"
#include "adm_cuda.h"
#include "stats_cuda.h"
#include "adm_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double adm_h_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

struct adm_h_stats_dev {
    const adm_stats_cuda_part *m;
    void *sess;
    const adm_tensor *oracle, *cond, *ref;
    int64_t R, N, ns, nb;
    int borrowed;
    const adm_tensor *mb_bound; /* the bound whose max is mb, NULL: none kept */
    double mb;
    const adm_tensor *last; /* the candidate whose output the session holds (adm_h_stats_dev_raw) */
};

static int device_format(adm_dtype dt) { return dt == ADM_BF16 || dt == ADM_FP16 || dt == ADM_FP32 || dt == ADM_FP64; }

static const void *first_elem(const adm_tensor *t)
{
    return (const char *)t->data + (size_t)t->offset * (size_t)adm_format_get(t->dtype)->storage_bytes;
}

adm_status adm_h_stats_dev_open(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                                adm_h_stats_dev **out)
{
    adm_h_stats_dev *d;
    adm_stats_dev_desc desc;
    const adm_cuda_part_head *h;
    int64_t n = adm_tensor_numel(oracle);
    adm_status st;
    *out = NULL;
    if (!device_format(ref->dtype) || !adm_tensor_is_contiguous(ref) || !adm_tensor_is_contiguous(oracle) ||
        oracle->offset != 0 || oracle->dtype != ADM_FP64 || adm_tensor_numel(ref) != n)
        return ADM_FAIL(ADM_ERR_UNSUPPORTED, "statistics on the GPU: contiguous outputs of bf16, fp16, fp32 or "
                        "fp64 only (the reference is %s)", adm_dtype_name(ref->dtype));
    if (!(d = calloc(1, sizeof *d))) return ADM_FAIL(ADM_ERR_NOMEM, "statistics on the GPU: out of memory");
    if ((st = adm_cuda_module_part(ADM_STATS_CUDA_PART, ADM_STATS_CUDA_ABI, sizeof *d->m, NULL, &h)) != ADM_OK) {
        free(d);
        return st;
    }
    d->m = (const adm_stats_cuda_part *)h;
    {
        int count = 0;
        if (adm_cuda_device_count(&count) != ADM_OK || count < 1) {
            free(d);
            return ADM_FAIL(ADM_ERR_NO_DEVICE, "statistics on the GPU: no CUDA device");
        }
    }
    d->oracle = oracle;
    d->cond = cond;
    d->ref = ref;
    d->N = oracle->ndim ? oracle->shape[oracle->ndim - 1] : 1;
    d->R = d->N ? n / d->N : 0;
    d->nb = (d->R + ADM_SE_RB - 1) / ADM_SE_RB;
    d->ns = adm_se_stripes(d->N, d->nb);
    desc.R = d->R;
    desc.N = d->N;
    desc.ns = d->ns;
    desc.nb = d->nb;
    desc.fmt = ref->dtype;
    desc.ref_dt = ref->dtype;
    desc.o = oracle->data;
    desc.cond = cond ? (const double *)cond->data + cond->offset : NULL;
    desc.ref = first_elem(ref);
    if ((st = d->m->open(&desc, &d->sess)) != ADM_OK) {
        free(d);
        return st;
    }
    d->borrowed = d->m->borrowed(d->sess);
    *out = d;
    return ADM_OK;
}

adm_status adm_h_stats_dev_try(const adm_tensor *oracle, const adm_tensor *cond, const adm_tensor *ref,
                               adm_h_stats_dev **out)
{
    double t0 = adm_trace_ms();
    adm_status st = adm_h_stats_dev_open(oracle, cond, ref, out);
    adm_trace_part("stats.open", t0, -1);
    if (st != ADM_ERR_UNSUPPORTED && st != ADM_ERR_NO_DEVICE) return st;
    adm_error_clear();
    return ADM_OK;
}

int adm_h_stats_dev_borrowed(const adm_h_stats_dev *d) { return d && d->borrowed; }

int adm_h_stats_dev_max_bound(const adm_h_stats_dev *d, const adm_judge_input *in, double *mb)
{
    if (!d || in->oracle != d->oracle || !in->bound || in->bound != d->mb_bound) return 0;
    *mb = d->mb;
    return 1;
}

void adm_h_stats_dev_keep_max_bound(adm_h_stats_dev *d, const adm_judge_input *in, double mb)
{
    if (!d || in->oracle != d->oracle || !in->bound) return;
    d->mb_bound = in->bound;
    d->mb = mb;
}

adm_status adm_h_stats_dev_resolve_scale(adm_h_stats_dev *d, double *scale)
{
    int64_t n = d->R * d->N, nb = (n + ADM_SE_SCALE_BLK - 1) / ADM_SE_SCALE_BLK;
    double *part = malloc(sizeof *part * (size_t)(2 * nb + 1));
    adm_status st;
    if (!part) return ADM_FAIL(ADM_ERR_NOMEM, "statistics on the GPU: out of memory");
    if ((st = d->m->scale(d->sess, part)) == ADM_OK) *scale = adm_h_scale_from_blocks(part, nb);
    free(part);
    return st;
}

adm_status adm_h_stats_dev_flip(adm_h_stats_dev *d, const adm_judge_input *in, const adm_reader *rd, int64_t cnt[4])
{
    adm_stats_flip_desc fd;
    if (!d || !rd || (rd->kind != ADM_READER_QUANTIZE && rd->kind != ADM_READER_THRESHOLD) || in->cand != d->last ||
        !adm_h_stats_dev_serves(d, in))
        return ADM_ERR_UNSUPPORTED;
    adm_se_reader sr = adm_h_se_reader(rd, 1);
    memset(&fd, 0, sizeof fd);
    fd.kind = sr.kind;
    fd.fmt = sr.fmt;
    fd.has_nan = sr.has_nan;
    fd.threshold = sr.threshold;
    fd.maxf = sr.maxf;
    return d->m->flip(d->sess, &fd, cnt);
}

void adm_h_stats_dev_free(adm_h_stats_dev *d)
{
    if (!d) return;
    d->m->close(d->sess);
    free(d);
}

int adm_h_stats_dev_serves(const adm_h_stats_dev *d, const adm_judge_input *in)
{
    return d && in->oracle == d->oracle && in->cond == d->cond && in->ref == d->ref && in->cand &&
           device_format(in->cand->dtype) && adm_tensor_is_contiguous(in->cand) && in->cand->ndim == in->ref->ndim &&
           !memcmp(in->cand->shape, in->ref->shape, sizeof(int64_t) * (size_t)in->ref->ndim);
}

adm_status adm_h_stats_dev_raw(adm_h_stats_dev *d, const adm_judge_input *in, adm_h_stats_raw *s)
{
    if (s->R != d->R || s->N != d->N || !adm_h_stats_dev_serves(d, in))
        return ADM_FAIL(ADM_ERR_INVALID, "statistics on the GPU: the output is not the one uploaded");
    int64_t first[2];
    d->last = NULL;
    ADM_TRY(d->m->run(d->sess, first_elem(in->cand), in->cand->dtype, s->rows, s->chans, s->mg, s->ph, first));
    d->last = in->cand;
    s->merged = 1; /* the module adds the stripes on the device */
    s->first_kind = first[0];
    s->first_bits = first[1];
    return ADM_OK;
}

adm_status adm_h_measure_numeric_dev(adm_h_stats_dev *d, const adm_judge_input *in, adm_verdict *v, int64_t first[2])
{
    adm_h_stats_raw s;
    adm_status st;
    double t0 = adm_trace_ms();
    ADM_TRY(adm_h_stats_alloc(&s, d->R, d->N));
    adm_trace_part("stats.raw_alloc", t0, -1);
    t0 = adm_trace_ms();
    st = adm_h_stats_dev_raw(d, in, &s);
    adm_trace_part("stats.run", t0, -1);
    t0 = adm_trace_ms();
    if (st == ADM_OK) adm_h_stats_finish(&s, in->ref->dtype, in->cond != NULL, v);
    first[0] = s.first_kind;
    first[1] = s.first_bits;
    adm_trace_part("stats.finish", t0, -1);
    t0 = adm_trace_ms();
    adm_h_stats_free(&s);
    adm_trace_part("stats.raw_free", t0, -1);
    return st;
}
