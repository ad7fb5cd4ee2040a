/*
 * hwaf-bench: the pieces the main program and every implementation share,
 * below both: the fixed key and IV, the implementation sets, and the
 * kernel's driver for a name (/proc/crypto).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Distinct halves: XTS refuses a key whose halves are equal. */
const unsigned char bench_key[64] = {
    0x27, 0x18, 0x28, 0x18, 0x28, 0x45, 0x90, 0x45, 0x23, 0x53, 0x60, 0x28,
    0x74, 0x71, 0x35, 0x26, 0x31, 0x41, 0x59, 0x26, 0x53, 0x58, 0x97, 0x93,
    0x23, 0x84, 0x62, 0x64, 0x33, 0x83, 0x27, 0x95, 0x02, 0x88, 0x41, 0x97,
    0x16, 0x93, 0x99, 0x37, 0x51, 0x05, 0x82, 0x09, 0x74, 0x94, 0x45, 0x92,
    0x30, 0x78, 0x16, 0x40, 0x62, 0x86, 0x20, 0x89, 0x98, 0x62, 0x80, 0x34,
    0x82, 0x53, 0x42, 0x11,
};
const unsigned char bench_iv[16] = {
    0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7,
    0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff,
};

/* ---- sets ---- */

bench_inst *bench_set_add(bench_set *s, const char *name, bench_family fam)
{
    bench_inst *i;

    if (s->n >= BENCH_MAX_INST)
        return NULL;
    i = &s->inst[s->n++];
    memset(i, 0, sizeof(*i));
    snprintf(i->name, sizeof(i->name), "%s", name);
    snprintf(i->driver, sizeof(i->driver), "-");
    i->family = fam;
    i->hw = -1;
    i->counter = -1;
    return i;
}

void bench_set_absent(bench_set *s, const char *name, const char *fmt, ...)
{
    bench_absent *a;
    va_list ap;

    if (s->nabsent >= BENCH_MAX_INST)
        return;
    a = &s->absent[s->nabsent++];
    snprintf(a->name, sizeof(a->name), "%s", name);
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof(a->why), fmt, ap);
    va_end(ap);
}

/* ---- /proc/crypto ---- */

void bench_proc_crypto_driver(const char *kname, bench_kind kind, char *out,
                              size_t outlen)
{
    FILE *f = fopen("/proc/crypto", "re");
    char line[256], name[128] = "", driver[128] = "", type[128] = "";
    int prio = -1, best = -1;

    snprintf(out, outlen, "?");
    if (f == NULL)
        return;
    for (;;) {
        char *got = fgets(line, sizeof(line), f);
        char key[64], val[128];

        if (got == NULL || line[0] == '\n') {
            int type_ok = kind == BENCH_CIPHER ? strcmp(type, "skcipher") == 0
                : kind == BENCH_AEAD ? strcmp(type, "aead") == 0
                : (strcmp(type, "shash") == 0 || strcmp(type, "ahash") == 0);

            if (strcmp(name, kname) == 0 && type_ok && prio > best) {
                best = prio;
                snprintf(out, outlen, "%s", driver);
            }
            name[0] = driver[0] = type[0] = '\0';
            prio = -1;
            if (got == NULL)
                break;
            continue;
        }
        if (sscanf(line, "%63s : %127s", key, val) != 2)
            continue;
        if (strcmp(key, "name") == 0)
            snprintf(name, sizeof(name), "%s", val);
        else if (strcmp(key, "driver") == 0)
            snprintf(driver, sizeof(driver), "%s", val);
        else if (strcmp(key, "type") == 0)
            snprintf(type, sizeof(type), "%s", val);
        else if (strcmp(key, "priority") == 0)
            prio = atoi(val);
    }
    fclose(f);
}
