/*
 * The /dev/crypto backend (cryptodev-linux).
 *
 * One open file per process (devcrypto_sys.c) and one kernel session per
 * object.  A cipher operation is one CIOCCRYPT carrying the IV explicitly;
 * a hash is a session fed with COP_FLAG_UPDATE and read with
 * COP_FLAG_FINAL, copied with CIOCCPHASH; an HMAC is a hash session opened
 * with its key (mackey); a GCM message is one CIOCAUTHCRYPT in plain AEAD
 * mode.
 *
 * Things the module does not do and this file does on its behalf:
 *  - XTS data units that are not a multiple of 16 bytes: cryptodev checks
 *    the length against the transform's block size, so the unit's whole
 *    blocks but the last go through the XTS session and ciphertext stealing
 *    is done here, over two ecb(aes) sessions (tweak key and data key).
 *    XTS units larger than the device accepts in one operation are split
 *    by the mode layer (see dc_cipher_max).
 *  - Buffers that miss the session's alignment: cryptodev would copy them a
 *    page at a time (one kernel request per page, which also restarts the
 *    XTS tweak on every page); they go through an aligned bounce buffer.
 *  - Operations larger than the device takes at once (a CUSE device takes
 *    about 128 KiB): they are split, CBC and CTR chaining done here.
 *
 *  - HMAC keys longer than the module takes (512 bytes): hashed here
 *    first, as HMAC defines for keys longer than the block size.
 *  - GCM data: the module wants ciphertext and tag side by side in one
 *    buffer, so a message goes through hwaf's own buffer (which also keeps
 *    the caller's pages out of the module, see below); AAD longer than a
 *    page (which the module refuses) is refused with a reason.
 *  - Hash data in the caller's memory: it always goes through hwaf's own
 *    buffer.  cryptodev-linux pins a buffer's pages before it hashes them
 *    and, when the buffer mixes writable and read-only pages, never
 *    releases the pins it took (kernel memory lost on every such call).
 *
 * fork(): sessions belong to the open file, which parent and child share.
 * See md_fork_* below and docs/devcrypto.md.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "devcrypto_sys.h"
#include "hwaf_backend.h"
#include "hwaf_debug.h"
#include "hwaf_err.h"

#define DC_BLOCK 16
/* Largest single operation tried first, and the floor of the learned limit. */
#define DC_OP_MAX (16u << 20)
#define DC_OP_MIN 4096u
/* Bounce buffer for misaligned data: processed in pieces of this size. */
#define DC_BOUNCE 65536u
#define DC_BOUNCE_ALIGN 64u

/*
 * The largest operation the device has accepted: lowered when an operation
 * fails with ENOMEM/E2BIG (a CUSE device cannot move more than its request
 * size; a kernel short of memory cannot map a large one), shared by every
 * object since it is a property of the device.  A refusal may be passing,
 * so the limit does not stay down for the life of the process: once
 * dc_probe_wait requests have been made since the limit last moved, a
 * request larger than the limit tries up to twice it (dc_max_try).
 * Accepted, the limit rises to what went through; refused, the next try
 * waits twice as many requests (up to DC_PROBE_LAST), so a device whose
 * limit is real costs one refused request per doubling of the work, never
 * a loop.  Only paths that retry a refused request in smaller pieces (or,
 * for GCM, in software) try; a hash's final does not.  Requests are
 * counted where they are made (dc_op), once each, and a GCM request the
 * limit sends to software where it is sized (dc_aead_max with sizing set):
 * asking for the size is free, so a path may ask twice and get the same
 * answer.
 */
#define DC_PROBE_FIRST 64u
#define DC_PROBE_LAST (1u << 20)
static unsigned int dc_op_limit = DC_OP_MAX;
static unsigned int dc_probe_wait = DC_PROBE_FIRST;
static unsigned int dc_probe_count;

struct hwaf_be_cipher_st {
    const hwaf_impl *impl;
    int fd;                    /* the process's file (dc_file_get) */
    unsigned int gen;          /* ...of this fork generation */
    uint32_t ses;
    int have_ses;
    size_t align;              /* alignmask + 1 */
    unsigned char *bounce;     /* DC_BOUNCE bytes, allocated on first use */
    /* XTS only: the key (for the ecb(aes) sessions, opened on first use). */
    unsigned char key[HWAF_MAX_KEY];
    size_t keylen;
    uint32_t ecb_data, ecb_tweak;
    int have_ecb;
};

struct hwaf_be_md_st {
    const hwaf_impl *impl;
    int fd;           /* the file of ses and snap (dc_file_get) */
    unsigned int gen; /* ...of this fork generation */
    uint32_t ses;
    int have_ses;     /* 0: a session is created on first use */
    int fresh;        /* no data since open/final/reset: next op resets */
    int broken;       /* the running state was lost across fork() */
    uint32_t snap;    /* fork snapshot (a session of the same file) */
    int have_snap;
    size_t align;
    unsigned char *bounce;
    /* The last small update, held back to travel with the final (one
     * CIOCCRYPT does update + final) or flushed by the next update. */
    unsigned char *pending;
    size_t npending, pcap;
    /* HMAC: the key every session of this object is opened with (kept
     * for copies and for a child's new session after fork()). */
    unsigned char *mackey;
    size_t mackeylen;
};

struct hwaf_be_aead_st {
    const hwaf_impl *impl;
    int fd;                    /* the process's file (dc_file_get) */
    unsigned int gen;          /* ...of this fork generation */
    uint32_t ses;
    int have_ses;
    size_t align;
    unsigned char *buf;        /* data || tag, in place */
    size_t cap;
};

/* Updates up to this size are held back (copying 16 KiB costs far less
 * than an ioctl). */
#define DC_PENDING 16384u

/*
 * Per hash implementation, idle sessions for reuse: OpenSSL 3.0 frees and recreates the digest context on every
 * EVP_DigestInit_ex(), which would otherwise cost open + CIOCGSESSION +
 * CIOCGSESSINFO + CIOCFSESSION + close per digest.  A reused session's next
 * operation carries COP_FLAG_RESET.  The pool belongs to one process: a
 * child forgets the idle sessions without freeing them (its parent still
 * uses them).
 */
#define DC_POOL_MAX 8
typedef struct dc_pool_st {
    hwaf_mutex lock;  /* fork-safe: see hwaf_backend.h */
    unsigned int gen;
    int n;
    hwaf_be_md *idle[DC_POOL_MAX];
} dc_pool;

static void dc_took(size_t len);
static void dc_count_request(void);

/*
 * One CIOCCRYPT of hwaf's work (not the probe's), counted on success: an
 * operation in hwaf-devcrypto-ops is one kernel request.
 */
static int dc_op(hwaf_kind kind, int fd, uint32_t ses, int op, int flags,
                 const unsigned char *iv, const unsigned char *src,
                 unsigned char *dst, size_t len, unsigned char *mac)
{
    int r;

    dc_count_request();
    r = dc_crypt(fd, ses, op, flags, iv, src, dst, len, mac);
    if (r == 0) {
        hwaf_stats_add(HWAF_BE_DEVCRYPTO, kind, len);
        dc_took(len);
    }
    return r;
}

static unsigned int dc_limit(void)
{
    return __atomic_load_n(&dc_op_limit, __ATOMIC_RELAXED);
}

static size_t dc_cap(const hwaf_impl *impl, size_t max)
{
    if (impl->drv.req_max != 0 && impl->drv.req_max < max)
        max = impl->drv.req_max;
    return max;
}

/* The largest request for one implementation: the device's limit found so
 * far, and the driver's (request_max, docs/config.md) when it has one. */
static size_t dc_max(const hwaf_impl *impl)
{
    return dc_cap(impl, dc_limit());
}

/* The same for a path that retries a refused request smaller: above the
 * learned limit when it is time to try again. */
