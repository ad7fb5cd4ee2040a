/*
 * ab-turns ALG SIZE ROUNDS BATCH DIR...: the default provider against one
 * or more builds of hwaf, each hwaf.so (from DIR) loaded into a library
 * context of its own, all in one process, taking turns: each round runs
 * BATCH operations of each way (the order reversed every other round), so
 * that whatever the host does falls on all of them alike.  A cipher
 * operation is one EVP_EncryptUpdate of SIZE bytes on a context initialised
 * once (padding off); a digest operation is EVP_DigestInit_ex2 + Update +
 * Final_ex, as hwaf-bench does them.  OpenVPN's per-packet calls, each
 * way's library context with default_properties ?provider=hwaf as
 * openssl.cnf would set it:
 *   ovpn-cbc:CIPHER  EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv, -1),
 *                    Update of SIZE bytes, Final_ex (padding on);
 *   ovpn-hmac:MD     EVP_MAC_init with the digest and key parameters,
 *                    update of SIZE bytes, final (HMAC);
 *   rand             RAND_bytes_ex of SIZE bytes (CTR-DRBG).
 * Printed per way: the median and least
 * time per operation, and the median (first and third quartile) of the
 * per-round ratio default / this way (higher: faster).  For A/B of two
 * builds of hwaf in one guest boot, where separate runs move 10-20 %.
 * Built by hand (docs/benchmark.md):
 *
 *   cc -O2 -o ab-turns bench/ab-turns.c -lcrypto
 *   ./ab-turns SHA2-256 16 61 1000 /tmp/a /tmp/b
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/rand.h>

#define MAX_WAYS 8

static unsigned char *in, *out;
static size_t len;
static EVP_CIPHER_CTX *cctx[MAX_WAYS];
static EVP_MD_CTX *mctx[MAX_WAYS];
static EVP_MD *md[MAX_WAYS];
static EVP_MAC_CTX *mac[MAX_WAYS];
static OSSL_LIB_CTX *libctx[MAX_WAYS];
static enum { OP_PLAIN, OP_OVPN_CBC, OP_OVPN_HMAC, OP_RAND } op;
static const unsigned char key[64], iv[16];
static OSSL_PARAM mac_params[3];

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int one_op(int w)
{
    unsigned char res[EVP_MAX_MD_SIZE];
    unsigned int ml;
    int outl;

    size_t sl;

    switch (op) {
    case OP_OVPN_CBC:
        return EVP_CipherInit_ex(cctx[w], NULL, NULL, NULL, iv, -1)
               && EVP_CipherUpdate(cctx[w], out, &outl, in, (int)len)
               && EVP_CipherFinal_ex(cctx[w], out + outl, &outl);
    case OP_OVPN_HMAC:
        return EVP_MAC_init(mac[w], NULL, 0, mac_params) && EVP_MAC_update(mac[w], in, len)
               && EVP_MAC_final(mac[w], res, &sl, sizeof(res));
    case OP_RAND:
        return RAND_bytes_ex(libctx[w], out, len, 0);
    case OP_PLAIN:
        break;
    }
    if (md[w] != NULL)
        return EVP_DigestInit_ex2(mctx[w], md[w], NULL) && EVP_DigestUpdate(mctx[w], in, len)
               && EVP_DigestFinal_ex(mctx[w], res, &ml);
    return EVP_EncryptUpdate(cctx[w], out, &outl, in, (int)len) && (size_t)outl == len;
}

/* Way w: the default provider (dir NULL, default library context) or the
 * hwaf.so in dir, in a library context of its own. */
