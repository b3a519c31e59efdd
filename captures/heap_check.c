/* A variable-length string attribute's global-heap reference, checked
 * against the file before libhdf5 follows it (issue 8, R5-R7).
 *
 * libhdf5 1.10 trusts the reference and the heap collection it names:
 *  - H5T__conv_vlen allocates what the reference's length field declares
 *    (R6: one byte makes it 1.9 GB);
 *  - H5HG_read copies the named object's own size from the collection into
 *    that buffer, for whatever index the reference names, even 0, the
 *    collection's free space, whose size counts its 16-byte header, so the
 *    copy runs 16 bytes past the collection's buffer (R7 raw-000864: a
 *    release build returns those bytes as the string and reads on);
 *  - H5HG__cache_heap_deserialize walks the collection's objects without a
 *    bounds check: an object of size 0 is an endless loop (R5), one whose
 *    size runs past the collection makes later copies run past it too.
 * So the reference is read raw (a conversion to an opaque type of its own
 * size, which copies the 16 stored bytes and follows nothing), and
 * refused unless the file holds what the format (HDF5 File Format
 * Specification, "Global Heap") says it must: a collection "GCOL" of
 * version 1 within the file, at least 4096 bytes (libhdf5 writes none
 * smaller); objects of index 1-65535, each once, each with its header and
 * data inside the collection; then at most the free space (index 0) ending
 * exactly at the collection's end, or a tail too short for an object
 * header; and the reference names a stored object (not the free space)
 * whose size is the length it declares, at most the caller's limit. These
 * are the invariants H5HG_read and H5T__conv_vlen rely on, so corruption of
 * the reference or of the collection that would mislead them is refused,
 * whichever bytes it changes; what they do not rely on (reference counts,
 * the object's bytes) is not checked. */
#include "capture_h5.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GHEAP_MIN 4096u             /* H5HG_MINSIZE */
#define GHEAP_MAX ((uint64_t)64 << 20) /* read whole: more than a capture's strings need */
#define GHEAP_NIDX 65536u           /* object indices are 16 bits */

/* The last collection found sound in the open file: a capture's strings
 * share one or two collections, and each is walked once per read rather
 * than once per attribute (a hostile file cannot make the walk cost
 * attributes x collection size). adm_cap_heap_forget ends it with the
 * file; libhdf5 1.10 is not thread-safe, so neither is the reader. */
static struct {
    int valid;
    uint64_t addr;
    uint64_t *size; /* [GHEAP_NIDX]: an object's size + 1; 0: no such object */
} memo;

void adm_cap_heap_forget(void)
{
    free(memo.size);
    memo.size = NULL;
    memo.valid = 0;
}

static uint64_t le(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    while (n--) v = v << 8 | p[n];
    return v;
}

