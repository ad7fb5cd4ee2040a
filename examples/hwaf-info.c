/*
 * hwaf-info: what the hwaf provider offers on this machine, and proof that
 * it works.  Lists every implementation with its kernel driver and hardware
 * class, then runs a sample through each one and checks the result against
 * OpenSSL's default provider.  Exit status 0 only when hwaf offered at least
 * one algorithm and every check matched.
 *
 *   hwaf-info             (OPENSSL_MODULES must point at hwaf.so's folder
 *                          unless it is installed)
 *   hwaf-info --calibrate [--if-stale] [-o FILE] [--point-seconds S]
 *                         measure the offload thresholds of size-aware
 *                         dispatch and write the calibration file
 *                         (hwaf-calibrate.c); with --if-stale only when
 *                         the file's probe lines are not those of the
 *                         running kernel.  Exit 3: no kernel backend is
 *                         usable here, nothing written.
 *
 * OpenSSL's configuration file (OPENSSL_CONF or the default one) is read,
 * so a [hwaf_sect] there takes effect and its keys are shown as hwaf uses
 * them (a key hwaf does not know is not shown: see docs/config.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/conf.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <hwaf/hwaf.h>
#include "hwaf-calibrate.h"

static unsigned char sample[4096 + 13];
static unsigned char key[64], iv[16];
/* hwaf-offload of every hwaf context of a run of the checks: 1 forces
 * each operation to the kernel, HWAF_OFFLOAD_AUTO leaves it to the
 * configuration's dispatch. */
static int offload = HWAF_OFFLOAD_AUTO;

/* The work hwaf handed to one kernel backend so far (its counters'
 * parameter names), and to both together. */
static OSSL_PROVIDER *hwaf_prov;
static uint64_t work_ops, work_bytes; /* before the current check */
static void backend_work(const char *ops_name, const char *bytes_name,
                         uint64_t *ops, uint64_t *bytes)
{
    OSSL_PARAM q[] = {
        OSSL_PARAM_uint64(ops_name, ops),
        OSSL_PARAM_uint64(bytes_name, bytes),
        OSSL_PARAM_END
    };

    *ops = *bytes = 0;
    OSSL_PROVIDER_get_params(hwaf_prov, q);
}
static void kernel_work(uint64_t *ops, uint64_t *bytes)
{
    uint64_t dops, dbytes;

    backend_work(HWAF_PARAM_AFALG_OPS, HWAF_PARAM_AFALG_BYTES, ops, bytes);
    backend_work(HWAF_PARAM_DEVCRYPTO_OPS, HWAF_PARAM_DEVCRYPTO_BYTES, &dops, &dbytes);
    *ops += dops;
    *bytes += dbytes;
}

/*
 * One check's line: its verdict against the default provider and the work
 * the kernel did for it.  A check forced to the kernel (offload 1) that
 * handed the kernel nothing fails, whatever its bytes.
 */
static int report(const char *name, const char *driver, int ok)
{
    uint64_t ops, bytes;

    kernel_work(&ops, &bytes);
    ops -= work_ops;
    bytes -= work_bytes;
    if (offload == 1 && ops == 0) {
        printf("  %-12s %-32s FAILED: forced to the kernel, which was handed nothing\n",
               name, driver);
        return 0;
    }
    printf("  %-12s %-32s %s; kernel: %llu operations, %llu bytes\n", name, driver,
           ok ? "matches default provider" : "MISMATCH",
           (unsigned long long)ops, (unsigned long long)bytes);
    return ok;
}

/*
 * One message through cipher name: the output length, 0 on failure.  With
 * tag (AES-GCM): 13 bytes of AAD first (a TLS record header's worth), the
 * tag written after an encryption and checked by a decryption (a wrong one
 * fails).
 */
static int run_cipher(OSSL_LIB_CTX *lib, const char *name, const char *propq,
                      int enc, const unsigned char *in, int inl,
                      unsigned char *out, unsigned char tag[16],
                      char *driver, size_t drvlen)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(lib, name, propq);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = 0, l0 = 0, l1 = 0, l2 = 0;
    OSSL_PARAM op[2] = { OSSL_PARAM_END, OSSL_PARAM_END };

    /* hwaf's own contexts take the run's offload choice (forced or not);
     * the default provider's reference ones take nothing. */
    if (strcmp(propq, "provider=default") != 0)
        op[0] = OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &offload);
    if (c != NULL && ctx != NULL
        && EVP_CipherInit_ex2(ctx, c, key, iv, enc, op)
        && (tag == NULL || enc
            || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag) > 0)
        && (tag == NULL || EVP_CipherUpdate(ctx, NULL, &l0, sample, 13))
        && EVP_CipherUpdate(ctx, out, &l1, in, inl)
        && EVP_CipherFinal_ex(ctx, out + l1, &l2)
        && (tag == NULL || !enc
            || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) > 0))
        ok = l1 + l2;
    if (ok && driver != NULL) {
        OSSL_PARAM p[] = {
            OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, driver, drvlen),
            OSSL_PARAM_END
        };
        if (!EVP_CIPHER_CTX_get_params(ctx, p))
            snprintf(driver, drvlen, "?");
    }
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
    return ok;
}

