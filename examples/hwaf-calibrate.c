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
 * dispatch costs.  Sizes go from 16 B to 256 KiB.  The largest point is
 * above the smallest request limit hwaf applies to asynchronous and
 * hardware drivers (HWAF_REQ_MAX_ASYNC, 64 KiB; virtio-crypto stops at
 * 128 KiB): the mode layer sends it as several requests within the
 * driver's limit, as it sends any larger operation, so that the decision
 * for an engine whose lead over software grows with the size does not
 * rest on the one point (64 KiB) where it is narrowest.  Each size is
 * timed in rounds that alternate the two paths; the best round counts.
 * CPU time is the calling thread's: work an engine does outside the CPU
 * (virtio-crypto: in the host) does not count, the system calls do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <hwaf/hwaf.h>
#include "hwaf-calibrate.h"

static const size_t sizes[] = { 16, 64, 256, 1024, 4096, 16384, 65536, 262144 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 3
#define MIN_OPS 2

enum { KERNEL = 0, SOFT = 1 };
typedef struct {
    double wall[NSIZES][2], cpu[NSIZES][2];  /* seconds per operation, best round */
} costs;

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

static unsigned char buf[262144 + 64], key[64], iv[16];

enum { KIND_CIPHER, KIND_DIGEST, KIND_GCM, KIND_HMAC };

/* What one operation is timed on: a cipher or GCM context, a digest, an
 * HMAC context. */
typedef struct {
    int kind;
    EVP_CIPHER_CTX *c;
    EVP_MD_CTX *d;
    const EVP_MD *md;
    EVP_MAC_CTX *m;
} target;

/*
 * One operation of n bytes: a cipher update; a whole digest; a whole GCM
 * message (the IV again: a new message of the same size each time); a
 * whole HMAC.  Digests, GCM messages and HMACs take their path per message.
 */
static int op(const target *t, int force, size_t n)
{
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

static int measure(OSSL_LIB_CTX *lib, const char *name, const char *drv, const char *propq,
                   int kind, double budget, costs *r)
{
    static const char *const digests[] = { "SHA1", "SHA2-224", "SHA2-256", "SHA2-384",
                                           "SHA2-512" };
    EVP_CIPHER *ciph = NULL;
    EVP_MD *md = NULL;
    EVP_MAC *mac = NULL;
    target t[2];
    size_t i;
    int round, k, path, ok = 0;

    memset(t, 0, sizeof(t));
    t[KERNEL].kind = t[SOFT].kind = kind;
    if (kind == KIND_DIGEST) {
        if ((md = EVP_MD_fetch(lib, name, propq)) == NULL
            || (t[KERNEL].d = t[SOFT].d = EVP_MD_CTX_new()) == NULL)
            goto done;
        t[KERNEL].md = t[SOFT].md = md;
    } else if (kind == KIND_HMAC) {
        /* one "HMAC" per backend and class: the digest whose driver this is */
        if ((mac = EVP_MAC_fetch(lib, name, propq)) == NULL)
            goto done;
        for (i = 0; i < sizeof(digests) / sizeof(digests[0]) && t[SOFT].m == NULL; i++)
            if ((t[KERNEL].m = hmac_ctx(mac, digests[i], drv)) != NULL)
                t[SOFT].m = hmac_ctx(mac, digests[i], drv);
        if (t[SOFT].m == NULL)
            goto done;
    } else {
        if ((ciph = EVP_CIPHER_fetch(lib, name, propq)) == NULL
            || (t[KERNEL].c = cipher_ctx(ciph, 1)) == NULL
            || (t[SOFT].c = cipher_ctx(ciph, 0)) == NULL)
            goto done;
    }
    for (i = 0; i < NSIZES; i++)
        for (path = 0; path < 2; path++)
            r->wall[i][path] = r->cpu[i][path] = 1e9;
    for (round = 0; round < ROUNDS; round++) {
        for (i = 0; i < NSIZES; i++) {
            for (k = 0; k < 2; k++) {
                double w, u;

                path = (k + round) % 2;   /* alternate which path goes first */
                if (!time_op(&t[path], path == KERNEL ? 1 : 0, sizes[i], budget, &w, &u)) {
                    /* A GCM message larger than the kernel takes in one
                     * request is computed in software whatever the
                     * threshold: that size does not count (shown as 0). */
                    if (kind != KIND_GCM || path != KERNEL || i == 0)
                        goto done;
                    ERR_clear_error();
                    w = u = 0;
                }
                if (w < r->wall[i][path])
                    r->wall[i][path] = w;
                if (u < r->cpu[i][path])
                    r->cpu[i][path] = u;
            }
        }
    }
    ok = 1;
 done:
    for (k = 0; k < 2; k++) {
        EVP_CIPHER_CTX_free(t[k].c);
        EVP_MAC_CTX_free(t[k].m);
    }
    EVP_MD_CTX_free(t[KERNEL].d);
    EVP_CIPHER_free(ciph);
    EVP_MD_free(md);
    EVP_MAC_free(mac);
    return ok;
}

/*
 * The threshold: the smallest size from which the kernel is clearly
 * cheaper (by MARGIN) at every measured size up to the largest; 0 when it
 * is from the smallest; "never" when it is not at the largest.  Where the
 * two are about even, software: it has no system calls to fail.
 */
#define MARGIN 0.9
static const char *crossover(const double v[NSIZES][2], char *out, size_t len)
{
    int i, from = -1;

    for (i = (int)NSIZES - 1; i >= 0 && v[i][KERNEL] < MARGIN * v[i][SOFT]; i--)
        from = i;
    if (from < 0)
        snprintf(out, len, "never");
    else
        snprintf(out, len, "%zu", from == 0 ? (size_t)0 : sizes[from]);
    return out;
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

/* The configured calibration file, from hwaf-config ("calibration = x"). */
static int configured_file(const char *config, char *out, size_t len)
{
    const char *p = strstr(config, "calibration = ");
    size_t n;

    if (p == NULL)
        return 0;
    p += strlen("calibration = ");
    n = strcspn(p, ";");
    if (n == 0 || n >= len)
        return 0;
    memcpy(out, p, n);
    out[n] = '\0';
    return 1;
}

int hwaf_calibrate(OSSL_LIB_CTX *lib, OSSL_PROVIDER *hwaf, const char *outfile,
                   double budget)
{
    const char *algs = NULL, *config = NULL;
    OSSL_PARAM p[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_ALGORITHMS, (char **)&algs, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_CONFIG, (char **)&config, 0),
        OSSL_PARAM_END
    };
    char path[4096], tmp[4200], line[512];
    FILE *f = stdout;
    struct utsname u;
    time_t t0 = time(NULL);
    double start = now_wall();
    int n = 0, failed = 0;
    size_t i;

    for (i = 0; i < sizeof(buf); i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 13 + 1);   /* XTS halves differ */
    for (i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)(0xf0 + i);
    if (!OSSL_PROVIDER_get_params(hwaf, p) || algs == NULL || config == NULL) {
        fprintf(stderr, "hwaf-info: cannot read hwaf's parameters\n");
        return 2;
    }
    if (outfile == NULL && configured_file(config, path, sizeof(path)))
        outfile = path;
    if (outfile != NULL && strcmp(outfile, "-") != 0) {
        snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", outfile, (long)getpid());
        if ((f = fopen(tmp, "w")) == NULL) {
            fprintf(stderr, "hwaf-info: cannot write %s: %s\n", tmp, strerror(errno));
            return 2;
        }
    }
    if (uname(&u) != 0)
        snprintf(u.release, sizeof(u.release), "?");
    fprintf(f, "hwaf-calibration 1\n"
            "# written by hwaf-info --calibrate, kernel %s, %s"
            "# <name> <backend> <driver> <throughput bytes|never> <cpu bytes|never>\n"
            "# measured per operation (us), kernel / software, wall and user+system CPU:\n"
            "# size:", u.release, ctime(&t0));
    for (i = 0; i < NSIZES; i++)
        fprintf(f, " %zu", sizes[i]);
    fprintf(f, "\n");
    for (const char *l = algs; *l != '\0';) {
        size_t len = strcspn(l, "\n");
        char name[64], be[16], drv[128], hw[8], propq[128], tw[24], tc[24];
        costs r;
        int kind;

        snprintf(line, sizeof(line), "%.*s", (int)len, l);
        l += len + (l[len] == '\n');
        if (sscanf(line, "%63s %15s %127s hw=%7s", name, be, drv, hw) != 4
            || !dispatched(name, &kind))
            continue;
        snprintf(propq, sizeof(propq), "provider=hwaf,hwaf.backend=%s,hwaf.hw=%s", be, hw);
        if (!measure(lib, name, drv, propq, kind, budget, &r)) {
            fprintf(stderr, "hwaf-info: %s %s %s: could not be timed\n", name, be, drv);
            ERR_print_errors_fp(stderr);
            failed++;
            continue;
        }
        fprintf(f, "# %s %s %s wall:", name, be, drv);
        for (i = 0; i < NSIZES; i++)
            fprintf(f, " %.1f/%.1f", r.wall[i][KERNEL] * 1e6, r.wall[i][SOFT] * 1e6);
        fprintf(f, "\n# %s %s %s cpu: ", name, be, drv);
        for (i = 0; i < NSIZES; i++)
            fprintf(f, " %.1f/%.1f", r.cpu[i][KERNEL] * 1e6, r.cpu[i][SOFT] * 1e6);
        fprintf(f, "\n%s %s %s %s %s\n", name, be, drv, crossover(r.wall, tw, sizeof(tw)),
                crossover(r.cpu, tc, sizeof(tc)));
        if (f != stdout)
            printf("  %-12s %-9s %-32s throughput %-6s cpu %s\n", name, be, drv, tw, tc);
        n++;
    }
    if (f != stdout) {
        if (fclose(f) != 0 || (failed == 0 && rename(tmp, outfile) != 0)) {
            fprintf(stderr, "hwaf-info: cannot write %s: %s\n", outfile, strerror(errno));
            unlink(tmp);
            return 2;
        }
        if (failed != 0)
            unlink(tmp);
        else
            printf("%d implementations calibrated in %.1f s: %s\n", n, now_wall() - start,
                   outfile);
    }
    return failed == 0 && n > 0 ? 0 : 1;
}
