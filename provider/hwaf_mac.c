/*
 * The MAC layer: EVP_MAC "HMAC" over a backend's keyed hash.  The digest is
 * chosen by parameter and picks the implementation (hmac(sha256), ...) of
 * the same backend and hardware class as the fetched HMAC; the running
 * state lives in the kernel, so copies and fork() work as for digests.
 *
 * Size-aware dispatch, as for digests (hwaf_digest.c): a kernel MAC cannot
 * take over a software state, so a message is held back until it reaches
 * the implementation's threshold; one that ends below it is computed by the
 * default provider's HMAC (hwaf_soft_aead_mac.c), one that reaches it goes
 * to the kernel, held bytes first, and stays there until the next init.  A
 * context whose kernel MAC cannot be opened for want of descriptors or in a
 * sandbox is served in software (hwaf_open_fallback).
 *
 * A digest the kernel does not serve here (libssl's TLS PRF asks for
 * MD5-SHA1, for instance) would make an application that prefers hwaf
 * fail.  A software HMAC (hwaf.hw=no) hands such a context to the default
 * provider's HMAC in the software path's library context
 * (hwaf_soft_libctx); its hwaf-driver then reads "none".  A hardware HMAC
 * refuses the digest.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_soft.h"
#include "hwaf_hash.h"
#include <hwaf/hwaf.h>

typedef struct hwaf_mac_ctx_st {
    hwaf_prov *prov;
    int slot;
    const hwaf_impl *impl;   /* NULL until a digest is set */
    hwaf_khash k;            /* the running MAC in the kernel (hwaf_hash.h) */
    EVP_MAC_CTX *soft;       /* a digest hwaf does not serve: another provider's */
    unsigned char *key;
    size_t keylen;
    int key_set;
    int finalised;
    int failed;              /* an update or final failed: refuse until init */
    int inited;              /* init done since the key or digest was set */
    int live;                /* inited, neither failed nor finalised: the
                              * message takes updates and its final */
    int offload;             /* HWAF_PARAM_OFFLOAD: HWAF_OFFLOAD_* */
    int where;               /* PATH_*: where this message goes */
    hwaf_be_md *sw;          /* the software path's keyed HMAC, on first need */
    hwaf_hold hold;          /* the message so far, while PATH_UNDECIDED */
} hwaf_mac_ctx;

enum { PATH_UNDECIDED, PATH_KERNEL, PATH_SOFT };

/* Close both paths' objects (a new key or digest). */
static void drop_all(hwaf_mac_ctx *ctx)
{
    hwaf_khash_detach(&ctx->k);
    if (ctx->sw != NULL)
        ctx->impl->soft->be->md_close(ctx->sw);
    ctx->sw = NULL;
    ctx->where = PATH_UNDECIDED;
    ctx->inited = 0;
    ctx->live = 0;
}

static OSSL_FUNC_mac_dupctx_fn mac_dupctx;
static OSSL_FUNC_mac_freectx_fn mac_freectx;
static OSSL_FUNC_mac_init_fn mac_init;
static OSSL_FUNC_mac_update_fn mac_update;
static OSSL_FUNC_mac_final_fn mac_final;
static OSSL_FUNC_mac_gettable_ctx_params_fn mac_gettable_ctx_params;
static OSSL_FUNC_mac_get_ctx_params_fn mac_get_ctx_params;
static OSSL_FUNC_mac_settable_ctx_params_fn mac_settable_ctx_params;
static OSSL_FUNC_mac_set_ctx_params_fn mac_set_ctx_params;

static void *mac_newctx(void *provctx, int slot)
{
    hwaf_prov *prov = provctx;
    hwaf_mac_ctx *ctx = OPENSSL_zalloc(sizeof(*ctx));

    if (ctx == NULL) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return NULL;
    }
    ctx->prov = prov;
    ctx->slot = slot;
    ctx->offload = HWAF_OFFLOAD_AUTO;
    return ctx;
}

