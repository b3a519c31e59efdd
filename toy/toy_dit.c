/* The toy DiT: weights, the bf16 run through registered implementations
 * (TP1, TP2 emulated or as one rank), the fp64 run of the same math, the
 * decode to an 8-bit RGB image, and tiers from a fusion table. */
#include "toy_internal.h"
#include "adm_fpenv.h"
#include "adm_capture.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------------------------------------------------------- sites */

static const struct {
    const char *name, *op, *what;
} sites[ADM_TOY_SITE_COUNT] = {
    {"embed", "linear", "latent -> hidden"},
    {"temb", "linear", "timestep embedding -> c"},
    {"adaln", "linear", "SiLU(c) -> shift, scale, gate (each block and the final layer)"},
    {"norm", "layernorm", "LayerNorm without affine, modulated (1 + scale), + shift"},
    {"qkv", "linear", "hidden -> q, k, v"},
    {"qk_norm", "rmsnorm", "RMSNorm of q and k per head"},
    {"proj", "linear", "attention output projection (row-parallel over K under TP2)"},
    {"residual", "gated_residual", "x + gate * y"},
    {"fc1", "linear+gelu", "MLP up-projection with tanh-GELU"},
    {"fc2", "linear", "MLP down-projection (row-parallel over K under TP2)"},
    {"final", "linear", "hidden -> velocity"},
};

const char *adm_toy_site_name(adm_toy_site s) { return (unsigned)s < ADM_TOY_SITE_COUNT ? sites[s].name : "?"; }
const char *adm_toy_site_op(adm_toy_site s) { return (unsigned)s < ADM_TOY_SITE_COUNT ? sites[s].op : "?"; }

adm_status adm_toy_site_from_name(const char *name, adm_toy_site *out)
{
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++)
        if (name && !strcmp(name, sites[s].name)) {
            *out = (adm_toy_site)s;
            return ADM_OK;
        }
    return ADM_FAIL(ADM_ERR_NOT_FOUND, "the toy has no site '%s' (embed, temb, adaln, norm, qkv, qk_norm, proj, residual, "
                    "fc1, fc2, final)", name ? name : "");
}

void adm_toy_print_sites(FILE *f)
{
    fprintf(f, "%-10s %-15s %s\n", "site", "op", "what");
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) fprintf(f, "%-10s %-15s %s\n", sites[s].name, sites[s].op, sites[s].what);
    fprintf(f, "(the attention core, softmax(q k^T / sqrt(d)) v in fp32, is the toy's own and not a site)\n");
}

void adm_toy_config_default(adm_toy_config *c)
{
    c->seed = 1;
    c->grid = 16;
    c->patch = 4;
    c->latent = 16;
    c->hidden = 64;
    c->heads = 4;
    c->mlp = 256;
    c->blocks = 3;
    c->steps = 4;
}

/* ---------------------------------------------------------------- the model */

enum { B_MOD_W, B_MOD_B, B_QKV_W, B_QKV_B, B_QN, B_KN, B_O_W, B_O_B, B_1_W, B_1_B, B_2_W, B_2_B, NB_W };

struct adm_toy {
    adm_toy_config c;
    int64_t T, D, H, hd, F, Cl, P;
    adm_tensor w_in, b_in, pos, w_t, b_t, w_fmod, b_fmod, w_out, b_out, noise;
    adm_tensor *blk;   /* [blocks][NB_W] */
    double *dec;       /* [3][Cl]: latent channels to RGB */
};

const adm_toy_config *adm_toy_get_config(const adm_toy *t) { return &t->c; }

void adm_toy_free(adm_toy *t)
{
    if (!t) return;
    adm_tensor *all[] = {&t->w_in, &t->b_in, &t->pos, &t->w_t, &t->b_t, &t->w_fmod, &t->b_fmod, &t->w_out, &t->b_out, &t->noise};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) adm_tensor_free(all[i]);
    if (t->blk)
        for (int i = 0; i < t->c.blocks * NB_W; i++) adm_tensor_free(&t->blk[i]);
    free(t->blk);
    free(t->dec);
    free(t);
}

static uint64_t mix(uint64_t seed, uint64_t k)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + k * 0xbf58476d1ce4e5b9ull + 0x94d049bb133111ebull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static adm_status gauss(const adm_toy *t, uint64_t k, double sigma, int64_t rows, int64_t cols, adm_tensor *out)
{
    int64_t shape[2] = {rows, cols};
    return adm_synth_gaussian(mix(t->c.seed, k), sigma, ADM_BF16, rows ? 2 : 1, rows ? shape : shape + 1, out);
}

/* 1 + N(0, 0.1^2): the RMSNorm weights of q and k */
static adm_status norm_weight(const adm_toy *t, uint64_t k, int64_t n, adm_tensor *out)
{
    double *v = malloc(sizeof *v * (size_t)n);
    adm_tensor g;
    adm_status st;
    if (!v) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    if ((st = gauss(t, k, 0.1, 0, n, &g)) == ADM_OK) {
        for (int64_t i = 0; i < n; i++) v[i] = 1 + adm_tensor_get(&g, i);
        st = adm_tensor_from_f64(out, ADM_BF16, 1, &n, v, ADM_RNE, 0);
        adm_tensor_free(&g);
    }
    free(v);
    return st;
}

