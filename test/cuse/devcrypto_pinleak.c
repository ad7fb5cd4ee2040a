/*
 * devcrypto-pinleak: does hashing through hwaf's /dev/crypto backend lose
 * kernel memory on buffers that mix writable and read-only pages?
 *
 * cryptodev-linux pins an in-place buffer's pages for writing and, when it
 * meets a read-only page, fails, falls back to copying and never releases
 * the pages it had pinned (docs/devcrypto.md).  This hashes N fresh
 * buffers of 24000 bytes (5 writable pages, then a read-only one) through
 * hwaf's devcrypto SHA2-256, its context forced to the kernel (hwaf-offload
 * 1: the configured threshold would send such updates to software),
 * unmapping each, and reports how many bytes reached /dev/crypto, how far
 * MemAvailable fell, and whether the digest equals the default provider's.
 * Meant for the real module (the CUSE device refuses such requests
 * outright); not a ctest entry.
 *
 *   devcrypto-pinleak MODULE_DIR [N]      (N defaults to 4000)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "hwaf/hwaf.h"

/* The bytes hwaf handed to /dev/crypto so far. */
static unsigned long long devcrypto_bytes(OSSL_PROVIDER *prov)
{
    uint64_t v = 0;
    OSSL_PARAM p[] = { OSSL_PARAM_uint64(HWAF_PARAM_DEVCRYPTO_BYTES, &v), OSSL_PARAM_END };

    return OSSL_PROVIDER_get_params(prov, p) ? (unsigned long long)v : 0;
}

static long mem_available_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/meminfo", "r");

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    const size_t n = 24000, pg = (size_t)sysconf(_SC_PAGESIZE), maplen = 6 * pg;
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    EVP_MD *h, *d;
    EVP_MD_CTX *a = EVP_MD_CTX_new(), *b = EVP_MD_CTX_new();
    unsigned char x[32], y[32];
    unsigned int l;
    long before, after, count = argc > 2 ? atol(argv[2]) : 4000, i;
    int ok = 1, one = 1;
    OSSL_PARAM force[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &one), OSSL_PARAM_END };
    OSSL_PROVIDER *prov;
    unsigned long long sent;

    if (argc < 2 || lib == NULL || a == NULL || b == NULL) {
        fprintf(stderr, "usage: %s MODULE_DIR [N]\n", argv[0]);
        return 2;
    }
    OSSL_PROVIDER_set_default_search_path(lib, argv[1]);
    if ((prov = OSSL_PROVIDER_load(lib, "hwaf")) == NULL || OSSL_PROVIDER_load(lib, "default") == NULL)
        return 2;
    h = EVP_MD_fetch(lib, "SHA2-256", "provider=hwaf,hwaf.backend=devcrypto");
    d = EVP_MD_fetch(lib, "SHA2-256", "provider=default");
    if (h == NULL || d == NULL || !EVP_DigestInit_ex2(a, h, force) || !EVP_DigestInit_ex2(b, d, NULL)) {
        fprintf(stderr, "no SHA2-256 through hwaf's devcrypto backend\n");
        return 2;
    }
    sent = devcrypto_bytes(prov);
    before = mem_available_kb();
    for (i = 0; i < count; i++) {
        unsigned char *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        unsigned char *p;
        size_t j;

        if (m == MAP_FAILED)
            return 2;
        p = m + maplen - n;
        for (j = 0; j < n; j++)
            p[j] = (unsigned char)(j * 7 + (size_t)i);
        if (mprotect(m + maplen - pg, pg, PROT_READ) != 0)
            return 2;
        ok &= EVP_DigestUpdate(a, p, n);
        EVP_DigestUpdate(b, p, n);
        munmap(m, maplen);
    }
    ok &= EVP_DigestFinal_ex(a, x, &l);
    EVP_DigestFinal_ex(b, y, &l);
    after = mem_available_kb();
    sent = devcrypto_bytes(prov) - sent;
    printf("%ld updates of %zu bytes, %llu bytes to /dev/crypto: %s; MemAvailable fell by %ld kB\n",
           count, n, sent,
           !ok ? "hwaf failed" : memcmp(x, y, 32) == 0 ? "digest matches the default provider's"
                                                     : "WRONG digest",
           before - after);
    if (sent < (unsigned long long)count * n - 64) {
        fprintf(stderr, "the updates did not reach /dev/crypto\n");
        return 1;
    }
    return ok && memcmp(x, y, 32) == 0 ? 0 : 1;
}
