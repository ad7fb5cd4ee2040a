/*
 * The cryptodev-linux ioctl ABI (/dev/crypto), as far as hwaf uses it.
 *
 * Debian ships no cryptodev header, so the definitions hwaf needs are
 * spelled here.  They are a kernel ABI: struct layouts, ioctl numbers and
 * algorithm ids must match the module bit for bit.  They match
 * cryptodev-linux 1.10 to 1.14 (crypto/cryptodev.h); CIOCCPHASH appeared in
 * 1.10, COP_FLAG_RESET in 1.5, CRYPTO_AES_XTS in 1.13 (an older module
 * refuses an XTS session, and hwaf then does not offer XTS through it).
 *
 * Not used, on purpose: CIOCGSESSION2 and its session2_op exist in the BSDs'
 * cryptodev (with a crypto-device id), not in cryptodev-linux, whose
 * CIOCGSESSION always binds the kernel's highest-priority driver for the
 * algorithm.  CRIOGET is only a dup() of the open file on Linux
 * (CRIOGET_NOT_NEEDED).  Of CIOCAUTHCRYPT only plain AEAD mode (flags 0)
 * is used: the TLS and SRTP types are authenc() compositions hwaf has no
 * use for.
 *
 * Names follow the original header so that the ABI is easy to compare.
 */
#ifndef HWAF_CRYPTODEV_ABI_H
#define HWAF_CRYPTODEV_ABI_H

#include <stdint.h>
#include <sys/ioctl.h>

/* Algorithm ids (enum cryptodev_crypto_op_t). */
enum {
    CRYPTO_SHA1_HMAC = 7,     /* "hmac(sha1)" */
    CRYPTO_AES_CBC = 11,      /* "cbc(aes)" (CRYPTO_RIJNDAEL128_CBC) */
    CRYPTO_SHA1 = 14,         /* "sha1" */
    CRYPTO_SHA2_256_HMAC = 18,/* "hmac(sha256)" */
    CRYPTO_SHA2_384_HMAC = 19,/* "hmac(sha384)" */
    CRYPTO_SHA2_512_HMAC = 20,/* "hmac(sha512)" */
    CRYPTO_AES_CTR = 21,      /* "ctr(aes)" */
    CRYPTO_AES_XTS = 22,      /* "xts(aes)", cryptodev-linux >= 1.13 */
    CRYPTO_AES_ECB = 23,      /* "ecb(aes)" */
    CRYPTO_AES_GCM = 50,      /* "gcm(aes)", an AEAD session (CIOCAUTHCRYPT) */
    CRYPTO_SHA2_224 = 103,    /* "sha224" */
    CRYPTO_SHA2_256 = 104,    /* "sha256" */
    CRYPTO_SHA2_384 = 105,    /* "sha384" */
    CRYPTO_SHA2_512 = 106,    /* "sha512" */
    CRYPTO_SHA2_224_HMAC = 107/* "hmac(sha224)" */
};

#define CRYPTODEV_MAX_ALG_NAME 64
#define CRYPTO_CIPHER_MAX_KEY_LEN 64
#define AALG_MAX_RESULT_LEN 64
/* An HMAC session's key (session_op.mackey) is at most this long. */
#define CRYPTO_HMAC_MAX_KEY_LEN 512
/* CIOCAUTHCRYPT copies the AAD into one page of its own: longer AAD is
 * refused (EINVAL). */
#define CRYPTODEV_AEAD_MAX_AAD 4096

/* Input of CIOCGSESSION: either cipher (with key) or mac; ses is output. */
struct session_op {
    uint32_t cipher;
    uint32_t mac;
    uint32_t keylen;
    uint8_t *key;
    uint32_t mackeylen;
    uint8_t *mackey;
    uint32_t ses;
};

/* Names of the kernel algorithm and driver a session is bound to. */
struct alg_info {
    char cra_name[CRYPTODEV_MAX_ALG_NAME];
    char cra_driver_name[CRYPTODEV_MAX_ALG_NAME];
};

/* Input and output of CIOCGSESSINFO. */
struct session_info_op {
    uint32_t ses;
    struct alg_info cipher_info, hash_info;
    uint16_t alignmask;  /* buffers aligned to alignmask + 1 are mapped, not copied */
    uint32_t flags;      /* SIOP_FLAG_* */
};

/* The driver has CRYPTO_ALG_KERN_DRIVER_ONLY: it runs off the CPU (an
 * engine reached only through the kernel).  Modules built for kernels
 * without that flag guess it from a list of known engine driver names. */
