/* The default floating-point environment at admit's entry points
 * (core/adm_fpenv.h). */
#include "adm_fpenv.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE__))
#include <xmmintrin.h>
#define ADM_FPENV_SSE 1
/* every exception masked (bits 7-12), round to nearest (13-14 clear), no
 * FTZ (15) or DAZ (6), no flags (0-5) */
#define MXCSR_DEFAULT 0x1f80u
#endif

void adm_fpenv_save(adm_fpenv *saved)
{
    (void)fegetenv(&saved->env);
#ifdef ADM_FPENV_SSE
    saved->mxcsr = _mm_getcsr();
#else
    saved->mxcsr = 0;
#endif
}

void adm_fpenv_enter(adm_fpenv *saved)
{
    adm_fpenv_save(saved);
    /* FE_DFL_ENV: the x87 control word and, elsewhere, the whole control
     * register (aarch64's FPCR, its FZ bit included); glibc leaves MXCSR's
     * FTZ and DAZ as they were, hence the explicit write */
    (void)fesetenv(FE_DFL_ENV);
#ifdef ADM_FPENV_SSE
    _mm_setcsr(MXCSR_DEFAULT);
#endif
}

void adm_fpenv_leave(const adm_fpenv *saved)
{
    (void)fesetenv(&saved->env);
#ifdef ADM_FPENV_SSE
    _mm_setcsr(saved->mxcsr);
#endif
}
