/*
 * hwaf-bench: every implementation of an algorithm on this machine, side by
 * side, measured by wall clock.
 *
 * For each algorithm and buffer size, each implementation runs operations
 * for a fixed wall-clock time after a warm-up.  Reported: throughput and
 * operations per second from wall-clock time, and the process's user and
 * system CPU time (getrusage) per GiB.  Throughput is never derived from CPU
 * time: work done in the kernel or in a device does not show up in user
 * time, which is how `openssl speed` without -elapsed reports offload as
 * 10-100x faster than it is.
 *
 * Every implementation's output is checked against OpenSSL's default
 * provider at every size before it is timed; a wrong answer is reported,
 * never timed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/obj_mac.h>

#include "bench.h"
#include "cryptodev_abi.h" /* provider/: the cryptodev-linux ABI */

#ifndef HWAF_BENCH_MODULE_DIR
#define HWAF_BENCH_MODULE_DIR ""
#endif

extern const char *bench_cryptodev_path;

/* ---- algorithms ---- */

static const bench_alg algs[] = {
    { "AES-128-CBC", "cbc(aes)", BENCH_CIPHER, BENCH_CBC, 16, 16, 16, 0,
      CRYPTO_AES_CBC, 0, NID_aes_128_cbc },
    { "AES-192-CBC", "cbc(aes)", BENCH_CIPHER, BENCH_CBC, 24, 16, 16, 0,
      CRYPTO_AES_CBC, 0, NID_aes_192_cbc },
    { "AES-256-CBC", "cbc(aes)", BENCH_CIPHER, BENCH_CBC, 32, 16, 16, 0,
      CRYPTO_AES_CBC, 0, NID_aes_256_cbc },
    { "AES-128-CTR", "ctr(aes)", BENCH_CIPHER, BENCH_CTR, 16, 16, 1, 0,
      CRYPTO_AES_CTR, 0, NID_aes_128_ctr },
    { "AES-192-CTR", "ctr(aes)", BENCH_CIPHER, BENCH_CTR, 24, 16, 1, 0,
      CRYPTO_AES_CTR, 0, NID_aes_192_ctr },
    { "AES-256-CTR", "ctr(aes)", BENCH_CIPHER, BENCH_CTR, 32, 16, 1, 0,
      CRYPTO_AES_CTR, 0, NID_aes_256_ctr },
    { "AES-128-XTS", "xts(aes)", BENCH_CIPHER, BENCH_XTS, 32, 16, 16, 0,
      CRYPTO_AES_XTS, 0, NID_aes_128_xts },
    { "AES-256-XTS", "xts(aes)", BENCH_CIPHER, BENCH_XTS, 64, 16, 16, 0,
      CRYPTO_AES_XTS, 0, NID_aes_256_xts },
    { "SHA1", "sha1", BENCH_DIGEST, BENCH_HASH, 0, 0, 64, 20, 0,
      CRYPTO_SHA1, NID_sha1 },
    { "SHA2-224", "sha224", BENCH_DIGEST, BENCH_HASH, 0, 0, 64, 28, 0,
      CRYPTO_SHA2_224, NID_sha224 },
    { "SHA2-256", "sha256", BENCH_DIGEST, BENCH_HASH, 0, 0, 64, 32, 0,
      CRYPTO_SHA2_256, NID_sha256 },
    { "SHA2-384", "sha384", BENCH_DIGEST, BENCH_HASH, 0, 0, 128, 48, 0,
      CRYPTO_SHA2_384, NID_sha384 },
    { "SHA2-512", "sha512", BENCH_DIGEST, BENCH_HASH, 0, 0, 128, 64, 0,
      CRYPTO_SHA2_512, NID_sha512 },
    /* GCM: mdlen is the tag; HMAC: keylen is the key used, mdlen the MAC. */
    { "AES-128-GCM", "gcm(aes)", BENCH_AEAD, BENCH_GCM, 16, 12, 1, 16,
      CRYPTO_AES_GCM, 0, NID_aes_128_gcm },
    { "AES-256-GCM", "gcm(aes)", BENCH_AEAD, BENCH_GCM, 32, 12, 1, 16,
      CRYPTO_AES_GCM, 0, NID_aes_256_gcm },
    { "HMAC-SHA1", "hmac(sha1)", BENCH_MAC, BENCH_HMAC, 20, 0, 64, 20, 0,
      CRYPTO_SHA1_HMAC, NID_hmac_sha1 },
    { "HMAC-SHA2-256", "hmac(sha256)", BENCH_MAC, BENCH_HMAC, 32, 0, 64, 32, 0,
      CRYPTO_SHA2_256_HMAC, NID_hmacWithSHA256 },
};
#define NALGS (sizeof(algs) / sizeof(algs[0]))

static void set_close(bench_set *s)
{
    int i;

    for (i = 0; i < s->n; i++)
        s->inst[i].ops->close(s->inst[i].st);
    s->n = 0;
    s->nabsent = 0;
}

/* ---- options ---- */

static struct {
    const bench_alg *algs[NALGS];
    int nalgs;
    size_t sizes[32];
    int nsizes;
    double seconds;
    double warmup;
    double slice;
    int repeat;
    const char *impls;     /* comma list of name prefixes, NULL = all */
    const char *csv;
    FILE *passes;          /* --passes: every timed pass, as CSV */
    const char *plot;
    const char *modules;
    const char *tcrypt;
    int check;
    int quiet;
    int list;
    int policy_cpu;        /* --policy cpu: the CPU target is checked too */
} opt;