static int check_cipher(OSSL_LIB_CTX *lib, const char *name, const char *propq)
{
    static unsigned char a[sizeof(sample) + 32], b[sizeof(sample) + 32],
        back[sizeof(sample) + 32];
    char driver[128] = "";
    int la, lb, lback, inl = sizeof(sample);

    if (strstr(name, "XTS") != NULL)
        inl = 4096; /* one data unit */
    la = run_cipher(lib, name, propq, 1, sample, inl, a, NULL, driver, sizeof(driver));
    lb = run_cipher(lib, name, "provider=default", 1, sample, inl, b, NULL, NULL, 0);
    if (la == 0)
        return -1;
    lback = run_cipher(lib, name, "provider=default", 0, a, la, back, NULL, NULL, 0);
    return report(name, driver, la == lb && memcmp(a, b, la) == 0 && lback == inl
                                && memcmp(back, sample, inl) == 0);
}

static int check_digest(OSSL_LIB_CTX *lib, const char *name, const char *propq)
{
    EVP_MD *h = EVP_MD_fetch(lib, name, propq), *d = EVP_MD_fetch(lib, name, "provider=default");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char a[64], b[64];
    unsigned int la = 0, lb = 0;
    char driver[128] = "?";
    OSSL_PARAM p[] = {
        OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, driver, sizeof(driver)),
        OSSL_PARAM_END
    };
    OSSL_PARAM op[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &offload), OSSL_PARAM_END };
    int ok = -1;

    if (h != NULL && d != NULL && ctx != NULL
        && EVP_DigestInit_ex2(ctx, h, op)
        && EVP_DigestUpdate(ctx, sample, sizeof(sample))
        && EVP_MD_CTX_get_params(ctx, p)
        && EVP_DigestFinal_ex(ctx, a, &la)
        && EVP_Digest(sample, sizeof(sample), b, &lb, d, NULL)) {
        ok = report(name, driver, la == lb && memcmp(a, b, la) == 0);
    }
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(h);
    EVP_MD_free(d);
    return ok;
}

/* hwaf's ciphertext and tag equal the default provider's, hwaf decrypts
 * the default provider's message, and refuses it with a changed tag. */
static int check_gcm(OSSL_LIB_CTX *lib, const char *name, const char *propq)
{
    static unsigned char a[sizeof(sample)], b[sizeof(sample)], back[sizeof(sample)];
    unsigned char ta[16], tb[16];
    char driver[128] = "";
    int la, lb, lback, refused, inl = sizeof(sample), ok;

    la = run_cipher(lib, name, propq, 1, sample, inl, a, ta, driver, sizeof(driver));
    if (la == 0)
        return -1;
    lb = run_cipher(lib, name, "provider=default", 1, sample, inl, b, tb, NULL, 0);
    lback = run_cipher(lib, name, propq, 0, b, lb, back, tb, NULL, 0);
    ok = la == lb && memcmp(a, b, la) == 0 && memcmp(ta, tb, 16) == 0
         && lback == inl && memcmp(back, sample, inl) == 0;
    tb[0] ^= 1;
    refused = run_cipher(lib, name, propq, 0, b, lb, back, tb, NULL, 0) == 0;
    ERR_clear_error();
    return report(name, driver, ok && refused);
}

