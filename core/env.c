/* The ADM_* environment variables the library reads (limits, budgets,
 * switches), each parsed by one strict parser: the whole string, in the
 * variable's range. An invalid value is refused by name (adm_env_check),
 * never replaced by a default nor wrapped into another value. */
#include "adm_core.h"
#include "adm_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((int64_t)1 << 10)
#define MIB ((int64_t)1 << 20)
#define DAY ((int64_t)86400)

typedef struct env_var {
    const char *name;
    int64_t lo, hi;
    int bytes;        /* 1: bytes, with an optional K, M or G suffix (powers of 1024) */
    const char *what; /* the unit and what it bounds, for messages */
} env_var;

/* The floors: a capture's reader child cannot start libhdf5 in less than
 * about 2 MiB of address space (it dies of SIGSEGV at the superblock, which
 * reads as a corrupt file), so a limit under 16 MiB is refused as too low
 * rather than let the file take the blame. Seconds stop at 30 days of CPU
 * and 90 of wall clock (both fit an int, and 3 x a CPU limit too). */
static const env_var vars[] = {
    {"ADM_SANDBOX_MEMORY", 16 * MIB, (int64_t)1 << 50, 1, "the capture reader's memory, in bytes (K/M/G)"},
    {"ADM_SANDBOX_CPU", 1, 30 * DAY, 0, "the capture reader's CPU time, in seconds"},
    {"ADM_SANDBOX_TIMEOUT", 1, 90 * DAY, 0, "the capture reader's wall clock, in seconds"},
    {"ADM_PLUGIN_MEMORY", 16 * MIB, (int64_t)1 << 50, 1, "a plugin kernel's memory, in bytes (K/M/G)"},
    {"ADM_PLUGIN_CPU", 1, 30 * DAY, 0, "a plugin kernel's CPU time, in seconds"},
    {"ADM_PLUGIN_TIMEOUT", 1, 90 * DAY, 0, "a plugin kernel's wall clock, in seconds"},
    {"ADM_CAPTURE_MAX_BYTES", 1, (int64_t)1 << 50, 1, "the largest tensor a capture may hold, in bytes (K/M/G)"},
    {"ADM_MPFR_BUDGET", 0, INT64_MAX, 0, "the oracle's MPFR work, in input terms (0: no limit)"},
};

/* Switches: on unless "0", "off" or "no" (adm_child_env_on); anything
 * but these and "1", "on", "yes" is refused, so that a misspelt "false"
 * does not read as on unnoticed. */
static const char *const switches[] = {"ADM_SANDBOX", "ADM_PLUGIN_SANDBOX"};

static const env_var *find(const char *name)
{
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (!strcmp(vars[i].name, name)) return &vars[i];
    return NULL;
}

/* n in the largest of G, M and K that divides it (bytes), or plain */
static void amount(char *buf, size_t cap, int64_t n, int bytes)
{
    static const char units[] = "GMK";
    for (int k = 0; bytes && n > 0 && k < 3; k++) {
        int64_t u = (int64_t)1 << (30 - 10 * k);
        if (n % u == 0) {
            snprintf(buf, cap, "%lld%c", (long long)(n / u), units[k]);
            return;
        }
    }
    snprintf(buf, cap, "%lld", (long long)n);
}

static adm_status bad(const env_var *v, const char *text)
{
    char lo[32], hi[32];
    amount(lo, sizeof lo, v->lo, v->bytes);
    amount(hi, sizeof hi, v->hi, v->bytes);
    return ADM_FAIL(ADM_ERR_INVALID, "environment variable %s='%s': expected %s to %s, %s%s", v->name, text, lo, hi,
                    v->what, v->lo > 1 && v->bytes ? " (less leaves the process too little to start)" : "");
}

adm_status adm_env_i64(const char *name, int64_t dflt, int64_t *out)
{
    const env_var *v = find(name);
    const char *e = getenv(name);
    char *end;
    long long x;
    int shift = 0;
    *out = dflt;
    if (!v) return ADM_FAIL(ADM_ERR_INTERNAL, "environment variable %s is not one the library knows", name);
    if (!e || !*e) return ADM_OK;
    /* digits only: strtoll would take a sign, spaces and "0x" */
    if (*e < '0' || *e > '9') return bad(v, e);
    errno = 0;
    x = strtoll(e, &end, 10);
    if (errno) return bad(v, e);
    if (v->bytes && *end) {
        switch (*end) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        default: return bad(v, e);
        }
        end++;
    }
    if (*end || x > (LLONG_MAX >> shift)) return bad(v, e);
    x <<= shift;
    if (x < v->lo || x > v->hi) return bad(v, e);
    *out = (int64_t)x;
    return ADM_OK;
}

adm_status adm_env_check(void)
{
    int64_t x;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) ADM_TRY(adm_env_i64(vars[i].name, 0, &x));
    for (size_t i = 0; i < sizeof switches / sizeof switches[0]; i++) {
        const char *e = getenv(switches[i]);
        static const char *const ok[] = {"", "0", "off", "no", "1", "on", "yes"};
        int good = !e;
        for (size_t k = 0; e && k < sizeof ok / sizeof ok[0]; k++) good |= !strcmp(e, ok[k]);
        if (!good)
            return ADM_FAIL(ADM_ERR_INVALID, "environment variable %s='%s': expected on, off, yes, no, 1 or 0",
                            switches[i], e);
    }
    return ADM_OK;
}
