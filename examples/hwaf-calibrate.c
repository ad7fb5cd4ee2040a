/*
 * hwaf-info --calibrate: measure, per implementation hwaf offers (algorithm,
 * backend, kernel driver), from which operation size the kernel path beats
 * the software path of size-aware dispatch -- by wall clock (policy
 * throughput) and by user+system CPU time of the calling thread (policy
 * cpu) -- and write the calibration file the provider reads at load
 * (docs/config.md, "Size-aware dispatch").
 *
 * Both paths are timed through the same hwaf context type, forced with the
 * hwaf-offload context parameter, so that the figures include everything
 * dispatch costs.  Each size is timed in rounds of one timing of each path
 * back to back, which one goes first alternating; the decision takes the
 * median of the rounds' kernel/software ratios, so that a moment of load
 * on a shared machine falls on both sides of a round and one bad round
 * does not decide.  Sizes are taken from 256 KiB downwards and only as far
 * as the answer needs (decide()), with 1 MiB too when 256 KiB is close.
 * Points above the driver's request limit (HWAF_REQ_MAX_ASYNC, 64 KiB for
 * engines; virtio-crypto stops at 128 KiB) go to the kernel as several
 * requests, as the mode layer sends any larger operation, so that the
 * decision for an engine whose lead over software grows with the size does
 * not rest on the one point where it is narrowest.  CPU time is the
 * calling thread's: work an engine does outside the CPU (virtio-crypto: in
 * the host) does not count, the system calls do.
 */
#define _GNU_SOURCE   /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <hwaf/hwaf.h>
#include "hwaf-calibrate.h"
#include "hwaf-calibrate-rule.h"

#define MIN_OPS 2

static double now_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* User+system CPU time of this thread, to the nanosecond (getrusage
 * counts in scheduler ticks). */
static double now_cpu(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char shared_buf[1048576 + 64], key[64], iv[16];

enum { KIND_CIPHER, KIND_DIGEST, KIND_GCM, KIND_HMAC };

/* What one operation is timed on: a cipher or GCM context, a digest, an
 * HMAC context. */
typedef struct {
    int kind;
    EVP_CIPHER_CTX *c;
    EVP_MD_CTX *d;
    const EVP_MD *md;
    EVP_MAC_CTX *m;
    unsigned char *buf;   /* the data, NULL: the shared buf */
} target;

/*
 * One operation of n bytes: a cipher update; a whole digest; a whole GCM
 * message (the IV again: a new message of the same size each time); a
 * whole HMAC.  Digests, GCM messages and HMACs take their path per message.
 */
static int op(const target *t, int force, size_t n)
{
    unsigned char *buf = t->buf != NULL ? t->buf : shared_buf;
    int outl;
    OSSL_PARAM p[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_END };

    if (t->kind == KIND_CIPHER)
        return EVP_CipherUpdate(t->c, buf, &outl, buf, (int)n);
    if (t->kind == KIND_GCM) {
        unsigned char tag[16];

        return EVP_EncryptInit_ex2(t->c, NULL, NULL, iv, p)
               && EVP_EncryptUpdate(t->c, buf, &outl, buf, (int)n)
               && EVP_EncryptFinal_ex(t->c, buf, &outl)
               && EVP_CIPHER_CTX_ctrl(t->c, EVP_CTRL_AEAD_GET_TAG, 16, tag) > 0;
    }
    if (t->kind == KIND_HMAC) {
        unsigned char out[EVP_MAX_MD_SIZE];
        size_t l;

        return EVP_MAC_init(t->m, NULL, 0, p) && EVP_MAC_update(t->m, buf, n)
               && EVP_MAC_final(t->m, out, &l, sizeof(out));
    }
    {
        EVP_MD_CTX *d = t->d;
        const EVP_MD *md = t->md;
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int l;

        return EVP_DigestInit_ex2(d, md, p) && EVP_DigestUpdate(d, buf, n)
               && EVP_DigestFinal_ex(d, out, &l);
    }
}

static int time_op(const target *t, int force, size_t n, double budget, double *wall,
                   double *cpu)
{
    double w0, c0, w;
    long k = 0;

    if (!op(t, force, n))    /* warm: sessions opened, pages touched */
        return 0;
    w0 = now_wall();
    c0 = now_cpu();
    do {
        if (!op(t, force, n))
            return 0;
        k++;
        w = now_wall() - w0;
    } while (w < budget || k < MIN_OPS);
    *wall = w / k;
    *cpu = (now_cpu() - c0) / k;
    return 1;
}

static EVP_CIPHER_CTX *cipher_ctx(EVP_CIPHER *ciph, int force)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    OSSL_PARAM p[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_END };

    if (c == NULL || !EVP_EncryptInit_ex2(c, ciph, key, iv, NULL)
        || !EVP_CIPHER_CTX_set_params(c, p)) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    EVP_CIPHER_CTX_set_padding(c, 0);
    return c;
}

