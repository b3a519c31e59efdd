/* Not an admit plugin: a library put where libhdf5 looks for filter
 * plugins (HDF5_PLUGIN_PATH). Its constructor marks the file that
 * ADM_HDF5_PLUGIN_MARK names, so a test sees whether any process loaded
 * it: admit turns libhdf5's plugin loading off (issue 15). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
    const char *p = getenv("ADM_HDF5_PLUGIN_MARK");
    FILE *f = p ? fopen(p, "a") : NULL;
    if (f) {
        fprintf(f, "dlopen()ed in process %d\n", (int)getpid());
        fclose(f);
    }
}
