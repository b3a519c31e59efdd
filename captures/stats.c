/* Tensor statistics for `capture inspect` and the synthetic generator. */
#include "adm_capture.h"

#include <math.h>
#include <stdlib.h>

static void swap(double *a, double *b) { double t = *a; *a = *b; *b = t; }

/* Hoare selection with median-of-three pivots: O(n) expected. */
static double select_kth(double *v, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
        double pivot;
        if (v[mid] < v[lo]) swap(&v[mid], &v[lo]);
        if (v[hi] < v[lo]) swap(&v[hi], &v[lo]);
        if (v[hi] < v[mid]) swap(&v[hi], &v[mid]);
        pivot = v[mid];
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) { swap(&v[i], &v[j]); i++; j--; }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

double adm_quantile_abs_inplace(double *values, int64_t n, double q)
{
    int64_t m = 0, k;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(values[i])) values[m++] = fabs(values[i]);
    if (m == 0) return NAN;
    if (q <= 0) q = 0;
    if (q >= 1) q = 1;
    /* nearest rank: the smallest value with at least q*m values <= it */
    k = (int64_t)ceil(q * (double)m) - 1;
    if (k < 0) k = 0;
    return select_kth(values, m, k);
}

adm_status adm_tensor_stats_compute(const adm_tensor *t, adm_tensor_stats *s)
{
    int64_t n = adm_tensor_numel(t), finite = 0;
    double *v, sum = 0, sumsq = 0;
    memset(s, 0, sizeof *s);
    s->count = n;
    s->min = s->max = s->mean = s->rms = s->absmax = s->p99_abs = s->max_over_p99 = NAN;
    if (n == 0) return ADM_OK;
    v = malloc(sizeof *v * (size_t)n);
    if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "statistics: cannot allocate %lld doubles", (long long)n);
    adm_tensor_to_f64(t, v);
    for (int64_t i = 0; i < n; i++) {
        double x = v[i];
        if (isnan(x)) { s->nan_count++; continue; }
        if (isinf(x)) { if (x > 0) s->posinf_count++; else s->neginf_count++; continue; }
        if (x == 0) s->zero_count++;
        if (finite == 0 || x < s->min) s->min = x;
        if (finite == 0 || x > s->max) s->max = x;
        sum += x;
        sumsq += x * x;
        finite++;
    }
    if (finite > 0) {
        s->mean = sum / (double)finite;
        s->rms = sqrt(sumsq / (double)finite);
        s->absmax = fmax(fabs(s->min), fabs(s->max));
        s->p99_abs = adm_quantile_abs_inplace(v, n, 0.99);
        s->max_over_p99 = s->p99_abs > 0 ? s->absmax / s->p99_abs : INFINITY;
    }
    free(v);
    return ADM_OK;
}
