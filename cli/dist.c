/* admit-kernel over the ranks of an MPI job: rank 0 hands out units and
 * gathers their results; see dist.h. The protocol (MPI_COMM_WORLD's
 * duplicate, errors returned, never fatal):
 *   HELLO  rank r -> 0   the build's fingerprint and the rank's binding
 *   SETUP  0 -> r        rank 0's ADM_* environment, which r takes as its own
 *   UNIT   0 -> r        a unit's number and description
 *   RESULT r -> 0        its number and result
 *   STOP   0 -> r        the job's exit status
 * Rank 0 waits on nothing it cannot bound: it polls (MPI_Iprobe, MPI_Test)
 * and sleeps a millisecond when idle, so that a rank that died or stopped
 * costs its unit's time limit, after which its unit is handed to another
 * rank. Workers poll the same way, so that an idle rank leaves its core to
 * the others (Open MPI's blocking calls spin). */
/* sched_getaffinity and CPU_COUNT: the cores the launcher bound the rank to */
#define _GNU_SOURCE
#include "dist.h"
#include "cli.h"
#include "adm_harness.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

/* Message buffers (msg) grow into fresh page-aligned blocks and the old
 * blocks are kept until the job ends: an RDMA transport may have
 * registered them (and marked them not to be inherited by a fork), and
 * such a page, back in malloc's hands, could come to hold data a sandbox
 * child reads. 48 doublings from 4 KiB exceed any message. */
#define RETIRED_MAX 48
static void *retired[RETIRED_MAX];
static int n_retired;

static void retire(void *p)
{
    if (!p) return;
    if (n_retired < RETIRED_MAX) retired[n_retired++] = p;
    else free(p);
}

static void retired_free(void)
{
    for (int i = 0; i < n_retired; i++) free(retired[i]);
    n_retired = 0;
}

void adm_dist_buf_free(adm_dist_buf *b)
{
    int msg = b->msg;
    if (msg) retire(b->p);
    else free(b->p);
    memset(b, 0, sizeof *b);
    b->msg = msg;
}

/* Room for need bytes. */
static int reserve(adm_dist_buf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 4096;
    unsigned char *q;
    if (b->failed) return 0;
    if (need <= b->cap) return 1;
    while (cap < need) {
        if (cap > SIZE_MAX / 4) {
            b->failed = 1;
            return 0;
        }
        cap *= 2;
    }
    if (b->msg) {
        void *v = NULL;
        if (posix_memalign(&v, 4096, cap) != 0) v = NULL;
        q = v;
        if (q && b->len) memcpy(q, b->p, b->len);
        if (q) retire(b->p);
    } else {
        q = realloc(b->p, cap);
    }
    if (!q) {
        b->failed = 1;
        return 0;
    }
    b->p = q;
    b->cap = cap;
    return 1;
}

#ifdef ADM_HAVE_MPI
/* Empty, for the next message (its memory kept). */
static inline void reset(adm_dist_buf *b)
{
    b->len = b->pos = 0;
    b->failed = 0;
}
#endif

void adm_dist_put(adm_dist_buf *b, const void *p, size_t n)
{
    if (b->failed) return;
    if (n > SIZE_MAX / 4 - b->len) {
        b->failed = 1;
        return;
    }
    if (!reserve(b, b->len + n)) return;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
}

void adm_dist_put_i64(adm_dist_buf *b, int64_t v) { adm_dist_put(b, &v, sizeof v); }

void adm_dist_put_str(adm_dist_buf *b, const char *s)
{
    /* -1: NULL; else the length, then the bytes and their NUL */
    int64_t n = s ? (int64_t)strlen(s) : -1;
    adm_dist_put_i64(b, n);
    if (s) adm_dist_put(b, s, (size_t)n + 1);
}

void adm_dist_get(adm_dist_buf *b, void *p, size_t n)
{
    if (b->failed || n > b->len - b->pos) {
        b->failed = 1;
        memset(p, 0, n);
        return;
    }
    memcpy(p, b->p + b->pos, n);
    b->pos += n;
}

int64_t adm_dist_get_i64(adm_dist_buf *b)
{
    int64_t v;
    adm_dist_get(b, &v, sizeof v);
    return v;
}

const char *adm_dist_get_str(adm_dist_buf *b)
{
    int64_t n = adm_dist_get_i64(b);
    const char *s;
    if (b->failed || n < 0) return NULL;
    if ((uint64_t)n >= b->len - b->pos || b->p[b->pos + (size_t)n] != '\0') {
        b->failed = 1;
        return NULL;
    }
    s = (const char *)b->p + b->pos;
    b->pos += (size_t)n + 1;
    return s;
}

/* A verdict's oracle_assumption is one of the oracle's few static
 * sentences; 16 distinct ones are more than it has. */
#define INTERN_MAX 16
static char *interned[INTERN_MAX];
static int n_interned;

const char *adm_dist_intern(const char *s)
{
    if (!s) return NULL;
    for (int i = 0; i < n_interned; i++)
        if (!strcmp(interned[i], s)) return interned[i];
    if (n_interned == INTERN_MAX || !(interned[n_interned] = adm_strdup(s))) return "an assumption (not kept)";
    return interned[n_interned++];
}

