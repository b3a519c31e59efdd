/* Internal to the capture reader and writer: the HDF5 helpers they share. */
#ifndef ADM_CAPTURE_H5_H
#define ADM_CAPTURE_H5_H

#include "capture_internal.h"

#include <hdf5.h>

/* Before any HDF5 file is opened, in every process that opens one (the
 * reader, in-process or in the sandbox child, and the writer): HDF5's own
 * error printing off (admit reports every error itself), and its dynamic
 * plugin loading off (H5PLset_loading_state(0)): no library named by
 * HDF5_PLUGIN_PATH is ever dlopen()ed on behalf of a file. */
void adm_cap_h5_init(void);
/* Closes an HDF5 id of any kind; negative ids are ignored. */
void adm_cap_h5_close(hid_t id);
/* capture_read.c: whether the file can hold the raw bytes a dataset
 * declares, before they are allocated (every chunk written, storage within
 * the file, no more than 1100:1 from the filters; no external or virtual
 * storage). ADM_ERR_FORMAT naming where when it cannot. */
adm_status adm_cap_storage_holds(hid_t d, const hsize_t *dims, int ndim, int64_t raw, const char *where);
/* heap_check.c: before H5Aread follows a variable-length string
 * attribute's heap reference, the reference and the global heap collection
 * it names are checked against the file (what libhdf5 1.10 trusts, issue 8
 * R5-R7); the string may be at most max_len bytes. ADM_ERR_FORMAT naming
 * where and the attribute when they are unsound. */
adm_status adm_cap_heap_check(hid_t attr, const char *where, const char *name, uint64_t max_len);
/* Forgets the collection checked last (at the end of reading a file). */
void adm_cap_heap_forget(void);

#endif
