/*
 * The mode layer: everything EVP expects of a CBC, CTR or XTS cipher --
 * buffering, padding, the running IV, the CTR position inside a block,
 * parameters, copies, fork recovery -- written once above the backend
 * vtable.  Backends only ever see whole operations with an explicit IV.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_tls.h"
#include "hwaf_soft.h"
#include <hwaf/hwaf.h>

#define BLK 16
/* XTS: at most 2^20 blocks per data unit (IEEE Std 1619-2018). */
#define XTS_MAX_UNIT ((size_t)1 << 24)
/* The fast path's smallest update: XTS needs a whole block (IEEE Std 1619). */
#define FAST_LO(mode) ((mode) == HWAF_MODE_XTS ? (size_t)BLK : (size_t)1)
/* CTR: work this small goes to the kernel in one piece, tail included. */
#define CTR_BOUNCE 4096

typedef struct hwaf_cipher_ctx_st {
    const hwaf_impl *impl;          /* first: see hwaf_ctx_new() */
    hwaf_be_cipher *be;             /* kernel session, opened on first need */
    unsigned int gen;               /* fork generation be was opened in */
    hwaf_be_cipher *sw;             /* software session (hwaf_soft.h), likewise */
    int sw_live;                    /* sw's stream holds the running state:
                                     * iv (CBC, CTR), num and buf (CTR) are
                                     * stale */
    int offload;                    /* HWAF_PARAM_OFFLOAD: HWAF_OFFLOAD_* */
    /* The fast path (cipher_update_<mode>): an update of inl bytes with
     * inl - FAST_LO(mode) < fast_span (CBC: whole blocks only) goes straight
     * to the running software stream.  Worked out by fast_set() after every
     * call that can change what it depends on; fast_span 0: never. */
    size_t fast_span;
    OSSL_FUNC_cipher_update_fn *fast_fn; /* hwaf_soft_cipher_direct() */
    void *fast_c;
    /* Software work of the fast path, added to the process's counters at
     * the context's next other call or free; tally_gen: the fork
     * generation they were done in (a child leaves its parent's to it).
     * The two counts are not side by side, so that the compiler keeps
     * their adds as two plain adds: paired into vector instructions they
     * cost more under an emulated CPU (docs/benchmark.md). */
    uint64_t tally_ops;
    unsigned int tally_gen;
    uint64_t tally_bytes;
    unsigned char key[HWAF_MAX_KEY];
    size_t keylen;
    int key_set;
    unsigned char iv[BLK];          /* CBC: chaining value; CTR: next counter */
    unsigned char oiv[BLK];         /* IV as given at init */
    int iv_set;
    int enc;
    int pad;
    int finalised;                  /* final done; refuse updates until init */
    int failed;                     /* a kernel operation failed: refuse until init */
    unsigned char buf[BLK];         /* CBC: pending input; CTR: keystream */
    size_t bufsz;                   /* CBC: bytes in buf */
    unsigned int num;               /* CTR: keystream bytes of buf used */
    /* XTS units larger than one backend operation: the default provider's
     * AES-ECB with the tweak key, for the pieces' tweaks (see xts_split). */
    hwaf_impl ecb_impl;
    hwaf_be_cipher *ecb;
    /* CBC under libssl: TLS record processing (hwaf_tls.c). */
    unsigned int tlsversion;
    size_t tlsmacsize;
    unsigned char *tlsmac;          /* the last record's MAC, ours */
} hwaf_cipher_ctx;

/* The raw block cipher XTS splitting needs for its tweaks, in software;
 * never offered to OpenSSL. */
static const hwaf_alg ecb_aes[2] = {
    { "AES-128-ECB", "ecb(aes)", HWAF_KIND_CIPHER, HWAF_MODE_NONE, 16, 0, 16, 0,
      NULL, NULL, NULL, NULL, 0 },
    { "AES-256-ECB", "ecb(aes)", HWAF_KIND_CIPHER, HWAF_MODE_NONE, 32, 0, 16, 0,
      NULL, NULL, NULL, NULL, 0 },
};

#define PROV(ctx) ((ctx)->impl->prov)

static const hwaf_alg *ALG(const hwaf_cipher_ctx *ctx)
{
    return ctx->impl->alg;
}

/* ---- backend session management ---- */

static void be_drop(hwaf_cipher_ctx *ctx, int abandon)
{
    const hwaf_backend *be = ctx->impl->be;

    if (ctx->ecb != NULL) {
        hwaf_soft_cipher_other_close(ctx->ecb, &ctx->ecb_impl);
        ctx->ecb = NULL;
    }
    if (ctx->be == NULL)
        return;
    if (abandon)
        be->cipher_abandon(ctx->be);
    else
        be->cipher_close(ctx->be);
    ctx->be = NULL;
}

static int be_open(hwaf_cipher_ctx *ctx)
{
    ctx->gen = hwaf_fork_generation;
    return ctx->impl->be->cipher_open(&ctx->be, ctx->impl, ctx->key, ctx->keylen);
}

/* The session to use now: reopened in a child after fork(). */
static hwaf_be_cipher *be_get(hwaf_cipher_ctx *ctx)
{
    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return NULL;
    }
    if (ctx->be != NULL && ctx->gen != hwaf_fork_generation) {
        HWAF_DEBUG("cipher %s: reopening after fork", ctx->impl->drv.name);
        be_drop(ctx, 1);
    }
    if (ctx->be == NULL && !be_open(ctx)) {
        HWAF_RAISE(PROV(ctx), HWAF_R_FORK_RECOVERY_FAILED, "driver %s",
                   ctx->impl->drv.name);
        return NULL;
    }
    return ctx->be;
}

/*
 * One backend operation.  After a failure the session may hold half an
 * operation (data queued in its socket or pipe) and the running IV no
 * longer matches what the caller got: refuse the context until the next
 * init, which starts again on a fresh session.
 */
static int be_crypt(hwaf_cipher_ctx *ctx, const hwaf_backend *b, hwaf_be_cipher *be, int enc,
                    const unsigned char *iv, const unsigned char *in,
                    unsigned char *out, size_t len)
{
    if (b->cipher_crypt(be, enc, iv, in, out, len))
        return 1;
    ctx->failed = 1;
    return 0;
}

static void sw_drop(hwaf_cipher_ctx *ctx)
{
    if (ctx->sw != NULL)
        ctx->impl->soft->be->cipher_close(ctx->sw);
    ctx->sw = NULL;
    ctx->sw_live = 0;
}

