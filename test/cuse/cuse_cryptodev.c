/*
 * hwaf-cuse-cryptodev: a test-only /dev/crypto.
 *
 * A CUSE character device that speaks the cryptodev-linux ioctl ABI
 * (provider/cryptodev_abi.h) as the real module does, for machines that
 * cannot load the module: CIOCGSESSION, CIOCFSESSION, CIOCGSESSINFO,
 * CIOCCRYPT (ciphers, hash and HMAC update/final/reset), CIOCCPHASH and
 * CIOCAUTHCRYPT (gcm(aes) in plain AEAD mode: the TLS and SRTP types are
 * refused).  The
 * ioctls carry user pointers (keys, data, IVs, digests), so it asks for
 * unrestricted ioctls and fetches/stores user memory with ioctl retries.
 * The work is done by OpenSSL's default provider in a library context of
 * its own (never a configured provider, which could be hwaf itself).
 *
 * Like the module, it keeps sessions per open file (shared by a parent and
 * a child after fork()), refuses cipher data that is not a multiple of the
 * transform's block size (16 for CBC, ECB and XTS, 1 for CTR), finalises a
 * hash on a zero-length update, and resets it on flags 0 or COP_FLAG_RESET
 * (an HMAC to its keyed initial state), refuses HMAC keys over 512 bytes
 * and AEAD AAD over one page (4096 bytes).
 * Where the module would leak pinned pages (an in-place buffer that is not
 * writable throughout, see mixed_pages) it refuses the request instead.
 *
 * Options (before any FUSE option such as -d):
 *   --name NAME        device name (default "crypto": /dev/crypto)
 *   --hw LIST          report SIOP_FLAG_KERNEL_DRIVER_ONLY for these kernel
 *                      algorithm names (comma separated, "all" for every one)
 *   --alignmask N      report this alignmask (default 0)
 *   --refuse LIST      refuse sessions for these kernel algorithm names
 *   --wrong LIST       give wrong answers for these kernel cipher names (the
 *                      first byte of every result flipped), as a broken
 *                      driver would
 *   --no-cphash        refuse CIOCCPHASH (modules before 1.10)
 *   --size-limit FILE  while FILE holds "N PID", fail CIOCCRYPT and
 *                      CIOCAUTHCRYPT requests of more than N bytes from
 *                      thread PID with ENOMEM, as a kernel short of memory
 *                      does, and append each refused length to
 *                      FILE.refused (a test writes and removes FILE while
 *                      the device runs; other processes are not touched);
 *                      and while FILE.trace holds "PID", append a line
 *                      "KERNEL-NAME LENGTH" to FILE.trace.log for each
 *                      CIOCCRYPT it completes for thread PID
 *
 * Driver names are "cuse-" plus the kernel name with punctuation turned into
 * dashes: "cuse-cbc-aes", "cuse-sha256".
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <cuse_lowlevel.h>
#include <fuse_opt.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "cryptodev_abi.h"

typedef struct {
    uint32_t id;
    const char *kname;     /* "cbc(aes)", "sha256", ... */
    int is_hash;
    EVP_CIPHER *cipher;
    unsigned int blocksize;
    unsigned char key[CRYPTO_CIPHER_MAX_KEY_LEN];
    size_t keylen;
    int is_aead;           /* gcm(aes): CIOCAUTHCRYPT only */
    EVP_MD *md;
    EVP_MD_CTX *mdctx;
    int md_state;          /* 0 needs init, 1 running, 2 finalised */
    /* HMAC sessions: the MAC context and its key (md gives the size). */
    EVP_MAC_CTX *macctx;
    const char *digest;
    unsigned char *mackey;
    size_t mackeylen;
} dev_session;

typedef struct {
    dev_session **s;
    size_t n, cap;
    uint32_t next_id;
} dev_file;

static OSSL_LIB_CTX *libctx;
static const char *opt_hw = "";
static const char *opt_refuse = "";
static const char *opt_wrong = "";
static unsigned int opt_alignmask;
static int opt_no_cphash;
static const char *opt_size_limit;

/* 1 when name is in the comma-separated list (or the list is "all"). */
static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    const char *p = list;

    if (strcmp(list, "all") == 0)
        return 1;
    while (*p != '\0') {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);

        if (l == len && strncmp(p, name, len) == 0)
            return 1;
        p += l;
        if (*p == ',')
            p++;
    }
    return 0;
}

static void driver_name(char *out, size_t outlen, const char *kname)
{
    size_t i, o = 0;

    o = (size_t)snprintf(out, outlen, "cuse-");
    for (i = 0; kname[i] != '\0' && o + 1 < outlen; i++) {
        char c = kname[i];

        if (c == ')')
            continue;
        out[o++] = (c == '(') ? '-' : c;
    }
    out[o] = '\0';
}

