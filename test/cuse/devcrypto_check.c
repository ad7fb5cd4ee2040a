/*
 * devcrypto-check: talks to /dev/crypto with bare ioctls (no hwaf) and
 * compares every answer with OpenSSL's default provider.  It checks the
 * device the tests run against (the CUSE server, or the real module): the
 * ABI in provider/cryptodev_abi.h, sessions, CIOCGSESSINFO, ciphers of many
 * sizes in and out of place, hash update/final/reset, CIOCCPHASH, and the
 * errors the module gives for bad input.
 *
 * Usage: devcrypto-check [--expect-driver-prefix P] [--expect-hw LIST|none]
 *                        [--expect-alignmask N]
 * The expectations are ignored when HWAF_DEVCRYPTO=native (with-devcrypto
 * found the real module loaded).  Exit status 0 when everything matched,
 * 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "cryptodev_abi.h"

static int failures;
static const char *expect_prefix;
static const char *expect_hw;
static long expect_alignmask = -1;

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            failures++;                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                       \
            fputc('\n', stderr);                                \
        }                                                       \
    } while (0)

static int in_list(const char *list, const char *name)
{
    const char *p = list;
    size_t len = strlen(name);

    if (list == NULL || strcmp(list, "none") == 0)
        return 0;
    if (strcmp(list, "all") == 0)
        return 1;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);

        if (l == len && strncmp(p, name, l) == 0)
            return 1;
        p += l + (e != NULL);
    }
    return 0;
}

static int sess(int fd, uint32_t cipher, uint32_t mac, const unsigned char *key,
                size_t keylen, uint32_t *ses)
{
    struct session_op sop;

    memset(&sop, 0, sizeof(sop));
    sop.cipher = cipher;
    sop.mac = mac;
    sop.key = (uint8_t *)key;
    sop.keylen = (uint32_t)keylen;
    if (ioctl(fd, CIOCGSESSION, &sop) < 0)
        return -errno;
    *ses = sop.ses;
    return 0;
}

static int fsess(int fd, uint32_t ses)
{
    return ioctl(fd, CIOCFSESSION, &ses) < 0 ? -errno : 0;
}

static int dcrypt(int fd, uint32_t ses, int op, int flags, unsigned char *iv,
                 const unsigned char *src, unsigned char *dst, size_t len,
                 unsigned char *mac)
{
    struct crypt_op cop;

    memset(&cop, 0, sizeof(cop));
    cop.ses = ses;
    cop.op = (uint16_t)op;
    cop.flags = (uint16_t)flags;
    cop.len = (uint32_t)len;
    cop.src = (uint8_t *)src;
    cop.dst = dst;
    cop.iv = iv;
    cop.mac = mac;
    return ioctl(fd, CIOCCRYPT, &cop) < 0 ? -errno : 0;
}

static void check_info(int fd, uint32_t ses, const char *kname, int is_hash)
{
    struct session_info_op info;
    const struct alg_info *ai;

    memset(&info, 0, sizeof(info));
    info.ses = ses;
    CHECK(ioctl(fd, CIOCGSESSINFO, &info) == 0, "CIOCGSESSINFO %s: %s",
          kname, strerror(errno));
    ai = is_hash ? &info.hash_info : &info.cipher_info;
    printf("  %-9s driver %-24.64s flags %#x alignmask %u\n", kname,
           ai->cra_driver_name, info.flags, info.alignmask);
    CHECK(strncmp(ai->cra_name, kname, sizeof(ai->cra_name)) == 0,
          "cra_name %.64s, expected %s", ai->cra_name, kname);
    CHECK(ai->cra_driver_name[0] != '\0', "%s: empty driver name", kname);
    if (expect_prefix != NULL)
        CHECK(strncmp(ai->cra_driver_name, expect_prefix, strlen(expect_prefix)) == 0,
              "%s: driver %.64s does not start with %s", kname,
              ai->cra_driver_name, expect_prefix);
    if (expect_hw != NULL)
        CHECK(!!(info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY) == in_list(expect_hw, kname),
              "%s: flags %#x", kname, info.flags);
    if (expect_alignmask >= 0)
        CHECK(info.alignmask == expect_alignmask, "%s: alignmask %u", kname,
              info.alignmask);
}

/* Reference through OpenSSL's default provider. */
static void ref_cipher(const char *name, int enc, const unsigned char *key,
                       const unsigned char *iv, const unsigned char *in,
                       unsigned char *out, size_t len)
{
    EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, name, "provider=default");
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int outl = 0;

    if (c == NULL || ctx == NULL || !EVP_CipherInit_ex2(ctx, c, key, iv, enc, NULL)
        || !EVP_CIPHER_CTX_set_padding(ctx, 0)
        || !EVP_CipherUpdate(ctx, out, &outl, in, (int)len)) {
        fprintf(stderr, "reference %s failed\n", name);
        exit(2);
    }
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(c);
}