static void usage(FILE *f)
{
    size_t i;

    fprintf(f,
        "usage: hwaf-bench [options]\n"
        "  --algs LIST      algorithms, comma separated (default: all; with --check:\n"
        "                   AES-128-CBC,SHA2-256); 'aes' and 'sha' select families\n"
        "  --sizes LIST     buffer sizes, e.g. 16,1k,64K,1M\n"
        "                   (default 16,64,256,1024,8192,16384,65536,1048576)\n"
        "  --seconds S      wall-clock time per measurement (default 0.3)\n"
        "  --warmup S       warm-up before each measurement (default min(0.1, S/3))\n"
        "  --slice S        implementations take turns in slices of S seconds\n"
        "                   (default 0.05)\n"
        "  --repeat N       measure each cell N times, interleaved, keep the median\n"
        "                   (default 1; 3 with --check)\n"
        "  --impls LIST     only implementations whose name starts with one of these\n"
        "                   (default, hwaf-afalg, hwaf-devcrypto, hwaf-auto, engine-afalg,\n"
        "                   libkcapi, bare-afalg, bare-afalg-zc, bare-cryptodev)\n"
        "  --csv FILE       write every measurement as CSV\n"
        "  --passes FILE    write every timed pass of every line as CSV (--repeat)\n"
        "  --plot FILE      write a PNG plot (gnuplot): MB/s against buffer size\n"
        "  --check          evaluate the performance targets; exit 0 all pass,\n"
        "                   1 some fail, 2 none fail but some could not be evaluated\n"
        "  --tcrypt FILE    kernel tcrypt log (bench/tcrypt-ref output) for the\n"
        "                   zero-copy target against the driver's own speed\n"
        "  --cryptodev PATH the /dev/crypto device (default /dev/crypto)\n"
        "  --calibration FILE  hwaf's calibration file (hwaf-info --calibrate) for\n"
        "                   hwaf-auto's thresholds, when openssl.cnf does not configure hwaf\n"
        "  --policy P       with --calibration: hwaf's policy key, throughput or cpu\n"
        "  --modules DIR    where hwaf.so is (default: $OPENSSL_MODULES, else the\n"
        "                   build tree when it holds hwaf.so, else libcrypto's)\n"
        "  --list           only list the implementations of each algorithm\n"
        "  --quiet          no progress line on stderr\n"
        "  --turn-order N   print the order of the turns for N lines (a row per slice)\n"
        "algorithms:");
    for (i = 0; i < NALGS; i++)
        fprintf(f, " %s", algs[i].name);
    fprintf(f, "\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if (end == s)
        return 0;
    if (*end == 'k' || *end == 'K')
        v *= 1024, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024, end++;
    if (*end != '\0' || v == 0 || v > (64ULL << 20))
        return 0;
    *out = (size_t)v;
    return 1;
}

static int add_alg(const char *name)
{
    size_t i;
    int found = 0;

    for (i = 0; i < NALGS; i++) {
        int match = strcasecmp(name, algs[i].name) == 0
            || (strcasecmp(name, "all") == 0)
            || (strcasecmp(name, "aes") == 0 && algs[i].kind == BENCH_CIPHER)
            || (strcasecmp(name, "sha") == 0 && algs[i].kind == BENCH_DIGEST)
            || (strcasecmp(name, "SHA256") == 0 && strcmp(algs[i].name, "SHA2-256") == 0)
            || (strcasecmp(name, "SHA-256") == 0 && strcmp(algs[i].name, "SHA2-256") == 0);
        int j, dup = 0;

        if (!match)
            continue;
        found = 1;
        for (j = 0; j < opt.nalgs; j++)
            dup |= opt.algs[j] == &algs[i];
        if (!dup)
            opt.algs[opt.nalgs++] = &algs[i];
    }
    return found;
}

static int parse_list(const char *arg, int (*fn)(const char *))
{
    char *copy = strdup(arg), *save = NULL, *tok;
    int ok = copy != NULL;

    for (tok = copy != NULL ? strtok_r(copy, ",", &save) : NULL; tok != NULL && ok;
         tok = strtok_r(NULL, ",", &save))
        ok = fn(tok);
    free(copy);
    return ok;
}

static int add_size(const char *s)
{
    if (opt.nsizes >= 32 || !parse_size(s, &opt.sizes[opt.nsizes]))
        return 0;
    opt.nsizes++;
    return 1;
}

static int want_impl(const char *name)
{
    char *copy, *save = NULL, *tok;
    int want = 0;

    if (opt.impls == NULL)
        return 1;
    copy = strdup(opt.impls);
    for (tok = copy != NULL ? strtok_r(copy, ",", &save) : NULL; tok != NULL;
         tok = strtok_r(NULL, ",", &save))
        if (strncmp(name, tok, strlen(tok)) == 0)
            want = 1;
    free(copy);
    return want;
}

/* Could any implementation an opener adds (names starting with prefix) be
 * wanted?  True when a --impls entry and prefix agree on their common part. */
static int want_family(const char *prefix)
{
    char *copy, *save = NULL, *tok;
    int want = 0;

    if (opt.impls == NULL)
        return 1;
    copy = strdup(opt.impls);
    for (tok = copy != NULL ? strtok_r(copy, ",", &save) : NULL; tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(tok) < strlen(prefix) ? strlen(tok) : strlen(prefix);

        if (strncmp(tok, prefix, n) == 0)
            want = 1;
    }
    free(copy);
    return want;
}

/* ---- timing ---- */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

typedef enum { ST_OK, ST_NA, ST_ERROR, ST_WRONG } cell_status;
static const char *status_name[] = { "ok", "n/a", "error", "wrong-output" };

typedef struct {
    const bench_alg *alg;
    char impl[BENCH_NAME_MAX];
    char driver[BENCH_DRIVER_MAX];
    bench_family family;
    int hw;
    size_t len;
    cell_status status;
    double wall, user, sys;
    uint64_t ops;
    uint64_t ctr_ops, ctr_bytes;  /* hwaf backend counters during the run */
    /* With --repeat, pass by pass: hwaf-auto's ratio to the best other line
     * (default, forced); a forced hwaf line's to its backend's bare loop on
     * the same driver.  Median, lowest, highest over pairs passes. */
    int pairs;
    double pair_med, pair_lo, pair_hi;
    /* hwaf-auto only, pass by pass: its user + system CPU per byte over the
     * least of the other lines' (default, forced) in the same pass. */
    int cpairs;
    double cpair_med, cpair_lo, cpair_hi;
    char note[BENCH_WHY_MAX];
} result;

static result *results;
static size_t nresults, capresults;

static result *new_result(void)
{
    if (nresults == capresults) {
        size_t cap = capresults ? capresults * 2 : 256;
        result *r = realloc(results, cap * sizeof(*r));

        if (r == NULL) {
            fprintf(stderr, "hwaf-bench: out of memory\n");
            exit(4);
        }
        results = r;
        capresults = cap;
    }
    memset(&results[nresults], 0, sizeof(result));
    return &results[nresults++];
}

static double r_mbps(const result *r)
{
    return r->status == ST_OK && r->wall > 0
        ? (double)r->ops * (double)r->len / r->wall / 1e6 : 0;
}

static double r_per_gib(const result *r, double cpu)
{
    double bytes = (double)r->ops * (double)r->len;

    return bytes > 0 ? cpu / bytes * 1073741824.0 : 0;
}

/* User + system CPU seconds per byte of one pass; 0 when nothing ran. */
static double r_cpu_per_byte(const result *r)
{
    double bytes = (double)r->ops * (double)r->len;

    return r->status == ST_OK && bytes > 0 ? (r->user + r->sys) / bytes : 0;
}

/* Watchdog: a cell that makes no progress ends the run with a clear message
 * instead of hanging (a socket that waits for a reader never returns). */
static char watchdog_msg[256];

static void on_alarm(int sig)
{
    ssize_t w;

    (void)sig;
    w = write(2, watchdog_msg, strlen(watchdog_msg));
    (void)w;
    _exit(3);
}

static void arm_watchdog(const result *r, double budget)
{
    unsigned int secs = (unsigned int)(budget * 10) + 30;

    snprintf(watchdog_msg, sizeof(watchdog_msg),
             "\nhwaf-bench: %s %s %zu B made no progress for %u s; aborting\n",
             r->alg->name, r->impl, r->len, secs);
    alarm(secs);
}

/*
 * Position turn of row row (taken modulo the design's rows) of a Williams
 * design for n lines: n rows for even n, 2n for odd n (the rows and their
 * mirror images).  Over all rows every ordered pair of different lines is
 * adjacent, the first right before the second, equally often (once for even
 * n, twice for odd n).  Its first row is 0, 1, n-1, 2, n-2, ...; row r adds r.
 */
static int williams(int n, int row, int turn)
{
    int k, w;

    if (n < 2)
        return 0;
    row %= n % 2 == 0 ? n : 2 * n;
    k = row < n ? turn : n - 1 - turn;
    w = k == 0 ? 0 : k % 2 == 1 ? (k + 1) / 2 : n - k / 2;
    return (w + row % n) % n;
}

/* Warm-up: caches, page faults, kernel allocations, CPU frequency. */
static int warm_up(bench_inst *inst, const unsigned char *in, unsigned char *out,
                   size_t len, result *r)
{
    double end = now() + opt.warmup;

    do {
        if (!inst->ops->op(inst->st, in, out, len, r->note, sizeof(r->note)))
            return 0;
    } while (now() < end);
    return 1;
}

/*
 * One timed slice of inst at len, added to r (wall, CPU, operations,
 * counters).  Returns 0 on an operation error.
 */
static int time_slice(bench_inst *inst, const unsigned char *in, unsigned char *out,
                      size_t len, double seconds, result *r)
{
    struct rusage ru0, ru1;
    uint64_t c0o[BENCH_CTR_COUNT], c0b[BENCH_CTR_COUNT];
    uint64_t c1o[BENCH_CTR_COUNT], c1b[BENCH_CTR_COUNT];
    double t0, t, tb;
    uint64_t ops = 0, batch = 1, i;

    bench_hwaf_counters(c0o, c0b);
    getrusage(RUSAGE_SELF, &ru0);
    t0 = now();
    for (;;) {
        tb = now();
        for (i = 0; i < batch; i++)
            if (!inst->ops->op(inst->st, in, out, len, r->note, sizeof(r->note)))
                return 0;
        ops += batch;
        t = now();
        if (t - t0 >= seconds)
            break;
        /* Read the clock about once a millisecond, not once an operation. */
        if (t - tb < 0.001 && batch < (1u << 20))
            batch *= 2;
    }
    getrusage(RUSAGE_SELF, &ru1);
    bench_hwaf_counters(c1o, c1b);
    r->wall += t - t0;
    r->user += tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
    r->sys += tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
    r->ops += ops;
    if (inst->counter >= 0) {
        r->ctr_ops += c1o[inst->counter] - c0o[inst->counter];
        r->ctr_bytes += c1b[inst->counter] - c0b[inst->counter];
    }
    return 1;
}

/* ---- progress ---- */

static size_t cells_total, cells_done;
static double run_start, last_progress;

static void progress(const bench_alg *a, size_t len, const char *impl)
{
    double t = now(), eta;
    int tty = isatty(2);

    if (opt.quiet)
        return;
    if (!tty && t - last_progress < 10)
        return;
    last_progress = t;
    eta = cells_done > 0 ? (t - run_start) / (double)cells_done
                               * (double)(cells_total - cells_done) : 0;
    fprintf(stderr, "%s[%zu/%zu] %s %zu B %s, %.0f s elapsed, about %.0f s left%s",
            tty ? "\r" : "", cells_done + 1, cells_total, a->name, len, impl,
            t - run_start, eta, tty ? "\033[K" : "\n");
    fflush(stderr);
}

static void progress_clear(void)
{
    if (!opt.quiet && isatty(2)) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
    }
}