/* The direction of the software stream: CTR only ever encrypts. */
static int sw_dir(const hwaf_cipher_ctx *ctx)
{
    return ctx->impl->alg->mode == HWAF_MODE_CTR ? 1 : ctx->enc;
}

/* The running IV or counter into ctx->iv, and for CTR the position inside
 * its block into ctx->num (the default provider's context keeps both). */
static int sw_where(hwaf_cipher_ctx *ctx)
{
    int mode = ALG(ctx)->mode;

    return mode == HWAF_MODE_XTS  /* XTS: the tweak never changes */
           || hwaf_soft_cipher_iv(ctx->sw, sw_dir(ctx), ctx->iv,
                                  mode == HWAF_MODE_CTR ? &ctx->num : NULL);
}

/*
 * The software stream's state back into the context (iv; for CTR inside a
 * block, num and the keystream block too); the stream ends.  Before an
 * operation goes to the kernel, before a copy, at init.
 */
static int sw_stop(hwaf_cipher_ctx *ctx)
{
    int ok;

    if (!ctx->sw_live)
        return 1;
    ctx->sw_live = 0;
    ok = sw_where(ctx)
         && (ALG(ctx)->mode != HWAF_MODE_CTR || ctx->num == 0
             || hwaf_soft_cipher_keystream(ctx->sw, ctx->iv, ctx->buf));
    if (!ok)
        ctx->failed = 1;
    return ok;
}

/* Where the running stream stands into ctx->iv and ctx->num; it goes on. */
static int sw_peek(hwaf_cipher_ctx *ctx)
{
    return !ctx->sw_live || sw_where(ctx);
}

/* The fast path's counts into the process's counters (in the process
 * that did the work: a child finds its parent's here and leaves them). */
static void tally_fold(hwaf_cipher_ctx *ctx)
{
    if (ctx->tally_ops != 0 && ctx->tally_gen == hwaf_fork_generation)
        hwaf_stats_add_soft_n(ctx->tally_ops, ctx->tally_bytes);
    ctx->tally_ops = ctx->tally_bytes = 0;
    ctx->tally_gen = hwaf_fork_generation;
}

/*
 * After any call but a fast update: the updates the running software stream
 * can take as they are, nothing held back here (CBC: no partial block, and
 * not a decryption that keeps its last block for the padding), no TLS
 * record, below the threshold; the common case of a context below its
 * threshold.  The fast path's counts are added up here too.
 */
static void fast_set(hwaf_cipher_ctx *ctx)
{
    const hwaf_alg *alg = ALG(ctx);
    size_t hi, lo;

    tally_fold(ctx);
    ctx->fast_span = 0;
    if (!ctx->sw_live || ctx->finalised || ctx->failed || ctx->offload == HWAF_OFFLOAD_KERNEL)
        return;
    hwaf_soft_cipher_direct(ctx->sw, sw_dir(ctx), &ctx->fast_fn, &ctx->fast_c);
    hi = ctx->offload == HWAF_OFFLOAD_SOFTWARE ? SIZE_MAX : ctx->impl->offload_min;
    switch (alg->mode) {
    case HWAF_MODE_CBC:
        if (ctx->bufsz != 0 || (!ctx->enc && ctx->pad) || ctx->tlsversion != 0)
            return;
        break;
    case HWAF_MODE_CTR:
        break;
    default:
        if (hi > XTS_MAX_UNIT + 1)
            hi = XTS_MAX_UNIT + 1;
    }
    lo = FAST_LO(alg->mode);
    ctx->fast_span = hi > lo ? hi - lo : 0;
}

/* Size-aware dispatch: 1 when an operation of n bytes is computed in software. */
static int sw_wanted(const hwaf_cipher_ctx *ctx, size_t n)
{
    return ctx->impl->soft != NULL && !hwaf_offload(ctx->impl, ctx->offload, n);
}

/*
 * n bytes in software, continuing the stream; a stream not running starts
 * from the context's state (CTR: at a block boundary, see ctr_crypt).
 */
static int sw_run(hwaf_cipher_ctx *ctx, const unsigned char *in, unsigned char *out,
                  size_t n)
{
    const hwaf_impl *soft = ctx->impl->soft;
    int dir = sw_dir(ctx);

    if (!ctx->sw_live) {
        if (!ctx->key_set) {
            HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
            return 0;
        }
        if (ctx->sw == NULL
            && !soft->be->cipher_open(&ctx->sw, soft, ctx->key, ctx->keylen))
            return 0;
        if (!hwaf_soft_cipher_start(ctx->sw, dir, ctx->iv)) {
            ctx->failed = 1;
            return 0;
        }
        ctx->sw_live = 1;
    }
    if (hwaf_soft_cipher_run(ctx->sw, dir, in, out, n))
        return 1;
    ctx->sw_live = 0;
    ctx->failed = 1;
    return 0;
}

/*
 * The kernel session for an operation, the software stream's state taken
 * back first.  NULL with *soft set when the session cannot be had for want
 * of descriptors or in a sandbox and software serves the operation instead
 * (hwaf_soft.h); NULL with *soft 0 on an error (raised).
 */
static hwaf_be_cipher *kernel_get(hwaf_cipher_ctx *ctx, int *soft)
{
    hwaf_be_cipher *be;
    hwaf_open_try t;

    *soft = 0;
    /* short of descriptors a moment ago: the software stream goes on */
    if ((ctx->be == NULL || ctx->gen != hwaf_fork_generation)
        && (*soft = hwaf_open_backoff(ctx->impl, ctx->offload)))
        return NULL;
    if (!sw_stop(ctx))
        return NULL;
    if (ctx->be != NULL && ctx->gen == hwaf_fork_generation)
        return ctx->be;
    hwaf_open_begin(ctx->impl, &t);
    if (hwaf_open_verify(ctx->impl, &t) && (be = be_get(ctx)) != NULL) {
        hwaf_open_end(ctx->impl, &t);
        return be;
    }
    *soft = hwaf_open_fallback(ctx->impl, &t, ctx->offload);
    return NULL;
}

/*
 * Open the kernel session now; also 1 when it cannot be had for want of
 * descriptors or in a sandbox and software can serve the context (the
 * session stays closed, operations go to software until one opens).
 */