static size_t dc_max_try(const hwaf_impl *impl)
{
    unsigned int lim = dc_limit();

    if (lim < DC_OP_MAX
        && __atomic_load_n(&dc_probe_count, __ATOMIC_RELAXED)
           >= __atomic_load_n(&dc_probe_wait, __ATOMIC_RELAXED))
        return dc_cap(impl, lim > DC_OP_MAX / 2 ? DC_OP_MAX : 2 * (size_t)lim);
    return dc_cap(impl, lim);
}

/* One more request made since the limit last moved (only counted while
 * there is a limit to try above). */
static void dc_count_request(void)
{
    if (dc_limit() < DC_OP_MAX)
        __atomic_add_fetch(&dc_probe_count, 1, __ATOMIC_RELAXED);
}

/* After an operation of len bytes went through: a try above the limit
 * raises it (to whole DC_OP_MIN, which keeps pieces whole blocks). */
static void dc_took(size_t len)
{
    unsigned int lim = dc_limit(), now;

    if (len < (size_t)lim + DC_OP_MIN)
        return;
    now = len >= DC_OP_MAX ? DC_OP_MAX : (unsigned int)len & ~(DC_OP_MIN - 1);
    __atomic_store_n(&dc_op_limit, now, __ATOMIC_RELAXED);
    __atomic_store_n(&dc_probe_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&dc_probe_wait, DC_PROBE_FIRST, __ATOMIC_RELAXED);
    HWAF_DEBUG("device took %zu bytes in one operation; limit now %u", len, now);
}

/*
 * After a failure of an operation of len bytes: 1 when the device probably
 * refused the size and the limit was lowered, or a try above it was
 * refused (retry in smaller pieces).
 */
static int dc_too_large(int err, size_t len)
{
    unsigned int want, wait;

    if ((err != -ENOMEM && err != -E2BIG) || len <= DC_OP_MIN)
        return 0;
    __atomic_store_n(&dc_probe_count, 0, __ATOMIC_RELAXED);
    if (len > dc_limit()) {
        /* a try above the limit (or the limit lowered meanwhile) */
        wait = __atomic_load_n(&dc_probe_wait, __ATOMIC_RELAXED);
        if (wait < DC_PROBE_LAST)
            __atomic_store_n(&dc_probe_wait, 2 * wait, __ATOMIC_RELAXED);
        HWAF_DEBUG("device refused %zu bytes in one operation again; limit stays %u, "
                   "next try after %u requests", len, dc_limit(),
                   wait < DC_PROBE_LAST ? 2 * wait : wait);
        return 1;
    }
    want = (unsigned int)(len / 2) & ~(DC_OP_MIN - 1);
    if (want < DC_OP_MIN)
        want = DC_OP_MIN;
    __atomic_store_n(&dc_op_limit, want, __ATOMIC_RELAXED);
    __atomic_store_n(&dc_probe_wait, DC_PROBE_FIRST, __ATOMIC_RELAXED);
    HWAF_DEBUG("device refused %zu bytes in one operation; limit now %u",
               len, want);
    return 1;
}

/* ---- algorithm ids ---- */

/* The session ids of alg: cipher (ciphers and AEAD) or mac (hashes and
 * HMACs); for an HMAC, hash is its plain digest (to shorten long keys). */
static int dc_ids3(const hwaf_alg *alg, uint32_t *cipher, uint32_t *mac,
                   uint32_t *hash)
{
    static const struct {
        const char *kname;
        uint32_t cipher, mac, hash;
    } map[] = {
        { "cbc(aes)", CRYPTO_AES_CBC, 0, 0 },
        { "ctr(aes)", CRYPTO_AES_CTR, 0, 0 },
        { "xts(aes)", CRYPTO_AES_XTS, 0, 0 },
        { "gcm(aes)", CRYPTO_AES_GCM, 0, 0 },
        { "sha1", 0, CRYPTO_SHA1, 0 },
        { "sha224", 0, CRYPTO_SHA2_224, 0 },
        { "sha256", 0, CRYPTO_SHA2_256, 0 },
        { "sha384", 0, CRYPTO_SHA2_384, 0 },
        { "sha512", 0, CRYPTO_SHA2_512, 0 },
        { "hmac(sha1)", 0, CRYPTO_SHA1_HMAC, CRYPTO_SHA1 },
        { "hmac(sha224)", 0, CRYPTO_SHA2_224_HMAC, CRYPTO_SHA2_224 },
        { "hmac(sha256)", 0, CRYPTO_SHA2_256_HMAC, CRYPTO_SHA2_256 },
        { "hmac(sha384)", 0, CRYPTO_SHA2_384_HMAC, CRYPTO_SHA2_384 },
        { "hmac(sha512)", 0, CRYPTO_SHA2_512_HMAC, CRYPTO_SHA2_512 },
    };
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strcmp(alg->kname, map[i].kname) == 0) {
            *cipher = map[i].cipher;
            *mac = map[i].mac;
            *hash = map[i].hash;
            return 1;
        }
    }
    return 0;
}

static int dc_ids(const hwaf_alg *alg, uint32_t *cipher, uint32_t *mac)
{
    uint32_t hash;

    return dc_ids3(alg, cipher, mac, &hash);
}

static void *dc_aligned_alloc(size_t align, size_t len)
{
    void *p = NULL;

    if (align < DC_BOUNCE_ALIGN)
        align = DC_BOUNCE_ALIGN;
    if (posix_memalign(&p, align, len) != 0)
        return NULL;
    return p;
}

static int dc_aligned(const void *p, size_t align)
{
    return p == NULL || ((uintptr_t)p & (align - 1)) == 0;
}

/* ---- once per process ---- */

static int dc_available(char *why, size_t whylen)
{
    int fd = dc_open();

    if (fd < 0) {
        if (fd == -ENOENT || fd == -ENXIO || fd == -ENODEV)
            snprintf(why, whylen, "%s does not exist (the cryptodev-linux "
                     "module is not loaded)", DC_DEVICE);
        else
            snprintf(why, whylen, "cannot open %s: %s", DC_DEVICE,
                     strerror(-fd));
        return 0;
    }
    close(fd);
    return 1;
}