/* An HMAC context over digest, keyed, whose kernel driver is drv. */
static EVP_MAC_CTX *hmac_ctx(EVP_MAC *mac, const char *digest, const char *drv)
{
    EVP_MAC_CTX *m = EVP_MAC_CTX_new(mac);
    char got[128] = "";
    OSSL_PARAM p[] = { OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
                       OSSL_PARAM_END };
    OSSL_PARAM q[] = { OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, got, sizeof(got)),
                       OSSL_PARAM_END };

    if (m != NULL && EVP_MAC_init(m, key, 32, p) && EVP_MAC_CTX_get_params(m, q)
        && strcmp(got, drv) == 0)
        return m;
    EVP_MAC_CTX_free(m);
    ERR_clear_error();
    return NULL;
}

/*
 * Size i: nrounds more rounds, each one timing of each path back to back
 * (which goes first alternates), so that a slow moment of the machine falls
 * on both paths of a round; then the statistic decided on (cal_settle,
 * hwaf-calibrate-rule.c).  0 when an operation failed (error queued).
 */
static int measure_point(const target t[2], int kind, int hw, size_t i, double budget,
                         cal_point *pt, int nrounds)
{
    int round, k, path;

    for (round = pt->n; round < pt->n + nrounds; round++) {
        for (k = 0; k < 2; k++) {
            path = (k + round) % 2;
            if (!time_op(&t[path], path == CAL_KERNEL ? 1 : 0, cal_sizes[i], budget,
                         &pt->c[CAL_WALL][path][round], &pt->c[CAL_CPU][path][round])) {
                /* A GCM message larger than the kernel takes in one
                 * request is computed in software whatever the
                 * threshold: that size does not count. */
                if (kind != KIND_GCM || path != CAL_KERNEL || i == 0)
                    return 0;
                ERR_clear_error();
                pt->state = -1;
                return 1;
            }
        }
    }
    pt->n += nrounds;
    cal_settle(pt, hw);
    return 1;
}

/*
 * The thresholds, [CAL_WALL] for policy throughput and [CAL_CPU] for policy
 * cpu, as indexes into cal_sizes (-1: never), by cal_thresholds: the
 * smallest size from which the kernel wins (by CAL_WIN) at every measured
 * size up to the largest.  Where the two are about even, software: it has
 * no system calls to fail.  What is measured:
 *
 * A CPU driver: sizes are measured from 256 KiB down, CAL_ROUNDS rounds each,
 * and no further than both measures need: below the first size where the
 * kernel loses by both, nothing can change the answer (a CPU driver, whose
 * kernel path does software's work plus system calls, is decided at
 * 256 KiB alone).  An engine (hw): every size from 16 B to 256 KiB, in
 * CAL_HW_ROUNDS rounds that take the sizes in turn, so that a slow spell of
 * the engine (longer than one size's rounds) falls on a round of every
 * size instead of on all the rounds of one.  Either way, when the kernel
 * is close at 256 KiB without winning, 1 MiB is timed too and decides.
 */
