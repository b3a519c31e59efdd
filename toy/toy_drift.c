/* The toy's drift report: the seed's arms and pairs, compounding against
 * fp64, TP2 over two processes (pipes or NCCL, one GPU each). */
#include "toy_internal.h"
#include "adm_fpenv.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---------------------------------------------------------------- options */

void adm_toy_options_default(adm_toy_options *o)
{
    memset(o, 0, sizeof *o);
    adm_toy_config_default(&o->config);
}

void adm_toy_options_free(adm_toy_options *o)
{
    for (int i = 0; i < o->n_mounts; i++) free(o->mounts[i]);
    free(o->mounts);
    o->mounts = NULL;
    o->n_mounts = 0;
}

adm_status adm_toy_options_add_mount(adm_toy_options *o, const char *spec)
{
    adm_toy_tier probe;
    char **m;
    adm_toy_tier_reference(&probe);
    ADM_TRY(adm_toy_tier_mount(&probe, spec)); /* refused now, not after the arms ran */
    if (!(m = realloc(o->mounts, sizeof *m * (size_t)(o->n_mounts + 1)))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    o->mounts = m;
    if (!(m[o->n_mounts] = adm_strdup(spec))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    o->n_mounts++;
    return ADM_OK;
}

/* ---------------------------------------------------------------- TP2 over processes */

static adm_status write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return ADM_FAIL(ADM_ERR_IO, "toy: a write to the peer failed: %s", strerror(errno));
        c += k;
        n -= (size_t)k;
    }
    return ADM_OK;
}

static adm_status read_all(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return ADM_FAIL(ADM_ERR_IO, "toy: a read from the peer failed: %s", strerror(errno));
        if (k == 0) return ADM_FAIL(ADM_ERR_IO, "toy: the peer closed its end (it failed)");
        c += k;
        n -= (size_t)k;
    }
    return ADM_OK;
}

adm_status adm_toy_allreduce(adm_toy_comm *comm, uint16_t *buf, int64_t n)
{
    uint16_t *other;
    adm_status st;
    if (comm->world == 1) return ADM_OK;
    if (comm->nccl) return adm_toy_nccl_allreduce_bf16(comm->nccl, buf, n);
    if (!(other = malloc(sizeof *other * (size_t)n))) return ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
    if (comm->rank == 0) {
        if ((st = write_all(comm->wr, buf, 2 * (size_t)n)) == ADM_OK) st = read_all(comm->rd, other, 2 * (size_t)n);
    } else {
        if ((st = read_all(comm->rd, other, 2 * (size_t)n)) == ADM_OK) st = write_all(comm->wr, buf, 2 * (size_t)n);
    }
    /* a + b in fp32 (exact for two bf16 values within 2^16 of each other,
     * and otherwise still correctly rounded to bf16 afterwards): the
     * correctly rounded bf16 sum, the same on both ranks */
    if (st == ADM_OK)
        for (int64_t i = 0; i < n; i++) buf[i] = adm_bf16_from_f32(adm_bf16_to_f32(buf[i]) + adm_bf16_to_f32(other[i]));
    free(other);
    return st;
}

/* A rank's result file: "OK" and the image's extents and bytes, or "ER"
 * and the message. */
static void child_report(int fd, adm_status st, const adm_image *img)
{
    if (st == ADM_OK) {
        int64_t hdr[3] = {img->height, img->width, img->channels}, n = adm_image_numel(img);
        unsigned char *px = malloc((size_t)n);
        if (px) {
            for (int64_t i = 0; i < n; i++) px[i] = (unsigned char)img->data[i];
            if (write_all(fd, "OK", 2) == ADM_OK && write_all(fd, hdr, sizeof hdr) == ADM_OK &&
                write_all(fd, px, (size_t)n) == ADM_OK) {
                free(px);
                return;
            }
            free(px);
        }
        st = adm_error_code() ? adm_error_code() : ADM_ERR_NOMEM;
    }
    {
        const char *m = adm_error_message();
        (void)write_all(fd, "ER", 2);
        (void)write_all(fd, m, strlen(m));
    }
}