/* name: "HMAC-<digest>". */
static int check_hmac(OSSL_LIB_CTX *lib, const char *name, const char *propq)
{
    const char *digest = name + strlen("HMAC-");
    EVP_MAC *h = EVP_MAC_fetch(lib, "HMAC", propq), *d = EVP_MAC_fetch(lib, "HMAC", "provider=default");
    EVP_MAC_CTX *ctx = h != NULL ? EVP_MAC_CTX_new(h) : NULL;
    unsigned char a[64], b[64];
    size_t la = 0, lb = 0;
    char driver[128] = "?";
    OSSL_PARAM mp[] = {
        OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &offload),
        OSSL_PARAM_END
    };
    OSSL_PARAM p[] = {
        OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, driver, sizeof(driver)),
        OSSL_PARAM_END
    };
    int ok = -1;

    if (ctx != NULL && d != NULL
        && EVP_MAC_init(ctx, key, 32, mp)
        && EVP_MAC_update(ctx, sample, sizeof(sample))
        && EVP_MAC_CTX_get_params(ctx, p)
        && EVP_MAC_final(ctx, a, &la, sizeof(a))
        && EVP_Q_mac(lib, "HMAC", "provider=default", digest, NULL, key, 32,
                     sample, sizeof(sample), b, sizeof(b), &lb) != NULL) {
        ok = report(name, driver, la == lb && memcmp(a, b, la) == 0);
    }
    ERR_clear_error();
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(h);
    EVP_MAC_free(d);
    return ok;
}

/* Every check, in the order they are shown. */
static const struct {
    const char *name;
    int (*fn)(OSSL_LIB_CTX *lib, const char *name, const char *propq);
} checks[] = {
    { "AES-128-CBC", check_cipher }, { "AES-192-CBC", check_cipher },
    { "AES-256-CBC", check_cipher }, { "AES-128-CTR", check_cipher },
    { "AES-192-CTR", check_cipher }, { "AES-256-CTR", check_cipher },
    { "AES-128-XTS", check_cipher }, { "AES-256-XTS", check_cipher },
    { "SHA1", check_digest }, { "SHA2-224", check_digest }, { "SHA2-256", check_digest },
    { "SHA2-384", check_digest }, { "SHA2-512", check_digest },
    { "AES-128-GCM", check_gcm }, { "AES-192-GCM", check_gcm }, { "AES-256-GCM", check_gcm },
    { "HMAC-SHA1", check_hmac }, { "HMAC-SHA2-224", check_hmac },
    { "HMAC-SHA2-256", check_hmac }, { "HMAC-SHA2-384", check_hmac },
    { "HMAC-SHA2-512", check_hmac },
};

/*
 * The "probe <backend> <key>" lines of text, sorted, into out (at most len
 * bytes, NUL-terminated): the kernel state a probe result belongs to.
 * Returns how many there are, -1 when they do not fit.
 */
static int probe_lines(const char *text, char *out, size_t len)
{
    char lines[8][128], *p = out;
    int n = 0, i, j;

    for (const char *l = text; *l != '\0';) {
        size_t k = strcspn(l, "\n");

        if (k > 6 && strncmp(l, "probe ", 6) == 0) {
            if (n == 8 || k >= sizeof(lines[0]))
                return -1;
            snprintf(lines[n++], sizeof(lines[0]), "%.*s", (int)k, l);
        }
        l += k + (l[k] == '\n');
    }
    for (i = 1; i < n; i++)                 /* a handful: insertion sort */
        for (j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char t[sizeof(lines[0])];

            memcpy(t, lines[j], sizeof(t));
            memcpy(lines[j], lines[j - 1], sizeof(t));
            memcpy(lines[j - 1], t, sizeof(t));
        }
    *p = '\0';
    for (i = 0; i < n; i++) {
        size_t k = strlen(lines[i]);

        if ((size_t)(p - out) + k + 2 > len)
            return -1;
        memcpy(p, lines[i], k);
        p += k;
        *p++ = '\n';
        *p = '\0';
    }
    return n;
}

/*
 * --if-stale: 1 when file holds the probe result of this process's kernel
 * state (its probe lines are exactly those hwaf computed here, probed or
 * taken from the file), 0 when it must be written (absent, unreadable, not
 * a calibration file, another kernel state).  Says which on stdout.
 */
static int calibration_current(const char *file, const char *probed)
{
    static char text[1 << 20];
    char have[1024] = "", want[1024] = "";
    FILE *f = fopen(file, "r");
    size_t n;

    if (f == NULL) {
        printf("%s: %s; calibrating\n", file, strerror(errno));
        return 0;
    }
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    if (strncmp(text, "hwaf-calibration 1\n", 19) != 0) {
        printf("%s: not a calibration file; calibrating\n", file);
        return 0;
    }
    if (probe_lines(text, have, sizeof(have)) <= 0
        || probe_lines(probed != NULL ? probed : "", want, sizeof(want)) <= 0
        || strcmp(have, want) != 0) {
        printf("%s: its probe lines are not this kernel's (file: %s; now: %s); calibrating\n",
               file, have[0] != '\0' ? strtok(have, "\n") : "none",
               want[0] != '\0' ? strtok(want, "\n") : "none");
        return 0;
    }
    printf("%s: holds the probe result of the running kernel (%s); not rewritten\n",
           file, strtok(have, "\n"));
    return 1;
}