/* The known answer of alg through session ses of fd: 1 when it matches. */
static int dc_kat(int fd, uint32_t ses, const hwaf_alg *alg)
{
    unsigned char out[256], iv[HWAF_MAX_IV], md[AALG_MAX_RESULT_LEN];
    int r;

    if (alg->kat_out == NULL || alg->kat_inlen > sizeof(out))
        return 1;
    /* The answers are constants in hwaf's read-only data: the module gets
     * copies (see dc_cipher_op), in place. */
    memcpy(out, alg->kat_in, alg->kat_inlen);
    if (alg->kind == HWAF_KIND_AEAD) {
        /* kat_out: ciphertext || tag, IV the first 12 bytes of kat_iv. */
        unsigned char buf[256 + HWAF_GCM_TAG];

        memcpy(iv, alg->kat_iv, HWAF_GCM_IV);
        memcpy(buf, alg->kat_in, alg->kat_inlen);
        r = dc_auth_crypt(fd, ses, COP_ENCRYPT, iv, NULL, 0, buf,
                          alg->kat_inlen, HWAF_GCM_TAG);
        if (r == 0 && memcmp(buf, alg->kat_out, alg->kat_inlen + HWAF_GCM_TAG) != 0)
            r = -EBADMSG;
        if (r == 0)
            r = dc_auth_crypt(fd, ses, COP_DECRYPT, iv, NULL, 0, buf,
                              alg->kat_inlen + HWAF_GCM_TAG, HWAF_GCM_TAG);
        if (r == 0 && memcmp(buf, alg->kat_in, alg->kat_inlen) != 0)
            r = -EBADMSG;
        if (r == 0) {
            /* ...and a wrong tag must be refused. */
            memcpy(buf, alg->kat_out, alg->kat_inlen + HWAF_GCM_TAG);
            buf[alg->kat_inlen] ^= 1;
            r = dc_auth_crypt(fd, ses, COP_DECRYPT, iv, NULL, 0, buf,
                              alg->kat_inlen + HWAF_GCM_TAG, HWAF_GCM_TAG);
            r = r == -EBADMSG ? 0 : r == 0 ? -EBADMSG : r;
        }
        OPENSSL_cleanse(buf, sizeof(buf));
    } else if (alg->kind == HWAF_KIND_CIPHER) {
        memcpy(iv, alg->kat_iv, alg->ivlen);
        r = dc_crypt(fd, ses, COP_ENCRYPT, 0, iv, out, out, alg->kat_inlen,
                     NULL);
        if (r == 0 && memcmp(out, alg->kat_out, alg->kat_inlen) != 0)
            r = -EBADMSG;
        if (r == 0) {
            memcpy(iv, alg->kat_iv, alg->ivlen);
            r = dc_crypt(fd, ses, COP_DECRYPT, 0, iv, out, out,
                         alg->kat_inlen, NULL);
            if (r == 0 && memcmp(out, alg->kat_in, alg->kat_inlen) != 0)
                r = -EBADMSG;
        }
    } else {
        r = dc_crypt(fd, ses, COP_ENCRYPT, COP_FLAG_UPDATE | COP_FLAG_RESET,
                     NULL, out, out, alg->kat_inlen, NULL);
        if (r == 0)
            r = dc_crypt(fd, ses, COP_ENCRYPT, COP_FLAG_FINAL, NULL, NULL,
                         NULL, 0, md);
        if (r == 0 && memcmp(md, alg->kat_out, alg->mdlen) != 0)
            r = -EBADMSG;
    }
    if (r < 0)
        HWAF_DEBUG("devcrypto %s: known answer failed: %s", alg->kname,
                   r == -EBADMSG ? "wrong output" : strerror(-r));
    return r == 0;
}

/* FIPS-197 appendix C.1 and C.3: AES-128 and AES-256 with the key 00 01 ..
 * over 00 11 22 .. ff, as the known answers of ecb(aes) (dc_kat; no IV, so
 * kat_iv is only a pointer that is not NULL). */
static const unsigned char fips197_key[32] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f
};
static const unsigned char fips197_pt[DC_BLOCK] = {
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff
};
static const unsigned char fips197_ct[2][DC_BLOCK] = {
    { 0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4, 0xc5, 0x5a },
    { 0x8e, 0xa2, 0xb7, 0xca, 0x51, 0x67, 0x45, 0xbf, 0xea, 0xfc, 0x49, 0x90, 0x4b, 0x49, 0x60, 0x89 }
};
static const hwaf_alg ecb_kat[2] = {
    { "AES-128-ECB", "ecb(aes)", HWAF_KIND_CIPHER, HWAF_MODE_NONE, 16, 0, DC_BLOCK, 0,
      fips197_key, fips197_key, fips197_pt, fips197_ct[0], DC_BLOCK },
    { "AES-256-ECB", "ecb(aes)", HWAF_KIND_CIPHER, HWAF_MODE_NONE, 32, 0, DC_BLOCK, 0,
      fips197_key, fips197_key, fips197_pt, fips197_ct[1], DC_BLOCK },
};

/* XTS units that are not whole blocks need ecb(aes) sessions (see
 * dc_xts_partial), on whatever driver the device binds for ecb(aes), which
 * the XTS known answer (whole blocks) does not reach: 1 when the device
 * gives one and it passes FIPS-197's known answer both ways, or for other
 * algorithms.  *hw: whether that ecb(aes) driver is off the CPU
 * (SIOP_FLAG_KERNEL_DRIVER_ONLY), 1 for other algorithms. */
static int dc_xts_helpers(int fd, const hwaf_alg *alg, int *hw)
{
    const hwaf_alg *ecb = &ecb_kat[alg->keylen == 64];
    struct session_info_op info;
    uint32_t ses;
    int r;

    *hw = 1;
    if (alg->mode != HWAF_MODE_XTS)
        return 1;
    r = dc_session(fd, CRYPTO_AES_ECB, 0, ecb->kat_key, ecb->keylen, &ses);
    if (r < 0) {
        HWAF_DEBUG("devcrypto %s: no ecb(aes) session for ciphertext "
                   "stealing: %s", alg->kname, strerror(-r));
        return 0;
    }
    r = dc_session_info(fd, ses, &info);
    if (r < 0) {
        HWAF_DEBUG("devcrypto %s: CIOCGSESSINFO of ecb(aes): %s", alg->kname,
                   strerror(-r));
        r = 0;
    } else {
        *hw = (info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY) ? 1 : 0;
        HWAF_DEBUG("devcrypto %s: ecb(aes) for ciphertext stealing and split units: "
                   "driver %.*s, hw=%d", alg->kname,
                   (int)sizeof(info.cipher_info.cra_driver_name),
                   info.cipher_info.cra_driver_name, *hw);
        r = dc_kat(fd, ses, ecb);
    }
    dc_free_session(fd, ses);
    return r;
}

/*
 * /dev/crypto binds the kernel's highest-priority driver by itself: one
 * driver per algorithm, whatever CIOCGSESSINFO reports.
 */
static int dc_drivers(const hwaf_alg *alg, hwaf_driver *out, int max)
{
    struct session_info_op info;
    uint32_t cipher, mac, ses;
    const struct alg_info *ai;
    int fd, r, n = 0, engine, helpers_hw;

    if (max < 1 || !dc_ids(alg, &cipher, &mac))
        return 0;
    fd = dc_open();
    if (fd < 0)
        return 0;
    /* Ciphers and HMACs are keyed with the known answer's key. */
    r = dc_session(fd, cipher, mac,
                   alg->kind != HWAF_KIND_DIGEST ? alg->kat_key : NULL,
                   alg->kind != HWAF_KIND_DIGEST ? alg->keylen : 0, &ses);
    if (r < 0) {
        HWAF_DEBUG("devcrypto %s: no session: %s", alg->kname, strerror(-r));
        close(fd);
        return 0;
    }
    r = dc_session_info(fd, ses, &info);
    if (r < 0) {
        HWAF_DEBUG("devcrypto %s: CIOCGSESSINFO: %s", alg->kname,
                   strerror(-r));
    } else if (dc_kat(fd, ses, alg) && dc_xts_helpers(fd, alg, &helpers_hw)) {
        ai = cipher ? &info.cipher_info : &info.hash_info;
        memset(&out[0], 0, sizeof(out[0]));
        snprintf(out[0].name, sizeof(out[0].name), "%.*s",
                 (int)sizeof(ai->cra_driver_name), ai->cra_driver_name);
        out[0].priority = -1;
        engine = (info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY) != 0;
        /* An engine's request limit, as over AF_ALG (hwaf_backend.h). */
        if (engine)
            out[0].req_max = HWAF_REQ_MAX_ASYNC;
        /* XTS is hardware only when the ecb(aes) its odd-sized and split
         * units run on is too (docs/devcrypto.md). */
        out[0].hw = engine && helpers_hw;
        HWAF_DEBUG("devcrypto %s: driver %s, hw=%d, alignmask %u, request max %zu",
                   alg->kname, out[0].name, out[0].hw, info.alignmask, out[0].req_max);
        n = out[0].name[0] != '\0';
    }
    dc_free_session(fd, ses);
    close(fd);
    return n;
}

/* ---- ciphers ---- */

static void dc_cipher_free(hwaf_be_cipher *s, int kernel)
{
    if (s == NULL)
        return;
    if (kernel && s->fd >= 0) {
        if (s->have_ses)
            dc_free_session(s->fd, s->ses);
        if (s->have_ecb) {
            dc_free_session(s->fd, s->ecb_data);
            dc_free_session(s->fd, s->ecb_tweak);
        }
    }
    dc_file_put(s->fd, s->gen);
    if (s->bounce != NULL) {
        OPENSSL_cleanse(s->bounce, DC_BOUNCE);
        free(s->bounce);
    }
    OPENSSL_cleanse(s->key, sizeof(s->key));
    free(s);
}

