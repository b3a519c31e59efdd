/* admit-kernel drift: the end-to-end gate. Arms from files (PNG, HDF5) or
 * from the built-in toy DiT; pairs from the command line or a spec. */
#include "cli.h"
#include "dist.h"
#include "adm_drift.h"
#include "adm_toy.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char drift_usage[] =
    "usage: admit-kernel drift [ARMS AND PAIRS | --spec FILE | --toy [TOY OPTIONS]] [OUTPUTS]\n"
    "\n"
    "Compares arms (images, videos, latents) by PSNR, SSIM (scikit-image's definitions)\n"
    "and mean absolute difference. Controls must be bit-identical; band pairs (the\n"
    "reference path in two legal environments, TP1 against TP2) set the band; each tier\n"
    "comparison must sit inside the band (PSNR at least the band's) and above the\n"
    "floors (images PSNR 28 dB / SSIM 0.95, video 24 / 0.92). A high claim is judged on\n"
    "the floors alone.\n"
    "\n"
    "arms and pairs:\n"
    "  --arm NAME=SRC       SRC: a.png, x.h5:/dataset, or several separated by commas\n"
    "                       (the frames of a video); an HDF5 dataset may also hold a frame axis\n"
    "  --control A:B        must be bit-identical\n"
    "  --band A:B           the reference path in two environments (the band is the widest)\n"
    "  --compare A:B[@TIER] a tier comparison; TIER lossless (default) or high\n"
    "  --spec FILE          arms and pairs from a JSON spec (README: the drift spec)\n"
    "  --data-range R       the value range for PSNR and SSIM (default: the arms' integer\n"
    "                       range, 255 for 8-bit; float arms need it)\n"
    "  --layout L           HDF5 layout when the dataset has no 'layout' attribute:\n"
    "                       HW, HWC, CHW, FHW, FHWC, FCHW\n"
    "  --video, --image     the kind (default: video when an arm has several frames)\n"
    "  --psnr-floor DB, --ssim-floor S   override the kind's floors\n"
    "  --band-tolerance DB  inside the band means PSNR >= the band's - DB (default 0: strict);\n"
    "                       for measurement noise that was measured (bench/results)\n"
    "the toy DiT (no model to download):\n"
    "  --toy                run the toy's arms and print the seed's table, with compounding\n"
    "  --table FILE         the fusion table the tiers come from (default fusions/toy.json: here, beside\n"
    "                       the executable's folder, or installed in share/admit/fusions)\n"
    "  --mount SITE=IMPL    mount IMPL at SITE in the lossless tier (admit-kernel drift --toy --sites)\n"
    "  --high ENTRY[@SITE]  the high-tier fusion (default flux2_nvfp4_fc1_swiglu_quant)\n"
    "  --blocks N, --steps N, --grid G, --seed S   the toy's size (3, 4, 16, 1)\n"
    "  --depth N            compounding: N blocks layer by layer, N steps step by step (16)\n"
    "  --tp2 MODE           emulated (both ranks in one process, the default), processes (two\n"
    "                       processes over pipes), nccl (two GPUs, one process each: cuBLAS\n"
    "                       partials and an NCCL all-reduce; the TP1 arms on GPU 0)\n"
    "  --save-arms DIR      write the toy's arms as PNG files\n"
    "  --sites              list the toy's sites and their ops\n"
    "outputs:\n"
    "  --markdown           print a Markdown summary instead of the table\n"
    "  --json FILE          the data\n"
    "  --history FILE       append tonight's row (JSON lines)\n"
    "  --html DIR           a page with the plots and images\n"
    "  --date D, --commit C, --title T   provenance (default: today, git rev-parse HEAD)\n"
    "under mpirun or srun the pairs of arms read from files are compared over the ranks\n"
    "(each reads its pairs' files again; --toy runs on rank 0), and rank 0 writes what\n"
    "one process would:\n"
    ADM_CLI_MPI_HELP
    "\n"
    "exit status: 0 every comparison passes; 1 a comparison fails its claim (or a\n"
    "control differs, or a tier compounds faster than the reference); 2 bad input\n";

typedef struct pending_pair {
    char *a, *b;
    adm_drift_role role;
    adm_tier claim;
} pending_pair;

