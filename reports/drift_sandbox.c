/* The drift report's arms are read the way captures are (captures/
 * sandbox.c): by a child process under memory, CPU-time and wall-clock
 * limits, so that a PNG or an HDF5 file that crashes, loops in or blows up
 * libpng or libhdf5 fails its arm with a message, not admit. Before each
 * library call the child names the file and what it reads next in a page
 * shared with the parent, which says so when the child dies.
 *
 * Two children per run of arms: the first only declares (every file's
 * extents and range) so that the caller can hold them against the limits
 * of the arm and of the run before anything is allocated for values; the
 * second reads the values, each arm into a memory file (memfd) the parent
 * made, sized and sealed before the fork, and maps once the child is gone:
 * the values are not copied, and a child cannot resize what the parent
 * maps. The parent trusts nothing the child sends: every number of the
 * answer is checked, every value is checked finite again.
 *
 * Wire format (native byte order; both ends are this process image):
 *   u32 magic "DRFT", u32 status
 *   status != 0: u32 the arm, u32 length, the message          (end)
 *   status == 0, declaring: each piece of each arm in order:
 *                i64 frames, height, width, channels; f64 range
 *   status == 0, reading: nothing more (the values are in the memory files) */
/* memfd_create, F_ADD_SEALS and MAP_ANONYMOUS are outside POSIX. */
#define _GNU_SOURCE
#include "drift_internal.h"
#include "adm_capture.h"
#include "adm_child.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WIRE_MAGIC 0x54465244u /* "DRFT" */
#define MSG_MAX 4096u

/* ---------------------------------------------------------------- the trace */

typedef struct crumb {
    char lib[8];
    char file[3064];
    char what[1024];
} crumb;

void *drift_crumb_;

void drift_trace(const char *lib, const char *file, const char *fmt, ...)
{
    crumb *c = drift_crumb_;
    va_list ap;
    snprintf(c->lib, sizeof c->lib, "%s", lib);
    snprintf(c->file, sizeof c->file, "%s", file);
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- limits */

static int64_t piece_values(const drift_piece *pc) { return pc->frames * pc->height * pc->width * pc->channels; }

static int clamp_int(int64_t v) { return v > INT_MAX ? INT_MAX : (int)v; }

/* The capture reader's limits, for what these arms declare. Memory: 1 GiB
 * for the libraries, and while reading 16 bytes per value of the largest
 * file (a permuted layout's copy, libpng's rows, an inflated HDF5 chunk);
 * the arms' values themselves are in the memory files, mapped before the
 * limit is set. CPU time: 5 s, a second per 256 files, and while reading a
 * second per 16 MiB of files and per 2^22 values: inflating, converting and
 * the memory files' page faults took 42 ns a value (17 s of user and system
 * time for 402 M values) on the loaded 2-core development guest, and this
 * leaves five times that; the wall clock three times the CPU time. Each
 * ADM_SANDBOX_* variable replaces its default. */
static void arm_limits(const drift_plan *p, int n, int reading, adm_sandbox_limits *lim)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int64_t phys = (pages > 0 && psz > 0) ? (int64_t)pages * psz : (int64_t)1 << 36;
    int64_t big = 0, bytes = 0, values = 0, files = 0, mem, cpu;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p[i].n_pieces; j++) {
            struct stat sb;
            int64_t v = piece_values(&p[i].pieces[j]);
            files++;
            if (reading) {
                if (stat(p[i].pieces[j].file, &sb) == 0 && sb.st_size > 0) bytes += (int64_t)sb.st_size;
                values += v;
                if (v > big) big = v;
            }
        }
    mem = ((int64_t)1 << 30) + 16 * big;
    if (mem > phys) mem = phys;
    cpu = 5 + files / 256 + (bytes >> 24) + (values >> 22);
    lim->memory_bytes = adm_child_env_limit("ADM_SANDBOX_MEMORY", mem);
    lim->cpu_seconds = clamp_int(adm_child_env_limit("ADM_SANDBOX_CPU", cpu));
    lim->wall_seconds = clamp_int(adm_child_env_limit("ADM_SANDBOX_TIMEOUT", 3 * (int64_t)lim->cpu_seconds));
}