static int be_open_or_soft(hwaf_cipher_ctx *ctx)
{
    hwaf_open_try t;

    if (hwaf_open_backoff(ctx->impl, ctx->offload))
        return 1;
    hwaf_open_begin(ctx->impl, &t);
    if (hwaf_open_verify(ctx->impl, &t) && be_open(ctx)) {
        hwaf_open_end(ctx->impl, &t);
        return 1;
    }
    return hwaf_open_fallback(ctx->impl, &t, ctx->offload);
}

/* Open the kernel session at init, or only when an operation needs it. */
static int eager(const hwaf_cipher_ctx *ctx)
{
    return ctx->impl->soft == NULL || hwaf_offload_forced(ctx->impl, ctx->offload);
}

/* ---- the modes ---- */

static void ctr_add(unsigned char ctr[BLK], size_t blocks)
{
    int i;
    uint64_t carry = blocks;

    for (i = BLK - 1; i >= 0 && carry != 0; i--) {
        carry += ctr[i];
        ctr[i] = (unsigned char)carry;
        carry >>= 8;
    }
}

/* CBC over whole blocks, split to fit the backend, IV carried along. */
static int cbc_blocks(hwaf_cipher_ctx *ctx, unsigned char *out,
                      const unsigned char *in, size_t len)
{
    const hwaf_backend *b = ctx->impl->be;
    hwaf_be_cipher *be;
    size_t max, n;
    unsigned char next[BLK];
    int soft;

    if (sw_wanted(ctx, len))
        return sw_run(ctx, in, out, len);
    if ((be = kernel_get(ctx, &soft)) == NULL)
        return soft && sw_run(ctx, in, out, len);
    max = b->cipher_max(be) & ~(size_t)(BLK - 1);
    while (len > 0) {
        n = len < max ? len : max;
        if (!ctx->enc)  /* before an in-place decrypt overwrites it */
            memcpy(next, in + n - BLK, BLK);
        if (!be_crypt(ctx, b, be, ctx->enc, ctx->iv, in, out, n))
            return 0;
        memcpy(ctx->iv, ctx->enc ? out + n - BLK : next, BLK);
        in += n;
        out += n;
        len -= n;
    }
    return 1;
}

/* CTR: any length, position inside a block kept in num/buf. */
/* Finish the keystream block left over from the last call. */
static void ctr_leftover(hwaf_cipher_ctx *ctx, unsigned char **out,
                         const unsigned char **in, size_t *len)
{
    while (ctx->num != 0 && *len > 0) {
        *(*out)++ = *(*in)++ ^ ctx->buf[ctx->num];
        ctx->num = (ctx->num + 1) % BLK;
        (*len)--;
    }
}

/*
 * CTR in software: a running stream keeps counter, num and keystream (in
 * the default provider's context; ctx->num is stale meanwhile); one that
 * starts does so at a block boundary, after what is left of the context's
 * own keystream block.
 */
static int ctr_soft(hwaf_cipher_ctx *ctx, unsigned char *out,
                    const unsigned char *in, size_t len)
{
    if (!ctx->sw_live)
        ctr_leftover(ctx, &out, &in, &len);
    return len == 0 || sw_run(ctx, in, out, len);
}

static int ctr_crypt(hwaf_cipher_ctx *ctx, unsigned char *out,
                     const unsigned char *in, size_t len)
{
    const hwaf_backend *b = ctx->impl->be;
    hwaf_be_cipher *be;
    size_t max, n, i, full, tail;
    unsigned char blk[CTR_BOUNCE + BLK];
    int soft;

    if (len == 0)
        return 1;
    if (sw_wanted(ctx, len))
        return ctr_soft(ctx, out, in, len);
    if (!sw_stop(ctx))
        return 0;
    ctr_leftover(ctx, &out, &in, &len);
    if (len == 0)
        return 1;
    if ((be = kernel_get(ctx, &soft)) == NULL)
        return soft && ctr_soft(ctx, out, in, len);
    max = b->cipher_max(be) & ~(size_t)(BLK - 1);
    full = len & ~(size_t)(BLK - 1);
    tail = len - full;

    if (tail != 0 && full <= CTR_BOUNCE - BLK) {
        /*
         * Small work: one operation over a copy padded with zeros; the
         * padding comes back as the rest of the last keystream block.
         */
        memcpy(blk, in, len);
        memset(blk + len, 0, BLK - tail);
        if (!be_crypt(ctx, b, be, 1, ctx->iv, blk, blk, full + BLK))
            return 0;
        /* The keystream from our copy, before out (maybe in) is written. */
        for (i = 0; i < BLK; i++)
            ctx->buf[i] = blk[full + i] ^ (i < tail ? in[full + i] : 0);
        memcpy(out, blk, len);
        ctr_add(ctx->iv, full / BLK + 1);
        ctx->num = (unsigned int)tail;
        OPENSSL_cleanse(blk, full + BLK);
        return 1;
    }
    while (full > 0) {
        n = full < max ? full : max;
        if (!be_crypt(ctx, b, be, 1, ctx->iv, in, out, n))
            return 0;
        ctr_add(ctx->iv, n / BLK);
        in += n;
        out += n;
        full -= n;
    }
    if (tail != 0) {
        memcpy(blk, in, tail);
        memset(blk + tail, 0, BLK - tail);
        if (!be_crypt(ctx, b, be, 1, ctx->iv, blk, blk, BLK))
            return 0;
        for (i = 0; i < BLK; i++)
            ctx->buf[i] = blk[i] ^ (i < tail ? in[i] : 0);
        memcpy(out, blk, tail);
        ctr_add(ctx->iv, 1);
        ctx->num = (unsigned int)tail;
        OPENSSL_cleanse(blk, BLK);
    }
    return 1;
}

/*
 * An XTS data unit larger than the backend takes in one operation (AF_ALG:
 * its socket's send buffer).  The tweak of block j is E_K2(IV) * alpha^j, and
 * the kernel derives it from the IV it is given, so a piece starting at block
 * j gets IV_j = D_K2(E_K2(IV) * alpha^j).  Those two blocks per piece are
 * computed by the default provider's AES-ECB with the tweak key: a kernel
 * ecb(aes) would be whatever driver the kernel ranks first, one the
 * implementation's known answer never checked, of any hardware class.  The
 * data itself goes through the implementation's own driver.  Pieces are
 * whole blocks; the last keeps at least two blocks' worth when the unit
 * ends in a partial block, so that ciphertext stealing happens inside it.
 */