static void intern_free(void)
{
    for (int i = 0; i < n_interned; i++) free(interned[i]);
    n_interned = 0;
}

/* The struct's bytes, but each gate's reason as its text alone (a verdict
 * is 21 KB, most of it unused reason space) and the assumption as a
 * string: the ranks run the same build (HELLO checks it), so the rest is
 * the same layout on both sides. */
void adm_dist_put_verdict(adm_dist_buf *b, const adm_verdict *v)
{
    size_t g0 = offsetof(adm_verdict, gate), g1 = g0 + sizeof v->gate, a = offsetof(adm_verdict, oracle_assumption);
    adm_dist_put(b, v, g0);
    for (int g = 0; g < ADM_GATE_COUNT; g++) {
        adm_dist_put_i64(b, v->gate[g].applicable);
        adm_dist_put_i64(b, v->gate[g].passed);
        adm_dist_put_str(b, v->gate[g].reason);
    }
    adm_dist_put(b, (const unsigned char *)v + g1, a - g1);
    adm_dist_put_str(b, v->oracle_assumption);
}

void adm_dist_get_verdict(adm_dist_buf *b, adm_verdict *v)
{
    size_t g0 = offsetof(adm_verdict, gate), g1 = g0 + sizeof v->gate, a = offsetof(adm_verdict, oracle_assumption);
    memset(v, 0, sizeof *v);
    adm_dist_get(b, v, g0);
    for (int g = 0; g < ADM_GATE_COUNT; g++) {
        const char *r;
        v->gate[g].applicable = (int)adm_dist_get_i64(b);
        v->gate[g].passed = (int)adm_dist_get_i64(b);
        r = adm_dist_get_str(b);
        snprintf(v->gate[g].reason, sizeof v->gate[g].reason, "%s", r ? r : "");
    }
    adm_dist_get(b, (unsigned char *)v + g1, a - g1);
    v->oracle_assumption = adm_dist_intern(adm_dist_get_str(b));
}

#ifndef ADM_HAVE_MPI

/* ------------------------------------------------------------ built without MPI */

void adm_dist_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
}
int adm_dist_end(int rc)
{
    intern_free();
    retired_free();
    return rc;
}
int adm_dist_rank(void) { return 0; }
int adm_dist_size(void) { return 1; }
int adm_dist_active(void) { return 0; }
void adm_dist_describe(FILE *f) { fprintf(f, "mpi: not built (configure with -DADM_MPI=ON and an MPI such as libopenmpi-dev)\n"); }
void adm_dist_set_unit_timeout(int64_t seconds) { (void)seconds; }
const char *adm_dist_note(void) { return ""; }
void adm_dist_run(const adm_dist_ops *ops, void *ctx, int n, const int64_t *size,
                  void (*progress)(int done, int n, const char *name))
{
    (void)ops; (void)ctx; (void)n; (void)size; (void)progress;
}
int adm_dist_serve(const adm_dist_ops *ops)
{
    (void)ops;
    return ADM_EXIT_OK;
}

#else

/* ------------------------------------------------------------ with MPI */

#include <mpi.h>
#include <omp.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { TAG_HELLO = 101, TAG_SETUP, TAG_UNIT, TAG_RESULT, TAG_STOP };

/* A rank as rank 0 sees it. */
enum { PEER_SILENT = 0, PEER_READY, PEER_BUSY, PEER_LOST, PEER_REFUSED };

typedef struct peer {
    int state, unit;
    double since;
    adm_dist_buf out;       /* what is being sent to it; kept until the send completes */
    MPI_Request req;
    int sending;
    char binding[512];
} peer;

static struct {
    int on;                 /* MPI was initialized (finalize at the end) */
    int rank, size, local_rank, local_size;
    MPI_Comm comm;
    int threads;            /* this rank's share of the cores; 0: OpenMP's default (OMP_NUM_THREADS given) */
    char binding[512];
    int64_t unit_timeout;
    peer *peers;            /* rank 0: size of them */
    int lost_any;           /* a rank was lost: end the job with MPI_Abort */
    int said_hello;         /* ranks > 0: HELLO sent (every rank sends one, rank 0 counts on it) */
    char note[4096];
} g = {.unit_timeout = ADM_DIST_UNIT_TIMEOUT_DEFAULT};

static volatile sig_atomic_t terminated;

int adm_dist_rank(void) { return g.on ? g.rank : 0; }
int adm_dist_size(void) { return g.on ? g.size : 1; }
int adm_dist_active(void) { return g.on && g.size > 1; }
const char *adm_dist_note(void) { return g.note; }
void adm_dist_set_unit_timeout(int64_t seconds) { g.unit_timeout = seconds; }

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap(void)
{
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
}

static void note_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_add(const char *fmt, ...)
{
    size_t used = strlen(g.note);
    va_list ap;
    if (used + 8 >= sizeof g.note) return;
    if (used) used += (size_t)snprintf(g.note + used, sizeof g.note - used, "; ");
    va_start(ap, fmt);
    vsnprintf(g.note + used, sizeof g.note - used, fmt, ap);
    va_end(ap);
    if (strlen(g.note) + 1 >= sizeof g.note) memcpy(g.note + sizeof g.note - 5, "...", 4);
}