/* ---------------------------------------------------------------- the child */

static int raw_write(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void child_fail(int fd, adm_status st, uint32_t arm) __attribute__((noreturn));
static void child_fail(int fd, adm_status st, uint32_t arm)
{
    const char *msg = adm_error_message();
    uint32_t h[4] = {WIRE_MAGIC, (uint32_t)st, arm, (uint32_t)strlen(msg)};
    if (h[3] > MSG_MAX) h[3] = MSG_MAX;
    _exit(raw_write(fd, h, sizeof h) || raw_write(fd, msg, h[3]) ? 4 : 0);
}

static void child_main(int fd, drift_plan *p, int n, const int *memfds, const adm_sandbox_limits *lim)
    __attribute__((noreturn));
static void child_main(int fd, drift_plan *p, int n, const int *memfds, const adm_sandbox_limits *lim)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU};
    double **base = NULL;
    int devnull;
#ifdef ADM_SANITIZED
    /* a fault in the child is the parent's to report */
    __sanitizer_set_death_callback(NULL);
#endif
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(3);
    if ((devnull = open("/dev/null", O_WRONLY)) >= 0) {
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
#ifdef ADM_SANITIZED
        __sanitizer_set_report_fd((void *)(intptr_t)STDERR_FILENO);
#endif
        close(devnull);
    }
    adm_child_set_limit(RLIMIT_CORE, 0, 0);
    if (lim->cpu_seconds > 0) adm_child_set_limit(RLIMIT_CPU, (rlim_t)lim->cpu_seconds, (rlim_t)lim->cpu_seconds + 1);
    if (memfds) {
        if (!(base = calloc((size_t)n, sizeof *base))) child_fail(fd, ADM_FAIL(ADM_ERR_NOMEM, "out of memory"), 0);
        for (int i = 0; i < n; i++) {
            void *m = mmap(NULL, sizeof(double) * (size_t)p[i].values, PROT_READ | PROT_WRITE, MAP_SHARED, memfds[i], 0);
            if (m == MAP_FAILED)
                child_fail(fd, ADM_FAIL(ADM_ERR_NOMEM, "cannot map the arm's %lld values: %s", (long long)p[i].values,
                                        strerror(errno)), (uint32_t)i);
            base[i] = m;
        }
    }
    if (lim->memory_bytes > 0) {
        int64_t cap = adm_child_mapped_bytes() + lim->memory_bytes;
        adm_child_set_limit(RLIMIT_AS, (rlim_t)cap, (rlim_t)cap);
    }
    /* the memory files are sealed at their size; nothing else is written */
    adm_child_set_limit(RLIMIT_FSIZE, 0, 0);
    signal(SIGXFSZ, SIG_IGN);
    /* a filter the file names is not looked for in HDF5_PLUGIN_PATH */
    H5PLset_loading_state(0);
    for (int i = 0; i < n; i++) {
        int64_t off = 0;
        for (int j = 0; j < p[i].n_pieces; j++) {
            drift_piece *pc = &p[i].pieces[j];
            adm_status st = drift_piece_run(pc, p[i].layout, base ? base[i] + off : NULL);
            if (st != ADM_OK) child_fail(fd, st, (uint32_t)i);
            off += piece_values(pc);
        }
    }
    DRIFT_TRACE("", "", "(done reading; answering)");
    {
        uint32_t h[2] = {WIRE_MAGIC, ADM_OK};
        if (raw_write(fd, h, sizeof h)) _exit(4);
        for (int i = 0; i < n && !base; i++)
            for (int j = 0; j < p[i].n_pieces; j++) {
                const drift_piece *pc = &p[i].pieces[j];
                int64_t e[4] = {pc->frames, pc->height, pc->width, pc->channels};
                if (raw_write(fd, e, sizeof e) || raw_write(fd, &pc->range, sizeof pc->range)) _exit(4);
            }
    }
    _exit(0);
}

