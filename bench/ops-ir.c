/*
 * ops-ir ALG PROPQUERY SIZE N: N operations of SIZE bytes as hwaf-bench
 * does them (one EVP_EncryptUpdate on a context initialised once, padding
 * off; a digest: EVP_DigestInit_ex2 + Update + Final_ex), inside run_ops,
 * after N/10 to warm up.  For counting instructions per operation, which
 * the host's load does not move as it moves time:
 *
 *   valgrind --tool=callgrind --toggle-collect=run_ops ./ops-ir AES-128-CBC provider=hwaf 16 2000
 *
 * gives the instructions of 1.1 N operations ("Collected").  Built by hand:
 * cc -O2 -o ops-ir bench/ops-ir.c -lcrypto (docs/benchmark.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

static unsigned char in[1 << 20], out[(1 << 20) + 64];

__attribute__((noinline)) int run_ops(EVP_CIPHER_CTX *c, EVP_MD_CTX *m, const EVP_MD *md,
                                      size_t len, long n)
{
    unsigned int ml;
    int ol;
    long i;

    for (i = 0; i < n; i++) {
        if (c != NULL) {
            if (!EVP_EncryptUpdate(c, out, &ol, in, (int)len))
                return 0;
        } else if (!EVP_DigestInit_ex2(m, md, NULL) || !EVP_DigestUpdate(m, in, len)
                   || !EVP_DigestFinal_ex(m, out, &ml)) {
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    unsigned char key[64] = { 1, 2, 3 }, iv[16] = { 0 };
    EVP_CIPHER *ci;
    EVP_MD *md = NULL;
    EVP_CIPHER_CTX *c = NULL;
    EVP_MD_CTX *m = NULL;
    size_t len;
    long n;

    if (argc != 5 || (len = strtoul(argv[3], NULL, 0)) > sizeof(in) || (n = atol(argv[4])) <= 0) {
        fprintf(stderr, "usage: ops-ir ALG PROPQUERY SIZE N\n");
        return 2;
    }
    key[32] = 9;    /* XTS: the key halves differ */
    if (OSSL_PROVIDER_load(NULL, "default") == NULL || OSSL_PROVIDER_load(NULL, "hwaf") == NULL) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    if ((ci = EVP_CIPHER_fetch(NULL, argv[1], argv[2])) != NULL) {
        c = EVP_CIPHER_CTX_new();
        if (c == NULL || !EVP_EncryptInit_ex2(c, ci, key, iv, NULL))
            return 3;
        EVP_CIPHER_CTX_set_padding(c, 0);
        printf("%s from %s\n", argv[1], OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(ci)));
    } else if ((md = EVP_MD_fetch(NULL, argv[1], argv[2])) != NULL) {
        if ((m = EVP_MD_CTX_new()) == NULL)
            return 3;
        printf("%s from %s\n", argv[1], OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(md)));
    } else {
        ERR_print_errors_fp(stderr);
        return 4;
    }
    if (!run_ops(c, m, md, len, n / 10) || !run_ops(c, m, md, len, n)) {
        ERR_print_errors_fp(stderr);
        return 5;
    }
    EVP_CIPHER_CTX_free(c);
    EVP_MD_CTX_free(m);
    EVP_CIPHER_free(ci);
    EVP_MD_free(md);
    return 0;
}
