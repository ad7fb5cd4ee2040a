/*
 * The digest layer: EVP's digest calls over a backend's running hash.  The
 * hash state lives in the kernel, so a copy asks the backend to clone it,
 * and fork() is handled by a snapshot taken in the parent (hwaf_fork.c).
 *
 * Size-aware dispatch: a kernel hash cannot take over a software state, so
 * a message is held back until it reaches the implementation's threshold.
 * A message that ends below it is hashed in software (OpenSSL's default
 * provider, hwaf_soft.h); one that reaches it goes to the kernel, held
 * bytes first, and stays there until the next init.
 */
#include <stddef.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_soft.h"
#include "hwaf_hash.h"
#include <hwaf/hwaf.h>

typedef struct hwaf_digest_ctx_st {
    const hwaf_impl *impl;   /* first: see hwaf_ctx_new() */
    hwaf_khash k;      /* the running hash in the kernel (hwaf_hash.h) */
    int finalised;     /* final done: refuse update and final until init */
    int failed;        /* an operation failed part-way: refuse until init */
    int inited;        /* init done */
    int where;         /* PATH_*: where this message goes */
    int be_used;       /* be holds data of an earlier message: reset first */
    int offload;       /* HWAF_PARAM_OFFLOAD: HWAF_OFFLOAD_* */
    void *sw;          /* software hash: the default provider's context
                        * (hwaf_soft.h), made on first need */
    hwaf_hold hold;    /* the message so far, while PATH_UNDECIDED */
    void **spare;      /* where a freed context of its kind waits */
} hwaf_digest_ctx;

enum { PATH_UNDECIDED, PATH_KERNEL, PATH_SOFT };

#define PROV(ctx) ((ctx)->impl->prov)

static OSSL_FUNC_digest_init_fn digest_init;
static OSSL_FUNC_digest_update_fn digest_update;
static OSSL_FUNC_digest_final_fn digest_final;
static OSSL_FUNC_digest_freectx_fn digest_freectx;
static OSSL_FUNC_digest_dupctx_fn digest_dupctx;
static OSSL_FUNC_digest_gettable_params_fn digest_gettable_params;
static OSSL_FUNC_digest_get_ctx_params_fn digest_get_ctx_params;
static OSSL_FUNC_digest_gettable_ctx_params_fn digest_gettable_ctx_params;
static OSSL_FUNC_digest_set_ctx_params_fn digest_set_ctx_params;
static inline int digest_ready(hwaf_digest_ctx *ctx);

/*
 * One freed context of each implementation waits for the next newctx:
 * OpenSSL 3.0 frees and makes a digest's provider context at every
 * EVP_DigestInit_ex, which costs more than hashing a short message.  Only
 * a context with no kernel object is kept (nothing to close, nothing a
 * fork could break), its software hash wiped and re-initialised, its held
 * bytes wiped; taking and leaving are one atomic exchange each, so threads
 * need no lock (a thread that finds the place taken allocates or frees).
 */
static int spare_put(hwaf_digest_ctx *ctx)
{
    void *none = NULL;

    if (ctx->spare == NULL || ctx->k.be != NULL || ctx->k.broken || ctx->failed
        || __atomic_load_n(ctx->spare, __ATOMIC_RELAXED) != NULL)
        return 0;
    /* A software hash is kept only after a final there: the wipe cannot
     * reach the input buffer's last byte, which a final leaves holding the
     * message's length or nothing; one freed mid-message goes with its context (the
     * default provider's free clears all of it). */
    if (ctx->sw != NULL
        && (!ctx->finalised || ctx->where != PATH_SOFT
            || !hwaf_soft_md_wipe(ctx->impl->soft, ctx->sw)))
        return 0;
    hwaf_hold_clear(&ctx->hold);
    ctx->finalised = ctx->inited = ctx->be_used = 0;
    ctx->where = PATH_UNDECIDED;
    ctx->offload = HWAF_OFFLOAD_AUTO;
    return __atomic_compare_exchange_n(ctx->spare, &none, ctx, 0, __ATOMIC_RELEASE,
                                       __ATOMIC_RELAXED);
}