static const struct {
    const char *ossl, *kname;
    uint32_t id;
    size_t keylen;
    size_t block;
} ciphers[] = {
    { "AES-128-CBC", "cbc(aes)", CRYPTO_AES_CBC, 16, 16 },
    { "AES-192-CBC", "cbc(aes)", CRYPTO_AES_CBC, 24, 16 },
    { "AES-256-CBC", "cbc(aes)", CRYPTO_AES_CBC, 32, 16 },
    { "AES-128-CTR", "ctr(aes)", CRYPTO_AES_CTR, 16, 1 },
    { "AES-256-CTR", "ctr(aes)", CRYPTO_AES_CTR, 32, 1 },
    { "AES-128-XTS", "xts(aes)", CRYPTO_AES_XTS, 32, 16 },
    { "AES-256-XTS", "xts(aes)", CRYPTO_AES_XTS, 64, 16 },
    { "AES-128-ECB", "ecb(aes)", CRYPTO_AES_ECB, 16, 16 },
};

static void check_ciphers(int fd)
{
    static const size_t sizes[] = { 16, 32, 48, 4096, 4112, 65536, 100000 };
    size_t i, j, maxlen = 100000 + 16;
    unsigned char key[64], iv[16], ivcopy[16];
    unsigned char *in = malloc(maxlen), *out = malloc(maxlen), *ref = malloc(maxlen);
    uint32_t ses = 0;
    int r;

    for (i = 0; i < sizeof(ciphers) / sizeof(ciphers[0]); i++) {
        RAND_bytes(key, sizeof(key));
        r = sess(fd, ciphers[i].id, 0, key, ciphers[i].keylen, &ses);
        CHECK(r == 0, "CIOCGSESSION %s: %s", ciphers[i].ossl, strerror(-r));
        if (r != 0)
            continue;
        check_info(fd, ses, ciphers[i].kname, 0);
        for (j = 0; j < sizeof(sizes) / sizeof(sizes[0]); j++) {
            size_t len = sizes[j] - sizes[j] % ciphers[i].block;
            int ecb = ciphers[i].id == CRYPTO_AES_ECB;

            if (ciphers[i].id == CRYPTO_AES_CTR)
                len = sizes[j] + 3;  /* CTR takes any length */
            RAND_bytes(in, (int)len);
            RAND_bytes(iv, sizeof(iv));
            memcpy(ivcopy, iv, 16);
            ref_cipher(ciphers[i].ossl, 1, key, ecb ? NULL : iv, in, ref, len);
            r = dcrypt(fd, ses, COP_ENCRYPT, 0, ecb ? NULL : ivcopy, in, out, len, NULL);
            CHECK(r == 0 && memcmp(out, ref, len) == 0, "%s encrypt %zu: %s",
                  ciphers[i].ossl, len, r ? strerror(-r) : "wrong output");
            CHECK(memcmp(ivcopy, iv, 16) == 0, "%s: IV written back without "
                  "COP_FLAG_WRITE_IV", ciphers[i].ossl);
            /* decrypt in place */
            r = dcrypt(fd, ses, COP_DECRYPT, 0, ecb ? NULL : ivcopy, out, out, len, NULL);
            CHECK(r == 0 && memcmp(out, in, len) == 0, "%s decrypt in place %zu: %s",
                  ciphers[i].ossl, len, r ? strerror(-r) : "wrong output");
        }
        if (ciphers[i].block == 16) {
            r = dcrypt(fd, ses, COP_ENCRYPT, 0, iv, in, out, 17, NULL);
            CHECK(r == -EINVAL, "%s: 17 bytes gave %d, expected EINVAL",
                  ciphers[i].ossl, r);
        }
        if (ciphers[i].id == CRYPTO_AES_CBC) {
            /* COP_FLAG_WRITE_IV: the last ciphertext block comes back. */
            memcpy(ivcopy, iv, 16);
            r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_WRITE_IV, ivcopy, in, out, 64, NULL);
            CHECK(r == 0 && memcmp(ivcopy, out + 48, 16) == 0, "CBC WRITE_IV");
        }
        CHECK(fsess(fd, ses) == 0, "CIOCFSESSION");
        CHECK(dcrypt(fd, ses, COP_ENCRYPT, 0, iv, in, out, 16, NULL) == -EINVAL,
              "operation on a freed session");
    }
    CHECK(sess(fd, CRYPTO_AES_CBC, 0, key, 15, &ses) == -EINVAL, "15-byte AES key");
    free(in);
    free(out);
    free(ref);
}