/* The launcher's size, without joining: 0 when unknown. */
static long env_long(const char *name)
{
    const char *e = getenv(name);
    char *end;
    long v;
    if (!e || !*e) return 0;
    v = strtol(e, &end, 10);
    return *end ? 0 : v;
}

/* One GPU per rank: the local rank's of the GPUs this rank may see
 * (CUDA_VISIBLE_DEVICES as the launcher set it, else the NVIDIA driver's
 * count), set before anything loads CUDA (the CUDA module loads on first
 * use). Without GPUs nothing is set. */
static void bind_gpu(char *what, size_t n)
{
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis && *vis) {
        char *copy = adm_strdup(vis), *save = NULL, *tok;
        int count = 0, want;
        for (const char *p = vis; *p; p++) count += *p == ',';
        count++;
        want = g.local_rank % count;
        tok = copy ? strtok_r(copy, ",", &save) : NULL;
        for (int i = 0; tok && i < want; i++) tok = strtok_r(NULL, ",", &save);
        if (tok && *tok) {
            snprintf(what, n, "GPU %s of CUDA_VISIBLE_DEVICES=%s", tok, vis);
            setenv("CUDA_VISIBLE_DEVICES", tok, 1);
        } else {
            snprintf(what, n, "GPUs as CUDA_VISIBLE_DEVICES=%s", vis);
        }
        free(copy);
        return;
    }
    {
        DIR *d = opendir("/proc/driver/nvidia/gpus");
        struct dirent *e;
        int count = 0;
        char id[16];
        while (d && (e = readdir(d))) count += e->d_name[0] != '.';
        if (d) closedir(d);
        if (count == 0) {
            snprintf(what, n, "no GPU");
            return;
        }
        snprintf(id, sizeof id, "%d", g.local_rank % count);
        setenv("CUDA_VISIBLE_DEVICES", id, 1);
        snprintf(what, n, "GPU %s of %d", id, count);
    }
}

/* The rank's share of the cores: those the launcher bound it to, else the
 * node's divided among its ranks; OMP_NUM_THREADS, when given, stands. */
static int share_cores(void)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int mine = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp && *omp) return 0;
    if (online < 1) online = 1;
    if (mine > 0 && mine < online) return mine;
    return online / g.local_size > 1 ? (int)(online / g.local_size) : 1;
}

void adm_dist_init(int *argc, char ***argv)
{
    int launched = getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK") || getenv("PMI_RANK");
    long hint = env_long("OMPI_COMM_WORLD_SIZE");
    int provided;
    MPI_Comm node;
    char host[128], gpu[128];
    if (!hint) hint = env_long("PMI_SIZE");
    if (!hint) hint = env_long("SLURM_STEP_NUM_TASKS");
    /* one process, or not launched by MPI: as without MPI (no singleton
     * MPI_Init, which would start a runtime of its own) */
    if (!launched || hint == 1) return;
    /* The sandboxes fork children that never call MPI and exit with
     * _exit; the messages live in buffers of their own (never in memory a
     * child reads), so the fork warning of RDMA transports is noise. */
    setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return;
    g.on = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &g.comm) != MPI_SUCCESS) g.comm = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(g.comm, &g.rank);
    MPI_Comm_size(g.comm, &g.size);
    g.local_rank = 0;
    g.local_size = 1;
    if (MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &g.local_rank);
        MPI_Comm_size(node, &g.local_size);
        MPI_Comm_free(&node);
    }
    if (g.size < 2) return;
    bind_gpu(gpu, sizeof gpu);
    g.threads = share_cores();
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    {
        char th[64];
        if (g.threads) snprintf(th, sizeof th, "%d thread%s", g.threads, g.threads == 1 ? "" : "s");
        else snprintf(th, sizeof th, "OMP_NUM_THREADS=%s", getenv("OMP_NUM_THREADS"));
        snprintf(g.binding, sizeof g.binding, "on %s, local rank %d of %d, %s, %s", host, g.local_rank, g.local_size,
                 gpu, th);
    }
    /* the reports and every line meant for a user come from rank 0 */
    if (g.rank > 0 && !freopen("/dev/null", "w", stdout)) fclose(stdout);
}

/* What every rank must share for its results to be rank 0's: the build. */
static void fingerprint(char *buf, size_t n)
{
    snprintf(buf, n, "admit %s (verdict %zu bytes, unit %zu, %s-endian)", ADM_VERSION_STRING, sizeof(adm_verdict),
             sizeof(adm_unit_result), *(const unsigned char *)&(uint16_t){1} ? "little" : "big");
}

static void library(char *buf, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) len = 0;
    v[len < (int)sizeof v ? len : (int)sizeof v - 1] = '\0';
    v[strcspn(v, "\n,")] = '\0';
    snprintf(buf, n, "%s", v[0] ? v : "an MPI library");
}

