/* The sandboxed capture reader: a capture from someone else is parsed by a
 * child process (fork) under memory, CPU-time and wall-clock limits, and
 * handed back through a pipe. libhdf5 1.10 can crash, loop forever or
 * allocate gigabytes on one or two corrupted bytes (issue 8, R5-R7); in the
 * child such a fault costs the child only, and the parent reports the
 * capture as corrupt, naming what the library was reading: before each
 * libhdf5 call the reader writes that into a page shared with the parent
 * (ADM_CAPTURE_TRACE in capture.c).
 *
 * The parent trusts nothing the child sends: the stream is decoded with
 * every length, dtype, rank, extent, offset, name and index checked before
 * use, as if the child had been subverted by the file it read.
 *
 * The tensors' bytes do not go through the pipe: the child writes them
 * into a memory file (memfd) the parent made before the fork, and the
 * parent maps it once the child is gone (no copy, and no ping-pong of
 * pipe buffers between two processes on a loaded machine); the capture
 * owns that mapping (adm_sandbox_arena_free). The child's RLIMIT_FSIZE
 * bounds the memory file by the same memory limit.
 *
 * Wire format (native byte order: both ends are this process image):
 *   u32 magic "ADMS", u32 status
 *   status != 0: str message                                       (end)
 *   status == 0: i32 version, i64 step, i32 oracle_certified,
 *                str op, params, model, layer, source,
 *                records until tag 0:
 *                  u8 tag, [u32 case for the special tags], ...
 *   str: u32 length, bytes (no NUL)
 *   tensor: u32 dtype, u32 ndim, i64 shape[ndim], u64 offset of its
 *           numel * storage bytes in the memory file: each tensor starts
 *           where the last ended, rounded up to 64 bytes
 */
/* MAP_ANONYMOUS and F_SETPIPE_SZ are outside POSIX. */
#define _GNU_SOURCE
#include "capture_internal.h"
#include "adm_child.h"
#include "adm_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WIRE_MAGIC 0x534d4441u /* "ADMS" */
#define STR_MAX ((1u << 20) + 1)
#define MSG_MAX 32768u /* above the library's longest message (core/status.c) */
#define CRUMB_LEN 1024
#define MAX_RECORDS 65536
#define ARENA_ALIGN 64

enum {
    TAG_END = 0, TAG_INPUT, TAG_REFERENCE, TAG_CANDIDATE, TAG_ORACLE, TAG_ORACLE_BOUND,
    TAG_SPECIAL, TAG_SPECIAL_INPUT, TAG_SPECIAL_REFERENCE, TAG_SPECIAL_REFUSAL, TAG_SPECIAL_CANDIDATE
};

/* ---------------------------------------------------------------- the trace */

char *adm_capture_crumb_;
static const char *crumb_path;

void adm_capture_trace(const char *fmt, ...)
{
    /* room for the path, which is dropped: what is left fits the page */
    char buf[PATH_MAX + CRUMB_LEN], *p;
    size_t plen = crumb_path ? strlen(crumb_path) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* The reader's "where" strings start with the file's path: the
     * message names the file once, so drop it here. */
    while (plen && (p = strstr(buf, crumb_path)) && p[plen] == ':' && p[plen + 1] == ' ')
        memmove(p, p + plen + 2, strlen(p + plen + 2) + 1);
    if ((p = strstr(buf, "of root")) && p[7] == '\0') snprintf(p, sizeof buf - (size_t)(p - buf), "of the root group");
    memcpy(adm_capture_crumb_, buf, CRUMB_LEN);
    adm_capture_crumb_[CRUMB_LEN - 1] = '\0';
}

/* ---------------------------------------------------------------- limits */

int adm_sandbox_enabled(void) { return adm_child_env_on("ADM_SANDBOX"); }

void adm_sandbox_limits_for(const char *path, adm_sandbox_limits *lim)
{
    struct stat sb;
    int64_t size = (path && stat(path, &sb) == 0 && sb.st_size > 0) ? (int64_t)sb.st_size : 0;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int64_t phys = (pages > 0 && psz > 0) ? (int64_t)pages * psz : (int64_t)1 << 36;
    int64_t mem;
    /* Memory: 1 GiB for the library and its caches, plus 16 times the
     * file (room for gzip-compressed tensors at 16:1; the activations of a
     * DiT compress about 1.3:1), at most the machine's memory. */
    mem = ((int64_t)1 << 30) + (size > (phys >> 4) ? phys : 16 * size);
    if (mem > phys) mem = phys;
    lim->memory_bytes = adm_child_env_limit("ADM_SANDBOX_MEMORY", mem);
    /* CPU time: 5 s plus a second per 16 MiB of file (inflating gzip runs
     * at some 300 MB/s; a small capture reads in 50 ms); the wall clock
     * three times that, for a loaded machine. */
    lim->cpu_seconds = (int)adm_child_env_limit("ADM_SANDBOX_CPU", 5 + (size >> 24));
    lim->wall_seconds = (int)adm_child_env_limit("ADM_SANDBOX_TIMEOUT", 3 * lim->cpu_seconds);
}

