/* A plugin's code runs in a child process, never in admit's: loading the
 * shared object (its constructors), its query and its kernel. A plugin
 * that crashes, calls exit, loops, allocates without bound, writes
 * outside its output, changes the floating-point environment or forks
 * daemons fails its own call (and so its own table entry or run row);
 * admit's process, its floating-point state and its later entries are
 * untouched.
 *
 * Three processes per call:
 *
 *   admit ── supervisor (own process group, a child subreaper)
 *                └─ worker (own process group): dlopen, query, [run]
 *
 * The worker loads the plugin, asks its query, copies the kernel's
 * descriptor (adm_plugin_desc: fixed-size, strings bounded) into a page
 * shared with admit, and for a run calls the kernel on the inputs (the
 * parent's memory as the fork left it, copy-on-write) with its output in a
 * shared mapping that ends at a guard page (a write past the end faults
 * and is named as such) and starts after canary bytes (a write before the
 * start is found when the worker is done). Everything the worker writes is
 * read as hostile: admit copies the page, then checks every field.
 *
 * The supervisor bounds the worker's wall clock (then SIGKILL to the
 * worker's group) and, once the worker has ended, kills what it left
 * behind: its process group (SIGKILL while the worker's zombie still holds
 * the group's id), then, being a subreaper, every descendant the kernel
 * hands it as their parents end (whatever session or group they moved
 * to, so a setsid daemon too), listed from /proc/self/task/TID/children,
 * until it has no child left (at most 2 s). It reports the worker's wait
 * status in a page of its own, which the worker unmaps before it loads
 * anything. Each waits for its child's exit (a pidfd), not for a pipe
 * that a daemon could hold open, so a call ends when the worker does.
 *
 * What remains possible, for a plugin that means it (a table naming a
 * plugin is code, RELIABILITY.md): a descendant that undoes its parent
 * death signal and outlives the supervisor (killed first by the plugin,
 * or when admit itself dies) goes to init; without /proc's children lists
 * only the worker's process group is killed; a fork bomb faster than the
 * sweep leaves processes behind after 2 s (the call then fails, saying
 * so). The worker's memory and CPU are limited; its descendants' are each
 * limited alike (rlimits are inherited), not in total. Limits:
 * ADM_PLUGIN_CPU (s, default 300), ADM_PLUGIN_TIMEOUT (s, default three
 * times the CPU; 0: none), ADM_PLUGIN_MEMORY (bytes or K/M/G, default
 * 8 GiB, at most the machine's memory), for the query as for the kernel.
 * ADM_PLUGIN_SANDBOX=off runs plugins in-process, for a debugger.
 *
 * A CUDA plugin runs in the worker too; that works only while admit's
 * process has not initialized CUDA itself (a CUDA context does not
 * survive fork): turn the sandbox off for CUDA plugins in a process that
 * uses the GPU. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, PR_SET_CHILD_SUBREAPER, sigaction's SA_SIGINFO fields */
#include "adm_candidates.h"
#include "adm_child.h"
#include "adm_fpenv.h"
#include "plugin.h"
#include "plugin_sandbox.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY 0xA5
#define ERR_LEN 256
#define SWEEP_MS 2000     /* the most time the supervisor spends killing the worker's descendants */
#define GRACE_MS 5000     /* admit's wait for the supervisor beyond the worker's wall clock */

/* How far the worker got: what a crash is reported in. */
enum { STAGE_START = 0, STAGE_LOAD, STAGE_SYMBOL, STAGE_QUERY, STAGE_DESCRIBE, STAGE_RUN, STAGE_COUNT };
/* The worker's answer once it got to the end. */
enum { ANS_OK = 0, ANS_LOAD, ANS_NO_SYMBOL, ANS_NO_KERNEL, ANS_CHANGED, ANS_COUNT };

/* The worker's page, shared with admit. */
typedef struct ctl {
    volatile int32_t stage, answer, done, rc;
    volatile int32_t fault; /* 1 past the end, 3 before the start, 2 elsewhere, 4 a sanitizer's report */
    char err[ERR_LEN];      /* the kernel's message, or the loader's */
    adm_plugin_desc desc;
} ctl;

/* The supervisor's page, shared with admit; the worker unmaps it first. */
typedef struct sup {
    volatile int32_t reported; /* 1 once the rest is written */
    volatile int32_t forked, fork_errno, wstatus, timed_out, killed, stray;
} sup;