static int pread_all(int fd, unsigned char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* Walks the collection at file offset at (address addr) into memo. */
static adm_status walk_collection(int fd, uint64_t fsize, uint64_t at, uint64_t addr, size_t ss, const char *what)
{
    const size_t hdr = 8 + ss, ohdr = 8 + ss; /* "GCOL", version, 3 reserved, size; index, refs, 4 reserved, size */
    unsigned char h[16], *buf = NULL;
    uint64_t size, p;
    adm_status st = ADM_OK;
    if (at > fsize || fsize - at < hdr || pread_all(fd, h, hdr, at) != 0)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: its global heap collection at address %llu lies outside the file "
                        "(%llu bytes; corrupt file)", what, (unsigned long long)addr, (unsigned long long)fsize);
    if (memcmp(h, "GCOL", 4) != 0 || h[4] != 1)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: address %llu holds no global heap collection (signature GCOL, "
                        "version 1; corrupt file)", what, (unsigned long long)addr);
    size = le(h + 8, ss);
    if (size < GHEAP_MIN || size > fsize - at || size > GHEAP_MAX)
        return ADM_FAIL(ADM_ERR_FORMAT, "%s: the global heap collection at address %llu declares %llu bytes; "
                        "it must hold 4096 to %llu and lie within the file (%llu bytes; corrupt file)", what,
                        (unsigned long long)addr, (unsigned long long)size, (unsigned long long)GHEAP_MAX,
                        (unsigned long long)fsize);
    adm_cap_heap_forget();
    if (!(buf = malloc((size_t)size)) || !(memo.size = calloc(GHEAP_NIDX, sizeof *memo.size))) {
        st = ADM_FAIL(ADM_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (pread_all(fd, buf, (size_t)size, at) != 0) {
        st = ADM_FAIL(ADM_ERR_IO, "%s: cannot read the global heap collection at address %llu (%llu bytes)",
                      what, (unsigned long long)addr, (unsigned long long)size);
        goto done;
    }
    for (p = hdr; p < size && size - p >= ohdr;) {
        unsigned idx = (unsigned)le(buf + p, 2);
        uint64_t n = le(buf + p + 8, ss);
        if (idx == 0) {
            if (n != size - p)
                st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the free space of the global heap collection at address %llu "
                              "declares %llu bytes where %llu remain (corrupt file)", what, (unsigned long long)addr,
                              (unsigned long long)n, (unsigned long long)(size - p));
            break;
        }
        if (n > size - p - ohdr) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: object %u of the global heap collection at address %llu declares "
                          "%llu bytes, past the collection's end (corrupt file)", what, idx,
                          (unsigned long long)addr, (unsigned long long)n);
            break;
        }
        if (memo.size[idx]) {
            st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the global heap collection at address %llu holds object %u twice "
                          "(corrupt file)", what, (unsigned long long)addr, idx);
            break;
        }
        memo.size[idx] = n + 1;
        p += ohdr + ((n + 7) & ~(uint64_t)7);
    }
done:
    free(buf);
    if (st == ADM_OK) {
        memo.valid = 1;
        memo.addr = addr;
    } else {
        adm_cap_heap_forget();
    }
    return st;
}

/* A conversion from a variable-length string to an opaque type of the
 * same size: the stored reference, copied as it is (the conversion runs
 * in place on the stored bytes, so there is nothing to do). */
#define RAW_TAG "admit: a stored variable-length reference"

static herr_t raw_ref_conv(hid_t src, hid_t dst, H5T_cdata_t *cdata, size_t nelmts, size_t buf_stride,
                           size_t bkg_stride, void *buf, void *bkg, hid_t dxpl)
{
    (void)nelmts;
    (void)buf_stride;
    (void)bkg_stride;
    (void)buf;
    (void)bkg;
    (void)dxpl;
    if (cdata->command == H5T_CONV_INIT) {
        char *tag;
        int ours;
        cdata->need_bkg = H5T_BKG_NO;
        if (H5Tget_class(dst) != H5T_OPAQUE || H5Tis_variable_str(src) <= 0 || H5Tget_size(src) != H5Tget_size(dst))
            return -1;
        tag = H5Tget_tag(dst);
        ours = tag && strcmp(tag, RAW_TAG) == 0;
        H5free_memory(tag);
        return ours ? 0 : -1;
    }
    return 0;
}

static int raw_registered;

static adm_status raw_type(size_t n, hid_t *out)
{
    hid_t vs, op;
    herr_t rc = 0;
    *out = -1;
    if ((op = H5Tcreate(H5T_OPAQUE, n)) < 0 || H5Tset_tag(op, RAW_TAG) < 0) {
        adm_cap_h5_close(op);
        return ADM_FAIL(ADM_ERR_INTERNAL, "cannot make an opaque HDF5 type of %zu bytes", n);
    }
    if (!raw_registered) {
        vs = H5Tcopy(H5T_C_S1);
        if (vs < 0 || H5Tset_size(vs, H5T_VARIABLE) < 0 ||
            (rc = H5Tregister(H5T_PERS_SOFT, "admit_raw_vlen_ref", vs, op, raw_ref_conv)) < 0) {
            adm_cap_h5_close(vs);
            adm_cap_h5_close(op);
            return ADM_FAIL(ADM_ERR_INTERNAL, "cannot register the HDF5 conversion that reads a string's heap reference");
        }
        adm_cap_h5_close(vs);
        raw_registered = 1;
    }
    *out = op;
    return ADM_OK;
}

