/* Shared by the forked sandboxes: limits from the environment, rlimits in
 * the child, and reaping it (core/adm_child.h). */
#include "adm_child.h"
#include "adm_env.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

int64_t adm_child_env_limit(const char *name, int64_t dflt)
{
    int64_t v;
    /* an invalid value was refused before the child was asked for
     * (adm_env_check); should one appear since, the default holds */
    return adm_env_i64(name, dflt, &v) == ADM_OK ? v : dflt;
}

int adm_child_env_on(const char *name)
{
    const char *e = getenv(name);
    return !(e && (!strcmp(e, "0") || !strcmp(e, "off") || !strcmp(e, "no")));
}

/* The address space already mapped (the parent's heap, OpenMP stacks, a
 * CUDA context, a sanitizer's shadow), to which a budget is added. */
int64_t adm_child_mapped_bytes(void)
{
    long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%lld", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (int64_t)pages * sysconf(_SC_PAGESIZE);
}

void adm_child_set_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit r;
    r.rlim_cur = soft;
    r.rlim_max = hard;
    (void)setrlimit(resource, &r);
}

static pthread_mutex_t fork_gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
/* holding: this thread holds the gate; passed: this thread's fork went
 * through without taking it. The holder's own forks pass (the driver's
 * start-up may fork and exec nvidia-modprobe): waiting there would wait
 * on itself. */
static _Thread_local int holding, passed;

static void gate_prepare(void)
{
    if (holding) passed = 1;
    else pthread_mutex_lock(&fork_gate);
}
/* the child's copy was locked by the forking thread, which the child
 * continues: a default mutex may be unlocked there */
static void gate_after(void)
{
    if (passed) passed = 0;
    else pthread_mutex_unlock(&fork_gate);
}
static void gate_register(void) { (void)pthread_atfork(gate_prepare, gate_after, gate_after); }

void adm_child_gate_forks(void) { pthread_once(&gate_once, gate_register); }
void adm_child_hold_forks(void)
{
    adm_child_gate_forks();
    pthread_mutex_lock(&fork_gate);
    holding = 1;
}
void adm_child_release_forks(void)
{
    holding = 0;
    pthread_mutex_unlock(&fork_gate);
}

static void (*after_fork)(void);

int adm_child_after_next_fork(void (*fn)(void))
{
    return __atomic_exchange_n(&after_fork, fn, __ATOMIC_ACQ_REL) != NULL;
}

pid_t adm_child_fork(int pfd[2])
{
    pid_t pid;
    void (*fn)(void);
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid = fork();
    if (pid == 0) after_fork = NULL; /* the parent's to run */
#ifdef _OPENMP
    /* libgomp's thread pool does not survive fork: a parallel region in
     * the child (an emulation, the oracle) would wait for its parent's
     * workers forever. One thread gives the same bits. */
    if (pid == 0) omp_set_num_threads(1);
#endif
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        errno = e;
    } else if (pid > 0 && (fn = __atomic_exchange_n(&after_fork, NULL, __ATOMIC_ACQ_REL))) {
        int e = errno;
        fn();
        errno = e;
    }
    return pid;
}

void adm_child_reap(pid_t pid, int *wstatus)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, wstatus, 0) < 0 && errno == EINTR) {}
}