static void dc_cipher_close(hwaf_be_cipher *s)
{
    dc_cipher_free(s, 1);
}

/* In a child: the parent still uses the sessions of the shared file. */
static void dc_cipher_abandon(hwaf_be_cipher *s)
{
    dc_cipher_free(s, 0);
}

/*
 * A keyed session of impl's cipher or AEAD in the process's file (*fd,
 * *gen: dc_file_get), checked to be bound to the driver impl offers: 1, or
 * 0 with an error raised (the caller frees what *fd and *have_ses say it
 * holds).  *align receives the session's alignment.
 */
static int dc_bind(const hwaf_impl *impl, int *fd, unsigned int *gen,
                   const unsigned char *key, size_t keylen, uint32_t *ses,
                   int *have_ses, size_t *align)
{
    const hwaf_alg *alg = impl->alg;
    struct session_info_op info;
    uint32_t cipher, mac;
    const char *drv;
    int r;

    *align = 1;
    *fd = dc_file_get(gen);

    if (!dc_ids(alg, &cipher, &mac) || cipher == 0) {
        HWAF_RAISE(impl->prov, HWAF_R_BACKEND_UNAVAILABLE,
                   "devcrypto has no cipher %s", alg->kname);
        return 0;
    }
    if (keylen == 0 || keylen > HWAF_MAX_KEY) {
        HWAF_RAISE(impl->prov, HWAF_R_INVALID_KEY_LENGTH, "key length %zu",
                   keylen);
        return 0;
    }
    if (*fd < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_BACKEND_UNAVAILABLE, -*fd,
                       "open(" DC_DEVICE ")");
        return 0;
    }
    r = dc_session(*fd, cipher, 0, key, keylen, ses);
    if (r < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "ioctl(CIOCGSESSION)");
        return 0;
    }
    *have_ses = 1;
    r = dc_session_info(*fd, *ses, &info);
    if (r < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "ioctl(CIOCGSESSINFO)");
        return 0;
    }
    *align = (size_t)info.alignmask + 1;
    drv = info.cipher_info.cra_driver_name;
    if (strncmp(drv, impl->drv.name, sizeof(info.cipher_info.cra_driver_name)) != 0) {
        /* A driver loaded since the probe outranks the one offered. */
        if (impl->hw && !(info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY)) {
            HWAF_RAISE(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED,
                       "/dev/crypto now binds %.64s instead of hardware driver %s",
                       drv, impl->drv.name);
            return 0;
        }
        HWAF_DEBUG("devcrypto %s: bound %.64s, offered as %s", alg->kname,
                   drv, impl->drv.name);
    }
    return 1;
}

static int dc_cipher_open(hwaf_be_cipher **out, const hwaf_impl *impl,
                          const unsigned char *key, size_t keylen)
{
    hwaf_be_cipher *s;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto cipher");
        return 0;
    }
    s->impl = impl;
    if (!dc_bind(impl, &s->fd, &s->gen, key, keylen, &s->ses, &s->have_ses, &s->align))
        goto err;
    if (impl->alg->mode == HWAF_MODE_XTS) {
        memcpy(s->key, key, keylen);
        s->keylen = keylen;
    }
    *out = s;
    return 1;
 err:
    dc_cipher_free(s, 1);
    return 0;
}

/* 128-bit big-endian counter += blocks (the kernel's ctr(aes) and OpenSSL's). */
static void dc_ctr_add(unsigned char ctr[DC_BLOCK], uint64_t blocks)
{
    int i;

    for (i = DC_BLOCK - 1; i >= 0 && blocks != 0; i--) {
        blocks += ctr[i];
        ctr[i] = (unsigned char)blocks;
        blocks >>= 8;
    }
}

/*
 * One device operation on s's session, whatever the alignment of in/out;
 * len at most the device limit (or DC_BOUNCE when misaligned).
 */
static int dc_cipher_op(hwaf_be_cipher *s, uint32_t ses, int op,
                        const unsigned char *iv, const unsigned char *in,
                        unsigned char *out, size_t len)
{
    unsigned char ivbuf[HWAF_MAX_IV];
    unsigned char *tmp = NULL;
    int r;

    /* The module may write the next IV back: never into the caller's. */
    if (iv != NULL) {
        memcpy(ivbuf, iv, DC_BLOCK);
        iv = ivbuf;
    }
    /* Always in place in the caller's output buffer: the module marks
     * every page it mapped dirty, a read-only source included, and the
     * source may be a read-only file mapping (constants of a program). */
    if (dc_aligned(out, s->align)) {
        if (in != out)
            memmove(out, in, len);
        return dc_op(s->impl->alg->kind, s->fd, ses, op, 0, iv, out, out, len, NULL);
    }
    if (len <= DC_BOUNCE) {
        if (s->bounce == NULL
            && (s->bounce = dc_aligned_alloc(s->align, DC_BOUNCE)) == NULL)
            return -ENOMEM;
        tmp = s->bounce;
    } else if ((tmp = dc_aligned_alloc(s->align, len)) == NULL) {
        return -ENOMEM;
    }
    memcpy(tmp, in, len);
    r = dc_op(s->impl->alg->kind, s->fd, ses, op, 0, iv, tmp, tmp, len, NULL);
    if (r == 0)
        memcpy(out, tmp, len);
    if (tmp != s->bounce) {
        OPENSSL_cleanse(tmp, len);
        free(tmp);
    }
    return r;
}

/* CBC and CTR: split at the device limit, chaining the IV here. */
static int dc_chain_crypt(hwaf_be_cipher *s, int enc,
                          const unsigned char *iv, const unsigned char *in,
                          unsigned char *out, size_t len)
{
    hwaf_mode mode = s->impl->alg->mode;
    unsigned char cur[DC_BLOCK], next[DC_BLOCK] = { 0 };
    size_t n, max;
    int r;

    memcpy(cur, iv, DC_BLOCK);
    while (len > 0) {
        max = dc_max_try(s->impl);
        if (!dc_aligned(out, s->align) && max > DC_BOUNCE)
            max = DC_BOUNCE;
        n = len < max ? len : max;
        /* CBC decrypt: the next IV is the last input block, which an
         * in-place operation overwrites. */
        if (mode == HWAF_MODE_CBC && !enc)
            memcpy(next, in + n - DC_BLOCK, DC_BLOCK);
        r = dc_cipher_op(s, s->ses, enc ? COP_ENCRYPT : COP_DECRYPT, cur, in,
                         out, n);
        if (r < 0) {
            if (dc_too_large(r, n))
                continue;
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                           "ioctl(CIOCCRYPT)");
            return 0;
        }
        if (n < len) {
            if (mode == HWAF_MODE_CTR)
                dc_ctr_add(cur, n / DC_BLOCK);
            else if (enc)
                memcpy(cur, out + n - DC_BLOCK, DC_BLOCK);
            else
                memcpy(cur, next, DC_BLOCK);
        }
        in += n;
        out += n;
        len -= n;
    }
    return 1;
}

static void dc_xor(unsigned char *d, const unsigned char *a,
                   const unsigned char *b, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        d[i] = a[i] ^ b[i];
}

/* The two ecb(aes) sessions (data key, tweak key), opened on first use. */
static int dc_xts_ecb_open(hwaf_be_cipher *s)
{
    size_t half = s->keylen / 2;
    int r;

    if (s->have_ecb)
        return 0;
    r = dc_session(s->fd, CRYPTO_AES_ECB, 0, s->key, half, &s->ecb_data);
    if (r < 0)
        return r;
    r = dc_session(s->fd, CRYPTO_AES_ECB, 0, s->key + half, half, &s->ecb_tweak);
    if (r < 0) {
        dc_free_session(s->fd, s->ecb_data);
        return r;
    }
    s->have_ecb = 1;
    return 0;
}

