/* Internal: where the time of a GPU replay or run goes (issue 17).
 *
 * With ADM_CUDA_TRACE=1 in the environment (read once), the parts that
 * matter for a GPU replay or run print one line each to stderr:
 *
 *   adm-trace PART MS at=START [gpu=GPU_MS]
 *
 * MS the part's wall time in milliseconds, START when it began in
 * milliseconds since the process started (the kernel's start time of
 * the process, /proc/self/stat, so that libadmit, the CUDA module and
 * the capture reader's child process share one origin), GPU_MS the
 * device time of the part by CUDA events where it ran on the device. The
 * device work is synchronized at each traced part only while tracing;
 * without ADM_CUDA_TRACE nothing is timed, printed or synchronized.
 *
 * Compiled into libadmit and, separately, into the CUDA module
 * (core/trace.c): each keeps its own copy of the state. */
#ifndef ADM_TRACE_H
#define ADM_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 where ADM_CUDA_TRACE=1. */
int adm_trace_on(void);
/* Milliseconds since the process started (0 where not tracing). */
double adm_trace_ms(void);
/* The line of a part that began at t0 (adm_trace_ms) and ends now;
 * gpu_ms < 0: no device time. Nothing where not tracing. */
void adm_trace_part(const char *part, double t0, double gpu_ms);
/* The file descriptor the lines go to (the capture reader's child sets
 * it to its copy of stderr before it silences its own). */
void adm_trace_set_fd(int fd);

#ifdef __cplusplus
}
#endif
#endif