static int xts_split(hwaf_cipher_ctx *ctx, hwaf_be_cipher *be, size_t max,
                     unsigned char *out, const unsigned char *in, size_t len)
{
    const hwaf_backend *b = &hwaf_backend_soft;
    size_t half = ctx->keylen / 2, off = 0, n, rem;
    unsigned char t[BLK], piv[BLK];
    int ok = 0;

    if (ctx->ecb == NULL) {
        if (ctx->impl->soft == NULL) {
            HWAF_RAISE(PROV(ctx), HWAF_R_XTS_DATA_UNIT_TOO_LARGE,
                       "%zu bytes: the %s backend takes at most %zu in one operation, "
                       "and splitting the unit needs the default provider's AES-ECB",
                       len, ctx->impl->be->name, max);
            return 0;
        }
        ctx->ecb = hwaf_soft_cipher_other(ctx->impl, &ecb_aes[half == 32], &ctx->ecb_impl,
                                          ctx->key + half, half);
        if (ctx->ecb == NULL)
            return 0;
    }
    if (!b->cipher_crypt(ctx->ecb, 1, NULL, ctx->iv, t, BLK))
        goto end;
    while (off < len) {
        /* the backend's limit again: a device that refused a piece may
         * have lowered it (be_devcrypto.c) */
        if (off != 0)
            max = ctx->impl->be->cipher_max(be);
        max &= ~(size_t)(BLK - 1);
        if (max < 4 * BLK)     /* so that no piece is empty (limits are KiB) */
            max = 4 * BLK;
        rem = len - off;
        n = rem;
        if (rem > max) {
            n = max;
            if (rem % BLK != 0 && rem - n < 2 * BLK)
                n = (rem - 2 * BLK) & ~(size_t)(BLK - 1);
        }
        if (off == 0)
            memcpy(piv, ctx->iv, BLK);
        else if (!b->cipher_crypt(ctx->ecb, 0, NULL, t, piv, BLK))
            goto end;
        if (!be_crypt(ctx, ctx->impl->be, be, ctx->enc, piv, in + off, out + off, n))
            goto end;
        hwaf_xts_mul(t, n / BLK);
        off += n;
    }
    ok = 1;
 end:
    OPENSSL_cleanse(t, sizeof(t));
    OPENSSL_cleanse(piv, sizeof(piv));
    return ok;
}

/* XTS: one whole data unit per call; the tweak does not carry over. */
static int xts_unit(hwaf_cipher_ctx *ctx, unsigned char *out,
                    const unsigned char *in, size_t len)
{
    const hwaf_backend *b = ctx->impl->be;
    hwaf_be_cipher *be;
    size_t max;
    int soft;

    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    if (!ctx->iv_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_INITIALISED, "xts needs a tweak (iv)");
        return 0;
    }
    if (len < BLK) {
        HWAF_RAISE(PROV(ctx), HWAF_R_XTS_DATA_UNIT_TOO_SMALL,
                   "%zu bytes, at least %d needed", len, BLK);
        return 0;
    }
    if (len > XTS_MAX_UNIT) {
        HWAF_RAISE(PROV(ctx), HWAF_R_XTS_DATA_UNIT_TOO_LARGE,
                   "%zu bytes, at most %zu", len, XTS_MAX_UNIT);
        return 0;
    }
    if (sw_wanted(ctx, len))
        return sw_run(ctx, in, out, len);
    if ((be = kernel_get(ctx, &soft)) == NULL)
        return soft && sw_run(ctx, in, out, len);
    max = b->cipher_max(be);
    if (len > max)
        return xts_split(ctx, be, max, out, in, len);
    return be_crypt(ctx, b, be, ctx->enc, ctx->iv, in, out, len);
}

/* ---- EVP dispatch ---- */

static OSSL_FUNC_cipher_freectx_fn cipher_freectx;
static OSSL_FUNC_cipher_dupctx_fn cipher_dupctx;
static OSSL_FUNC_cipher_encrypt_init_fn cipher_einit;
static OSSL_FUNC_cipher_decrypt_init_fn cipher_dinit;
static OSSL_FUNC_cipher_final_fn cipher_final;
static OSSL_FUNC_cipher_cipher_fn cipher_cipher;
static OSSL_FUNC_cipher_get_ctx_params_fn cipher_get_ctx_params;
static OSSL_FUNC_cipher_set_ctx_params_fn cipher_set_ctx_params;
static OSSL_FUNC_cipher_gettable_ctx_params_fn cipher_gettable_ctx_params;

static void *cipher_newctx(void *provctx, int alg, int slot)
{
    hwaf_cipher_ctx *ctx = hwaf_ctx_new(provctx, alg, slot, sizeof(*ctx));

    if (ctx == NULL)
        return NULL;
    ctx->keylen = ctx->impl->alg->keylen;
    ctx->pad = 1;
    ctx->offload = HWAF_OFFLOAD_AUTO;
    return ctx;
}

static void cipher_freectx(void *vctx)
{
    hwaf_cipher_ctx *ctx = vctx;

    if (ctx == NULL)
        return;
    /* A child must not tear down what its parent still uses. */
    be_drop(ctx, ctx->gen != hwaf_fork_generation);
    sw_drop(ctx);
    tally_fold(ctx);
    OPENSSL_free(ctx->tlsmac);
    OPENSSL_clear_free(ctx, sizeof(*ctx));
}

static void *cipher_dupctx(void *vctx)
{
    hwaf_cipher_ctx *src = vctx, *dst;
    /* The copy starts from the whole state: the source's own software
     * stream ends here and restarts at its next operation. */
    int stopped = sw_stop(src);

    fast_set(src);
    if (!stopped)
        return NULL;
    dst = OPENSSL_malloc(sizeof(*dst));
    if (dst == NULL) {
        HWAF_RAISE(PROV(src), HWAF_R_MALLOC_FAILURE, NULL);
        return NULL;
    }
    *dst = *src;
    dst->be = NULL;
    dst->ecb = NULL;
    dst->sw = NULL;     /* reopened from the key on first need */
    dst->sw_live = 0;
    dst->tally_ops = dst->tally_bytes = 0;
    fast_set(dst);
    dst->tlsmac = NULL;
    if (src->tlsmac != NULL
        && (dst->tlsmac = OPENSSL_memdup(src->tlsmac, src->tlsmacsize)) == NULL) {
        OPENSSL_clear_free(dst, sizeof(*dst));
        return NULL;
    }
    /* The copy gets its own kernel session: either may be re-keyed. */
    if (dst->key_set && src->be != NULL && !be_open_or_soft(dst)) {
        OPENSSL_clear_free(dst, sizeof(*dst));
        return NULL;
    }
    return dst;
}