static void child_main(const adm_toy *t, const adm_toy_tier *tier, adm_toy_tp2_mode mode, int world, int rank, int wr,
                       int rd, int out)
{
    adm_toy_comm comm = {rank, world, mode == ADM_TOY_TP2_NCCL, NULL, wr, rd};
    adm_image img;
    adm_status st = ADM_OK;
    memset(&img, 0, sizeof img);
    if (mode == ADM_TOY_TP2_NCCL) {
        st = adm_toy_cuda_select(rank);
        if (st == ADM_OK && world == 2) {
            unsigned char id[ADM_TOY_NCCL_ID_BYTES];
            if (rank == 0) {
                if ((st = adm_toy_nccl_unique_id(id)) == ADM_OK) st = write_all(wr, id, sizeof id);
            } else {
                st = read_all(rd, id, sizeof id);
            }
            if (st == ADM_OK) st = adm_toy_nccl_init(id, rank, world, &comm.nccl);
        }
    }
    if (st == ADM_OK) st = adm_toy_run_rank(t, tier, &comm, &img);
    child_report(out, st, &img);
    adm_image_free(&img);
    if (comm.nccl) adm_toy_nccl_free(comm.nccl);
    close(out);
    _exit(st == ADM_OK ? 0 : 1);
}

static adm_status read_result(const char *path, int rank, adm_image *img)
{
    FILE *f = fopen(path, "rb");
    char tag[2], msg[600];
    int64_t hdr[3];
    adm_status st = ADM_OK;
    memset(img, 0, sizeof *img);
    if (!f) return ADM_FAIL(ADM_ERR_IO, "toy: rank %d left no result: %s", rank, strerror(errno));
    if (fread(tag, 1, 2, f) != 2) {
        fclose(f);
        return ADM_FAIL(ADM_ERR_IO, "toy: rank %d ended without a result (killed?)", rank);
    }
    if (tag[0] == 'E') {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = '\0';
        fclose(f);
        return ADM_FAIL(ADM_ERR_CUDA, "toy: rank %d: %s", rank, msg);
    }
    if (fread(hdr, sizeof hdr, 1, f) != 1 || (st = adm_image_alloc(img, 1, hdr[0], hdr[1], hdr[2])) != ADM_OK) {
        fclose(f);
        return st ? st : ADM_FAIL(ADM_ERR_IO, "toy: rank %d: truncated result", rank);
    }
    for (int64_t i = 0; i < adm_image_numel(img); i++) {
        int c = fgetc(f);
        if (c == EOF) {
            fclose(f);
            adm_image_free(img);
            return ADM_FAIL(ADM_ERR_IO, "toy: rank %d: truncated result", rank);
        }
        img->data[i] = c;
    }
    fclose(f);
    img->data_range = 255;
    return ADM_OK;
}

/* Rank processes are ended when one fails (a peer would wait forever in
 * its all-reduce) or after this many seconds. */
#define TOY_RANK_TIMEOUT_S 600