static int parse_pair(const char *opt, const char *v, adm_drift_role role, pending_pair *out)
{
    const char *colon = strchr(v, ':'), *at = strchr(v, '@');
    out->role = role;
    out->claim = ADM_TIER_LOSSLESS;
    if (!colon || colon == v || !colon[1] || (at && (at < colon || at == colon + 1)))
        return adm_cli_usage_error("%s: expected A:B%s, got '%s'", opt, role == ADM_DRIFT_TIER ? "[@TIER]" : "", v);
    if (at) {
        if (role != ADM_DRIFT_TIER) return adm_cli_usage_error("%s: only --compare takes @TIER, got '%s'", opt, v);
        if (adm_tier_from_name(at + 1, &out->claim) != ADM_OK || out->claim == ADM_TIER_EXACT)
            return adm_cli_usage_error("%s: TIER must be lossless or high (an exact pair is a --control), got '%s'", opt,
                                       at + 1);
    }
    out->a = malloc((size_t)(colon - v) + 1);
    out->b = adm_strdup(colon + 1);
    if (!out->a || !out->b) return adm_cli_usage_error("out of memory");
    memcpy(out->a, v, (size_t)(colon - v));
    out->a[colon - v] = '\0';
    if (at) out->b[at - colon - 1] = '\0';
    return ADM_EXIT_OK;
}

/* The commit of the working directory's checkout, or "unknown". */
static void current_commit(char *buf, size_t n)
{
    const char *env = getenv("ADM_COMMIT");
    FILE *p;
    snprintf(buf, n, "unknown");
    if (env && *env) {
        snprintf(buf, n, "%s", env);
        return;
    }
    if ((p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r"))) {
        char line[128];
        if (fgets(line, sizeof line, p)) {
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0]) snprintf(buf, n, "%s", line);
        }
        pclose(p);
    }
}

enum {
    O_ARM = 256, O_CONTROL, O_BAND, O_COMPARE, O_SPEC, O_RANGE, O_LAYOUT, O_VIDEO, O_IMAGE, O_PFLOOR, O_SFLOOR, O_BTOL, O_DEPTH, O_TOY,
    O_TABLE, O_MOUNT, O_HIGH, O_BLOCKS, O_STEPS, O_GRID, O_SEED, O_TP2, O_SAVE, O_SITES, O_MD, O_JSON, O_HISTORY,
    O_HTML, O_DATE, O_COMMIT, O_TITLE, O_HELP, O_UTIMEOUT
};

static const struct option drift_opts[] = {
    {"arm", required_argument, 0, O_ARM},          {"control", required_argument, 0, O_CONTROL},
    {"band", required_argument, 0, O_BAND},        {"compare", required_argument, 0, O_COMPARE},
    {"spec", required_argument, 0, O_SPEC},        {"data-range", required_argument, 0, O_RANGE},
    {"layout", required_argument, 0, O_LAYOUT},    {"video", no_argument, 0, O_VIDEO},
    {"image", no_argument, 0, O_IMAGE},            {"psnr-floor", required_argument, 0, O_PFLOOR},
    {"ssim-floor", required_argument, 0, O_SFLOOR}, {"toy", no_argument, 0, O_TOY},
    {"band-tolerance", required_argument, 0, O_BTOL}, {"depth", required_argument, 0, O_DEPTH},
    {"table", required_argument, 0, O_TABLE},      {"mount", required_argument, 0, O_MOUNT},
    {"high", required_argument, 0, O_HIGH},        {"blocks", required_argument, 0, O_BLOCKS},
    {"steps", required_argument, 0, O_STEPS},      {"grid", required_argument, 0, O_GRID},
    {"seed", required_argument, 0, O_SEED},        {"tp2", required_argument, 0, O_TP2},
    {"save-arms", required_argument, 0, O_SAVE},   {"sites", no_argument, 0, O_SITES},
    {"markdown", no_argument, 0, O_MD},            {"json", required_argument, 0, O_JSON},
    {"history", required_argument, 0, O_HISTORY},  {"html", required_argument, 0, O_HTML},
    {"date", required_argument, 0, O_DATE},        {"commit", required_argument, 0, O_COMMIT},
    {"title", required_argument, 0, O_TITLE},      {"help", no_argument, 0, O_HELP},
    {"unit-timeout", required_argument, 0, O_UTIMEOUT},
    {0, 0, 0, 0}};

typedef struct drift_args {
    char **arm_names, **arm_srcs;
    int n_arms;
    pending_pair *pairs;
    int n_pairs;
    const char *spec, *layout, *json, *history, *html, *date, *commit, *title, *save;
    double range, pfloor, sfloor, btol;
    int video; /* -1 auto */
    int markdown, toy, sites;
    adm_toy_options toy_opt;
} drift_args;