adm_status adm_toy_create(const adm_toy_config *cfg, adm_toy **out)
{
    adm_toy *t;
    adm_status st = ADM_OK;
    *out = NULL;
    if (cfg->grid < 3 || cfg->grid > 64 || cfg->patch < 1 || cfg->patch > 16 || cfg->latent < 1 || cfg->latent > 256 ||
        cfg->heads < 1 || cfg->hidden < 2 || cfg->hidden % (2 * cfg->heads) || cfg->hidden > 1024 || cfg->mlp < 32 ||
        cfg->mlp % 32 || cfg->mlp > 8192 || cfg->blocks < 1 || cfg->blocks > 64 || cfg->steps < 1 || cfg->steps > 64)
        return ADM_FAIL(ADM_ERR_INVALID, "toy: configuration out of range (grid 3..64, patch 1..16, latent 1..256, "
                        "hidden a multiple of 2 heads up to 1024, mlp a multiple of 32 up to 8192, blocks and steps "
                        "1..64)");
    if (!(t = calloc(1, sizeof *t))) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    t->c = *cfg;
    t->T = (int64_t)cfg->grid * cfg->grid;
    t->D = cfg->hidden;
    t->H = cfg->heads;
    t->hd = t->D / t->H;
    t->F = cfg->mlp;
    t->Cl = cfg->latent;
    t->P = cfg->patch;
    if (!(t->blk = calloc((size_t)cfg->blocks * NB_W, sizeof *t->blk))) {
        free(t);
        return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    }
    {
        double sD = 1 / sqrt((double)t->D), sF = 1 / sqrt((double)t->F), sL = 1 / sqrt((double)t->Cl);
        if ((st = gauss(t, 1, sL, t->D, t->Cl, &t->w_in)) || (st = gauss(t, 2, 0.02, 0, t->D, &t->b_in)) ||
            (st = gauss(t, 3, sD, t->D, t->D, &t->w_t)) || (st = gauss(t, 4, 0.02, 0, t->D, &t->b_t)) ||
            (st = gauss(t, 5, sD, 2 * t->D, t->D, &t->w_fmod)) || (st = gauss(t, 6, 0.02, 0, 2 * t->D, &t->b_fmod)) ||
            (st = gauss(t, 7, sD, t->Cl, t->D, &t->w_out)) || (st = gauss(t, 8, 0.02, 0, t->Cl, &t->b_out)) ||
            (st = gauss(t, 9, 1.0, t->T, t->Cl, &t->noise)))
            goto fail;
        for (int b = 0; b < cfg->blocks; b++) {
            adm_tensor *w = t->blk + (size_t)b * NB_W;
            uint64_t k = 100 + 20 * (uint64_t)b;
            if ((st = gauss(t, k + 0, sD, 6 * t->D, t->D, &w[B_MOD_W])) ||
                (st = gauss(t, k + 1, 0.02, 0, 6 * t->D, &w[B_MOD_B])) ||
                (st = gauss(t, k + 2, sD, 3 * t->D, t->D, &w[B_QKV_W])) ||
                (st = gauss(t, k + 3, 0.02, 0, 3 * t->D, &w[B_QKV_B])) || (st = norm_weight(t, k + 4, t->hd, &w[B_QN])) ||
                (st = norm_weight(t, k + 5, t->hd, &w[B_KN])) || (st = gauss(t, k + 6, sD, t->D, t->D, &w[B_O_W])) ||
                (st = gauss(t, k + 7, 0.02, 0, t->D, &w[B_O_B])) || (st = gauss(t, k + 8, sD, t->F, t->D, &w[B_1_W])) ||
                (st = gauss(t, k + 9, 0.02, 0, t->F, &w[B_1_B])) || (st = gauss(t, k + 10, sF, t->D, t->F, &w[B_2_W])) ||
                (st = gauss(t, k + 11, 0.02, 0, t->D, &w[B_2_B])))
                goto fail;
        }
    }
    {
        /* 2-D sinusoidal positions: half the channels from the row, half
         * from the column */
        int64_t shape[2] = {t->T, t->D}, half = t->D / 2;
        double *v = malloc(sizeof *v * (size_t)(t->T * t->D));
        if (!v) {
            st = ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
            goto fail;
        }
        for (int64_t tok = 0; tok < t->T; tok++)
            for (int64_t c = 0; c < t->D; c++) {
                int64_t k = c % half, axis = c / half;
                double p = (double)(axis ? tok % cfg->grid : tok / cfg->grid);
                double freq = pow(cfg->grid, -(double)(k / 2) / (double)(half / 2 > 0 ? half / 2 : 1));
                v[tok * t->D + c] = k % 2 ? cos(p * freq * 1.3) : sin(p * freq * 1.3);
            }
        st = adm_tensor_from_f64(&t->pos, ADM_BF16, 2, shape, v, ADM_RNE, 0);
        free(v);
        if (st) goto fail;
    }
    {
        adm_tensor g;
        int64_t n = 3 * t->Cl;
        if ((st = gauss(t, 10, 1 / sqrt((double)t->Cl), 3, t->Cl, &g))) goto fail;
        t->dec = malloc(sizeof *t->dec * (size_t)n);
        if (!t->dec) {
            adm_tensor_free(&g);
            st = ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
            goto fail;
        }
        adm_tensor_to_f64(&g, t->dec);
        adm_tensor_free(&g);
    }
    *out = t;
    return ADM_OK;
fail:
    adm_toy_free(t);
    return st;
}

/* ---------------------------------------------------------------- tiers */

void adm_toy_tier_reference(adm_toy_tier *t)
{
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) {
        t->impl[s] = adm_impl_reference(sites[s].op);
        snprintf(t->entry[s], sizeof t->entry[s], "reference");
    }
}

static adm_status mount_at(adm_toy_tier *t, adm_toy_site s, const char *impl, const char *why)
{
    const adm_impl *im = adm_impl_find(sites[s].op, impl);
    if (!im) {
        const adm_impl *dummy;
        return adm_impl_resolve(sites[s].op, impl, &dummy) == ADM_OK
                   ? ADM_FAIL(ADM_ERR_UNSUPPORTED, "site '%s': plugins are not mounted in the toy", sites[s].name)
                   : adm_error_code();
    }
    t->impl[s] = im;
    snprintf(t->entry[s], sizeof t->entry[s], "%s", why);
    return ADM_OK;
}

adm_status adm_toy_tier_mount(adm_toy_tier *t, const char *spec)
{
    const char *eq = spec ? strchr(spec, '=') : NULL;
    char site[64];
    adm_toy_site s;
    if (!eq || eq == spec || !eq[1] || (size_t)(eq - spec) >= sizeof site)
        return ADM_FAIL(ADM_ERR_INVALID, "expected SITE=IMPL, got '%s'", spec ? spec : "");
    memcpy(site, spec, (size_t)(eq - spec));
    site[eq - spec] = '\0';
    ADM_TRY(adm_toy_site_from_name(site, &s));
    if (strstr(eq + 1, ".so")) return ADM_FAIL(ADM_ERR_UNSUPPORTED, "site '%s': plugins are not mounted in the toy", site);
    {
        adm_status st = mount_at(t, s, eq + 1, "--mount");
        if (st != ADM_OK) adm_error_prefix("site '%s': ", site);
        return st;
    }
}

/* The sites an entry mounts at: its "sites" list, else every site of its
 * op; a listed site must compute the entry's op. */
