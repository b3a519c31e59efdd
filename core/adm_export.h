/* ADM_API marks libadmit's public API. The library is compiled with
 * -fvisibility=hidden, so a function is exported from libadmit.so only when
 * its declaration in an installed header carries ADM_API; internal headers
 * (oracle_internal.h, harness_internal.h, ...) never use it. Tests, fuzz
 * targets and benches that need internals link the static admit_internal
 * archive instead (CMakeLists.txt); ctest `exported_symbols` checks that
 * libadmit.so exports exactly the ADM_API declarations of the installed
 * headers. */
#ifndef ADM_EXPORT_H
#define ADM_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define ADM_API __attribute__((visibility("default")))
#else
#define ADM_API
#endif

#endif