/* ---------------------------------------------------------------- the parent */

/* Exactly n bytes before the deadline: 0; -1 at the end of the stream, a
 * timeout (*timed_out) or an error. */
static int read_full(int fd, void *dst, size_t n, const struct timespec *deadline, int *timed_out)
{
    char *d = dst;
    while (n) {
        struct timespec now;
        struct pollfd pf = {fd, POLLIN, 0};
        int64_t left;
        ssize_t r;
        int pr;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left = (int64_t)(deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
        if (left <= 0) {
            *timed_out = 1;
            return -1;
        }
        pr = poll(&pf, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) {
            *timed_out = 1;
            return -1;
        }
        if (pr < 0) return -1;
        r = read(fd, d, n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) return -1;
        d += r;
        n -= (size_t)r;
    }
    return 0;
}

/* What a piece declares, as the in-process reader would have it. */
static int declared_ok(const drift_piece *pc)
{
    int64_t e[4] = {pc->frames, pc->height, pc->width, pc->channels}, v = 1;
    for (int k = 0; k < 4; k++) {
        if (e[k] < 1 || e[k] > ADM_ARM_MAX_VALUES || v > ADM_ARM_MAX_VALUES / e[k]) return 0;
        v *= e[k];
    }
    if (!isfinite(pc->range) || pc->range < 0) return 0;
    if (!pc->dataset)
        return pc->frames == 1 && v <= ADM_PNG_MAX_VALUES && pc->height <= ADM_PNG_MAX_SIDE &&
               pc->width <= ADM_PNG_MAX_SIDE && (pc->channels == 1 || pc->channels == 3) &&
               (pc->range == 255 || pc->range == 65535);
    return 1;
}

/* ADM_OK, or the child's own refusal or a malformed answer with the
 * message set; *cut when the child gave no whole answer (*timed_out when
 * it ran out of time). */
#define CUT (*cut = 1, ADM_ERR_IO)
static adm_status decode(int fd, drift_plan *p, int n, int reading, const struct timespec *deadline, int *timed_out,
                         int *cut)
{
    uint32_t h[2];
    *cut = 0;
    if (read_full(fd, h, sizeof h, deadline, timed_out)) return CUT;
    if (h[0] != WIRE_MAGIC) return ADM_FAIL(ADM_ERR_FORMAT, "the arms' reader process sent no answer header");
    if (h[1] != ADM_OK) {
        uint32_t g[2];
        char msg[MSG_MAX + 1];
        adm_status st = h[1] < ADM_STATUS_COUNT ? (adm_status)h[1] : ADM_ERR_FORMAT;
        if (read_full(fd, g, sizeof g, deadline, timed_out)) return CUT;
        if (g[0] >= (uint32_t)n || g[1] > MSG_MAX)
            return ADM_FAIL(ADM_ERR_FORMAT, "the arms' reader process sent arm %u and a message of %u bytes", g[0], g[1]);
        if (read_full(fd, msg, g[1], deadline, timed_out)) return CUT;
        msg[g[1]] = '\0';
        /* its messages name the file; a subverted child's are text at most */
        st = ADM_FAIL(st, "%s", msg);
        adm_error_prefix("%s", p[g[0]].prefix);
        return st;
    }
    for (int i = 0; i < n && !reading; i++)
        for (int j = 0; j < p[i].n_pieces; j++) {
            drift_piece *pc = &p[i].pieces[j];
            int64_t e[4];
            if (read_full(fd, e, sizeof e, deadline, timed_out) ||
                read_full(fd, &pc->range, sizeof pc->range, deadline, timed_out))
                return CUT;
            pc->frames = e[0];
            pc->height = e[1];
            pc->width = e[2];
            pc->channels = e[3];
            if (!declared_ok(pc)) {
                adm_status st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the arms' reader process sent %lld x %lld x %lld x %lld "
                                         "(range %g)", pc->file, (long long)e[0], (long long)e[1], (long long)e[2],
                                         (long long)e[3], pc->range);
                adm_error_prefix("%s", p[i].prefix);
                return st;
            }
        }
    return ADM_OK;
}
#undef CUT

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (a bad memory access)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGABRT: return "SIGABRT (an abort)";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