/* ---- output ---- */

static const char *family_name(bench_family f)
{
    switch (f) {
    case BENCH_FAM_SOFTWARE: return "software";
    case BENCH_FAM_HWAF: return "hwaf";
    case BENCH_FAM_PEER: return "peer";
    case BENCH_FAM_BARE: return "bare";
    }
    return "?";
}

static const char *hw_name(int hw)
{
    return hw == 1 ? "yes" : hw == 0 ? "no" : "-";
}

static void fmt_size(size_t len, char *buf, size_t n)
{
    if (len >= 1048576 && len % 1048576 == 0)
        snprintf(buf, n, "%zuM", len / 1048576);
    else if (len >= 1024 && len % 1024 == 0)
        snprintf(buf, n, "%zuK", len / 1024);
    else
        snprintf(buf, n, "%zu", len);
}

static void print_counters(const char *when)
{
    uint64_t o[BENCH_CTR_COUNT], b[BENCH_CTR_COUNT];

    if (!bench_hwaf_loaded())
        return;
    if (!bench_hwaf_counters(o, b)) {
        printf("hwaf counters %s: not reported by the provider\n", when);
        return;
    }
    printf("hwaf counters %s: hwaf-afalg-ops=%llu hwaf-afalg-bytes=%llu "
           "hwaf-devcrypto-ops=%llu hwaf-devcrypto-bytes=%llu\n", when,
           (unsigned long long)o[BENCH_CTR_AFALG], (unsigned long long)b[BENCH_CTR_AFALG],
           (unsigned long long)o[BENCH_CTR_DEVCRYPTO],
           (unsigned long long)b[BENCH_CTR_DEVCRYPTO]);
}

static void print_row(const result *r, const result *def)
{
    char sz[24];

    fmt_size(r->len, sz, sizeof(sz));
    if (r->status != ST_OK) {
        printf("%8s  %-20s %s: %s\n", sz, r->impl, status_name[r->status], r->note);
        return;
    }
    printf("%8s  %-20s %10.2f %11.0f %10.3f %10.3f %6.0f%%", sz, r->impl, r_mbps(r),
           (double)r->ops / r->wall, r_per_gib(r, r->user), r_per_gib(r, r->sys),
           100.0 * (r->user + r->sys) / r->wall);
    if (def != NULL && def->status == ST_OK && r_mbps(def) > 0)
        printf(" %8.3f", r_mbps(r) / r_mbps(def));
    else
        printf(" %8s", "-");
    if (r->family == BENCH_FAM_HWAF)
        printf("  %.2f", r->ops ? (double)r->ctr_ops / (double)r->ops : 0);
    printf("\n");
}

static const result *find(const bench_alg *a, const char *impl, size_t len)
{
    size_t i;

    for (i = 0; i < nresults; i++)
        if (results[i].alg == a && results[i].len == len
            && strcmp(results[i].impl, impl) == 0)
            return &results[i];
    return NULL;
}

static int impl_seen(const bench_alg *a, const char *impl, size_t upto)
{
    size_t i;

    for (i = 0; i < upto; i++)
        if (results[i].alg == a && strcmp(results[i].impl, impl) == 0)
            return 1;
    return 0;
}

/*
 * Smallest size from which impl is at least as fast as the default provider
 * at that size and every larger one; 0 when never.
 */
static size_t crossover(const bench_alg *a, const char *impl)
{
    size_t cross = 0;
    int k;

    for (k = opt.nsizes - 1; k >= 0; k--) {
        const result *r = find(a, impl, opt.sizes[k]);
        const result *d = find(a, "default", opt.sizes[k]);

        if (r == NULL || d == NULL || r->status != ST_OK || d->status != ST_OK)
            continue;
        if (r_mbps(r) < r_mbps(d))
            break;
        cross = opt.sizes[k];
    }
    return cross;
}

/* Throughput matrix and crossovers after each algorithm. */
static void print_summary(const bench_alg *a, size_t first)
{
    size_t i;
    int k;

    printf("\n%s, MB/s by wall clock:\n%-20s", a->name, "");
    for (k = 0; k < opt.nsizes; k++) {
        char sz[24];

        fmt_size(opt.sizes[k], sz, sizeof(sz));
        printf(" %9s", sz);
    }
    printf("\n");
    for (i = first; i < nresults; i++) {
        if (results[i].alg != a || impl_seen(a, results[i].impl, i))
            continue;
        printf("%-20s", results[i].impl);
        for (k = 0; k < opt.nsizes; k++) {
            const result *r = find(a, results[i].impl, opt.sizes[k]);

            if (r != NULL && r->status == ST_OK)
                printf(" %9.2f", r_mbps(r));
            else
                printf(" %9s", r == NULL ? "" : r->status == ST_NA ? "n/a" : "ERR");
        }
        printf("\n");
    }
    for (i = first; i < nresults; i++) {
        size_t c;
        char sz[24];

        if (results[i].alg != a || results[i].family == BENCH_FAM_SOFTWARE
            || impl_seen(a, results[i].impl, i))
            continue;
        if (find(a, "default", results[i].len) == NULL)
            continue;
        c = crossover(a, results[i].impl);
        fmt_size(c, sz, sizeof(sz));
        if (c)
            printf("crossover: %s at least as fast as the default provider from %s B up\n",
                   results[i].impl, sz);
        else
            printf("crossover: %s never as fast as the default provider here\n",
                   results[i].impl);
    }
}

static int write_csv(const char *path)
{
    FILE *f = fopen(path, "w");
    size_t i;

    if (f == NULL) {
        fprintf(stderr, "hwaf-bench: %s: %s\n", path, strerror(errno));
        return 0;
    }
    fprintf(f, "alg,impl,family,driver,hw,size,status,wall_s,user_s,sys_s,ops,"
               "bytes,mb_per_s,ops_per_s,user_s_per_gib,sys_s_per_gib,"
               "cpu_s_per_gib,backend_ops,backend_bytes,note\n");
    for (i = 0; i < nresults; i++) {
        const result *r = &results[i];
        char note[BENCH_WHY_MAX];
        size_t j;

        snprintf(note, sizeof(note), "%s", r->note);
        for (j = 0; note[j] != '\0'; j++)
            if (note[j] == ',' || note[j] == '"' || note[j] == '\n')
                note[j] = ';';
        fprintf(f, "%s,%s,%s,%s,%s,%zu,%s,%.6f,%.6f,%.6f,%llu,%llu,%.4f,%.2f,"
                   "%.6f,%.6f,%.6f,%llu,%llu,%s\n",
                r->alg->name, r->impl, family_name(r->family), r->driver,
                hw_name(r->hw), r->len, status_name[r->status], r->wall, r->user,
                r->sys, (unsigned long long)r->ops,
                (unsigned long long)(r->ops * r->len), r_mbps(r),
                r->wall > 0 ? (double)r->ops / r->wall : 0, r_per_gib(r, r->user),
                r_per_gib(r, r->sys), r_per_gib(r, r->user + r->sys),
                (unsigned long long)r->ctr_ops, (unsigned long long)r->ctr_bytes,
                note);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "hwaf-bench: %s: %s\n", path, strerror(errno));
        return 0;
    }
    return 1;
}