static void mac_freectx(void *vctx)
{
    hwaf_mac_ctx *ctx = vctx;

    if (ctx == NULL)
        return;
    if (ctx->impl != NULL)
        drop_all(ctx);
    EVP_MAC_CTX_free(ctx->soft);
    hwaf_hold_free(&ctx->hold);
    OPENSSL_clear_free(ctx->key, ctx->keylen);
    OPENSSL_free(ctx);
}

static int set_key(hwaf_mac_ctx *ctx, const unsigned char *key, size_t keylen)
{
    unsigned char *k;

    /* The same key again (OpenVPN passes it with every packet's init): the
     * kernel and software objects keyed with it stay; as with a new key,
     * the message starts again at the next init, which resets them. */
    if (ctx->key_set && ctx->impl != NULL && keylen == ctx->keylen
        && (keylen == 0 || CRYPTO_memcmp(ctx->key, key, keylen) == 0)) {
        ctx->inited = 0;
        ctx->live = 0;
        return 1;
    }
    if ((k = OPENSSL_malloc(keylen ? keylen : 1)) == NULL) {
        HWAF_RAISE(ctx->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    if (keylen > 0)
        memcpy(k, key, keylen);
    OPENSSL_clear_free(ctx->key, ctx->keylen);
    ctx->key = k;
    ctx->keylen = keylen;
    ctx->key_set = 1;
    if (ctx->impl != NULL)
        drop_all(ctx);   /* the next init opens a session with the new key */
    return 1;
}

static void *mac_dupctx(void *vctx)
{
    hwaf_mac_ctx *src = vctx, *dst;
    hwaf_be_md *be = NULL;

    if (src->soft != NULL) {
        dst = mac_newctx(src->prov, src->slot);
        if (dst != NULL && (dst->soft = EVP_MAC_CTX_dup(src->soft)) == NULL) {
            mac_freectx(dst);
            dst = NULL;
        }
        return dst;
    }
    if (src->k.broken) {
        HWAF_RAISE(src->prov, HWAF_R_FORK_RECOVERY_FAILED, NULL);
        return NULL;
    }
    /* A failed one is copied without its state: the copy refuses until init. */
    if (src->k.be != NULL && !src->failed && !src->impl->be->md_dup(&be, src->k.be))
        return NULL;
    dst = mac_newctx(src->prov, src->slot);
    if (dst == NULL || (src->key_set && !set_key(dst, src->key, src->keylen))) {
        if (be != NULL)
            src->impl->be->md_close(be);
        mac_freectx(dst);
        return NULL;
    }
    dst->impl = src->impl;
    dst->finalised = src->finalised;
    dst->failed = src->failed;
    dst->inited = src->inited;
    dst->live = src->live;
    dst->offload = src->offload;
    dst->where = src->where;
    if (be != NULL)
        hwaf_khash_attach(&dst->k, dst->impl, be);
    if (src->sw != NULL && !src->failed
        && !src->impl->soft->be->md_dup(&dst->sw, src->sw)) {
        dst->sw = NULL;
        mac_freectx(dst);
        return NULL;
    }
    if (!hwaf_hold_dup(src->prov, &dst->hold, &src->hold)) {
        mac_freectx(dst);
        return NULL;
    }
    return dst;
}

/* Is name one of the colon-separated names? */
static int has_name(const char *names, const char *name)
{
    size_t n = strlen(name);

    while (*names != '\0') {
        size_t len = strcspn(names, ":");

        if (len == n && strncasecmp(names, name, n) == 0)
            return 1;
        names += len;
        if (*names == ':')
            names++;
    }
    return 0;
}

/* Hand the context to the default provider's HMAC (in the software path's
 * library context), or 0 when not allowed. */
static int go_soft(hwaf_mac_ctx *ctx)
{
    OSSL_LIB_CTX *lib = hwaf_soft_libctx();
    EVP_MAC *m;

    if (ctx->slot % 2 == 0)   /* a hardware slot: HWAF_SLOT() */
        return 0;
    if (ctx->soft != NULL)
        return 1;
    m = lib != NULL ? EVP_MAC_fetch(lib, "HMAC", "provider=default") : NULL;
    ctx->soft = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
    EVP_MAC_free(m);
    return ctx->soft != NULL;
}

static int set_digest(hwaf_mac_ctx *ctx, const char *name)
{
    int a;

    for (a = HWAF_ALG_HMAC_SHA1; a <= HWAF_ALG_HMAC_SHA2_512; a++) {
        const hwaf_alg *md = &hwaf_algs[HWAF_ALG_SHA1 + (a - HWAF_ALG_HMAC_SHA1)];

        if (!has_name(md->names, name))
            continue;
        if (ctx->prov->slot[a][ctx->slot] == NULL)
            break;
        if (ctx->impl != ctx->prov->slot[a][ctx->slot]) {
            if (ctx->impl != NULL)
                drop_all(ctx);
            ctx->impl = ctx->prov->slot[a][ctx->slot];
            hwaf_soft_ready(ctx->impl);   /* at its first context */
        }
        EVP_MAC_CTX_free(ctx->soft);
        ctx->soft = NULL;
        return 1;
    }
    if (go_soft(ctx)) {
        if (ctx->impl != NULL)
            drop_all(ctx);
        ctx->impl = NULL;
        return 1;
    }
    HWAF_RAISE(ctx->prov, HWAF_R_DIGEST_NOT_OFFERED,
               "%s (hwaf's HMAC: SHA1, SHA2-224/256/384/512 where the kernel has them)",
               name);
    return 0;
}

static int mac_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    hwaf_mac_ctx *ctx = vctx;
    const OSSL_PARAM *p;

    if (params == NULL)
        return 1;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_DIGEST)) != NULL) {
        if (p->data_type != OSSL_PARAM_UTF8_STRING)
            return hwaf_param_failed(ctx->prov, p->key);
        if (!set_digest(ctx, p->data))
            return 0;
    }
    if (ctx->soft != NULL) {
        /* The key too: keep it for a later digest hwaf does serve. */
        if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_KEY)) != NULL
            && p->data_type == OSSL_PARAM_OCTET_STRING && !set_key(ctx, p->data, p->data_size))
            return 0;
        return EVP_MAC_CTX_set_params(ctx->soft, params);
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_PROPERTIES)) != NULL
        && p->data_type != OSSL_PARAM_UTF8_STRING)
        return hwaf_param_failed(ctx->prov, p->key);
    /* Takes effect while the message is held back, else at the next init. */
    if ((p = OSSL_PARAM_locate_const(params, HWAF_PARAM_OFFLOAD)) != NULL
        && !hwaf_offload_param(ctx->prov, p, &ctx->offload))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_MAC_PARAM_KEY)) != NULL) {
        if (p->data_type != OSSL_PARAM_OCTET_STRING)
            return hwaf_param_failed(ctx->prov, p->key);
        if (!set_key(ctx, p->data, p->data_size))
            return 0;
    }
    return 1;
}