static int decide(const target t[2], int kind, int hw, double budget, cal_costs *r, int from[2])
{
    int i, m, round, scan[2] = { 1, 1 }, top = (int)CAL_TOP;
    cal_point *pt = &r->p[CAL_TOP];

    memset(r, 0, sizeof(*r));
    from[CAL_WALL] = from[CAL_CPU] = -1;
    if (hw) {
        for (round = 0; round < CAL_HW_ROUNDS; round++)
            for (i = top; i >= 0; i--)
                if (r->p[i].state >= 0
                    && !measure_point(t, kind, hw, (size_t)i, budget, &r->p[i], 1))
                    return 0;
    } else if (!measure_point(t, kind, hw, CAL_TOP, budget, pt, CAL_ROUNDS)) {
        return 0;
    }
    for (m = 0; m < 2; m++)
        if (pt->state == 1 && pt->ratio[m] >= CAL_WIN && pt->ratio[m] < CAL_CLOSE)
            top = (int)CAL_NSIZES - 1;
    if (hw && top > (int)CAL_TOP
        && !measure_point(t, kind, hw, (size_t)top, budget, &r->p[top], CAL_HW_ROUNDS))
        return 0;
    for (i = top; i >= 0 && (scan[CAL_WALL] || scan[CAL_CPU]); i--) {
        pt = &r->p[i];
        if (pt->state == 0 && !measure_point(t, kind, hw, (size_t)i, budget, pt, CAL_ROUNDS))
            return 0;
        if (pt->state < 0)
            continue;
        for (m = 0; m < 2; m++)
            if (!cal_wins(pt, m))
                scan[m] = 0;
    }
    cal_thresholds(r, from);
    return 1;
}

static int measure(OSSL_LIB_CTX *lib, const char *name, const char *drv, const char *propq,
                   int kind, int hw, double budget, cal_costs *r, int from[2])
{
    static const char *const digests[] = { "SHA1", "SHA2-224", "SHA2-256", "SHA2-384",
                                           "SHA2-512" };
    EVP_CIPHER *ciph = NULL;
    EVP_MD *md = NULL;
    EVP_MAC *mac = NULL;
    target t[2];
    size_t i;
    int k, ok = 0;

    memset(t, 0, sizeof(t));
    t[CAL_KERNEL].kind = t[CAL_SOFT].kind = kind;
    if (kind == KIND_DIGEST) {
        if ((md = EVP_MD_fetch(lib, name, propq)) == NULL
            || (t[CAL_KERNEL].d = t[CAL_SOFT].d = EVP_MD_CTX_new()) == NULL)
            goto done;
        t[CAL_KERNEL].md = t[CAL_SOFT].md = md;
    } else if (kind == KIND_HMAC) {
        /* one "HMAC" per backend and class: the digest whose driver this is */
        if ((mac = EVP_MAC_fetch(lib, name, propq)) == NULL)
            goto done;
        for (i = 0; i < sizeof(digests) / sizeof(digests[0]) && t[CAL_SOFT].m == NULL; i++)
            if ((t[CAL_KERNEL].m = hmac_ctx(mac, digests[i], drv)) != NULL)
                t[CAL_SOFT].m = hmac_ctx(mac, digests[i], drv);
        if (t[CAL_SOFT].m == NULL)
            goto done;
    } else {
        if ((ciph = EVP_CIPHER_fetch(lib, name, propq)) == NULL
            || (t[CAL_KERNEL].c = cipher_ctx(ciph, 1)) == NULL
            || (t[CAL_SOFT].c = cipher_ctx(ciph, 0)) == NULL)
            goto done;
    }
    ok = decide(t, kind, hw, budget, r, from);
 done:
    for (k = 0; k < 2; k++) {
        EVP_CIPHER_CTX_free(t[k].c);
        EVP_MAC_CTX_free(t[k].m);
    }
    EVP_MD_CTX_free(t[CAL_KERNEL].d);
    EVP_CIPHER_free(ciph);
    EVP_MD_free(md);
    EVP_MAC_free(mac);
    return ok;
}