static adm_status entry_sites(const char *path, size_t i, json_t *e, const char *op, int mask[ADM_TOY_SITE_COUNT])
{
    json_t *list = json_object_get(e, "sites"), *v;
    size_t k;
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) mask[s] = !list && !strcmp(sites[s].op, op);
    if (!list) return ADM_OK;
    if (!json_is_array(list))
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions[%zu].sites': expected a list of toy sites", path, i);
    json_array_foreach(list, k, v) {
        adm_toy_site s;
        if (!json_is_string(v) || adm_toy_site_from_name(json_string_value(v), &s) != ADM_OK)
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions[%zu].sites[%zu]': not a toy site (embed, temb, adaln, "
                            "norm, qkv, qk_norm, proj, residual, fc1, fc2, final)", path, i, k);
        if (strcmp(sites[s].op, op))
            return ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions[%zu].sites[%zu]': site '%s' computes '%s', the entry '%s'",
                            path, i, k, sites[s].name, sites[s].op, op);
        mask[s] = 1;
    }
    return ADM_OK;
}

adm_status adm_toy_tier_from_table(const char *path, adm_tier tier, const char *high, adm_toy_tier *t)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je), *list, *e;
    int ref_set[ADM_TOY_SITE_COUNT] = {0}, fused[ADM_TOY_SITE_COUNT] = {0}, high_found = 0;
    char high_name[128] = "", high_site[64] = "";
    size_t i;
    adm_status st = ADM_OK;
    adm_toy_tier_reference(t);
    if (!root) {
        if (access(path, R_OK) != 0) return ADM_FAIL(ADM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return ADM_FAIL(ADM_ERR_JSON, "%s: not valid JSON (line %d, column %d: %s)", path, je.line, je.column, je.text);
    }
    list = json_object_get(root, "fusions");
    if (!json_is_array(list)) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions': expected a list of entries", path);
        goto done;
    }
    if (high) {
        const char *at = strchr(high, '@');
        size_t n = at ? (size_t)(at - high) : strlen(high);
        if (n == 0 || n >= sizeof high_name || (at && !at[1])) {
            st = ADM_FAIL(ADM_ERR_INVALID, "high-tier fusion: expected ENTRY[@SITE], got '%s'", high);
            goto done;
        }
        memcpy(high_name, high, n);
        high_name[n] = '\0';
        if (at) snprintf(high_site, sizeof high_site, "%s", at + 1);
    }
    json_array_foreach(list, i, e) {
        const char *name = json_string_value(json_object_get(e, "name")), *op = json_string_value(json_object_get(e, "op"));
        const char *ref = json_string_value(json_object_get(e, "reference"));
        const char *cand = json_string_value(json_object_get(e, "candidate"));
        const char *decl = json_string_value(json_object_get(e, "declared"));
        adm_tier declared;
        int mask[ADM_TOY_SITE_COUNT];
        if (!name || !op || !ref || !cand || !decl) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions[%zu]': an entry needs name, op, reference, candidate and "
                          "declared (strings)", path, i);
            goto done;
        }
        if (adm_tier_from_name(decl, &declared) != ADM_OK) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: field 'fusions[%zu].declared': '%s' is not exact, lossless or high", path,
                          i, decl);
            goto done;
        }
        if ((st = entry_sites(path, i, e, op, mask)) != ADM_OK) goto done;
        for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) {
            char why[96];
            if (strcmp(sites[s].op, op)) continue;
            if (!ref_set[s]) {
                snprintf(why, sizeof why, "reference of %s", name);
                if ((st = mount_at(t, (adm_toy_site)s, ref, why)) != ADM_OK) {
                    adm_error_prefix("%s: field 'fusions[%zu].reference': ", path, i);
                    goto done;
                }
                ref_set[s] = 1;
            }
            if (tier >= ADM_TIER_LOSSLESS && declared == ADM_TIER_LOSSLESS && mask[s] && !fused[s]) {
                if ((st = mount_at(t, (adm_toy_site)s, cand, name)) != ADM_OK) {
                    adm_error_prefix("%s: field 'fusions[%zu].candidate': ", path, i);
                    goto done;
                }
                fused[s] = 1;
            }
        }
        if (tier == ADM_TIER_HIGH && high && !strcmp(name, high_name)) {
            high_found = 1;
            if (high_site[0]) {
                adm_toy_site s;
                if ((st = adm_toy_site_from_name(high_site, &s)) != ADM_OK) goto done;
                if (strcmp(sites[s].op, op)) {
                    st = ADM_FAIL(ADM_ERR_INVALID, "%s: entry '%s' computes '%s' but site '%s' computes '%s'", path, name,
                                  op, high_site, sites[s].op);
                    goto done;
                }
                for (int k = 0; k < ADM_TOY_SITE_COUNT; k++) mask[k] = k == (int)s;
            }
            for (int s = 0; s < ADM_TOY_SITE_COUNT; s++)
                if (mask[s] && (st = mount_at(t, (adm_toy_site)s, cand, name)) != ADM_OK) {
                    adm_error_prefix("%s: field 'fusions[%zu].candidate': ", path, i);
                    goto done;
                }
            for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) fused[s] |= mask[s];
        }
    }
    if (tier == ADM_TIER_HIGH && high && !high_found)
        st = ADM_FAIL(ADM_ERR_NOT_FOUND, "%s: no entry named '%s' (the high-tier fusion)", path, high_name);
done:
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------- the bf16 run */

typedef struct run_ctx {
    const adm_toy *t;
    const adm_toy_tier *tier;
    int tp;
    adm_toy_comm *comm;
    adm_op_params par[ADM_TOY_SITE_COUNT];
} run_ctx;

static float silu_f(float v) { return v / (1.0f + expf(-v)); }

static adm_status call(const run_ctx *c, adm_toy_site s, const adm_tensor *a0, const adm_tensor *a1,
                       const adm_tensor *a2, const adm_tensor *a3, const adm_tensor *a4, adm_tensor *out)
{
    const adm_tensor *in[ADM_OP_MAX_INPUTS] = {a0, a1, a2, a3, a4, NULL};
    const adm_impl *im = c->tier->impl[s];
    adm_status st;
    if (!im) return ADM_FAIL(ADM_ERR_NOT_FOUND, "toy site '%s': no implementation", sites[s].name);
    st = im->run(im, &c->par[s], in, out);
    if (st != ADM_OK) adm_error_prefix("toy site '%s' (%s): ", sites[s].name, im->name);
    return st;
}

