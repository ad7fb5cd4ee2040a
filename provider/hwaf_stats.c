/*
 * Counters of work handed to each backend (and of work computed in
 * software), for HWAF_PARAM_*_OPS/BYTES, and
 * their optional per-process record for applications that never read
 * provider parameters: with HWAF_STATS=DIR in the environment, every process
 * that hands work to a backend keeps DIR/hwaf-stats.<prog>.<pid> up to date
 * (one line, rewritten after each MiB or 1024 operations, and when the
 * provider unloads).  Processes that end with _exit() (sshd's children) or
 * are killed lose at most the last step.  A child after fork() counts from
 * zero in its own file; the parameters keep counting since the module was
 * loaded.  A process that installed a seccomp filter after hwaf loaded
 * (hwaf_sandbox.c) writes nothing more: OpenSSH's pre-authentication child
 * is killed for pwrite() and ftruncate(), and for any write to a regular
 * file (RLIMIT_FSIZE 0: SIGXFSZ).  docs/config.md documents the format.
 * Also the count of system calls that failed for want of resources
 * (hwaf_sys.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/auxv.h>
#include "hwaf_backend.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"

static uint64_t stat_ops[HWAF_BE_COUNT];
static uint64_t stat_bytes[HWAF_BE_COUNT];
static uint64_t stat_kind_ops[HWAF_KIND_COUNT], stat_kind_bytes[HWAF_KIND_COUNT];
static uint64_t stat_spliced;

#define RECORD_BYTES_STEP (1u << 20)
#define RECORD_OPS_STEP 1024u

static int record_on;                 /* HWAF_STATS names a directory */
static char record_dir[PATH_MAX - 64];
static pthread_mutex_t record_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t record_once = PTHREAD_ONCE_INIT;
static int record_fd = -1;
static pid_t record_pid;
static uint64_t record_base_ops[HWAF_BE_COUNT], record_base_bytes[HWAF_BE_COUNT];
static uint64_t record_base_kind_ops[HWAF_KIND_COUNT], record_base_kind_bytes[HWAF_KIND_COUNT];
static uint64_t record_base_spliced;
static uint64_t record_next_ops, record_next_bytes; /* totals that trigger a write */

static uint64_t stat_soft_ops, stat_soft_bytes;
static uint64_t record_base_soft_ops, record_base_soft_bytes;
static uint64_t record_base_fallbacks[HWAF_FALLBACK_COUNT];

/* Work of every backend and of the software path: what triggers a write. */
static void totals(uint64_t *ops, uint64_t *bytes)
{
    int be;

    *ops = __atomic_load_n(&stat_soft_ops, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&stat_soft_bytes, __ATOMIC_RELAXED);
    for (be = 0; be < HWAF_BE_COUNT; be++) {
        *ops += __atomic_load_n(&stat_ops[be], __ATOMIC_RELAXED);
        *bytes += __atomic_load_n(&stat_bytes[be], __ATOMIC_RELAXED);
    }
}

/* This process's file, fresh (a descriptor inherited across fork() is the
 * parent's file, closed only in this copy). */
static void record_open(void)
{
    char path[PATH_MAX];

    if (record_fd >= 0)
        close(record_fd);
    record_pid = getpid();
    snprintf(path, sizeof(path), "%s/hwaf-stats.%s.%d", record_dir,
             program_invocation_short_name, (int)record_pid);
    record_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (record_fd < 0)
        HWAF_DEBUG("stats: cannot write %s: %s", path, strerror(errno));
}