static const char *threshold_text(int from, char *out, size_t len)
{
    if (from < 0)
        snprintf(out, len, "never");
    else
        snprintf(out, len, "%zu", from == 0 ? (size_t)0 : cal_sizes[from]);
    return out;
}

/*
 * zerocopy = auto's verdict, per AF_ALG cipher driver: hwaf loaded twice
 * more, in library contexts of their own, with zerocopy = yes and with
 * zerocopy = no; one page-aligned update of ZC_LEN bytes forced to the
 * kernel through each, in CAL_ROUNDS rounds that alternate which goes first;
 * splice when its median per round is below CAL_WIN times copy's (the
 * measurement the provider otherwise makes once per process, be_afalg.c).
 */
#define ZC_LEN (256u * 1024)

static OSSL_LIB_CTX *zc_lib(OSSL_PROVIDER *hwaf, const char *mode)
{
    const OSSL_DISPATCH *d = OSSL_PROVIDER_get0_dispatch(hwaf);
    Dl_info where;
    char module[PATH_MAX];
    char path[4096];
    const char *dir = getenv("TMPDIR");
    OSSL_LIB_CTX *lib;
    FILE *f;
    int fd, ok;

    /* the module hwaf-info loaded, wherever the configuration found it */
    if (d == NULL || dladdr((const void *)d, &where) == 0 || where.dli_fname == NULL
        || realpath(where.dli_fname, module) == NULL)
        return NULL;   /* (a relative name would be taken inside the modules directory) */
    snprintf(path, sizeof(path), "%s/hwaf-calibrate.XXXXXX",
             dir != NULL && *dir != '\0' ? dir : "/tmp");
    if ((fd = mkstemp(path)) < 0)
        return NULL;
    if ((f = fdopen(fd, "w")) == NULL) {
        close(fd);
        unlink(path);
        return NULL;
    }
    fprintf(f, "openssl_conf = c\n[c]\nproviders = p\n[p]\n" HWAF_PROVIDER_NAME " = h\n"
            "default = d\n[d]\nactivate = 1\n[h]\nmodule = %s\nzerocopy = %s\n"
            "activate = 1\n", module, mode);
    ok = fclose(f) == 0;
    lib = OSSL_LIB_CTX_new();
    if (lib != NULL && (!ok || !OSSL_LIB_CTX_load_config(lib, path))) {
        OSSL_LIB_CTX_free(lib);
        lib = NULL;
    }
    unlink(path);
    return lib;
}

/* A context of lib's hwaf name on driver drv, forced to the kernel. */
static EVP_CIPHER_CTX *zc_ctx(OSSL_LIB_CTX *lib, const char *name, const char *drv,
                              const char *propq)
{
    EVP_CIPHER *ciph = EVP_CIPHER_fetch(lib, name, propq);
    EVP_CIPHER_CTX *c = ciph != NULL ? cipher_ctx(ciph, 1) : NULL;
    char got[128] = "";
    OSSL_PARAM q[] = { OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, got, sizeof(got)),
                       OSSL_PARAM_END };

    EVP_CIPHER_free(ciph);
    if (c != NULL && (!EVP_CIPHER_CTX_get_params(c, q) || strcmp(got, drv) != 0)) {
        fprintf(stderr, "hwaf-info: zerocopy %s: the context is on \"%s\"\n", drv, got);
        EVP_CIPHER_CTX_free(c);
        c = NULL;
    }
    if (c == NULL)
        ERR_print_errors_fp(stderr);
    return c;
}

/* 1 splice, 0 copy, -1 not measured (why on stderr); us[2]: medians, splice
 * and copy.  Decided on the median of the rounds' ratios (both paths go to
 * the same driver). */