/* One XTS block with tweak t through the ecb(aes) data-key session. */
static int dc_xts_block(hwaf_be_cipher *s, int enc, const unsigned char *t,
                        const unsigned char *in, unsigned char *out)
{
    unsigned char b[DC_BLOCK];
    int r;

    dc_xor(b, in, t, DC_BLOCK);
    r = dc_cipher_op(s, s->ecb_data, enc ? COP_ENCRYPT : COP_DECRYPT, NULL,
                     b, b, DC_BLOCK);
    dc_xor(out, b, t, DC_BLOCK);
    OPENSSL_cleanse(b, sizeof(b));
    return r;
}

/*
 * Ciphertext stealing (IEEE 1619 5.3.2 / 5.4.2) over the ecb(aes) data-key
 * session: the unit's last whole block (last, tweak t = T(m-1)) and its
 * partial block (tail, b bytes, tweak T(m)), written to out.  Returns 0 or
 * -errno.
 */
static int dc_xts_steal(hwaf_be_cipher *s, int enc, const unsigned char *t,
                        const unsigned char *last, const unsigned char *tail,
                        size_t b, unsigned char *out)
{
    unsigned char t_next[DC_BLOCK], pp[DC_BLOCK], cc[DC_BLOCK];
    int r;

    memcpy(t_next, t, DC_BLOCK);
    hwaf_xts_mul(t_next, 1);
    if (enc) {
        if ((r = dc_xts_block(s, 1, t, last, cc)) < 0)
            goto end;
        memcpy(pp, tail, b);
        memcpy(pp + b, cc + b, DC_BLOCK - b);
        if ((r = dc_xts_block(s, 1, t_next, pp, out)) < 0)
            goto end;
        memcpy(out + DC_BLOCK, cc, b);
    } else {
        if ((r = dc_xts_block(s, 0, t_next, last, pp)) < 0)
            goto end;
        memcpy(cc, tail, b);
        memcpy(cc + b, pp + b, DC_BLOCK - b);
        if ((r = dc_xts_block(s, 0, t, cc, out)) < 0)
            goto end;
        memcpy(out + DC_BLOCK, pp, b);
    }
    r = 0;
 end:
    OPENSSL_cleanse(t_next, sizeof(t_next));
    OPENSSL_cleanse(pp, sizeof(pp));
    OPENSSL_cleanse(cc, sizeof(cc));
    return r;
}

/*
 * XTS done over ecb(aes) alone, every tweak computed here: for a unit the
 * device refused for its size (its whole blocks go in pieces of what the
 * device took).  Returns 0 or -errno.
 */
static int dc_xts_slow(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                       const unsigned char *in, unsigned char *out, size_t len)
{
    size_t m = len / DC_BLOCK, b = len % DC_BLOCK;
    size_t bulk = (b != 0 ? m - 1 : m) * DC_BLOCK, done = 0, n, i, piece;
    unsigned char t[DC_BLOCK], t_next[DC_BLOCK], last[DC_BLOCK], tail[DC_BLOCK];
    unsigned char *buf = NULL, *tw = NULL;
    int r;

    if ((r = dc_xts_ecb_open(s)) < 0)
        return r;
    /* T0 = E_K2(IV) */
    r = dc_cipher_op(s, s->ecb_tweak, COP_ENCRYPT, NULL, iv, t, DC_BLOCK);
    if (r < 0)
        return r;
    /* The stolen tail's blocks, saved before an in-place bulk pass. */
    if (b != 0) {
        memcpy(last, in + bulk, DC_BLOCK);
        memcpy(tail, in + bulk + DC_BLOCK, b);
    }
    piece = dc_max_try(s->impl);
    if (piece > DC_BOUNCE)
        piece = DC_BOUNCE;
    if (bulk > 0) {
        n = bulk < piece ? bulk : piece;
        buf = dc_aligned_alloc(s->align, n);
        tw = malloc(n);
        if (buf == NULL || tw == NULL) {
            r = -ENOMEM;
            goto end;
        }
    }
    while (done < bulk) {
        n = bulk - done < piece ? bulk - done : piece;
        memcpy(t_next, t, DC_BLOCK);
        for (i = 0; i < n; i += DC_BLOCK) {
            memcpy(tw + i, t, DC_BLOCK);
            hwaf_xts_mul(t, 1);
        }
        dc_xor(buf, in + done, tw, n);
        r = dc_op(s->impl->alg->kind, s->fd, s->ecb_data, enc ? COP_ENCRYPT : COP_DECRYPT, 0,
                     NULL, buf, buf, n, NULL);
        if (r < 0 && dc_too_large(r, n)) {
            memcpy(t, t_next, DC_BLOCK);  /* this piece again, smaller */
            piece = dc_max(s->impl) < piece ? dc_max(s->impl) : piece / 2;
            continue;
        }
        if (r < 0)
            goto end;
        dc_xor(out + done, buf, tw, n);
        done += n;
    }
    /* t is now T(m-1) */
    r = b != 0 ? dc_xts_steal(s, enc, t, last, tail, b, out + bulk) : 0;
 end:
    if (buf != NULL) {
        OPENSSL_cleanse(buf, bulk < piece ? bulk : piece);
        free(buf);
    }
    free(tw);
    OPENSSL_cleanse(t, sizeof(t));
    OPENSSL_cleanse(last, sizeof(last));
    OPENSSL_cleanse(tail, sizeof(tail));
    return r;
}

/*
 * A unit that ends in a partial block: its whole blocks but the last through
 * the XTS session itself (their tweaks are the unit's own, T(0)..T(m-2)),
 * the last whole block and the partial one stolen over ecb(aes) with
 * T(m-1) = E_K2(IV) * x^(m-1).  A device that refuses those whole blocks
 * for their size gets the unit over ecb(aes) alone.  Returns 0 or -errno.
 */
static int dc_xts_partial(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                          const unsigned char *in, unsigned char *out, size_t len)
{
    size_t b = len % DC_BLOCK, bulk = len - DC_BLOCK - b;
    unsigned char t[DC_BLOCK], last[DC_BLOCK], tail[DC_BLOCK];
    int r;

    if ((r = dc_xts_ecb_open(s)) < 0)
        return r;
    /* The stolen blocks, saved before the bulk pass writes out. */
    memcpy(last, in + bulk, DC_BLOCK);
    memcpy(tail, in + bulk + DC_BLOCK, b);
    if (bulk > 0) {
        r = dc_cipher_op(s, s->ses, enc ? COP_ENCRYPT : COP_DECRYPT, iv, in, out, bulk);
        if (r < 0) {
            if (dc_too_large(r, bulk))
                r = dc_xts_slow(s, enc, iv, in, out, len);
            goto end;
        }
    }
    r = dc_cipher_op(s, s->ecb_tweak, COP_ENCRYPT, NULL, iv, t, DC_BLOCK);
    if (r < 0)
        goto end;
    hwaf_xts_mul(t, bulk / DC_BLOCK);
    r = dc_xts_steal(s, enc, t, last, tail, b, out + bulk);
 end:
    OPENSSL_cleanse(t, sizeof(t));
    OPENSSL_cleanse(last, sizeof(last));
    OPENSSL_cleanse(tail, sizeof(tail));
    return r;
}