/* ---------------------------------------------------------------- the child's side */

static int raw_write(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Small fields gather in a buffer; a tensor's data goes out directly. */
static char wbuf[1 << 16];
static size_t wlen;

static int flush_out(int fd)
{
    int r = raw_write(fd, wbuf, wlen);
    wlen = 0;
    return r;
}

static int write_all(int fd, const void *p, size_t n)
{
    if (n > sizeof wbuf - wlen) {
        if (flush_out(fd)) return -1;
        if (n > sizeof wbuf) return raw_write(fd, p, n);
    }
    memcpy(wbuf + wlen, p, n);
    wlen += n;
    return 0;
}

static int put_u32(int fd, uint32_t v) { return write_all(fd, &v, sizeof v); }

static int put_str(int fd, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n >= STR_MAX) n = STR_MAX - 1;
    return put_u32(fd, (uint32_t)n) || write_all(fd, s, n);
}

static int arena_fd = -1;     /* the memory file, in the child */
static uint64_t arena_end;    /* bytes of it in use */
static char *arena_base;      /* the child's shared mapping of it, arena_cap bytes reserved */
static uint64_t arena_cap;

adm_status (*adm_capture_tensor_alloc_)(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape);

/* read_dataset's allocator in the child: the next 64-aligned piece of the
 * memory file, grown to hold it (new pages read as zeros). */
static adm_status arena_alloc(adm_tensor *t, adm_dtype dt, int ndim, const int64_t *shape)
{
    int64_t n, stride = 1;
    uint64_t off = (arena_end + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1), bytes;
    memset(t, 0, sizeof *t);
    ADM_TRY(adm_shape_numel(ndim, shape, &n));
    bytes = (uint64_t)n * (uint64_t)adm_format_get(dt)->storage_bytes;
    if (off > arena_cap || bytes > arena_cap - off || ftruncate(arena_fd, (off_t)(off + bytes)) != 0)
        return ADM_FAIL(ADM_ERR_NOMEM, "out of memory: the tensors need more than the reader's %llu bytes "
                        "(ADM_SANDBOX_MEMORY raises the limit)", (unsigned long long)arena_cap);
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    for (int i = ndim - 1; i >= 0; i--) {
        t->stride[i] = stride;
        stride *= shape[i] > 0 ? shape[i] : 1;
    }
    t->data = arena_base + off;
    t->capacity = n;
    t->owned = 0;
    arena_end = off + bytes;
    return ADM_OK;
}