static void *digest_newctx(void *provctx, int alg, int slot)
{
    hwaf_prov *prov = provctx;
    void **spare = &prov->md_spare[alg][slot];
    hwaf_digest_ctx *ctx = NULL;

    if (__atomic_load_n(spare, __ATOMIC_RELAXED) != NULL
        && (ctx = __atomic_exchange_n(spare, NULL, __ATOMIC_ACQUIRE)) != NULL)
        return ctx;
    if ((ctx = hwaf_ctx_new(provctx, alg, slot, sizeof(*ctx))) != NULL) {
        ctx->offload = HWAF_OFFLOAD_AUTO;
        ctx->spare = spare;
    }
    return ctx;
}

static void digest_free(hwaf_digest_ctx *ctx)
{
    hwaf_khash_detach(&ctx->k);
    if (ctx->sw != NULL)
        hwaf_soft_md_free(ctx->impl->soft, ctx->sw);
    hwaf_hold_free(&ctx->hold);
    OPENSSL_free(ctx);
}

static void digest_freectx(void *vctx)
{
    hwaf_digest_ctx *ctx = vctx;

    if (ctx != NULL && !spare_put(ctx))
        digest_free(ctx);
}

void hwaf_digest_spare_free(void *ctx)
{
    if (ctx != NULL)
        digest_free(ctx);
}

static void *digest_dupctx(void *vctx)
{
    hwaf_digest_ctx *src = vctx, *dst;
    hwaf_be_md *be = NULL;

    if (src->k.broken && src->where == PATH_KERNEL) {
        HWAF_RAISE(PROV(src), HWAF_R_FORK_RECOVERY_FAILED, NULL);
        return NULL;
    }
    dst = OPENSSL_zalloc(sizeof(*dst));
    if (dst == NULL) {
        HWAF_RAISE(PROV(src), HWAF_R_MALLOC_FAILURE, NULL);
        return NULL;
    }
    dst->impl = src->impl;
    dst->spare = src->spare;
    dst->finalised = src->finalised;
    dst->failed = src->failed;
    dst->inited = src->inited;
    dst->where = src->where;
    dst->offload = src->offload;
    if (src->failed) {
        /* Nothing worth copying: the copy refuses until init, too. */
    } else if (src->where == PATH_KERNEL && src->k.be != NULL) {
        if (!src->impl->be->md_dup(&be, src->k.be))
            goto err;
        hwaf_khash_attach(&dst->k, dst->impl, be);
    } else if (src->where == PATH_SOFT && src->sw != NULL
               && (dst->sw = hwaf_soft_md_dup(src->impl->soft, src->sw)) == NULL) {
        goto err;
    } else if (src->where == PATH_UNDECIDED
               && !hwaf_hold_dup(PROV(src), &dst->hold, &src->hold)) {
        goto err;
    }
    return dst;
 err:
    OPENSSL_free(dst);
    return NULL;
}

/* Send the message to the kernel (1) or to software (0), held bytes first. */
static int go(hwaf_digest_ctx *ctx, int kernel)
{
    const hwaf_impl *soft = ctx->impl->soft;
    int ok;

    if (kernel || soft == NULL) {
        if (ctx->k.broken)  /* its state was lost in fork(): start afresh */
            hwaf_khash_detach(&ctx->k);
        if (ctx->k.be != NULL && ctx->be_used && !ctx->impl->be->md_reset(ctx->k.be))
            hwaf_khash_detach(&ctx->k);
        if ((ok = hwaf_khash_open(&ctx->k, ctx->impl, 0, NULL, 0, ctx->offload)) <= 0)
            return ok < 0 ? go(ctx, 0) : 0;
        ctx->be_used = 1;
        ctx->where = PATH_KERNEL;
        ok = ctx->hold.held == 0
             || ctx->impl->be->md_update(ctx->k.be, ctx->hold.buf, ctx->hold.held);
    } else {
        if (ctx->sw == NULL && (ctx->sw = hwaf_soft_md_new(soft)) == NULL)
            return 0;
        ctx->where = PATH_SOFT;
        ok = ctx->hold.held == 0
             || hwaf_soft_md_update(soft, ctx->sw, ctx->hold.buf, ctx->hold.held);
    }
    hwaf_hold_clear(&ctx->hold);
    return ok;
}