/* A message from `from` (MPI_ANY_SOURCE) of any tag into b, if one is
 * there: 1 received, 0 none, -1 an MPI error. */
static int try_recv(int from, adm_dist_buf *b, int *src, int *tag)
{
    int flag = 0, count = 0;
    MPI_Status s;
    if (MPI_Iprobe(from, MPI_ANY_TAG, g.comm, &flag, &s) != MPI_SUCCESS) return -1;
    if (!flag) return 0;
    if (MPI_Get_count(&s, MPI_BYTE, &count) != MPI_SUCCESS || count < 0) return -1;
    reset(b);
    if (!reserve(b, (size_t)count + 1)) return -1;
    if (MPI_Recv(b->p, count, MPI_BYTE, s.MPI_SOURCE, s.MPI_TAG, g.comm, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
    b->len = (size_t)count;
    *src = s.MPI_SOURCE;
    *tag = s.MPI_TAG;
    return 1;
}

/* ------------------------------------------------------------ the other ranks */

static void take_setup(adm_dist_buf *b)
{
    /* rank 0's ADM_* variables replace this rank's: its limits and
     * budgets judge every unit, wherever it runs */
    int64_t n = adm_dist_get_i64(b);
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; e && *e; e++)
            if (!strncmp(*e, "ADM_", 4)) {
                char name[256];
                size_t len = strcspn(*e, "=");
                if (len >= sizeof name) continue;
                memcpy(name, *e, len);
                name[len] = '\0';
                unsetenv(name);
                again = 1;
                break;
            }
    }
    for (int64_t i = 0; i < n && !b->failed; i++) {
        const char *name = adm_dist_get_str(b), *value = adm_dist_get_str(b);
        if (name && value) setenv(name, value, 1);
    }
}

/* A rank's first word to rank 0: its build and where it runs. Sent once,
 * also by a rank that stops before serving (its command line refused), so
 * that rank 0 knows every rank started. */
static int say_hello(void)
{
    adm_dist_buf out = {.msg = 1};
    char fp[160];
    int ok;
    if (g.said_hello) return 1;
    g.said_hello = 1;
    fingerprint(fp, sizeof fp);
    adm_dist_put_str(&out, fp);
    adm_dist_put_str(&out, g.binding);
    ok = !out.failed && MPI_Send(out.p, (int)out.len, MPI_BYTE, 0, TAG_HELLO, g.comm) == MPI_SUCCESS;
    adm_dist_buf_free(&out);
    return ok;
}

int adm_dist_serve(const adm_dist_ops *ops)
{
    adm_dist_buf in = {.msg = 1}, out = {.msg = 1};
    int rc = ADM_EXIT_INPUT;
    if (!adm_dist_active()) return ADM_EXIT_OK;
    if (!say_hello()) goto done;
    if (g.threads > 0) omp_set_num_threads(g.threads);
    for (;;) {
        int src, tag, got = try_recv(0, &in, &src, &tag);
        if (got < 0) goto done;
        if (got == 0) {
            nap();
            continue;
        }
        if (tag == TAG_STOP) {
            rc = (int)adm_dist_get_i64(&in);
            goto done;
        }
        if (tag == TAG_SETUP) {
            take_setup(&in);
        } else if (tag == TAG_UNIT && ops) {
            int64_t unit = adm_dist_get_i64(&in);
            reset(&out);
            adm_dist_put_i64(&out, unit);
            ops->run(in.p + in.pos, in.len - in.pos, &out);
            /* a result that could not be built (memory) is answered
             * empty: rank 0 takes it as the unit's failure */
            if (out.failed) {
                reset(&out);
                adm_dist_put_i64(&out, unit);
            }
            if (MPI_Send(out.p, (int)out.len, MPI_BYTE, 0, TAG_RESULT, g.comm) != MPI_SUCCESS) goto done;
        }
    }
done:
    if (ops && ops->release) ops->release();
    adm_dist_buf_free(&in);
    adm_dist_buf_free(&out);
    return rc;
}

/* ------------------------------------------------------------ rank 0 */

/* Rank 0's own share of the units, in a thread: the main thread answers
 * the other ranks meanwhile. The thread lives as long as the process: a
 * unit that passed its time limit cannot be taken back from it. */
