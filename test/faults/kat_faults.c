/*
 * hwaf-kat-faults: a driver's known answer at its first use
 * (known_answers = first_use, the default), and a driver failing it.
 *
 *   hwaf-kat-faults MODULE_DIR BACKEND
 *
 * Known answers run once per process, so every case is a child forked
 * before hwaf was ever loaded in this process.  Each child loads hwaf from
 * an openssl.cnf naming only BACKEND (afalg or devcrypto) and offload_min
 * = 1024, and runs SHA2-256, AES-128-CBC, AES-128-GCM, HMAC-SHA2-256 and
 * AES-128-GCM in two updates of 2048 bytes (the second continues the
 * counter stream through hwaf's AES-CTR of the same backend and class,
 * whose known answer runs there) over 4096 bytes through hwaf, compared
 * with OpenSSL's default provider:
 *
 * - no fault: the first operation of each makes more system calls than the
 *   next one (its known answer ran there, not at load), the kernel did the
 *   work, hwaf-fallbacks-known-answer stays 0, and a child forked after it
 *   makes only the steady number of calls (no known answer again);
 * - the k-th call of the first operation's known answer fails with EINVAL
 *   (the kernel's answer as far as hwaf can tell), for every k: the bytes
 *   are right whatever happens; where the known answer failed, the
 *   operation went to software and was counted, a second context makes no
 *   system call at all and is counted, a context forced to the kernel
 *   (hwaf-offload = 1) fails with "kernel driver failed its known answer",
 *   the same holds in a child forked after it, and a new load in the
 *   process does not offer the driver; at least one k must fail it; for
 *   the first such k, once more with HWAF_STATS: the process's record and
 *   that of a child forked after the failure (counting from zero) carry
 *   the fallbacks as the parameter does (fallbacks_known_answer);
 * - the same calls failing with EMFILE (a passing shortage): the bytes are
 *   right, nothing is blamed on the driver (hwaf-fallbacks-known-answer 0)
 *   and the next operation runs the known answer again and uses the kernel;
 * - GCM in two updates: every call of the first operation fails in turn
 *   (the AES-CTR's known answer comes after the GCM session's own calls);
 *   where the AES-CTR driver failed its known answer (a new load no longer
 *   offers it, but still the GCM driver), the message's GCM requests stay
 *   in the kernel and its continuation goes to software, counted, and a
 *   context forced to the kernel still succeeds (the counter stream from
 *   the GCM driver), also in a child after fork; at least one call must
 *   fail it.
 *
 * Prints one line per defect ("defect: ...") and a summary; exit 0 when
 * there is none.  Linked with the fault shim (fault_shim.c), like hwaf-faults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <hwaf/hwaf.h>

#include "fault_shim.h"

#define LEN 4096

static const char *module_dir, *backend;
static char cnf_path[4096], stats_dir[4096];
static unsigned char msg[LEN], key[16], iv[16];
static int defects;

static void defect(const char *fmt, ...)
{
    va_list ap;

    printf("defect: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    defects++;
}

struct lib {
    OSSL_LIB_CTX *lib;
    OSSL_PROVIDER *hwaf;
};

static int lib_open(struct lib *l)
{
    l->lib = OSSL_LIB_CTX_new();
    l->hwaf = NULL;
    if (l->lib == NULL || !OSSL_LIB_CTX_load_config(l->lib, cnf_path))
        return 0;
    l->hwaf = OSSL_PROVIDER_load(l->lib, HWAF_PROVIDER_NAME);
    return l->hwaf != NULL;
}

static void lib_close(struct lib *l)
{
    OSSL_PROVIDER_unload(l->hwaf);
    OSSL_LIB_CTX_free(l->lib);
}

static uint64_t counter(struct lib *l, const char *name)
{
    uint64_t v = 0;
    OSSL_PARAM p[] = { OSSL_PARAM_uint64(name, &v), OSSL_PARAM_END };

    if (!OSSL_PROVIDER_get_params(l->hwaf, p))
        defect("%s: cannot read %s", backend, name);
    return v;
}

static uint64_t kernel_ops(struct lib *l)
{
    return counter(l, strcmp(backend, "devcrypto") == 0 ? HWAF_PARAM_DEVCRYPTO_OPS
                                                        : HWAF_PARAM_AFALG_OPS);
}

/* The algorithms: 0 SHA2-256, 1 AES-128-CBC, 2 AES-128-GCM, 3 HMAC-SHA2-256,
 * 4 AES-128-GCM in two updates. */