/* The threshold this context goes by; 0: kernel now, SIZE_MAX: software now. */
static size_t threshold(const hwaf_digest_ctx *ctx)
{
    return hwaf_hold_threshold(ctx->impl, ctx->offload);
}

/* A decided message: more of it; its digest, and a new message begins. */
static int md_more(hwaf_digest_ctx *ctx, const unsigned char *in, size_t inl)
{
    if (ctx->where == PATH_KERNEL)
        return ctx->impl->be->md_update(ctx->k.be, in, inl);
    return hwaf_soft_md_update(ctx->impl->soft, ctx->sw, in, inl);
}

static int md_restart(hwaf_digest_ctx *ctx, unsigned char *md)
{
    if (ctx->where == PATH_KERNEL)
        return ctx->impl->be->md_final(ctx->k.be, md);
    return hwaf_soft_md_final(ctx->impl->soft, ctx->sw, md)
           && hwaf_soft_md_init(ctx->impl->soft, ctx->sw);
}

/* Take inl more bytes of the message. */
static int feed(hwaf_digest_ctx *ctx, const unsigned char *in, size_t inl)
{
    if (ctx->where == PATH_UNDECIDED) {
        size_t t = threshold(ctx);
        int r;

        /* Software from the first byte with its hash made already (a
         * context below a threshold of never, or forced): no hold, no go(). */
        if (t == SIZE_MAX && ctx->hold.held == 0 && ctx->sw != NULL) {
            ctx->where = PATH_SOFT;
            return inl == 0 || hwaf_soft_md_update(ctx->impl->soft, ctx->sw, in, inl);
        }
        r = hwaf_hold_take(PROV(ctx), &ctx->hold, t, in, inl);

        if (r == HWAF_HOLD_KEPT)
            return 1;
        if (r == HWAF_HOLD_FAILED || !go(ctx, r == HWAF_HOLD_KERNEL))
            return 0;
    }
    if (inl == 0)
        return 1;
    return md_more(ctx, in, inl);
}

/* Decide a message still held back: it ended below the threshold. */
static int settle(hwaf_digest_ctx *ctx)
{
    if (ctx->where != PATH_UNDECIDED)
        return 1;
    return go(ctx, threshold(ctx) == 0);
}

static int digest_init(void *vctx, const OSSL_PARAM params[])
{
    hwaf_digest_ctx *ctx = vctx;

    if (ctx->k.broken)  /* the kernel state was lost in fork(): start afresh */
        hwaf_khash_detach(&ctx->k);
    if (ctx->failed) {
        /* Whatever the failed operation left in the kernel or in software
         * goes with its object; the next message starts on a fresh one. */
        hwaf_khash_detach(&ctx->k);
        hwaf_soft_md_free(ctx->impl->soft, ctx->sw);
        ctx->sw = NULL;
        ctx->be_used = 0;
        ctx->where = PATH_UNDECIDED;
        ctx->failed = 0;
    }
    ctx->finalised = 0;
    ctx->inited = 1;
    hwaf_hold_clear(&ctx->hold);
    if (ctx->where == PATH_SOFT && !hwaf_soft_md_init(ctx->impl->soft, ctx->sw)) {
        ctx->failed = 1;
        return 0;
    }
    ctx->where = PATH_UNDECIDED;
    if (params != NULL && OSSL_PARAM_locate_const(params, HWAF_PARAM_OFFLOAD) != NULL) {
        const OSSL_PARAM only[] = { *OSSL_PARAM_locate_const(params, HWAF_PARAM_OFFLOAD),
                                    OSSL_PARAM_END };

        if (!digest_set_ctx_params(ctx, only))
            return 0;
    }
    /* Decided already: go there now, as a kernel-only context always did. */
    if (threshold(ctx) == 0 && !go(ctx, 1)) {
        ctx->failed = 1;
        return 0;
    }
    return 1;
}

