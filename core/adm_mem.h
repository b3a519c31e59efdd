/* Internal: memory hints (core/tensor.c). Not part of the public API. */
#ifndef ADM_MEM_H
#define ADM_MEM_H

#include <stddef.h>

/* Asks the kernel to back the whole pages of [p, p + bytes) with
 * transparent huge pages (Linux, where THP is "madvise"-only): a buffer of
 * hundreds of MB, an oracle's value or a capture's output, then faults in
 * 2 MiB at a time instead of 4 KiB, which on a virtual machine is most of
 * the system time a command spends. Below 4 MiB, and elsewhere, nothing. */
void adm_mem_huge(void *p, size_t bytes);

#endif