/* An owned bf16 tensor of shape [rows, cols] from fp32 values, each rounded once. */
static adm_status bf16_from(adm_tensor *out, int64_t rows, int64_t cols, const float *v)
{
    int64_t shape[2] = {rows, cols};
    ADM_TRY(adm_tensor_alloc(out, ADM_BF16, 2, shape));
    for (int64_t i = 0; i < rows * cols; i++) ((uint16_t *)out->data)[i] = adm_bf16_from_f32(v[i]);
    return ADM_OK;
}

static void to_f32(const adm_tensor *x, float *v)
{
    int64_t n = adm_tensor_numel(x);
    if (x->dtype == ADM_BF16 && adm_tensor_is_contiguous(x)) {
        const uint16_t *p = (const uint16_t *)x->data + x->offset;
        for (int64_t i = 0; i < n; i++) v[i] = adm_bf16_to_f32(p[i]);
        return;
    }
    for (int64_t i = 0; i < n; i++) v[i] = (float)adm_tensor_get(x, i);
}

/* softmax(q k^T / sqrt(hd)) v per head in fp32, one rounding to bf16:
 * q, k, v [T, H, hd] (any strides) -> out [T, H * hd]. */
static adm_status attention_bf16(const adm_toy *t, const adm_tensor *q, const adm_tensor *k, const adm_tensor *v,
                                 adm_tensor *out)
{
    int64_t T = t->T, H = t->H, hd = t->hd, n = T * H * hd;
    float *qf = malloc(sizeof *qf * (size_t)(3 * n + T + hd)), *kf, *vf, *s, *o;
    const float scale = 1.0f / sqrtf((float)hd);
    adm_status st;
    if (!qf) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    kf = qf + n;
    vf = kf + n;
    s = vf + n;
    o = s + T;
    to_f32(q, qf);
    to_f32(k, kf);
    to_f32(v, vf);
    {
        int64_t shape[2] = {T, H * hd};
        if ((st = adm_tensor_alloc(out, ADM_BF16, 2, shape)) != ADM_OK) {
            free(qf);
            return st;
        }
    }
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < T; i++) {
            float m = -INFINITY, l = 0;
            for (int64_t j = 0; j < T; j++) {
                float acc = 0;
                for (int64_t e = 0; e < hd; e++) acc += qf[(i * H + h) * hd + e] * kf[(j * H + h) * hd + e];
                s[j] = acc * scale;
                m = fmaxf(m, s[j]);
            }
            for (int64_t e = 0; e < hd; e++) o[e] = 0;
            for (int64_t j = 0; j < T; j++) {
                float p = expf(s[j] - m);
                l += p;
                for (int64_t e = 0; e < hd; e++) o[e] += p * vf[(j * H + h) * hd + e];
            }
            for (int64_t e = 0; e < hd; e++) ((uint16_t *)out->data)[i * H * hd + h * hd + e] = adm_bf16_from_f32(o[e] / l);
        }
    free(qf);
    return ADM_OK;
}

/* A view [T, H, hd] of columns [off, off + D) of qkv [T, 3D]. */
static adm_status head_view(const adm_toy *t, const adm_tensor *qkv, int64_t off, adm_tensor *view)
{
    int64_t shape[3] = {t->T, t->H, t->hd}, stride[3] = {3 * t->D, t->hd, 1};
    return adm_tensor_wrap(view, qkv->dtype, 3, shape, stride, qkv->offset + off, qkv->data, qkv->capacity);
}

/* y = bf16(y + b) per row, fp32 math: the eager bias add after a GEMM. */
static void add_bias(adm_tensor *y, const adm_tensor *b)
{
    int64_t N = b->shape[0], M = adm_tensor_numel(y) / N;
    uint16_t *p = y->data;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            p[i * N + j] = adm_bf16_from_f32(adm_bf16_to_f32(p[i * N + j]) + (float)adm_tensor_get(b, j));
}

/* Contiguous bf16 bits of columns [k0, k1) of a [rows, K] tensor. */
static adm_status columns_bits(const adm_tensor *x, int64_t k0, int64_t k1, uint16_t **out)
{
    int64_t rows = x->shape[0], K = x->shape[1], w = k1 - k0;
    uint16_t *p = malloc(sizeof *p * (size_t)(rows * w));
    if (!p) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < w; k++) p[r * w + k] = (uint16_t)adm_tensor_bits(x, r * K + k0 + k);
    *out = p;
    return ADM_OK;
}

/* One rank's partial of a row-parallel linear at `site`: columns [k0, k1)
 * of x and w, no bias, bf16; by cuBLAS on this process's GPU, else the
 * site's implementation. */
static adm_status rp_partial(const run_ctx *c, adm_toy_site site, const adm_tensor *x, const adm_tensor *w, int64_t k0,
                             int64_t k1, adm_tensor *part)
{
    if (c->comm && c->comm->gpu) {
        uint16_t *xb = NULL, *wb = NULL;
        int64_t shape[2] = {x->shape[0], w->shape[0]};
        adm_status st;
        if ((st = columns_bits(x, k0, k1, &xb)) == ADM_OK && (st = columns_bits(w, k0, k1, &wb)) == ADM_OK &&
            (st = adm_tensor_alloc(part, ADM_BF16, 2, shape)) == ADM_OK) {
            st = adm_toy_cuda_gemm_bf16(xb, wb, x->shape[0], k1 - k0, w->shape[0], part->data);
            if (st != ADM_OK) adm_tensor_free(part);
        }
        free(xb);
        free(wb);
        if (st != ADM_OK) adm_error_prefix("toy site '%s' on the GPU: ", sites[site].name);
        return st;
    }
    {
        adm_tensor xs, ws;
        ADM_TRY(adm_tensor_slice(x, 1, k0, k1, 1, &xs));
        ADM_TRY(adm_tensor_slice(w, 1, k0, k1, 1, &ws));
        return call(c, site, &xs, &ws, NULL, NULL, NULL, part);
    }
}