#define NALGS 5
#define GCM2 4

/* One operation over msg through provider query q; force: hwaf-offload
 * (-1: not set).  1 and out[] filled, or 0. */
static int run(struct lib *l, int alg, const char *q, int force, unsigned char *out,
               size_t *outl)
{
    int off = force, ok = 0;
    OSSL_PARAM p[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &off), OSSL_PARAM_END };

    if (alg == 0) {
        EVP_MD *md = EVP_MD_fetch(l->lib, "SHA2-256", q);
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        unsigned int ml = 0;

        ok = md != NULL && c != NULL && EVP_DigestInit_ex2(c, md, force >= 0 ? p : NULL)
             && EVP_DigestUpdate(c, msg, LEN) && EVP_DigestFinal_ex(c, out, &ml);
        *outl = ml;
        EVP_MD_CTX_free(c);
        EVP_MD_free(md);
    } else if (alg == 1 || alg == 2 || alg == GCM2) {
        EVP_CIPHER *ci = EVP_CIPHER_fetch(l->lib, alg == 1 ? "AES-128-CBC" : "AES-128-GCM", q);
        EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
        int l1 = 0, l2 = 0, l3 = 0, half = alg == GCM2 ? LEN / 2 : LEN;

        ok = ci != NULL && c != NULL
             && EVP_EncryptInit_ex2(c, ci, key, iv, force >= 0 ? p : NULL)
             && EVP_EncryptUpdate(c, out, &l1, msg, half)
             && (half == LEN || EVP_EncryptUpdate(c, out + l1, &l3, msg + half, LEN - half))
             && EVP_EncryptFinal_ex(c, out + l1 + l3, &l2);
        *outl = (size_t)(l1 + l2 + l3);
        if (ok && alg != 1) {
            OSSL_PARAM t[] = { OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                                       out + *outl, 16), OSSL_PARAM_END };

            ok = EVP_CIPHER_CTX_get_params(c, t);
            *outl += 16;
        }
        EVP_CIPHER_CTX_free(c);
        EVP_CIPHER_free(ci);
    } else {
        EVP_MAC *mac = EVP_MAC_fetch(l->lib, "HMAC", q);
        EVP_MAC_CTX *c = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
        OSSL_PARAM mp[] = { OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA2-256", 0),
                            OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &off), OSSL_PARAM_END };

        if (force < 0)
            mp[1] = OSSL_PARAM_construct_end();
        ok = c != NULL && EVP_MAC_init(c, key, sizeof(key), mp)
             && EVP_MAC_update(c, msg, LEN) && EVP_MAC_final(c, out, outl, 64);
        EVP_MAC_CTX_free(c);
        EVP_MAC_free(mac);
    }
    return ok;
}

static char hwaf_q[128];

/* One operation through hwaf (force: hwaf-offload, -1 not set), checked
 * against the default provider: 1 right; 0 failed (a defect unless
 * may_fail; errors left queued); wrong bytes are always a defect. */
static int run_checked(struct lib *l, int alg, int force, const char *what, int may_fail)
{
    unsigned char a[LEN + 64], b[LEN + 64];
    size_t al = 0, bl = 0;
    int ok = run(l, alg, hwaf_q, force, a, &al);

    if (!run(l, alg, "provider=default", -1, b, &bl)) {
        defect("%s %s: the default provider failed", backend, what);
        return 0;
    }
    if (!ok) {
        if (!may_fail) {
            defect("%s %s: failed through hwaf", backend, what);
            ERR_print_errors_fp(stdout);
        }
        return 0;
    }
    if (al != bl || memcmp(a, b, al) != 0) {
        defect("%s %s: wrong bytes", backend, what);
        return 0;
    }
    return 1;
}

/* The driver serving name through the backend in l, "" when none. */
static void driver_of(struct lib *l, const char *name, char *drv, size_t len)
{
    char *t = NULL, pre[64];
    OSSL_PARAM p[] = { OSSL_PARAM_utf8_ptr(HWAF_PARAM_ALGORITHMS, &t, 0), OSSL_PARAM_END };
    const char *s;

    drv[0] = '\0';
    snprintf(pre, sizeof(pre), "%s %s ", name, backend);
    if (!OSSL_PROVIDER_get_params(l->hwaf, p) || t == NULL)
        return;
    for (s = t; s != NULL && *s != '\0'; s = strchr(s, '\n'), s = s != NULL ? s + 1 : NULL)
        if (strncmp(s, pre, strlen(pre)) == 0
            && (strcmp(name, "HMAC") != 0
                || memmem(s, strcspn(s, "\n"), "sha256", 6) != NULL)) {
            s += strlen(pre);
            snprintf(drv, len, "%.*s", (int)strcspn(s, " \n"), s);
            return;
        }
}