static int pwrite_all(int fd, const char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

/* Captures in the reader are contiguous and owned (read_dataset). Without
 * a memory file (adm_sandbox_encode from a tool), the data follows inline. */
static int put_tensor(int fd, const adm_tensor *t)
{
    uint32_t h[2] = {(uint32_t)t->dtype, (uint32_t)t->ndim};
    size_t es = (size_t)adm_format_get(t->dtype)->storage_bytes, bytes = (size_t)adm_tensor_numel(t) * es;
    const char *data = (const char *)t->data + (size_t)t->offset * es;
    uint64_t off = (arena_end + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1);
    int in_arena = arena_base && data >= arena_base && data < arena_base + arena_cap;
    if (in_arena) off = (uint64_t)(data - arena_base); /* already in place */
    if (write_all(fd, h, sizeof h) || write_all(fd, t->shape, sizeof(int64_t) * (size_t)t->ndim) ||
        write_all(fd, &off, sizeof off))
        return -1;
    if (in_arena) {
        return 0;
    } else if (arena_fd < 0) {
        static const char zeros[ARENA_ALIGN];
        if (write_all(fd, zeros, (size_t)(off - arena_end)) || write_all(fd, data, bytes)) return -1;
    } else if (bytes && pwrite_all(arena_fd, data, bytes, off)) {
        return -1;
    }
    arena_end = off + bytes;
    return 0;
}

static int put_record(int fd, uint8_t tag, int has_case, int icase, const char *name, const adm_tensor *t)
{
    if (write_all(fd, &tag, 1)) return -1;
    if (has_case && put_u32(fd, (uint32_t)icase)) return -1;
    if (name && put_str(fd, name)) return -1;
    return t ? put_tensor(fd, t) : 0;
}

static int put_list(int fd, uint8_t tag, int has_case, int icase, const adm_entry_list *l)
{
    for (int i = 0; i < l->n; i++)
        if (put_record(fd, tag, has_case, icase, l->v[i].name, &l->v[i].t)) return -1;
    return 0;
}

int adm_sandbox_encode(int fd, const adm_capture *c)
{
    int32_t v = c->version, cert = c->oracle_certified;
    uint8_t end = TAG_END;
    if (put_u32(fd, WIRE_MAGIC) || put_u32(fd, ADM_OK) || write_all(fd, &v, sizeof v) ||
        write_all(fd, &c->step, sizeof c->step) || write_all(fd, &cert, sizeof cert) || put_str(fd, c->op) ||
        put_str(fd, c->params) || put_str(fd, c->model) || put_str(fd, c->layer) || put_str(fd, c->source))
        return -1;
    if (put_list(fd, TAG_INPUT, 0, 0, &c->inputs)) return -1;
    if (c->has_ref && put_record(fd, TAG_REFERENCE, 0, 0, NULL, &c->ref)) return -1;
    if (put_list(fd, TAG_CANDIDATE, 0, 0, &c->candidates)) return -1;
    if (c->has_oracle && put_record(fd, TAG_ORACLE, 0, 0, NULL, &c->oracle)) return -1;
    if (c->has_oracle_bound && put_record(fd, TAG_ORACLE_BOUND, 0, 0, NULL, &c->oracle_bound)) return -1;
    for (int i = 0; i < c->n_specials; i++) {
        const adm_special *s = &c->specials[i];
        uint32_t r = (uint32_t)s->refusal;
        if (put_record(fd, TAG_SPECIAL, 0, 0, s->name, NULL)) return -1;
        if (put_list(fd, TAG_SPECIAL_INPUT, 1, i, &s->inputs)) return -1;
        if (s->has_ref && put_record(fd, TAG_SPECIAL_REFERENCE, 1, i, NULL, &s->ref)) return -1;
        if (s->refusal != ADM_OK && (put_record(fd, TAG_SPECIAL_REFUSAL, 1, i, NULL, NULL) || put_u32(fd, r)))
            return -1;
        if (put_list(fd, TAG_SPECIAL_CANDIDATE, 1, i, &s->candidates)) return -1;
    }
    return write_all(fd, &end, 1) || flush_out(fd);
}

static void child_main(int fd, int memfd, const char *path, const adm_sandbox_limits *lim, adm_capture_plan_fn plan,
                       void *user) __attribute__((noreturn));
static void child_main(int fd, int memfd, const char *path, const adm_sandbox_limits *lim, adm_capture_plan_fn plan,
                       void *user)
{
    adm_capture *c = NULL;
    adm_status st;
    int devnull;
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGXCPU};
#ifdef ADM_SANITIZED
    /* A fault in the child is the parent's to report: no fuzzer crash
     * handler or sanitizer report of the whole process. */
    __sanitizer_set_death_callback(NULL);
#endif
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(3);
    /* ADM_CUDA_TRACE's lines (core/adm_trace.h) still reach stderr */
    if (adm_trace_on()) adm_trace_set_fd(fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
    if ((devnull = open("/dev/null", O_WRONLY)) >= 0) {
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
#ifdef ADM_SANITIZED
        /* where a fuzzer may have sent the reports (not stderr) */
        __sanitizer_set_report_fd((void *)(intptr_t)STDERR_FILENO);
#endif
        close(devnull);
    }
    adm_child_set_limit(RLIMIT_CORE, 0, 0);
    if (lim->cpu_seconds > 0) adm_child_set_limit(RLIMIT_CPU, (rlim_t)lim->cpu_seconds, (rlim_t)lim->cpu_seconds + 1);
    /* The tensors' storage: address space reserved in the memory file,
     * grown as read_dataset allocates; RLIMIT_FSIZE bounds it. Without
     * the reservation the tensors are copied into the file at the end. */
    arena_fd = memfd;
    arena_end = 0;
    arena_cap = lim->memory_bytes > 0 ? (uint64_t)lim->memory_bytes : (uint64_t)1 << 40;
    arena_base = mmap(NULL, (size_t)arena_cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, memfd, 0);
    if (arena_base == MAP_FAILED) arena_base = NULL;
    else adm_capture_tensor_alloc_ = arena_alloc;
    if (lim->memory_bytes > 0) {
        int64_t cap = adm_child_mapped_bytes() + lim->memory_bytes;
        adm_child_set_limit(RLIMIT_AS, (rlim_t)cap, (rlim_t)cap);
        adm_child_set_limit(RLIMIT_FSIZE, (rlim_t)lim->memory_bytes, (rlim_t)lim->memory_bytes);
        signal(SIGXFSZ, SIG_IGN); /* the write fails instead */
    }
    crumb_path = path;
    adm_capture_trace("the file's superblock");
    st = adm_capture_read_plan(path, plan, user, &c);
    adm_capture_trace("(done reading; sending the tensors)");
    if (st == ADM_OK) {
        if (adm_sandbox_encode(fd, c)) _exit(4);
    } else {
        if (put_u32(fd, WIRE_MAGIC) || put_u32(fd, (uint32_t)st) || put_str(fd, adm_error_message()) ||
            flush_out(fd))
            _exit(4);
    }
    _exit(0);
}

/* ---------------------------------------------------------------- the parent's side */

typedef struct src {
    int fd;                     /* -1: read from buf */
    const unsigned char *buf;
    size_t len, pos;
    struct timespec deadline;   /* tv_sec 0: none */
    int timed_out, eof;
    int64_t budget;             /* the arena may not end past this (the memory limit) */
    uint64_t arena_end;         /* the tensors' bytes end here (64-aligned starts) */
    int inline_data;            /* buf: the data follows each header ... */
    unsigned char *inl;         /* ... and is gathered here, laid out as the arena */
    unsigned char rbuf[1 << 16];  /* fd: read ahead, served from [pos, len) */
} src;

static int64_t ms_left(const src *s)
{
    struct timespec now;
    if (!s->deadline.tv_sec) return -1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)(s->deadline.tv_sec - now.tv_sec) * 1000 + (s->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

/* 0, or -1 at the end of the stream, a timeout or an I/O error. */
static int fill(src *s, char *d, size_t n);

static int get(src *s, void *dst, size_t n)
{
    char *d = dst;
    size_t have;
    if (s->fd < 0) {
        if (n > s->len - s->pos) { s->eof = 1; return -1; }
        memcpy(d, s->buf + s->pos, n);
        s->pos += n;
        return 0;
    }
    have = s->len - s->pos;
    if (have >= n) {
        memcpy(d, s->rbuf + s->pos, n);
        s->pos += n;
        return 0;
    }
    memcpy(d, s->rbuf + s->pos, have);
    d += have;
    n -= have;
    s->pos = s->len = 0;
    if (n >= sizeof s->rbuf) return fill(s, d, n); /* a tensor: straight into place */
    while (s->len < n) {
        ssize_t r;
        if (fill(s, NULL, 0)) return -1;
        r = read(s->fd, s->rbuf + s->len, sizeof s->rbuf - s->len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) { s->eof = 1; return -1; }
        s->len += (size_t)r;
    }
    memcpy(d, s->rbuf, n);
    s->pos = n;
    return 0;
}

/* Reads exactly n bytes into d; n == 0: waits until the pipe is readable. */
static int fill(src *s, char *d, size_t n)
{
    int wait_only = n == 0;
    while (n || wait_only) {
        ssize_t r;
        int64_t left = ms_left(s);
        if (left == 0 || left < -1) { s->timed_out = 1; return -1; }
        if (s->deadline.tv_sec) {
            struct pollfd p = {s->fd, POLLIN, 0};
            int pr = poll(&p, 1, left > 0x7fffffff ? 0x7fffffff : (int)left);
            if (pr < 0 && errno == EINTR) continue;
            if (pr == 0) { s->timed_out = 1; return -1; }
            if (pr < 0) return -1;
        }
        if (wait_only) return 0;
        r = read(s->fd, d, n);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r <= 0) { s->eof = 1; return -1; }
        d += r;
        n -= (size_t)r;
    }
    return 0;
}

static int get_u32(src *s, uint32_t *v) { return get(s, v, sizeof *v); }

/* A NUL-terminated copy of a string of at most max bytes. */
static adm_status get_str(src *s, uint32_t max, const char *what, char **out)
{
    uint32_t n;
    *out = NULL;
    if (get_u32(s, &n)) return ADM_ERR_IO;
    if (n > max) return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent a %s of %u bytes", what, n);
    if (!(*out = malloc((size_t)n + 1))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
    if (n && get(s, *out, n)) {
        free(*out);
        *out = NULL;
        return ADM_ERR_IO;
    }
    (*out)[n] = '\0';
    if (strlen(*out) != n) {
        free(*out);
        *out = NULL;
        return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent a %s with a NUL byte", what);
    }
    return ADM_OK;
}

/* The tensor's data stays where the child put it: t->data holds its offset
 * in the arena until rebase() points it into the mapping. */
static adm_status get_tensor(src *s, adm_tensor *t)
{
    uint32_t h[2];
    int64_t shape[ADM_MAX_DIMS], numel, bytes;
    uint64_t off, want;
    memset(t, 0, sizeof *t);
    if (get(s, h, sizeof h)) return ADM_ERR_IO;
    if (h[0] == ADM_DTYPE_INVALID || h[0] >= ADM_DTYPE_COUNT || h[1] > ADM_MAX_DIMS)
        return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent a tensor of dtype %u and rank %u", h[0], h[1]);
    if (h[1] && get(s, shape, sizeof(int64_t) * h[1])) return ADM_ERR_IO;
    for (uint32_t i = 0; i < h[1]; i++)
        if (shape[i] < 0 || shape[i] > ADM_MAX_ELEMENTS)
            return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent an extent of %lld", (long long)shape[i]);
    if (adm_shape_numel((int)h[1], shape, &numel) != ADM_OK)
        return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent a tensor of more than 2^40 elements");
    bytes = numel * adm_format_get((adm_dtype)h[0])->storage_bytes;
    if (get(s, &off, sizeof off)) return ADM_ERR_IO;
    /* In order, aligned, apart, within the limit. */
    want = (s->arena_end + ARENA_ALIGN - 1) & ~(uint64_t)(ARENA_ALIGN - 1);
    if (off < want || off % ARENA_ALIGN)
        return ADM_FAIL(ADM_ERR_FORMAT, "the reader process put a tensor at offset %llu, expected %llu or after",
                        (unsigned long long)off, (unsigned long long)want);
    if (off > (uint64_t)s->budget || (uint64_t)bytes > (uint64_t)s->budget - off)
        return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent tensors larger than its memory limit");
    if (s->inline_data) {
        size_t n = (size_t)(off - s->arena_end) + (size_t)bytes;
        unsigned char *g;
        if (n > s->len - s->pos) { s->eof = 1; return ADM_ERR_IO; }
        if (!(g = realloc(s->inl, (size_t)s->arena_end + n + 1))) return ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        s->inl = g;
        memcpy(g + s->arena_end, s->buf + s->pos, n);
        s->pos += n;
    }
    s->arena_end = off + (uint64_t)bytes;
    t->dtype = (adm_dtype)h[0];
    t->ndim = (int)h[1];
    memcpy(t->shape, shape, sizeof(int64_t) * h[1]);
    {
        int64_t stride = 1;
        for (int i = t->ndim - 1; i >= 0; i--) {
            t->stride[i] = stride;
            stride *= shape[i] > 0 ? shape[i] : 1;
        }
    }
    t->capacity = numel;
    t->owned = 0;
    t->data = (void *)(uintptr_t)off;
    return ADM_OK;
}

static adm_status name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128) return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent a name of %zu bytes", n);
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-' || ch == '.' || ch == '+'))
            return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent the name '%s'", name);
    }
    return ADM_OK;
}