/* ---- plot ---- */

static int write_plot(const char *png)
{
    char dir[] = "/tmp/hwaf-bench-plotXXXXXX", path[600];
    int a, cols, rows, status = -1;
    FILE *gp;
    pid_t pid;

    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "hwaf-bench: mkdtemp: %s\n", strerror(errno));
        return 0;
    }
    snprintf(path, sizeof(path), "%s/plot.gp", dir);
    gp = fopen(path, "w");
    if (gp == NULL) {
        fprintf(stderr, "hwaf-bench: %s: %s\n", path, strerror(errno));
        rmdir(dir);
        return 0;
    }
    cols = opt.nalgs >= 2 ? 2 : 1;
    rows = (opt.nalgs + cols - 1) / cols;
    fprintf(gp, "set terminal pngcairo size %d,%d font 'sans,9'\n", 640 * cols, 420 * rows);
    fprintf(gp, "set output '%s'\n", png);
    fprintf(gp, "set multiplot layout %d,%d\n", rows, cols);
    fprintf(gp, "set logscale x 2\nset logscale y 10\nset format x '%%.0b%%BB'\nset grid\n"
                "set xlabel 'buffer size'\nset ylabel 'MB/s (wall clock)'\n"
                "set key outside right top font 'sans,8'\n");
    for (a = 0; a < opt.nalgs; a++) {
        const bench_alg *al = opt.algs[a];
        char names[BENCH_MAX_INST][BENCH_NAME_MAX];
        int nn = 0, n, k, marked = 0;
        size_t i;

        for (i = 0; i < nresults; i++) {
            int dup = 0;

            if (results[i].alg != al)
                continue;
            for (n = 0; n < nn; n++)
                dup |= strcmp(names[n], results[i].impl) == 0;
            if (!dup && nn < BENCH_MAX_INST)
                snprintf(names[nn++], BENCH_NAME_MAX, "%s", results[i].impl);
        }
        fprintf(gp, "unset arrow\nunset label\nset title '%s'\n", al->name);
        /* Mark the crossover of the first hwaf implementation that has one. */
        for (n = 0; n < nn && !marked; n++) {
            const result *r = NULL;
            size_t c;

            for (k = 0; k < opt.nsizes && r == NULL; k++)
                r = find(al, names[n], opt.sizes[k]);
            if (r == NULL || r->family != BENCH_FAM_HWAF
                || strcmp(names[n], BENCH_HWAF_AUTO) == 0)
                continue;
            c = crossover(al, names[n]);
            if (c) {
                fprintf(gp, "set arrow from %zu, graph 0 to %zu, graph 1 nohead "
                            "dashtype 2 linewidth 2 linecolor rgb 'red'\n", c, c);
                fprintf(gp, "set label 'offload pays from here (%s)' at %zu, graph 0.95 "
                            "right offset -0.5,0 textcolor rgb 'red'\n", names[n], c);
                marked = 1;
            }
        }
        if (!marked)
            fprintf(gp, "set label 'no hwaf path beats the default provider here' "
                        "at graph 0.02, graph 0.95 textcolor rgb 'red'\n");
        fprintf(gp, "plot ");
        for (n = 0; n < nn; n++)
            fprintf(gp, "%s'-' using 1:2 with linespoints title '%s'", n ? ", " : "",
                    names[n]);
        fprintf(gp, "\n");
        for (n = 0; n < nn; n++) {
            for (k = 0; k < opt.nsizes; k++) {
                const result *r = find(al, names[n], opt.sizes[k]);

                if (r != NULL && r->status == ST_OK && r_mbps(r) > 0)
                    fprintf(gp, "%zu %.4f\n", opt.sizes[k], r_mbps(r));
            }
            fprintf(gp, "e\n");
        }
    }
    fprintf(gp, "unset multiplot\n");
    fclose(gp);

    pid = fork();
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", path, (char *)NULL);
        fprintf(stderr, "hwaf-bench: cannot run gnuplot: %s (Debian: gnuplot-nox)\n",
                strerror(errno));
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    unlink(path);
    rmdir(dir);
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hwaf-bench: gnuplot failed; no plot written\n");
        return 0;
    }
    return 1;
}

/* ---- kernel tcrypt reference ---- */

/*
 * A tcrypt log as written by bench/tcrypt-ref: lines
 *   "<kernel name> <key bits> <size> <ops> <seconds> <driver>"
 * for encryption.  tcrypt's largest block is 4 KiB: the entry with the
 * largest size not above len stands for the driver's speed at len (per
 * operation overhead inside the kernel is small at that size).  Returns MB/s,
 * or 0 when the log has no such entry; *used gets the size taken.
 */
