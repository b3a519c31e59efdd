/* Plugin kernels run in a child process (fork) under CPU-time, memory and
 * wall-clock limits: a kernel that crashes, hangs, allocates without bound
 * or writes outside its output fails its own run (and so its own table
 * entry or run row), never admit. The inputs are the parent's memory as
 * the fork left it (copy-on-write: whatever the kernel scribbles on them
 * stays in the child); the output is a shared mapping that ends at a
 * guard page (a write past the end faults and is named as such) and
 * starts after canary bytes (a write before the start is found when the
 * child is done). ADM_PLUGIN_SANDBOX=off runs kernels in-process, for a
 * debugger. Limits: ADM_PLUGIN_CPU (s, default 300), ADM_PLUGIN_TIMEOUT
 * (s, default three times the CPU), ADM_PLUGIN_MEMORY (bytes or K/M/G,
 * default 8 GiB, at most the machine's memory).
 *
 * A CUDA plugin runs in the child too; that works only while the parent
 * has not initialized CUDA itself (a CUDA context does not survive fork):
 * turn the sandbox off for CUDA plugins in a process that uses the GPU. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, sigaction's SA_SIGINFO fields */
#include "adm_candidates.h"
#include "adm_child.h"
#include "plugin.h"
#include "plugin_sandbox.h"

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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CANARY 0xA5
#define ERR_LEN 256

typedef struct ctl {
    volatile int32_t done, rc, fault; /* fault: 1 past the end, 3 before the start, 2 elsewhere, 4 a sanitizer's report */
    char err[ERR_LEN];
} ctl;

int adm_plugin_sandbox_enabled(void) { return adm_child_env_on("ADM_PLUGIN_SANDBOX"); }

/* In the child: where a fault hit, for the parent's message. */
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
/* In a sanitized build's child, a sanitizer's report (an allocation
 * refused at the memory limit, an overflow) ends it by SIGABRT whatever
 * ASAN_OPTIONS say (exitcode, abort_on_error, allocator_may_return_null),
 * so that the parent names the failure alike in every configuration. */
static void on_sanitizer_death(void)
{
    if (child_ctl) child_ctl->fault = 4;
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
}
#endif

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