static void session_free(dev_session *s)
{
    if (s == NULL)
        return;
    EVP_CIPHER_free(s->cipher);
    EVP_MD_free(s->md);
    EVP_MD_CTX_free(s->mdctx);
    EVP_MAC_CTX_free(s->macctx);
    if (s->mackey != NULL)
        OPENSSL_clear_free(s->mackey, s->mackeylen + 1);
    OPENSSL_cleanse(s->key, sizeof(s->key));
    free(s);
}

/* Hash or HMAC: back to the (keyed) initial state. */
static int hash_init(dev_session *s)
{
    if (s->macctx != NULL) {
        OSSL_PARAM p[2];

        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                (char *)s->digest, 0);
        p[1] = OSSL_PARAM_construct_end();
        return EVP_MAC_init(s->macctx, s->mackey, s->mackeylen, p);
    }
    return EVP_DigestInit_ex2(s->mdctx, s->md, NULL);
}

static int hash_update(dev_session *s, const unsigned char *p, size_t n)
{
    return s->macctx != NULL ? EVP_MAC_update(s->macctx, p, n)
                             : EVP_DigestUpdate(s->mdctx, p, n);
}

static int hash_final(dev_session *s, unsigned char *out)
{
    unsigned int mdlen = 0;
    size_t maclen = 0;

    if (s->macctx != NULL)
        return EVP_MAC_final(s->macctx, out, &maclen, EVP_MAX_MD_SIZE);
    return EVP_DigestFinal_ex(s->mdctx, out, &mdlen);
}

/*
 * A file's sessions are kept sorted by id (ids are handed out in
 * increasing order), so that one file can hold tens of thousands of them,
 * as the module's can: lookups are binary searches.  Index of id, or of
 * where it would go.
 */