static const OSSL_PARAM mac_known_settable_ctx_params[] = {
    OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, NULL, 0),
    OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_PROPERTIES, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_MAC_PARAM_KEY, NULL, 0),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM *mac_settable_ctx_params(void *cctx, void *provctx)
{
    return mac_known_settable_ctx_params;
}

/* key == OSSL_MAC_PARAM_SIZE ("size"), compared inline: a library
 * strcmp() costs more than the rest of the answer. */
static int is_size_key(const char *k)
{
    return k[0] == 's' && k[1] == 'i' && k[2] == 'z' && k[3] == 'e' && k[4] == '\0';
}

static int mac_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    hwaf_mac_ctx *ctx = vctx;
    OSSL_PARAM *p;

    /* What EVP_MAC_final() asks for alone with every message, without
     * looking for every other name first; its usual form (a size_t) is
     * written directly, any other through OSSL_PARAM_set_size_t(). */
    if (params != NULL && params[0].key != NULL && params[1].key == NULL
        && ctx->soft == NULL && is_size_key(params[0].key)) {
        size_t n = ctx->impl != NULL ? ctx->impl->alg->mdlen : 0;

        if (params[0].data_type == OSSL_PARAM_UNSIGNED_INTEGER && params[0].data != NULL
            && params[0].data_size == sizeof(size_t)) {
            *(size_t *)params[0].data = n;
            params[0].return_size = sizeof(size_t);
            return 1;
        }
        return OSSL_PARAM_set_size_t(params, n) ? 1 : hwaf_param_failed(ctx->prov, params[0].key);
    }
    if (ctx->soft != NULL) {
        if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_DRIVER)) != NULL
            && !OSSL_PARAM_set_utf8_string(p, "none"))
            return hwaf_param_failed(ctx->prov, p->key);
        if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_BACKEND)) != NULL
            && !OSSL_PARAM_set_utf8_string(p, "none"))
            return hwaf_param_failed(ctx->prov, p->key);
        if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_HW)) != NULL && !OSSL_PARAM_set_int(p, 0))
            return hwaf_param_failed(ctx->prov, p->key);
        if ((p = OSSL_PARAM_locate(params, OSSL_MAC_PARAM_SIZE)) != NULL
            && !OSSL_PARAM_set_size_t(p, EVP_MAC_CTX_get_mac_size(ctx->soft)))
            return hwaf_param_failed(ctx->prov, p->key);
        if ((p = OSSL_PARAM_locate(params, OSSL_MAC_PARAM_BLOCK_SIZE)) != NULL
            && !OSSL_PARAM_set_size_t(p, EVP_MAC_CTX_get_block_size(ctx->soft)))
            return hwaf_param_failed(ctx->prov, p->key);
        return 1;
    }
    if ((p = OSSL_PARAM_locate(params, OSSL_MAC_PARAM_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, ctx->impl != NULL ? ctx->impl->alg->mdlen : 0))
        return hwaf_param_failed(ctx->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_MAC_PARAM_BLOCK_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, ctx->impl != NULL ? ctx->impl->alg->blocklen : 0))
        return hwaf_param_failed(ctx->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_OFFLOAD)) != NULL
        && !OSSL_PARAM_set_int(p, ctx->offload))
        return hwaf_param_failed(ctx->prov, p->key);
    if (ctx->impl != NULL)
        return hwaf_impl_get_params(ctx->impl, params);
    return 1;
}