/* Why the child gave no answer, naming the file it was reading. */
static adm_status no_answer(const drift_plan *p, int n, const crumb *c, int timed_out, int wstatus,
                            const adm_sandbox_limits *lim)
{
    const char *prefix = "", *lib = !strcmp(c->lib, "PNG") ? "libpng" : "the HDF5 library";
    char why[300];
    adm_status st;
    for (int i = 0; i < n && !prefix[0]; i++)
        for (int j = 0; j < p[i].n_pieces; j++)
            if (c->file[0] && !strcmp(p[i].pieces[j].file, c->file)) {
                prefix = p[i].prefix;
                break;
            }
    if (timed_out)
        snprintf(why, sizeof why, "no answer within %d s; ADM_SANDBOX_TIMEOUT raises the limit", lim->wall_seconds);
    else if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU)
        snprintf(why, sizeof why, "it used its %d s of CPU time; ADM_SANDBOX_CPU raises the limit", lim->cpu_seconds);
    else if (WIFSIGNALED(wstatus))
        snprintf(why, sizeof why, "the reader process died of %s%s", signal_name(WTERMSIG(wstatus)),
                 lim->memory_bytes > 0 ? ", or its memory limit was too small: ADM_SANDBOX_MEMORY raises it" : "");
    else
        snprintf(why, sizeof why, "the reader process stopped with status %d%s",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                 lim->memory_bytes > 0 ? ", perhaps at its memory limit; ADM_SANDBOX_MEMORY raises it" : "");
    if (c->file[0] && (timed_out || (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU)))
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: %s did not finish reading %s (%s)", c->file, lib, c->what, why);
    else if (c->file[0])
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s is corrupt: %s failed reading %s (%s)", c->file, lib, c->what, why);
    else
        st = ADM_FAIL(ADM_ERR_FORMAT, "the arms' reader process ended before it read a file (%s)", why);
    adm_error_prefix("%s", prefix);
    return st;
}

static adm_status run_child(drift_plan *p, int n, const int *memfds)
{
    adm_sandbox_limits lim;
    crumb *page, c;
    int pfd[2], wstatus = 0, timed_out = 0, cut = 0;
    struct timespec deadline;
    pid_t pid;
    adm_status st;
    arm_limits(p, n, memfds != NULL, &lim);
    page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return ADM_FAIL(ADM_ERR_IO, "cannot map the arms' reader's trace page: %s", strerror(errno));
    memset(page, 0, sizeof *page);
    if (pipe(pfd) != 0) {
        st = ADM_FAIL(ADM_ERR_IO, "cannot make a pipe for the arms' reader process: %s", strerror(errno));
        munmap(page, sizeof *page);
        return st;
    }
    if ((pid = adm_child_fork(pfd)) < 0) {
        st = ADM_FAIL(ADM_ERR_IO, "cannot start the arms' reader process: %s", strerror(errno));
        munmap(page, sizeof *page);
        return st;
    }
    if (pid == 0) {
        close(pfd[0]);
        drift_crumb_ = page;
        child_main(pfd[1], p, n, memfds, &lim);
    }
    close(pfd[1]);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += lim.wall_seconds > 0 ? lim.wall_seconds : (time_t)1 << 30;
    st = decode(pfd[0], p, n, memfds != NULL, &deadline, &timed_out, &cut);
    /* the answer is whole before the child exits: it is stopped and reaped
     * before the parent looks at the memory files */
    adm_child_reap(pid, &wstatus);
    close(pfd[0]);
    memcpy(&c, page, sizeof c);
    munmap(page, sizeof *page);
    c.lib[sizeof c.lib - 1] = c.file[sizeof c.file - 1] = c.what[sizeof c.what - 1] = '\0';
    if (!cut) return st;
    return no_answer(p, n, &c, timed_out, wstatus, &lim);
}

