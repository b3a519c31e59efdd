/* Internal: one library handle (cuBLAS, cuBLASLt) per device for the
 * process, created on the device's first use: a create costs tens of
 * milliseconds, the first of a process far more. Shared by the threads
 * (each handle keeps its default stream and configuration; cuBLAS and
 * cuBLASLt are thread-safe so), and never destroyed: the CUDA module is
 * never unloaded (core/cuda_load.c), and a destroy from a static
 * destructor could run after the CUDA runtime's own teardown. */
#ifndef ADM_PER_DEVICE_CUH
#define ADM_PER_DEVICE_CUH

#include <mutex>
#include <cuda_runtime.h>
#include "adm_cuda_check.h"

template <class H> class adm_per_device {
    enum { DEVICES = 64 };
    std::mutex mu_;
    H h_[DEVICES] = {};

  public:
    /* The current device's handle in *out, made by create(H *) (a status)
     * the first time; who names the caller in the error of a device
     * number past DEVICES. */
    template <class Create> adm_status get(H *out, const char *who, Create create)
    {
        int d = 0;
        ADM_CUDA_CHECK(cudaGetDevice(&d));
        if (d < 0 || d >= DEVICES)
            return adm_error_set(ADM_ERR_UNSUPPORTED, __FILE__, __LINE__, "%s: device %d (at most %d)", who, d,
                                 (int)DEVICES);
        std::lock_guard<std::mutex> g(mu_);
        if (!h_[d]) ADM_TRY(create(&h_[d]));
        *out = h_[d];
        return ADM_OK;
    }
};

#endif