#define SIOP_FLAG_KERNEL_DRIVER_ONLY 1

#define COP_ENCRYPT 0
#define COP_DECRYPT 1

/* crypt_op.flags */
#define COP_FLAG_NONE 0
#define COP_FLAG_UPDATE (1 << 0)    /* hash: add data, no final */
#define COP_FLAG_FINAL (1 << 1)     /* hash: write the digest to mac */
#define COP_FLAG_WRITE_IV (1 << 2)  /* cipher: write the next IV back to iv */
#define COP_FLAG_NO_ZC (1 << 3)     /* do not map user pages */
#define COP_FLAG_RESET (1 << 6)     /* hash: start over first (with UPDATE) */

/*
 * Input of CIOCCRYPT.  For a hash session: flags 0 = reset, update, final
 * in one; UPDATE = add data (but len 0 with UPDATE alone finalises);
 * FINAL = finalise.  For a cipher session len must be a multiple of the
 * transform's block size (16 for CBC and XTS, 1 for CTR).
 */
struct crypt_op {
    uint32_t ses;
    uint16_t op;     /* COP_ENCRYPT or COP_DECRYPT */
    uint16_t flags;  /* COP_FLAG_* */
    uint32_t len;
    uint8_t *src;
    uint8_t *dst;
    uint8_t *mac;    /* digest output */
    uint8_t *iv;
};

/*
 * Input and output of CIOCAUTHCRYPT on an AEAD session (gcm(aes)), plain
 * AEAD mode: flags 0, iv of the session's IV size (12), auth_src/auth_len
 * the AAD (at most CRYPTODEV_AEAD_MAX_AAD bytes).  Encrypting, src holds
 * len bytes and dst receives len + tag_len: the ciphertext and the tag
 * right after it (the tag field is not read).  Decrypting, src holds the
 * ciphertext followed by the tag, len counting both, and dst receives
 * len - tag_len bytes of plaintext; a wrong tag fails with EBADMSG.
 * tag_len 0 means 16; a non-zero one becomes the session's tag length.
 * On return len is the output length.
 */
struct crypt_auth_op {
    uint32_t ses;
    uint16_t op;        /* COP_ENCRYPT or COP_DECRYPT */
    uint16_t flags;     /* 0: plain AEAD */
    uint32_t len;
    uint32_t auth_len;
    uint8_t *auth_src;
    uint8_t *src;
    uint8_t *dst;
    uint8_t *tag;
    uint32_t tag_len;
    uint8_t *iv;
    uint32_t iv_len;
};

/* Input of CIOCCPHASH: copy the running hash state of src_ses into dst_ses
 * (both sessions of the same open file, same hash). */
struct cphash_op {
    uint32_t dst_ses;
    uint32_t src_ses;
};

#define CRIOGET _IOWR('c', 101, uint32_t)
#define CIOCGSESSION _IOWR('c', 102, struct session_op)
#define CIOCFSESSION _IOW('c', 103, uint32_t)
#define CIOCCRYPT _IOWR('c', 104, struct crypt_op)
#define CIOCGSESSINFO _IOWR('c', 107, struct session_info_op)
#define CIOCAUTHCRYPT _IOWR('c', 109, struct crypt_auth_op)
#define CIOCCPHASH _IOW('c', 112, struct cphash_op)

/* The layouts on x86_64 (and every LP64 target), as the module sees them. */
#if defined(__x86_64__) || (defined(__LP64__) && __LP64__)
_Static_assert(sizeof(struct session_op) == 48, "session_op layout");
_Static_assert(sizeof(struct session_info_op) == 268, "session_info_op layout");
_Static_assert(sizeof(struct crypt_op) == 48, "crypt_op layout");
_Static_assert(sizeof(struct cphash_op) == 8, "cphash_op layout");
_Static_assert(sizeof(struct crypt_auth_op) == 72, "crypt_auth_op layout");
#endif
#if defined(__x86_64__)
_Static_assert(CIOCGSESSION == 0xc0306366u, "CIOCGSESSION number");
_Static_assert(CIOCFSESSION == 0x40046367u, "CIOCFSESSION number");
_Static_assert(CIOCCRYPT == 0xc0306368u, "CIOCCRYPT number");
_Static_assert(CIOCGSESSINFO == 0xc10c636bu, "CIOCGSESSINFO number");
_Static_assert(CIOCCPHASH == 0x40086370u, "CIOCCPHASH number");
_Static_assert(CIOCAUTHCRYPT == 0xc048636du, "CIOCAUTHCRYPT number");
#endif

#endif