static void record_write_locked(void)
{
    uint64_t ops[HWAF_BE_COUNT], bytes[HWAF_BE_COUNT], tops, tbytes, sops, sbytes;
    uint64_t kops[HWAF_KIND_COUNT], kbytes[HWAF_KIND_COUNT];
    char line[768];
    int be, n, k;

    if (hwaf_sandbox_barred())
        return;
    if (record_pid != getpid())
        record_open();
    totals(&tops, &tbytes);
    record_next_ops = tops + RECORD_OPS_STEP;
    record_next_bytes = tbytes + RECORD_BYTES_STEP;
    if (record_fd < 0)
        return;
    for (be = 0; be < HWAF_BE_COUNT; be++) {
        hwaf_stats_get(be, &ops[be], &bytes[be]);
        ops[be] -= record_base_ops[be];
        bytes[be] -= record_base_bytes[be];
    }
    for (k = 0; k < HWAF_KIND_COUNT; k++) {
        hwaf_stats_get_kind((hwaf_kind)k, &kops[k], &kbytes[k]);
        kops[k] -= record_base_kind_ops[k];
        kbytes[k] -= record_base_kind_bytes[k];
    }
    hwaf_stats_get_soft(&sops, &sbytes);
    n = snprintf(line, sizeof(line),
                 "pid=%d prog=%s afalg_ops=%llu afalg_bytes=%llu "
                 "devcrypto_ops=%llu devcrypto_bytes=%llu afalg_spliced_bytes=%llu "
                 "software_ops=%llu software_bytes=%llu "
                 "sandbox_refusals=%llu fallbacks_descriptors=%llu fallbacks_sandbox=%llu "
                 "fallbacks_known_answer=%llu "
                 "cipher_ops=%llu cipher_bytes=%llu digest_ops=%llu digest_bytes=%llu "
                 "aead_ops=%llu aead_bytes=%llu mac_ops=%llu mac_bytes=%llu\n",
                 (int)record_pid, program_invocation_short_name,
                 (unsigned long long)ops[HWAF_BE_AFALG], (unsigned long long)bytes[HWAF_BE_AFALG],
                 (unsigned long long)ops[HWAF_BE_DEVCRYPTO],
                 (unsigned long long)bytes[HWAF_BE_DEVCRYPTO],
                 (unsigned long long)(hwaf_stats_spliced() - record_base_spliced),
                 (unsigned long long)(sops - record_base_soft_ops),
                 (unsigned long long)(sbytes - record_base_soft_bytes),
                 (unsigned long long)hwaf_sandbox_refusals(),
                 (unsigned long long)(hwaf_stats_fallbacks(HWAF_FALLBACK_DESCRIPTORS)
                                      - record_base_fallbacks[HWAF_FALLBACK_DESCRIPTORS]),
                 (unsigned long long)(hwaf_stats_fallbacks(HWAF_FALLBACK_SANDBOX)
                                      - record_base_fallbacks[HWAF_FALLBACK_SANDBOX]),
                 (unsigned long long)(hwaf_stats_fallbacks(HWAF_FALLBACK_KNOWN_ANSWER)
                                      - record_base_fallbacks[HWAF_FALLBACK_KNOWN_ANSWER]),
                 (unsigned long long)kops[HWAF_KIND_CIPHER], (unsigned long long)kbytes[HWAF_KIND_CIPHER],
                 (unsigned long long)kops[HWAF_KIND_DIGEST], (unsigned long long)kbytes[HWAF_KIND_DIGEST],
                 (unsigned long long)kops[HWAF_KIND_AEAD], (unsigned long long)kbytes[HWAF_KIND_AEAD],
                 (unsigned long long)kops[HWAF_KIND_MAC], (unsigned long long)kbytes[HWAF_KIND_MAC]);
    if (n > 0 && n < (int)sizeof(line) && pwrite(record_fd, line, (size_t)n, 0) == n)
        (void)ftruncate(record_fd, n);
}

static void record_setup(void)
{
    const char *dir = hwaf_sys_getenv("HWAF_STATS");

    if (dir == NULL || *dir == '\0' || strlen(dir) >= sizeof(record_dir))
        return;
    strcpy(record_dir, dir);
    record_on = 1;
}

void hwaf_stats_init(void)
{
    pthread_once(&record_once, record_setup);
}

void hwaf_stats_flush(void)
{
    if (!record_on)
        return;
    pthread_mutex_lock(&record_lock);
    if (record_pid == getpid())
        record_write_locked();
    pthread_mutex_unlock(&record_lock);
}

void hwaf_stats_forked(void)
{
    int be;

    if (!record_on)
        return;
    pthread_mutex_init(&record_lock, NULL);
    for (be = 0; be < HWAF_BE_COUNT; be++)
        hwaf_stats_get(be, &record_base_ops[be], &record_base_bytes[be]);
    for (be = 0; be < HWAF_KIND_COUNT; be++)
        hwaf_stats_get_kind((hwaf_kind)be, &record_base_kind_ops[be], &record_base_kind_bytes[be]);
    hwaf_stats_get_soft(&record_base_soft_ops, &record_base_soft_bytes);
    record_base_spliced = hwaf_stats_spliced();
    for (be = 0; be < HWAF_FALLBACK_COUNT; be++)
        record_base_fallbacks[be] = hwaf_stats_fallbacks(be);
    record_next_ops = record_next_bytes = 0; /* the first operation writes */
}