/* hwaf's system calls of one checked operation. */
static unsigned counted_run(struct lib *l, int alg, const char *what)
{
    unsigned n;

    fault_arm(0, FAULT_COUNT, 0);
    run_checked(l, alg, -1, what, 0);
    n = fault_calls();
    fault_disarm();
    return n;
}

static const char *alg_name(int alg)
{
    static const char *const n[NALGS] = { "SHA2-256", "AES-128-CBC", "AES-128-GCM", "HMAC",
                                          "AES-128-GCM in two updates" };

    return n[alg];
}

/* The name of alg's implementation in hwaf-algorithms. */
static const char *impl_name(int alg)
{
    return alg == GCM2 ? "AES-128-GCM" : alg_name(alg);
}

static uint64_t cipher_ops(struct lib *l)
{
    return counter(l, HWAF_PARAM_CIPHER_OPS);
}

/* The reference: no fault.  Writes the first and steady call counts. */
static int reference(int alg, unsigned *first, unsigned *steady)
{
    struct lib l;
    uint64_t ops, cops;
    pid_t pid;
    int st = 0;

    if (!lib_open(&l)) {
        defect("%s: hwaf does not load", backend);
        return 0;
    }
    ops = kernel_ops(&l);
    *first = counted_run(&l, alg, "first operation");
    for (unsigned i = 1; i <= *first && fault_call_name(i) != NULL; i++)
        printf("%s%s", i > 1 ? " " : "first operation's calls: ", fault_call_name(i));
    printf("\n");
    cops = cipher_ops(&l);
    *steady = counted_run(&l, alg, "second operation");
    /* the second update, and the final turning the kept ciphertext back
     * into the plaintext for the tag */
    if (alg == GCM2 && cipher_ops(&l) != cops + 2)
        defect("%s %s: the continuation made %llu kernel cipher requests, not 2", backend,
               alg_name(alg), (unsigned long long)(cipher_ops(&l) - cops));
    if (kernel_ops(&l) <= ops)
        defect("%s %s: no work reached the kernel", backend, alg_name(alg));
    if (*first <= *steady)
        defect("%s %s: the first operation made %u calls, the next %u: no known answer "
               "at first use", backend, alg_name(alg), *first, *steady);
    if (counter(&l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER) != 0)
        defect("%s %s: a passing driver counted as failed", backend, alg_name(alg));
    fflush(NULL);
    if ((pid = fork()) == 0) {
        unsigned n;

        defects = 0;   /* the child's own */
        n = counted_run(&l, alg, "operation in a child after fork");

        /* the child checks its sandbox state again (a few calls), but
         * does not repeat the known answer */
        if (n >= *first)
            defect("%s %s: a child after fork made %u calls, the first operation %u "
                   "and the next %u: the known answer ran again", backend,
                   alg_name(alg), n, *first, *steady);
        _exit(defects ? 1 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        defect("%s %s: the child after fork failed (status %#x)", backend, alg_name(alg),
               st);
    lib_close(&l);
    return 1;
}

/* After the driver failed its known answer (in this process or its parent). */
static void check_failed(struct lib *l, int alg, const char *where)
{
    unsigned char out[LEN + 64];
    size_t outl;
    uint64_t fb = counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER);
    unsigned n = counted_run(l, alg, "operation after a failed known answer");
    unsigned long e;
    int seen = 0;

    if (n != 0)
        defect("%s %s %s: %u system calls for a driver that failed its known answer",
               backend, alg_name(alg), where, n);
    if (counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER) != fb + 1)
        defect("%s %s %s: the software fallback was not counted", backend,
               alg_name(alg), where);
    ERR_clear_error();
    if (run(l, alg, hwaf_q, 1, out, &outl))
        defect("%s %s %s: a context forced to the kernel succeeded on a driver that "
               "failed its known answer", backend, alg_name(alg), where);
    while ((e = ERR_get_error()) != 0) {
        const char *r = ERR_reason_error_string(e);

        seen |= r != NULL && strcmp(r, "kernel driver failed its known answer") == 0;
    }
    if (!seen)
        defect("%s %s %s: the forced context's error does not say the driver failed its "
               "known answer", backend, alg_name(alg), where);
}