adm_status adm_toy_run_processes(const adm_toy *t, const adm_toy_tier *tier, adm_toy_tp2_mode mode, int world,
                                 adm_image *img)
{
    int p01[2] = {-1, -1}, p10[2] = {-1, -1}, outfd[2] = {-1, -1}, alive = 0, failed = 0;
    char path[2][64];
    pid_t pid[2] = {0, 0};
    adm_image res[2];
    adm_status st = ADM_OK;
    time_t start = time(NULL);
    memset(img, 0, sizeof *img);
    memset(res, 0, sizeof res);
    if (world != 1 && world != 2) return ADM_FAIL(ADM_ERR_INVALID, "toy: world must be 1 or 2, got %d", world);
    if (mode == ADM_TOY_TP2_EMULATED) return ADM_FAIL(ADM_ERR_INVALID, "toy: the emulated TP2 runs in one process");
    if (pipe(p01) != 0 || pipe(p10) != 0) {
        st = ADM_FAIL(ADM_ERR_IO, "toy: pipe: %s", strerror(errno));
        goto done;
    }
    for (int r = 0; r < world; r++) {
        const char *tmp = getenv("TMPDIR");
        snprintf(path[r], sizeof path[r], "%s/admit-toy-XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
        if ((outfd[r] = mkstemp(path[r])) < 0) {
            st = ADM_FAIL(ADM_ERR_IO, "toy: a result file in %s: %s", path[r], strerror(errno));
            goto done;
        }
    }
    fflush(NULL);
    for (int r = 0; r < world; r++) {
        pid[r] = fork();
        if (pid[r] < 0) {
            st = ADM_FAIL(ADM_ERR_IO, "toy: fork: %s", strerror(errno));
            pid[r] = 0;
            goto done;
        }
        if (pid[r] == 0) {
#ifdef _OPENMP
            /* libgomp's thread pool does not survive fork: a parallel
             * region in the child waits for its parent's workers forever.
             * One thread gives the same bits (check_emu_digest). */
            omp_set_num_threads(1);
#endif
            /* only this rank's ends stay open, so a dead peer reads as end of file */
            close(r == 0 ? p01[0] : p01[1]);
            close(r == 0 ? p10[1] : p10[0]);
            if (world == 2) close(outfd[1 - r]);
            if (r == 0) child_main(t, tier, mode, world, 0, p01[1], p10[0], outfd[0]);
            else child_main(t, tier, mode, world, 1, p10[1], p01[0], outfd[1]);
        }
        alive++;
    }
    /* the parent's copies: a dead peer then shows as end of file */
    close(p01[0]);
    close(p01[1]);
    close(p10[0]);
    close(p10[1]);
    p01[0] = p01[1] = p10[0] = p10[1] = -1;
    while (alive > 0) {
        int status;
        pid_t w = waitpid(-1, &status, WNOHANG);
        if (w < 0 && errno != EINTR) break;
        if (w > 0) {
            for (int r = 0; r < world; r++)
                if (pid[r] == w) pid[r] = 0;
            alive--;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
        } else {
            struct timespec ts = {0, 20 * 1000 * 1000};
            if (time(NULL) - start > TOY_RANK_TIMEOUT_S) failed = 2;
            nanosleep(&ts, NULL);
        }
        if (failed)
            for (int r = 0; r < world; r++)
                if (pid[r] > 0) kill(pid[r], SIGKILL);
        if (failed == 2 && alive == 0) break;
    }
    {
        adm_status rs[2] = {ADM_OK, ADM_OK};
        char first[700] = "";
        for (int r = 0; r < world; r++) {
            rs[r] = read_result(path[r], r, &res[r]);
            if (rs[r] != ADM_OK && !first[0]) snprintf(first, sizeof first, "%s", adm_error_message());
        }
        if (failed == 2) {
            st = ADM_FAIL(ADM_ERR_IO, "toy: the ranks ran past %d s and were ended", TOY_RANK_TIMEOUT_S);
            goto done;
        }
        for (int r = 0; r < world; r++)
            if (rs[r] != ADM_OK) {
                st = ADM_FAIL(rs[r], "%s", first);
                goto done;
            }
    }
    if (world == 2 && memcmp(res[0].data, res[1].data, sizeof(double) * (size_t)adm_image_numel(&res[0])) != 0) {
        st = ADM_FAIL(ADM_ERR_INTERNAL, "toy: the two ranks decoded different images after the all-reduce");
        goto done;
    }
    *img = res[0];
    memset(&res[0], 0, sizeof res[0]);
done:
    for (int r = 0; r < 2; r++) {
        if (pid[r] > 0) {
            kill(pid[r], SIGKILL);
            waitpid(pid[r], NULL, 0);
        }
        if (outfd[r] >= 0) {
            close(outfd[r]);
            unlink(path[r]);
        }
        adm_image_free(&res[r]);
    }
    for (int k = 0; k < 2; k++) {
        if (p01[k] >= 0) close(p01[k]);
        if (p10[k] >= 0) close(p10[k]);
    }
    return st;
}

/* ---------------------------------------------------------------- the report */

/* The toy's fusion table when none is given, the first readable of:
 * fusions/toy.json in the current folder (a checkout's root); beside the
 * executable's folder (a build folder in a checkout: build/admit-kernel,
 * fusions/toy.json); in the installed data folder (bin/admit-kernel,
 * share/admit/fusions/toy.json). Never a path compiled in: that would
 * name the build machine's source folder. ADM_ERR_NOT_FOUND naming every
 * place tried and --table otherwise. */
static adm_status default_table(char *path, size_t n)
{
    static const char *const beside[2] = {"fusions/toy.json", "share/admit/fusions/toy.json"};
    char exe[4096], tried[2][4200];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    int k = 0;
    if (access("fusions/toy.json", R_OK) == 0) {
        snprintf(path, n, "fusions/toy.json");
        return ADM_OK;
    }
    if (len > 0) {
        exe[len] = '\0';
        /* the executable's folder, then its parent: /proc/self/exe has no
         * symbolic links and no . or .. in it */
        for (int up = 0; up < 2 && (slash = strrchr(exe, '/')); up++) *slash = '\0';
        for (k = 0; k < 2; k++) {
            snprintf(tried[k], sizeof tried[k], "%s/%s", exe, beside[k]);
            if (access(tried[k], R_OK) == 0) {
                if ((size_t)snprintf(path, n, "%s", tried[k]) < n) return ADM_OK;
                return ADM_FAIL(ADM_ERR_OVERFLOW, "the toy's fusion table %s: a path longer than %zu bytes; give "
                                "it with --table FILE", tried[k], n - 1);
            }
        }
    }
    return ADM_FAIL(ADM_ERR_NOT_FOUND, "the toy's fusion table is not in ./fusions/toy.json%s%s%s%s; give one "
                    "with --table FILE (the repository's fusions/toy.json)", k ? ", " : "", k ? tried[0] : "",
                    k > 1 ? " or " : "", k > 1 ? tried[1] : "");
}

#define DEFAULT_HIGH "flux2_nvfp4_fc1_swiglu_quant"

/* "fc1=fused_epilogue (flux1_ff_linear_gelu_epilogue), ..." for the sites
 * where tier differs from base. */
static void describe(const adm_toy_tier *tier, const adm_toy_tier *base, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++) {
        if (tier->impl[s] == base->impl[s]) continue;
        used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s=%s (%s)", used ? ", " : "",
                                 adm_toy_site_name((adm_toy_site)s), tier->impl[s]->name, tier->entry[s]);
        if (used >= n) break;
    }
    if (!buf[0]) snprintf(buf, n, "nothing mounted: the reference path");
}

