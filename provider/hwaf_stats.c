/*
 * Counters of work handed to each backend, for HWAF_PARAM_*_OPS/BYTES, and
 * of system calls that failed for want of resources (hwaf_sys.h).
 */
#include <errno.h>
#include "hwaf_backend.h"
#include "hwaf_sys.h"

static uint64_t stat_ops[HWAF_BE_COUNT];
static uint64_t stat_bytes[HWAF_BE_COUNT];

void hwaf_stats_add(int be, size_t bytes)
{
    __atomic_add_fetch(&stat_ops[be], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&stat_bytes[be], (uint64_t)bytes, __ATOMIC_RELAXED);
}

void hwaf_stats_get(int be, uint64_t *ops, uint64_t *bytes)
{
    *ops = __atomic_load_n(&stat_ops[be], __ATOMIC_RELAXED);
    *bytes = __atomic_load_n(&stat_bytes[be], __ATOMIC_RELAXED);
}

static uint64_t stat_spliced;

void hwaf_stats_add_spliced(size_t bytes)
{
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