/* Takes ownership of name and *t on success. */
static adm_status push(adm_entry_list *l, char *name, adm_tensor *t)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name)) return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent '%s' twice", name);
    return adm_cap_list_append(l, name, t);
}

static adm_status set_once(int *has, adm_tensor *dst, adm_tensor *t, const char *what)
{
    if (*has) return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent %s twice", what);
    *dst = *t;
    memset(t, 0, sizeof *t);
    *has = 1;
    return ADM_OK;
}

static adm_status get_record(src *s, adm_capture *c, uint8_t tag)
{
    uint32_t icase = 0;
    char *name = NULL;
    adm_tensor t;
    adm_special *sp = NULL;
    adm_status st = ADM_OK;
    memset(&t, 0, sizeof t);
    if (tag >= TAG_SPECIAL_INPUT) {
        if (get_u32(s, &icase)) return ADM_ERR_IO;
        if ((int64_t)icase >= c->n_specials)
            return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent special case %u of %d", icase, c->n_specials);
        sp = &c->specials[icase];
    }
    switch (tag) {
    case TAG_INPUT: case TAG_CANDIDATE: case TAG_SPECIAL_INPUT: case TAG_SPECIAL_CANDIDATE: case TAG_SPECIAL:
        if ((st = get_str(s, 128, "name", &name)) != ADM_OK || (st = name_ok(name)) != ADM_OK) goto done;
        break;
    default:
        break;
    }
    if (tag == TAG_SPECIAL) {
        int idx;
        if (c->n_specials >= 4096) { st = ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent too many cases"); goto done; }
        st = adm_capture_add_special(c, name, &idx);
        goto done;
    }
    if (tag == TAG_SPECIAL_REFUSAL) {
        uint32_t r;
        if (get_u32(s, &r)) { st = ADM_ERR_IO; goto done; }
        if (r == ADM_OK || r >= ADM_STATUS_COUNT) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent refusal %u", r);
            goto done;
        }
        sp->refusal = (adm_status)r;
        goto done;
    }
    if ((st = get_tensor(s, &t)) != ADM_OK) goto done;
    switch (tag) {
    case TAG_INPUT: st = push(&c->inputs, name, &t); break;
    case TAG_CANDIDATE: st = push(&c->candidates, name, &t); break;
    case TAG_SPECIAL_INPUT: st = push(&sp->inputs, name, &t); break;
    case TAG_SPECIAL_CANDIDATE: st = push(&sp->candidates, name, &t); break;
    case TAG_REFERENCE: st = set_once(&c->has_ref, &c->ref, &t, "a reference"); break;
    case TAG_ORACLE: st = set_once(&c->has_oracle, &c->oracle, &t, "an oracle"); break;
    case TAG_ORACLE_BOUND: st = set_once(&c->has_oracle_bound, &c->oracle_bound, &t, "an oracle bound"); break;
    case TAG_SPECIAL_REFERENCE: st = set_once(&sp->has_ref, &sp->ref, &t, "a special reference"); break;
    default: st = ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent record tag %u", tag); break;
    }
    if (st == ADM_OK) name = NULL; /* owned by the list now */
done:
    adm_tensor_free(&t);
    free(name);
    return st;
}