/* A row-parallel linear (the attention output projection, FC2): TP1
 * through the site's implementation (or cuBLAS on one GPU); TP2: each
 * rank's bf16 partial over its half of K, a bf16 sum all-reduce, then the
 * bias added once (to bf16), as a row-parallel linear does after its
 * all-reduce. */
static adm_status row_parallel(const run_ctx *c, adm_toy_site site, const adm_tensor *x, const adm_tensor *w,
                               const adm_tensor *b, adm_tensor *out)
{
    int64_t K = x->shape[1], half = K / 2;
    if ((!c->comm && c->tp == 1) || (c->comm && c->comm->world == 1 && !c->comm->gpu))
        return call(c, site, x, w, b, NULL, NULL, out);
    if (c->comm && c->comm->world == 1) {
        ADM_TRY(rp_partial(c, site, x, w, 0, K, out));
        add_bias(out, b);
        return ADM_OK;
    }
    if (!c->comm) {
        adm_tensor p0, p1;
        ADM_TRY(rp_partial(c, site, x, w, 0, half, &p0));
        if (rp_partial(c, site, x, w, half, K, &p1) != ADM_OK) {
            adm_tensor_free(&p0);
            return adm_error_code();
        }
        {
            uint16_t *a = p0.data;
            const uint16_t *q = p1.data;
            for (int64_t i = 0; i < adm_tensor_numel(&p0); i++)
                a[i] = adm_bf16_from_f32(adm_bf16_to_f32(a[i]) + adm_bf16_to_f32(q[i]));
        }
        adm_tensor_free(&p1);
        *out = p0;
        add_bias(out, b);
        return ADM_OK;
    }
    {
        int r = c->comm->rank;
        adm_status st;
        ADM_TRY(rp_partial(c, site, x, w, r == 0 ? 0 : half, r == 0 ? half : K, out));
        if ((st = adm_toy_allreduce(c->comm, out->data, adm_tensor_numel(out))) != ADM_OK) {
            adm_tensor_free(out);
            return st;
        }
        add_bias(out, b);
        return ADM_OK;
    }
}

static adm_status parse_params(run_ctx *c)
{
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) {
        const char *json = !strcmp(sites[s].op, "linear+gelu") ? "{\"approximate\":\"tanh\"}"
                           : !strcmp(sites[s].op, "layernorm") ? "{\"eps\":1e-6,\"modulate\":true}"
                           : !strcmp(sites[s].op, "rmsnorm") ? "{\"eps\":1e-6}"
                                                               : "{}";
        ADM_TRY(adm_op_params_parse(adm_op_find(sites[s].op), json, &c->par[s]));
        if (c->tier->impl[s] && strcmp(c->tier->impl[s]->op, sites[s].op))
            return ADM_FAIL(ADM_ERR_INVALID, "toy site '%s' computes '%s' but '%s' computes '%s'", sites[s].name,
                            sites[s].op, c->tier->impl[s]->name, c->tier->impl[s]->op);
    }
    return ADM_OK;
}

/* The timestep embedding of t in [0, 1]: sin and cos of 1000 t at
 * geometric frequencies, fp32, [1, D]. */
static void timestep_embedding(int64_t D, double t, double *v)
{
    int64_t half = D / 2;
    for (int64_t k = 0; k < half; k++) {
        double f = exp(-log(10000.0) * (double)k / (double)half), a = 1000.0 * t * f;
        v[k] = cos(a);
        v[half + k] = sin(a);
    }
}

/* Pixels from a latent [T, Cl] (double values): the latent grid
 * upsampled bilinearly to the image (token centres at pixel (P-1)/2 + P k,
 * clamped at the borders), each channel mixed by the fixed map dec [3][Cl],
 * then 127.5 + 96 (dec . z) rounded to nearest and clamped to 0..255. A
 * fixed linear map up to the final rounding, the same for every arm. */
static adm_status decode(const adm_toy *t, const double *z, adm_image *img)
{
    int64_t G = t->c.grid, P = t->P, S = G * P, Cl = t->Cl;
    double *mix = malloc(sizeof *mix * (size_t)(G * G * 3));
    if (!mix) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    if (adm_image_alloc(img, 1, S, S, 3) != ADM_OK) {
        free(mix);
        return adm_error_code();
    }
    img->data_range = 255;
    for (int64_t tok = 0; tok < G * G; tok++)
        for (int64_t ch = 0; ch < 3; ch++) {
            double acc = 0;
            for (int64_t c = 0; c < Cl; c++) acc += t->dec[ch * Cl + c] * z[tok * Cl + c];
            mix[tok * 3 + ch] = acc;
        }
    for (int64_t y = 0; y < S; y++)
        for (int64_t x = 0; x < S; x++) {
            double gy = ((double)y + 0.5) / (double)P - 0.5, gx = ((double)x + 0.5) / (double)P - 0.5;
            int64_t y0 = (int64_t)floor(gy), x0 = (int64_t)floor(gx);
            double fy = gy - (double)y0, fx = gx - (double)x0;
            int64_t ya = y0 < 0 ? 0 : y0, yb = y0 + 1 > G - 1 ? G - 1 : y0 + 1;
            int64_t xa = x0 < 0 ? 0 : x0, xb = x0 + 1 > G - 1 ? G - 1 : x0 + 1;
            for (int64_t ch = 0; ch < 3; ch++) {
                double v = (1 - fy) * ((1 - fx) * mix[(ya * G + xa) * 3 + ch] + fx * mix[(ya * G + xb) * 3 + ch]) +
                           fy * ((1 - fx) * mix[(yb * G + xa) * 3 + ch] + fx * mix[(yb * G + xb) * 3 + ch]);
                v = nearbyint(127.5 + 96.0 * v);
                img->data[(y * S + x) * 3 + ch] = v <= 0 ? 0 : v > 255 ? 255 : v; /* -0 too */
            }
        }
    free(mix);
    return ADM_OK;
}

static adm_status trace_alloc(const adm_toy *t, adm_toy_trace *tr)
{
    tr->n_hidden = t->c.steps * t->c.blocks;
    tr->hidden_size = t->T * t->D;
    tr->n_latent = t->c.steps;
    tr->latent_size = t->T * t->Cl;
    tr->hidden = malloc(sizeof *tr->hidden * (size_t)(tr->n_hidden * tr->hidden_size));
    tr->latent = malloc(sizeof *tr->latent * (size_t)(tr->n_latent * tr->latent_size));
    if (tr->hidden && tr->latent) return ADM_OK;
    adm_toy_trace_free(tr);
    return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory for the trace");
}