static size_t session_index(const dev_file *f, uint32_t id)
{
    size_t lo = 0, hi = f->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (f->s[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static dev_session *session_find(dev_file *f, uint32_t id)
{
    size_t i = session_index(f, id);

    return i < f->n && f->s[i]->id == id ? f->s[i] : NULL;
}

/* CIOCGSESSION: 0 or an errno value. */
static int session_create(dev_file *f, struct session_op *sop,
                          const unsigned char *key, const unsigned char *mackey)
{
    const char *ossl = NULL, *kname = NULL;
    dev_session *s;

    if ((sop->cipher == 0) == (sop->mac == 0))
        return EINVAL;  /* hwaf needs neither both (authenc) nor none */
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return ENOMEM;
    if (sop->cipher != 0) {
        unsigned int kl = sop->keylen;

        switch (sop->cipher) {
        case CRYPTO_AES_CBC:
            kname = "cbc(aes)";
            ossl = kl == 16 ? "AES-128-CBC" : kl == 24 ? "AES-192-CBC"
                 : kl == 32 ? "AES-256-CBC" : NULL;
            s->blocksize = 16;
            break;
        case CRYPTO_AES_ECB:
            kname = "ecb(aes)";
            ossl = kl == 16 ? "AES-128-ECB" : kl == 24 ? "AES-192-ECB"
                 : kl == 32 ? "AES-256-ECB" : NULL;
            s->blocksize = 16;
            break;
        case CRYPTO_AES_CTR:
            kname = "ctr(aes)";
            ossl = kl == 16 ? "AES-128-CTR" : kl == 24 ? "AES-192-CTR"
                 : kl == 32 ? "AES-256-CTR" : NULL;
            s->blocksize = 1;
            break;
        case CRYPTO_AES_XTS:
            kname = "xts(aes)";
            ossl = kl == 32 ? "AES-128-XTS" : kl == 64 ? "AES-256-XTS" : NULL;
            s->blocksize = 16;
            break;
        case CRYPTO_AES_GCM:
            kname = "gcm(aes)";
            ossl = kl == 16 ? "AES-128-GCM" : kl == 24 ? "AES-192-GCM"
                 : kl == 32 ? "AES-256-GCM" : NULL;
            s->blocksize = 1;
            s->is_aead = 1;
            break;
        default:
            break;
        }
        if (kname == NULL || ossl == NULL || key == NULL
            || kl > sizeof(s->key) || in_list(opt_refuse, kname))
            goto inval;
        s->cipher = EVP_CIPHER_fetch(libctx, ossl, NULL);
        if (s->cipher == NULL)
            goto inval;
        memcpy(s->key, key, kl);
        s->keylen = kl;
    } else {
        switch (sop->mac) {
        case CRYPTO_SHA1: kname = "sha1"; ossl = "SHA1"; break;
        case CRYPTO_SHA2_224: kname = "sha224"; ossl = "SHA2-224"; break;
        case CRYPTO_SHA2_256: kname = "sha256"; ossl = "SHA2-256"; break;
        case CRYPTO_SHA2_384: kname = "sha384"; ossl = "SHA2-384"; break;
        case CRYPTO_SHA2_512: kname = "sha512"; ossl = "SHA2-512"; break;
        case CRYPTO_SHA1_HMAC: kname = "hmac(sha1)"; ossl = "SHA1"; break;
        case CRYPTO_SHA2_224_HMAC: kname = "hmac(sha224)"; ossl = "SHA2-224"; break;
        case CRYPTO_SHA2_256_HMAC: kname = "hmac(sha256)"; ossl = "SHA2-256"; break;
        case CRYPTO_SHA2_384_HMAC: kname = "hmac(sha384)"; ossl = "SHA2-384"; break;
        case CRYPTO_SHA2_512_HMAC: kname = "hmac(sha512)"; ossl = "SHA2-512"; break;
        default: break;
        }
        if (kname == NULL || in_list(opt_refuse, kname))
            goto inval;
        s->is_hash = 1;
        s->md = EVP_MD_fetch(libctx, ossl, NULL);
        s->mdctx = EVP_MD_CTX_new();
        if (s->md == NULL || s->mdctx == NULL)
            goto inval;
        if (strncmp(kname, "hmac(", 5) == 0) {
            EVP_MAC *mac = EVP_MAC_fetch(libctx, "HMAC", NULL);

            if (sop->mackeylen > CRYPTO_HMAC_MAX_KEY_LEN
                || (sop->mackeylen != 0 && mackey == NULL) || mac == NULL) {
                EVP_MAC_free(mac);
                goto inval;
            }
            s->macctx = EVP_MAC_CTX_new(mac);
            EVP_MAC_free(mac);
            s->digest = ossl;
            s->mackeylen = sop->mackeylen;
            s->mackey = malloc(s->mackeylen + 1);  /* never NULL, even empty */
            if (s->macctx == NULL || s->mackey == NULL)
                goto inval;
            if (s->mackeylen != 0)
                memcpy(s->mackey, mackey, s->mackeylen);
        }
        if (!hash_init(s))
            goto inval;
        s->md_state = 1;
    }
    s->kname = kname;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        dev_session **ns = realloc(f->s, cap * sizeof(*ns));

        if (ns == NULL) {
            session_free(s);
            return ENOMEM;
        }
        f->s = ns;
        f->cap = cap;
    }
    /* Ids are not small integers in the module either. */
    do
        s->id = 0x5e550000u + f->next_id++;
    while (session_find(f, s->id) != NULL);
    {
        size_t i = session_index(f, s->id);

        memmove(f->s + i + 1, f->s + i, (f->n - i) * sizeof(*f->s));
        f->s[i] = s;
        f->n++;
    }
    sop->ses = s->id;
    return 0;
 inval:
    session_free(s);
    return EINVAL;
}

static int session_destroy(dev_file *f, uint32_t id)
{
    size_t i = session_index(f, id);

    if (i >= f->n || f->s[i]->id != id)
        return ENOENT;
    session_free(f->s[i]);
    memmove(f->s + i, f->s + i + 1, (f->n - i - 1) * sizeof(*f->s));
    f->n--;
    return 0;
}

/* What a CIOCCRYPT moves, as the module would see it. */
typedef struct {
    size_t src, iv, dst, mac, ivout;
} xfer;

static int hash_finalises(const struct crypt_op *cop)
{
    return (cop->flags & COP_FLAG_FINAL) || !(cop->flags & COP_FLAG_UPDATE)
        || cop->len == 0;
}

static int crypt_plan(const dev_session *s, const struct crypt_op *cop, xfer *x)
{
    memset(x, 0, sizeof(*x));
    if ((cop->op != COP_ENCRYPT && cop->op != COP_DECRYPT) || s->is_aead)
        return EINVAL;
    if (cop->len != 0 && cop->src == NULL)
        return EFAULT;
    x->src = cop->len;
    if (s->is_hash) {
        if (hash_finalises(cop))
            x->mac = (size_t)EVP_MD_get_size(s->md);
        if (x->mac != 0 && cop->mac == NULL)
            return EFAULT;
        return 0;
    }
    if (cop->len % s->blocksize != 0)
        return EINVAL;
    if (cop->len != 0 && cop->dst == NULL)
        return EFAULT;
    x->dst = cop->len;
    if (cop->iv != NULL && EVP_CIPHER_get_iv_length(s->cipher) > 0) {
        x->iv = (size_t)EVP_CIPHER_get_iv_length(s->cipher);
        if (cop->flags & COP_FLAG_WRITE_IV)
            x->ivout = x->iv;
    }
    return 0;
}

/* The next IV the module writes back (CBC: last ciphertext block; CTR: the
 * counter after the data, a partial block counting as one). */
static void next_iv(const dev_session *s, const struct crypt_op *cop,
                    const unsigned char *in, const unsigned char *out,
                    unsigned char *iv)
{
    if (strcmp(s->kname, "cbc(aes)") == 0 && cop->len >= 16) {
        memcpy(iv, (cop->op == COP_ENCRYPT ? out : in) + cop->len - 16, 16);
    } else if (strcmp(s->kname, "ctr(aes)") == 0) {
        uint64_t add = (cop->len + 15) / 16;
        int i;

        for (i = 15; i >= 0 && add != 0; i--) {
            add += iv[i];
            iv[i] = (unsigned char)add;
            add >>= 8;
        }
    }
}

/* Run one CIOCCRYPT; out receives dst, mac and the written-back IV in that
 * order.  0 or an errno value. */
static int crypt_run(dev_session *s, const struct crypt_op *cop,
                     const xfer *x, const unsigned char *src,
                     const unsigned char *iv, unsigned char *out)
{
    if (s->is_hash) {
        if (cop->flags == 0 || (cop->flags & COP_FLAG_RESET)) {
            if (!hash_init(s))
                return EIO;
            s->md_state = 1;
        }
        if (cop->len != 0) {
            if (s->md_state != 1)
                return EINVAL;  /* update after final without a reset */
            if (!hash_update(s, src, cop->len))
                return EIO;
        }
        if (x->mac != 0) {
            if (s->md_state != 1)
                return EINVAL;
            if (!hash_final(s, out))
                return EIO;
            s->md_state = 2;
        }
        return 0;
    } else {
        EVP_CIPHER_CTX *c;
        unsigned char ivbuf[16] = { 0 };
        int outl = 0, ok;

        if (cop->len == 0)
            return 0;
        if (x->iv != 0)
            memcpy(ivbuf, iv, x->iv);
        c = EVP_CIPHER_CTX_new();
        if (c == NULL)
            return ENOMEM;
        ok = EVP_CipherInit_ex2(c, s->cipher, s->key,
                                EVP_CIPHER_get_iv_length(s->cipher) ? ivbuf : NULL,
                                cop->op == COP_ENCRYPT, NULL)
            && EVP_CIPHER_CTX_set_padding(c, 0)
            && EVP_CipherUpdate(c, out, &outl, src, (int)cop->len)
            && (size_t)outl == cop->len;
        EVP_CIPHER_CTX_free(c);
        if (!ok)
            return EINVAL;
        if (in_list(opt_wrong, s->kname))
            out[0] ^= 1;
        if (x->ivout != 0) {
            next_iv(s, cop, src, out, ivbuf);
            memcpy(out + x->dst, ivbuf, x->ivout);
        }
        return 0;
    }
}

static void dev_open(fuse_req_t req, struct fuse_file_info *fi)
{
    dev_file *f = calloc(1, sizeof(*f));

    if (f == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    fi->fh = (uintptr_t)f;
    fi->direct_io = 1;
    fi->nonseekable = 1;
    fuse_reply_open(req, fi);
}

static void dev_release(fuse_req_t req, struct fuse_file_info *fi)
{
    dev_file *f = (dev_file *)(uintptr_t)fi->fh;
    size_t i;

    for (i = 0; i < f->n; i++)
        session_free(f->s[i]);
    free(f->s);
    free(f);
    fuse_reply_err(req, 0);
}

static void reply_retry(fuse_req_t req, const struct iovec *in, size_t nin,
                        const struct iovec *out, size_t nout)
{
    fuse_reply_ioctl_retry(req, in, nin, out, nout);
}

/*
 * cryptodev-linux pins the pages of an in-place buffer (dst = src) for
 * writing; when the buffer mixes writable and read-only pages, it pins the
 * first ones, fails on a read-only one, falls back to copying and never
 * releases the pins it took: kernel memory is lost on every such call.
 * This device refuses such a request (EFAULT, and a line on stderr) so that
 * a caller who hands the module such a buffer fails its tests here.
 * 1 when [p, p + len) of process pid spans more than one page and any of
 * them is not writable.
 */
static int mixed_pages(pid_t pid, uintptr_t p, size_t len)
{
    char path[64], line[512];
    uintptr_t lo, hi, at = p, end = p + len;
    char perms[8];
    FILE *m;
    int bad = 0;

    if (len == 0 || (p >> 12) == ((end - 1) >> 12))
        return 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    m = fopen(path, "r");
    if (m == NULL)
        return 0;
    while (at < end && fgets(line, sizeof(line), m) != NULL) {
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) != 3 || hi <= at)
            continue;
        if (lo > at)
            break;            /* a hole: not mapped at all */
        if (perms[1] != 'w')
            bad = 1;
        at = hi;
    }
    fclose(m);
    return bad || at < end;
}

/* --size-limit: 1 when a request of len bytes from req's caller is to be
 * refused now. */
static int size_refused(fuse_req_t req, size_t len)
{
    char line[64], path[4200];
    unsigned long long n;
    long pid;
    int refuse = 0;
    FILE *f;

    if (opt_size_limit == NULL || (f = fopen(opt_size_limit, "r")) == NULL)
        return 0;
    if (fgets(line, sizeof(line), f) != NULL && sscanf(line, "%llu %ld", &n, &pid) == 2
        && len > n && pid == (long)fuse_req_ctx(req)->pid)
        refuse = 1;
    fclose(f);
    if (refuse) {
        snprintf(path, sizeof(path), "%s.refused", opt_size_limit);
        if ((f = fopen(path, "a")) != NULL) {
            fprintf(f, "%zu\n", len);
            fclose(f);
        }
    }
    return refuse;
}

/* --size-limit's FILE.trace: the request of len bytes on s, completed for
 * req's caller, into FILE.trace.log when that caller is traced. */
static void trace_served(fuse_req_t req, const dev_session *s, size_t len)
{
    char path[4200];
    long pid;
    FILE *f;
    int traced = 0;

    if (opt_size_limit == NULL)
        return;
    snprintf(path, sizeof(path), "%s.trace", opt_size_limit);
    if ((f = fopen(path, "r")) == NULL)
        return;
    traced = fscanf(f, "%ld", &pid) == 1 && pid == (long)fuse_req_ctx(req)->pid;
    fclose(f);
    if (!traced)
        return;
    snprintf(path, sizeof(path), "%s.trace.log", opt_size_limit);
    if ((f = fopen(path, "a")) != NULL) {
        fprintf(f, "%s %zu\n", s->kname, len);
        fclose(f);
    }
}

static void do_crypt(fuse_req_t req, dev_file *f, void *arg,
                     const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
    struct crypt_op cop;
    struct iovec in[3], out[3];
    size_t nin = 0, nout = 0, outlen;
    const unsigned char *p;
    unsigned char *obuf;
    dev_session *s;
    xfer x;
    int err;

    if (in_bufsz < sizeof(cop)) {
        in[0] = (struct iovec){ arg, sizeof(cop) };
        reply_retry(req, in, 1, NULL, 0);
        return;
    }
    memcpy(&cop, in_buf, sizeof(cop));
    s = session_find(f, cop.ses);
    if (s == NULL) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    err = crypt_plan(s, &cop, &x);
    if (err != 0) {
        fuse_reply_err(req, err);
        return;
    }
    if (cop.src != NULL && cop.src == cop.dst
        && mixed_pages(fuse_req_ctx(req)->pid, (uintptr_t)cop.src, cop.len)) {
        fprintf(stderr, "hwaf-cuse-cryptodev: in-place CIOCCRYPT of %u bytes at "
                "%p is not writable throughout: the module would leak pinned "
                "pages; refused\n", cop.len, (void *)cop.src);
        fuse_reply_err(req, EFAULT);
        return;
    }
    outlen = x.dst + x.mac + x.ivout;
    if (in_bufsz == sizeof(cop) && out_bufsz == 0 && size_refused(req, cop.len)) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (in_bufsz == sizeof(cop) && out_bufsz == 0 && (x.src + x.iv + outlen) != 0) {
        /* Second round: ask for the data and the output areas. */
        in[nin++] = (struct iovec){ arg, sizeof(cop) };
        if (x.src)
            in[nin++] = (struct iovec){ cop.src, x.src };
        if (x.iv)
            in[nin++] = (struct iovec){ cop.iv, x.iv };
        if (x.dst)
            out[nout++] = (struct iovec){ cop.dst, x.dst };
        if (x.mac)
            out[nout++] = (struct iovec){ cop.mac, x.mac };
        if (x.ivout)
            out[nout++] = (struct iovec){ cop.iv, x.ivout };
        reply_retry(req, in, nin, out, nout);
        return;
    }
    if (in_bufsz != sizeof(cop) + x.src + x.iv || out_bufsz != outlen) {
        fuse_reply_err(req, EIO);
        return;
    }
    p = (const unsigned char *)in_buf + sizeof(cop);
    obuf = malloc(outlen ? outlen : 1);
    if (obuf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    err = crypt_run(s, &cop, &x, p, p + x.src, obuf);
    if (err != 0) {
        fuse_reply_err(req, err);
    } else {
        trace_served(req, s, cop.len);
        fuse_reply_ioctl(req, 0, obuf, outlen);
    }
    OPENSSL_cleanse(obuf, outlen);
    free(obuf);
}

/*
 * One gcm(aes) message (CIOCAUTHCRYPT, plain AEAD mode) as the module runs
 * it: encrypting, dst = ciphertext || tag; decrypting, src = ciphertext ||
 * tag (len counts both), dst = plaintext, EBADMSG on a wrong tag.  out
 * receives dst's bytes.  0 or an errno value.
 */
static int auth_run(const dev_session *s, const struct crypt_auth_op *cop,
                    const unsigned char *aad, const unsigned char *src,
                    const unsigned char *iv, unsigned char *out)
{
    size_t taglen = cop->tag_len, n = cop->op == COP_ENCRYPT ? cop->len
                                                           : cop->len - taglen;
    unsigned char tag[16];
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int outl = 0, ok, err = EINVAL;

    if (c == NULL)
        return ENOMEM;
    ok = EVP_CipherInit_ex2(c, s->cipher, s->key, iv, cop->op == COP_ENCRYPT, NULL)
        && (cop->auth_len == 0
            || EVP_CipherUpdate(c, NULL, &outl, aad, (int)cop->auth_len))
        && (n == 0 || (EVP_CipherUpdate(c, out, &outl, src, (int)n)
                       && (size_t)outl == n));
    if (ok && cop->op == COP_ENCRYPT) {
        ok = EVP_CipherFinal_ex(c, out + n, &outl)
            && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, (int)taglen, tag) > 0;
        if (ok)
            memcpy(out + n, tag, taglen);
    } else if (ok) {
        memcpy(tag, src + n, taglen);
        ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, (int)taglen, tag) > 0;
        if (ok && !EVP_CipherFinal_ex(c, out + n, &outl)) {
            ok = 0;
            err = EBADMSG;
        }
    }
    EVP_CIPHER_CTX_free(c);
    OPENSSL_cleanse(tag, sizeof(tag));
    return ok ? 0 : err;
}