static struct {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started, has_job, has_result, quit, lost, unit;
    int busy;               /* the main thread's view: a unit handed out, its result not yet taken */
    double since;
    const adm_dist_ops *ops;
    adm_dist_buf job, result;
} local = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The fork gate. Rank 0 forks in its unit thread (the capture reader's
 * and the plugins' sandboxes) while its main thread allocates for the
 * other ranks. A child inherits every lock as it was at fork: glibc's
 * malloc takes its own locks across fork, but the sanitizers' allocator
 * (GCC 12's libasan) does not, and a child forked while the main thread
 * held one of its locks waited forever (cli_mpi_same, about 1 run in 90
 * under load: the reader's 15 s wall clock, then a sound capture reported
 * corrupt). The main thread holds the gate while it works and lets go
 * while it naps; pthread_atfork makes every fork in the process take it
 * first. Recursive: the main thread may fork while it holds it. */
static pthread_mutex_t fork_gate;
static pthread_once_t fork_gate_once = PTHREAD_ONCE_INIT;

static void fork_gate_prepare(void) { pthread_mutex_lock(&fork_gate); }
static void fork_gate_parent(void) { pthread_mutex_unlock(&fork_gate); }

/* the child's one thread has a new id: the gate is made anew, open */
static void fork_gate_child(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&fork_gate, &a);
    pthread_mutexattr_destroy(&a);
}

static void fork_gate_init(void)
{
    fork_gate_child();
    pthread_atfork(fork_gate_prepare, fork_gate_parent, fork_gate_child);
}

static void *local_main(void *arg)
{
    (void)arg;
    if (g.threads > 0) omp_set_num_threads(g.threads);
    pthread_mutex_lock(&local.mu);
    for (;;) {
        adm_dist_buf res = {0};
        while (!local.has_job && !local.quit) pthread_cond_wait(&local.cv, &local.mu);
        if (local.quit) break;
        adm_dist_put_i64(&res, local.unit);
        pthread_mutex_unlock(&local.mu);
        local.ops->run(local.job.p, local.job.len, &res);
        pthread_mutex_lock(&local.mu);
        adm_dist_buf_free(&local.result);
        local.result = res;
        local.has_job = 0;
        local.has_result = 1;
    }
    pthread_mutex_unlock(&local.mu);
    return NULL;
}

static void on_term(int sig)
{
    (void)sig;
    terminated = 1;
}

/* What rank 0 hands the others with every job: its ADM_* environment,
 * with the memory budget it would use made explicit (half of rank 0's
 * machine by default), so that a unit is judged alike on every rank. */
static void setup_message(adm_dist_buf *b)
{
    int64_t n = 0;
    adm_plan plan;
    char mem[32];
    int has_mem = getenv("ADM_MAX_MEMORY") != NULL;
    for (char **e = environ; e && *e; e++) n += !strncmp(*e, "ADM_", 4) && strchr(*e, '=');
    if (!has_mem && adm_plan_init(&plan, ADM_PLAN_RUN) == ADM_OK) {
        snprintf(mem, sizeof mem, "%lld", (long long)plan.max_memory);
        n++;
    } else {
        has_mem = 1;
        adm_error_clear();
    }
    adm_dist_put_i64(b, n);
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        char name[256];
        if (strncmp(*e, "ADM_", 4) || !eq) continue;
        snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
        adm_dist_put_str(b, name);
        adm_dist_put_str(b, eq + 1);
    }
    if (!has_mem) {
        adm_dist_put_str(b, "ADM_MAX_MEMORY");
        adm_dist_put_str(b, mem);
    }
}

/* Starts sending b's bytes to rank r (b is then r's until sent). */
static int post(int r, int tag)
{
    peer *p = &g.peers[r];
    if (p->out.failed) return -1;
    if (MPI_Isend(p->out.p, (int)p->out.len, MPI_BYTE, r, tag, g.comm, &p->req) != MPI_SUCCESS) return -1;
    p->sending = 1;
    return 0;
}

/* 1 when rank r's last send is done (or there is none), 0 not yet, -1 an
 * error. */