static void rebase_list(adm_entry_list *l, char *base)
{
    for (int i = 0; i < l->n; i++) l->v[i].t.data = base + (uintptr_t)l->v[i].t.data;
}

/* Points every tensor's data (its offset until now) into the arena. */
static void rebase(adm_capture *c, char *base)
{
    rebase_list(&c->inputs, base);
    rebase_list(&c->candidates, base);
    if (c->has_ref) c->ref.data = base + (uintptr_t)c->ref.data;
    if (c->has_oracle) c->oracle.data = base + (uintptr_t)c->oracle.data;
    if (c->has_oracle_bound) c->oracle_bound.data = base + (uintptr_t)c->oracle_bound.data;
    for (int i = 0; i < c->n_specials; i++) {
        rebase_list(&c->specials[i].inputs, base);
        rebase_list(&c->specials[i].candidates, base);
        if (c->specials[i].has_ref) c->specials[i].ref.data = base + (uintptr_t)c->specials[i].ref.data;
    }
}

static adm_status e2m1_ok_one(const adm_tensor *t, const char *name)
{
    if (t->dtype != ADM_E2M1) return ADM_OK;
    for (int64_t k = 0; k < t->capacity; k++)
        if (((const uint8_t *)t->data)[k] > 0xf)
            return ADM_FAIL(ADM_ERR_FORMAT, "the reader process sent an fp4_e2m1 element 0x%02x in '%s'",
                            ((const uint8_t *)t->data)[k], name);
    return ADM_OK;
}