static void record_maybe(void)
{
    uint64_t ops, bytes;

    totals(&ops, &bytes);
    if (ops < __atomic_load_n(&record_next_ops, __ATOMIC_RELAXED)
        && bytes < __atomic_load_n(&record_next_bytes, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&record_lock);
    record_write_locked();
    pthread_mutex_unlock(&record_lock);
}

/* Set while this thread runs a known answer: hwaf's own work, not its
 * callers', is not counted. */
static __thread int stats_quiet;

void hwaf_stats_quiet(int on)
{
    stats_quiet = on;
}

void hwaf_stats_add_n(int be, hwaf_kind kind, uint64_t ops, uint64_t bytes)
{
    if (stats_quiet)
        return;
    __atomic_add_fetch(&stat_ops[be], ops, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stat_bytes[be], bytes, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stat_kind_ops[kind], ops, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stat_kind_bytes[kind], bytes, __ATOMIC_RELAXED);
    if (record_on)
        record_maybe();
}

void hwaf_stats_add(int be, hwaf_kind kind, size_t bytes)
{
    hwaf_stats_add_n(be, kind, 1, bytes);
}

void hwaf_stats_get(int be, uint64_t *ops, uint64_t *bytes)
{
    *ops = __atomic_load_n(&stat_ops[be], __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&stat_bytes[be], __ATOMIC_RELAXED);
}

void hwaf_stats_get_kind(hwaf_kind kind, uint64_t *ops, uint64_t *bytes)
{
    *ops = __atomic_load_n(&stat_kind_ops[kind], __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&stat_kind_bytes[kind], __ATOMIC_RELAXED);
}

void hwaf_stats_add_spliced(size_t bytes)
{
    if (stats_quiet)
        return;
    __atomic_add_fetch(&stat_spliced, (uint64_t)bytes, __ATOMIC_RELAXED);
}

uint64_t hwaf_stats_spliced(void)
{
    return __atomic_load_n(&stat_spliced, __ATOMIC_RELAXED);
}

static __thread unsigned long sys_transient;
static __thread int sys_transient_errno;

int hwaf_errno_transient(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM || err == EINTR
           || err == EAGAIN;
}

const char *hwaf_sys_getenv(const char *name)
{
#ifdef __GLIBC__
    return secure_getenv(name);
#else
    return getauxval(AT_SECURE) != 0 ? NULL : getenv(name);
#endif
}

int hwaf_sys_read_file(const char *path, size_t cap, char **text, size_t *len)
{
    char *buf, *nb;
    size_t got = 0;
    ssize_t n;
    int fd, err = 0;

    *text = NULL;
    *len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return errno;
    if ((buf = malloc(cap)) == NULL) {
        close(fd);
        return ENOMEM;
    }
    for (;;) {
        if (got == cap) {
            if ((nb = realloc(buf, cap * 2)) == NULL) {
                err = ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            err = errno;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (err == 0 && got == 0)
        err = EIO;
    if (err != 0) {
        free(buf);
        return err;
    }
    *text = buf;
    *len = got;
    return 0;
}

int hwaf_sys_error(int err)
{
    if (hwaf_errno_transient(err)) {
        sys_transient++;
        sys_transient_errno = err;
    }
    return -err;
}

unsigned long hwaf_sys_transient_count(void)
{
    return sys_transient;
}

int hwaf_sys_transient_errno(void)
{
    return sys_transient_errno;
}

static unsigned long sys_fd_releases;

void hwaf_sys_fd_released(void)
{
    __atomic_add_fetch(&sys_fd_releases, 1, __ATOMIC_RELAXED);
}

unsigned long hwaf_sys_fd_releases(void)
{
    return __atomic_load_n(&sys_fd_releases, __ATOMIC_RELAXED);
}

void hwaf_stats_add_soft_n(uint64_t ops, uint64_t bytes)
{
    __atomic_add_fetch(&stat_soft_ops, ops, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stat_soft_bytes, bytes, __ATOMIC_RELAXED);
    if (record_on)
        record_maybe();
}

void hwaf_stats_add_soft(size_t bytes)
{
    hwaf_stats_add_soft_n(1, bytes);
}

static uint64_t stat_fallbacks[HWAF_FALLBACK_COUNT];

void hwaf_stats_add_fallback(int reason)
{
    __atomic_add_fetch(&stat_fallbacks[reason], 1, __ATOMIC_RELAXED);
}

uint64_t hwaf_stats_fallbacks(int reason)
{
    return __atomic_load_n(&stat_fallbacks[reason], __ATOMIC_RELAXED);
}

void hwaf_stats_get_soft(uint64_t *ops, uint64_t *bytes)
{
    *ops = __atomic_load_n(&stat_soft_ops, __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&stat_soft_bytes, __ATOMIC_RELAXED);
}