/* GCM in two updates, after a failure counted as a failed known answer:
 * was it the AES-CTR driver's (a new load offers the GCM driver gcm but no
 * longer the AES-CTR driver ctr)? */
static int ctr_failed(const char *gcm, const char *ctr)
{
    struct lib l2;
    char g2[256], c2[256];
    int r = 0;

    if (!lib_open(&l2)) {
        defect("%s: a second load failed", backend);
        lib_close(&l2);
        return 0;
    }
    driver_of(&l2, "AES-128-GCM", g2, sizeof(g2));
    driver_of(&l2, "AES-128-CTR", c2, sizeof(c2));
    r = gcm[0] != '\0' && strcmp(gcm, g2) == 0 && ctr[0] != '\0' && strcmp(ctr, c2) != 0;
    lib_close(&l2);
    return r;
}

/* After the AES-CTR driver failed its known answer (in this process or its
 * parent): a GCM message in two updates keeps its GCM requests in the
 * kernel, its continuation in software (counted), no kernel cipher
 * request; forced to the kernel, it succeeds, nothing counted. */
static void check_ctr_failed(struct lib *l, const char *where)
{
    char forced[160];
    uint64_t fb = counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER), ops = kernel_ops(l);
    uint64_t cops = cipher_ops(l);

    run_checked(l, GCM2, -1, where, 0);
    if (kernel_ops(l) <= ops)
        defect("%s GCM in two updates %s: no GCM request reached the kernel after the AES-CTR "
               "driver failed its known answer", backend, where);
    if (cipher_ops(l) != cops)
        defect("%s GCM in two updates %s: a kernel cipher request after the AES-CTR driver "
               "failed its known answer", backend, where);
    if (counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER) != fb + 1)
        defect("%s GCM in two updates %s: the continuation in software was not counted",
               backend, where);
    fb = counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER);
    ERR_clear_error();
    snprintf(forced, sizeof(forced), "GCM in two updates %s, forced to the kernel", where);
    run_checked(l, GCM2, 1, forced, 0);
    if (cipher_ops(l) != cops)
        defect("%s GCM in two updates %s, forced to the kernel: a kernel cipher request",
               backend, where);
    if (counter(l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER) != fb)
        defect("%s GCM in two updates %s, forced to the kernel: a fallback counted", backend,
               where);
}

/* The k-th call of the first operation fails with err.  Returns 1 when the
 * driver failed its known answer, 3 when (GCM in two updates) the AES-CTR
 * driver did, 0 when none, -1 on a defect. */