static adm_status add_run(adm_drift *d, const char *name, adm_image *img)
{
    adm_status st = adm_drift_add_arm(d, name, img);
    adm_image_free(img);
    return st;
}

/* Compounding: each tier against fp64, layer by layer (the hidden state
 * after each block of a one-step run `depth` blocks deep) and step by step
 * (the latent after each Euler step of a one-block run `depth` steps
 * long), on at most 8 x 8 tokens of the same seed (the weights of a block
 * do not depend on the depth). */
/* Progress over the toy's runs: the arms, the fp64 run, and per group of
 * compounding the fp64 run and each tier's. */
typedef struct toy_steps {
    const adm_toy_options *o;
    int k, n;
} toy_steps;

static void step(toy_steps *ts, const char *what)
{
    if (ts->o->progress) ts->o->progress(++ts->k, ts->n, what, ts->o->progress_user);
}

static adm_status compound(const adm_toy_options *o, adm_drift *d, const adm_toy_tier *const *tiers, int n,
                           toy_steps *ts)
{
    static const char *const names[3] = {"exact (the reference path)", "lossless", "high"};
    static const char *const groups[2] = {"layers", "steps"};
    int depth = o->depth > 1 ? o->depth : 16;
    adm_status st = ADM_OK;
    for (int kind = 0; kind < 2 && st == ADM_OK; kind++) {
        adm_toy_config c = o->config;
        adm_toy *t = NULL;
        adm_toy_trace ref, tr;
        adm_image img;
        double *dep = malloc(sizeof *dep * (size_t)depth), *err = malloc(sizeof *err * (size_t)depth);
        memset(&ref, 0, sizeof ref);
        memset(&tr, 0, sizeof tr);
        if (c.grid > 8) c.grid = 8;
        c.blocks = kind ? 1 : depth;
        c.steps = kind ? depth : 1;
        if (!dep || !err) st = ADM_FAIL(ADM_ERR_NOMEM, "toy: out of memory");
        if (st == ADM_OK) st = adm_toy_create(&c, &t);
        if (st == ADM_OK) {
            char what[64];
            snprintf(what, sizeof what, "compounding by %s: the fp64 run", groups[kind]);
            step(ts, what);
        }
        if (st == ADM_OK && (st = adm_toy_run_f64(t, &img, &ref)) == ADM_OK) adm_image_free(&img);
        for (int k = 0; k < depth; k++) dep[k] = k + 1;
        for (int i = 0; i < n && st == ADM_OK; i++) {
            char what[96];
            snprintf(what, sizeof what, "compounding by %s: %s", groups[kind], names[i]);
            step(ts, what);
            if ((st = adm_toy_run(t, tiers[i], 1, &img, &tr)) != ADM_OK) {
                adm_error_prefix("compounding, %s, %s: ", groups[kind], names[i]);
                break;
            }
            adm_image_free(&img);
            if ((st = adm_toy_trace_error(&tr, &ref, kind, err)) == ADM_OK)
                st = adm_drift_add_growth(d, groups[kind], names[i], i == 0, i == 2 ? ADM_TIER_HIGH : ADM_TIER_LOSSLESS,
                                          depth, dep, err);
            adm_toy_trace_free(&tr);
        }
        adm_toy_trace_free(&ref);
        adm_toy_free(t);
        free(dep);
        free(err);
    }
    return st;
}