static void do_auth(fuse_req_t req, dev_file *f, void *arg,
                    const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
    struct crypt_auth_op cop;
    struct iovec in[4], out[2];
    size_t nin = 0, nout = 0, aadlen, ivlen = 12, dstlen;
    unsigned char ivbuf[12] = { 0 };
    const unsigned char *p;
    unsigned char *obuf;
    dev_session *s;
    int err;

    if (in_bufsz < sizeof(cop)) {
        in[0] = (struct iovec){ arg, sizeof(cop) };
        reply_retry(req, in, 1, NULL, 0);
        return;
    }
    memcpy(&cop, in_buf, sizeof(cop));
    s = session_find(f, cop.ses);
    if (s == NULL || !s->is_aead || cop.flags != 0
        || (cop.op != COP_ENCRYPT && cop.op != COP_DECRYPT)
        || cop.auth_len > CRYPTODEV_AEAD_MAX_AAD || cop.tag_len > 16) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (cop.tag_len == 0)
        cop.tag_len = 16;
    if (cop.op == COP_DECRYPT && cop.len < cop.tag_len) {
        fuse_reply_err(req, EINVAL);
        return;
    }
    if (cop.src == NULL || cop.dst == NULL) {
        fuse_reply_err(req, EFAULT);
        return;
    }
    aadlen = cop.auth_src != NULL ? cop.auth_len : 0;
    if (cop.iv == NULL)
        ivlen = 0;  /* the module's IV buffer then stays zero */
    dstlen = cop.op == COP_ENCRYPT ? cop.len + cop.tag_len : cop.len - cop.tag_len;
    if (cop.src == cop.dst
        && mixed_pages(fuse_req_ctx(req)->pid, (uintptr_t)cop.src,
                       cop.op == COP_ENCRYPT ? dstlen : cop.len)) {
        fprintf(stderr, "hwaf-cuse-cryptodev: in-place CIOCAUTHCRYPT of %u bytes "
                "at %p is not writable throughout: refused\n", cop.len,
                (void *)cop.src);
        fuse_reply_err(req, EFAULT);
        return;
    }
    if (in_bufsz == sizeof(cop) && out_bufsz == 0
        && size_refused(req, cop.op == COP_ENCRYPT ? dstlen : cop.len)) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (in_bufsz == sizeof(cop) && out_bufsz == 0) {
        in[nin++] = (struct iovec){ arg, sizeof(cop) };
        if (aadlen)
            in[nin++] = (struct iovec){ cop.auth_src, aadlen };
        if (cop.len)
            in[nin++] = (struct iovec){ cop.src, cop.len };
        if (ivlen)
            in[nin++] = (struct iovec){ cop.iv, ivlen };
        out[nout++] = (struct iovec){ arg, sizeof(cop) };
        if (dstlen)
            out[nout++] = (struct iovec){ cop.dst, dstlen };
        reply_retry(req, in, nin, out, nout);
        return;
    }
    if (in_bufsz != sizeof(cop) + aadlen + cop.len + ivlen
        || out_bufsz != sizeof(cop) + dstlen) {
        fuse_reply_err(req, EIO);
        return;
    }
    p = (const unsigned char *)in_buf + sizeof(cop);
    if (ivlen)
        memcpy(ivbuf, p + aadlen + cop.len, ivlen);
    obuf = malloc(sizeof(cop) + dstlen);
    if (obuf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    err = auth_run(s, &cop, p, p + aadlen, ivbuf, obuf + sizeof(cop));
    if (err != 0) {
        fuse_reply_err(req, err);
    } else {
        /* As the module: len is the output's length, tag where it went. */
        cop.tag = cop.dst + (cop.op == COP_ENCRYPT ? cop.len : dstlen);
        cop.len = (uint32_t)dstlen;
        memcpy(obuf, &cop, sizeof(cop));
        fuse_reply_ioctl(req, 0, obuf, sizeof(cop) + dstlen);
    }
    OPENSSL_cleanse(obuf, sizeof(cop) + dstlen);
    free(obuf);
}

static void dev_ioctl(fuse_req_t req, int cmd, void *arg,
                      struct fuse_file_info *fi, unsigned int flags,
                      const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
    dev_file *f = (dev_file *)(uintptr_t)fi->fh;
    struct iovec in[2], out[1];
    int err;

    if (flags & FUSE_IOCTL_COMPAT) {
        fuse_reply_err(req, ENOSYS);
        return;
    }
    switch ((unsigned int)cmd) {
    case CIOCGSESSION: {
        struct session_op sop;

        if (in_bufsz < sizeof(sop)) {
            in[0] = (struct iovec){ arg, sizeof(sop) };
            reply_retry(req, in, 1, NULL, 0);
            return;
        }
        memcpy(&sop, in_buf, sizeof(sop));
        if (out_bufsz == 0) {
            size_t nin = 1;

            in[0] = (struct iovec){ arg, sizeof(sop) };
            if (sop.cipher != 0 && sop.keylen != 0 && sop.key != NULL) {
                if (sop.keylen > CRYPTO_CIPHER_MAX_KEY_LEN) {
                    fuse_reply_err(req, EINVAL);
                    return;
                }
                in[nin++] = (struct iovec){ sop.key, sop.keylen };
            }
            if (sop.mac != 0 && sop.mackeylen != 0 && sop.mackey != NULL) {
                if (sop.mackeylen > CRYPTO_HMAC_MAX_KEY_LEN) {
                    fuse_reply_err(req, EINVAL);
                    return;
                }
                in[nin++] = (struct iovec){ sop.mackey, sop.mackeylen };
            }
            out[0] = (struct iovec){ arg, sizeof(sop) };
            reply_retry(req, in, nin, out, 1);
            return;
        }
        {
            const unsigned char *extra = in_bufsz > sizeof(sop)
                ? (const unsigned char *)in_buf + sizeof(sop) : NULL;
            size_t kl = sop.cipher != 0 && sop.key != NULL ? sop.keylen : 0;
            size_t ml = sop.mac != 0 && sop.mackey != NULL ? sop.mackeylen : 0;

            if (in_bufsz != sizeof(sop) + kl + ml) {
                fuse_reply_err(req, EIO);
                return;
            }
            err = session_create(f, &sop, kl ? extra : NULL,
                                 ml ? extra + kl : NULL);
        }
        if (err != 0)
            fuse_reply_err(req, err);
        else
            fuse_reply_ioctl(req, 0, &sop, sizeof(sop));
        OPENSSL_cleanse(&sop, sizeof(sop));
        return;
    }
    case CIOCFSESSION: {
        uint32_t ses;

        if (in_bufsz < sizeof(ses)) {
            in[0] = (struct iovec){ arg, sizeof(ses) };
            reply_retry(req, in, 1, NULL, 0);
            return;
        }
        memcpy(&ses, in_buf, sizeof(ses));
        err = session_destroy(f, ses);
        if (err != 0)
            fuse_reply_err(req, err);
        else
            fuse_reply_ioctl(req, 0, NULL, 0);
        return;
    }
    case CIOCGSESSINFO: {
        struct session_info_op info;
        struct alg_info *ai;
        dev_session *s;

        if (in_bufsz < sizeof(info)) {
            in[0] = (struct iovec){ arg, sizeof(info) };
            out[0] = (struct iovec){ arg, sizeof(info) };
            reply_retry(req, in, 1, out, 1);
            return;
        }
        memcpy(&info, in_buf, sizeof(info));
        s = session_find(f, info.ses);
        if (s == NULL) {
            fuse_reply_err(req, EINVAL);
            return;
        }
        memset(&info.cipher_info, 0, sizeof(info.cipher_info));
        memset(&info.hash_info, 0, sizeof(info.hash_info));
        ai = s->is_hash ? &info.hash_info : &info.cipher_info;
        snprintf(ai->cra_name, sizeof(ai->cra_name), "%s", s->kname);
        driver_name(ai->cra_driver_name, sizeof(ai->cra_driver_name), s->kname);
        info.alignmask = (uint16_t)opt_alignmask;
        info.flags = in_list(opt_hw, s->kname) ? SIOP_FLAG_KERNEL_DRIVER_ONLY : 0;
        fuse_reply_ioctl(req, 0, &info, sizeof(info));
        return;
    }
    case CIOCCPHASH: {
        struct cphash_op cp;
        dev_session *src, *dst;

        if (opt_no_cphash) {
            fuse_reply_err(req, EINVAL);  /* as a module without it */
            return;
        }
        if (in_bufsz < sizeof(cp)) {
            in[0] = (struct iovec){ arg, sizeof(cp) };
            reply_retry(req, in, 1, NULL, 0);
            return;
        }
        memcpy(&cp, in_buf, sizeof(cp));
        if (cp.src_ses == cp.dst_ses) {
            fuse_reply_err(req, EDEADLK);
            return;
        }
        src = session_find(f, cp.src_ses);
        dst = session_find(f, cp.dst_ses);
        if (src == NULL || dst == NULL) {
            fuse_reply_err(req, ENOENT);
            return;
        }
        if (!src->is_hash || !dst->is_hash || strcmp(src->kname, dst->kname) != 0
            || !EVP_MD_CTX_copy_ex(dst->mdctx, src->mdctx)) {
            fuse_reply_err(req, EINVAL);
            return;
        }
        if (src->macctx != NULL) {
            EVP_MAC_CTX *c = EVP_MAC_CTX_dup(src->macctx);

            if (c == NULL) {
                fuse_reply_err(req, ENOMEM);
                return;
            }
            EVP_MAC_CTX_free(dst->macctx);
            dst->macctx = c;
        }
        dst->md_state = src->md_state;
        fuse_reply_ioctl(req, 0, NULL, 0);
        return;
    }
    case CIOCCRYPT:
        do_crypt(req, f, arg, in_buf, in_bufsz, out_bufsz);
        return;
    case CIOCAUTHCRYPT:
        do_auth(req, f, arg, in_buf, in_bufsz, out_bufsz);
        return;
    default:
        fuse_reply_err(req, EINVAL);  /* what the module answers */
        return;
    }
}

static const struct cuse_lowlevel_ops dev_ops = {
    .open = dev_open,
    .release = dev_release,
    .ioctl = dev_ioctl,
};

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--name NAME] [--hw LIST|all] [--alignmask N]\n"
            "          [--refuse LIST] [--wrong LIST] [--no-cphash] [--size-limit FILE]\n"
            "          [FUSE options]\n", prog);
}