static adm_status e2m1_ok_list(const adm_entry_list *l)
{
    for (int i = 0; i < l->n; i++) ADM_TRY(e2m1_ok_one(&l->v[i].t, l->v[i].name));
    return ADM_OK;
}

/* fp4 elements hold 4 bits (read_dataset checks it; so does this). */
static adm_status e2m1_ok(const adm_capture *c)
{
    ADM_TRY(e2m1_ok_list(&c->inputs));
    ADM_TRY(e2m1_ok_list(&c->candidates));
    if (c->has_ref) ADM_TRY(e2m1_ok_one(&c->ref, "reference"));
    for (int i = 0; i < c->n_specials; i++) {
        ADM_TRY(e2m1_ok_list(&c->specials[i].inputs));
        ADM_TRY(e2m1_ok_list(&c->specials[i].candidates));
        if (c->specials[i].has_ref) ADM_TRY(e2m1_ok_one(&c->specials[i].ref, "reference"));
    }
    return ADM_OK;
}

void adm_sandbox_arena_free(adm_capture *c)
{
    if (c->arena) munmap(c->arena, c->arena_len);
    c->arena = NULL;
    c->arena_len = 0;
}

/* Maps the tensors' bytes (the memory file, or the gathered inline data)
 * as the capture's arena, points the tensors into it and checks them. */
static adm_status attach_arena(src *s, int memfd, adm_capture *c, const char *path)
{
    size_t len = (size_t)s->arena_end;
    char *base;
    static char empty[ARENA_ALIGN];
    if (len == 0) {
        rebase(c, empty);
        return ADM_OK;
    }
    if (memfd >= 0) {
        /* Exactly the announced bytes: what a (subverted) child left out
         * reads as zeros, what it added is dropped. */
        if (ftruncate(memfd, (off_t)len) != 0)
            return ADM_FAIL(ADM_ERR_NOMEM, "%s: cannot size the tensors' memory file to %zu bytes: %s", path, len,
                            strerror(errno));
        base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, memfd, 0);
    } else {
        base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base != MAP_FAILED) memcpy(base, s->inl, len);
    }
    if (base == MAP_FAILED) return ADM_FAIL(ADM_ERR_NOMEM, "%s: cannot map %zu bytes of tensors: %s", path, len, strerror(errno));
    c->arena = base;
    c->arena_len = len;
    rebase(c, base);
    if (e2m1_ok(c) != ADM_OK) {
        adm_error_prefix("%s: ", path);
        return ADM_ERR_FORMAT;
    }
    return ADM_OK;
}