static int zc_measure(OSSL_LIB_CTX *zl[2], const char *name, const char *drv,
                      const char *propq, double budget, double us[2])
{
    static unsigned char *abuf;
    EVP_CIPHER_CTX *c[2];
    target t[2];
    double w[2][CAL_ROUNDS], u, r[CAL_ROUNDS], ratio;
    int k, round, path, verdict = -1;

    if (abuf == NULL && posix_memalign((void **)&abuf, 4096, ZC_LEN) != 0)
        return -1;
    memset(abuf, 0x5a, ZC_LEN);
    memset(t, 0, sizeof(t));
    for (k = 0; k < 2; k++) {
        c[k] = zc_ctx(zl[k], name, drv, propq);
        t[k].kind = KIND_CIPHER;
        t[k].c = c[k];
        t[k].buf = abuf;
    }
    if (c[0] == NULL || c[1] == NULL) {
        fprintf(stderr, "hwaf-info: zerocopy %s %s: no context on that driver\n", name, drv);
        goto done;
    }
    for (round = 0; round < CAL_ROUNDS; round++) {
        for (k = 0; k < 2; k++) {
            path = (k + round) % 2;
            if (!time_op(&t[path], 1, ZC_LEN, budget, &w[path][round], &u)) {
                fprintf(stderr, "hwaf-info: zerocopy %s %s: an update failed\n", name, drv);
                ERR_print_errors_fp(stderr);
                goto done;
            }
        }
        r[round] = w[0][round] / w[1][round];
    }
    ratio = cal_median(r, CAL_ROUNDS);
    us[0] = cal_median(w[0], CAL_ROUNDS) * 1e6;
    us[1] = cal_median(w[1], CAL_ROUNDS) * 1e6;
    verdict = ratio < CAL_WIN;
 done:
    for (k = 0; k < 2; k++)
        EVP_CIPHER_CTX_free(c[k]);
    return verdict;
}

/*
 * The zerocopy line of drv (once per driver; no line when it could not be
 * measured: the provider then measures at run time).  zl: the two library
 * contexts, made on first need.
 */
static void zc_line(FILE *f, OSSL_PROVIDER *hwaf, OSSL_LIB_CTX *zl[2], const char *name,
                    const char *drv, const char *propq, double budget)
{
    static char seen[64][128];
    static int nseen;
    double us[2];
    int i, v;

    for (i = 0; i < nseen; i++)
        if (strcmp(seen[i], drv) == 0)
            return;
    if (nseen < 64)
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", drv);
    if ((zl[0] == NULL && (zl[0] = zc_lib(hwaf, "yes")) == NULL)
        || (zl[1] == NULL && (zl[1] = zc_lib(hwaf, "no")) == NULL)) {
        fprintf(f, "# zerocopy afalg %s: hwaf did not load again\n", drv);
        ERR_clear_error();
        return;
    }
    v = zc_measure(zl, name, drv, propq, budget, us);
    if (v < 0) {
        fprintf(f, "# zerocopy afalg %s: could not be measured\n", drv);
        return;
    }
    fprintf(f, "# zerocopy afalg %s: %s %u bytes, splice %.1f us, copy %.1f us\n", drv, name,
            ZC_LEN, us[0], us[1]);
    fprintf(f, "zerocopy afalg %s %s\n", drv, v ? "splice" : "copy");
    if (f != stdout)
        printf("  %-12s %-9s %-32s zerocopy %s\n", name, "afalg", drv, v ? "splice" : "copy");
}

/* Dispatch has a software path for all of these; what one operation is. */
static int dispatched(const char *name, int *kind)
{
    static const char *const c[] = { "AES-128-CBC", "AES-192-CBC", "AES-256-CBC",
                                      "AES-128-CTR", "AES-192-CTR", "AES-256-CTR",
                                      "AES-128-XTS", "AES-256-XTS" };
    static const char *const d[] = { "SHA1", "SHA2-224", "SHA2-256", "SHA2-384", "SHA2-512" };
    static const char *const g[] = { "AES-128-GCM", "AES-192-GCM", "AES-256-GCM" };
    size_t i;

    for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
        if (strcmp(name, c[i]) == 0)
            return (*kind = KIND_CIPHER) == KIND_CIPHER;
    for (i = 0; i < sizeof(d) / sizeof(d[0]); i++)
        if (strcmp(name, d[i]) == 0)
            return (*kind = KIND_DIGEST) == KIND_DIGEST;
    for (i = 0; i < sizeof(g) / sizeof(g[0]); i++)
        if (strcmp(name, g[i]) == 0)
            return (*kind = KIND_GCM) == KIND_GCM;
    if (strcmp(name, "HMAC") == 0)
        return (*kind = KIND_HMAC) == KIND_HMAC;
    return 0;
}

