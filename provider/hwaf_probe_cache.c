/*
 * The key under which the calibration file keeps a probe's result (which
 * drivers of each algorithm a backend reaches and that pass their known
 * answers), so that a process does not repeat what hwaf-info --calibrate
 * established.
 *
 * The key, 16 hex digits, is FNV-1a (64 bit) over everything the result
 * depends on: hwaf's version and algorithm table, the backend, the kernel
 * release (uname -r), the identity of the backend's device node (device
 * number, inode, change time: a module reloaded makes a new node) and
 * /proc/crypto without its refcnt lines (they change with use) and without
 * its template instances, the entries whose driver is a template over
 * other drivers ("hmac(sha256-avx2)", "cryptd(__xts-aes-aesni)"): the
 * kernel makes them when they are first asked for, hwaf's own probe makes
 * some (an hmac() over each SHA driver it binds, a cryptd() under a SIMD
 * driver), and they follow from the drivers, which count.  A driver registered
 * or gone, or its self-test finished, another kernel, another cryptodev
 * module: another key, and a full probe.
 *
 * Test-only seams through the environment, for the key alone:
 * HWAF_TEST_PROC_CRYPTO names a file read instead of /proc/crypto,
 * HWAF_TEST_KERNEL_RELEASE replaces uname -r.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include "hwaf_local.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;

    /* Eight bytes a turn, the same hash: the loop's own count and
     * compare once per eight (the registry, some 16 KB, is hashed at
     * every cached load). */
    for (; n >= 8; n -= 8, c += 8) {
        h = (h ^ c[0]) * FNV_PRIME;
        h = (h ^ c[1]) * FNV_PRIME;
        h = (h ^ c[2]) * FNV_PRIME;
        h = (h ^ c[3]) * FNV_PRIME;
        h = (h ^ c[4]) * FNV_PRIME;
        h = (h ^ c[5]) * FNV_PRIME;
        h = (h ^ c[6]) * FNV_PRIME;
        h = (h ^ c[7]) * FNV_PRIME;
    }
    while (n-- > 0)
        h = (h ^ *c++) * FNV_PRIME;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return fnv(h, s, strlen(s) + 1);   /* with its NUL: "ab","c" != "a","bc" */
}

/* Whether the entry [t, e) of the registry is a template instance: its
 * driver line names a template over other drivers, "hmac(sha256-avx2)". */
static int registry_instance(const char *t, const char *e)
{
    const char *nl;

    for (; t < e; t = nl) {
        nl = memchr(t, '\n', (size_t)(e - t));
        nl = nl != NULL ? nl + 1 : e;
        if ((size_t)(nl - t) >= 6 && memcmp(t, "driver", 6) == 0)
            return memchr(t, '(', (size_t)(nl - t)) != NULL;
    }
    return 0;
}

/* The hash of the registry's text without its refcnt lines and without its
 * template instances.  Entries are separated by a blank line. */
static uint64_t registry_hash(const char *t, size_t len)
{
    uint64_t h = FNV_OFFSET;
    const char *e = t + len, *end, *nl;

    for (; t < e; t = end) {
        end = memmem(t, (size_t)(e - t), "\n\n", 2);
        end = end != NULL ? end + 2 : e;
        if (registry_instance(t, end))
            continue;
        for (; t < end; t = nl) {
            nl = memchr(t, '\n', (size_t)(end - t));
            nl = nl != NULL ? nl + 1 : end;
            if (!((size_t)(nl - t) >= 6 && memcmp(t, "refcnt", 6) == 0))
                h = fnv(h, t, (size_t)(nl - t));
        }
    }
    return h;
}

int hwaf_probe_registry(uint64_t *out)
{
    const char *path = hwaf_sys_getenv("HWAF_TEST_PROC_CRYPTO");
    char *text;
    size_t len;
    int err;

    if (path == NULL)
        path = "/proc/crypto";
    if ((err = hwaf_sys_read_file(path, 65536, &text, &len)) != 0) {
        HWAF_DEBUG("probe cache: cannot read %s: %s", path,
                   err == EIO ? "empty" : strerror(err));
        return 0;
    }
    *out = registry_hash(text, len);
    free(text);
    return 1;
}

void hwaf_probe_key(const hwaf_backend *be, uint64_t registry, char *key, size_t keylen)
{
    const char *release = hwaf_sys_getenv("HWAF_TEST_KERNEL_RELEASE");
    struct utsname u;
    struct stat st;
    uint64_t h = FNV_OFFSET, dev[5] = { 0 };
    int a;

    if (release == NULL)
        release = uname(&u) == 0 ? u.release : "?";
    h = fnv_str(h, "hwaf-probe " HWAF_VERSION_STR);
    for (a = 0; a < HWAF_NALGS; a++) {
        h = fnv_str(h, hwaf_algs[a].kname);
        h = fnv(h, &hwaf_algs[a].keylen, sizeof(hwaf_algs[a].keylen));
    }
    h = fnv_str(h, be->name);
    h = fnv_str(h, release);
    if (be->device != NULL && stat(be->device, &st) == 0) {
        dev[0] = (uint64_t)st.st_rdev;
        dev[1] = (uint64_t)st.st_ino;
        dev[2] = (uint64_t)st.st_dev;
        dev[3] = (uint64_t)st.st_ctim.tv_sec;
        dev[4] = (uint64_t)st.st_ctim.tv_nsec;
    }
    h = fnv(h, dev, sizeof(dev));
    h = fnv(h, &registry, sizeof(registry));
    snprintf(key, keylen, "%016llx", (unsigned long long)h);
}