static int set_params_body(hwaf_cipher_ctx *ctx, const OSSL_PARAM params[]);

/*
 * A new IV replaces the whole state of the stream, so a context running in
 * software takes nothing back from it: its stream restarts at once from
 * the new IV with the default provider's own init (an application that
 * gives a new IV per message, as OpenVPN does per packet, pays about what
 * the default provider alone costs).  Without an IV the state is taken
 * back (CTR re-initialised without an IV goes on from the running counter).
 */
static int cipher_init(hwaf_cipher_ctx *ctx, const unsigned char *key,
                       size_t keylen, const unsigned char *iv, size_t ivlen,
                       const OSSL_PARAM params[], int enc)
{
    const hwaf_alg *alg = ALG(ctx);
    int restart = ctx->sw_live && iv != NULL && ivlen == alg->ivlen;

    if (restart)
        ctx->sw_live = 0;
    else if (!sw_stop(ctx))
        return 0;
    ctx->enc = enc ? 1 : 0;
    ctx->bufsz = 0;
    ctx->num = 0;
    ctx->finalised = 0;
    if (ctx->failed) {
        /* Whatever the failed operation left behind goes with its session;
         * the next operation opens a fresh one from the kept key. */
        be_drop(ctx, ctx->gen != hwaf_fork_generation);
        ctx->failed = 0;
    }

    if (iv != NULL) {
        if (ivlen != alg->ivlen) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH,
                       "%zu bytes, %s takes %u", ivlen, ctx->impl->alg->kname,
                       alg->ivlen);
            return 0;
        }
        memcpy(ctx->iv, iv, ivlen);
        memcpy(ctx->oiv, iv, ivlen);
        ctx->iv_set = 1;
    } else if (ctx->iv_set && alg->mode == HWAF_MODE_CBC) {
        /* As OpenSSL: a CBC re-init without an IV restarts from the old one. */
        memcpy(ctx->iv, ctx->oiv, BLK);
    }

    if (key != NULL) {
        if (keylen != alg->keylen) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_KEY_LENGTH,
                       "%zu bytes, this cipher takes %u", keylen, alg->keylen);
            return 0;
        }
        if (alg->mode == HWAF_MODE_XTS && enc
            && CRYPTO_memcmp(key, key + keylen / 2, keylen / 2) == 0) {
            HWAF_RAISE(PROV(ctx), HWAF_R_XTS_DUPLICATED_KEYS, NULL);
            return 0;
        }
        if (!(ctx->key_set && CRYPTO_memcmp(ctx->key, key, keylen) == 0
              && (ctx->be != NULL || !eager(ctx)))) {
            be_drop(ctx, ctx->gen != hwaf_fork_generation);
            /* The software session is keyed again in place: a caller that
             * changes the key at every use (OpenSSL's CTR-DRBG, once per
             * RAND_bytes) pays no free and new of the default provider's
             * contexts. */
            if (ctx->sw != NULL)
                hwaf_soft_cipher_rekey(ctx->sw, key, keylen);
            ctx->sw_live = 0;
            ctx->key_set = 0;
            memcpy(ctx->key, key, keylen);
            ctx->keylen = keylen;
            if (eager(ctx) && !be_open_or_soft(ctx)) {
                OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
                return 0;
            }
            ctx->key_set = 1;
        }
    }
    if (!set_params_body(ctx, params))
        return 0;
    if (restart && ctx->sw != NULL && ctx->key_set && ctx->num == 0
        && ctx->offload != HWAF_OFFLOAD_KERNEL) {
        if (!hwaf_soft_cipher_start(ctx->sw, sw_dir(ctx), ctx->iv)) {
            ctx->failed = 1;
            return 0;
        }
        ctx->sw_live = 1;
    }
    return 1;
}

static int cipher_einit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    int ok = cipher_init(vctx, key, keylen, iv, ivlen, params, 1);

    fast_set(vctx);
    return ok;
}

static int cipher_dinit(void *vctx, const unsigned char *key, size_t keylen,
                        const unsigned char *iv, size_t ivlen,
                        const OSSL_PARAM params[])
{
    int ok = cipher_init(vctx, key, keylen, iv, ivlen, params, 0);

    fast_set(vctx);
    return ok;
}

/* Not after a failed kernel operation: see be_crypt(). */
static int cipher_usable(hwaf_cipher_ctx *ctx)
{
    if (ctx->failed) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_INITIALISED,
                   "a kernel operation failed; initialise the context again");
        return 0;
    }
    return 1;
}

/* Common entry checks of update and final. */
static int cipher_ready(hwaf_cipher_ctx *ctx)
{
    if (ctx->finalised) {
        HWAF_RAISE(PROV(ctx), HWAF_R_UPDATE_AFTER_FINAL,
                   "initialise the context again first");
        return 0;
    }
    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    return cipher_usable(ctx);
}

/* Take up to a block's worth of input into buf; return whole blocks left. */
static size_t fill_block(hwaf_cipher_ctx *ctx, const unsigned char **in, size_t *inl)
{
    size_t need = BLK - ctx->bufsz, take = *inl < need ? *inl : need;

    if (take > 0) {  /* an empty update may come with in == NULL */
        memcpy(ctx->buf + ctx->bufsz, *in, take);
        ctx->bufsz += take;
        *in += take;
        *inl -= take;
    }
    return *inl & ~(size_t)(BLK - 1);
}

/* CBC update: the block logic of OpenSSL's generic block ciphers. */
/*
 * One TLS record per update, in place, as OpenSSL's generic CBC does it
 * for libssl: encryption adds the padding, decryption removes explicit IV,
 * padding and MAC (hwaf_tls.c) and keeps the MAC for the tls-mac parameter.
 */
static int tls_record(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                      size_t outsize, const unsigned char *in, size_t inl)
{
    size_t i, padnum;

    if (in == NULL || in != out || outsize < inl || !ctx->pad) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER,
                   "TLS records are processed in place, with padding on");
        return 0;
    }
    if (ctx->enc) {
        padnum = BLK - inl % BLK;
        if (outsize < inl + padnum) {
            HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
            return 0;
        }
        for (i = inl; i < inl + padnum; i++)
            out[i] = (unsigned char)(padnum - 1);
        inl += padnum;
    }
    if (inl % BLK != 0) {
        HWAF_RAISE(PROV(ctx), HWAF_R_WRONG_FINAL_BLOCK_LENGTH,
                   "TLS record of %zu bytes", inl);
        return 0;
    }
    if (inl > 0 && !cbc_blocks(ctx, out, in, inl))
        return 0;
    OPENSSL_free(ctx->tlsmac);
    ctx->tlsmac = NULL;
    *outl = inl;
    if (!ctx->enc
        && !hwaf_tls_unpad(hwaf_soft_libctx(), ctx->tlsversion, out, outl, BLK,
                           ctx->tlsmacsize, &ctx->tlsmac)) {
        HWAF_RAISE(PROV(ctx), HWAF_R_BAD_DECRYPT, "malformed TLS record");
        return 0;
    }
    return 1;
}