const char *hwaf_calibration_file(const char *config, char *out, size_t len)
{
    const char *p = config != NULL ? strstr(config, "calibration = ") : NULL;
    size_t n;

    if (p == NULL)
        return NULL;
    p += strlen("calibration = ");
    n = strcspn(p, ";");
    if (n == 0 || n >= len)
        return NULL;
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

int hwaf_calibrate(OSSL_LIB_CTX *lib, OSSL_PROVIDER *hwaf, const char *outfile,
                   double budget)
{
    const char *algs = NULL, *config = NULL, *st_afalg = NULL, *st_dc = NULL;
    const char *probed = NULL;
    OSSL_PARAM p[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_ALGORITHMS, (char **)&algs, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_CONFIG, (char **)&config, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_AFALG_STATUS, (char **)&st_afalg, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_DEVCRYPTO_STATUS, (char **)&st_dc, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_PROBE, (char **)&probed, 0),
        OSSL_PARAM_END
    };
    char path[4096], tmp[4200], line[512];
    FILE *f = stdout;
    struct utsname u;
    time_t t0 = time(NULL);
    double start = now_wall();
    OSSL_LIB_CTX *zl[2] = { NULL, NULL };
    int n = 0, failed = 0;
    size_t i;

    for (i = 0; i < sizeof(shared_buf); i++)
        shared_buf[i] = (unsigned char)(i * 131 + 7);
    for (i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 13 + 1);   /* XTS halves differ */
    for (i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)(0xf0 + i);
    if (!OSSL_PROVIDER_get_params(hwaf, p) || algs == NULL || config == NULL) {
        fprintf(stderr, "hwaf-info: cannot read hwaf's parameters\n");
        return 2;
    }
    if (outfile == NULL && hwaf_calibration_file(config, path, sizeof(path)) != NULL)
        outfile = path;
    if (outfile != NULL && strcmp(outfile, "-") != 0) {
        int fd;

        /* A temporary file in the same directory, renamed over the file
         * once complete: a load never reads a half-written one.  Mode 0644
         * whatever the umask: every program that loads hwaf reads it. */
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", outfile, (long)getpid());
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || fchmod(fd, 0644) != 0 || (f = fdopen(fd, "w")) == NULL) {
            fprintf(stderr, "hwaf-info: cannot write %s: %s\n", tmp, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            return 2;
        }
    }
    if (uname(&u) != 0)
        snprintf(u.release, sizeof(u.release), "?");
    fprintf(f, "hwaf-calibration 1\n"
            "# written by hwaf-info --calibrate, kernel %s, %s"
            "# <name> <backend> <driver> <throughput bytes|never> <cpu bytes|never>\n"
            "# zerocopy <backend> <driver> splice|copy\n"
            "# probe <backend> <key>, then per driver the probe found:\n"
            "# driver <backend> <kernel name>/<key bytes> <driver> <priority> <hw> <request max>\n"
            "# per operation (us), kernel / software, wall and user+system CPU, medians of\n"
            "# %d interleaved rounds, %d on an engine (\"-\": not needed, not measured);\n"
            "# ratio: what decides, the median of the rounds' kernel/software ratios (wall\n"
            "# on an engine: the ratio of each path's best round when smaller). The kernel\n"
            "# wins a size below %.2f; the threshold is the smallest size from which it wins\n"
            "# at every size measured.\n"
            "# size:", u.release, ctime(&t0), CAL_ROUNDS, CAL_HW_ROUNDS, CAL_WIN);
    for (i = 0; i < CAL_NSIZES; i++)
        fprintf(f, " %zu", cal_sizes[i]);
    fprintf(f, "\n");
    /* What the probe found decides which implementations are calibrated:
     * the backends' status goes into the file, and a probe that met a
     * passing shortage (its result is not the kernel's) is said aloud. */
    fprintf(f, "# afalg: %s\n# devcrypto: %s\n", st_afalg != NULL ? st_afalg : "?",
            st_dc != NULL ? st_dc : "?");
    if ((st_afalg != NULL && strstr(st_afalg, "probed again") != NULL)
        || (st_dc != NULL && strstr(st_dc, "probed again") != NULL))
        fprintf(stderr, "hwaf-info: the kernel probe of this process was cut short (afalg: %s; "
                "devcrypto: %s): implementations may be missing from this calibration; "
                "run it again\n", st_afalg != NULL ? st_afalg : "?", st_dc != NULL ? st_dc : "?");
    /* The probe's result, so that a process in the same kernel state need
     * not probe again (a probe cut short has none). */
    if (probed != NULL)
        fputs(probed, f);
    for (const char *l = algs; *l != '\0';) {
        size_t len = strcspn(l, "\n");
        char name[64], be[16], drv[128], hw[8], propq[128], tw[24], tc[24];
        char what[256];
        cal_costs r;
        int kind, from[2];

        snprintf(line, sizeof(line), "%.*s", (int)len, l);
        l += len + (l[len] == '\n');
        if (sscanf(line, "%63s %15s %127s hw=%7s", name, be, drv, hw) != 4
            || !dispatched(name, &kind))
            continue;
        snprintf(propq, sizeof(propq), "provider=hwaf,hwaf.backend=%s,hwaf.hw=%s", be, hw);
        if (!measure(lib, name, drv, propq, kind, strcmp(hw, "yes") == 0, budget, &r, from)) {
            fprintf(stderr, "hwaf-info: %s %s %s: could not be timed\n", name, be, drv);
            ERR_print_errors_fp(stderr);
            failed++;
            continue;
        }
        snprintf(what, sizeof(what), "%s %s %s", name, be, drv);
        cal_print_figures(f, what, &r, CAL_WALL);
        cal_print_figures(f, what, &r, CAL_CPU);
        fprintf(f, "%s %s %s %s %s\n", name, be, drv,
                threshold_text(from[CAL_WALL], tw, sizeof(tw)),
                threshold_text(from[CAL_CPU], tc, sizeof(tc)));
        if (f != stdout)
            printf("  %-12s %-9s %-32s throughput %-6s cpu %s\n", name, be, drv, tw, tc);
        n++;
        if (kind == KIND_CIPHER && strcmp(be, "afalg") == 0)
            zc_line(f, hwaf, zl, name, drv, propq, budget);
    }
    for (i = 0; i < 2; i++)
        OSSL_LIB_CTX_free(zl[i]);
    if (f != stdout) {
        int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;

        if (fclose(f) != 0 || bad || (failed == 0 && rename(tmp, outfile) != 0)) {
            fprintf(stderr, "hwaf-info: cannot write %s: %s\n", outfile, strerror(errno));
            unlink(tmp);
            return 2;
        }
        if (failed != 0)
            unlink(tmp);
        else if (n > 0)
            printf("%d implementations calibrated in %.1f s: %s\n", n, now_wall() - start,
                   outfile);
    }
    /* Nothing offered that dispatch serves (e.g. allow_software = no on a
     * kernel with CPU drivers only): no threshold to measure, and the
     * file, holding the probe's result, is what a load wants all the same. */
    if (failed == 0 && n == 0)
        printf("nothing to calibrate: hwaf offers no implementation here that size-aware "
               "dispatch serves (afalg: %s; devcrypto: %s); the probe's result written to %s\n",
               st_afalg != NULL ? st_afalg : "?", st_dc != NULL ? st_dc : "?",
               outfile != NULL && strcmp(outfile, "-") != 0 ? outfile : "standard output");
    return failed == 0 ? 0 : 1;
}