/* ADM_OK with *out; ADM_ERR_IO when the stream ended early or timed out
 * (the caller looks at the child); any other status: the child's own
 * error, or a malformed stream, with the message set. */
static adm_status decode_stream(src *s, const char *path, adm_capture **out)
{
    uint32_t magic, status;
    int32_t version, cert;
    int64_t step;
    adm_capture *c = NULL;
    adm_status st;
    char *strs[5] = {0};
    *out = NULL;
    if (get_u32(s, &magic) || get_u32(s, &status)) return ADM_ERR_IO;
    if (magic != WIRE_MAGIC) return ADM_FAIL(ADM_ERR_FORMAT, "%s: the reader process sent no answer header", path);
    if (status != ADM_OK) {
        char *msg = NULL;
        if ((st = get_str(s, MSG_MAX, "message", &msg)) != ADM_OK) return st;
        if (status >= ADM_STATUS_COUNT) status = ADM_ERR_FORMAT;
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
        /* The reader's messages name the file; a subverted child's might not. */
        if (strstr(msg, path)) st = ADM_FAIL((adm_status)status, "%s", msg);
        else st = ADM_FAIL((adm_status)status, "%s: %s", path, msg);
        free(msg);
        return st;
    }
    if (get(s, &version, sizeof version) || get(s, &step, sizeof step) || get(s, &cert, sizeof cert))
        return ADM_ERR_IO;
    for (int i = 0; i < 5; i++)
        if ((st = get_str(s, STR_MAX, "string attribute", &strs[i])) != ADM_OK) goto fail;
    if (version < 1 || version > ADM_CAPTURE_VERSION || !strs[0][0]) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the reader process sent version %d, op '%.64s'", path, version, strs[0]);
        goto fail;
    }
    if ((st = adm_capture_create(strs[0], strs[1], &c)) != ADM_OK) goto fail;
    if ((st = adm_capture_set_provenance(c, strs[2], strs[3], step, strs[4])) != ADM_OK) goto fail;
    if (!(c->path = adm_strdup(path))) { st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory"); goto fail; }
    c->version = version;
    c->oracle_certified = cert == 1;
    for (int n = 0;; n++) {
        uint8_t tag;
        if (get(s, &tag, 1)) { st = ADM_ERR_IO; goto fail; }
        if (tag == TAG_END) break;
        if (n == MAX_RECORDS || tag > TAG_SPECIAL_CANDIDATE) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the reader process sent record tag %u (record %d)", path, tag, n);
            goto fail;
        }
        if ((st = get_record(s, c, tag)) != ADM_OK) goto fail;
    }
    /* What the in-process reader guarantees, again. */
    if (c->inputs.n == 0 || (c->oracle_certified && !c->has_oracle_bound) ||
        (c->has_oracle && c->oracle.dtype != ADM_FP64) ||
        (c->has_oracle_bound && (!c->has_oracle || c->oracle_bound.dtype != ADM_FP64 ||
                                 c->oracle_bound.ndim != c->oracle.ndim ||
                                 memcmp(c->oracle_bound.shape, c->oracle.shape,
                                        sizeof(int64_t) * (size_t)c->oracle.ndim) != 0))) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the reader process sent an inconsistent capture", path);
        goto fail;
    }
    for (int i = 0; i < 5; i++) free(strs[i]);
    *out = c;
    return ADM_OK;
fail:
    for (int i = 0; i < 5; i++) free(strs[i]);
    adm_capture_free(c);
    return st;
}

/* Every refusal names the file. */
static adm_status decode(src *s, const char *path, adm_capture **out)
{
    adm_status st = decode_stream(s, path, out);
    if (st != ADM_OK && st != ADM_ERR_IO && !strstr(adm_error_message(), path)) adm_error_prefix("%s: ", path);
    return st;
}

adm_status adm_sandbox_decode_buffer(const void *buf, size_t len, const char *path, adm_capture **out)
{
    src s;
    adm_status st;
    memset(&s, 0, sizeof s);
    s.fd = -1;
    s.buf = buf;
    s.len = len;
    s.inline_data = 1;
    s.budget = (int64_t)1 << 30;
    st = decode(&s, path, out);
    if (st == ADM_OK && (st = attach_arena(&s, -1, *out, path)) != ADM_OK) {
        adm_capture_free(*out);
        *out = NULL;
    }
    free(s.inl);
    if (st == ADM_ERR_IO) return ADM_FAIL(ADM_ERR_FORMAT, "%s: the reader process's answer ends early", path);
    return st;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (a bad memory access)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGABRT: return "SIGABRT (an abort)";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGXCPU: return "SIGXCPU";
    case SIGKILL: return "SIGKILL";
    default: return "a signal";
    }
}