static int cbc_update(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                      size_t outsize, const unsigned char *in, size_t inl)
{
    size_t outlint = 0, nextblocks;

    if (ctx->tlsversion > 0)
        return tls_record(ctx, out, outl, outsize, in, inl);

    if (ctx->bufsz != 0)
        nextblocks = fill_block(ctx, &in, &inl);
    else
        nextblocks = inl & ~(size_t)(BLK - 1);

    /*
     * Decrypting with padding, an update that ends on a block boundary
     * holds its last block back: it may be the padded one.
     */
    if (ctx->bufsz == BLK && (ctx->enc || inl > 0 || !ctx->pad)) {
        if (outsize < BLK) {
            HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
            return 0;
        }
        if (!cbc_blocks(ctx, out, ctx->buf, BLK))
            return 0;
        ctx->bufsz = 0;
        outlint = BLK;
        out += BLK;
    }
    if (nextblocks > 0) {
        if (!ctx->enc && ctx->pad && nextblocks == inl)
            nextblocks -= BLK;
        outlint += nextblocks;
        if (outsize < outlint) {
            HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
            return 0;
        }
    }
    if (nextblocks > 0) {
        if (!cbc_blocks(ctx, out, in, nextblocks))
            return 0;
        in += nextblocks;
        inl -= nextblocks;
    }
    if (inl != 0) {
        memcpy(ctx->buf + ctx->bufsz, in, inl);
        ctx->bufsz += inl;
    }
    *outl = outlint;
    return 1;
}

static int cbc_final(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                     size_t outsize)
{
    size_t i, padv;

    if (ctx->enc) {
        if (ctx->pad) {
            padv = BLK - ctx->bufsz;
            for (i = ctx->bufsz; i < BLK; i++)
                ctx->buf[i] = (unsigned char)padv;
            ctx->bufsz = BLK;
        } else if (ctx->bufsz == 0) {
            *outl = 0;
            return 1;
        } else if (ctx->bufsz != BLK) {
            HWAF_RAISE(PROV(ctx), HWAF_R_WRONG_FINAL_BLOCK_LENGTH,
                       "%zu bytes left over with padding off", ctx->bufsz);
            return 0;
        }
        if (outsize < BLK) {
            HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
            return 0;
        }
        if (!cbc_blocks(ctx, out, ctx->buf, BLK))
            return 0;
        ctx->bufsz = 0;
        *outl = BLK;
        return 1;
    }

    if (ctx->bufsz != BLK) {
        if (ctx->bufsz == 0 && !ctx->pad) {
            *outl = 0;
            return 1;
        }
        HWAF_RAISE(PROV(ctx), HWAF_R_WRONG_FINAL_BLOCK_LENGTH,
                   "%zu bytes left over", ctx->bufsz);
        return 0;
    }
    if (!cbc_blocks(ctx, ctx->buf, ctx->buf, BLK))
        return 0;
    if (ctx->pad) {
        unsigned int bad;

        padv = ctx->buf[BLK - 1];
        bad = padv == 0 || padv > BLK;
        for (i = 0; !bad && i < padv; i++)
            bad |= ctx->buf[BLK - 1 - i] != padv;
        if (bad) {
            HWAF_RAISE(PROV(ctx), HWAF_R_BAD_DECRYPT, NULL);
            return 0;
        }
        ctx->bufsz = BLK - padv;
    }
    if (outsize < ctx->bufsz) {
        HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
        return 0;
    }
    memcpy(out, ctx->buf, ctx->bufsz);
    *outl = ctx->bufsz;
    ctx->bufsz = 0;
    return 1;
}

/* CTR and XTS updates: all input in, all output out. */
static int stream_update(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    if (ALG(ctx)->mode == HWAF_MODE_CTR && inl == 0) {
        *outl = 0;
        return 1;
    }
    if (outsize < inl) {
        HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
        return 0;
    }
    if (ALG(ctx)->mode == HWAF_MODE_CTR ? !ctr_crypt(ctx, out, in, inl)
                                       : !xts_unit(ctx, out, in, inl))
        return 0;
    *outl = inl;
    return 1;
}

static __attribute__((noinline)) int slow_update(hwaf_cipher_ctx *ctx, unsigned char *out,
                                                 size_t *outl, size_t outsize,
                                                 const unsigned char *in, size_t inl)
{
    int ok;

    if (!cipher_ready(ctx))
        return 0;
    if (ALG(ctx)->mode == HWAF_MODE_CBC)
        ok = cbc_update(ctx, out, outl, outsize, in, inl);
    else
        ok = stream_update(ctx, out, outl, outsize, in, inl);
    fast_set(ctx);
    return ok;
}

/*
 * One test for the common case of a context below its threshold, on the
 * software side and staying there: no other check, no counter shared with
 * other threads, and then the default provider's own function as the last
 * call (a jump).  The state is the default provider's context's alone, so
 * an update it refuses (it raises its own error) leaves the stream as it
 * leaves its own, and the next update goes on from there as it would; such
 * an update is counted all the same (it cannot happen on the sizes that
 * come here: whole blocks, at least a block for XTS, room for the output).
 * One update function per mode, so that the mode's smallest size and
 * CBC's whole blocks are constants of the test, not loads from the context.
 */
static inline int fast_update(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                              size_t outsize, const unsigned char *in, size_t inl,
                              size_t lo, size_t mask)
{
    if (inl - lo < ctx->fast_span && (inl & mask) == 0 && inl <= outsize
        && ctx->tally_gen == hwaf_fork_generation) {
        ctx->tally_ops++;
        ctx->tally_bytes += inl;
        return ctx->fast_fn(ctx->fast_c, out, outl, inl, in, inl);
    }
    return slow_update(ctx, out, outl, outsize, in, inl);
}