static int digest_refuse(hwaf_digest_ctx *ctx)
{
    if (!ctx->inited) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_INITIALISED, NULL);
        return 0;
    }
    if (ctx->k.broken && ctx->where == PATH_KERNEL) {
        HWAF_RAISE(PROV(ctx), HWAF_R_FORK_RECOVERY_FAILED,
                   "the running hash was lost in fork(); initialise again");
        return 0;
    }
    if (ctx->failed) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_INITIALISED,
                   "an earlier operation failed; initialise the context again");
        return 0;
    }
    if (ctx->finalised) {
        HWAF_RAISE(PROV(ctx), HWAF_R_UPDATE_AFTER_FINAL,
                   "initialise the context again first");
        return 0;
    }
    return 1;
}

/* Every update and final: the common case tested here, the errors there. */
static inline int digest_ready(hwaf_digest_ctx *ctx)
{
    if (ctx->inited && !ctx->failed && !ctx->finalised && !ctx->k.broken)
        return 1;
    return digest_refuse(ctx);
}

/*
 * After a failed update or final the running hash holds an unknown part of
 * the message (a send can fail after the kernel took some of it, and the
 * kernel's hash socket starts a new hash at the next send after an error):
 * the context refuses everything until the next init, never a digest of
 * part of the message.
 */
static int digest_update(void *vctx, const unsigned char *in, size_t inl)
{
    hwaf_digest_ctx *ctx = vctx;

    if (!digest_ready(ctx))
        return 0;
    if (feed(ctx, in, inl))
        return 1;
    ctx->failed = 1;
    return 0;
}

static int digest_final(void *vctx, unsigned char *out, size_t *outl,
                        size_t outsz)
{
    hwaf_digest_ctx *ctx = vctx;
    size_t mdlen = ctx->impl->alg->mdlen;

    if (!digest_ready(ctx))
        return 0;
    if (outsz < mdlen) {
        HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL,
                   "%zu bytes, the digest is %zu", outsz, mdlen);
        return 0;
    }
    ctx->finalised = 1;
    if (!settle(ctx)
        || (ctx->where == PATH_KERNEL ? !ctx->impl->be->md_final(ctx->k.be, out)
                                      : !hwaf_soft_md_final(ctx->impl->soft, ctx->sw, out))) {
        ctx->failed = 1;
        return 0;
    }
    *outl = mdlen;
    return 1;
}

static int digest_get_params(const hwaf_alg *alg, OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_BLOCK_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, alg->blocklen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, alg->mdlen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_XOF)) != NULL
        && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_DIGEST_PARAM_ALGID_ABSENT)) != NULL
        && !OSSL_PARAM_set_int(p, 1))
        return 0;
    return 1;
}

static const OSSL_PARAM digest_known_gettable_params[] = {
    OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_BLOCK_SIZE, NULL),
    OSSL_PARAM_size_t(OSSL_DIGEST_PARAM_SIZE, NULL),
    OSSL_PARAM_int(OSSL_DIGEST_PARAM_XOF, NULL),
    OSSL_PARAM_int(OSSL_DIGEST_PARAM_ALGID_ABSENT, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM *digest_gettable_params(void *provctx)
{
    return digest_known_gettable_params;
}

static int digest_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    hwaf_digest_ctx *ctx = vctx;
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_OFFLOAD)) != NULL
        && !OSSL_PARAM_set_int(p, ctx->offload))
        return hwaf_param_failed(PROV(ctx), p->key);
    return hwaf_impl_get_params(ctx->impl, params);
}