static int fopen_ok(const char *path)
{
    FILE *f = fopen(path, "r");

    if (f == NULL)
        return 0;
    fclose(f);
    return 1;
}

int main(int argc, char **argv)
{
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    OSSL_PROVIDER *hwaf, *dflt;
    const char *afalg = NULL, *devcrypto = NULL, *algs = NULL, *config = NULL,
        *thresholds = NULL, *outfile = NULL, *reqmax = NULL, *probed = NULL;
    char *cnf, *end;
    double budget = 0.005;
    int calibrate = 0, if_stale = 0, a;
    char cfgfile[4096];
    OSSL_PARAM p[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_AFALG_STATUS, (char **)&afalg, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_DEVCRYPTO_STATUS, (char **)&devcrypto, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_ALGORITHMS, (char **)&algs, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_CONFIG, (char **)&config, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_THRESHOLDS, (char **)&thresholds, 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_REQUEST_MAX, (char **)&reqmax, 0),
        OSSL_PARAM_END
    };
    /* Asked for only when calibrating: hwaf builds it at the first request,
     * after running every known answer not run yet. */
    OSSL_PARAM probe_param[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_PROBE, (char **)&probed, 0),
        OSSL_PARAM_END
    };
    int checked = 0, forced_checked = 0, failed = 0, hw, run;
    size_t i;

    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--calibrate") == 0) {
            calibrate = 1;
        } else if (strcmp(argv[a], "--if-stale") == 0) {
            if_stale = 1;
        } else if (strcmp(argv[a], "-o") == 0 && a + 1 < argc) {
            outfile = argv[++a];
        } else if (strcmp(argv[a], "--point-seconds") == 0 && a + 1 < argc) {
            budget = strtod(argv[++a], &end);
            if (*end != '\0' || !(budget > 0 && budget <= 10)) {
                fprintf(stderr, "hwaf-info: --point-seconds %s: expected 0 < S <= 10\n", argv[a]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: hwaf-info [--calibrate [--if-stale] [-o FILE] "
                    "[--point-seconds S]]\n");
            return 2;
        }
    }
    if (!calibrate && (outfile != NULL || if_stale)) {
        fprintf(stderr, "hwaf-info: %s goes with --calibrate\n", if_stale ? "--if-stale" : "-o");
        return 2;
    }
    for (i = 0; i < sizeof(sample); i++)
        sample[i] = (unsigned char)(i * 131 + 7);
    for (i = 0; i < sizeof(key); i++)
        key[i] = (unsigned char)(i * 13 + 1);
    for (i = 0; i < sizeof(iv); i++)
        iv[i] = (unsigned char)(0xf0 + i);

    /* A new library context reads no configuration by itself. */
    cnf = CONF_get1_default_config_file();
    if (cnf != NULL && fopen_ok(cnf) && !OSSL_LIB_CTX_load_config(lib, cnf)) {
        fprintf(stderr, "hwaf-info: cannot load %s\n", cnf);
        ERR_print_errors_fp(stderr);
        if (!calibrate || outfile == NULL) {
            OPENSSL_free(cnf);
            return 2;
        }
        /* Writing a named file: a configuration that names a broken
         * calibration file must not keep it from being written anew. */
        fprintf(stderr, "hwaf-info: calibrating with hwaf's defaults instead\n");
        OSSL_LIB_CTX_free(lib);
        lib = OSSL_LIB_CTX_new();
    }
    OPENSSL_free(cnf);
    hwaf = OSSL_PROVIDER_load(lib, HWAF_PROVIDER_NAME);
    dflt = OSSL_PROVIDER_load(lib, "default");
    if (hwaf == NULL || dflt == NULL) {
        fprintf(stderr, "hwaf-info: cannot load the %s provider\n",
                hwaf == NULL ? "hwaf" : "default");
        ERR_print_errors_fp(stderr);
        return 2;
    }
    if (!OSSL_PROVIDER_get_params(hwaf, p)
        || (calibrate && !OSSL_PROVIDER_get_params(hwaf, probe_param))) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    if (calibrate) {
        const char *target = outfile != NULL ? outfile
                             : hwaf_calibration_file(config, cfgfile, sizeof(cfgfile));
        int r;

        if (probed == NULL || probed[0] == '\0') {
            /* No backend is usable (a container without AF_ALG, a chroot
             * without /proc): nothing to measure, no probe to keep. */
            printf("no kernel backend is usable here (afalg: %s; devcrypto: %s): "
                   "nothing calibrated, nothing written\n", afalg, devcrypto);
            OSSL_PROVIDER_unload(hwaf);
            OSSL_PROVIDER_unload(dflt);
            OSSL_LIB_CTX_free(lib);
            return 3;
        }
        if (if_stale) {
            if (target == NULL || strcmp(target, "-") == 0) {
                fprintf(stderr, "hwaf-info: --if-stale needs a file (-o FILE or the "
                        "configuration's calibration key)\n");
                return 2;
            }
            if (calibration_current(target, probed)) {
                OSSL_PROVIDER_unload(hwaf);
                OSSL_PROVIDER_unload(dflt);
                OSSL_LIB_CTX_free(lib);
                return 0;
            }
        }

        printf("calibrating (policy throughput: wall clock; policy cpu: user+system CPU)\n");
        r = hwaf_calibrate(lib, hwaf, outfile, budget);
        OSSL_PROVIDER_unload(hwaf);
        OSSL_PROVIDER_unload(dflt);
        OSSL_LIB_CTX_free(lib);
        return r;
    }
    printf("hwaf backends\n  afalg:     %s\n  devcrypto: %s\n", afalg, devcrypto);
    printf("configuration in effect\n");
    for (const char *c = config; *c != '\0';) {
        size_t n = strcspn(c, ";");

        printf("  %.*s\n", (int)n, c);
        c += n;
        while (*c == ';' || *c == ' ')
            c++;
    }
    printf("implementations offered (algorithm backend driver class)\n");
    if (algs[0] == '\0')
        printf("  none\n");
    for (const char *l = algs; *l != '\0';) {
        size_t n = strcspn(l, "\n");

        printf("  %.*s\n", (int)n, l);
        l += n + (l[n] == '\n');
    }
    printf("largest kernel request per implementation (request_max)\n");
    for (const char *l = reqmax != NULL ? reqmax : ""; *l != '\0';) {
        size_t n = strcspn(l, "\n");

        printf("  %.*s\n", (int)n, l);
        l += n + (l[n] == '\n');
    }

    printf("offload thresholds of size-aware dispatch\n");
    for (const char *l = thresholds; *l != '\0';) {
        size_t n = strcspn(l, "\n");

        printf("  %.*s\n", (int)n, l);
        l += n + (l[n] == '\n');
    }

    /* Each implementation twice: forced to the kernel (it must have been
     * handed the work), then as the configuration's dispatch decides. */
    hwaf_prov = hwaf;
    for (run = 0; run < 2; run++) {
        offload = run == 0 ? 1 : HWAF_OFFLOAD_AUTO;
        for (hw = 1; hw >= 0; hw--) {
            const char *propq = hw ? "provider=hwaf,hwaf.hw=yes" : "provider=hwaf,hwaf.hw=no";
            int before = checked;

            printf("checks through %s, %s\n", propq,
                   run == 0 ? "forced to the kernel (hwaf-offload 1)"
                            : "by the configuration's dispatch");
            for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
                int r;

                kernel_work(&work_ops, &work_bytes);
                r = checks[i].fn(lib, checks[i].name, propq);
                checked += r >= 0;
                failed += r == 0;
                forced_checked += run == 0 && r >= 0;
            }
            if (checked == before)
                printf("  none offered\n");
        }
    }
    {
        uint64_t ops, bytes;

        backend_work(HWAF_PARAM_AFALG_OPS, HWAF_PARAM_AFALG_BYTES, &ops, &bytes);
        printf("work handed to AF_ALG: %llu operations, %llu bytes\n",
               (unsigned long long)ops, (unsigned long long)bytes);
        backend_work(HWAF_PARAM_DEVCRYPTO_OPS, HWAF_PARAM_DEVCRYPTO_BYTES, &ops, &bytes);
        printf("work handed to /dev/crypto: %llu operations, %llu bytes\n",
               (unsigned long long)ops, (unsigned long long)bytes);
    }
    printf("%d checked (%d forced to the kernel), %d failed\n", checked, forced_checked, failed);
    OSSL_PROVIDER_unload(hwaf);
    OSSL_PROVIDER_unload(dflt);
    OSSL_LIB_CTX_free(lib);
    return checked > 0 && failed == 0 ? 0 : 1;
}