static int dc_xts_crypt(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                        const unsigned char *in, unsigned char *out, size_t len)
{
    int r;

    if (len < DC_BLOCK) {
        HWAF_RAISE(s->impl->prov, HWAF_R_XTS_DATA_UNIT_TOO_SMALL,
                   "%zu bytes", len);
        return 0;
    }
    if (len > dc_max_try(s->impl)) {
        r = dc_xts_slow(s, enc, iv, in, out, len);
    } else if (len % DC_BLOCK != 0) {
        r = dc_xts_partial(s, enc, iv, in, out, len);
    } else {
        r = dc_cipher_op(s, s->ses, enc ? COP_ENCRYPT : COP_DECRYPT, iv, in, out, len);
        if (r < 0 && dc_too_large(r, len))
            r = dc_xts_slow(s, enc, iv, in, out, len);
    }
    if (r == 0)
        return 1;
    HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                   "ioctl(CIOCCRYPT)");
    return 0;
}

static int dc_cipher_crypt(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                           const unsigned char *in, unsigned char *out,
                           size_t len)
{
    int ok;

    if (len == 0)
        return 1;
    if (s->impl->alg->mode == HWAF_MODE_XTS)
        ok = dc_xts_crypt(s, enc, iv, in, out, len);
    else
        ok = dc_chain_crypt(s, enc, iv, in, out, len);
    return ok;
}

/* CBC and CTR work of any size is split here: no practical limit.  An
 * XTS unit larger than the device takes is split by the mode layer
 * (xts_split in hwaf_cipher.c: each piece through the XTS session with its
 * own IV), so its limit is the device's; a unit the device still refuses
 * for its size is done here over ecb(aes) (dc_xts_slow). */
static size_t dc_cipher_max(hwaf_be_cipher *s)
{
    if (s->impl->alg->mode == HWAF_MODE_XTS)
        return dc_max_try(s->impl);
    return (size_t)1 << 30;
}

/* ---- digests ---- */

static void dc_md_free(hwaf_be_md *s, int kernel);

/* Take the pool's lock, emptying it first in a child after fork(). */
static dc_pool *dc_pool_lock(const hwaf_impl *impl)
{
    dc_pool *p = impl->be_data;

    hwaf_mutex_lock(&p->lock);
    if (p->gen != hwaf_fork_generation) {
        while (p->n > 0)
            dc_md_free(p->idle[--p->n], 0);
        p->gen = hwaf_fork_generation;
    }
    return p;
}

static void dc_md_close(hwaf_be_md *s)
{
    dc_pool *p;

    if (s == NULL)
        return;
    if (s->fd >= 0 && s->have_ses && !s->broken && !s->have_snap
        && s->gen == hwaf_fork_generation && s->impl->be_data != NULL) {
        p = dc_pool_lock(s->impl);
        if (p->n < DC_POOL_MAX) {
            s->fresh = 1;
            s->npending = 0;
            p->idle[p->n++] = s;
            s = NULL;
        }
        hwaf_mutex_unlock(&p->lock);
        if (s == NULL)
            return;
    }
    dc_md_free(s, 1);
}

/* kernel: also free the sessions (not in a child: they are the parent's). */
static void dc_md_free(hwaf_be_md *s, int kernel)
{
    if (s->mackey != NULL)
        OPENSSL_clear_free(s->mackey, s->mackeylen);
    if (s->pending != NULL) {
        OPENSSL_cleanse(s->pending, s->pcap);
        free(s->pending);
    }
    if (s->fd >= 0 && kernel) {
        if (s->have_ses)
            dc_free_session(s->fd, s->ses);
        if (s->have_snap)
            dc_free_session(s->fd, s->snap);
    }
    dc_file_put(s->fd, s->gen);
    if (s->bounce != NULL) {
        OPENSSL_cleanse(s->bounce, DC_BOUNCE);
        free(s->bounce);
    }
    free(s);
}

/* A hash session on s->fd, its alignment recorded. */
static int dc_md_session(hwaf_be_md *s, uint32_t *ses)
{
    struct session_info_op info;
    uint32_t cipher, mac;
    int r;

    if (!dc_ids(s->impl->alg, &cipher, &mac) || mac == 0)
        return -EINVAL;
    r = dc_session(s->fd, 0, mac, s->mackey, s->mackeylen, ses);
    if (r < 0)
        return r;
    if (dc_session_info(s->fd, *ses, &info) == 0)
        s->align = (size_t)info.alignmask + 1;
    return 0;
}

static int dc_md_ready(hwaf_be_md *s)
{
    int r;

    if (s->broken) {
        HWAF_RAISE(s->impl->prov, HWAF_R_FORK_RECOVERY_FAILED,
                   "the running hash state was lost at fork()");
        return 0;
    }
    if (s->have_ses)
        return 1;
    if (s->gen != hwaf_fork_generation) {
        /* A child's new session goes in a file of its own. */
        dc_file_put(s->fd, s->gen);
        s->fd = dc_file_get(&s->gen);
        if (s->fd < 0) {
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_BACKEND_UNAVAILABLE, -s->fd,
                           "open(" DC_DEVICE ")");
            return 0;
        }
    }
    r = dc_md_session(s, &s->ses);
    if (r < 0) {
        HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "ioctl(CIOCGSESSION)");
        return 0;
    }
    s->have_ses = 1;
    s->fresh = 1;
    return 1;
}

static int dc_md_open(hwaf_be_md **out, const hwaf_impl *impl)
{
    hwaf_be_md *s = NULL;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    if (impl->be_data != NULL) {
        dc_pool *p = dc_pool_lock(impl);

        if (p->n > 0)
            s = p->idle[--p->n];
        hwaf_mutex_unlock(&p->lock);
        if (s != NULL) {
            *out = s;
            return 1;
        }
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto digest");
        return 0;
    }
    s->impl = impl;
    s->align = 1;
    s->fresh = 1;
    s->fd = dc_file_get(&s->gen);
    if (s->fd < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_BACKEND_UNAVAILABLE, -s->fd,
                       "open(" DC_DEVICE ")");
        dc_md_close(s);
        return 0;
    }
    if (!dc_md_ready(s)) {
        dc_md_close(s);
        return 0;
    }
    *out = s;
    return 1;
}

/*
 * HMAC: a hash session opened with the key.  A key longer than the module
 * takes is replaced by its digest (HMAC's own rule for keys longer than
 * the block size, so the result is the same), computed by a plain hash
 * session of the same file.
 */
static int dc_mac_open(hwaf_be_md **out, const hwaf_impl *impl,
                       const unsigned char *key, size_t keylen)
{
    uint32_t cipher, mac, hash, ses;
    hwaf_be_md *s;
    unsigned char *buf;
    int r;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    if (!dc_ids3(impl->alg, &cipher, &mac, &hash) || mac == 0 || hash == 0) {
        HWAF_RAISE(impl->prov, HWAF_R_BACKEND_UNAVAILABLE,
                   "devcrypto has no HMAC %s", impl->alg->kname);
        return 0;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto hmac");
        return 0;
    }
    s->impl = impl;
    s->align = 1;
    s->fresh = 1;
    s->fd = dc_file_get(&s->gen);
    if (s->fd < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_BACKEND_UNAVAILABLE, -s->fd,
                       "open(" DC_DEVICE ")");
        goto err;
    }
    s->mackeylen = keylen > CRYPTO_HMAC_MAX_KEY_LEN ? impl->alg->mdlen : keylen;
    s->mackey = OPENSSL_malloc(s->mackeylen ? s->mackeylen : 1);
    if (s->mackey == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto hmac");
        goto err;
    }
    if (keylen <= CRYPTO_HMAC_MAX_KEY_LEN) {
        if (keylen > 0)
            memcpy(s->mackey, key, keylen);
    } else {
        /* Through hwaf's own buffer, as all hash data (dc_md_feed). */
        buf = OPENSSL_malloc(keylen);
        r = buf == NULL ? -ENOMEM : dc_session(s->fd, 0, hash, NULL, 0, &ses);
        if (r == 0) {
            unsigned char md[AALG_MAX_RESULT_LEN];

            memcpy(buf, key, keylen);
            r = dc_crypt(s->fd, ses, COP_ENCRYPT, 0, NULL, buf, buf, keylen, md);
            dc_free_session(s->fd, ses);
            if (r == 0)
                memcpy(s->mackey, md, s->mackeylen);
            OPENSSL_cleanse(md, sizeof(md));
        }
        OPENSSL_clear_free(buf, keylen);
        if (r < 0) {
            HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                           "ioctl(CIOCCRYPT) hashing a long HMAC key");
            goto err;
        }
    }
    if (!dc_md_ready(s))
        goto err;
    *out = s;
    return 1;
 err:
    dc_md_free(s, 1);
    return 0;
}