typedef struct job {
    const char *path, *kname;
    const adm_plugin_desc *expect; /* NULL: a query */
    const char *params;
    const adm_plugin_tensor *in;
    int n;
    adm_plugin_tensor out;         /* its data in the shared mapping */
    int64_t cpu, wall, mem;
} job;

int adm_plugin_sandbox_enabled(void) { return adm_child_env_on("ADM_PLUGIN_SANDBOX"); }

/* ---------------------------------------------------------------- the worker */

/* In the worker: where a fault hit, for admit's message. */
static ctl *child_ctl;
static char *guard_lo, *guard_hi; /* the trailing guard page */
static char *lead_lo, *lead_hi;   /* the leading one */

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    char *a = (char *)si->si_addr;
    (void)uc;
    if (child_ctl) child_ctl->fault = (a >= guard_lo && a < guard_hi) ? 1 : (a >= lead_lo && a < lead_hi) ? 3 : 2;
    signal(sig, SIG_DFL);
    raise(sig);
}

#ifdef ADM_SANITIZED
/* In a sanitized build's worker, a sanitizer's report (an allocation
 * refused at the memory limit, an overflow) ends it by SIGABRT whatever
 * ASAN_OPTIONS say (exitcode, abort_on_error, allocator_may_return_null),
 * so that admit names the failure alike in every configuration. */
static void on_sanitizer_death(void)
{
    if (child_ctl) child_ctl->fault = 4;
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
}
#endif

/* Its parent's death kills this process; 0 when the parent is already gone. */
static int tie_to_parent(pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return getppid() == parent;
}

static void finish(ctl *c, int answer) __attribute__((noreturn));
static void finish(ctl *c, int answer)
{
    c->answer = answer;
    c->err[ERR_LEN - 1] = '\0';
    c->done = 1;
    _exit(0);
}

static void worker(const job *j, ctl *c, char *pad, size_t span, long page, pid_t parent) __attribute__((noreturn));
static void worker(const job *j, ctl *c, char *pad, size_t span, long page, pid_t parent)
{
    struct sigaction sa;
    adm_plugin_tensor o = j->out;
    adm_plugin_query_fn q;
    const adm_plugin_kernel *k;
    void *h;
    const char *e;
    adm_fpenv loaded;
    int devnull;
    setpgid(0, 0);
    if (!tie_to_parent(parent)) _exit(127);
#ifdef ADM_SANITIZED
    __sanitizer_set_death_callback(on_sanitizer_death);
    if ((devnull = open("/dev/null", O_WRONLY)) >= 0) __sanitizer_set_report_fd((void *)(intptr_t)devnull);
#else
    (void)devnull;
#endif
    child_ctl = c;
    guard_lo = pad + span;
    guard_hi = guard_lo + page;
    lead_lo = pad - page;
    lead_hi = pad;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    adm_child_set_limit(RLIMIT_CORE, 0, 0);
    if (j->cpu > 0) adm_child_set_limit(RLIMIT_CPU, (rlim_t)j->cpu, (rlim_t)j->cpu + 1);
    if (j->mem > 0) {
        rlim_t as = (rlim_t)(adm_child_mapped_bytes() + j->mem);
        adm_child_set_limit(RLIMIT_AS, as, as);
    }
    c->stage = STAGE_LOAD;
    if (!(h = dlopen(j->path, RTLD_NOW | RTLD_LOCAL))) {
        e = dlerror();
        snprintf(c->err, ERR_LEN, "%s", e ? e : "unknown error");
        finish(c, ANS_LOAD);
    }
    /* the kernel runs in the environment its library's loading leaves (a
     * constructor may set FTZ/DAZ, as -ffast-math's does in a runtime
     * too), not in what its query sets */
    adm_fpenv_save(&loaded);
    c->stage = STAGE_SYMBOL;
    *(void **)(&q) = dlsym(h, ADM_PLUGIN_QUERY_SYMBOL);
    if (!q) finish(c, ANS_NO_SYMBOL);
    c->stage = STAGE_QUERY;
    if (!(k = q(j->kname))) finish(c, ANS_NO_KERNEL);
    c->stage = STAGE_DESCRIBE;
    adm_plugin_describe(k, &c->desc);
    if (!j->expect) finish(c, ANS_OK);
    /* what admit sized the output for and judges as this kernel */
    if (c->desc.abi_version != j->expect->abi_version || c->desc.struct_size != j->expect->struct_size ||
        c->desc.output_dtype != j->expect->output_dtype || c->desc.has_run != 1 ||
        strcmp(c->desc.op, j->expect->op) != 0)
        finish(c, ANS_CHANGED);
    c->stage = STAGE_RUN;
    adm_fpenv_leave(&loaded);
    c->rc = k->run(j->params, j->in, j->n, &o, c->err, ERR_LEN);
    finish(c, ANS_OK);
}

