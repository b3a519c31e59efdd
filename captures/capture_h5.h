/* Internal to the capture reader and writer: the HDF5 helpers they share. */
#ifndef ADM_CAPTURE_H5_H
#define ADM_CAPTURE_H5_H

#include "capture_internal.h"

#include <hdf5.h>

/* HDF5's own error printing off: admit reports every error itself. */
void adm_cap_h5_quiet(void);
/* Closes an HDF5 id of any kind; negative ids are ignored. */
void adm_cap_h5_close(hid_t id);

#endif