/*
 * SHA1's "ssl3-ms": finish an SSLv3 MAC as OpenSSL's SHA1 does, turning the
 * running H(text) into H(ms || pad2 || H(text || ms || pad1)).
 */
static int digest_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    hwaf_digest_ctx *ctx = vctx;
    const OSSL_PARAM *p;
    unsigned char pad[40], inner[HWAF_MAX_MD];
    const void *ms;
    size_t mslen;
    int ok;

    if (params == NULL)
        return 1;
    for (p = params; p->key != NULL; p++) {
        if (strcmp(p->key, HWAF_PARAM_OFFLOAD) == 0) {
            /* Takes effect while the message is held back, else at the next init. */
            if (!hwaf_offload_param(PROV(ctx), p, &ctx->offload))
                return 0;
        } else if (ctx->impl->alg->mdlen != 20) {
            /* The default provider's SHA-2 digests take no parameters at
             * all (so EVP_DigestFinalXOF fails on them): nor do ours. */
            HWAF_RAISE(PROV(ctx), HWAF_R_NOT_SUPPORTED, "parameter %s", p->key);
            return 0;
        }
    }
    /* Other names are ignored, as OpenSSL's SHA1 ignores them. */
    if (ctx->impl->alg->mdlen != 20
        || (p = OSSL_PARAM_locate_const(params, OSSL_DIGEST_PARAM_SSL3_MS)) == NULL)
        return 1;
    if (!OSSL_PARAM_get_octet_string_ptr(p, &ms, &mslen) || mslen != 48) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "ssl3-ms: 48 bytes expected");
        return 0;
    }
    if (!digest_ready(ctx))
        return 0;
    if (!settle(ctx)) {
        ctx->failed = 1;
        return 0;
    }
    memset(pad, 0x36, sizeof(pad));
    ok = md_more(ctx, ms, mslen)
         && md_more(ctx, pad, sizeof(pad))
         && md_restart(ctx, inner);
    memset(pad, 0x5c, sizeof(pad));
    ok = ok && md_more(ctx, ms, mslen)
         && md_more(ctx, pad, sizeof(pad))
         && md_more(ctx, inner, 20);
    OPENSSL_cleanse(inner, sizeof(inner));
    if (!ok)
        ctx->failed = 1;
    return ok;
}