/* ---------------------------------------------------------------- the supervisor */

/* Waits up to ms (< 0: without end) for the child pid to end, leaving it
 * a zombie to be reaped (WNOWAIT: its pid, and its process group's id,
 * stay taken meanwhile): 1 once it has ended (or is gone), 0 at the
 * deadline. A pidfd wakes the wait when it ends; without one (before
 * Linux 5.3) the status is polled, backing off to 10 ms. No signal is
 * used: nothing here depends on the caller's handlers or mask. */
static int wait_end(pid_t pid, int64_t ms)
{
    struct timespec t0, now, pause = {0, 50000};
    int fd = -1, ended = 0;
#ifdef SYS_pidfd_open
    fd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        siginfo_t si;
        int64_t left;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | WNOHANG) == 0 ? si.si_pid == pid : errno != EINTR) {
            ended = 1;
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        left = ms - ((int64_t)(now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (ms >= 0 && left <= 0) break;
        if (fd >= 0) {
            struct pollfd p = {fd, POLLIN, 0};
            (void)poll(&p, 1, ms < 0 ? -1 : (int)(left > INT_MAX ? INT_MAX : left));
        } else {
            nanosleep(&pause, NULL);
            if (pause.tv_nsec < 10000000) pause.tv_nsec *= 2;
        }
    }
    if (fd >= 0) close(fd);
    return ended;
}

/* Reaps the child pid that has ended: its wait status (0 when it is gone). */
static int reap(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 0;
    return st;
}

/* Kills every child this process has, over and over, reaping them, until
 * it has none: a subreaper inherits each killed process's children.
 * Returns 0, or 1 when some were still there after SWEEP_MS. Without
 * /proc's children list it can only reap what has ended already. */
static int sweep(volatile int32_t *killed)
{
    char path[64], buf[4096];
    pid_t self = getpid();
    struct timespec t0, now, pause = {0, 200000};
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)self, (int)self);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int fd = open(path, O_RDONLY | O_CLOEXEC), st;
        ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        pid_t r;
        if (fd >= 0) close(fd);
        if (len > 0) {
            char *p = buf, *end;
            buf[len] = '\0';
            /* a child listed is this process's until reaped: its pid cannot be reused meanwhile */
            for (long v; (v = strtol(p, &end, 10)), end != p; p = end)
                if (v > 1) kill((pid_t)v, SIGKILL);
        }
        while ((r = waitpid(-1, &st, WNOHANG)) > 0) (*killed)++;
        if (r < 0 && errno == ECHILD) return 0;
        if (len < 0) return 0; /* cannot list them: what is left goes to init */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > SWEEP_MS) return 1;
        nanosleep(&pause, NULL);
    }
}

static void supervisor(const job *j, ctl *c, char *pad, size_t span, long page, sup *s, size_t slen, pid_t admit)
    __attribute__((noreturn));
static void supervisor(const job *j, ctl *c, char *pad, size_t span, long page, sup *s, size_t slen, pid_t admit)
{
    pid_t w, self = getpid();
    setpgid(0, 0);
    if (!tie_to_parent(admit)) _exit(127);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    signal(SIGCHLD, SIG_DFL); /* the caller may ignore SIGCHLD: then nothing could be waited for */
    w = fork();
    if (w < 0) {
        s->fork_errno = errno;
        s->reported = 1;
        _exit(0);
    }
    if (w == 0) {
        munmap(s, slen);
        worker(j, c, pad, span, page, self);
    }
    s->forked = 1;
    setpgid(w, w);
    if (!wait_end(w, j->wall > 0 ? (j->wall > INT64_MAX / 1000 ? -1 : j->wall * 1000) : -1)) {
        s->timed_out = 1;
        kill(-w, SIGKILL);
        kill(w, SIGKILL);
        wait_end(w, -1);
    }
    /* the worker's group, while its zombie keeps the group's id from reuse */
    kill(-w, SIGKILL);
    s->wstatus = reap(w);
    s->stray = sweep(&s->killed);
    s->reported = 1;
    _exit(0);
}

/* ---------------------------------------------------------------- admit's side */

