/* Files written atomically: a temporary file beside the target, renamed
 * into place when complete. */
#include "adm_core.h"

#include <errno.h>
#include <fcntl.h>
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

static const char *kind_of_mode(mode_t m);

adm_status adm_temp_beside(const char *path, char **tmp, int *fd)
{
    size_t n = strlen(path) + 16;
    mode_t um;
    struct stat sb;
    *tmp = NULL;
    *fd = -1;
    /* the temporary file is renamed over path: a device, a FIFO or a
     * folder there (--json /dev/null) would be replaced, not written */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return ADM_FAIL(ADM_ERR_IO, "%s: is %s; a report replaces only a regular file", path, kind_of_mode(sb.st_mode));
    *tmp = malloc(n);
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

static const char *kind_of_mode(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

adm_status adm_file_open_regular(const char *path, const char *what, int *fd, int64_t *size)
{
    struct stat st;
    int f;
    *fd = -1;
    /* O_NONBLOCK: opening a FIFO without a writer would block forever */
    f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0) return ADM_FAIL(ADM_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    if (fstat(f, &st) != 0) {
        adm_status s = ADM_FAIL(ADM_ERR_IO, "%s: cannot examine %s: %s", path, what, strerror(errno));
        close(f);
        return s;
    }
    if (!S_ISREG(st.st_mode)) {
        close(f);
        return ADM_FAIL(ADM_ERR_IO, "%s: %s must be a regular file, this is %s", path, what, kind_of_mode(st.st_mode));
    }
    /* reads from a regular file never block; clear the flag anyway */
    (void)fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK);
    *fd = f;
    if (size) *size = (int64_t)st.st_size;
    return ADM_OK;
}

adm_status adm_file_check_regular(const char *path, const char *what)
{
    int fd;
    ADM_TRY(adm_file_open_regular(path, what, &fd, NULL));
    close(fd);
    return ADM_OK;
}