static const struct {
    const char *ossl, *kname;
    uint32_t id;
} digests[] = {
    { "SHA1", "sha1", CRYPTO_SHA1 },
    { "SHA2-224", "sha224", CRYPTO_SHA2_224 },
    { "SHA2-256", "sha256", CRYPTO_SHA2_256 },
    { "SHA2-384", "sha384", CRYPTO_SHA2_384 },
    { "SHA2-512", "sha512", CRYPTO_SHA2_512 },
};

static void ref_md(const char *name, const unsigned char *in, size_t len,
                   unsigned char *md)
{
    EVP_MD *m = EVP_MD_fetch(NULL, name, "provider=default");
    unsigned int l;

    if (m == NULL || !EVP_Digest(in, len, md, &l, m, NULL)) {
        fprintf(stderr, "reference %s failed\n", name);
        exit(2);
    }
    EVP_MD_free(m);
}

static void check_digests(int fd)
{
    size_t len = 200000, i, mdlen;
    unsigned char *in = malloc(len), md[64], ref[64], md2[64], ref2[64];
    uint32_t ses = 0, ses2 = 0;
    int r;

    RAND_bytes(in, (int)len);
    for (i = 0; i < sizeof(digests) / sizeof(digests[0]); i++) {
        EVP_MD *m = EVP_MD_fetch(NULL, digests[i].ossl, "provider=default");

        mdlen = (size_t)EVP_MD_get_size(m);
        EVP_MD_free(m);
        r = sess(fd, 0, digests[i].id, NULL, 0, &ses);
        CHECK(r == 0, "CIOCGSESSION %s: %s", digests[i].ossl, strerror(-r));
        if (r != 0)
            continue;
        check_info(fd, ses, digests[i].kname, 1);
        /* empty message: FINAL with RESET */
        ref_md(digests[i].ossl, in, 0, ref);
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_FINAL | COP_FLAG_RESET, NULL,
                  NULL, NULL, 0, md);
        CHECK(r == 0 && memcmp(md, ref, mdlen) == 0, "%s empty", digests[i].ossl);
        /* one shot (flags 0) */
        ref_md(digests[i].ossl, in, 1000, ref);
        r = dcrypt(fd, ses, COP_ENCRYPT, 0, NULL, in, NULL, 1000, md);
        CHECK(r == 0 && memcmp(md, ref, mdlen) == 0, "%s one shot", digests[i].ossl);
        /* updates of odd sizes, a copy taken mid-stream, both continued */
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE | COP_FLAG_RESET, NULL,
                  in, NULL, 1, NULL);
        CHECK(r == 0, "%s update: %s", digests[i].ossl, strerror(-r));
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE, NULL, in + 1, NULL,
                  70000, NULL);
        CHECK(r == 0, "%s update 70000: %s", digests[i].ossl, strerror(-r));
        r = sess(fd, 0, digests[i].id, NULL, 0, &ses2);
        CHECK(r == 0, "second session");
        {
            struct cphash_op cp = { ses2, ses };

            CHECK(ioctl(fd, CIOCCPHASH, &cp) == 0, "CIOCCPHASH: %s", strerror(errno));
        }
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE, NULL, in + 70001, NULL,
                  len - 70001, NULL);
        CHECK(r == 0, "%s update rest: %s", digests[i].ossl, strerror(-r));
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_FINAL, NULL, NULL, NULL, 0, md);
        ref_md(digests[i].ossl, in, len, ref);
        CHECK(r == 0 && memcmp(md, ref, mdlen) == 0, "%s streamed", digests[i].ossl);
        r = dcrypt(fd, ses2, COP_ENCRYPT, COP_FLAG_UPDATE, NULL, in + 50, NULL,
                  10, NULL);
        r |= dcrypt(fd, ses2, COP_ENCRYPT, COP_FLAG_FINAL, NULL, NULL, NULL, 0, md2);
        {
            unsigned char *tmp = malloc(70011);

            memcpy(tmp, in, 70001);
            memcpy(tmp + 70001, in + 50, 10);
            ref_md(digests[i].ossl, tmp, 70011, ref2);
            free(tmp);
        }
        CHECK(r == 0 && memcmp(md2, ref2, mdlen) == 0, "%s copy", digests[i].ossl);
        /* a session shared with a child after fork() */
        r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE | COP_FLAG_RESET, NULL,
                  in, NULL, 100, NULL);
        {
            pid_t pid = fork();
            int st = 0;

            if (pid == 0) {
                r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE, NULL, in + 100,
                          NULL, 100, NULL);
                _exit(r == 0 ? 0 : 1);
            }
            waitpid(pid, &st, 0);
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child update");
            r = dcrypt(fd, ses, COP_ENCRYPT, COP_FLAG_FINAL, NULL, NULL, NULL, 0, md);
            ref_md(digests[i].ossl, in, 200, ref);
            CHECK(r == 0 && memcmp(md, ref, mdlen) == 0,
                  "%s: the child's update is in the parent's session", digests[i].ossl);
        }
        CHECK(fsess(fd, ses) == 0 && fsess(fd, ses2) == 0, "CIOCFSESSION");
    }
    free(in);
}

