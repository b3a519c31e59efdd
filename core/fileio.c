/* Files written atomically: a temporary file beside the target, renamed
 * into place when complete. */
#include "adm_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

char *adm_strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s ? s : "", n);
    return d;
}

adm_status adm_temp_beside(const char *path, char **tmp, int *fd)
{
    size_t n = strlen(path) + 16;
    mode_t um;
    *tmp = malloc(n);
    *fd = -1;
    if (!*tmp) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    snprintf(*tmp, n, "%s.tmp.XXXXXX", path);
    *fd = mkstemp(*tmp);
    if (*fd < 0) {
        adm_status st = ADM_FAIL(ADM_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return st;
    }
    /* mkstemp makes the file 0600; the result gets the usual mode */
    um = umask(0);
    umask(um);
    (void)fchmod(*fd, 0666 & ~um);
    return ADM_OK;
}