static const char *sig_name(int s)
{
    switch (s) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGXCPU: return "SIGXCPU (its CPU time)";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

/* Runs job j in a supervisor and a worker; on return *c is a copy of the
 * worker's page and ADM_OK means the worker got to the end (c->done), with
 * its answer in c->answer; anything else is the plugin's failure, named. */
static adm_status call(job *j, size_t out_bytes, ctl *c, void *out_data)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t cpages = (sizeof(ctl) + (size_t)page - 1) / (size_t)page * (size_t)page;
    size_t span = (out_bytes + (size_t)page - 1) / (size_t)page * (size_t)page, total, slen = (size_t)page;
    long pages = sysconf(_SC_PHYS_PAGES);
    int64_t phys = pages > 0 ? (int64_t)pages * page : (int64_t)1 << 36;
    char *map, *pad, *data, subject[1400];
    ctl *wc;
    sup *s, sv;
    pid_t pid, admit = getpid();
    int wstatus = 0, ended;
    const char *kname = j->kname;
    adm_status st = ADM_OK;
    j->cpu = adm_child_env_limit("ADM_PLUGIN_CPU", 300);
    j->wall = adm_child_env_limit("ADM_PLUGIN_TIMEOUT", 3 * j->cpu);
    j->mem = adm_child_env_limit("ADM_PLUGIN_MEMORY", (int64_t)8 << 30);
    if (j->mem > phys) j->mem = phys;
    if (span == 0) span = (size_t)page;
    /* [worker's page(s)][guard][pad + output, ending at][guard] */
    total = cpages + (size_t)page * 2 + span;
    map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return ADM_FAIL(ADM_ERR_NOMEM, "plugin %s: cannot map %zu bytes for its process: %s", j->path, total,
                        strerror(errno));
    s = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        munmap(map, total);
        return ADM_FAIL(ADM_ERR_NOMEM, "plugin %s: cannot map its supervisor's page: %s", j->path, strerror(errno));
    }
    wc = (ctl *)map;
    pad = map + cpages + page;
    data = pad + (span - out_bytes);
    if (mprotect(map + cpages, (size_t)page, PROT_NONE) != 0 || mprotect(pad + span, (size_t)page, PROT_NONE) != 0) {
        munmap(map, total);
        munmap(s, slen);
        return ADM_FAIL(ADM_ERR_NOMEM, "plugin %s: cannot set guard pages: %s", j->path, strerror(errno));
    }
    memset(pad, CANARY, span - out_bytes);
    j->out.data = data;
    fflush(NULL); /* else the children could write admit's buffered output again */
    pid = fork();
    if (pid < 0) {
        int e = errno;
        munmap(map, total);
        munmap(s, slen);
        return ADM_FAIL(ADM_ERR_IO, "plugin %s: cannot start its process: %s", j->path, strerror(e));
    }
    if (pid == 0) supervisor(j, wc, pad, span, page, s, slen, admit);
    setpgid(pid, pid);
    ended = wait_end(pid, j->wall > 0 ? (j->wall > INT64_MAX / 1000 - GRACE_MS ? -1 : j->wall * 1000 + GRACE_MS) : -1);
    if (!ended) { /* the supervisor itself is stuck (stopped by the plugin?): its group goes, the worker with it */
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        wait_end(pid, -1);
    }
    wstatus = reap(pid);
    /* copies first: a process that escaped may still write */
    memcpy(c, wc, sizeof *c);
    memcpy(&sv, s, sizeof sv);
    c->err[ERR_LEN - 1] = '\0';
    if (c->stage < STAGE_START || c->stage >= STAGE_COUNT) c->stage = STAGE_START;
    /* what failed: how far the worker got, or, once it is done, the call */
    switch (c->done ? (j->expect ? STAGE_RUN : STAGE_QUERY) : c->stage) {
    case STAGE_RUN: snprintf(subject, sizeof subject, "plugin kernel '%s'", kname); break;
    case STAGE_DESCRIBE:
        snprintf(subject, sizeof subject, "plugin %s: reading the struct of kernel '%s'", j->path, kname);
        break;
    case STAGE_SYMBOL: case STAGE_QUERY:
        snprintf(subject, sizeof subject, "plugin %s: its query for kernel '%s'", j->path, kname);
        break;
    default: snprintf(subject, sizeof subject, "plugin %s: loading it", j->path); break;
    }
    if (!ended || sv.reported != 1)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s: the process watching it ended abnormally (%s)", subject,
                      !ended ? "it did not end" : WIFSIGNALED(wstatus) ? sig_name(WTERMSIG(wstatus)) : "no report");
    else if (!sv.forked)
        st = ADM_FAIL(ADM_ERR_IO, "plugin %s: cannot start its process: %s", j->path, strerror(sv.fork_errno));
    else if (sv.timed_out && !c->done)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s did not finish within %lld s (ADM_PLUGIN_TIMEOUT)", subject,
                      (long long)j->wall);
    else if (c->stage == STAGE_RUN && c->fault == 1)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s wrote past the end of its output (%zu bytes)", subject, out_bytes);
    else if (c->stage == STAGE_RUN && c->fault == 3)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s wrote before the start of its output", subject);
    else if (!c->done && WIFSIGNALED(sv.wstatus) && WTERMSIG(sv.wstatus) == SIGXCPU)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s used its %lld s of CPU time (ADM_PLUGIN_CPU)", subject, (long long)j->cpu);
    else if (!c->done && WIFSIGNALED(sv.wstatus))
        st = ADM_FAIL(ADM_ERR_INVALID, "%s crashed (%s%s; its memory limit is %lld MiB, ADM_PLUGIN_MEMORY)", subject,
                      sig_name(WTERMSIG(sv.wstatus)),
                      c->fault == 2 ? ", a bad memory access" : c->fault == 4 ? ", after a sanitizer's report" : "",
                      (long long)(j->mem >> 20));
    else if (!c->done)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s ended its process (exit status %d) without finishing", subject,
                      WIFEXITED(sv.wstatus) ? WEXITSTATUS(sv.wstatus) : -1);
    else if (sv.stray)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s left processes that could not be stopped within %d ms", subject, SWEEP_MS);
    else if (c->answer < ANS_OK || c->answer >= ANS_COUNT)
        st = ADM_FAIL(ADM_ERR_INVALID, "%s gave an answer admit does not know (%d)", subject, (int)c->answer);
    else if (c->stage == STAGE_RUN)
        for (size_t i = 0; i < span - out_bytes; i++)
            if ((unsigned char)pad[i] != CANARY) {
                st = ADM_FAIL(ADM_ERR_INVALID, "%s wrote before the start of its output", subject);
                break;
            }
    if (st == ADM_OK && out_data && c->stage == STAGE_RUN) memcpy(out_data, data, out_bytes);
    munmap(map, total);
    munmap(s, slen);
    return st;
}

