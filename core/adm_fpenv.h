/* Internal: the floating-point environment admit computes in.
 *
 * Every number admit certifies assumes IEEE 754's defaults: round to
 * nearest even, subnormals neither flushed nor read as zero, no trap.
 * The caller's environment is the caller's (a runtime may run with
 * FTZ/DAZ on, or a plugin may leave a rounding mode behind), so each
 * entry point that computes a verdict, an oracle value or an emulated
 * kernel's output saves the calling thread's environment, sets the
 * default, and restores the caller's on the way out; an OpenMP region
 * does the same in each of its threads (a pool thread keeps the
 * environment of the thread that made it). Not part of the public API. */
#ifndef ADM_FPENV_H
#define ADM_FPENV_H

#include <fenv.h>

typedef struct adm_fpenv {
    fenv_t env;
    unsigned int mxcsr; /* x86: SSE's control and status (FTZ and DAZ are not all fenv_t restores) */
} adm_fpenv;

/* The body an entry point runs between adm_fpenv_enter and _leave: never
 * inlined into it nor analyzed across the call, so that the compiler
 * (which assumes the default environment throughout) cannot move its
 * arithmetic out from between the two. */
#if defined(__GNUC__) && !defined(__clang__)
#define ADM_FPENV_BODY __attribute__((noipa))
#else
#define ADM_FPENV_BODY __attribute__((noinline))
#endif

/* Saves the calling thread's environment in *saved and sets the default:
 * round to nearest, no FTZ/DAZ, every exception masked, no flags. */
void adm_fpenv_enter(adm_fpenv *saved);
/* Restores what adm_fpenv_enter or _save saved (flags raised since are
 * dropped). */
void adm_fpenv_leave(const adm_fpenv *saved);
/* Saves the calling thread's environment in *saved, changing nothing. */
void adm_fpenv_save(adm_fpenv *saved);

#endif