static const OSSL_PARAM mac_known_gettable_ctx_params[] = {
    OSSL_PARAM_size_t(OSSL_MAC_PARAM_SIZE, NULL),
    OSSL_PARAM_size_t(OSSL_MAC_PARAM_BLOCK_SIZE, NULL),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    HWAF_IMPL_GETTABLE_PARAMS,
    OSSL_PARAM_END
};

static const OSSL_PARAM *mac_gettable_ctx_params(void *cctx, void *provctx)
{
    return mac_known_gettable_ctx_params;
}

/* Send the message to the kernel (1) or to software (0), held bytes first. */
static int go(hwaf_mac_ctx *ctx, int kernel)
{
    const hwaf_impl *soft = ctx->impl->soft;
    int ok;

    if (kernel || soft == NULL) {
        if ((ok = hwaf_khash_open(&ctx->k, ctx->impl, 1, ctx->key, ctx->keylen,
                                  ctx->offload)) <= 0)
            return ok < 0 ? go(ctx, 0) : 0;
        ctx->where = PATH_KERNEL;
        ok = ctx->hold.held == 0
             || ctx->impl->be->md_update(ctx->k.be, ctx->hold.buf, ctx->hold.held);
    } else {
        if (ctx->sw == NULL && !soft->be->mac_open(&ctx->sw, soft, ctx->key, ctx->keylen)) {
            ctx->sw = NULL;
            return 0;
        }
        ctx->where = PATH_SOFT;
        ok = ctx->hold.held == 0 || soft->be->md_update(ctx->sw, ctx->hold.buf, ctx->hold.held);
    }
    hwaf_hold_clear(&ctx->hold);
    return ok;
}

/* The threshold this context goes by; 0: kernel now, SIZE_MAX: software now. */
static size_t threshold(const hwaf_mac_ctx *ctx)
{
    return hwaf_hold_threshold(ctx->impl, ctx->offload);
}