static const OSSL_PARAM sha1_known_settable_ctx_params[] = {
    OSSL_PARAM_octet_string(OSSL_DIGEST_PARAM_SSL3_MS, NULL, 0),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM digest_known_gettable_ctx_params[] = {
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    HWAF_IMPL_GETTABLE_PARAMS,
    OSSL_PARAM_END
};

static const OSSL_PARAM *digest_gettable_ctx_params(void *dctx, void *provctx)
{
    return digest_known_gettable_ctx_params;
}

/*
 * Settable context parameters exactly where the default provider has them:
 * SHA1's ssl3-ms (and hwaf's own hwaf-offload).  The default provider's
 * SHA-2 digests list none, and neither do ours; they take hwaf-offload and
 * refuse every other name, so EVP_DigestFinalXOF (which sets "xoflen")
 * fails on them, as on the default provider's.  One line per digest.
 */
static OSSL_FUNC_digest_settable_ctx_params_fn sha1_settable_ctx_params;
static const OSSL_PARAM *sha1_settable_ctx_params(void *dctx, void *provctx)
{
    return sha1_known_settable_ctx_params;
}


#define DIGEST_SETTERS_SHA1                                                        \
    { OSSL_FUNC_DIGEST_SET_CTX_PARAMS, (void (*)(void))digest_set_ctx_params },    \
    { OSSL_FUNC_DIGEST_SETTABLE_CTX_PARAMS, (void (*)(void))sha1_settable_ctx_params },
#define DIGEST_SETTERS_SHA2                                                        \
    { OSSL_FUNC_DIGEST_SET_CTX_PARAMS, (void (*)(void))digest_set_ctx_params },
#define DIGEST_SETTERS_SHA2_224 DIGEST_SETTERS_SHA2
#define DIGEST_SETTERS_SHA2_256 DIGEST_SETTERS_SHA2
#define DIGEST_SETTERS_SHA2_384 DIGEST_SETTERS_SHA2
#define DIGEST_SETTERS_SHA2_512 DIGEST_SETTERS_SHA2

#define DIGEST_SLOT(id, s)                                                         \
    static OSSL_FUNC_digest_newctx_fn dnewctx_##id##_##s;                          \
    static void *dnewctx_##id##_##s(void *provctx)                                 \
    {                                                                              \
        return digest_newctx(provctx, HWAF_ALG_##id, s);                           \
    }                                                                              \
    static const OSSL_DISPATCH dfns_##id##_##s[] = {                               \
        { OSSL_FUNC_DIGEST_NEWCTX, (void (*)(void))dnewctx_##id##_##s },           \
        { OSSL_FUNC_DIGEST_GET_PARAMS, (void (*)(void))dget_params_##id },         \
        { OSSL_FUNC_DIGEST_INIT, (void (*)(void))digest_init },                    \
        { OSSL_FUNC_DIGEST_UPDATE, (void (*)(void))digest_update },                \
        { OSSL_FUNC_DIGEST_FINAL, (void (*)(void))digest_final },                  \
        { OSSL_FUNC_DIGEST_FREECTX, (void (*)(void))digest_freectx },              \
        { OSSL_FUNC_DIGEST_DUPCTX, (void (*)(void))digest_dupctx },                \
        { OSSL_FUNC_DIGEST_GETTABLE_PARAMS, (void (*)(void))digest_gettable_params }, \
        { OSSL_FUNC_DIGEST_GET_CTX_PARAMS, (void (*)(void))digest_get_ctx_params }, \
        { OSSL_FUNC_DIGEST_GETTABLE_CTX_PARAMS,                                    \
          (void (*)(void))digest_gettable_ctx_params },                            \
        DIGEST_SETTERS_##id                                                        \
        { 0, NULL }                                                                \
    };

#define DIGEST_ALG(id, names, kname, kind, mode, kl, ivl, bl, mdl)                 \
    static OSSL_FUNC_digest_get_params_fn dget_params_##id;                        \
    static int dget_params_##id(OSSL_PARAM params[])                               \
    {                                                                              \
        return digest_get_params(&hwaf_algs[HWAF_ALG_##id], params);               \
    }                                                                              \
    DIGEST_SLOT(id, 0) DIGEST_SLOT(id, 1) DIGEST_SLOT(id, 2) DIGEST_SLOT(id, 3)

#define ONLY_DIGEST(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    ONLY_DIGEST_##kind(id, names, kname, kind, mode, kl, ivl, bl, mdl)
#define ONLY_DIGEST_DIGEST DIGEST_ALG
#define ONLY_DIGEST_CIPHER(...)
#define ONLY_DIGEST_AEAD(...)
#define ONLY_DIGEST_MAC(...)

HWAF_ALGORITHMS(ONLY_DIGEST)

#define DIGEST_TABLE_ROW(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    DIGEST_TABLE_ROW_##kind(id)
#define DIGEST_TABLE_ROW_DIGEST(id) \
    [HWAF_ALG_##id] = { dfns_##id##_0, dfns_##id##_1, dfns_##id##_2, dfns_##id##_3 },
#define DIGEST_TABLE_ROW_CIPHER(id)
#define DIGEST_TABLE_ROW_AEAD(id)
#define DIGEST_TABLE_ROW_MAC(id)

static const OSSL_DISPATCH *const digest_tables[HWAF_NALGS][HWAF_NSLOTS] = {
    HWAF_ALGORITHMS(DIGEST_TABLE_ROW)
};

const OSSL_DISPATCH *hwaf_digest_dispatch(int alg, int slot)
{
    return digest_tables[alg][slot];
}
