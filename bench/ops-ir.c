/*
 * ops-ir ALG PROPQUERY SIZE N [iv]: N operations of SIZE bytes as hwaf-bench
 * does them (one EVP_EncryptUpdate on a context initialised once, padding
 * off; a digest: EVP_DigestInit_ex2 + Update + Final_ex), inside run_ops,
 * after N/10 to warm up.  With "iv", a cipher operation starts with a new
 * IV as OpenVPN's packets do (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, iv,
 * -1), then the update).  For counting instructions per operation, which
 * the host's load does not move as it moves time:
 *
 *   valgrind --tool=callgrind --toggle-collect=run_ops ./ops-ir AES-128-CBC provider=hwaf 16 2000
 *
 * gives the instructions of 1.1 N operations ("Collected").  Built by hand:
 * cc -O2 -o ops-ir bench/ops-ir.c -lcrypto (docs/benchmark.md).
 *
 * AES-128-GCM seals one message per operation as hwaf-bench does (init with
 * the IV, 13 bytes of AAD, the data, final, tag); through hwaf with
 * hwaf-offload = 1, the kernel path.  PROPQUERY "bare-afalg": the same
 * message through a bare AF_ALG aead socket (sendmsg + readv), the user
 * space a kernel request cannot do with less.  HMAC-SHA2-256: EVP_MAC_init
 * (same key) + update + final per operation, or bare AF_ALG hmac(sha256):
 * send + read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>
#include <openssl/core_names.h>
#include <linux/if_alg.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned char in[1 << 20], out[(1 << 20) + 64];
static unsigned char gcm_iv[12], aad[13];
static int gcm, reinit, bare_op = -1;
static unsigned char op_iv[16];
static EVP_MAC_CTX *mac;

static int bare_gcm(size_t len)
{
    char cbuf[CMSG_SPACE(4) + CMSG_SPACE(sizeof(struct af_alg_iv) + 12) + CMSG_SPACE(4)] = { 0 };
    struct msghdr msg = { 0 };
    struct cmsghdr *h;
    struct af_alg_iv *aiv;
    struct iovec tx[2] = { { aad, sizeof(aad) }, { in, len } };
    unsigned char scratch[sizeof(aad)];
    struct iovec rx[2] = { { scratch, sizeof(scratch) }, { out, len + 16 } };

    msg.msg_control = cbuf;
    msg.msg_controllen = sizeof(cbuf);
    msg.msg_iov = tx;
    msg.msg_iovlen = 2;
    h = CMSG_FIRSTHDR(&msg);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_OP;
    h->cmsg_len = CMSG_LEN(4);
    *(unsigned int *)CMSG_DATA(h) = ALG_OP_ENCRYPT;
    h = CMSG_NXTHDR(&msg, h);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_IV;
    h->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + 12);
    aiv = (struct af_alg_iv *)CMSG_DATA(h);
    aiv->ivlen = 12;
    memcpy(aiv->iv, gcm_iv, 12);
    h = CMSG_NXTHDR(&msg, h);
    h->cmsg_level = SOL_ALG;
    h->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
    h->cmsg_len = CMSG_LEN(4);
    *(unsigned int *)CMSG_DATA(h) = sizeof(aad);
    return sendmsg(bare_op, &msg, 0) == (ssize_t)(sizeof(aad) + len)
           && readv(bare_op, rx, 2) == (ssize_t)(sizeof(aad) + len + 16);
}

static int seal(EVP_CIPHER_CTX *c, size_t len)
{
    int ol, fl;

    return EVP_EncryptInit_ex(c, NULL, NULL, NULL, gcm_iv)
           && EVP_EncryptUpdate(c, NULL, &ol, aad, sizeof(aad))
           && EVP_EncryptUpdate(c, out, &ol, in, (int)len)
           && EVP_EncryptFinal_ex(c, out + ol, &fl)
           && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, out + len) > 0;
}

__attribute__((noinline)) int run_ops(EVP_CIPHER_CTX *c, EVP_MD_CTX *m, const EVP_MD *md,
                                      size_t len, long n)
{
    unsigned int ml;
    int ol;
    long i;

    for (i = 0; i < n; i++) {
        if (bare_op >= 0 && !gcm) {
            if (send(bare_op, in, len, 0) != (ssize_t)len || read(bare_op, out, 32) != 32)
                return 0;
        } else if (mac != NULL) {
            size_t ml2;

            if (!EVP_MAC_init(mac, NULL, 0, NULL) || !EVP_MAC_update(mac, in, len)
                || !EVP_MAC_final(mac, out, &ml2, 64))
                return 0;
        } else if (bare_op >= 0) {
            if (!bare_gcm(len))
                return 0;
        } else if (gcm) {
            if (!seal(c, len))
                return 0;
        } else if (c != NULL) {
            op_iv[15] = (unsigned char)i;
            if ((reinit && !EVP_CipherInit_ex(c, NULL, NULL, NULL, op_iv, -1))
                || !EVP_EncryptUpdate(c, out, &ol, in, (int)len))
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

    if (argc < 5 || argc > 6 || (len = strtoul(argv[3], NULL, 0)) > sizeof(in)
        || (n = atol(argv[4])) <= 0 || (argc == 6 && strcmp(argv[5], "iv") != 0)) {
        fprintf(stderr, "usage: ops-ir ALG PROPQUERY SIZE N [iv]\n");
        return 2;
    }
    reinit = argc == 6;
    key[32] = 9;    /* XTS: the key halves differ */
    if (OSSL_PROVIDER_load(NULL, "default") == NULL || OSSL_PROVIDER_load(NULL, "hwaf") == NULL) {
        ERR_print_errors_fp(stderr);
        return 2;
    }
    gcm = strstr(argv[1], "GCM") != NULL;
    if (strcmp(argv[1], "HMAC-SHA2-256") == 0 && strcmp(argv[2], "bare-afalg") != 0) {
        EVP_MAC *mm = EVP_MAC_fetch(NULL, "HMAC", argv[2]);
        int force = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_construct_utf8_string("digest", "SHA2-256", 0),
                           OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        if (strstr(argv[2], "hwaf") == NULL)
            p[1] = p[2];
        if (mm == NULL || (mac = EVP_MAC_CTX_new(mm)) == NULL
            || !EVP_MAC_init(mac, key, 32, p)) {
            ERR_print_errors_fp(stderr);
            return 3;
        }
        ci = NULL;
        printf("%s from %s\n", argv[1], OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(mm)));
    } else if (strcmp(argv[2], "bare-afalg") == 0) {
        struct sockaddr_alg sa = { .salg_family = AF_ALG, .salg_type = "aead",
                                   .salg_name = "gcm(aes)" };
        int t = socket(AF_ALG, SOCK_SEQPACKET, 0);

        if (!gcm) {
            strcpy((char *)sa.salg_type, "hash");
            strcpy((char *)sa.salg_name, "hmac(sha256)");
        }
        if (t < 0 || bind(t, (struct sockaddr *)&sa, sizeof(sa)) != 0
            || setsockopt(t, SOL_ALG, ALG_SET_KEY, key, gcm ? 16 : 32) != 0
            || (gcm && setsockopt(t, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, 16) != 0)
            || (bare_op = accept(t, NULL, 0)) < 0) {
            perror("AF_ALG bind");
            return 3;
        }
        ci = NULL;
        printf("%s bare AF_ALG\n", argv[1]);
    } else if ((ci = EVP_CIPHER_fetch(NULL, argv[1], argv[2])) != NULL) {
        int force = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_construct_int("hwaf-offload", &force),
                           OSSL_PARAM_construct_end() };

        /* GCM through hwaf: the kernel path; CBC, CTR, XTS: hwaf's own
         * dispatch (software below the threshold, as hwaf-auto). */
        c = EVP_CIPHER_CTX_new();
        if (c == NULL || !EVP_EncryptInit_ex2(c, ci, key, iv,
                                              gcm && strstr(argv[2], "hwaf") != NULL ? p : NULL))
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