#define CIPHER_UPDATE_MODE(mode, mask)                                             \
    static OSSL_FUNC_cipher_update_fn cipher_update_##mode;                        \
    static int cipher_update_##mode(void *vctx, unsigned char *out, size_t *outl,  \
                                    size_t outsize, const unsigned char *in,       \
                                    size_t inl)                                    \
    {                                                                              \
        return fast_update(vctx, out, outl, outsize, in, inl,                      \
                           FAST_LO(HWAF_MODE_##mode), mask);                       \
    }
CIPHER_UPDATE_MODE(CBC, BLK - 1)
CIPHER_UPDATE_MODE(CTR, 0)
CIPHER_UPDATE_MODE(XTS, 0)

static int final_body(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                      size_t outsize)
{
    int ok = 1;

    /* As OpenSSL's XTS: a final has nothing to do and needs no key. */
    if (ALG(ctx)->mode == HWAF_MODE_XTS && !ctx->finalised) {
        *outl = 0;
        ctx->finalised = 1;
        return 1;
    }
    if (!cipher_ready(ctx))
        return 0;
    if (ctx->tlsversion > 0) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_SUPPORTED, "final in TLS record mode");
        return 0;
    }
    if (ALG(ctx)->mode == HWAF_MODE_CBC)
        ok = cbc_final(ctx, out, outl, outsize);
    else
        *outl = 0;
    ctx->finalised = 1;
    return ok;
}

static int cipher_final(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsize)
{
    int ok = final_body(vctx, out, outl, outsize);

    fast_set(vctx);
    return ok;
}

/* EVP_Cipher(): raw processing, no padding or buffering. */
static int cipher_body(hwaf_cipher_ctx *ctx, unsigned char *out, size_t *outl,
                       size_t outsize, const unsigned char *in, size_t inl)
{
    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    if (!cipher_usable(ctx))
        return 0;
    if (outsize < inl) {
        HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, NULL);
        return 0;
    }
    switch (ALG(ctx)->mode) {
    case HWAF_MODE_CBC:
        if (inl % BLK != 0) {
            HWAF_RAISE(PROV(ctx), HWAF_R_WRONG_FINAL_BLOCK_LENGTH,
                       "%zu bytes is not a whole number of blocks", inl);
            return 0;
        }
        if (inl > 0 && !cbc_blocks(ctx, out, in, inl))
            return 0;
        break;
    case HWAF_MODE_CTR:
        if (!ctr_crypt(ctx, out, in, inl))
            return 0;
        break;
    default:
        if (!xts_unit(ctx, out, in, inl))
            return 0;
    }
    *outl = inl;
    return 1;
}

static int cipher_cipher(void *vctx, unsigned char *out, size_t *outl,
                         size_t outsize, const unsigned char *in, size_t inl)
{
    int ok = cipher_body(vctx, out, outl, outsize, in, inl);

    fast_set(vctx);
    return ok;
}

/* ---- parameters ---- */

static int cipher_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    hwaf_cipher_ctx *ctx = vctx;
    OSSL_PARAM *p;

    /* What EVP asks for alone at every init, the IV length, without
     * looking for every other name first. */
    if (params != NULL && params[0].key != NULL && params[1].key == NULL
        && strcmp(params[0].key, OSSL_CIPHER_PARAM_IVLEN) == 0)
        return OSSL_PARAM_set_size_t(params, ALG(ctx)->ivlen)
               ? 1 : hwaf_param_failed(PROV(ctx), params[0].key);

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_PADDING)) != NULL
        && !OSSL_PARAM_set_uint(p, (unsigned int)ctx->pad))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_NUM)) != NULL
        && (!sw_peek(ctx) || !OSSL_PARAM_set_uint(p, ctx->num)))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IV)) != NULL
        && !hwaf_set_octets(p, ctx->oiv, ALG(ctx)->ivlen))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_UPDATED_IV)) != NULL
        && (!sw_peek(ctx) || !hwaf_set_octets(p, ctx->iv, ALG(ctx)->ivlen)))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_TLS_MAC)) != NULL
        && !OSSL_PARAM_set_octet_ptr(p, ctx->tlsmac, ctx->tlsmacsize))
        return hwaf_param_failed(PROV(ctx), p->key);
    return hwaf_cipher_ctx_get_common(ctx->impl, params, ctx->keylen, ALG(ctx)->ivlen,
                                      ctx->offload);
}

static const OSSL_PARAM cipher_known_gettable_ctx_params[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_PADDING, NULL),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_NUM, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, NULL, 0),
    OSSL_PARAM_octet_ptr(OSSL_CIPHER_PARAM_TLS_MAC, NULL, 0),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    HWAF_IMPL_GETTABLE_PARAMS,
    OSSL_PARAM_END
};

static const OSSL_PARAM *cipher_gettable_ctx_params(void *cctx, void *provctx)
{
    return cipher_known_gettable_ctx_params;
}

/*
 * Settable, as OpenSSL's default provider: padding, num, use-bits (which
 * only CFB1 heeds), tls-version and tls-mac-size for CBC and CTR, the key
 * length for XTS.  One deliberate difference: keylen is settable on every
 * cipher and a length other than the cipher's is refused (OpenSSL ignores
 * it on CBC and CTR, so a wrong key length goes unnoticed there).
 */
/* Padding on or off (XTS, as OpenSSL's, takes none and ignores it). */
static int set_padding(hwaf_cipher_ctx *ctx, const OSSL_PARAM *p)
{
    unsigned int pad;

    if (ALG(ctx)->mode == HWAF_MODE_XTS)
        return 1;
    if (!OSSL_PARAM_get_uint(p, &pad)) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "padding");
        return 0;
    }
    ctx->pad = pad ? 1 : 0;
    return 1;
}