static void free_args(drift_args *a)
{
    for (int i = 0; i < a->n_arms; i++) {
        free(a->arm_names[i]);
        free(a->arm_srcs[i]);
    }
    for (int i = 0; i < a->n_pairs; i++) {
        free(a->pairs[i].a);
        free(a->pairs[i].b);
    }
    free(a->arm_names);
    free(a->arm_srcs);
    free(a->pairs);
    adm_toy_options_free(&a->toy_opt);
}

static int parse_args(int argc, char **argv, drift_args *a)
{
    int c, rc, first = argc;
    int64_t iv;
    const char *v;
    memset(a, 0, sizeof *a);
    a->pfloor = a->sfloor = NAN;
    a->video = -1;
    adm_toy_options_default(&a->toy_opt);
    while ((c = adm_cli_getopt(argc, argv, "drift", drift_opts, &v, &first)) != -1) {
        switch (c) {
        case -2: return ADM_EXIT_INPUT;
        case O_ARM: {
            const char *eq = v ? strchr(v, '=') : NULL;
            char **n1, **n2;
            if (!eq || eq == v || !eq[1]) return adm_cli_usage_error("--arm: expected NAME=SRC, got '%s'", v);
            n1 = realloc(a->arm_names, sizeof *n1 * (size_t)(a->n_arms + 1));
            if (n1) a->arm_names = n1;
            n2 = realloc(a->arm_srcs, sizeof *n2 * (size_t)(a->n_arms + 1));
            if (n2) a->arm_srcs = n2;
            if (!n1 || !n2) return adm_cli_usage_error("out of memory");
            a->arm_names[a->n_arms] = malloc((size_t)(eq - v) + 1);
            a->arm_srcs[a->n_arms] = adm_strdup(eq + 1);
            if (!a->arm_names[a->n_arms] || !a->arm_srcs[a->n_arms]) return adm_cli_usage_error("out of memory");
            memcpy(a->arm_names[a->n_arms], v, (size_t)(eq - v));
            a->arm_names[a->n_arms][eq - v] = '\0';
            a->n_arms++;
            break;
        }
        case O_CONTROL: case O_BAND: case O_COMPARE: {
            pending_pair *p = realloc(a->pairs, sizeof *p * (size_t)(a->n_pairs + 1));
            if (!p) return adm_cli_usage_error("out of memory");
            a->pairs = p;
            memset(&p[a->n_pairs], 0, sizeof *p);
            a->n_pairs++;
            rc = parse_pair(c == O_CONTROL ? "--control" : c == O_BAND ? "--band" : "--compare", v,
                            c == O_CONTROL ? ADM_DRIFT_CONTROL : c == O_BAND ? ADM_DRIFT_BAND : ADM_DRIFT_TIER,
                            &p[a->n_pairs - 1]);
            if (rc) return rc;
            break;
        }
        case O_SPEC: a->spec = v; break;
        case O_RANGE:
            if (!adm_cli_parse_f64(v, &a->range) || !(a->range > 0))
                return adm_cli_usage_error("--data-range: expected a positive number, got '%s'", v);
            break;
        case O_LAYOUT: a->layout = v; break;
        case O_VIDEO: a->video = 1; break;
        case O_IMAGE: a->video = 0; break;
        case O_PFLOOR:
            if (!adm_cli_parse_f64(v, &a->pfloor) || a->pfloor < 0)
                return adm_cli_usage_error("--psnr-floor: expected a number of dB >= 0, got '%s'", v);
            break;
        case O_SFLOOR:
            if (!adm_cli_parse_f64(v, &a->sfloor) || a->sfloor < -1 || a->sfloor > 1)
                return adm_cli_usage_error("--ssim-floor: expected a number in [-1, 1], got '%s'", v);
            break;
        case O_BTOL:
            if (!adm_cli_parse_f64(v, &a->btol) || a->btol < 0 || a->btol > 100)
                return adm_cli_usage_error("--band-tolerance: expected dB in [0, 100], got '%s'", v);
            break;
        case O_DEPTH:
            if (!adm_cli_parse_i64(v, 2, 64, &iv)) return adm_cli_usage_error("--depth: expected an integer in 2..64, got '%s'", v);
            a->toy_opt.depth = (int)iv;
            break;
        case O_TOY: a->toy = 1; break;
        case O_TABLE: a->toy_opt.table = v; break;
        case O_MOUNT:
            if (adm_toy_options_add_mount(&a->toy_opt, v) != ADM_OK) {
                adm_error_prefix("--mount: ");
                return adm_cli_fail();
            }
            break;
        case O_HIGH: a->toy_opt.high = v; break;
        case O_BLOCKS: case O_STEPS: case O_GRID:
            if (!adm_cli_parse_i64(v, 1, c == O_GRID ? 64 : 64, &iv))
                return adm_cli_usage_error("--%s: expected an integer in 1..64, got '%s'",
                                           c == O_BLOCKS ? "blocks" : c == O_STEPS ? "steps" : "grid", v);
            if (c == O_BLOCKS) a->toy_opt.config.blocks = (int)iv;
            else if (c == O_STEPS) a->toy_opt.config.steps = (int)iv;
            else a->toy_opt.config.grid = (int)iv;
            break;
        case O_SEED:
            if (!adm_cli_parse_i64(v, 0, INT64_MAX, &iv)) return adm_cli_usage_error("--seed: expected an integer >= 0, got '%s'", v);
            a->toy_opt.config.seed = (uint64_t)iv;
            break;
        case O_TP2:
            if (!strcmp(v, "emulated")) a->toy_opt.tp2 = ADM_TOY_TP2_EMULATED;
            else if (!strcmp(v, "processes")) a->toy_opt.tp2 = ADM_TOY_TP2_PROCESSES;
            else if (!strcmp(v, "nccl")) a->toy_opt.tp2 = ADM_TOY_TP2_NCCL;
            else return adm_cli_usage_error("--tp2: expected emulated, processes or nccl, got '%s'", v);
            break;
        case O_SAVE: a->save = v; break;
        case O_SITES: a->sites = 1; break;
        case O_MD: a->markdown = 1; break;
        case O_JSON: a->json = v; break;
        case O_HISTORY: a->history = v; break;
        case O_HTML: a->html = v; break;
        case O_DATE: a->date = v; break;
        case O_COMMIT: a->commit = v; break;
        case O_TITLE: a->title = v; break;
        case O_UTIMEOUT:
            if ((rc = adm_cli_set_unit_timeout(v)) != ADM_EXIT_OK) return rc;
            break;
        case 'h': case O_HELP: if (adm_dist_rank() == 0) fputs(drift_usage, stdout); return -1;
        default: return adm_cli_usage_error("drift: unknown option (admit-kernel drift --help)");
        }
    }
    if (first < argc) return adm_cli_usage_error("drift: unexpected argument '%s'", argv[first]);
    if (a->sites) return ADM_EXIT_OK;
    if (!a->toy && !a->spec && a->n_arms == 0)
        return adm_cli_usage_error("drift: give arms (--arm NAME=SRC), a --spec, or --toy (admit-kernel drift --help)");
    if (!a->toy && !a->spec && a->n_pairs == 0)
        return adm_cli_usage_error("drift: name at least one pair (--control, --band or --compare A:B)");
    if (a->toy && (a->spec || a->n_arms))
        return adm_cli_usage_error("drift: --toy makes its own arms; leave out --arm and --spec");
    if (a->save && !a->toy) return adm_cli_usage_error("drift: --save-arms goes with --toy");
    return ADM_EXIT_OK;
}