adm_status adm_plugin_run_sandboxed(const adm_plugin_kernel *k, const char *kname, const char *params,
                                    const adm_plugin_tensor *in, int n, adm_plugin_tensor *out, size_t out_bytes,
                                    char *err, size_t err_len, int *rc)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t span = (out_bytes + (size_t)page - 1) / (size_t)page * (size_t)page, total;
    char *map, *data, *pad;
    ctl *c;
    int pfd[2], wstatus = 0, timed_out = 0;
    pid_t pid;
    int64_t cpu = adm_child_env_limit("ADM_PLUGIN_CPU", 300), wall = adm_child_env_limit("ADM_PLUGIN_TIMEOUT", 3 * cpu);
    long pages = sysconf(_SC_PHYS_PAGES);
    int64_t phys = pages > 0 ? (int64_t)pages * page : (int64_t)1 << 36;
    int64_t mem = adm_child_env_limit("ADM_PLUGIN_MEMORY", (int64_t)8 << 30);
    struct timespec deadline;
    if (mem > phys) mem = phys;
    if (span == 0) span = (size_t)page;
    /* [control page][guard][pad + output, ending at][guard] */
    total = (size_t)page * 3 + span;
    map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        return ADM_FAIL(ADM_ERR_NOMEM, "plugin kernel '%s': cannot map %zu bytes for its output: %s", kname, total,
                        strerror(errno));
    c = (ctl *)map;
    pad = map + 2 * page;
    data = pad + (span - out_bytes);
    if (mprotect(map + page, (size_t)page, PROT_NONE) != 0 ||
        mprotect(pad + span, (size_t)page, PROT_NONE) != 0) {
        munmap(map, total);
        return ADM_FAIL(ADM_ERR_NOMEM, "plugin kernel '%s': cannot set guard pages: %s", kname, strerror(errno));
    }
    memset(pad, CANARY, span - out_bytes);
    if (pipe(pfd) != 0) {
        munmap(map, total);
        return ADM_FAIL(ADM_ERR_IO, "plugin kernel '%s': cannot make a pipe: %s", kname, strerror(errno));
    }
    pid = adm_child_fork(pfd);
    if (pid < 0) {
        munmap(map, total);
        return ADM_FAIL(ADM_ERR_IO, "plugin kernel '%s': cannot start its process: %s", kname, strerror(errno));
    }
    if (pid == 0) {
        struct sigaction sa;
        adm_plugin_tensor o = *out;
        int devnull;
        close(pfd[0]);
#ifdef ADM_SANITIZED
        __sanitizer_set_death_callback(on_sanitizer_death);
        if ((devnull = open("/dev/null", O_WRONLY)) >= 0) __sanitizer_set_report_fd((void *)(intptr_t)devnull);
#else
        (void)devnull;
#endif
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        child_ctl = c;
        guard_lo = pad + span;
        guard_hi = guard_lo + page;
        lead_lo = map + page;
        lead_hi = lead_lo + page;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        adm_child_set_limit(RLIMIT_CORE, 0, 0);
        if (cpu > 0) adm_child_set_limit(RLIMIT_CPU, (rlim_t)cpu, (rlim_t)cpu + 1);
        if (mem > 0) {
            rlim_t as = (rlim_t)(adm_child_mapped_bytes() + mem);
            adm_child_set_limit(RLIMIT_AS, as, as);
        }
        o.data = data;
        c->rc = k->run(params, in, n, &o, c->err, sizeof c->err);
        c->err[ERR_LEN - 1] = '\0';
        c->done = 1;
        _exit(0);
    }
    close(pfd[1]);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += wall > INT_MAX ? INT_MAX : (time_t)wall;
    /* The pipe's far end closes when the child ends. */
    for (;;) {
        struct timespec now;
        struct pollfd p = {pfd[0], POLLIN, 0};
        int64_t left;
        char b;
        clock_gettime(CLOCK_MONOTONIC, &now);
        left = (int64_t)(deadline.tv_sec - now.tv_sec) * 1000 + (deadline.tv_nsec - now.tv_nsec) / 1000000;
        if (wall > 0 && left <= 0) { timed_out = 1; break; }
        if (poll(&p, 1, wall > 0 ? (int)(left > INT_MAX ? INT_MAX : left) : -1) < 0 && errno != EINTR) break;
        if (p.revents && read(pfd[0], &b, 1) <= 0) break;
    }
    close(pfd[0]);
    adm_child_reap(pid, &wstatus);
    {
        adm_status st = ADM_OK;
        if (timed_out && !c->done)
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' did not finish within %lld s (ADM_PLUGIN_TIMEOUT)",
                          kname, (long long)wall);
        else if (c->fault == 1)
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' wrote past the end of its output (%zu bytes)", kname,
                          out_bytes);
        else if (c->fault == 3)
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' wrote before the start of its output", kname);
        else if (!c->done && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU)
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' used its %lld s of CPU time (ADM_PLUGIN_CPU)", kname,
                          (long long)cpu);
        else if (!c->done && WIFSIGNALED(wstatus))
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' crashed (%s%s; its memory limit is %lld MiB, "
                          "ADM_PLUGIN_MEMORY)", kname, sig_name(WTERMSIG(wstatus)),
                          c->fault == 2 ? ", a bad memory access" : c->fault == 4 ? ", after a sanitizer's report" : "",
                          (long long)(mem >> 20));
        else if (!c->done)
            st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' ended its process (exit status %d) without finishing",
                          kname, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
        else
            for (size_t i = 0; i < span - out_bytes; i++)
                if ((unsigned char)pad[i] != CANARY) {
                    st = ADM_FAIL(ADM_ERR_INVALID, "plugin kernel '%s' wrote before the start of its output", kname);
                    break;
                }
        if (st == ADM_OK) {
            memcpy(out->data, data, out_bytes);
            *rc = c->rc;
            snprintf(err, err_len, "%s", c->err);
        }
        munmap(map, total);
        return st;
    }
}