void adm_toy_trace_free(adm_toy_trace *tr)
{
    if (!tr) return;
    free(tr->hidden);
    free(tr->latent);
    memset(tr, 0, sizeof *tr);
}

static adm_status run_bf16(const run_ctx *c, adm_image *img, adm_toy_trace *trace)
{
    const adm_toy *t = c->t;
    int64_t T = t->T, D = t->D, Cl = t->Cl;
    adm_tensor z = {0}, x = {0}, cvec = {0}, sc = {0};
    float *buf = NULL;
    double *zd = NULL;
    adm_status st = ADM_OK;
    int depth = 0;
    if (trace && (st = trace_alloc(t, trace)) != ADM_OK) return st;
    if (!(buf = malloc(sizeof *buf * (size_t)(T * (D > Cl ? D : Cl) + D)))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
        goto done;
    }
    if ((st = adm_tensor_contiguous(&t->noise, &z)) != ADM_OK) goto done;
    for (int step = 0; step < t->c.steps && st == ADM_OK; step++) {
        double tcur = 1.0 - (double)step / t->c.steps, tnext = 1.0 - (double)(step + 1) / t->c.steps;
        adm_tensor e = {0}, fmod = {0}, h = {0}, v = {0};
        /* conditioning: c = linear(temb), s = SiLU(c) */
        {
            double te[1024];
            adm_tensor tt = {0};
            timestep_embedding(D, tcur, te);
            for (int64_t k = 0; k < D; k++) buf[k] = (float)te[k];
            if ((st = bf16_from(&tt, 1, D, buf)) != ADM_OK) goto step_done;
            st = call(c, ADM_TOY_TEMB, &tt, &t->w_t, &t->b_t, NULL, NULL, &cvec);
            adm_tensor_free(&tt);
            if (st) goto step_done;
            for (int64_t k = 0; k < D; k++) buf[k] = silu_f(adm_bf16_to_f32(((uint16_t *)cvec.data)[k]));
            adm_tensor_free(&cvec);
            if ((st = bf16_from(&sc, 1, D, buf)) != ADM_OK) goto step_done;
        }
        /* x = embed(z) + pos */
        if ((st = call(c, ADM_TOY_EMBED, &z, &t->w_in, &t->b_in, NULL, NULL, &e)) != ADM_OK) goto step_done;
        for (int64_t i = 0; i < T * D; i++)
            buf[i] = adm_bf16_to_f32(((uint16_t *)e.data)[i]) + adm_bf16_to_f32(((uint16_t *)t->pos.data)[i]);
        adm_tensor_free(&e);
        if ((st = bf16_from(&x, T, D, buf)) != ADM_OK) goto step_done;
        for (int b = 0; b < t->c.blocks; b++) {
            const adm_tensor *w = t->blk + (size_t)b * NB_W;
            adm_tensor mod = {0}, m[6], qkv = {0}, qv, kv, vv, qn = {0}, kn = {0}, a = {0}, o = {0}, x1 = {0}, f = {0},
                       y = {0}, x2 = {0};
            if ((st = call(c, ADM_TOY_ADALN, &sc, &w[B_MOD_W], &w[B_MOD_B], NULL, NULL, &mod)) != ADM_OK) goto blk_done;
            for (int k = 0; k < 6; k++) adm_tensor_slice(&mod, 1, k * D, (k + 1) * D, 1, &m[k]);
            /* attention half */
            if ((st = call(c, ADM_TOY_NORM, &x, NULL, NULL, &m[0], &m[1], &h)) != ADM_OK) goto blk_done;
            st = call(c, ADM_TOY_QKV, &h, &w[B_QKV_W], &w[B_QKV_B], NULL, NULL, &qkv);
            adm_tensor_free(&h);
            if (st) goto blk_done;
            head_view(t, &qkv, 0, &qv);
            head_view(t, &qkv, D, &kv);
            head_view(t, &qkv, 2 * D, &vv);
            if ((st = call(c, ADM_TOY_QK_NORM, &qv, &w[B_QN], NULL, NULL, NULL, &qn)) != ADM_OK ||
                (st = call(c, ADM_TOY_QK_NORM, &kv, &w[B_KN], NULL, NULL, NULL, &kn)) != ADM_OK ||
                (st = attention_bf16(t, &qn, &kn, &vv, &a)) != ADM_OK ||
                (st = row_parallel(c, ADM_TOY_PROJ, &a, &w[B_O_W], &w[B_O_B], &o)) != ADM_OK ||
                (st = call(c, ADM_TOY_RESIDUAL, &x, &m[2], &o, NULL, NULL, &x1)) != ADM_OK)
                goto blk_done;
            /* MLP half */
            if ((st = call(c, ADM_TOY_NORM, &x1, NULL, NULL, &m[3], &m[4], &h)) != ADM_OK) goto blk_done;
            st = call(c, ADM_TOY_FC1, &h, &w[B_1_W], &w[B_1_B], NULL, NULL, &f);
            adm_tensor_free(&h);
            if (st || (st = row_parallel(c, ADM_TOY_FC2, &f, &w[B_2_W], &w[B_2_B], &y)) != ADM_OK ||
                (st = call(c, ADM_TOY_RESIDUAL, &x1, &m[5], &y, NULL, NULL, &x2)) != ADM_OK)
                goto blk_done;
            adm_tensor_free(&x);
            x = x2;
            memset(&x2, 0, sizeof x2);
            if (trace) adm_tensor_to_f64(&x, trace->hidden + (int64_t)depth * trace->hidden_size);
            depth++;
        blk_done:
            adm_tensor_free(&mod);
            adm_tensor_free(&qkv);
            adm_tensor_free(&qn);
            adm_tensor_free(&kn);
            adm_tensor_free(&a);
            adm_tensor_free(&o);
            adm_tensor_free(&x1);
            adm_tensor_free(&f);
            adm_tensor_free(&y);
            adm_tensor_free(&x2);
            if (st) goto step_done;
        }
        /* the final layer: modulated norm, linear to the velocity */
        if ((st = call(c, ADM_TOY_ADALN, &sc, &t->w_fmod, &t->b_fmod, NULL, NULL, &fmod)) != ADM_OK) goto step_done;
        {
            adm_tensor fs, fsc;
            adm_tensor_slice(&fmod, 1, 0, D, 1, &fs);
            adm_tensor_slice(&fmod, 1, D, 2 * D, 1, &fsc);
            if ((st = call(c, ADM_TOY_NORM, &x, NULL, NULL, &fs, &fsc, &h)) != ADM_OK) goto step_done;
        }
        if ((st = call(c, ADM_TOY_FINAL, &h, &t->w_out, &t->b_out, NULL, NULL, &v)) != ADM_OK) goto step_done;
        /* Euler: z + (t_next - t) v in fp32, rounded to bf16 */
        {
            float dt = (float)(tnext - tcur);
            uint16_t *zp = z.data;
            const uint16_t *vp = v.data;
            for (int64_t i = 0; i < T * Cl; i++) zp[i] = adm_bf16_from_f32(adm_bf16_to_f32(zp[i]) + dt * adm_bf16_to_f32(vp[i]));
            if (trace) adm_tensor_to_f64(&z, trace->latent + (int64_t)step * trace->latent_size);
        }
    step_done:
        adm_tensor_free(&fmod);
        adm_tensor_free(&h);
        adm_tensor_free(&v);
        adm_tensor_free(&x);
        adm_tensor_free(&sc);
        adm_tensor_free(&cvec);
    }
    if (st) goto done;
    if (!(zd = malloc(sizeof *zd * (size_t)(T * Cl)))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
        goto done;
    }
    adm_tensor_to_f64(&z, zd);
    st = decode(t, zd, img);
done:
    free(zd);
    free(buf);
    adm_tensor_free(&z);
    if (st && trace) adm_toy_trace_free(trace);
    return st;
}