adm_status adm_cap_heap_check(hid_t a, const char *where, const char *name, uint64_t max_len)
{
    hid_t fid = -1, fcpl = -1, fapl = -1, rt = -1;
    size_t sa = 0, ss = 0, n;
    hsize_t ub = 0;
    unsigned char ref[24];
    uint64_t len, addr, idx, at;
    int *fdp = NULL;
    struct stat sb;
    char what[600];
    adm_status st = ADM_OK;
    snprintf(what, sizeof what, "%s: attribute '%s'", where, name);
    if ((fid = H5Iget_file_id(a)) < 0 || (fcpl = H5Fget_create_plist(fid)) < 0 || (fapl = H5Fget_access_plist(fid)) < 0 ||
        H5Pget_sizes(fcpl, &sa, &ss) < 0 || H5Pget_userblock(fcpl, &ub) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the file's address sizes cannot be read", what);
        goto done;
    }
    if (sa < 2 || sa > 8 || ss < 2 || ss > 8) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: the file uses %zu-byte addresses and %zu-byte lengths (2 to 8 expected)",
                      what, sa, ss);
        goto done;
    }
    n = 4 + sa + 4; /* length, collection address, object index */
    if (H5Aget_storage_size(a) != n) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: stores %llu bytes, expected one %zu-byte heap reference (corrupt file)",
                      what, (unsigned long long)H5Aget_storage_size(a), n);
        goto done;
    }
    if (H5Pget_driver(fapl) != H5FD_SEC2 || H5Fget_vfd_handle(fid, H5P_DEFAULT, (void **)&fdp) < 0 || !fdp ||
        fstat(*fdp, &sb) != 0) {
        st = ADM_FAIL(ADM_ERR_INTERNAL, "%s: the file's descriptor cannot be had from libhdf5 (not its sec2 driver)",
                      what);
        goto done;
    }
    if ((st = raw_type(n, &rt)) != ADM_OK) goto done;
    if (H5Aread(a, rt, ref) < 0) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its heap reference cannot be read", what);
        goto done;
    }
    len = le(ref, 4);
    addr = le(ref + 4, sa);
    idx = le(ref + 4 + sa, 4);
    if (addr == 0) goto done; /* a null string: libhdf5 reads no heap */
    if (len > max_len) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: declares a string of %llu bytes, more than %llu", what,
                      (unsigned long long)len, (unsigned long long)max_len);
        goto done;
    }
    at = (uint64_t)ub + addr;
    if (at < addr) at = UINT64_MAX;
    if ((!memo.valid || memo.addr != addr) &&
        (st = walk_collection(*fdp, (uint64_t)sb.st_size, at, addr, ss, what)) != ADM_OK)
        goto done;
    if (idx == 0 || idx >= GHEAP_NIDX || !memo.size[idx]) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its heap reference names object %llu of the global heap collection at "
                      "address %llu, which %s (corrupt file)", what, (unsigned long long)idx, (unsigned long long)addr,
                      idx == 0 ? "is the collection's free space, not a string" : "the collection does not hold");
    } else if (memo.size[idx] - 1 != len) {
        st = ADM_FAIL(ADM_ERR_FORMAT, "%s: its heap reference declares %llu bytes, but object %llu of the global "
                      "heap collection at address %llu holds %llu (corrupt file)", what, (unsigned long long)len,
                      (unsigned long long)idx, (unsigned long long)addr, (unsigned long long)(memo.size[idx] - 1));
    }
done:
    adm_cap_h5_close(rt);
    adm_cap_h5_close(fapl);
    adm_cap_h5_close(fcpl);
    adm_cap_h5_close(fid);
    return st;
}
