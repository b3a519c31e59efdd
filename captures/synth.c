/* Synthetic DiT-shaped activations.
 *
 * DiT activations are not Gaussian: a per-token scale (the adaLN
 * modulation and the norm statistics vary by token) and a few outlier
 * channels that carry most of the magnitude (FLUX.1-dev MLP input: max/p99
 * about 8). Both matter to a verdict: the outlier channels set the max
 * error, the bulk sets the RMS, and a bias confined to a few channels
 * hides in a global mean. */
#include "adm_capture.h"

#include <math.h>
#include <stdlib.h>

/* xoshiro256** seeded through splitmix64: fast, and the same stream on
 * every platform. */
typedef struct rng { uint64_t s[4]; } rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r)
{
    uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

/* Uniform in (0, 1): 53 random bits, never 0. */
static double rng_uniform(rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53; }

static double rng_normal(rng *r)
{
    double u = rng_uniform(r), v = rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void adm_synth_config_default(adm_synth_config *cfg)
{
    cfg->seed = 0;
    cfg->tokens = 4096;
    cfg->channels = 3072;
    cfg->dtype = ADM_BF16;
    cfg->token_scale_sigma = 0.35;
    cfg->outlier_fraction = 0.005;
    cfg->target_max_over_p99 = 8.0;
}

adm_status adm_synth_activations(const adm_synth_config *cfg, adm_tensor *x)
{
    int64_t shape[2] = {cfg->tokens, cfg->channels}, n, n_out;
    double *b = NULL, *work = NULL, gain = 1.0, max_out = 0, max_in = 0;
    unsigned char *is_out = NULL;
    int64_t *perm = NULL;
    rng r;
    adm_status st = ADM_OK;

    if (cfg->tokens < 1 || cfg->channels < 1)
        return ADM_FAIL(ADM_ERR_INVALID, "synth: tokens and channels must be >= 1");
    if (!(cfg->outlier_fraction >= 0 && cfg->outlier_fraction < 0.5))
        return ADM_FAIL(ADM_ERR_INVALID, "synth: outlier fraction %g is outside [0, 0.5)", cfg->outlier_fraction);
    if (!(cfg->target_max_over_p99 >= 1 && cfg->target_max_over_p99 <= 1e4))
        return ADM_FAIL(ADM_ERR_INVALID, "synth: target max/p99 %g is outside [1, 1e4]", cfg->target_max_over_p99);
    if (!(cfg->token_scale_sigma >= 0 && cfg->token_scale_sigma <= 4))
        return ADM_FAIL(ADM_ERR_INVALID, "synth: token scale sigma %g is outside [0, 4]", cfg->token_scale_sigma);
    ADM_TRY(adm_shape_numel(2, shape, &n));
    if (n > ((int64_t)1 << 31))
        return ADM_FAIL(ADM_ERR_OVERFLOW, "synth: %lld elements is beyond the generator's 2^31", (long long)n);
    b = malloc(sizeof *b * (size_t)n);
    work = malloc(sizeof *work * (size_t)n);
    is_out = calloc((size_t)cfg->channels, 1);
    perm = malloc(sizeof *perm * (size_t)cfg->channels);
    if (!b || !work || !is_out || !perm) { st = ADM_FAIL(ADM_ERR_NOMEM, "synth: out of memory"); goto done; }

    rng_seed(&r, cfg->seed);
    n_out = (int64_t)llround(cfg->outlier_fraction * (double)cfg->channels);
    if (cfg->outlier_fraction > 0 && n_out < 1) n_out = 1;
    for (int64_t c = 0; c < cfg->channels; c++) perm[c] = c;
    for (int64_t i = 0; i < n_out; i++) {
        int64_t j = i + (int64_t)(rng_next(&r) % (uint64_t)(cfg->channels - i)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        is_out[perm[i]] = 1;
    }
    for (int64_t t = 0; t < cfg->tokens; t++) {
        double s = exp(cfg->token_scale_sigma * rng_normal(&r));
        for (int64_t c = 0; c < cfg->channels; c++) {
            double v = s * rng_normal(&r);
            b[t * cfg->channels + c] = v;
            if (is_out[c]) max_out = fmax(max_out, fabs(v));
            else max_in = fmax(max_in, fabs(v));
        }
    }
    /* Fixed point on the outlier gain: p99 moves little with it, so a few
     * rounds settle it. The gain never shrinks the outliers below 1. */
    if (n_out > 0 && max_out > 0) {
        for (int it = 0; it < 8; it++) {
            double p99, g;
            for (int64_t i = 0; i < n; i++) work[i] = is_out[i % cfg->channels] ? b[i] * gain : b[i];
            p99 = adm_quantile_abs_inplace(work, n, 0.99);
            g = cfg->target_max_over_p99 * p99 / max_out;
            if (g < 1) g = 1;
            if (fabs(g - gain) <= 1e-9 * gain) break;
            gain = g;
        }
    }
    for (int64_t i = 0; i < n; i++)
        if (is_out[i % cfg->channels]) b[i] *= gain;
    st = adm_tensor_from_f64(x, cfg->dtype, 2, shape, b, ADM_RNE, 0);
done:
    free(b);
    free(work);
    free(is_out);
    free(perm);
    return st;
}

adm_status adm_synth_gaussian(uint64_t seed, double sigma, adm_dtype dt, int ndim,
                              const int64_t *shape, adm_tensor *out)
{
    int64_t n;
    double *v;
    rng r;
    adm_status st;
    ADM_TRY(adm_shape_numel(ndim, shape, &n));
    if (n > ((int64_t)1 << 31))
        return ADM_FAIL(ADM_ERR_OVERFLOW, "synth: %lld elements is beyond the generator's 2^31", (long long)n);
    if (!(sigma >= 0 && isfinite(sigma))) return ADM_FAIL(ADM_ERR_INVALID, "synth: sigma %g", sigma);
    v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "synth: out of memory");
    rng_seed(&r, seed);
    for (int64_t i = 0; i < n; i++) v[i] = sigma * rng_normal(&r);
    st = adm_tensor_from_f64(out, dt, ndim, shape, v, ADM_RNE, 0);
    free(v);
    return st;
}