ADM_FPENV_BODY
static adm_status toy_run_body(const adm_toy *t, const adm_toy_tier *tier, int tp, adm_image *img,
                               adm_toy_trace *trace)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    memset(img, 0, sizeof *img);
    if (tp != 1 && tp != 2) return ADM_FAIL(ADM_ERR_INVALID, "toy: tp must be 1 or 2, got %d", tp);
    c.t = t;
    c.tier = tier;
    c.tp = tp;
    ADM_TRY(parse_params(&c));
    return run_bf16(&c, img, trace);
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_toy_run(const adm_toy *t, const adm_toy_tier *tier, int tp, adm_image *img, adm_toy_trace *trace)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = toy_run_body(t, tier, tp, img, trace);
    adm_fpenv_leave(&fe);
    return rv;
}

ADM_FPENV_BODY
static adm_status toy_run_rank_body(const adm_toy *t, const adm_toy_tier *tier, adm_toy_comm *comm, adm_image *img)
{
    run_ctx c;
    memset(&c, 0, sizeof c);
    memset(img, 0, sizeof *img);
    c.t = t;
    c.tier = tier;
    c.tp = comm->world;
    c.comm = comm;
    ADM_TRY(parse_params(&c));
    return run_bf16(&c, img, NULL);
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_toy_run_rank(const adm_toy *t, const adm_toy_tier *tier, adm_toy_comm *comm, adm_image *img)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = toy_run_rank_body(t, tier, comm, img);
    adm_fpenv_leave(&fe);
    return rv;
}

/* ---------------------------------------------------------------- the fp64 run */

/* y [M, N] = x [M, K] w^T + b, w a [N, K] tensor: fp64, sequential sums. */
static adm_status f64_linear(const double *x, int64_t M, int64_t K, const adm_tensor *w, const adm_tensor *b, double *y)
{
    int64_t N = w->shape[0];
    double *wd = malloc(sizeof *wd * (size_t)(N * K + N));
    if (!wd) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    adm_tensor_to_f64(w, wd);
    adm_tensor_to_f64(b, wd + N * K);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += x[i * K + k] * wd[j * K + k];
            y[i * N + j] = acc + wd[N * K + j];
        }
    free(wd);
    return ADM_OK;
}

/* LayerNorm without affine (population variance, eps inside the root),
 * then y (1 + scale) + shift. */
static void f64_norm_mod(const double *x, int64_t M, int64_t D, const double *shift, const double *scale, double *y)
{
    for (int64_t i = 0; i < M; i++) {
        double mu = 0, var = 0;
        for (int64_t k = 0; k < D; k++) mu += x[i * D + k];
        mu /= (double)D;
        for (int64_t k = 0; k < D; k++) var += (x[i * D + k] - mu) * (x[i * D + k] - mu);
        var /= (double)D;
        for (int64_t k = 0; k < D; k++)
            y[i * D + k] = (x[i * D + k] - mu) / sqrt(var + 1e-6) * (1 + scale[k]) + shift[k];
    }
}

static void f64_rmsnorm(double *x, int64_t rows, int64_t n, const double *w)
{
    for (int64_t r = 0; r < rows; r++) {
        double ms = 0;
        for (int64_t k = 0; k < n; k++) ms += x[r * n + k] * x[r * n + k];
        ms = 1 / sqrt(ms / (double)n + 1e-6);
        for (int64_t k = 0; k < n; k++) x[r * n + k] = x[r * n + k] * ms * w[k];
    }
}

static double gelu_tanh(double v) { return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); }