static int set_params_body(hwaf_cipher_ctx *ctx, const OSSL_PARAM params[])
{
    const OSSL_PARAM *p;

    if (params == NULL)
        return 1;
    /* EVP sets the padding alone at every init: without looking for
     * every other name. */
    if (params[0].key != NULL && params[1].key == NULL
        && strcmp(params[0].key, OSSL_CIPHER_PARAM_PADDING) == 0)
        return set_padding(ctx, params);
    if (!hwaf_cipher_ctx_set_common(ctx->impl, params, &ctx->offload))
        return 0;
    if (ALG(ctx)->mode == HWAF_MODE_XTS)
        return 1;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_PADDING)) != NULL
        && !set_padding(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_NUM)) != NULL) {
        unsigned int num;

        if (!OSSL_PARAM_get_uint(p, &num) || num >= BLK) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "num");
            return 0;
        }
        /* The reference is the default provider this libcrypto has. */
        if (num != 0 && ALG(ctx)->mode == HWAF_MODE_CTR && !hwaf_soft_ctr_num_settable()) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER,
                       "num %u: this OpenSSL's default provider takes only 0 for CTR", num);
            return 0;
        }
        /* A new position inside the current keystream block: ours. */
        if (!sw_stop(ctx))
            return 0;
        ctx->num = num;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_USE_BITS)) != NULL) {
        unsigned int bits;

        if (!OSSL_PARAM_get_uint(p, &bits)) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "use-bits");
            return 0;
        }
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_TLS_VERSION)) != NULL) {
        unsigned int v;

        if (!OSSL_PARAM_get_uint(p, &v)) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "tls-version");
            return 0;
        }
        if (v != 0 && (ALG(ctx)->mode != HWAF_MODE_CBC || !hwaf_tls_version_ok(v))) {
            HWAF_RAISE(PROV(ctx), HWAF_R_NOT_SUPPORTED,
                       "TLS record processing for version 0x%x with %s", v,
                       ctx->impl->alg->kname);
            return 0;
        }
        if (v != ctx->tlsversion)
            HWAF_DEBUG("%s via %s: TLS record mode, version 0x%x", ALG(ctx)->kname,
                       ctx->impl->drv.name, v);
        ctx->tlsversion = v;
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_TLS_MAC_SIZE)) != NULL) {
        size_t m;

        if (!OSSL_PARAM_get_size_t(p, &m) || m > EVP_MAX_MD_SIZE) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "tls-mac-size");
            return 0;
        }
        ctx->tlsmacsize = m;
    }
    return 1;
}

static int cipher_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    hwaf_cipher_ctx *ctx = vctx;
    int pad = ctx->pad, offload = ctx->offload, live = ctx->sw_live;
    unsigned int tls = ctx->tlsversion;
    int ok = set_params_body(ctx, params);

    /* EVP sets the padding again at every init: the fast path is worked
     * out again only when something it depends on changed. */
    if (pad != ctx->pad || offload != ctx->offload || live != ctx->sw_live
        || tls != ctx->tlsversion)
        fast_set(ctx);
    else
        tally_fold(ctx);
    return ok;
}

static const OSSL_PARAM cipher_known_settable_ctx_params[] = {
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_PADDING, NULL),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_NUM, NULL),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_USE_BITS, NULL),
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_TLS_VERSION, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_TLS_MAC_SIZE, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM xts_known_settable_ctx_params[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    OSSL_PARAM_END
};

/* ---- one dispatch table per (algorithm, implementation slot) ---- */

#define CIPHER_COMMON_FNS(mode)                                                    \
    { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))cipher_freectx },                  \
    { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))cipher_dupctx },                    \
    { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))cipher_einit },               \
    { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))cipher_dinit },               \
    { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))cipher_update_##mode },             \
    { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))cipher_final },                      \
    { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))cipher_cipher },                    \
    { OSSL_FUNC_CIPHER_GETTABLE_PARAMS, (void (*)(void))hwaf_cipher_gettable_params },  \
    { OSSL_FUNC_CIPHER_GET_CTX_PARAMS, (void (*)(void))cipher_get_ctx_params },    \
    { OSSL_FUNC_CIPHER_SET_CTX_PARAMS, (void (*)(void))cipher_set_ctx_params },    \
    { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                                        \
      (void (*)(void))cipher_gettable_ctx_params }

#define CIPHER_SLOT(id, mode, s)                                                   \
    static OSSL_FUNC_cipher_newctx_fn newctx_##id##_##s;                           \
    static void *newctx_##id##_##s(void *provctx)                                  \
    {                                                                              \
        return cipher_newctx(provctx, HWAF_ALG_##id, s);                           \
    }                                                                              \
    static const OSSL_DISPATCH fns_##id##_##s[] = {                                \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))newctx_##id##_##s },            \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))get_params_##id },          \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                                    \
          (void (*)(void))settable_##id },                                         \
        CIPHER_COMMON_FNS(mode),                                                   \
        { 0, NULL }                                                                \
    };

#define CIPHER_ALG(id, names, kname, kind, mode, kl, ivl, bl, mdl)                 \
    static OSSL_FUNC_cipher_get_params_fn get_params_##id;                         \
    static int get_params_##id(OSSL_PARAM params[])                                \
    {                                                                              \
        return hwaf_cipher_alg_params(&hwaf_algs[HWAF_ALG_##id], params);          \
    }                                                                              \
    static OSSL_FUNC_cipher_settable_ctx_params_fn settable_##id;                  \
    static const OSSL_PARAM *settable_##id(void *cctx, void *provctx)              \
    {                                                                              \
        return HWAF_MODE_##mode == HWAF_MODE_XTS ? xts_known_settable_ctx_params   \
                                                 : cipher_known_settable_ctx_params; \
    }                                                                              \
    CIPHER_SLOT(id, mode, 0) CIPHER_SLOT(id, mode, 1) CIPHER_SLOT(id, mode, 2)     \
    CIPHER_SLOT(id, mode, 3)

#define ONLY_CIPHER(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    ONLY_CIPHER_##kind(id, names, kname, kind, mode, kl, ivl, bl, mdl)
#define ONLY_CIPHER_CIPHER CIPHER_ALG
#define ONLY_CIPHER_DIGEST(...)
#define ONLY_CIPHER_AEAD(...)
#define ONLY_CIPHER_MAC(...)

HWAF_ALGORITHMS(ONLY_CIPHER)

#define CIPHER_TABLE_ROW(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    CIPHER_TABLE_ROW_##kind(id)
#define CIPHER_TABLE_ROW_CIPHER(id) \
    [HWAF_ALG_##id] = { fns_##id##_0, fns_##id##_1, fns_##id##_2, fns_##id##_3 },
#define CIPHER_TABLE_ROW_DIGEST(id)
#define CIPHER_TABLE_ROW_AEAD(id)
#define CIPHER_TABLE_ROW_MAC(id)

static const OSSL_DISPATCH *const cipher_tables[HWAF_NALGS][HWAF_NSLOTS] = {
    HWAF_ALGORITHMS(CIPHER_TABLE_ROW)
};

const OSSL_DISPATCH *hwaf_cipher_dispatch(int alg, int slot)
{
    return cipher_tables[alg][slot];
}