/* The worker's answer other than ANS_OK, as admit's error. */
static adm_status refused(const job *j, const ctl *c)
{
    switch (c->answer) {
    case ANS_LOAD: return ADM_FAIL(ADM_ERR_IO, "plugin %s: cannot load: %s", j->path, c->err);
    case ANS_NO_SYMBOL:
        return ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no symbol '%s' (expected the entry point of "
                        "candidates/plugin.h)", j->path, ADM_PLUGIN_QUERY_SYMBOL);
    case ANS_NO_KERNEL: return ADM_FAIL(ADM_ERR_NOT_FOUND, "plugin %s: no kernel named '%s'", j->path, j->kname);
    default:
        return ADM_FAIL(ADM_ERR_INVALID, "plugin %s: its query for kernel '%s' now describes another kernel than "
                        "when it was loaded (op, output dtype or ABI version)", j->path, j->kname);
    }
}

adm_status adm_plugin_query_sandboxed(const char *path, const char *kname, adm_plugin_desc *d)
{
    job j;
    ctl c;
    memset(&j, 0, sizeof j);
    memset(d, 0, sizeof *d);
    j.path = path;
    j.kname = kname;
    ADM_TRY(call(&j, 0, &c, NULL));
    if (c.answer != ANS_OK) return refused(&j, &c);
    *d = c.desc;
    return ADM_OK;
}

adm_status adm_plugin_run_sandboxed(const char *path, const char *kname, const adm_plugin_desc *expect,
                                    const char *params, const adm_plugin_tensor *in, int n, adm_plugin_tensor *out,
                                    size_t out_bytes, char *err, size_t err_len, int *rc)
{
    job j;
    ctl c;
    memset(&j, 0, sizeof j);
    j.path = path;
    j.kname = kname;
    j.expect = expect;
    j.params = params;
    j.in = in;
    j.n = n;
    j.out = *out;
    ADM_TRY(call(&j, out_bytes, &c, out->data));
    if (c.answer != ANS_OK) return refused(&j, &c);
    *rc = c.rc;
    snprintf(err, err_len, "%s", c.err);
    return ADM_OK;
}
