/*
 * ab-turns ALG SIZE ROUNDS BATCH DIR...: the default provider against one
 * or more builds of hwaf, each hwaf.so (from DIR) loaded into a library
 * context of its own, all in one process, taking turns: each round runs
 * BATCH operations of each way (the order reversed every other round), so
 * that whatever the host does falls on all of them alike.  A cipher
 * operation is one EVP_EncryptUpdate of SIZE bytes on a context initialised
 * once (padding off); a digest operation is EVP_DigestInit_ex2 + Update +
 * Final_ex, as hwaf-bench does them.  Printed per way: the median and least
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
#include <openssl/evp.h>
#include <openssl/provider.h>

#define MAX_WAYS 8

static unsigned char *in, *out;
static size_t len;
static EVP_CIPHER_CTX *cctx[MAX_WAYS];
static EVP_MD_CTX *mctx[MAX_WAYS];
static EVP_MD *md[MAX_WAYS];

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

    if (md[w] != NULL)
        return EVP_DigestInit_ex2(mctx[w], md[w], NULL) && EVP_DigestUpdate(mctx[w], in, len)
               && EVP_DigestFinal_ex(mctx[w], res, &ml);
    return EVP_EncryptUpdate(cctx[w], out, &outl, in, (int)len) && (size_t)outl == len;
}

/* Way w: the default provider (dir NULL, default library context) or the
 * hwaf.so in dir, in a library context of its own. */
static int open_way(int w, const char *alg, const char *dir)
{
    static const unsigned char key[64], iv[16];
    OSSL_LIB_CTX *lc = NULL;
    const char *q = "provider=default";
    EVP_CIPHER *c;

    if (dir != NULL) {
        q = "provider=hwaf";
        if ((lc = OSSL_LIB_CTX_new()) == NULL
            || !OSSL_PROVIDER_set_default_search_path(lc, dir)
            || OSSL_PROVIDER_load(lc, "hwaf") == NULL || OSSL_PROVIDER_load(lc, "default") == NULL)
            return 0;
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

    if (argc < 6 || ways > MAX_WAYS || (len = strtoul(argv[2], NULL, 0)) == 0
        || (rounds = atol(argv[3])) < 4 || (batch = atol(argv[4])) <= 0) {
        fprintf(stderr, "usage: ab-turns ALG SIZE ROUNDS(>=4) BATCH DIR...\n");
        return 2;
    }
    if (posix_memalign((void **)&in, 64, len) != 0 || posix_memalign((void **)&out, 64, len) != 0)
        return 2;
    memset(in, 7, len);
    for (w = 0; w < ways; w++) {
        t[w] = calloc((size_t)rounds, sizeof(double));
        ratio[w] = calloc((size_t)rounds, sizeof(double));
        if (t[w] == NULL || ratio[w] == NULL || !open_way(w, argv[1], w == 0 ? NULL : argv[4 + w])
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
