/*
 * digest-turns ALG SIZE N [SLICE]: the same digest through the default
 * provider (EVP), through hwaf (EVP, its software path below the
 * threshold) and through the default provider's own functions called from
 * a library context of its own, as hwaf's software path calls them; one
 * process, taking turns, so that whatever the host does falls on all
 * three alike.  Without SLICE: N rounds of one operation each (init,
 * update of SIZE bytes, final), printed as the least and the median time
 * per operation.  With SLICE (seconds): N rounds of a slice of each, as
 * hwaf-bench takes turns, printed as MB/s.  Ratios are to the default
 * provider's (higher: faster).  Built by hand (docs/benchmark.md, "Runs
 * in the ARM guests"):
 *
 *   cc -O2 -o digest-turns bench/digest-turns.c -lcrypto
 *   OPENSSL_MODULES=build/modules ./digest-turns SHA2-256 1024 2000
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

enum { DEFAULT, DIRECT, HWAF, N_WAYS };
static const char *const way_name[N_WAYS] = { "default", "direct", "hwaf" };

static unsigned char *in;
static size_t len;
static EVP_MD *md[N_WAYS];
static EVP_MD_CTX *mctx[N_WAYS];
static OSSL_FUNC_digest_init_fn *d_init;
static OSSL_FUNC_digest_update_fn *d_update;
static OSSL_FUNC_digest_final_fn *d_final;
static void *dctx;

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int one_op(int way)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int ml;
    size_t dl;

    if (way == DIRECT)
        return d_init(dctx, NULL) && d_update(dctx, in, len) && d_final(dctx, out, &dl, sizeof(out));
    return EVP_DigestInit_ex2(mctx[way], md[way], NULL) && EVP_DigestUpdate(mctx[way], in, len)
           && EVP_DigestFinal_ex(mctx[way], out, &ml);
}

/* The default provider's digest functions from a library context of our own. */
static int direct_setup(const char *alg)
{
    OSSL_LIB_CTX *lc = OSSL_LIB_CTX_new();
    OSSL_PROVIDER *p = lc != NULL ? OSSL_PROVIDER_load(lc, "default") : NULL;
    OSSL_FUNC_digest_newctx_fn *d_new = NULL;
    const OSSL_ALGORITHM *a;
    const OSSL_DISPATCH *f;
    int nc;

    if (p == NULL)
        return 0;
    for (a = OSSL_PROVIDER_query_operation(p, OSSL_OP_DIGEST, &nc); a->algorithm_names != NULL; a++)
        if (strstr(a->algorithm_names, alg) != NULL)
            break;
    for (f = a->implementation; f != NULL && f->function_id != 0; f++) {
        if (f->function_id == OSSL_FUNC_DIGEST_NEWCTX)
            d_new = (OSSL_FUNC_digest_newctx_fn *)f->function;
        else if (f->function_id == OSSL_FUNC_DIGEST_INIT)
            d_init = (OSSL_FUNC_digest_init_fn *)f->function;
        else if (f->function_id == OSSL_FUNC_DIGEST_UPDATE)
            d_update = (OSSL_FUNC_digest_update_fn *)f->function;
        else if (f->function_id == OSSL_FUNC_DIGEST_FINAL)
            d_final = (OSSL_FUNC_digest_final_fn *)f->function;
    }
    return d_new != NULL && d_init != NULL && d_update != NULL && d_final != NULL
           && (dctx = d_new(OSSL_PROVIDER_get0_provider_ctx(p))) != NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double slice = argc > 4 ? atof(argv[4]) : 0, *t[N_WAYS];
    long n, i;
    int w;

    if (argc < 4 || (len = strtoul(argv[2], NULL, 0)) == 0 || (n = atol(argv[3])) <= 0) {
        fprintf(stderr, "usage: digest-turns ALG SIZE N [SLICE]\n");
        return 2;
    }
    if (posix_memalign((void **)&in, 4096, len) != 0)
        return 2;
    memset(in, 7, len);
    if (OSSL_PROVIDER_load(NULL, "default") == NULL || OSSL_PROVIDER_load(NULL, "hwaf") == NULL
        || !direct_setup(argv[1])) {
        ERR_print_errors_fp(stderr);
        return 3;
    }
    md[DEFAULT] = EVP_MD_fetch(NULL, argv[1], "provider=default");
    md[HWAF] = EVP_MD_fetch(NULL, argv[1], "provider=hwaf");
    for (w = 0; w < N_WAYS; w++) {
        t[w] = calloc((size_t)n, sizeof(double));
        if (w != DIRECT && (md[w] == NULL || (mctx[w] = EVP_MD_CTX_new()) == NULL))
            return 3;
        if (t[w] == NULL || !one_op(w))  /* and a first operation of each */
            return 3;
    }
    for (i = 0; i < n; i++) {
        for (w = 0; w < N_WAYS; w++) {
            double t0 = now(), t1;
            long ops = 0;

            do {
                if (!one_op(w))
                    return 4;
                ops++;
                t1 = now();
            } while (t1 - t0 < slice);
            t[w][i] = slice > 0 ? (double)ops * (double)len / (t1 - t0) / 1e6 : t1 - t0;
        }
    }
    /* Per way: the least and the median time per operation, or the mean
     * MB/s of its slices; the ratio to the default provider's. */
    double v[N_WAYS][2];

    for (w = 0; w < N_WAYS; w++) {
        double sum = 0;

        qsort(t[w], (size_t)n, sizeof(double), cmp_double);
        for (i = 0; i < n; i++)
            sum += t[w][i];
        v[w][0] = slice > 0 ? sum / (double)n : t[w][0] * 1e6;
        v[w][1] = t[w][n / 2] * 1e6;
    }
    printf("%s, %zu bytes, %ld rounds%s:", argv[1], len, n, slice > 0 ? " of slices" : "");
    for (w = 0; w < N_WAYS; w++) {
        if (slice > 0)
            printf("  %s %.1f MB/s (%.3f)", way_name[w], v[w][0], v[w][0] / v[DEFAULT][0]);
        else
            printf("  %s least %.1f us (%.3f), median %.1f us (%.3f)", way_name[w], v[w][0],
                   v[DEFAULT][0] / v[w][0], v[w][1], v[DEFAULT][1] / v[w][1]);
    }
    printf("\n");
    return 0;
}