static int sent(int r)
{
    peer *p = &g.peers[r];
    int flag = 0;
    if (!p->sending) return 1;
    if (MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
    if (flag) p->sending = 0;
    return flag;
}

typedef struct sched {
    const adm_dist_ops *ops;
    void *ctx;
    int n, *order, next, *state, *tries, *redo, nredo, resolved, *who;
    void (*progress)(int done, int n, const char *name);
} sched;

enum { UNIT_PENDING = 0, UNIT_RUNNING, UNIT_DONE };

static void unit_name(sched *s, int u, char *buf, size_t n)
{
    if (s->ops->name) s->ops->name(s->ctx, u, buf, n);
    else snprintf(buf, n, "unit %d", u);
}

static void resolve(sched *s, int u)
{
    char nm[512];
    s->state[u] = UNIT_DONE;
    s->resolved++;
    if (s->progress) {
        unit_name(s, u, nm, sizeof nm);
        s->progress(s->resolved, s->n, nm);
    }
}

static void unit_lost(sched *s, int u, const char *why)
{
    char nm[512];
    unit_name(s, u, nm, sizeof nm);
    if (s->ops->lost(s->ctx, u, why)) note_add("%s is measured on rank 0 after the others", nm);
    else note_add("%s was lost", nm);
    resolve(s, u);
}

/* Rank r (0: rank 0's thread) is taken for stopped: its unit goes back to
 * the queue, or is lost after its second rank. */
static void rank_lost(sched *s, int r, const char *what)
{
    int u = r ? g.peers[r].unit : local.unit;
    int busy = r ? g.peers[r].state == PEER_BUSY : local.busy;
    char nm[512];
    g.lost_any = 1;
    if (r) g.peers[r].state = PEER_LOST;
    else local.lost = 1;
    if (!busy || s->state[u] != UNIT_RUNNING) {
        note_add("rank %d %s", r, what);
        return;
    }
    unit_name(s, u, nm, sizeof nm);
    note_add("rank %d %s on %s and was given no more work", r, what, nm);
    s->state[u] = UNIT_PENDING;
    if (++s->tries[u] >= 2) {
        char why[600];
        snprintf(why, sizeof why, "lost: rank %d %s on it, after another rank had: its result never came back "
                 "(--unit-timeout)", r, what);
        unit_lost(s, u, why);
    } else {
        s->redo[s->nredo++] = u;
    }
}

static int next_unit(sched *s)
{
    for (;;) {
        int u;
        if (s->nredo) u = s->redo[--s->nredo];
        else if (s->next < s->n) u = s->order[s->next++];
        else return -1;
        if (s->state[u] != UNIT_PENDING) continue;
        if (s->ops->needed && !s->ops->needed(s->ctx, u)) {
            resolve(s, u);
            continue;
        }
        return u;
    }
}

static void finished(sched *s, int u, int r, adm_dist_buf *b)
{
    char nm[512];
    if (s->tries[u]) {
        unit_name(s, u, nm, sizeof nm);
        note_add("%s was measured again on rank %d", nm, r);
    }
    s->ops->done(s->ctx, u, b);
    resolve(s, u);
}

static const int64_t *cmp_size;
static int by_size(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    int64_t sx = cmp_size ? cmp_size[x] : 0, sy = cmp_size ? cmp_size[y] : 0;
    if (sx != sy) return sx > sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void hello(int r, adm_dist_buf *in, adm_dist_buf *setup)
{
    char fp[160];
    const char *theirs = adm_dist_get_str(in), *binding = adm_dist_get_str(in);
    peer *p = &g.peers[r];
    fingerprint(fp, sizeof fp);
    snprintf(p->binding, sizeof p->binding, "%s", binding ? binding : "");
    if (!theirs || strcmp(theirs, fp)) {
        fprintf(stderr, "admit-kernel: rank %d runs %s, rank 0 %s: it is given no work (every rank needs the same "
                "admit build)\n", r, theirs ? theirs : "another build", fp);
        p->state = PEER_REFUSED;
        return;
    }
    p->state = PEER_READY;
    if (setup) {
        reset(&p->out);
        adm_dist_put(&p->out, setup->p, setup->len);
        if (post(r, TAG_SETUP) != 0) p->state = PEER_LOST;
    }
}

static void peers_alloc(void)
{
    if (g.peers || !(g.peers = calloc((size_t)g.size, sizeof *g.peers))) return;
    for (int r = 0; r < g.size; r++) g.peers[r].out.msg = 1;
}

void adm_dist_run(const adm_dist_ops *ops, void *ctx, int n, const int64_t *size,
                  void (*progress)(int done, int n, const char *name))
{
    sched s;
    adm_dist_buf in = {.msg = 1}, setup = {0};
    struct sigaction sa;
    double start = now();
    memset(&s, 0, sizeof s);
    s.ops = ops;
    s.ctx = ctx;
    s.n = n;
    s.progress = progress;
    peers_alloc();
    s.order = calloc((size_t)n + 1, sizeof *s.order);
    s.state = calloc((size_t)n + 1, sizeof *s.state);
    s.tries = calloc((size_t)n + 1, sizeof *s.tries);
    s.redo = calloc((size_t)n + 1, sizeof *s.redo);
    if (!g.peers || !s.order || !s.state || !s.tries || !s.redo) {
        for (int u = 0; u < n; u++) ops->lost(ctx, u, "lost: out of memory for the job's bookkeeping");
        goto out;
    }
    for (int u = 0; u < n; u++) s.order[u] = u;
    cmp_size = size;
    qsort(s.order, (size_t)n, sizeof *s.order, by_size);
    setup_message(&setup);
    /* the launcher ends the job with SIGTERM when a rank dies (SIGKILL
     * follows: 1 s under mpirun, KillWait under Slurm): the units not
     * measured by then are named in the reports rank 0 writes at once */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    local.ops = ops;
    pthread_once(&fork_gate_once, fork_gate_init);
    if (!local.started && !local.lost) {
        if (pthread_create(&local.th, NULL, local_main, NULL) == 0) local.started = 1;
        else local.lost = 1;
    }
    while (s.resolved < n) {
        int busy = 0, src, tag, got, runners = 0;
        if (terminated) break;
        pthread_mutex_lock(&fork_gate);
        /* the others' messages */
        while ((got = try_recv(MPI_ANY_SOURCE, &in, &src, &tag)) == 1) {
            peer *p = &g.peers[src];
            busy = 1;
            if (src <= 0 || src >= g.size) continue;
            if (tag == TAG_HELLO && p->state == PEER_SILENT) {
                hello(src, &in, &setup);
            } else if (tag == TAG_RESULT && p->state == PEER_BUSY) {
                int64_t u = adm_dist_get_i64(&in);
                if (in.failed || u != p->unit || s.state[u] != UNIT_RUNNING) continue;
                p->state = PEER_READY;
                finished(&s, (int)u, src, &in);
            }
            /* anything else is late: a rank taken for stopped that spoke
             * again, whose units went to others */
        }
        if (got < 0) {
            for (int r = 1; r < g.size; r++)
                if (g.peers[r].state != PEER_LOST && g.peers[r].state != PEER_REFUSED)
                    rank_lost(&s, r, "could not be reached (an MPI error)");
        }
        /* rank 0's own thread */
        pthread_mutex_lock(&local.mu);
        if (local.has_result && !local.lost) {
            adm_dist_buf r = local.result;
            memset(&local.result, 0, sizeof local.result);
            local.has_result = 0;
            pthread_mutex_unlock(&local.mu);
            local.busy = 0;
            r.pos = 0;
            if (adm_dist_get_i64(&r) == local.unit && s.state[local.unit] == UNIT_RUNNING) finished(&s, local.unit, 0, &r);
            adm_dist_buf_free(&r);
            busy = 1;
        } else {
            pthread_mutex_unlock(&local.mu);
        }
        /* the time limits */
        if (g.unit_timeout > 0) {
            double t = now();
            char what[96];
            snprintf(what, sizeof what, "passed the unit time limit of %lld s", (long long)g.unit_timeout);
            for (int r = 1; r < g.size; r++)
                if (g.peers[r].state == PEER_BUSY && t - g.peers[r].since > (double)g.unit_timeout) rank_lost(&s, r, what);
            if (!local.lost && local.busy && t - local.since > (double)g.unit_timeout) rank_lost(&s, 0, what);
            for (int r = 1; r < g.size; r++)
                if (g.peers[r].state == PEER_SILENT && t - start > (double)g.unit_timeout) {
                    g.peers[r].state = PEER_LOST;
                    g.lost_any = 1;
                    note_add("rank %d never started (no word within %lld s)", r, (long long)g.unit_timeout);
                }
        }
        /* hand out */
        for (int r = 1; r < g.size; r++) {
            peer *p = &g.peers[r];
            int u, ok;
            if (p->state == PEER_SILENT || p->state == PEER_BUSY) runners++;
            if (p->state != PEER_READY) continue;
            if ((ok = sent(r)) < 0) {
                rank_lost(&s, r, "could not be reached (an MPI error)");
                continue;
            }
            runners++;
            if (!ok || (u = next_unit(&s)) < 0) continue;
            reset(&p->out);
            adm_dist_put_i64(&p->out, u);
            ops->describe(ctx, u, &p->out);
            s.state[u] = UNIT_RUNNING;
            p->unit = u;
            p->since = now();
            p->state = PEER_BUSY;
            if (post(r, TAG_UNIT) != 0) rank_lost(&s, r, "could not be reached (an MPI error)");
            busy = 1;
        }
        if (!local.lost) {
            runners++;
            if (!local.busy) {
                int u = next_unit(&s);
                if (u >= 0) {
                    adm_dist_buf job = {0};
                    ops->describe(ctx, u, &job);
                    s.state[u] = UNIT_RUNNING;
                    local.unit = u;
                    local.since = now();
                    local.busy = 1;
                    pthread_mutex_lock(&local.mu);
                    adm_dist_buf_free(&local.job);
                    local.job = job;
                    local.has_job = 1;
                    pthread_cond_signal(&local.cv);
                    pthread_mutex_unlock(&local.mu);
                    busy = 1;
                }
            }
        }
        if (runners == 0) {
            /* every rank lost: what is left cannot be measured */
            int u;
            while ((u = next_unit(&s)) >= 0)
                unit_lost(&s, u, "lost: no rank was left to measure it (each passed the unit time limit or could not "
                          "be reached)");
        }
        pthread_mutex_unlock(&fork_gate);
        if (!busy) nap();
    }
    if (terminated) {
        int left = 0;
        for (int u = 0; u < n; u++) {
            int r = -1;
            char why[400];
            if (s.state[u] == UNIT_DONE) continue;
            if (s.state[u] == UNIT_RUNNING) {
                if (local.busy && local.unit == u) r = 0;
                for (int k = 1; k < g.size && r < 0; k++)
                    if (g.peers[k].state == PEER_BUSY && g.peers[k].unit == u) r = k;
            }
            if (r >= 0)
                snprintf(why, sizeof why, "the launcher ended the job (SIGTERM: a rank died, or the job was cancelled) "
                         "while rank %d was measuring it", r);
            else
                snprintf(why, sizeof why, "the launcher ended the job (SIGTERM: a rank died, or the job was cancelled) "
                         "before it was handed out");
            left += !ops->lost(ctx, u, why);
            s.state[u] = UNIT_DONE;
        }
        g.lost_any = 1;
        note_add("the launcher ended the job (SIGTERM: a rank died, or the job was cancelled) with %d unit%s not "
                 "measured", left, left == 1 ? "" : "s");
    }
    /* rank 0's thread is idle unless it was lost with a unit */
    if (ops->release && !local.lost) ops->release();
out:
    adm_dist_buf_free(&in);
    adm_dist_buf_free(&setup);
    free(s.order);
    free(s.state);
    free(s.tries);
    free(s.redo);
}

/* ------------------------------------------------------------ the end */

static void describe_ranks(FILE *f)
{
    double start = now();
    int heard = 1;
    adm_dist_buf in = {.msg = 1};
    peers_alloc();
    if (!g.peers) return;
    fprintf(f, "mpi: rank 0 of %d %s\n", g.size, g.binding);
    /* every rank says hello when it starts serving: 10 s for all of them */
    while (heard < g.size && now() - start < 10) {
        int src, tag, got = try_recv(MPI_ANY_SOURCE, &in, &src, &tag);
        if (got < 0) break;
        if (got == 0) {
            nap();
            continue;
        }
        if (tag == TAG_HELLO && src > 0 && src < g.size && g.peers[src].state == PEER_SILENT) {
            hello(src, &in, NULL);
            heard++;
        }
    }
    for (int r = 1; r < g.size; r++) {
        if (g.peers[r].state == PEER_SILENT) fprintf(f, "mpi: rank %d: no word within 10 s\n", r);
        else fprintf(f, "mpi: rank %d of %d %s%s\n", r, g.size, g.peers[r].binding,
                     g.peers[r].state == PEER_REFUSED ? " (another admit build)" : "");
    }
    adm_dist_buf_free(&in);
}

void adm_dist_describe(FILE *f)
{
    char lib[256];
    library(lib, sizeof lib);
    fprintf(f, "mpi: built (%s)%s\n", lib,
            adm_dist_active() ? "" : "; run under mpirun or srun to spread table, replay and drift over ranks");
    if (adm_dist_active() && g.rank == 0) describe_ranks(f);
}

int adm_dist_end(int rc)
{
    if (!g.on) {
        intern_free();
        retired_free();
        return rc;
    }
    if (g.size > 1 && g.rank == 0) {
        double start = now();
        int pending = 1;
        fflush(stdout);
        fflush(stderr);
        if (terminated) _exit(rc); /* the launcher is ending the job: its reports are written */
        peers_alloc();
        {
            /* every rank says hello once: one that never does within the
             * unit time limit (60 s at most) is taken for stopped */
            adm_dist_buf in = {.msg = 1};
            double limit = g.unit_timeout > 0 && g.unit_timeout < 60 ? (double)g.unit_timeout : 60;
            int silent = 1;
            while (g.peers && silent && now() - start < limit) {
                int src, tag, got;
                silent = 0;
                for (int r = 1; r < g.size; r++) silent |= g.peers[r].state == PEER_SILENT;
                if (!silent) break;
                if ((got = try_recv(MPI_ANY_SOURCE, &in, &src, &tag)) < 0) break;
                if (got == 0) nap();
                else if (tag == TAG_HELLO && src > 0 && src < g.size && g.peers[src].state == PEER_SILENT)
                    hello(src, &in, NULL);
            }
            adm_dist_buf_free(&in);
            for (int r = 1; g.peers && r < g.size; r++)
                if (g.peers[r].state == PEER_SILENT) {
                    g.peers[r].state = PEER_LOST;
                    note_add("rank %d never started (no word within %.0f s)", r, limit);
                }
            start = now();
        }
        for (int r = 1; g.peers && r < g.size; r++) {
            peer *p = &g.peers[r];
            if (p->state == PEER_LOST) continue;
            /* a send still in flight to a rank that never asked for more
             * (no hello yet) is given the time below, then left */
            if (sent(r) != 1) continue;
            reset(&p->out);
            adm_dist_put_i64(&p->out, rc);
            if (post(r, TAG_STOP) != 0) p->state = PEER_LOST;
        }
        while (pending && now() - start < 10) {
            pending = 0;
            for (int r = 1; g.peers && r < g.size; r++) {
                int k;
                if (g.peers[r].state == PEER_LOST) continue;
                if ((k = sent(r)) < 0) g.peers[r].state = PEER_LOST;
                else pending |= !k;
            }
            if (pending) nap();
        }
        for (int r = 1; g.peers && r < g.size; r++) g.lost_any |= g.peers[r].state == PEER_LOST || g.peers[r].sending;
        if (g.lost_any || local.lost) {
            /* a rank that stopped would hold MPI_Finalize forever: end the
             * job, with this status (mpirun exits with it) */
            fprintf(stderr, "admit-kernel: ending the job with exit status %d: %s\n", rc,
                    g.note[0] ? g.note : "a rank stopped answering");
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, rc);
            _exit(rc);
        }
        if (local.started) {
            pthread_mutex_lock(&local.mu);
            local.quit = 1;
            pthread_cond_signal(&local.cv);
            pthread_mutex_unlock(&local.mu);
            pthread_join(local.th, NULL);
            local.started = 0;
        }
        for (int r = 1; g.peers && r < g.size; r++) adm_dist_buf_free(&g.peers[r].out);
        free(g.peers);
        g.peers = NULL;
        adm_dist_buf_free(&local.job);
        adm_dist_buf_free(&local.result);
    }
    if (g.size > 1 && g.rank > 0) say_hello();
    if (g.comm != MPI_COMM_WORLD) MPI_Comm_free(&g.comm);
    MPI_Finalize();
    g.on = 0;
    intern_free();
    retired_free();
    return rc;
}

#endif