static int dc_md_feed(hwaf_be_md *s, const unsigned char *in, size_t len);

/* Send what was held back as a plain update. */
static int dc_md_flush(hwaf_be_md *s)
{
    size_t n = s->npending;

    if (n == 0)
        return 1;
    s->npending = 0;
    return dc_md_feed(s, s->pending, n);
}

/* Room for need bytes held back: grown by doubling, so that thousands of
 * live contexts hashing short messages do not each hold DC_PENDING. */
static int dc_md_grow(hwaf_be_md *s, size_t need)
{
    size_t cap = s->pcap ? s->pcap : 256;
    unsigned char *p;

    while (cap < need)
        cap *= 2;
    if (cap > DC_PENDING)
        cap = DC_PENDING;
    p = dc_aligned_alloc(s->align > 16 ? s->align : 16, cap);
    if (p == NULL) {
        HWAF_RAISE(s->impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto digest");
        return 0;
    }
    if (s->pending != NULL) {
        memcpy(p, s->pending, s->npending);
        OPENSSL_cleanse(s->pending, s->pcap);
        free(s->pending);
    }
    s->pending = p;
    s->pcap = cap;
    return 1;
}

static int dc_md_update(hwaf_be_md *s, const unsigned char *in, size_t len)
{
    if (len == 0)
        return s->broken ? dc_md_ready(s) : 1;
    if (s->npending + len <= DC_PENDING && !s->broken) {
        if (s->npending + len > s->pcap && !dc_md_grow(s, s->npending + len))
            return 0;
        memcpy(s->pending + s->npending, in, len);
        s->npending += len;
        return 1;
    }
    return dc_md_flush(s) && dc_md_feed(s, in, len);
}

static int dc_md_feed(hwaf_be_md *s, const unsigned char *in, size_t len)
{
    const unsigned char *src;
    size_t n, max;
    int r;

    /* COP_FLAG_UPDATE with no data would finalise: nothing to do. */
    if (len == 0)
        return s->broken ? dc_md_ready(s) : 1;
    if (!dc_md_ready(s))
        return 0;
    if (s->bounce == NULL
        && (s->bounce = dc_aligned_alloc(s->align, DC_BOUNCE)) == NULL) {
        HWAF_RAISE(s->impl->prov, HWAF_R_MALLOC_FAILURE, "bounce");
        return 0;
    }
    while (len > 0) {
        max = dc_max_try(s->impl);
        if (max > DC_BOUNCE)
            max = DC_BOUNCE;
        n = len < max ? len : max;
        /*
         * Never the caller's pages: cryptodev-linux pins them for writing
         * when dst = src (it marks every page it mapped dirty, so hwaf does
         * not offer it a read-only file's page cache with dst = NULL), and
         * a buffer that mixes writable and read-only pages makes it fail
         * half-way and never release the pins it took.  hwaf's own buffer
         * is writable throughout.  A hash session never writes to dst.
         */
        memcpy(s->bounce, in, n);
        src = s->bounce;
        r = dc_op(s->impl->alg->kind, s->fd, s->ses, COP_ENCRYPT,
                     COP_FLAG_UPDATE | (s->fresh ? COP_FLAG_RESET : 0), NULL,
                     src, (unsigned char *)src, n, NULL);
        if (r < 0) {
            if (dc_too_large(r, n))
                continue;
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                           "ioctl(CIOCCRYPT)");
            return 0;
        }
        s->fresh = 0;
        in += n;
        len -= n;
    }
    return 1;
}

static int dc_md_final(hwaf_be_md *s, unsigned char *md)
{
    unsigned char buf[AALG_MAX_RESULT_LEN];
    int r;

    if (!dc_md_ready(s))
        return 0;
    /* More held back than the driver takes in one request: as updates. */
    if (s->npending > dc_max(s->impl) && !dc_md_flush(s))
        return 0;
    /* What was held back goes with the final: update + final, one ioctl
     * (dst = src, as dc_md_feed explains). */
    r = dc_op(s->impl->alg->kind, s->fd, s->ses, COP_ENCRYPT,
                 COP_FLAG_FINAL | (s->fresh ? COP_FLAG_RESET : 0), NULL,
                 s->npending > 0 ? s->pending : NULL,
                 s->npending > 0 ? s->pending : NULL, s->npending, buf);
    s->npending = 0;
    if (r < 0) {
        HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "ioctl(CIOCCRYPT)");
        return 0;
    }
    memcpy(md, buf, s->impl->alg->mdlen);
    s->fresh = 1;
    return 1;
}

static int dc_md_reset(hwaf_be_md *s)
{
    /* The next operation carries COP_FLAG_RESET. */
    s->fresh = 1;
    s->npending = 0;
    s->broken = 0;
    return 1;
}

/* A new object with a copy of the running state, its session in the same
 * open file (CIOCCPHASH needs both sessions in one file). */
static int dc_md_dup(hwaf_be_md **out, hwaf_be_md *s)
{
    hwaf_be_md *d;
    struct cphash_op cp;
    int r;

    *out = NULL;
    if (!hwaf_sandbox_allows(s->impl->prov))
        return 0;
    if (s->broken) {
        HWAF_RAISE(s->impl->prov, HWAF_R_FORK_RECOVERY_FAILED,
                   "the running hash state was lost at fork()");
        return 0;
    }
    if (!dc_md_flush(s))
        return 0;
    d = calloc(1, sizeof(*d));
    if (d == NULL) {
        HWAF_RAISE(s->impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto digest");
        return 0;
    }
    d->impl = s->impl;
    d->align = s->align;
    d->fresh = 1;
    d->fd = -1;
    if (s->mackey != NULL) {
        d->mackey = OPENSSL_memdup(s->mackey, s->mackeylen ? s->mackeylen : 1);
        if (d->mackey == NULL) {
            HWAF_RAISE(s->impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto hmac");
            goto err;
        }
        d->mackeylen = s->mackeylen;
    }
    if (!s->have_ses) {
        /* Nothing to copy: a session on first use, as a new object. */
        d->fd = dc_file_get(&d->gen);
        if (d->fd < 0) {
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_BACKEND_UNAVAILABLE, -d->fd,
                           "open(" DC_DEVICE ")");
            goto err;
        }
        *out = d;
        return 1;
    }
    if (s->gen == hwaf_fork_generation) {
        d->fd = dc_file_get(&d->gen);  /* s holds it: the same file */
    } else {
        d->fd = s->fd;  /* a child's session in its parent's file */
        d->gen = s->gen;
    }
    if (d->fd != s->fd) {
        HWAF_RAISE(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED,
                   "/dev/crypto: no descriptor for the copy");
        goto err;
    }
    r = dc_md_session(d, &d->ses);
    if (r < 0) {
        HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "ioctl(CIOCGSESSION)");
        goto err;
    }
    d->have_ses = 1;
    if (!s->fresh) {
        cp.dst_ses = d->ses;
        cp.src_ses = s->ses;
        r = dc_ioctl(d->fd, CIOCCPHASH, &cp);
        if (r < 0) {
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                           "ioctl(CIOCCPHASH)");
            goto err;
        }
        d->fresh = 0;
    }
    *out = d;
    return 1;
 err:
    dc_md_close(d);
    return 0;
}

