/*
 * Sandboxes that would kill the process for hwaf's system calls.
 *
 * A process may install a seccomp filter after hwaf loaded and probed the
 * kernel.  OpenSSH's sshd does so in its pre-authentication child
 * (sandbox-seccomp-filter.c): there socket(), accept4(), sendmsg() and
 * ioctl() are not on the allow list, and the kernel kills the child with
 * SIGSYS at hwaf's first accept4() (audit: "sig=31 syscall=288"), so the
 * connection drops before the key exchange ends.  A killed process cannot
 * fall back; hwaf must not make the call.
 *
 * Before a backend creates a kernel object it asks hwaf_sandbox_allows().
 * The answer compares the process's seccomp state in /proc/self/status
 * (Seccomp, Seccomp_filters) with the state when the provider loaded
 * (prctl(PR_GET_SECCOMP) at load, /proc/self/status only under a filter): a
 * filter added since, or /proc/self/status refused (EACCES/EPERM: OpenSSH's
 * filter answers open() so), bars the kernel for the rest of the process
 * (filters are never removed).  A filter present at load (a container's)
 * does not: the probe's own system calls passed it.  sshd's child also
 * chroots into an empty directory, so a child after fork() opens /proc
 * at once (still unsandboxed, not yet chrooted) and reads its status
 * through that descriptor; the parent holds none.  Without /proc (ENOENT)
 * nothing is known and nothing changes.  A process that has forked (where
 * sandboxes are usually applied: sshd's child uses hwaf, installs its
 * filter and needs a new socket within 100 ms) reads the state before every
 * new kernel object, ~10 us; one that never forked at most every 100 ms,
 * so a filter it installs itself and uses within 100 ms still kills.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include "hwaf_backend.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"

#define RECHECK_NS (100 * 1000000ull)

enum { STATE_READ, STATE_DENIED, STATE_UNKNOWN };

static int base_mode = -1, base_filters = -1; /* at load; -1 unknown */
static int barred;
static unsigned int checked_gen;
static uint64_t checked_ns;
static int checked;
static uint64_t refusals;
static __thread unsigned long refusals_here;  /* this thread's */
static int proc_fd = -1; /* /proc, opened in a child right after fork() */

static int read_state(int *mode, int *filters, int *err)
{
    char buf[4096], *p;
    ssize_t n;
    int fd = proc_fd >= 0 ? openat(proc_fd, "self/status", O_RDONLY | O_CLOEXEC)
                          : open("/proc/self/status", O_RDONLY | O_CLOEXEC);

    *mode = *filters = -1;
    if (fd < 0) {
        *err = errno;
        return errno == EACCES || errno == EPERM ? STATE_DENIED : STATE_UNKNOWN;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    *err = errno;
    close(fd);
    if (n <= 0)
        return STATE_UNKNOWN;
    buf[n] = '\0';
    if ((p = strstr(buf, "\nSeccomp:")) != NULL)
        *mode = atoi(p + 9);
    if ((p = strstr(buf, "\nSeccomp_filters:")) != NULL)
        *filters = atoi(p + 17);
    return *mode < 0 ? STATE_UNKNOWN : STATE_READ;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void hwaf_sandbox_init(void)
{
    int err;

    /* The state at load: prctl() first, one call, where /proc/self/status
     * costs an open, a text the kernel composes, a read and a close (about
     * 1 ms in a new process in the TCG test guest, bench/load-syscalls).
     * Mode 0 needs no more: a process has filters only in mode 2.  Under a
     * filter (a container's), or where prctl() fails, /proc/self/status
     * gives the mode and the number of filters, as before.  Only here, at
     * load: once a filter may have come since, hwaf makes no call that the
     * filter might kill (hwaf_sandbox_barred reads /proc only). */
    if (base_mode < 0 && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0)
        base_mode = base_filters = 0;
    if (base_mode < 0)
        (void)read_state(&base_mode, &base_filters, &err);
    HWAF_DEBUG("sandbox: seccomp mode %d, %d filters at load", base_mode, base_filters);
}

void hwaf_sandbox_forked(void)
{
    if (proc_fd >= 0)
        close(proc_fd); /* the parent's, inherited */
    proc_fd = base_mode >= 0 ? open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
}

int hwaf_sandbox_barred(void)
{
    unsigned int gen = __atomic_load_n(&hwaf_fork_generation, __ATOMIC_RELAXED);
    uint64_t now;
    int mode, filters, err, st;

    if (__atomic_load_n(&barred, __ATOMIC_RELAXED))
        return 1;
    now = now_ns();
    if (gen == 0 && __atomic_load_n(&checked, __ATOMIC_ACQUIRE)
        && now - __atomic_load_n(&checked_ns, __ATOMIC_RELAXED) < RECHECK_NS)
        return 0;
    st = read_state(&mode, &filters, &err);
    if (st == STATE_DENIED
        || (st == STATE_READ
            && ((base_mode >= 0 && mode > base_mode)
                || (base_filters >= 0 && filters > base_filters)))) {
        if (st == STATE_DENIED)
            HWAF_DEBUG("sandbox: /proc/self/status refused (%s): a seccomp filter "
                       "was installed after load; kernel calls stop here", strerror(err));
        else
            HWAF_DEBUG("sandbox: seccomp mode %d, %d filters (at load %d, %d): "
                       "kernel calls stop here", mode, filters, base_mode, base_filters);
        __atomic_store_n(&barred, 1, __ATOMIC_RELAXED);
        hwaf_debug_sandboxed();
        return 1;
    }
    if (st == STATE_UNKNOWN || !__atomic_load_n(&checked, __ATOMIC_RELAXED)
        || __atomic_load_n(&checked_gen, __ATOMIC_RELAXED) != gen)
        HWAF_DEBUG("sandbox: %s (seccomp mode %d, %d filters): kernel calls go on",
                   st == STATE_UNKNOWN ? "state unknown" : "checked after fork",
                   mode, filters);
    /* Any thread may get here at once: each word on its own is enough (a
     * recheck a little early or late is harmless). */
    __atomic_store_n(&checked_gen, gen, __ATOMIC_RELAXED);
    __atomic_store_n(&checked_ns, now, __ATOMIC_RELAXED);
    __atomic_store_n(&checked, 1, __ATOMIC_RELEASE);
    return 0;
}

int hwaf_sandbox_allows(const struct hwaf_prov_st *prov)
{
    if (!hwaf_sandbox_barred())
        return 1;
    __atomic_add_fetch(&refusals, 1, __ATOMIC_RELAXED);
    refusals_here++;
    HWAF_RAISE(prov, HWAF_R_SANDBOXED, NULL);
    return 0;
}

uint64_t hwaf_sandbox_refusals(void)
{
    return __atomic_load_n(&refusals, __ATOMIC_RELAXED);
}

unsigned long hwaf_sandbox_refusals_here(void)
{
    return refusals_here;
}