/* ---------------------------------------------------------------- declaring and reading */

adm_status drift_plans_declare(drift_plan *p, int n)
{
    if (n <= 0) return ADM_OK;
    if (adm_sandbox_enabled()) return run_child(p, n, NULL);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p[i].n_pieces; j++) {
            adm_status st = drift_piece_run(&p[i].pieces[j], p[i].layout, NULL);
            if (st != ADM_OK) {
                adm_error_prefix("%s", p[i].prefix);
                return st;
            }
        }
    return ADM_OK;
}

static adm_status finish_image(const drift_plan *p, adm_image *img)
{
    int64_t off = 0;
    img->frames = p->frames;
    img->height = p->pieces[0].height;
    img->width = p->pieces[0].width;
    img->channels = p->pieces[0].channels;
    img->data_range = p->pieces[0].range;
    for (int j = 0; j < p->n_pieces; j++) {
        adm_status st = drift_piece_finite(&p->pieces[j], img->data + off);
        if (st != ADM_OK) {
            adm_error_prefix("%s", p->prefix);
            return st;
        }
        off += piece_values(&p->pieces[j]);
    }
    if (!(img->source = adm_strdup(p->source))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    return ADM_OK;
}

static adm_status read_in_process(drift_plan *p, int n, adm_image *imgs)
{
    for (int i = 0; i < n; i++) {
        int64_t off = 0;
        adm_status st = adm_image_alloc(&imgs[i], p[i].frames, p[i].pieces[0].height, p[i].pieces[0].width,
                                        p[i].pieces[0].channels);
        for (int j = 0; j < p[i].n_pieces && st == ADM_OK; j++) {
            st = drift_piece_run(&p[i].pieces[j], p[i].layout, imgs[i].data + off);
            off += piece_values(&p[i].pieces[j]);
        }
        if (st != ADM_OK) {
            adm_error_prefix("%s", p[i].prefix);
            return st;
        }
        ADM_TRY(finish_image(&p[i], &imgs[i]));
    }
    return ADM_OK;
}

adm_status drift_plans_read(drift_plan *p, int n, adm_image *imgs)
{
    int *memfds;
    adm_status st = ADM_OK;
    if (n <= 0) return ADM_OK;
    for (int i = 0; i < n; i++) memset(&imgs[i], 0, sizeof imgs[i]);
    if (!adm_sandbox_enabled()) st = read_in_process(p, n, imgs);
    else if (!(memfds = malloc(sizeof *memfds * (size_t)n))) st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    else {
        int made = 0;
        for (; made < n && st == ADM_OK; made++) {
            size_t bytes = sizeof(double) * (size_t)p[made].values;
            memfds[made] = memfd_create("admit-arm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
            if (memfds[made] < 0 || ftruncate(memfds[made], (off_t)bytes) != 0 ||
                fcntl(memfds[made], F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
                st = ADM_FAIL(ADM_ERR_NOMEM, "%scannot make a memory file of %zu bytes for the arm: %s", p[made].prefix,
                              bytes, strerror(errno));
        }
        if (st == ADM_OK) st = run_child(p, n, memfds);
        for (int i = 0; i < n && st == ADM_OK; i++) {
            size_t bytes = sizeof(double) * (size_t)p[i].values;
            void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, memfds[i], 0);
            if (m == MAP_FAILED) {
                st = ADM_FAIL(ADM_ERR_NOMEM, "%scannot map the arm's %zu bytes: %s", p[i].prefix, bytes, strerror(errno));
                break;
            }
            imgs[i].data = m;
            imgs[i].map_len = bytes;
            st = finish_image(&p[i], &imgs[i]);
        }
        for (int i = 0; i < made; i++)
            if (memfds[i] >= 0) close(memfds[i]);
        free(memfds);
    }
    if (st != ADM_OK)
        for (int i = 0; i < n; i++) adm_image_free(&imgs[i]);
    return st;
}