/*
 * fork(): the child shares the open file and so every session in it.  In
 * the parent, just before fork(), the running state is copied into a new
 * session of the same file (the snapshot).  After fork() the parent forgets
 * the snapshot without freeing it, and the child adopts it and forgets the
 * parent's session: each process then frees only its own session, so
 * neither can destroy the other's.  The cost: a snapshot stays in the file
 * until the child frees it or the last process closes the file, and one
 * made for a fork() that failed stays until the parent closes the object.
 */
static int dc_md_fork_prepare(hwaf_be_md *s)
{
    struct cphash_op cp;
    int r;

    s->have_snap = 0;
    if (!s->have_ses || s->fresh || s->broken)
        return 1;  /* nothing running: the child starts a session of its own */
    r = dc_md_session(s, &s->snap);
    if (r == 0) {
        cp.dst_ses = s->snap;
        cp.src_ses = s->ses;
        r = dc_ioctl(s->fd, CIOCCPHASH, &cp);
        if (r < 0)
            dc_free_session(s->fd, s->snap);
    }
    if (r < 0) {
        /* Nothing raised: this runs inside fork(), and the parent's error
         * queue is none of its business.  The child reports it on use. */
        HWAF_DEBUG("devcrypto: no fork snapshot of a running hash: %s",
                   strerror(-r));
        return 0;
    }
    s->have_snap = 1;
    return 1;
}

static void dc_md_fork_parent(hwaf_be_md *s)
{
    s->have_snap = 0;  /* the child's now */
}

static void dc_md_fork_child(hwaf_be_md *s)
{
    if (s->have_snap) {
        s->ses = s->snap;
        s->have_snap = 0;
    } else {
        if (s->have_ses && !s->fresh && !s->broken)
            s->broken = 1;  /* the snapshot could not be taken */
        s->have_ses = 0;    /* the parent's: a new one on first use */
    }
}

/* ---- AEAD (gcm(aes)) ---- */

static void dc_aead_free(hwaf_be_aead *s, int kernel)
{
    if (s == NULL)
        return;
    if (kernel && s->fd >= 0 && s->have_ses)
        dc_free_session(s->fd, s->ses);
    dc_file_put(s->fd, s->gen);
    if (s->buf != NULL) {
        OPENSSL_cleanse(s->buf, s->cap);
        free(s->buf);
    }
    free(s);
}

static void dc_aead_close(hwaf_be_aead *s)
{
    dc_aead_free(s, 1);
}

/* In a child: the session is the parent's. */
static void dc_aead_abandon(hwaf_be_aead *s)
{
    dc_aead_free(s, 0);
}

static int dc_aead_open(hwaf_be_aead **out, const hwaf_impl *impl,
                        const unsigned char *key, size_t keylen)
{
    hwaf_be_aead *s;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto aead");
        return 0;
    }
    s->impl = impl;
    if (!dc_bind(impl, &s->fd, &s->gen, key, keylen, &s->ses, &s->have_ses, &s->align)) {
        dc_aead_free(s, 1);
        return 0;
    }
    *out = s;
    return 1;
}

/* Data and tag go in one operation of at most the device's (and the
 * driver's, request_max) limit; the AAD, at most one page, beside them.
 * Sizing a request (whether it then comes here or goes to software)
 * counts it. */
static size_t dc_aead_max(hwaf_be_aead *s, size_t aadlen, int sizing)
{
    if (aadlen > CRYPTODEV_AEAD_MAX_AAD)
        return 0;
    if (sizing)
        dc_count_request();
    return dc_max_try(s->impl) - HWAF_GCM_TAG;
}

/*
 * One GCM message in hwaf's buffer: data || tag, in place.  The AAD is
 * read by the module with copy_from_user (never pinned).
 */
static int dc_aead_crypt(hwaf_be_aead *s, int enc, const unsigned char *iv,
                         const unsigned char *aad, size_t aadlen,
                         const unsigned char *in, unsigned char *out,
                         size_t len, unsigned char *tag, int owned)
{
    const hwaf_impl *impl = s->impl;
    unsigned char ivbuf[HWAF_GCM_IV];
    size_t need = len + HWAF_GCM_TAG;
    int r;

    if (aadlen > CRYPTODEV_AEAD_MAX_AAD) {
        HWAF_RAISE(impl->prov, HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                   "%zu bytes of AAD; /dev/crypto takes at most %d", aadlen,
                   CRYPTODEV_AEAD_MAX_AAD);
        return 0;
    }
    if (len > dc_aead_max(s, 0, 0)) {
        HWAF_RAISE(impl->prov, HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                   "%zu bytes of data, at most %zu in one /dev/crypto operation",
                   len, dc_aead_max(s, 0, 0));
        return 0;
    }
    if (need > s->cap) {
        unsigned char *b = dc_aligned_alloc(s->align, need);

        if (b == NULL) {
            HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "devcrypto aead");
            return 0;
        }
        if (s->buf != NULL) {
            OPENSSL_cleanse(s->buf, s->cap);
            free(s->buf);
        }
        s->buf = b;
        s->cap = need;
    }
    if (len > 0)
        memcpy(s->buf, in, len);
    if (!enc)
        memcpy(s->buf + len, tag, HWAF_GCM_TAG);
    memcpy(ivbuf, iv, HWAF_GCM_IV);  /* the module may write it back */
    r = dc_auth_crypt(s->fd, s->ses, enc ? COP_ENCRYPT : COP_DECRYPT, ivbuf,
                      aad, aadlen, s->buf, enc ? len : need, HWAF_GCM_TAG);
    if (r == -EBADMSG && !enc) {
        OPENSSL_cleanse(s->buf, need);  /* unverified plaintext */
        return -1;
    }
    if (r < 0) {
        if (dc_too_large(r, need))
            HWAF_RAISE(impl->prov, HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                       "the device refused %zu bytes in one operation; at most "
                       "%zu from now on", need, dc_aead_max(s, 0, 0));
        else
            HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                           "ioctl(CIOCAUTHCRYPT)");
        return 0;
    }
    hwaf_stats_add(HWAF_BE_DEVCRYPTO, HWAF_KIND_AEAD, aadlen + len);
    dc_took(need);
    if (len > 0)
        memcpy(out, s->buf, len);
    if (enc)
        memcpy(tag, s->buf + len, HWAF_GCM_TAG);
    OPENSSL_cleanse(s->buf, need);
    return 1;
}

static int dc_impl_init(hwaf_impl *impl)
{
    dc_pool *p;

    if (impl->alg->kind != HWAF_KIND_DIGEST)
        return 1;
    p = calloc(1, sizeof(*p));
    if (p == NULL)
        return 0;
    hwaf_mutex_init(&p->lock);
    p->gen = hwaf_fork_generation;
    impl->be_data = p;
    return 1;
}

static void dc_impl_free(hwaf_impl *impl)
{
    dc_pool *p = impl->be_data;

    if (p == NULL)
        return;
    while (p->n > 0) {
        hwaf_be_md *s = p->idle[--p->n];

        /* In a child the sessions are the parent's: close the file only. */
        dc_md_free(s, p->gen == hwaf_fork_generation);
    }
    hwaf_mutex_destroy(&p->lock);
    free(p);
    impl->be_data = NULL;
}

const hwaf_backend hwaf_backend_devcrypto = {
    "devcrypto",
    dc_available,
    dc_drivers,
    dc_cipher_open,
    dc_cipher_crypt,
    dc_cipher_max,
    dc_cipher_close,
    dc_cipher_abandon,
    dc_md_open,
    dc_md_update,
    dc_md_final,
    dc_md_reset,
    dc_md_dup,
    dc_md_close,
    dc_md_fork_prepare,
    dc_md_fork_parent,
    dc_md_fork_child,
    dc_impl_init,
    dc_impl_free,
    dc_aead_open,
    dc_aead_crypt,
    dc_aead_max,
    dc_aead_close,
    dc_aead_abandon,
    dc_mac_open,
    NULL,   /* probe_done: nothing kept */
    DC_DEVICE,
};