int main(int argc, char **argv)
{
    static char devname[128];
    const char *dev_info[1];
    const char *name = "crypto";
    struct cuse_info ci;
    char **fargv;
    int fargc = 0, i, rc;

    fargv = calloc((size_t)argc + 3, sizeof(*fargv));
    if (fargv == NULL)
        return 1;
    fargv[fargc++] = argv[0];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            name = argv[++i];
        } else if (strcmp(argv[i], "--hw") == 0 && i + 1 < argc) {
            opt_hw = argv[++i];
        } else if (strcmp(argv[i], "--refuse") == 0 && i + 1 < argc) {
            opt_refuse = argv[++i];
        } else if (strcmp(argv[i], "--wrong") == 0 && i + 1 < argc) {
            opt_wrong = argv[++i];
        } else if (strcmp(argv[i], "--alignmask") == 0 && i + 1 < argc) {
            opt_alignmask = (unsigned int)strtoul(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--no-cphash") == 0) {
            opt_no_cphash = 1;
        } else if (strcmp(argv[i], "--size-limit") == 0 && i + 1 < argc) {
            opt_size_limit = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(argv[0]);
            free(fargv);
            return 0;
        } else {
            fargv[fargc++] = argv[i];
        }
    }
    /* Foreground, one thread: requests are served in order. */
    fargv[fargc++] = "-f";
    fargv[fargc++] = "-s";

    /* Never read a configuration that could load a provider using us. */
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
    libctx = OSSL_LIB_CTX_new();
    if (libctx == NULL || OSSL_PROVIDER_load(libctx, "default") == NULL) {
        fprintf(stderr, "%s: cannot load OpenSSL's default provider\n", argv[0]);
        free(fargv);
        return 1;
    }

    snprintf(devname, sizeof(devname), "DEVNAME=%s", name);
    dev_info[0] = devname;
    memset(&ci, 0, sizeof(ci));
    ci.dev_info_argc = 1;
    ci.dev_info_argv = dev_info;
    ci.flags = CUSE_UNRESTRICTED_IOCTL;
    rc = cuse_lowlevel_main(fargc, fargv, &ci, &dev_ops, NULL);
    free(fargv);
    OSSL_LIB_CTX_free(libctx);
    return rc;
}