static adm_status arm(const adm_toy *t, const adm_toy_tier *tier, int tp, adm_toy_tp2_mode mode, adm_image *img,
                      adm_toy_trace *trace)
{
    if (mode == ADM_TOY_TP2_NCCL) return adm_toy_run_processes(t, tier, mode, tp, img);
    if (mode == ADM_TOY_TP2_PROCESSES && tp == 2) return adm_toy_run_processes(t, tier, mode, 2, img);
    return adm_toy_run(t, tier, tp, img, trace);
}

ADM_FPENV_BODY
static adm_status toy_drift_body(const adm_toy_options *o, adm_drift *d, int set_title)
{
    char found[1024];
    const char *table = o->table;
    adm_toy *t = NULL;
    adm_toy_tier ex, ll0, ll, h0, hi;
    adm_image img;
    int have_high = 1;
    adm_status st;
    char note[1200], title[300];
    const adm_toy_config *c = &o->config;
    toy_steps ts = {o, 0, 0};
    if (!table) {
        ADM_TRY(default_table(found, sizeof found));
        table = found;
    }
    if ((st = adm_toy_tier_from_table(table, ADM_TIER_EXACT, NULL, &ex)) != ADM_OK ||
        (st = adm_toy_tier_from_table(table, ADM_TIER_LOSSLESS, NULL, &ll0)) != ADM_OK)
        return st;
    st = adm_toy_tier_from_table(table, ADM_TIER_HIGH, o->high ? o->high : DEFAULT_HIGH, &h0);
    if (st == ADM_ERR_NOT_FOUND && !o->high) {
        have_high = 0;
        adm_error_clear();
    } else if (st != ADM_OK) {
        return st;
    }
    if (o->tp2 == ADM_TOY_TP2_NCCL) have_high = 0; /* FC2 runs on cuBLAS there */
    /* lossless: the table's, with the user's mounts; high: that, with the
     * high fusion at its site */
    ll = ll0;
    for (int i = 0; i < o->n_mounts; i++) ADM_TRY(adm_toy_tier_mount(&ll, o->mounts[i]));
    hi = ll;
    for (int s = 0; s < ADM_TOY_SITE_COUNT; s++)
        if (h0.impl[s] != ll0.impl[s]) {
            hi.impl[s] = h0.impl[s];
            memcpy(hi.entry[s], h0.entry[s], sizeof hi.entry[s]);
        }
    ADM_TRY(adm_toy_create(c, &t));
    /* the arms, the fp64 run, and the compounding runs (an fp64 run and
     * each tier's, per group) */
    ts.n = (have_high ? 6 : 5) + 1 + 2 * (1 + (have_high ? 3 : 2));
    if (set_title) {
        snprintf(title, sizeof title, "admit drift: toy DiT (%d blocks, %d Euler steps, %d tokens, %dx%d RGB), seed %llu",
                 c->blocks, c->steps, c->grid * c->grid, c->grid * c->patch, c->grid * c->patch,
                 (unsigned long long)c->seed);
        if ((st = adm_drift_set_title(d, title)) != ADM_OK) goto done;
    }
#define RUN(name, tier, tp, trace)                                                              \
    do {                                                                                        \
        step(&ts, "arm " name);                                                                 \
        if ((st = arm(t, tier, tp, o->tp2, &img, trace)) != ADM_OK) {                           \
            adm_error_prefix("toy arm %s: ", name);                                             \
            goto done;                                                                          \
        }                                                                                       \
        if ((st = add_run(d, name, &img)) != ADM_OK) goto done;                                 \
    } while (0)
    RUN("exact_tp1", &ex, 1, NULL);
    RUN("exact_tp1_again", &ex, 1, NULL);
    RUN("exact_tp2", &ex, 2, NULL);
    RUN("lossless_tp1", &ll, 1, NULL);
    RUN("lossless_tp2", &ll, 2, NULL);
    if (have_high) RUN("high_tp1", &hi, 1, NULL);
#undef RUN
    if ((st = adm_drift_add_pair(d, "control: exact TP1 vs exact TP1 again", ADM_DRIFT_CONTROL, ADM_TIER_EXACT,
                                 "exact_tp1", "exact_tp1_again")) ||
        (st = adm_drift_add_pair(d, "the band: exact TP1 vs exact TP2", ADM_DRIFT_BAND, ADM_TIER_EXACT, "exact_tp1",
                                 "exact_tp2")) ||
        (st = adm_drift_add_pair(d, "the tier: exact vs lossless, TP1", ADM_DRIFT_TIER, ADM_TIER_LOSSLESS, "exact_tp1",
                                 "lossless_tp1")) ||
        (st = adm_drift_add_pair(d, "the tier: exact vs lossless, TP2", ADM_DRIFT_TIER, ADM_TIER_LOSSLESS, "exact_tp2",
                                 "lossless_tp2")) ||
        (st = adm_drift_add_pair(d, "both at once: exact TP1 vs lossless TP2", ADM_DRIFT_TIER, ADM_TIER_LOSSLESS,
                                 "exact_tp1", "lossless_tp2")))
        goto done;
    if (have_high &&
        (st = adm_drift_add_pair(d, "the high tier: exact vs high, TP1", ADM_DRIFT_TIER, ADM_TIER_HIGH, "exact_tp1",
                                 "high_tp1")))
        goto done;
    /* how far the exact arm's pixels sit from the fp64 run's */
    step(&ts, "the fp64 run");
    if ((st = adm_toy_run_f64(t, &img, NULL)) != ADM_OK) goto done;
    {
        adm_drift_metrics m;
        char db[32];
        st = adm_drift_compare(adm_drift_arm(d, 0, NULL), &img, 255, NULL, &m);
        adm_image_free(&img);
        if (st) goto done;
        snprintf(db, sizeof db, "%.2f", m.psnr);
        snprintf(note, sizeof note, "The exact TP1 image against the fp64 run's: PSNR %s dB, SSIM %.6f.",
                 isinf(m.psnr) ? "inf" : db, m.ssim);
        if ((st = adm_drift_add_note(d, note))) goto done;
    }
    {
        const adm_toy_tier *tiers[3] = {&ex, &ll, &hi};
        if ((st = compound(o, d, tiers, have_high ? 3 : 2, &ts)) != ADM_OK) goto done;
        snprintf(note, sizeof note, "Compounding on %d x %d tokens: layers are the hidden state after each block of a "
                 "one-step run %d blocks deep; steps, the latent after each Euler step of a one-block run %d steps long.",
                 c->grid < 8 ? c->grid : 8, c->grid < 8 ? c->grid : 8, o->depth > 1 ? o->depth : 16,
                 o->depth > 1 ? o->depth : 16);
        if ((st = adm_drift_add_note(d, note))) goto done;
    }
    {
        char what[900];
        snprintf(note, sizeof note, "Tiers from %s; exact is the table's reference paths.", table);
        if ((st = adm_drift_add_note(d, note))) goto done;
        describe(&ll, &ex, what, sizeof what);
        snprintf(note, sizeof note, "Lossless tier: %s.", what);
        if ((st = adm_drift_add_note(d, note))) goto done;
        if (have_high) {
            describe(&hi, &ll, what, sizeof what);
            snprintf(note, sizeof note, "High tier: the lossless tier and %s.", what);
        } else {
            snprintf(note, sizeof note, "High tier: not run (%s).", o->tp2 == ADM_TOY_TP2_NCCL
                                                                      ? "FC2 runs on cuBLAS on the GPUs"
                                                                      : "the table has no " DEFAULT_HIGH);
        }
        if ((st = adm_drift_add_note(d, note))) goto done;
        snprintf(note, sizeof note, "TP2: the attention output projection and FC2 row-parallel over K, bf16 partials summed by an all-reduce, then the bias (%s).",
                 o->tp2 == ADM_TOY_TP2_NCCL ? "cuBLAS partials on two GPUs, NCCL, one process per GPU"
                 : o->tp2 == ADM_TOY_TP2_PROCESSES ? "two processes over pipes"
                                                   : "both ranks emulated in one process");
        st = adm_drift_add_note(d, note);
    }
done:
    adm_toy_free(t);
    return st;
}

/* In the default floating-point environment (core/adm_fpenv.h). */
adm_status adm_toy_drift(const adm_toy_options *o, adm_drift *d, int set_title)
{
    adm_fpenv fe;
    adm_status rv;
    adm_fpenv_enter(&fe);
    rv = toy_drift_body(o, d, set_title);
    adm_fpenv_leave(&fe);
    return rv;
}

adm_status adm_toy_save_arms(const adm_drift *d, const char *dir)
{
    char path[1200];
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot create the folder: %s", dir, strerror(errno));
    for (int i = 0; i < adm_drift_arm_count(d); i++) {
        const char *name;
        const adm_image *img = adm_drift_arm(d, i, &name);
        snprintf(path, sizeof path, "%s/%s.png", dir, name);
        ADM_TRY(adm_image_write_png(img, 0, 0, 255, path));
    }
    return ADM_OK;
}