int main(int argc, char **argv)
{
    const char *dev = "/dev/crypto";
    int i, fd, fd2;
    uint32_t ses = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-driver-prefix") == 0 && i + 1 < argc)
            expect_prefix = argv[++i];
        else if (strcmp(argv[i], "--expect-hw") == 0 && i + 1 < argc)
            expect_hw = argv[++i];
        else if (strcmp(argv[i], "--expect-alignmask") == 0 && i + 1 < argc)
            expect_alignmask = strtol(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--expect-driver-prefix P] [--expect-hw LIST|none|all]"
                    " [--expect-alignmask N]\n", argv[0]);
            return 2;
        }
    }
    /* The expectations describe the CUSE server's options, which
     * with-devcrypto ignores when the real module is loaded. */
    if (getenv("HWAF_DEVCRYPTO") != NULL && strcmp(getenv("HWAF_DEVCRYPTO"), "native") == 0
        && (expect_prefix || expect_hw || expect_alignmask >= 0)) {
        printf("real /dev/crypto: driver, flag and alignmask expectations not checked\n");
        expect_prefix = expect_hw = NULL;
        expect_alignmask = -1;
    }
    fd = open(dev, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "FAIL: open %s: %s\n", dev, strerror(errno));
        return 1;
    }
    printf("%s:\n", dev);
    check_ciphers(fd);
    check_digests(fd);
    /* Sessions belong to the open file. */
    fd2 = open(dev, O_RDWR | O_CLOEXEC);
    CHECK(sess(fd, 0, CRYPTO_SHA1, NULL, 0, &ses) == 0, "session");
    {
        unsigned char md[20];

        CHECK(dcrypt(fd2, ses, COP_ENCRYPT, 0, NULL, (const unsigned char *)"a", NULL, 1, md) == -EINVAL,
              "a session used through another open file");
    }
    CHECK(ioctl(fd, 0xc0046399u, &ses) < 0, "unknown ioctl accepted");
    close(fd2);
    close(fd);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