ADM_FPENV_BODY
static adm_status toy_run_f64_body(const adm_toy *t, adm_image *img, adm_toy_trace *trace)
{
    int64_t T = t->T, D = t->D, Cl = t->Cl, H = t->H, hd = t->hd, F = t->F;
    size_t need = (size_t)(T * Cl + 6 * T * D + 3 * T * D + T * F + T + 64 * D + 4 * hd + T * D);
    double *mem = malloc(sizeof *mem * need);
    double *z, *x, *h, *qkv, *a, *o, *f, *s, *cv, *sc, *mod, *fmod, *pos, *wq, *wk, *v, *te;
    int depth = 0;
    adm_status st = ADM_OK;
    memset(img, 0, sizeof *img);
    if (!mem) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    if (trace && (st = trace_alloc(t, trace)) != ADM_OK) {
        free(mem);
        return st;
    }
    z = mem;
    x = z + T * Cl;
    h = x + T * D;
    o = h + T * D;
    a = o + T * D;
    v = a + T * D;         /* T * Cl <= T * D is not assumed: v gets its own T * D */
    pos = v + T * D;
    qkv = pos + T * D;
    f = qkv + 3 * T * D;
    s = f + T * F;
    cv = s + T;
    sc = cv + D;
    te = sc + D;
    mod = te + D;
    fmod = mod + 6 * D;
    wq = fmod + 2 * D;
    wk = wq + hd;
    if (Cl > D) {
        st = ADM_FAIL(ADM_ERR_INVALID, "toy: latent channels (%lld) above hidden (%lld)", (long long)Cl, (long long)D);
        goto done;
    }
    adm_tensor_to_f64(&t->noise, z);
    adm_tensor_to_f64(&t->pos, pos);
    for (int step = 0; step < t->c.steps; step++) {
        double tcur = 1.0 - (double)step / t->c.steps, tnext = 1.0 - (double)(step + 1) / t->c.steps;
        timestep_embedding(D, tcur, te);
        if ((st = f64_linear(te, 1, D, &t->w_t, &t->b_t, cv))) goto done;
        for (int64_t k = 0; k < D; k++) sc[k] = cv[k] / (1 + exp(-cv[k]));
        if ((st = f64_linear(z, T, Cl, &t->w_in, &t->b_in, x))) goto done;
        for (int64_t i = 0; i < T * D; i++) x[i] += pos[i];
        for (int b = 0; b < t->c.blocks; b++) {
            const adm_tensor *w = t->blk + (size_t)b * NB_W;
            if ((st = f64_linear(sc, 1, D, &w[B_MOD_W], &w[B_MOD_B], mod))) goto done;
            adm_tensor_to_f64(&w[B_QN], wq);
            adm_tensor_to_f64(&w[B_KN], wk);
            f64_norm_mod(x, T, D, mod, mod + D, h);
            if ((st = f64_linear(h, T, D, &w[B_QKV_W], &w[B_QKV_B], qkv))) goto done;
            /* q and k per head, normalized in place inside qkv's rows */
            for (int64_t i = 0; i < T; i++)
                for (int64_t hh = 0; hh < H; hh++) {
                    f64_rmsnorm(qkv + i * 3 * D + hh * hd, 1, hd, wq);
                    f64_rmsnorm(qkv + i * 3 * D + D + hh * hd, 1, hd, wk);
                }
            for (int64_t hh = 0; hh < H; hh++)
                for (int64_t i = 0; i < T; i++) {
                    double m = -INFINITY, l = 0, acc[1024];
                    for (int64_t j = 0; j < T; j++) {
                        double dot = 0;
                        for (int64_t e = 0; e < hd; e++) dot += qkv[i * 3 * D + hh * hd + e] * qkv[j * 3 * D + D + hh * hd + e];
                        s[j] = dot / sqrt((double)hd);
                        m = fmax(m, s[j]);
                    }
                    for (int64_t e = 0; e < hd; e++) acc[e] = 0;
                    for (int64_t j = 0; j < T; j++) {
                        double p = exp(s[j] - m);
                        l += p;
                        for (int64_t e = 0; e < hd; e++) acc[e] += p * qkv[j * 3 * D + 2 * D + hh * hd + e];
                    }
                    for (int64_t e = 0; e < hd; e++) a[i * D + hh * hd + e] = acc[e] / l;
                }
            if ((st = f64_linear(a, T, D, &w[B_O_W], &w[B_O_B], o))) goto done;
            for (int64_t i = 0; i < T * D; i++) x[i] += mod[2 * D + i % D] * o[i];
            f64_norm_mod(x, T, D, mod + 3 * D, mod + 4 * D, h);
            if ((st = f64_linear(h, T, D, &w[B_1_W], &w[B_1_B], f))) goto done;
            for (int64_t i = 0; i < T * F; i++) f[i] = gelu_tanh(f[i]);
            if ((st = f64_linear(f, T, F, &w[B_2_W], &w[B_2_B], o))) goto done;
            for (int64_t i = 0; i < T * D; i++) x[i] += mod[5 * D + i % D] * o[i];
            if (trace) memcpy(trace->hidden + (int64_t)depth * trace->hidden_size, x, sizeof *x * (size_t)(T * D));
            depth++;
        }
        if ((st = f64_linear(sc, 1, D, &t->w_fmod, &t->b_fmod, fmod))) goto done;
        f64_norm_mod(x, T, D, fmod, fmod + D, h);
        if ((st = f64_linear(h, T, D, &t->w_out, &t->b_out, v))) goto done;
        for (int64_t i = 0; i < T * Cl; i++) z[i] += (tnext - tcur) * v[i];
        if (trace) memcpy(trace->latent + (int64_t)step * trace->latent_size, z, sizeof *z * (size_t)(T * Cl));
    }
    st = decode(t, z, img);
done:
    free(mem);
    if (st && trace) adm_toy_trace_free(trace);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_toy_run_f64(const adm_toy *t, adm_image *img, adm_toy_trace *trace)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = toy_run_f64_body(t, img, trace);
    adm_fpenv_leave(&fe);
    return rv;
}

adm_status adm_toy_trace_error(const adm_toy_trace *tr, const adm_toy_trace *ref, int latent, double *err)
{
    int n = latent ? tr->n_latent : tr->n_hidden;
    int64_t size = latent ? tr->latent_size : tr->hidden_size;
    const double *S = latent ? tr->latent : tr->hidden, *R = latent ? ref->latent : ref->hidden;
    if (n != (latent ? ref->n_latent : ref->n_hidden) || size != (latent ? ref->latent_size : ref->hidden_size) || !S || !R)
        return ADM_FAIL(ADM_ERR_SHAPE, "toy: the traces differ in shape");
    for (int k = 0; k < n; k++) {
        const double *s = S + (int64_t)k * size, *r = R + (int64_t)k * size;
        /* Neumaier sums of the squares */
        double e = 0, ec = 0, q = 0, qc = 0;
        for (int64_t i = 0; i < size; i++) {
            double d = s[i] - r[i], v = d * d, t2 = e + v;
            ec += fabs(e) >= v ? (e - t2) + v : (v - t2) + e;
            e = t2;
            v = r[i] * r[i];
            t2 = q + v;
            qc += fabs(q) >= v ? (q - t2) + v : (v - t2) + q;
            q = t2;
        }
        err[k] = (q + qc) > 0 ? sqrt((e + ec) / (q + qc)) : (e + ec > 0 ? INFINITY : 0);
    }
    return ADM_OK;
}
