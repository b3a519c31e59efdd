/* adm_cuda_warm_start (adm_cuda.h): here, not in core, because what it
 * warms beyond the device is the implementations' and the oracle's, each
 * through its module's part of the CUDA module; the harness is what uses
 * both. */
#include "adm_child.h"
#include "adm_cuda.h"
#include "adm_cuda_module.h"
#include "adm_trace.h"
#include "candidates_cuda.h"
#include "oracle_cuda.h"

#include <pthread.h>

static pthread_t warm_thread;
static int warm_running;

static int warm_device;
static unsigned warm_what;

static adm_status warm_all(void)
{
    ADM_TRY(adm_cuda_warm_device(warm_device));
    /* run's implementations come before its oracle */
    if (warm_what & ADM_CUDA_WARM_IMPL) ADM_TRY(adm_cuda_impl_warm());
    if (warm_what & ADM_CUDA_WARM_ORACLE) ADM_TRY(adm_o_cuda_warm());
    return ADM_OK;
}

static void *warm_main(void *arg)
{
    double t = adm_trace_ms();
    (void)arg;
    /* no fork may start while the loader, the driver or cuBLAS starts
     * here (core/adm_child.h): the child would inherit their locks held */
    adm_child_hold_forks();
    (void)warm_all();
    adm_child_release_forks();
    adm_error_clear(); /* this thread's: the callers that need the GPU say what fails */
    adm_trace_part("cuda.warm", t, -1);
    return NULL;
}

void adm_cuda_warm_start(int device, unsigned what)
{
    if (!adm_cuda_built() || warm_running) return;
    warm_device = device;
    warm_what = what;
    /* before the thread exists: every fork from here on waits for its
     * start-up to end */
    adm_child_gate_forks();
    warm_running = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
}

static void start_pending(void) { adm_cuda_warm_start(warm_device, warm_what); }

void adm_cuda_warm_start_after_fork(int device, unsigned what)
{
    if (!adm_cuda_built() || warm_running) return;
    warm_device = device;
    warm_what = what;
    (void)adm_child_after_next_fork(start_pending);
}

void adm_cuda_warm_wait(void)
{
    double t = adm_trace_ms();
    /* one that was to start after a fork that never came is not started:
     * the calls that need the GPU start it themselves */
    (void)adm_child_after_next_fork(NULL);
    if (!warm_running) return;
    pthread_join(warm_thread, NULL);
    warm_running = 0;
    adm_trace_part("cuda.warm_wait", t, -1);
}