/* Take inl more bytes of the message. */
static int feed(hwaf_mac_ctx *ctx, const unsigned char *in, size_t inl)
{
    if (ctx->where == PATH_UNDECIDED) {
        int r = hwaf_hold_take(ctx->prov, &ctx->hold, threshold(ctx), in, inl);

        if (r == HWAF_HOLD_KEPT)
            return 1;
        if (r == HWAF_HOLD_FAILED || !go(ctx, r == HWAF_HOLD_KERNEL))
            return 0;
    }
    if (inl == 0)
        return 1;
    if (ctx->where == PATH_KERNEL)
        return ctx->impl->be->md_update(ctx->k.be, in, inl);
    return ctx->impl->soft->be->md_update(ctx->sw, in, inl);
}

static int mac_init(void *vctx, const unsigned char *key, size_t keylen,
                    const OSSL_PARAM params[])
{
    hwaf_mac_ctx *ctx = vctx;
    int kernel;

    if (params != NULL && !mac_set_ctx_params(ctx, params))
        return 0;
    if (key != NULL && !set_key(ctx, key, keylen))
        return 0;
    if (ctx->soft != NULL)
        return EVP_MAC_init(ctx->soft, ctx->key_set ? ctx->key : NULL, ctx->keylen, NULL);
    if (ctx->impl == NULL) {
        HWAF_RAISE(ctx->prov, HWAF_R_NO_DIGEST_SET, NULL);
        return 0;
    }
    if (!ctx->key_set) {
        HWAF_RAISE(ctx->prov, HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    if (ctx->failed) {
        /* After a failure the running MAC holds an unknown part of a
         * message: never reset it, start on a fresh one. */
        drop_all(ctx);
        ctx->failed = 0;
    }
    if (ctx->k.broken)  /* the kernel state was lost in fork(): start afresh */
        hwaf_khash_detach(&ctx->k);
    hwaf_hold_clear(&ctx->hold);
    /* Back to the keyed initial state, on the path the last message took,
     * where a final has not left it there already (md_final's contract);
     * an object that cannot be reset is replaced by a fresh one. */
    if (!ctx->finalised) {
        if (ctx->where == PATH_KERNEL && ctx->k.be != NULL
            && !ctx->impl->be->md_reset(ctx->k.be))
            hwaf_khash_detach(&ctx->k);
        if (ctx->where == PATH_SOFT && !ctx->impl->soft->be->md_reset(ctx->sw)) {
            ctx->impl->soft->be->md_close(ctx->sw);
            ctx->sw = NULL;
        }
    }
    ctx->finalised = 0;
    ctx->inited = 1;
    /* Decided already: go there now, as a kernel-only context always did
     * (a bad key or a missing driver shows at init); a kernel MAC reset
     * above is there already (nothing is held). */
    kernel = threshold(ctx) == 0;
    if (!(kernel && ctx->where == PATH_KERNEL && ctx->k.be != NULL)) {
        ctx->where = PATH_UNDECIDED;
        if (kernel && !go(ctx, 1)) {
            ctx->failed = 1;
            ctx->live = 0;
            return 0;
        }
    }
    ctx->live = 1;
    return 1;
}

/* Why a message cannot go on (raised), or 1 when it can after all (a
 * kernel MAC lost in fork() while the message is elsewhere). */
static int mac_not_ready(hwaf_mac_ctx *ctx)
{
    if (!ctx->inited) {
        HWAF_RAISE(ctx->prov, HWAF_R_NOT_INITIALISED, NULL);
        return 0;
    }
    if (ctx->k.broken && ctx->where == PATH_KERNEL) {
        HWAF_RAISE(ctx->prov, HWAF_R_FORK_RECOVERY_FAILED,
                   "the running MAC was lost in fork(); initialise again");
        return 0;
    }
    if (ctx->failed) {
        HWAF_RAISE(ctx->prov, HWAF_R_NOT_INITIALISED,
                   "an earlier operation failed; initialise the context again");
        return 0;
    }
    if (ctx->finalised) {
        HWAF_RAISE(ctx->prov, HWAF_R_UPDATE_AFTER_FINAL,
                   "initialise the context again first");
        return 0;
    }
    return 1;
}

/* Can this message take an update or its final?  One test on the way. */
static inline int mac_ready(hwaf_mac_ctx *ctx)
{
    return (ctx->live && !ctx->k.broken) || mac_not_ready(ctx);
}

static int mac_update(void *vctx, const unsigned char *in, size_t inl)
{
    hwaf_mac_ctx *ctx = vctx;

    if (ctx->soft != NULL)
        return EVP_MAC_update(ctx->soft, in, inl);
    if (!mac_ready(ctx))
        return 0;
    if (feed(ctx, in, inl))
        return 1;
    ctx->failed = 1;  /* part of the message may be in: see mac_init() */
    ctx->live = 0;
    return 0;
}

static int mac_final(void *vctx, unsigned char *out, size_t *outl, size_t outsize)
{
    hwaf_mac_ctx *ctx = vctx;
    size_t mdlen;

    if (ctx->soft != NULL)
        return EVP_MAC_final(ctx->soft, out, outl, outsize);
    if (!mac_ready(ctx))
        return 0;
    mdlen = ctx->impl->alg->mdlen;
    if (outsize < mdlen) {
        HWAF_RAISE(ctx->prov, HWAF_R_OUTPUT_BUFFER_TOO_SMALL,
                   "%zu bytes, the MAC is %zu", outsize, mdlen);
        return 0;
    }
    ctx->finalised = 1;
    ctx->live = 0;
    /* A message still held back ended below the threshold: software. */
    if ((ctx->where == PATH_UNDECIDED && !go(ctx, threshold(ctx) == 0))
        || (ctx->where == PATH_KERNEL ? !ctx->impl->be->md_final(ctx->k.be, out)
                                      : !ctx->impl->soft->be->md_final(ctx->sw, out))) {
        ctx->failed = 1;
        return 0;
    }
    *outl = mdlen;
    return 1;
}

#define MAC_SLOT(s)                                                                \
    static OSSL_FUNC_mac_newctx_fn mnewctx_##s;                                    \
    static void *mnewctx_##s(void *provctx)                                        \
    {                                                                              \
        return mac_newctx(provctx, s);                                             \
    }                                                                              \
    static const OSSL_DISPATCH mfns_##s[] = {                                      \
        { OSSL_FUNC_MAC_NEWCTX, (void (*)(void))mnewctx_##s },                     \
        { OSSL_FUNC_MAC_DUPCTX, (void (*)(void))mac_dupctx },                      \
        { OSSL_FUNC_MAC_FREECTX, (void (*)(void))mac_freectx },                    \
        { OSSL_FUNC_MAC_INIT, (void (*)(void))mac_init },                          \
        { OSSL_FUNC_MAC_UPDATE, (void (*)(void))mac_update },                      \
        { OSSL_FUNC_MAC_FINAL, (void (*)(void))mac_final },                        \
        { OSSL_FUNC_MAC_GETTABLE_CTX_PARAMS, (void (*)(void))mac_gettable_ctx_params }, \
        { OSSL_FUNC_MAC_GET_CTX_PARAMS, (void (*)(void))mac_get_ctx_params },      \
        { OSSL_FUNC_MAC_SETTABLE_CTX_PARAMS, (void (*)(void))mac_settable_ctx_params }, \
        { OSSL_FUNC_MAC_SET_CTX_PARAMS, (void (*)(void))mac_set_ctx_params },      \
        { 0, NULL }                                                                \
    };

MAC_SLOT(0) MAC_SLOT(1) MAC_SLOT(2) MAC_SLOT(3)

static const OSSL_DISPATCH *const mac_tables[HWAF_NSLOTS] = {
    mfns_0, mfns_1, mfns_2, mfns_3
};

const OSSL_DISPATCH *hwaf_mac_dispatch(int slot)
{
    return mac_tables[slot];
}