static double tcrypt_mbps(const bench_alg *a, size_t len, size_t *used)
{
    FILE *f;
    char line[256];
    double best = 0;
    size_t best_sz = 0;

    if (opt.tcrypt == NULL || (f = fopen(opt.tcrypt, "re")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char kname[64];
        unsigned int bits;
        size_t sz;
        double ops, secs;

        if (line[0] == '#'
            || sscanf(line, "%63s %u %zu %lf %lf", kname, &bits, &sz, &ops, &secs) != 5)
            continue;
        if (strcmp(kname, a->kname) == 0 && bits == a->keylen * 8 && sz <= len
            && sz >= best_sz && secs > 0) {
            best = ops * (double)sz / secs / 1e6;
            best_sz = sz;
        }
    }
    fclose(f);
    *used = best_sz;
    return best;
}

/* ---- targets ---- */

static int n_pass, n_fail, n_na;

static void verdict(const char *target, const char *detail, int state)
{
    /* state: 1 pass, 0 fail, -1 not evaluated */
    printf("%-4s  %-58s %s\n", state == 1 ? "PASS" : state == 0 ? "FAIL" : "N/A",
           target, detail);
    if (state == 1)
        n_pass++;
    else if (state == 0)
        n_fail++;
    else
        n_na++;
}

/* The first OK result of an implementation whose name starts with prefix
 * (and is not a zero-copy loop unless asked), preferring the given driver. */
static const result *pick(const bench_alg *a, const char *prefix, size_t len,
                          const char *driver)
{
    const result *any = NULL;
    size_t i, pl = strlen(prefix);

    for (i = 0; i < nresults; i++) {
        const result *r = &results[i];

        if (r->alg != a || r->len != len || strncmp(r->impl, prefix, pl) != 0
            || r->status != ST_OK)
            continue;
        if (strstr(prefix, "-zc") == NULL && strstr(r->impl, "-zc") != NULL)
            continue;
        if (driver != NULL && strcmp(r->driver, driver) == 0)
            return r;
        if (any == NULL)
            any = r;
    }
    return any;
}

static void ratio_target(const bench_alg *a, const char *what, const char *impl,
                         const char *ref, size_t len, double want)
{
    char target[160], detail[200], sz[16];
    const result *x = pick(a, impl, len, NULL);
    const result *y = x != NULL ? pick(a, ref, len, x->driver) : NULL;

    fmt_size(len, sz, sizeof(sz));
    snprintf(target, sizeof(target), "%s %s %s B: %s >= %.1fx %s", a->name, what, sz,
             impl, want, ref);
    if (x != NULL && y == NULL) {
        /* A peer that cannot take this buffer size at all is beaten. */
        const result *na = find(a, ref, len);

        if (na != NULL && na->status == ST_NA && na->family == BENCH_FAM_PEER) {
            snprintf(detail, sizeof(detail), "(%s cannot take %s B at all)", ref, sz);
            verdict(target, detail, 1);
            return;
        }
    }
    if (x == NULL || y == NULL || r_mbps(y) <= 0) {
        snprintf(detail, sizeof(detail), "(%s not measured)", x == NULL ? impl : ref);
        verdict(target, detail, -1);
        return;
    }
    if (x->pairs >= 3 && strncmp(ref, "bare-", 5) == 0
        && strcmp(x->driver, y->driver) == 0) {
        /* Decided by the ratio pass by pass, as the lines took turns. */
        snprintf(detail, sizeof(detail), "%.3fx median of %d passes (%.3f-%.3f; "
                 "%.3g vs %.3g MB/s)", x->pair_med, x->pairs, x->pair_lo, x->pair_hi,
                 r_mbps(x), r_mbps(y));
        verdict(target, detail, x->pair_med >= want);
        return;
    }
    snprintf(detail, sizeof(detail), "%.3fx (%.3g vs %.3g MB/s%s)",
             r_mbps(x) / r_mbps(y), r_mbps(x), r_mbps(y),
             strcmp(x->driver, y->driver) != 0 ? ", drivers differ" : "");
    verdict(target, detail, r_mbps(x) >= want * r_mbps(y));
}

/* hwaf-auto >= 0.95x the faster of the default provider and the best line
 * forced to the kernel (hwaf-afalg*, hwaf-devcrypto*). */
static void auto_target(const bench_alg *a, size_t len)
{
    char target[160], detail[200], sz[16];
    const result *x = pick(a, BENCH_HWAF_AUTO, len, NULL), *best = NULL;
    size_t i;

    for (i = 0; i < nresults; i++) {
        const result *r = &results[i];

        if (r->alg != a || r->len != len || r->status != ST_OK
            || strcmp(r->impl, BENCH_HWAF_AUTO) == 0
            || (r->family != BENCH_FAM_HWAF && strcmp(r->impl, "default") != 0))
            continue;
        if (best == NULL || r_mbps(r) > r_mbps(best))
            best = r;
    }
    fmt_size(len, sz, sizeof(sz));
    snprintf(target, sizeof(target), "%s dispatch %s B: %s >= 0.95x max(default, forced)",
             a->name, sz, BENCH_HWAF_AUTO);
    if (x == NULL || best == NULL || r_mbps(best) <= 0) {
        snprintf(detail, sizeof(detail), "(%s not measured)",
                 x == NULL ? BENCH_HWAF_AUTO : "default or hwaf");
        verdict(target, detail, -1);
        return;
    }
    if (x->pairs >= 3) {
        /* Decided by the median of the per-pass ratios (see the passes). */
        snprintf(detail, sizeof(detail),
                 "%.3fx median of %d passes, %.3f-%.3f (medians %.3g vs %s %.3g MB/s)",
                 x->pair_med, x->pairs, x->pair_lo, x->pair_hi, r_mbps(x), best->impl,
                 r_mbps(best));
        verdict(target, detail, x->pair_med >= 0.95);
        return;
    }
    snprintf(detail, sizeof(detail), "%.3fx (%.3g vs %s %.3g MB/s)", r_mbps(x) / r_mbps(best),
             r_mbps(x), best->impl, r_mbps(best));
    verdict(target, detail, r_mbps(x) >= 0.95 * r_mbps(best));
}

/* Policy cpu: hwaf-auto's user + system CPU per GiB <= 1.05x the least of
 * the default provider's and the forced lines', decided by the median of
 * the per-pass ratios (the lines of a pass took turns slice by slice). */
static void cpu_target(const bench_alg *a, size_t len)
{
    char target[160], detail[200], sz[16];
    const result *x = pick(a, BENCH_HWAF_AUTO, len, NULL);

    fmt_size(len, sz, sizeof(sz));
    snprintf(target, sizeof(target), "%s policy cpu %s B: %s CPU/GiB <= 1.05x "
             "min(default, forced)", a->name, sz, BENCH_HWAF_AUTO);
    if (x == NULL || x->cpairs == 0) {
        snprintf(detail, sizeof(detail), "(%s not measured)",
                 x == NULL ? BENCH_HWAF_AUTO : "CPU time of the other lines");
        verdict(target, detail, -1);
        return;
    }
    snprintf(detail, sizeof(detail), "%.3fx median of %d passes, %.3f-%.3f",
             x->cpair_med, x->cpairs, x->cpair_lo, x->cpair_hi);
    verdict(target, detail, x->cpair_med <= 1.05);
}

static int run_check(void)
{
    int a, k;

    printf("\nPerformance targets (ratios within this run; wall-clock MB/s)\n");
    for (a = 0; a < opt.nalgs; a++) {
        const bench_alg *al = opt.algs[a];

        if (al->kind == BENCH_CIPHER) {
            static const size_t at[] = { 16, 256, 16384 };

            for (k = 0; k < 3; k++)
                ratio_target(al, "AF_ALG overhead", "hwaf-afalg", "bare-afalg", at[k], 0.9);
            if (al->mode == BENCH_CBC)
                for (k = 0; k < opt.nsizes; k++)
                    ratio_target(al, "vs afalg engine", "hwaf-afalg", "engine-afalg",
                                 opt.sizes[k], 1.0);
            ratio_target(al, "zero-copy", "hwaf-afalg", "bare-afalg", 65536, 1.2);
            ratio_target(al, "zero-copy", "hwaf-afalg", "bare-afalg", 1048576, 1.2);
            for (k = 0; k < 2; k++) {
                size_t len = k ? 1048576 : 65536;
                char target[160], detail[160], sz[16];
                const result *x = pick(al, "hwaf-afalg", len, NULL);
                size_t tsz = 0;
                double t = tcrypt_mbps(al, len, &tsz);

                fmt_size(len, sz, sizeof(sz));
                snprintf(target, sizeof(target), "%s zero-copy %s B: hwaf-afalg >= 0.8x tcrypt",
                         al->name, sz);
                if (x == NULL || t <= 0) {
                    snprintf(detail, sizeof(detail), "(%s)",
                             x == NULL ? "hwaf-afalg not measured"
                                       : "no tcrypt entry; see --tcrypt");
                    verdict(target, detail, -1);
                } else {
                    snprintf(detail, sizeof(detail), "%.3fx (%.2f vs %.2f MB/s, tcrypt at %zu B)",
                             r_mbps(x) / t, r_mbps(x), t, tsz);
                    verdict(target, detail, r_mbps(x) >= 0.8 * t);
                }
            }
        }
        if (al->kind == BENCH_AEAD || al->kind == BENCH_MAC) {
            static const size_t at[] = { 16, 1024, 16384 };

            for (k = 0; k < 3; k++) {
                ratio_target(al, "AF_ALG overhead", "hwaf-afalg", "bare-afalg", at[k], 0.9);
                ratio_target(al, "/dev/crypto", "hwaf-devcrypto", "bare-cryptodev", at[k],
                             0.9);
            }
            continue;
        }
        if (al->kind == BENCH_DIGEST && strcmp(al->name, "SHA2-256") == 0)
            for (k = 0; k < opt.nsizes; k++)
                ratio_target(al, "hash", "hwaf-afalg", "bare-afalg", opt.sizes[k], 0.9);
        for (k = 0; k < opt.nsizes; k++)
            ratio_target(al, "/dev/crypto", "hwaf-devcrypto", "bare-cryptodev",
                         opt.sizes[k], 0.9);
    }
    /* Size-aware dispatch: hwaf in its default mode keeps up with the better
     * of software and the kernel at every size. */
    for (a = 0; a < opt.nalgs; a++)
        if (opt.algs[a]->kind == BENCH_CIPHER || opt.algs[a]->kind == BENCH_DIGEST)
            for (k = 0; k < opt.nsizes; k++) {
                auto_target(opt.algs[a], opt.sizes[k]);
                if (opt.policy_cpu)
                    cpu_target(opt.algs[a], opt.sizes[k]);
            }
    /* What zero-copy can bring on this kernel, for reference. */
    for (a = 0; a < opt.nalgs; a++) {
        for (k = 0; k < opt.nsizes; k++) {
            const result *z = pick(opt.algs[a], "bare-afalg-zc", opt.sizes[k], NULL);
            const result *c = z ? pick(opt.algs[a], "bare-afalg", opt.sizes[k], z->driver)
                                : NULL;
            char sz[24];

            if (z == NULL || c == NULL || opt.sizes[k] < 65536 || r_mbps(c) <= 0)
                continue;
            fmt_size(opt.sizes[k], sz, sizeof(sz));
            printf("info  %s %s B: bare-afalg-zc / bare-afalg = %.3fx\n",
                   opt.algs[a]->name, sz, r_mbps(z) / r_mbps(c));
        }
    }
    printf("targets: %d pass, %d fail, %d not evaluated\n", n_pass, n_fail, n_na);
    return n_fail ? 1 : n_na ? 2 : 0;
}

/* ---- main loop ---- */

static void open_all(bench_set *s, const bench_alg *a)
{
    int i, n;

    if (a->kind == BENCH_AEAD || a->kind == BENCH_MAC) {
        /* The peers have no GCM or HMAC rows. */
        if (want_family("default"))
            bench_open_default(s, a);
        if (want_family("hwaf"))
            bench_open_hwaf(s, a);
        if (want_family("bare-afalg"))
            bench_open_bare_afalg(s, a, NULL, NULL);
        if (want_family("bare-cryptodev"))
            bench_open_bare_cryptodev(s, a);
        goto filter;
    }
    if (want_family("default"))
        bench_open_default(s, a);
    if (want_family("hwaf"))
        bench_open_hwaf(s, a);
    if (want_family("engine-afalg"))
        bench_open_engine(s, a);
    if (want_family("libkcapi"))
        bench_open_kcapi(s, a);
    if (want_family("bare-afalg"))
        bench_open_bare_afalg(s, a, NULL, NULL);
    /* A hardware driver hwaf binds by name gets its own bare loop. */
    n = s->n;
    for (i = 0; i < n; i++)
        if (want_family("bare-afalg") && s->inst[i].family == BENCH_FAM_HWAF
            && s->inst[i].hw == 1 && strncmp(s->inst[i].name, "hwaf-afalg", 10) == 0)
            bench_open_bare_afalg(s, a, s->inst[i].driver, "-hw");
    if (want_family("bare-cryptodev"))
        bench_open_bare_cryptodev(s, a);
 filter:
    /* Drop what --impls excludes (openers add families together). */
    for (i = 0; i < s->n; i++)
        if (!want_impl(s->inst[i].name)) {
            s->inst[i].ops->close(s->inst[i].st);
            memmove(&s->inst[i], &s->inst[i + 1],
                    (size_t)(s->n - i - 1) * sizeof(s->inst[0]));
            s->n--;
            i--;
        }
}

static void describe_set(const bench_alg *a, const bench_set *s)
{
    int i;

    printf("\n=== %s (kernel %s) ===\n", a->name, a->kname);
    for (i = 0; i < s->n; i++) {
        const bench_inst *in = &s->inst[i];

        printf("  %-20s %-9s driver %-28s hw=%s", in->name, family_name(in->family),
               in->driver, hw_name(in->hw));
        if (strcmp(in->name, BENCH_HWAF_AUTO) == 0 && in->offload_min == SIZE_MAX)
            printf(" offload_min=never");
        else if (strcmp(in->name, BENCH_HWAF_AUTO) == 0)
            printf(" offload_min=%zu", in->offload_min);
        printf("\n");
    }
    for (i = 0; i < s->nabsent; i++)
        if (want_impl(s->absent[i].name))
            printf("  %-20s unavailable: %s\n", s->absent[i].name, s->absent[i].why);
}

static int size_ok(const bench_alg *a, const bench_inst *inst, size_t len, char *why,
                   size_t whylen)
{
    if (a->mode == BENCH_CBC && len % 16 != 0) {
        snprintf(why, whylen, "CBC needs whole blocks");
        return 0;
    }
    if (a->mode == BENCH_XTS && len < 16) {
        snprintf(why, whylen, "XTS needs at least 16 bytes");
        return 0;
    }
    if (inst->maxlen != 0 && len > inst->maxlen) {
        snprintf(why, whylen, "over %zu bytes this implementation cannot take one buffer",
                 inst->maxlen);
        return 0;
    }
    return 1;
}

static int cmp_mbps(const void *x, const void *y)
{
    double a = r_mbps(x), b = r_mbps(y);

    return a < b ? -1 : a > b;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;

    return a < b ? -1 : a > b;
}

/* Sort v[0..n) (n > 0) and take its median, lowest and highest. */
static void spread(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
    *med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    *lo = v[0];
    *hi = v[n - 1];
}

/*
 * A forced hwaf line (hwaf-afalg*, hwaf-devcrypto*) against its backend's
 * bare loop on the same driver, pass by pass (the lines of a pass took
 * turns slice by slice), into r's pair fields; runs not sorted yet.
 */
static void bare_pairs(const bench_set *s, const result *res, const result *runs, int i,
                       result *r)
{
    const result *x = &res[i];
    const char *bare = strncmp(x->impl, "hwaf-afalg", 10) == 0 ? "bare-afalg"
                     : strncmp(x->impl, "hwaf-devcrypto", 14) == 0 ? "bare-cryptodev" : NULL;
    double pair[99];    /* --repeat is at most 99 */
    int j, rep, n = 0;

    if (bare == NULL || x->family != BENCH_FAM_HWAF)
        return;
    for (j = 0; j < s->n; j++)
        if (res[j].status == ST_OK && strcmp(res[j].impl, bare) == 0
            && strcmp(res[j].driver, x->driver) == 0)
            break;
    if (j == s->n)
        return;
    for (rep = 0; rep < opt.repeat; rep++) {
        double b = r_mbps(&runs[(size_t)j * (size_t)opt.repeat + (size_t)rep]);

        if (b > 0)
            pair[n++] = r_mbps(&runs[(size_t)i * (size_t)opt.repeat + (size_t)rep]) / b;
    }
    if (n == 0)
        return;
    r->pairs = n;
    spread(pair, n, &r->pair_med, &r->pair_lo, &r->pair_hi);
}

static void run_alg(const bench_alg *a, unsigned char *in, unsigned char *out,
                    unsigned char *ref)
{
    bench_set s;
    size_t first = nresults;
    int k, i, rep;

    memset(&s, 0, sizeof(s));
    open_all(&s, a);
    describe_set(a, &s);
    printf("\n%8s  %-20s %10s %11s %10s %10s %7s %8s  %s\n", "size", "implementation",
           "MB/s", "ops/s", "user s/GiB", "sys s/GiB", "CPU", "x default",
           "backend ops/op");
    for (k = 0; k < opt.nsizes; k++) {
        size_t len = opt.sizes[k];
        size_t base = nresults;
        int have_ref = bench_reference(a, in, len, ref);
        result *runs;
        double pair[99], cpair[99];    /* --repeat is at most 99 */
        result bp[BENCH_MAX_INST];  /* forced lines against their bare loop */
        int pairs, cpairs, auto_i = -1;

        /* First pass: correctness, one result slot per implementation. */
        for (i = 0; i < s.n; i++) {
            bench_inst *inst = &s.inst[i];
            result *r = new_result();
            size_t cmplen = a->kind == BENCH_CIPHER ? len
                          : a->kind == BENCH_AEAD ? len + a->mdlen : a->mdlen;

            r->alg = a;
            r->len = len;
            r->family = inst->family;
            r->hw = inst->hw;
            snprintf(r->impl, sizeof(r->impl), "%s", inst->name);
            snprintf(r->driver, sizeof(r->driver), "%s", inst->driver);
            if (!size_ok(a, inst, len, r->note, sizeof(r->note))) {
                r->status = ST_NA;
                continue;
            }
            arm_watchdog(r, 1.0);
            memset(out, 0, cmplen);
            if (!inst->ops->reset(inst->st, r->note, sizeof(r->note))
                || !inst->ops->op(inst->st, in, out, len, r->note, sizeof(r->note))) {
                r->status = ST_ERROR;
                continue;
            }
            if (!have_ref || memcmp(out, ref, cmplen) != 0) {
                r->status = ST_WRONG;
                snprintf(r->note, sizeof(r->note), "%s",
                         have_ref ? "output differs from the default provider"
                                  : "no reference result");
                continue;
            }
        }
        alarm(0);
        /*
         * Timed passes.  Within one pass the implementations take turns in
         * slices (--slice) until each has had --seconds, so that anything
         * else the machine does while the pass runs (other processes, a
         * loaded host under an emulated guest) falls on all of them alike.
         * With --repeat, each cell keeps its median pass by throughput.
         */
        runs = calloc((size_t)s.n * (size_t)opt.repeat, sizeof(*runs));
        for (rep = 0; rep < opt.repeat && runs != NULL; rep++) {
            int nslices = (int)ceil(opt.seconds / opt.slice - 1e-9), sl;

            for (i = 0; i < s.n; i++) {
                result *r = &results[base + (size_t)i];
                result *t = &runs[(size_t)i * (size_t)opt.repeat + (size_t)rep];

                *t = *r;
                t->wall = t->user = t->sys = 0;
                t->ops = t->ctr_ops = t->ctr_bytes = 0;
                if (r->status != ST_OK)
                    continue;
                arm_watchdog(r, opt.warmup);
                if (!warm_up(&s.inst[i], in, out, len, t)) {
                    r->status = ST_ERROR;
                    snprintf(r->note, sizeof(r->note), "%s", t->note);
                }
                alarm(0);
            }
            /* The lines that take turns in this pass, in their order. */
            int live[BENCH_MAX_INST], nlive = 0;

            for (i = 0; i < s.n; i++)
                if (results[base + (size_t)i].status == ST_OK)
                    live[nlive++] = i;
            for (sl = 0; sl < nslices; sl++) {
                int turn;

                /* The order of the turns changes from slice to slice (and
                 * pass to pass) by the rows of a Williams design: over its
                 * rows each line comes right after each other line equally
                 * often, so that what a line leaves behind (a kernel line's
                 * system calls, its caches) does not fall on one other line
                 * more than on the rest. */
                for (turn = 0; turn < nlive; turn++) {
                    i = live[williams(nlive, rep * nslices + sl, turn)];
                    result *r = &results[base + (size_t)i];
                    result *t = &runs[(size_t)i * (size_t)opt.repeat + (size_t)rep];

                    if (r->status != ST_OK)
                        continue;
                    /* The last slice makes up the total exactly. */
                    double want = opt.seconds - t->wall;

                    if (sl + 1 < nslices && want > opt.slice)
                        want = opt.slice;
                    if (want <= 0)
                        continue;
                    progress(a, len, r->impl);
                    arm_watchdog(r, want);
                    if (!time_slice(&s.inst[i], in, out, len, want, t)) {
                        r->status = ST_ERROR;
                        snprintf(r->note, sizeof(r->note), "%s", t->note);
                    }
                    alarm(0);
                }
            }
            for (i = 0; i < s.n; i++)
                cells_done++;
        }
        for (rep = 0; opt.passes != NULL && rep < opt.repeat && runs != NULL; rep++)
            for (i = 0; i < s.n; i++) {
                const result *t = &runs[(size_t)i * (size_t)opt.repeat + (size_t)rep];

                if (t->status == ST_OK && t->ops > 0)
                    fprintf(opt.passes, "%s,%s,%s,%zu,%d,%.6f,%.6f,%.6f,%llu,%.4f,%.6f\n",
                            a->name, t->impl, t->driver, len, rep, t->wall, t->user, t->sys,
                            (unsigned long long)t->ops, r_mbps(t),
                            r_cpu_per_byte(t) * 1073741824.0);
            }
        /*
         * hwaf-auto against the best other line within each pass: the lines
         * of a pass took turns slice by slice, so that ratio moves less with
         * the host's load than a ratio of medians taken pass by pass apart.
         */
        pairs = cpairs = 0;
        for (i = 0; i < s.n && runs != NULL; i++) {
            const result *r = &results[base + (size_t)i];

            if (r->status != ST_OK || strcmp(r->impl, BENCH_HWAF_AUTO) != 0)
                continue;
            for (rep = 0; rep < opt.repeat; rep++) {
                double best = 0, least = 0, mine;
                int j;

                for (j = 0; j < s.n; j++) {
                    const result *o = &results[base + (size_t)j];
                    const result *t = &runs[(size_t)j * (size_t)opt.repeat + (size_t)rep];
                    double m = r_mbps(t), c = r_cpu_per_byte(t);

                    if (j == i || o->status != ST_OK
                        || (o->family != BENCH_FAM_HWAF && strcmp(o->impl, "default") != 0))
                        continue;
                    if (m > best)
                        best = m;
                    if (c > 0 && (least == 0 || c < least))
                        least = c;
                }
                if (best > 0)
                    pair[pairs++] = r_mbps(&runs[(size_t)i * (size_t)opt.repeat + (size_t)rep]) / best;
                mine = r_cpu_per_byte(&runs[(size_t)i * (size_t)opt.repeat + (size_t)rep]);
                if (least > 0 && mine > 0)
                    cpair[cpairs++] = mine / least;
            }
            auto_i = i;
        }
        memset(bp, 0, sizeof(bp));
        for (i = 0; i < s.n && runs != NULL; i++)
            if (results[base + (size_t)i].status == ST_OK && i != auto_i)
                bare_pairs(&s, &results[base], runs, i, &bp[i]);
        for (i = 0; i < s.n && runs != NULL; i++) {
            result *r = &results[base + (size_t)i];
            result *t = &runs[(size_t)i * (size_t)opt.repeat];

            if (r->status != ST_OK)
                continue;
            qsort(t, (size_t)opt.repeat, sizeof(*t), cmp_mbps);
            *r = t[opt.repeat / 2];
            if (bp[i].pairs > 0) {
                r->pairs = bp[i].pairs;
                r->pair_med = bp[i].pair_med;
                r->pair_lo = bp[i].pair_lo;
                r->pair_hi = bp[i].pair_hi;
            }
            if (i == auto_i && pairs > 0) {
                r->pairs = pairs;
                spread(pair, pairs, &r->pair_med, &r->pair_lo, &r->pair_hi);
            }
            if (i == auto_i && cpairs > 0) {
                r->cpairs = cpairs;
                spread(cpair, cpairs, &r->cpair_med, &r->cpair_lo, &r->cpair_hi);
            }
        }
        free(runs);
        progress_clear();
        for (i = 0; i < s.n; i++)
            print_row(&results[base + (size_t)i], find(a, "default", len));
        if (s.n > 1)
            printf("\n");
        fflush(stdout);
    }
    print_summary(a, first);
    set_close(&s);
}

int main(int argc, char **argv)
{
    static const size_t default_sizes[] = { 16, 64, 256, 1024, 8192, 16384, 65536,
                                            1048576 };
    /* The build tree's module only when it is there: an installed
     * hwaf-bench loads hwaf.so from libcrypto's modules directory. */
    const char *modules =
        access(HWAF_BENCH_MODULE_DIR "/hwaf.so", R_OK) == 0 ? HWAF_BENCH_MODULE_DIR : NULL;
    unsigned char *in = NULL, *out = NULL, *ref = NULL;
    size_t maxlen = 0, i;
    const char *calibration = NULL, *policy = NULL;
    char why[BENCH_WHY_MAX];
    int a, ret = 0;

    opt.seconds = 0.3;
    opt.warmup = -1;
    opt.repeat = 0;
    for (a = 1; a < argc; a++) {
        const char *arg = argv[a];
        const char *val = a + 1 < argc ? argv[a + 1] : NULL;
        int takes = 1;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(arg, "--check") == 0) {
            opt.check = 1, takes = 0;
        } else if (strcmp(arg, "--quiet") == 0) {
            opt.quiet = 1, takes = 0;
        } else if (strcmp(arg, "--list") == 0) {
            opt.list = 1, takes = 0;
        } else if (val == NULL) {
            fprintf(stderr, "hwaf-bench: unknown option or missing value: %s\n", arg);
            usage(stderr);
            return 64;
        } else if (strcmp(arg, "--turn-order") == 0) {
            /* The order of the turns for N lines, one row a line. */
            int n = atoi(val), r, t, rows = n == 1 ? 1 : n % 2 == 0 ? n : 2 * n;

            if (n < 1 || n > BENCH_MAX_INST) {
                fprintf(stderr, "hwaf-bench: --turn-order takes 1 to %d\n", BENCH_MAX_INST);
                return 64;
            }
            for (r = 0; r < rows; r++)
                for (t = 0; t < n; t++)
                    printf("%d%c", williams(n, r, t), t + 1 < n ? ' ' : '\n');
            return 0;
        } else if (strcmp(arg, "--algs") == 0) {
            if (!parse_list(val, add_alg)) {
                fprintf(stderr, "hwaf-bench: unknown algorithm in '%s'\n", val);
                return 64;
            }
        } else if (strcmp(arg, "--sizes") == 0) {
            if (!parse_list(val, add_size)) {
                fprintf(stderr, "hwaf-bench: bad size list '%s'\n", val);
                return 64;
            }
        } else if (strcmp(arg, "--seconds") == 0) {
            opt.seconds = atof(val);
        } else if (strcmp(arg, "--warmup") == 0) {
            opt.warmup = atof(val);
        } else if (strcmp(arg, "--slice") == 0) {
            opt.slice = atof(val);
        } else if (strcmp(arg, "--passes") == 0) {
            opt.passes = fopen(val, "w");
            if (opt.passes == NULL) {
                fprintf(stderr, "hwaf-bench: %s: %s\n", val, strerror(errno));
                return 4;
            }
            fprintf(opt.passes, "alg,impl,driver,size,pass,wall_s,user_s,sys_s,ops,mb_per_s,"
                                "cpu_s_per_gib\n");
        } else if (strcmp(arg, "--repeat") == 0) {
            opt.repeat = atoi(val);
        } else if (strcmp(arg, "--impls") == 0) {
            opt.impls = val;
        } else if (strcmp(arg, "--csv") == 0) {
            opt.csv = val;
        } else if (strcmp(arg, "--plot") == 0) {
            opt.plot = val;
        } else if (strcmp(arg, "--tcrypt") == 0) {
            opt.tcrypt = val;
        } else if (strcmp(arg, "--cryptodev") == 0) {
            bench_cryptodev_path = val;
        } else if (strcmp(arg, "--calibration") == 0) {
            calibration = val;
        } else if (strcmp(arg, "--policy") == 0) {
            policy = val;
            opt.policy_cpu = strcmp(val, "cpu") == 0;
        } else if (strcmp(arg, "--modules") == 0) {
            modules = val;
            setenv("OPENSSL_MODULES", val, 1);
        } else {
            fprintf(stderr, "hwaf-bench: unknown option: %s\n", arg);
            usage(stderr);
            return 64;
        }
        a += takes;
    }
    if (opt.seconds <= 0 || opt.seconds > 3600) {
        fprintf(stderr, "hwaf-bench: --seconds must be in (0, 3600]\n");
        return 64;
    }
    if (opt.slice <= 0)
        opt.slice = 0.05;
    if (opt.warmup < 0)
        opt.warmup = opt.seconds / 3 < 0.1 ? opt.seconds / 3 : 0.1;
    if (opt.repeat <= 0)
        opt.repeat = opt.check ? 3 : 1;
    if (opt.repeat > 99)
        opt.repeat = 99;
    if (opt.nalgs == 0) {
        if (opt.check) {
            add_alg("AES-128-CBC");
            add_alg("SHA2-256");
        } else {
            add_alg("all");
        }
    }
    if (opt.nsizes == 0) {
        for (i = 0; i < sizeof(default_sizes) / sizeof(default_sizes[0]); i++)
            opt.sizes[opt.nsizes++] = default_sizes[i];
    }
    for (a = 0; a < opt.nsizes; a++)
        if (opt.sizes[a] > maxlen)
            maxlen = opt.sizes[a];

    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    if (policy != NULL && calibration == NULL) {
        fprintf(stderr, "hwaf-bench: --policy needs --calibration\n");
        return 64;
    }
    if (!bench_evp_init(modules, calibration, policy, why, sizeof(why))) {
        fprintf(stderr, "hwaf-bench: %s\n", why);
        return 4;
    }
    /* Page-aligned buffers: what the zero-copy paths need. */
    if (posix_memalign((void **)&in, 4096, maxlen + 4096) != 0
        || posix_memalign((void **)&out, 4096, maxlen + 4096) != 0
        || posix_memalign((void **)&ref, 4096, maxlen + 4096) != 0) {
        fprintf(stderr, "hwaf-bench: out of memory\n");
        return 4;
    }
    for (i = 0; i < maxlen; i++)
        in[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);

    printf("hwaf-bench: %d algorithm(s), sizes", opt.nalgs);
    for (a = 0; a < opt.nsizes; a++)
        printf(" %zu", opt.sizes[a]);
    printf("; %.3f s per measurement (in turns of %.3f s) after %.3f s warm-up, "
           "%d run(s) each\n", opt.seconds, opt.slice, opt.warmup, opt.repeat);
    printf("throughput and ops/s by wall clock; CPU = (user + sys) / wall of this "
           "process; s/GiB = CPU seconds per GiB processed\n");
    bench_hwaf_describe(stdout);
    print_counters("before");

    if (opt.list) {
        for (a = 0; a < opt.nalgs; a++) {
            bench_set s;

            memset(&s, 0, sizeof(s));
            open_all(&s, opt.algs[a]);
            describe_set(opt.algs[a], &s);
            set_close(&s);
        }
    } else {
        for (a = 0; a < opt.nalgs; a++) {
            bench_set s;

            /* Count cells for the progress line. */
            memset(&s, 0, sizeof(s));
            open_all(&s, opt.algs[a]);
            cells_total += (size_t)s.n * (size_t)opt.nsizes * (size_t)opt.repeat;
            set_close(&s);
        }
        run_start = now();
        for (a = 0; a < opt.nalgs; a++)
            run_alg(opt.algs[a], in, out, ref);
        printf("\n");
        print_counters("after");
        if (opt.csv != NULL && !write_csv(opt.csv))
            ret = 5;
        if (opt.plot != NULL && !write_plot(opt.plot))
            ret = 5;
        if (opt.passes != NULL && fclose(opt.passes) != 0) {
            fprintf(stderr, "hwaf-bench: --passes: %s\n", strerror(errno));
            ret = 5;
        }
        opt.passes = NULL;
        /* Errors and wrong output of this project's code fail the run; the
         * peers' are findings, reported in the table. */
        for (i = 0; i < nresults; i++)
            if ((results[i].status == ST_ERROR || results[i].status == ST_WRONG)
                && results[i].family != BENCH_FAM_PEER)
                ret = ret ? ret : 6;
        if (opt.check) {
            int c = run_check();

            if (c != 0)
                ret = c;
        }
    }
    free(results);
    free(in);
    free(out);
    free(ref);
    bench_evp_cleanup();
    return ret;
}
