/* adm_cuda_warm_start (adm_cuda.h): here, not in core, because what it
 * warms beyond the device is the implementations' and the oracle's, each
 * through its module's part of the CUDA module; the harness is what uses
 * both. */
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
    (void)warm_all();
    adm_error_clear(); /* this thread's: the callers that need the GPU say what fails */
    adm_trace_part("cuda.warm", t, -1);
    return NULL;
}

void adm_cuda_warm_start(int device, unsigned what)
{
    if (!adm_cuda_built() || warm_running) return;
    warm_device = device;
    warm_what = what;
    warm_running = pthread_create(&warm_thread, NULL, warm_main, NULL) == 0;
}

void adm_cuda_warm_wait(void)
{
    double t = adm_trace_ms();
    if (!warm_running) return;
    pthread_join(warm_thread, NULL);
    warm_running = 0;
    adm_trace_part("cuda.warm_wait", t, -1);
}