adm_status adm_capture_read_sandboxed(const char *path, const adm_sandbox_limits *limits, adm_capture **out)
{
    return adm_capture_read_sandboxed_plan(path, limits, NULL, NULL, out);
}

adm_status adm_capture_read_sandboxed_plan(const char *path, const adm_sandbox_limits *limits,
                                           adm_capture_plan_fn plan, void *user, adm_capture **out)
{
    adm_sandbox_limits lim;
    int pfd[2], memfd, wstatus = 0, killed = 0;
    pid_t pid;
    char *page, crumb[CRUMB_LEN];
    src s;
    adm_status st;

    *out = NULL;
    /* limits from the environment: an invalid one is refused, not replaced */
    ADM_TRY(adm_env_check());
    if (!adm_sandbox_enabled()) return adm_capture_read_plan(path, plan, user, out);
    /* What can be said without libhdf5 is said here, as the reader would. */
    ADM_TRY(adm_file_check_regular(path, "the capture"));
    if (limits) lim = *limits;
    else adm_sandbox_limits_for(path, &lim);
    page = mmap(NULL, CRUMB_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return ADM_FAIL(ADM_ERR_IO, "%s: cannot map the reader's trace page: %s", path, strerror(errno));
    memset(page, 0, CRUMB_LEN);
    memfd = memfd_create("admit-capture", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd < 0 || pipe(pfd) != 0) {
        if (memfd >= 0) close(memfd);
        munmap(page, CRUMB_LEN);
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot make a pipe and a memory file for the reader process: %s", path,
                        strerror(errno));
    }
    pid = adm_child_fork(pfd);
    if (pid < 0) {
        close(memfd);
        munmap(page, CRUMB_LEN);
        return ADM_FAIL(ADM_ERR_IO, "%s: cannot start the reader process: %s", path, strerror(errno));
    }
    if (pid == 0) {
        close(pfd[0]);
        adm_capture_crumb_ = page;
        child_main(pfd[1], memfd, path, &lim, plan, user);
    }
    close(pfd[1]);
    memset(&s, 0, sizeof s);
    s.fd = pfd[0];
    s.budget = lim.memory_bytes > 0 ? lim.memory_bytes : INT64_MAX;
    if (lim.wall_seconds > 0) {
        clock_gettime(CLOCK_MONOTONIC, &s.deadline);
        s.deadline.tv_sec += lim.wall_seconds;
    }
    st = decode(&s, path, out);
    killed = st == ADM_ERR_IO && s.timed_out;
    /* The child has nothing left to do once it has answered (its tensors
     * were in the memory file before the answer's last byte): it is
     * stopped and reaped before the parent looks at the memory file, so
     * that nothing can change the bytes once they are checked. */
    adm_child_reap(pid, &wstatus);
    close(pfd[0]);
    if (st == ADM_OK && (st = attach_arena(&s, memfd, *out, path)) != ADM_OK) {
        adm_capture_free(*out);
        *out = NULL;
    }
    /* The plan again, on what the child sent: the shapes the caller will
     * work on (a child that skipped it held at most its memory limit). */
    if (st == ADM_OK && plan && (st = plan(*out, user)) != ADM_OK) {
        adm_capture_free(*out);
        *out = NULL;
    }
    close(memfd);
    memcpy(crumb, page, CRUMB_LEN);
    crumb[CRUMB_LEN - 1] = '\0';
    munmap(page, CRUMB_LEN);
    if (st != ADM_ERR_IO) return st; /* an answer: a capture, or the reader's own refusal */
    if (killed)
        return ADM_FAIL(ADM_ERR_FORMAT, "capture %s is corrupt: the HDF5 library failed reading %s (no answer "
                        "within %d s; ADM_SANDBOX_TIMEOUT raises the limit)", path,
                        crumb[0] ? crumb : "the file", lim.wall_seconds);
    if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGXCPU)
        return ADM_FAIL(ADM_ERR_FORMAT, "capture %s is corrupt: the HDF5 library failed reading %s (it used "
                        "its %d s of CPU time; ADM_SANDBOX_CPU raises the limit)", path,
                        crumb[0] ? crumb : "the file", lim.cpu_seconds);
    if (WIFSIGNALED(wstatus))
        return ADM_FAIL(ADM_ERR_FORMAT, "capture %s is corrupt: the HDF5 library failed reading %s (the reader "
                        "process died of %s)", path, crumb[0] ? crumb : "the file", signal_name(WTERMSIG(wstatus)));
    return ADM_FAIL(ADM_ERR_FORMAT, "capture %s is corrupt: the HDF5 library failed reading %s (the reader "
                    "process stopped with status %d%s)", path, crumb[0] ? crumb : "the file",
                    WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1,
                    lim.memory_bytes > 0 ? ", perhaps at its memory limit; ADM_SANDBOX_MEMORY raises it" : "");
}
