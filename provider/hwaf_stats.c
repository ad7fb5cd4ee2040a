/* Counters of work handed to each backend, for HWAF_PARAM_*_OPS/BYTES. */
#include "hwaf_backend.h"

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