static int fault_case(int alg, unsigned k, int err, unsigned steady)
{
    struct lib l, l2;
    uint64_t fb, ops;
    unsigned n;
    int failed, ok;
    pid_t pid;
    int st = 0;
    char what[96], drv[256], ctr[256];

    if (!lib_open(&l)) {
        defect("%s: hwaf does not load", backend);
        return -1;
    }
    snprintf(what, sizeof(what), "%s with call %u failing (%s)", alg_name(alg), k,
             strerror(err));
    driver_of(&l, impl_name(alg), drv, sizeof(drv));
    driver_of(&l, "AES-128-CTR", ctr, sizeof(ctr));
    fault_arm(k, FAULT_ERRNO, err);
    /* A fault in the session's own open (after the known answer passed)
     * may fail the operation (the Faults suite covers those); a failed
     * known answer must not. */
    ok = run_checked(&l, alg, -1, what, 1);
    fault_disarm();
    ERR_clear_error();
    fb = counter(&l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER);
    failed = fb > 0;
    if (failed && !ok)
        defect("%s %s: the driver failed its known answer, and software did not serve "
               "the operation", backend, what);
    if (err == EMFILE) {
        /* a passing shortage: nothing decided, the kernel next time */
        if (failed)
            defect("%s %s: a shortage blamed on the driver", backend, what);
        ops = kernel_ops(&l);
        n = counted_run(&l, alg, "operation after the shortage");
        if (kernel_ops(&l) <= ops)
            defect("%s %s: the next operation did not reach the kernel", backend, what);
        (void)n;
    } else if (failed && alg == GCM2 && ctr_failed(drv, ctr)) {
        check_ctr_failed(&l, what);
        fflush(NULL);
        if ((pid = fork()) == 0) {
            defects = 0;
            check_ctr_failed(&l, "in a child after fork");
            _exit(defects ? 1 : 0);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            defect("%s %s: the child after fork failed (status %#x)", backend, what, st);
        lib_close(&l);
        return defects ? -1 : 3;
    } else if (failed) {
        check_failed(&l, alg, what);
        fflush(NULL);
        if ((pid = fork()) == 0) {
            defects = 0;
            check_failed(&l, alg, "in a child after fork");
            _exit(defects ? 1 : 0);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            defect("%s %s: the child after fork failed (status %#x)", backend, what, st);
        /* a later load in the process does not offer the driver (another
         * one of the algorithm, or none) */
        if (lib_open(&l2)) {
            char drv2[256];

            driver_of(&l2, impl_name(alg), drv2, sizeof(drv2));
            if (drv[0] == '\0' || strcmp(drv, drv2) == 0)
                defect("%s %s: a new load offers the failed driver '%s'", backend, what, drv);
        } else {
            defect("%s %s: a second load failed", backend, what);
        }
        lib_close(&l2);
    }
    (void)steady;
    lib_close(&l);
    return defects ? -1 : failed;
}

/* Field key of process pid's HWAF_STATS record (the file removed), or -1
 * when it has none. */
static long long record_field(pid_t pid, const char *key)
{
    char path[4200], line[1024], pat[64];
    const char *v;
    long long r = -1;
    FILE *f;

    snprintf(path, sizeof(path), "%s/hwaf-stats.%s.%d", stats_dir,
             program_invocation_short_name, (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return -1;
    snprintf(pat, sizeof(pat), " %s=", key);
    if (fgets(line, sizeof(line), f) != NULL && (v = strstr(line, pat)) != NULL)
        r = strtoll(v + strlen(pat), NULL, 10);
    fclose(f);
    unlink(path);
    return r;
}

/* In a child: the k-th call failing with EINVAL failed the known answer
 * (fault_case said so); with HWAF_STATS, the records say what the
 * parameter says, in the process and in a child forked after it. */
static void stats_case(int alg, unsigned k)
{
    unsigned char out[LEN + 64];
    size_t outl;
    long long rec;
    uint64_t fb = 0;
    struct lib l;
    pid_t pid, gc;
    int st = 0;

    fflush(NULL);
    if ((pid = fork()) == 0) {
        defects = 0;
        alarm(60);
        setenv("HWAF_STATS", stats_dir, 1);   /* hwaf not loaded in this process yet */
        if (!lib_open(&l)) {
            defect("%s: hwaf does not load", backend);
            _exit(1);
        }
        fault_arm(k, FAULT_ERRNO, EINVAL);
        run(&l, alg, hwaf_q, -1, out, &outl);
        fault_disarm();
        run(&l, alg, hwaf_q, -1, out, &outl);
        fb = counter(&l, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER);
        if (fb < 2)
            defect("%s %s call %u: hwaf-fallbacks-known-answer %llu after two operations "
                   "on a driver that failed its known answer", backend, alg_name(alg), k,
                   (unsigned long long)fb);
        fflush(NULL);
        if ((gc = fork()) == 0) {
            run(&l, alg, hwaf_q, -1, out, &outl);
            lib_close(&l);   /* writes the child's record */
            _exit(0);
        }
        if (gc < 0 || waitpid(gc, &st, 0) != gc)
            defect("%s %s: the child after fork did not end", backend, alg_name(alg));
        else if ((rec = record_field(gc, "fallbacks_known_answer")) != 1)
            defect("%s %s: a child's HWAF_STATS record has fallbacks_known_answer=%lld after "
                   "its one operation, not 1", backend, alg_name(alg), rec);
        lib_close(&l);   /* writes the record */
        if ((rec = record_field(getpid(), "fallbacks_known_answer")) != (long long)fb)
            defect("%s %s: the HWAF_STATS record has fallbacks_known_answer=%lld, the "
                   "parameter %llu", backend, alg_name(alg), rec, (unsigned long long)fb);
        _exit(defects ? 1 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        defect("%s %s: the HWAF_STATS case failed (status %#x)", backend, alg_name(alg), st);
}

/* Run fn in a child under an alarm; its exit status: 0 ok, 1 defect,
 * 2 known answer failed without defect, 3 the AES-CTR's (GCM in two
 * updates). */
static int child_case(int alg, unsigned k, int err, unsigned steady)
{
    pid_t pid;
    int st = 0;

    fflush(NULL);
    if ((pid = fork()) == 0) {
        int r;

        defects = 0;
        alarm(60);
        r = fault_case(alg, k, err, steady);
        _exit(r < 0 ? 1 : r == 1 ? 2 : r == 3 ? 3 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) {
        defect("%s %s call %u %s: the case did not end (status %d)", backend,
               alg_name(alg), k, strerror(err), st);
        return -1;
    }
    if (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 2 && WEXITSTATUS(st) != 3)
        defects++;   /* the child printed what */
    return WEXITSTATUS(st);
}

static void reference_child(int alg, unsigned *first, unsigned *steady)
{
    unsigned v[2] = { 0, 0 };
    int fd[2], st = 0;
    pid_t pid;

    if (pipe(fd) != 0)
        return;
    fflush(NULL);
    if ((pid = fork()) == 0) {
        defects = 0;
        close(fd[0]);
        alarm(60);
        reference(alg, &v[0], &v[1]);
        if (write(fd[1], v, sizeof(v)) != (ssize_t)sizeof(v))
            _exit(3);
        _exit(defects ? 1 : 0);
    }
    close(fd[1]);
    if (read(fd[0], v, sizeof(v)) != (ssize_t)sizeof(v))
        defect("%s %s: the reference child wrote nothing", backend, alg_name(alg));
    close(fd[0]);
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        defect("%s %s: the reference child failed", backend, alg_name(alg));
    *first = v[0];
    *steady = v[1];
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("HWAF_TEST_TMPDIR");
    unsigned first = 0, steady = 0, k, cases = 0;
    int alg, fails, ctr_fails, r;
    unsigned last;
    size_t i;
    FILE *f;

    if (argc != 3) {
        fprintf(stderr, "usage: %s MODULE_DIR BACKEND\n", argv[0]);
        return 2;
    }
    module_dir = argv[1];
    backend = argv[2];
    for (i = 0; i < LEN; i++)
        msg[i] = (unsigned char)(i * 7 + 3);
    for (i = 0; i < sizeof(key); i++) {
        key[i] = (unsigned char)(i * 13 + 1);
        iv[i] = (unsigned char)(0xf0 + i);
    }
    snprintf(hwaf_q, sizeof(hwaf_q), "provider=hwaf,hwaf.backend=%s", backend);
    snprintf(stats_dir, sizeof(stats_dir), "%s", tmp != NULL ? tmp : "/tmp");
    snprintf(cnf_path, sizeof(cnf_path), "%s/hwaf-kat-faults.%ld.cnf",
             tmp != NULL ? tmp : "/tmp", (long)getpid());
    if ((f = fopen(cnf_path, "w")) == NULL) {
        perror(cnf_path);
        return 2;
    }
    fprintf(f, "openssl_conf = c\n[c]\nproviders = p\n[p]\ndefault = d\nhwaf = h\n"
               "[d]\nactivate = 1\n[h]\nmodule = %s/hwaf.so\nbackends = %s\n"
               "offload_min = 1024\nactivate = 1\n", module_dir, backend);
    fclose(f);
    for (alg = 0; alg < NALGS; alg++) {
        reference_child(alg, &first, &steady);
        printf("%s %s: %u calls at the first operation, %u after\n", backend,
               alg_name(alg), first, steady);
        fails = ctr_fails = 0;
        /* The known answer's calls come first, before the session's own;
         * GCM in two updates: the AES-CTR's come after the GCM session's,
         * so every call of the first operation fails in turn. */
        last = alg == GCM2 ? first : first > steady ? first - steady : 0;
        for (k = 1; k <= last; k++) {
            r = child_case(alg, k, EINVAL, steady);
            if (r == 2 && fails++ == 0) {
                stats_case(alg, k);
                cases++;
            }
            ctr_fails += r == 3;
            r = child_case(alg, k, EMFILE, steady);
            cases += 2;
        }
        printf("%s %s: the known answer failed in %d of %u cases with EINVAL\n", backend,
               alg_name(alg), fails, last);
        if (fails == 0)
            defect("%s %s: no injected fault made the known answer fail", backend,
                   alg_name(alg));
        if (alg == GCM2) {
            printf("%s %s: the AES-CTR's known answer failed in %d of %u cases with EINVAL\n",
                   backend, alg_name(alg), ctr_fails, last);
            if (ctr_fails == 0)
                defect("%s %s: no injected fault made the AES-CTR's known answer fail",
                       backend, alg_name(alg));
        }
    }
    unlink(cnf_path);
    printf("hwaf-kat-faults: %u cases, %d defects\n", cases, defects);
    return defects ? 1 : 0;
}