static int open_way(int w, const char *alg, const char *dir)
{
    OSSL_LIB_CTX *lc = NULL;
    const char *q = "provider=default";
    EVP_CIPHER *c;
    EVP_MAC *m;

    if (dir != NULL) {
        q = "provider=hwaf";
        if ((lc = OSSL_LIB_CTX_new()) == NULL
            || !OSSL_PROVIDER_set_default_search_path(lc, dir)
            || OSSL_PROVIDER_load(lc, "hwaf") == NULL || OSSL_PROVIDER_load(lc, "default") == NULL)
            return 0;
    }
    libctx[w] = lc;
    if (op != OP_PLAIN) {
        /* As an application under openssl.cnf's default_properties. */
        if (dir != NULL && !EVP_set_default_properties(lc, "?provider=hwaf"))
            return 0;
        if (op == OP_RAND)
            return 1;
        /* Which provider the property query chose, for the record. */
        if (op == OP_OVPN_HMAC) {
            if ((m = EVP_MAC_fetch(lc, "HMAC", NULL)) == NULL)
                return 0;
            printf("  way %d: HMAC from %s\n", w, OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(m)));
            return (mac[w] = EVP_MAC_CTX_new(m)) != NULL && EVP_MAC_init(mac[w], NULL, 0, mac_params);
        }
        if ((c = EVP_CIPHER_fetch(lc, alg, NULL)) == NULL)
            return 0;
        printf("  way %d: %s from %s\n", w, alg, OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c)));
        return (cctx[w] = EVP_CIPHER_CTX_new()) != NULL
               && EVP_CipherInit_ex(cctx[w], c, NULL, key, iv, 1);
    }
    if ((c = EVP_CIPHER_fetch(lc, alg, q)) != NULL) {
        return (cctx[w] = EVP_CIPHER_CTX_new()) != NULL
               && EVP_EncryptInit_ex2(cctx[w], c, key, iv, NULL)
               && EVP_CIPHER_CTX_set_padding(cctx[w], 0);
    }
    ERR_clear_error();
    return (md[w] = EVP_MD_fetch(lc, alg, q)) != NULL && (mctx[w] = EVP_MD_CTX_new()) != NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double *t[MAX_WAYS], *ratio[MAX_WAYS];
    long rounds, batch, r, i;
    int ways = argc - 4, w;
    const char *alg = argv[1];

    if (argc < 6 || ways > MAX_WAYS || (len = strtoul(argv[2], NULL, 0)) == 0
        || (rounds = atol(argv[3])) < 4 || (batch = atol(argv[4])) <= 0) {
        fprintf(stderr, "usage: ab-turns ALG SIZE ROUNDS(>=4) BATCH DIR...\n");
        return 2;
    }
    if (posix_memalign((void **)&in, 64, len) != 0 || posix_memalign((void **)&out, 64, len + 32) != 0)
        return 2;
    memset(in, 7, len);
    if (strncmp(alg, "ovpn-cbc:", 9) == 0) {
        op = OP_OVPN_CBC;
        alg += 9;
    } else if (strncmp(alg, "ovpn-hmac:", 10) == 0) {
        op = OP_OVPN_HMAC;
        alg += 10;
        mac_params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)alg, 0);
        mac_params[1] = OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)key, 32);
        mac_params[2] = OSSL_PARAM_construct_end();
    } else if (strcmp(alg, "rand") == 0) {
        op = OP_RAND;
    }
    for (w = 0; w < ways; w++) {
        t[w] = calloc((size_t)rounds, sizeof(double));
        ratio[w] = calloc((size_t)rounds, sizeof(double));
        if (t[w] == NULL || ratio[w] == NULL || !open_way(w, alg, w == 0 ? NULL : argv[4 + w])
            || !one_op(w)) {
            fprintf(stderr, "ab-turns: %s: cannot run %s\n", w == 0 ? "default" : argv[4 + w],
                    argv[1]);
            ERR_print_errors_fp(stderr);
            return 3;
        }
    }
    for (r = 0; r < rounds; r++) {
        for (w = 0; w < ways; w++) {
            int way = (r & 1) ? ways - 1 - w : w;
            double t0 = now();

            for (i = 0; i < batch; i++)
                if (!one_op(way))
                    return 4;
            t[way][r] = (now() - t0) / (double)batch * 1e9;
        }
        for (w = 0; w < ways; w++)
            ratio[w][r] = t[0][r] / t[w][r];
    }
    printf("%s, %zu bytes, %ld rounds of %ld operations:\n", argv[1], len, rounds, batch);
    for (w = 0; w < ways; w++) {
        qsort(t[w], (size_t)rounds, sizeof(double), cmp_double);
        qsort(ratio[w], (size_t)rounds, sizeof(double), cmp_double);
        printf("  %-24s median %.0f ns/op, least %.0f; default/this %.3f (%.3f-%.3f)\n",
               w == 0 ? "default" : argv[4 + w], t[w][rounds / 2], t[w][0],
               ratio[w][rounds / 2], ratio[w][rounds / 4], ratio[w][3 * rounds / 4]);
    }
    return 0;
}