static void drift_progress(int k, int n, const char *what, void *user)
{
    (void)user;
    adm_cli_progress(k, n, what);
}

/* Over the ranks of an MPI job (cli/dist.h): a unit is one pair of arms
 * read from files; the rank that compares it reads both files again (from
 * a shared file system) and sends back the metrics, which rank 0 takes in
 * place of its own comparison. A pair that cannot be compared elsewhere is
 * compared on rank 0, which has every arm (its reports draw them). */
#define ARM_CACHE 2
static struct cached_arm {
    char *source, *layout;
    adm_image img;
    int used;
} arm_cache[ARM_CACHE];
static int arm_clock;

static void arm_cache_release(void)
{
    for (int i = 0; i < ARM_CACHE; i++) {
        free(arm_cache[i].source);
        free(arm_cache[i].layout);
        adm_image_free(&arm_cache[i].img);
        memset(&arm_cache[i], 0, sizeof arm_cache[i]);
    }
}

static int same_text(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* An arm, read once for consecutive pairs that share it (a reference
 * against several tiers); keep is the slot the pair's other arm holds. */
static const adm_image *arm_get(const char *source, const char *layout, int keep, int *slot)
{
    int k = -1;
    for (int i = 0; i < ARM_CACHE; i++)
        if (arm_cache[i].source && !strcmp(arm_cache[i].source, source) && same_text(arm_cache[i].layout, layout)) k = i;
    if (k < 0) {
        for (int i = 0; i < ARM_CACHE; i++)
            if (i != keep && (k < 0 || arm_cache[i].used < arm_cache[k].used)) k = i;
        free(arm_cache[k].source);
        free(arm_cache[k].layout);
        adm_image_free(&arm_cache[k].img);
        memset(&arm_cache[k], 0, sizeof arm_cache[k]);
        if (adm_image_load(source, layout, &arm_cache[k].img) != ADM_OK) return NULL;
        arm_cache[k].source = adm_strdup(source);
        arm_cache[k].layout = layout ? adm_strdup(layout) : NULL;
        if (!arm_cache[k].source || (layout && !arm_cache[k].layout)) {
            adm_image_free(&arm_cache[k].img);
            return NULL;
        }
    }
    arm_cache[k].used = ++arm_clock;
    *slot = k;
    return &arm_cache[k].img;
}

static void pair_unit_run(const unsigned char *desc, size_t len, adm_dist_buf *out)
{
    adm_dist_buf in = {(unsigned char *)desc, len, len, 0, 0, 0};
    const char *sa = adm_dist_get_str(&in), *la = adm_dist_get_str(&in), *sb = adm_dist_get_str(&in),
               *lb = adm_dist_get_str(&in);
    double r;
    const adm_image *a = NULL, *b = NULL;
    adm_drift_metrics m;
    int ka = -1, kb = -1;
    adm_status st;
    adm_dist_get(&in, &r, sizeof r);
    memset(&m, 0, sizeof m);
    if (in.failed || !sa || !sb) st = ADM_FAIL(ADM_ERR_INTERNAL, "the pair did not arrive whole");
    else if (!(a = arm_get(sa, la, -1, &ka)) || !(b = arm_get(sb, lb, ka, &kb))) st = adm_error_code();
    else st = adm_drift_compare(a, b, r, NULL, &m);
    adm_dist_put_i64(out, st);
    adm_dist_put(out, &m, sizeof m);
}

typedef struct drift_job {
    adm_drift *d;
    int *pair;            /* unit -> pair */
} drift_job;

static void pair_unit_describe(void *ctx, int u, adm_dist_buf *out)
{
    drift_job *j = ctx;
    const adm_drift_pair *p = adm_drift_pair_at(j->d, j->pair[u]);
    const char *sa = NULL, *la = NULL, *sb = NULL, *lb = NULL;
    double r = 0;
    adm_drift_arm_files(j->d, p->a, &sa, &la);
    adm_drift_arm_files(j->d, p->b, &sb, &lb);
    adm_drift_pair_range(j->d, j->pair[u], &r);
    adm_dist_put_str(out, sa);
    adm_dist_put_str(out, la);
    adm_dist_put_str(out, sb);
    adm_dist_put_str(out, lb);
    adm_dist_put(out, &r, sizeof r);
}

static void pair_unit_done(void *ctx, int u, adm_dist_buf *b)
{
    drift_job *j = ctx;
    adm_drift_metrics m;
    int64_t st = adm_dist_get_i64(b);
    adm_dist_get(b, &m, sizeof m);
    /* a pair that failed elsewhere is compared again on rank 0, which
     * then gives the error one process would */
    if (!b->failed && st == ADM_OK) adm_drift_set_metrics(j->d, j->pair[u], &m);
}

static int pair_unit_lost(void *ctx, int u, const char *why)
{
    (void)ctx;
    (void)u;
    (void)why;
    return 1; /* compared on rank 0 */
}

static void pair_unit_name(void *ctx, int u, char *buf, size_t n)
{
    drift_job *j = ctx;
    snprintf(buf, n, "pair '%s'", adm_cli_text(adm_drift_pair_at(j->d, j->pair[u])->name));
}

static void pairs_progress(int done, int n, const char *name) { adm_cli_progress(done, n, name); }

static const adm_dist_ops pair_ops = {pair_unit_describe, pair_unit_run, pair_unit_done, pair_unit_lost, NULL,
                                      pair_unit_name, arm_cache_release};

/* Rank 0: the pairs whose arms came from files compared over the ranks. */
static adm_status compare_distributed(adm_drift *d)
{
    drift_job j;
    int n = 0, np = adm_drift_pair_count(d);
    int64_t *size;
    ADM_TRY(adm_drift_check_compared(d));
    j.d = d;
    j.pair = calloc((size_t)np + 1, sizeof *j.pair);
    size = calloc((size_t)np + 1, sizeof *size);
    if (!j.pair || !size) {
        free(j.pair);
        free(size);
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < np; i++) {
        const adm_drift_pair *p = adm_drift_pair_at(d, i);
        const char *s, *l;
        double r;
        if (!adm_drift_arm_files(d, p->a, &s, &l) || !adm_drift_arm_files(d, p->b, &s, &l)) continue;
        if (adm_drift_pair_range(d, i, &r) != ADM_OK) { /* adm_drift_evaluate says so */
            adm_error_clear();
            continue;
        }
        size[n] = adm_image_numel(adm_drift_arm(d, p->a, NULL));
        j.pair[n++] = i;
    }
    adm_dist_run(&pair_ops, &j, n, size, pairs_progress);
    adm_cli_progress_done();
    free(j.pair);
    free(size);
    return ADM_OK;
}

int adm_cmd_drift(int argc, char **argv)
{
    drift_args a;
    adm_drift *d = NULL;
    char date[32], commit[128];
    int rc = parse_args(argc, argv, &a);
    if (rc) {
        free_args(&a);
        return rc < 0 ? ADM_EXIT_OK : rc;
    }
    if (adm_dist_rank() > 0) {
        /* the other ranks of an MPI job compare the pairs rank 0 hands
         * them (none with --toy, whose arms rank 0 makes alone) */
        rc = adm_dist_serve(a.toy || a.sites ? NULL : &pair_ops);
        free_args(&a);
        return rc;
    }
    if (a.sites) {
        adm_toy_print_sites(stdout);
        free_args(&a);
        return ADM_EXIT_OK;
    }
    if (adm_drift_create(a.title ? a.title : a.toy ? NULL : "admit drift", &d) != ADM_OK) goto fail;
    /* progress on stderr when it is a terminal, as table shows it */
    adm_drift_set_progress(d, drift_progress, NULL);
    a.toy_opt.progress = drift_progress;
    if (a.spec && adm_drift_load_spec(d, a.spec) != ADM_OK) goto fail;
    if (a.n_arms &&
        adm_drift_load_arms(d, a.n_arms, (const char *const *)a.arm_names, (const char *const *)a.arm_srcs, a.layout) !=
            ADM_OK)
        goto fail;
    if (a.toy) {
        if (adm_toy_drift(&a.toy_opt, d, a.title == NULL) != ADM_OK) goto fail;
        if (a.save && adm_toy_save_arms(d, a.save) != ADM_OK) goto fail;
    }
    for (int i = 0; i < a.n_pairs; i++)
        if (adm_drift_add_pair(d, NULL, a.pairs[i].role, a.pairs[i].claim, a.pairs[i].a, a.pairs[i].b) != ADM_OK) goto fail;
    if (a.range > 0) adm_drift_set_data_range(d, a.range);
    if (a.video >= 0) adm_drift_set_video(d, a.video);
    adm_drift_set_floors(d, a.pfloor, a.sfloor);
    if (a.btol > 0) adm_drift_set_band_tolerance(d, a.btol);
    {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof date, "%Y-%m-%d", &tm);
    }
    if (a.commit) snprintf(commit, sizeof commit, "%s", a.commit);
    else current_commit(commit, sizeof commit);
    adm_drift_set_provenance(d, a.date ? a.date : date, commit);
    if (adm_dist_active() && compare_distributed(d) != ADM_OK) goto fail;
    if (adm_drift_evaluate(d) != ADM_OK) goto fail;
    adm_cli_progress_done();
    adm_drift_set_terminal(d, adm_cli_term_width(), adm_cli_term_color());
    if (adm_dist_note()[0]) {
        char note[4200];
        fprintf(stderr, "admit-kernel: %s\n", adm_dist_note());
        snprintf(note, sizeof note, "MPI: %s", adm_dist_note());
        if (adm_drift_add_note(d, note) != ADM_OK) goto fail;
    }
    if (a.markdown) adm_drift_print_markdown(d, stdout);
    else adm_drift_print(d, stdout);
    fflush(stdout);
    /* all or nothing: a failed HTML leaves no JSON, no history row, no images */
    if ((a.history || a.json || a.html) && adm_drift_write_all(d, a.json, a.history, a.html) != ADM_OK) goto fail;
    rc = adm_drift_passed(d) ? ADM_EXIT_OK : ADM_EXIT_CLAIM;
    adm_drift_free(d);
    free_args(&a);
    return rc;
fail:
    rc = adm_cli_fail();
    adm_drift_free(d);
    free_args(&a);
    return rc;
}
