/*
 * The AEAD mode layer: everything EVP expects of AES-GCM -- AAD by update,
 * any number of updates, tags of 1 to 16 bytes, re-init with a new IV,
 * copies, the TLS 1.2 record mode libssl uses -- above the backend's one
 * request per message (AAD, data and tag together).
 *
 * How streaming maps onto one request (docs/design.md, "GCM"):
 *  - AAD is kept until the first data (or the final).
 *  - The first data update is one whole GCM request over the AAD and that
 *    data: encrypting, its output is returned at once and its tag kept for
 *    the final; decrypting with the tag set since the message began (TLS 1.3,
 *    OpenSSH), it is the checked decryption itself, and a wrong tag
 *    releases zeros.
 *    Decrypting without a tag yet, the request encrypts the ciphertext,
 *    which in GCM yields the plaintext (the counter mode is its own
 *    inverse); the tag is checked at the final.
 *  - Later updates continue the counter stream through hwaf's AES-CTR of
 *    the same backend and hardware class (its driver checked by its known
 *    answer), so each update still returns its output at once.
 *  - The final returns no data.  It uses the kept tag when the message was
 *    one update, and otherwise one more GCM request over the whole message
 *    to compute the tag, which is compared in constant time for decryption.
 *    The data is kept as it goes by: the plaintext when decrypting (wiped
 *    at the next message), the ciphertext when encrypting (public, so a
 *    message in one update costs no wipe; the counter mode turns it back
 *    into the plaintext for a later tag).
 *
 * Size-aware dispatch (hwaf_soft.h): each message takes its path at its
 * first request, by the size of that request (AAD + data) against the
 * implementation's threshold; a message on the software path makes the same
 * requests of the default provider's AES-GCM (hwaf_soft_aead_mac.c) and
 * continues through its AES-CTR.  A request larger than the kernel takes in
 * one (aead_max()), and every request of a context whose kernel session
 * cannot be had for want of descriptors or in a sandbox, is computed in
 * software too; only a context forced to the kernel (hwaf-offload = 1), or
 * an implementation without a software twin, gets the error instead.
 *
 * IVs: the IV state follows OpenSSL's GCM (IV_*): iv is what the "iv"
 * parameter shows, miv the IV of the message under way.  tlsivgen (OpenSSH,
 * TLS) starts a message under the IV it hands back and counts iv on for the
 * next; tlsivinv starts one under the IV with the record's explicit part.
 * The kernel's gcm(aes) takes 12-byte IVs; a message under an IV of another
 * length (1 to 128 bytes, as the default provider) streams through the
 * default provider's AES-GCM instead (stream_get), whatever its size.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_soft.h"
#include <hwaf/hwaf.h>

#define BLK 16
#define TLS_AAD_LEN 13      /* EVP_AEAD_TLS1_AAD_LEN */
#define TLS_FIXED_IV 4      /* EVP_GCM_TLS_FIXED_IV_LEN */
#define TLS_EXPLICIT_IV 8   /* EVP_GCM_TLS_EXPLICIT_IV_LEN */
#define IV_MAX 128          /* the longest IV the default provider's GCM takes */

/* Where the IV stands, as in OpenSSL's GCM: none yet; set (by init or
 * tlsivfixed) but no message under it yet; the current message's (miv);
 * used by a finished message, so a new one is needed. */
enum { IV_NONE, IV_BUFFERED, IV_COPIED, IV_FINISHED };

typedef struct hwaf_aead_ctx_st {
    const hwaf_impl *impl;          /* first: see hwaf_ctx_new() */
    hwaf_be_aead *be;
    unsigned int gen;               /* fork generation be and ctr were opened in */
    hwaf_be_aead *sbe;              /* the software path's session, on first need */
    int offload;                    /* HWAF_PARAM_OFFLOAD: HWAF_OFFLOAD_* */
    int soft_only;                  /* the kernel session cannot be had (descriptors,
                                     * sandbox, back-off): software; tried again
                                     * at the next message or key */
    int msg_soft;                   /* this message took the software path */
    /* Counter-mode continuation of updates after the first (ctr_get):
     * ctr's implementation, hwaf's AES-CTR of the same backend and class
     * on the kernel path or ctr_soft (the default provider's AES-CTR). */
    const hwaf_impl *ctr_impl;
    hwaf_impl ctr_soft;
    hwaf_be_cipher *ctr;
    int ctr_none;                   /* the kernel path has no AES-CTR to use:
                                     * CTR_NONE_* (ctr_kernel_impl); lasts, as
                                     * the provider's implementations do */
    unsigned char key[32];
    size_t keylen;
    int key_set;
    unsigned char iv[IV_MAX];       /* the IV as the "iv" parameter shows it */
    size_t ivlen;                   /* 1 to IV_MAX; other than HWAF_GCM_IV: the
                                     * software path's stream (stream_get) */
    unsigned char miv[IV_MAX];      /* the IV the current message runs under */
    int iv_state;                   /* IV_* */
    int iv_gen;                     /* tlsivfixed set: the invocation field (the
                                     * IV's last 8 bytes) counts messages */
    int stream;                     /* this message's stream on sbe has started */
    int enc;
    int finalised;
    int failed;                     /* a kernel call failed mid-message: refuse until init */
    /* The message so far. */
    unsigned char *aad;
    size_t aadlen, aadcap;
    unsigned char *data;            /* the data so far: ciphertext when encrypting
                                     * (public: never wiped), plaintext when
                                     * decrypting (data_plain: wiped) */
    size_t datalen, datacap;
    int data_plain;
    int data_mapped;                /* data is pages of the context's own: keep_grow() */
    size_t updates;                 /* data updates so far */
    unsigned char tag[HWAF_GCM_TAG];
    size_t taglen;                  /* decrypt: set tag's length; 0 none */
    int tag_new;                    /* decrypt: the tag was set for this message
                                     * (not one left from before its init): the
                                     * first update checks it */
    int tag_ready;                  /* encrypt: tag[] is the full tag */
    int verified;                   /* decrypt: 1 when the first update checked
                                     * the tag and nothing followed */
    /* TLS 1.2 record mode. */
    unsigned char tls_aad[TLS_AAD_LEN];
    int tls_aad_set;
} hwaf_aead_ctx;

#define PROV(ctx) ((ctx)->impl->prov)
enum { CTR_NONE_OFFERED = 1, CTR_NONE_FAILED = 2 };

/* ---- sessions ---- */

static void ctr_drop(hwaf_aead_ctx *ctx, int abandon)
{
    if (ctx->ctr == NULL)
        return;
    if (ctx->ctr_impl == &ctx->ctr_soft)
        hwaf_soft_cipher_other_close(ctx->ctr, &ctx->ctr_soft);
    else if (abandon)
        ctx->ctr_impl->be->cipher_abandon(ctx->ctr);
    else
        ctx->ctr_impl->be->cipher_close(ctx->ctr);
    ctx->ctr = NULL;
    ctx->ctr_impl = NULL;
}

static void be_drop(hwaf_aead_ctx *ctx, int abandon)
{
    const hwaf_backend *be = ctx->impl->be;

    ctr_drop(ctx, abandon);
    if (ctx->be != NULL) {
        if (abandon)
            be->aead_abandon(ctx->be);
        else
            be->aead_close(ctx->be);
        ctx->be = NULL;
    }
}

/*
 * The kernel session to use now: reopened in a child after fork().  NULL
 * with an error raised, or NULL with nothing raised and soft_only set when
 * it cannot be had for want of descriptors or in a sandbox and software can
 * serve the context instead (hwaf_open_fallback).
 */
static hwaf_be_aead *be_get(hwaf_aead_ctx *ctx)
{
    hwaf_open_try t;

    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return NULL;
    }
    if (ctx->gen != hwaf_fork_generation) {
        HWAF_DEBUG("aead %s: reopening after fork", ctx->impl->drv.name);
        be_drop(ctx, 1);
    }
    if (ctx->soft_only)
        return NULL;
    if (ctx->be == NULL) {
        /* short of descriptors a moment ago: software, no open */
        if (hwaf_open_backoff(ctx->impl, ctx->offload)) {
            ctx->soft_only = 1;
            return NULL;
        }
        ctx->gen = hwaf_fork_generation;
        hwaf_open_begin(ctx->impl, &t);
        if (!hwaf_open_verify(ctx->impl, &t)
            || !ctx->impl->be->aead_open(&ctx->be, ctx->impl, ctx->key, ctx->keylen)) {
            ctx->be = NULL;
            if (hwaf_open_fallback(ctx->impl, &t, ctx->offload))
                ctx->soft_only = 1;
            return NULL;
        }
        hwaf_open_end(ctx->impl, &t);
    }
    return ctx->be;
}

/* The software path's session. */
static hwaf_be_aead *sbe_get(hwaf_aead_ctx *ctx)
{
    const hwaf_impl *soft = ctx->impl->soft;

    if (ctx->sbe == NULL && !soft->be->aead_open(&ctx->sbe, soft, ctx->key, ctx->keylen))
        ctx->sbe = NULL;
    return ctx->sbe;
}

/* Must this context's requests go to the kernel, whatever their size? */
static int kernel_only(const hwaf_aead_ctx *ctx)
{
    return ctx->impl->soft == NULL || ctx->offload == HWAF_OFFLOAD_KERNEL;
}

/*
 * A context that must use the kernel: an error for a request of aadlen
 * bytes of AAD and n in all that the kernel cannot take in one, max
 * (aead_max() for aadlen).
 */
static void too_large(hwaf_aead_ctx *ctx, size_t aadlen, size_t n, size_t max)
{
    if (max < aadlen)
        HWAF_RAISE(PROV(ctx), HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                   "%zu bytes of AAD, more than one kernel request takes", aadlen);
    else
        HWAF_RAISE(PROV(ctx), HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                   "%zu bytes of AAD and data, at most %zu in one kernel request",
                   n, max);
}

/*
 * The backend and session for one whole GCM request of aadlen bytes of AAD
 * and len of data of the current message, whose path its first request
 * decided (first = 1).  NULL with an error raised.
 */
static hwaf_be_aead *req_get(hwaf_aead_ctx *ctx, size_t aadlen, size_t len, int first,
                             const hwaf_impl **impl)
{
    hwaf_be_aead *be;
    size_t max, n = aadlen + len;

    if (first) {
        /* The kernel session could not be had for an earlier message (a
         * shortage of descriptors, a sandbox): try again, unless backing
         * off (be_get). */
        if (ctx->soft_only && ctx->be == NULL)
            ctx->soft_only = 0;
        ctx->msg_soft = !kernel_only(ctx)
                        && (ctx->soft_only || !hwaf_offload(ctx->impl, ctx->offload, n));
    }
    if (!ctx->msg_soft) {
        if ((be = be_get(ctx)) == NULL && !ctx->soft_only)
            return NULL;
        if (be != NULL) {
            max = ctx->impl->be->aead_max(be, aadlen, 1);
            if (n <= max) {
                *impl = ctx->impl;
                return be;
            }
            if (kernel_only(ctx)) {
                too_large(ctx, aadlen, n, max);
                return NULL;
            }
            HWAF_DEBUG("dispatch: %s via %s: %zu bytes of AAD and %zu of data, at most "
                       "%zu in one kernel request; computed in software",
                       ctx->impl->alg->kname, ctx->impl->drv.name, aadlen, len, max);
        }
    }
    *impl = ctx->impl->soft;
    return sbe_get(ctx);
}

/*
 * One whole GCM request (aead_crypt) through req_get's choice.  A kernel
 * backend that learns a smaller limit from the request's refusal (a
 * /dev/crypto device) leaves it to software, errors dropped, unless the
 * context must use the kernel.
 */
static int req_crypt(hwaf_aead_ctx *ctx, int first, int enc, const unsigned char *aad,
                     size_t aadlen, const unsigned char *in, unsigned char *out, size_t len,
                     unsigned char *tag, int owned)
{
    const hwaf_impl *impl = NULL;
    hwaf_be_aead *be = req_get(ctx, aadlen, len, first, &impl);
    int r, marked;

    if (be == NULL)
        return 0;
    marked = impl != ctx->impl->soft && !kernel_only(ctx) && hwaf_err_mark(PROV(ctx));
    r = impl->be->aead_crypt(be, enc, ctx->miv, aad, aadlen, in, out, len, tag, owned);
    if (marked) {
        int retry = r == 0 && impl->be->aead_max(be, aadlen, 0) < aadlen + len;

        hwaf_err_mark_drop(PROV(ctx), retry);
        if (retry) {
            HWAF_DEBUG("dispatch: %s via %s refused %zu bytes in one request; "
                       "computed in software", ctx->impl->alg->kname, ctx->impl->drv.name,
                       aadlen + len);
            return req_crypt(ctx, 0, enc, aad, aadlen, in, out, len, tag, owned);
        }
    }
    return r;
}

/*
 * The AES-CTR that continues a kernel-path message: hwaf's own AES-CTR of
 * the same backend and hardware class (its slot), whose driver its known
 * answer checks -- not the kernel's generic ctr(aes), which would be
 * whichever driver the kernel ranks first, never checked by hwaf and of any
 * class.  NULL with nothing raised when there is none to use, ctx->ctr_none
 * set: CTR_NONE_OFFERED (the kernel has none of that class, or it failed
 * its known answer at load) or CTR_NONE_FAILED (its driver failed its known
 * answer in this process).  NULL with errors raised and ctr_none 0 when the
 * known answer could not run (a shortage of descriptors, a sandbox), as for
 * a failed open.
 */
static const hwaf_impl *ctr_kernel_impl(hwaf_aead_ctx *ctx)
{
    const hwaf_impl *c = PROV(ctx)->slot[HWAF_ALG_AES_128_CTR + (ctx->keylen - 16) / 8]
                                        [HWAF_SLOT(ctx->impl->be_index, ctx->impl->hw)];
    int v, marked;

    if (c == NULL) {
        HWAF_DEBUG("aead %s via %s: no AES-CTR of the same backend and class to continue "
                   "a message with", ctx->impl->alg->kname, ctx->impl->drv.name);
        ctx->ctr_none = CTR_NONE_OFFERED;
        return NULL;
    }
    marked = hwaf_err_mark(PROV(ctx));
    v = hwaf_impl_verify(c);
    if (marked)
        hwaf_err_mark_drop(PROV(ctx), v != HWAF_KAT_UNKNOWN);
    if (v == HWAF_KAT_UNKNOWN)
        return NULL;
    if (v == HWAF_KAT_FAILED) {
        HWAF_DEBUG("aead %s via %s: AES-CTR driver %s failed its known answer; not used to "
                   "continue a message", ctx->impl->alg->kname, ctx->impl->drv.name,
                   c->drv.name);
        ctx->ctr_none = CTR_NONE_FAILED;
        return NULL;
    }
    return c;
}

/* The default provider's AES-CTR: the software path's continuation. */
static hwaf_be_cipher *ctr_soft_open(hwaf_aead_ctx *ctx)
{
    ctx->ctr = hwaf_soft_cipher_other(ctx->impl,
                                      &hwaf_algs[HWAF_ALG_AES_128_CTR + (ctx->keylen - 16) / 8],
                                      &ctx->ctr_soft, ctx->key, ctx->keylen);
    if (ctx->ctr != NULL)
        ctx->ctr_impl = &ctx->ctr_soft;
    return ctx->ctr;
}

/*
 * The counter-mode session for updates after a message's first: hwaf's
 * AES-CTR of the implementation's backend and class on the kernel path
 * (ctr_kernel_impl); the default provider's AES-CTR on the software path,
 * when the kernel session cannot be had for want of descriptors or in a
 * sandbox, and when the kernel path has no AES-CTR to use.  A context that
 * must stay in the kernel and has none gets NULL with *via_gcm set: its
 * counter stream then comes from the GCM driver itself (gcm_stream).
 */
static hwaf_be_cipher *ctr_get(hwaf_aead_ctx *ctx, int *via_gcm)
{
    int soft = ctx->msg_soft || ctx->soft_only;
    const hwaf_impl *want;
    hwaf_open_try t;

    *via_gcm = 0;
    if (!soft && be_get(ctx) == NULL) {
        if (!ctx->soft_only)
            return NULL;
        soft = 1;
    }
    if (!soft && ctx->ctr_none) {
        if (kernel_only(ctx)) {
            *via_gcm = 1;
            return NULL;
        }
        /* the counter stream in software; the message's GCM requests stay
         * in the kernel */
        soft = 1;
    }
    if (ctx->ctr != NULL && (ctx->ctr_impl == &ctx->ctr_soft) == soft)
        return ctx->ctr;
    ctr_drop(ctx, ctx->gen != hwaf_fork_generation);
    if (soft) {
        if (ctx->ctr_none == CTR_NONE_FAILED && !ctx->msg_soft && !ctx->soft_only)
            hwaf_stats_add_fallback(HWAF_FALLBACK_KNOWN_ANSWER);
        return ctr_soft_open(ctx);
    }
    if (hwaf_open_backoff(ctx->impl, ctx->offload)) {
        /* short of descriptors a moment ago: the rest of the message in
         * software, no open */
        ctx->msg_soft = 1;
        return ctr_get(ctx, via_gcm);
    }
    hwaf_open_begin(ctx->impl, &t);
    want = ctr_kernel_impl(ctx);
    if (want == NULL && ctx->ctr_none) {
        hwaf_open_cancel(ctx->impl, &t);
        return ctr_get(ctx, via_gcm);
    }
    if (want == NULL || !want->be->cipher_open(&ctx->ctr, want, ctx->key, ctx->keylen)) {
        ctx->ctr = NULL;
        if (hwaf_open_fallback(ctx->impl, &t, ctx->offload)) {
            /* out of descriptors or sandboxed: the rest of the message in
             * software (the key's kernel session, if any, stays) */
            ctx->msg_soft = 1;
            return ctr_get(ctx, via_gcm);
        }
        return NULL;
    }
    hwaf_open_end(ctx->impl, &t);
    ctx->ctr_impl = want;
    return ctx->ctr;
}

static void sbe_drop(hwaf_aead_ctx *ctx)
{
    if (ctx->sbe != NULL)
        ctx->impl->soft->be->aead_close(ctx->sbe);
    ctx->sbe = NULL;
}

/* ---- message state ---- */

static int grow(hwaf_aead_ctx *ctx, unsigned char **buf, size_t *cap, size_t need)
{
    unsigned char *n;
    size_t c = *cap ? *cap : 256;

    if (need <= *cap)
        return 1;
    while (c < need)
        c *= 2;
    n = OPENSSL_clear_realloc(*buf, *cap, c);
    if (n == NULL) {
        HWAF_RAISE(PROV(ctx), HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    *buf = n;
    *cap = c;
    return 1;
}

/*
 * The kept data's buffer, with room for need bytes.  From KEEP_MAP_MIN
 * bytes up it is pages of the context's own (mmap; not MADV_WIPEONFORK, so
 * that a child keeps the data as it keeps the rest of the context), which
 * no other thread writes: a message's first request has the kernel write
 * its result there directly, even on kernels whose AF_ALG read() fork()
 * could split (afalg_sys.c), and one copy takes it to the caller's buffer.
 * Smaller, or when no mapping can be had, it is heap, and the backend
 * takes its own precautions.  Grown, the old buffer is wiped.
 */
#define KEEP_MAP_MIN 1024

static void keep_free(unsigned char *p, size_t cap, int mapped)
{
    if (p == NULL)
        return;
    OPENSSL_cleanse(p, cap);
    if (mapped)
        munmap(p, cap);
    else
        OPENSSL_free(p);
}

static int keep_grow(hwaf_aead_ctx *ctx, size_t need)
{
    unsigned char *n;
    size_t c, page;
    long pg;
    int mapped = 1;

    if (need <= ctx->datacap)
        return 1;
    if (need < KEEP_MAP_MIN && !ctx->data_mapped)
        return grow(ctx, &ctx->data, &ctx->datacap, need);
    /* asked at each growth, which the kept buffer makes rare: no shared
     * state between threads */
    pg = sysconf(_SC_PAGESIZE);
    page = pg > 0 ? (size_t)pg : 4096;
    c = ctx->datacap * 2 > need ? ctx->datacap * 2 : need;
    c = (c + page - 1) & ~(page - 1);
    n = mmap(NULL, c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED) {
        HWAF_DEBUG("aead: no mapping of %zu bytes for the kept data; heap", c);
        mapped = 0;
        if ((n = OPENSSL_malloc(need)) == NULL) {
            HWAF_RAISE(PROV(ctx), HWAF_R_MALLOC_FAILURE, NULL);
            return 0;
        }
        c = need;
    }
    if (ctx->datalen > 0)
        memcpy(n, ctx->data, ctx->datalen);
    keep_free(ctx->data, ctx->datacap, ctx->data_mapped);
    ctx->data = n;
    ctx->datacap = c;
    ctx->data_mapped = mapped;
    return 1;
}

/* Forget the message (not the key, IV or set tag). */
static void message_reset(hwaf_aead_ctx *ctx)
{
    if (ctx->data != NULL && ctx->data_plain)
        OPENSSL_cleanse(ctx->data, ctx->datalen);
    ctx->data_plain = 0;
    ctx->aadlen = ctx->datalen = ctx->updates = 0;
    ctx->tag_ready = ctx->verified = 0;
    ctx->finalised = 0;
}

/*
 * A new message on the same key (init, tlsivgen, tlsivinv): what the last
 * one left is dropped, with the sessions of a call that failed mid-message.
 */
static void message_new(hwaf_aead_ctx *ctx)
{
    message_reset(ctx);
    ctx->stream = 0;
    ctx->tag_new = 0;
    if (ctx->failed) {
        be_drop(ctx, ctx->gen != hwaf_fork_generation);
        ctx->failed = 0;
    }
}

/* The invocation field, the IV's last 8 bytes, counts one message on (it
 * wraps within them, the fixed part untouched, as OpenSSL's GCM). */
static void iv_count(hwaf_aead_ctx *ctx)
{
    size_t i;

    for (i = ctx->ivlen; i-- > ctx->ivlen - TLS_EXPLICIT_IV && ++ctx->iv[i] == 0;)
        ;
}

/*
 * An IV length the context can take: 1 to IV_MAX bytes, as the default
 * provider; other lengths than the kernel's HWAF_GCM_IV go to software,
 * which a context that must use the kernel refuses.  0 with an error.
 */
static int ivlen_ok(hwaf_aead_ctx *ctx, size_t len)
{
    if (len == 0 || len > IV_MAX) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH, "%zu bytes; 1 to %d", len, IV_MAX);
        return 0;
    }
    if (len != HWAF_GCM_IV && kernel_only(ctx)) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH,
                   "%zu bytes; the kernel's gcm(aes) takes %d and this context must use the "
                   "kernel (hwaf-offload)", len, HWAF_GCM_IV);
        return 0;
    }
    return 1;
}

static void ctx_wipe(hwaf_aead_ctx *ctx)
{
    OPENSSL_clear_free(ctx->aad, ctx->aadcap);
    keep_free(ctx->data, ctx->datacap, ctx->data_mapped);
    OPENSSL_cleanse(ctx->key, sizeof(ctx->key));
    OPENSSL_cleanse(ctx->tag, sizeof(ctx->tag));
}

/* ---- dispatch ---- */

static OSSL_FUNC_cipher_freectx_fn aead_freectx;
static OSSL_FUNC_cipher_dupctx_fn aead_dupctx;
static OSSL_FUNC_cipher_encrypt_init_fn aead_einit;
static OSSL_FUNC_cipher_decrypt_init_fn aead_dinit;
static OSSL_FUNC_cipher_update_fn aead_update;
static OSSL_FUNC_cipher_final_fn aead_final;
static OSSL_FUNC_cipher_cipher_fn aead_cipher;
static OSSL_FUNC_cipher_get_ctx_params_fn aead_get_ctx_params;
static OSSL_FUNC_cipher_set_ctx_params_fn aead_set_ctx_params;
static OSSL_FUNC_cipher_gettable_ctx_params_fn aead_gettable_ctx_params;
static OSSL_FUNC_cipher_settable_ctx_params_fn aead_settable_ctx_params;

static void *aead_newctx(void *provctx, int alg, int slot)
{
    hwaf_aead_ctx *ctx = hwaf_ctx_new(provctx, alg, slot, sizeof(hwaf_aead_ctx));

    if (ctx != NULL) {
        ctx->keylen = ctx->impl->alg->keylen;
        ctx->ivlen = HWAF_GCM_IV;
        ctx->gen = hwaf_fork_generation;
        ctx->offload = HWAF_OFFLOAD_AUTO;
    }
    return ctx;
}

static void aead_freectx(void *vctx)
{
    hwaf_aead_ctx *ctx = vctx;

    if (ctx == NULL)
        return;
    be_drop(ctx, ctx->gen != hwaf_fork_generation);
    sbe_drop(ctx);
    ctx_wipe(ctx);
    OPENSSL_free(ctx);
}

static void *aead_dupctx(void *vctx)
{
    hwaf_aead_ctx *src = vctx, *dst;

    dst = OPENSSL_malloc(sizeof(*dst));
    if (dst == NULL) {
        HWAF_RAISE(PROV(src), HWAF_R_MALLOC_FAILURE, NULL);
        return NULL;
    }
    *dst = *src;
    /* Sessions are opened again on first use; buffers are copied. */
    dst->be = NULL;
    dst->ctr = NULL;
    dst->ctr_impl = NULL;
    dst->sbe = NULL;
    dst->aad = dst->data = NULL;
    dst->aadcap = dst->datacap = 0;
    dst->data_mapped = 0;
    dst->datalen = 0;
    /* A message streaming in software goes on in the copy where it stands. */
    if ((src->stream && !hwaf_soft_aead_dup(&dst->sbe, src->sbe))
        || !grow(dst, &dst->aad, &dst->aadcap, src->aadlen)
        || !keep_grow(dst, src->datalen)) {
        aead_freectx(dst);
        return NULL;
    }
    if (src->aadlen > 0)
        memcpy(dst->aad, src->aad, src->aadlen);
    if (src->datalen > 0)
        memcpy(dst->data, src->data, src->datalen);
    dst->datalen = src->datalen;
    return dst;
}

static int aead_init(hwaf_aead_ctx *ctx, const unsigned char *key, size_t keylen,
                     const unsigned char *iv, size_t ivlen,
                     const OSSL_PARAM params[], int enc)
{
    ctx->enc = enc;
    message_new(ctx);
    /* A tag set before (the key, say) stays, as in OpenSSL's GCM. */
    ctx->tls_aad_set = 0;
    if (!aead_set_ctx_params(ctx, params))
        return 0;
    if (iv != NULL) {
        if (!ivlen_ok(ctx, ivlen))
            return 0;
        memcpy(ctx->iv, iv, ivlen);
        ctx->ivlen = ivlen;
        ctx->iv_state = IV_BUFFERED;
        ctx->iv_gen = 0;
    }
    if (key != NULL) {
        if (keylen != ctx->impl->alg->keylen) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_KEY_LENGTH, "%zu bytes, expected %u",
                       keylen, ctx->impl->alg->keylen);
            return 0;
        }
        be_drop(ctx, ctx->gen != hwaf_fork_generation);
        sbe_drop(ctx);
        memcpy(ctx->key, key, keylen);
        ctx->keylen = keylen;
        ctx->key_set = 1;
        ctx->soft_only = 0;   /* a new key tries the kernel again */
        /* A context that goes to the kernel whatever the size opens its
         * session now, so that a bad key or a missing driver shows at init;
         * others when a message first needs it. */
        if ((kernel_only(ctx) || hwaf_offload_forced(ctx->impl, ctx->offload))
            && be_get(ctx) == NULL && !ctx->soft_only) {
            ctx->failed = 1;
            return 0;
        }
    }
    return 1;
}

static int aead_einit(void *vctx, const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen, const OSSL_PARAM params[])
{
    return aead_init(vctx, key, keylen, iv, ivlen, params, 1);
}

static int aead_dinit(void *vctx, const unsigned char *key, size_t keylen,
                      const unsigned char *iv, size_t ivlen, const OSSL_PARAM params[])
{
    return aead_init(vctx, key, keylen, iv, ivlen, params, 0);
}

/*
 * No IV set: as OpenSSL's GCM does, an encryption gets a random one (of an
 * IV length of 12 bytes or more), readable as the "iv" parameter.  0 with
 * an error otherwise.
 */
static int iv_random(hwaf_aead_ctx *ctx)
{
    if (!ctx->enc || ctx->ivlen < HWAF_GCM_IV
        || RAND_bytes_ex(hwaf_soft_libctx(), ctx->iv, ctx->ivlen, 0) <= 0) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH, "no IV set");
        return 0;
    }
    ctx->iv_state = IV_BUFFERED;
    return 1;
}

/* Ready for a new piece of message: key and IV (generated when encrypting). */
static int aead_ready(hwaf_aead_ctx *ctx)
{
    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    if (ctx->failed) {
        /* Part of the message may be lost: never a tag over the rest. */
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_INITIALISED,
                   "an earlier operation failed; initialise the context again");
        return 0;
    }
    if (ctx->finalised) {
        HWAF_RAISE(PROV(ctx), HWAF_R_UPDATE_AFTER_FINAL,
                   "initialise again with a new IV first");
        return 0;
    }
    if (ctx->iv_state == IV_FINISHED) {
        /* As OpenSSL's GCM: never two messages under one key and IV. */
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH,
                   "this IV has been used; initialise with a new one");
        return 0;
    }
    if (ctx->iv_state == IV_NONE && !iv_random(ctx))
        return 0;
    if (ctx->iv_state == IV_BUFFERED) {
        /* the message's first piece: its IV */
        memcpy(ctx->miv, ctx->iv, ctx->ivlen);
        ctx->iv_state = IV_COPIED;
    }
    return 1;
}

/*
 * A context that must use the kernel refuses, before any output, a message
 * that the final's request (the whole message) could not take.
 */
static int fits(hwaf_aead_ctx *ctx, size_t aadmore, size_t datamore)
{
    hwaf_be_aead *be;
    size_t max, aad = ctx->aadlen + aadmore, n = aad + ctx->datalen + datamore;

    if (!kernel_only(ctx))
        return 1;
    if ((be = be_get(ctx)) == NULL)
        return 0;
    max = ctx->impl->be->aead_max(be, aad, 0);
    if (n > max) {
        too_large(ctx, aad, n, max);
        return 0;
    }
    return 1;
}

/*
 * The counter stream through the implementation's GCM driver, for a
 * context that must stay in the kernel when the kernel path has no AES-CTR
 * to use (ctr_get): GCM encrypts the data in counter mode from IV || 2, so
 * its encryption of zeros is that stream.  One request from the message's
 * start to the end of this piece, so each such update costs the message so
 * far again.  buf[0..total) is xored with the stream from block `blocks`.
 */
static int gcm_stream(hwaf_aead_ctx *ctx, size_t blocks, unsigned char *buf, size_t total)
{
    hwaf_be_aead *be = be_get(ctx);
    size_t n = blocks * BLK + total, i, max;
    unsigned char tag[HWAF_GCM_TAG], *z;
    int ok;

    if (be == NULL)
        return 0;
    max = ctx->impl->be->aead_max(be, 0, 0);
    if (n > max) {
        too_large(ctx, 0, n, max);
        return 0;
    }
    if ((z = OPENSSL_zalloc(n)) == NULL) {
        HWAF_RAISE(PROV(ctx), HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    ok = ctx->impl->be->aead_crypt(be, 1, ctx->miv, NULL, 0, z, z, n, tag, 0) == 1;
    if (ok)
        for (i = 0; i < total; i++)
            buf[i] ^= z[blocks * BLK + i];
    OPENSSL_clear_free(z, n);
    OPENSSL_cleanse(tag, sizeof(tag));
    return ok;
}

/* Counter-mode output for the message's data at pos..pos+len: updates
 * after the first, and the plaintext of kept ciphertext. */
static int ctr_at(hwaf_aead_ctx *ctx, size_t pos, const unsigned char *in,
                  unsigned char *out, size_t len)
{
    int via_gcm;
    hwaf_be_cipher *ctr = ctr_get(ctx, &via_gcm);
    size_t pad = pos % BLK, blocks = pos / BLK, n, max;
    size_t total = (pad + len + BLK - 1) & ~(size_t)(BLK - 1), off;
    unsigned char cb[BLK], *buf;
    uint32_t c;
    int ok = 1;

    if (ctr == NULL && !via_gcm)
        return 0;
    buf = OPENSSL_zalloc(total);
    if (buf == NULL) {
        HWAF_RAISE(PROV(ctx), HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    memcpy(buf + pad, in, len);
    if (via_gcm) {
        ok = gcm_stream(ctx, blocks, buf, total);
        goto done;
    }
    /* Counter block of block `blocks` of the data: IV || 2 + blocks.  The
     * AES-CTR carries over 128 bits where GCM's inc32 wraps 32;
     * a message fits one request, far below 2^32 blocks. */
    memcpy(cb, ctx->miv, HWAF_GCM_IV);
    c = (uint32_t)(2 + blocks);
    cb[12] = (unsigned char)(c >> 24);
    cb[13] = (unsigned char)(c >> 16);
    cb[14] = (unsigned char)(c >> 8);
    cb[15] = (unsigned char)c;
    max = ctx->ctr_impl->be->cipher_max(ctr) & ~(size_t)(BLK - 1);
    for (off = 0; ok && off < total; off += n) {
        n = total - off < max ? total - off : max;
        ok = ctx->ctr_impl->be->cipher_crypt(ctr, 1, cb, buf + off, buf + off, n);
        /* advance the counter by n / BLK blocks */
        c += (uint32_t)(n / BLK);
        cb[12] = (unsigned char)(c >> 24);
        cb[13] = (unsigned char)(c >> 16);
        cb[14] = (unsigned char)(c >> 8);
        cb[15] = (unsigned char)c;
    }
 done:
    if (ok)
        memcpy(out, buf + pad, len);
    OPENSSL_clear_free(buf, total);
    return ok;
}

/*
 * A message's data update.  The first is one whole GCM request whose
 * result lands in the kept data (and, encrypting, its tag just after it:
 * the kernel writes there directly when those are the context's own pages,
 * keep_grow()), then is copied to out; later ones continue the counter
 * stream.
 */
static int data_update(hwaf_aead_ctx *ctx, unsigned char *out, const unsigned char *in,
                       size_t len)
{
    unsigned char *keep;
    int r, owned;

    if (!fits(ctx, 0, len)
        || !keep_grow(ctx, ctx->datalen + len + (ctx->updates == 0 ? HWAF_GCM_TAG : 0)))
        return 0;
    keep = ctx->data + ctx->datalen;
    owned = ctx->data_mapped;
    ctx->data_plain = !ctx->enc;

    if (ctx->updates == 0) {
        if (ctx->enc) {
            r = req_crypt(ctx, 1, 1, ctx->aad, ctx->aadlen, in, keep, len, keep + len, owned);
            ctx->tag_ready = r == 1;
            if (r == 1)
                memcpy(ctx->tag, keep + len, HWAF_GCM_TAG);
        } else if (ctx->taglen == HWAF_GCM_TAG && ctx->tag_new) {
            /* The tag is known: the checked decryption itself. */
            r = req_crypt(ctx, 1, 0, ctx->aad, ctx->aadlen, in, keep, len, ctx->tag, owned);
            if (r == 1) {
                ctx->verified = 1;
            } else if (r == -1) {
                /* A wrong tag, or more data to come: which one, only the
                 * final knows.  Decrypt as without a tag; the final checks. */
                r = req_crypt(ctx, 0, 1, ctx->aad, ctx->aadlen, in, keep, len, keep + len,
                              owned);
            }
        } else {
            /* Encrypting the ciphertext gives the plaintext. */
            r = req_crypt(ctx, 1, 1, ctx->aad, ctx->aadlen, in, keep, len, keep + len, owned);
        }
        if (r != 1) {
            if (!ctx->enc)
                OPENSSL_cleanse(keep, len);   /* no unverified plaintext stays */
            return 0;
        }
        memcpy(out, keep, len);
    } else {
        if (!ctr_at(ctx, ctx->datalen, in, out, len))
            return 0;
        memcpy(keep, out, len);
        ctx->tag_ready = 0;
        ctx->verified = 0;
    }
    ctx->datalen += len;
    ctx->updates++;
    return 1;
}

/* ---- IVs of other lengths: the software path's AES-GCM as a stream ---- */

/*
 * The kernel's gcm(aes) takes 12-byte IVs only: a message under an IV of
 * another length streams through the default provider's AES-GCM (the
 * software twin's session, sbe), started at its first piece under miv,
 * whatever its size; its work is counted as software work.  A context that
 * must use the kernel has an error instead.
 */
static hwaf_be_aead *stream_get(hwaf_aead_ctx *ctx)
{
    if (!ivlen_ok(ctx, ctx->ivlen))
        return NULL;
    if (!ctx->stream) {
        if (sbe_get(ctx) == NULL
            || !hwaf_soft_aead_start(ctx->sbe, ctx->enc, ctx->miv, ctx->ivlen))
            return NULL;
        ctx->stream = 1;
    }
    return ctx->sbe;
}

/* AAD (out NULL) or data of a streaming message. */
static int stream_run(hwaf_aead_ctx *ctx, const unsigned char *in, unsigned char *out,
                      size_t len)
{
    hwaf_be_aead *s = stream_get(ctx);

    if (s == NULL || !hwaf_soft_aead_run(s, ctx->enc, in, out, len))
        return 0;
    if (out != NULL)
        ctx->updates++;
    return 1;
}

/* The end of a streaming message: the tag (encrypting) or its check. */
static int stream_final(hwaf_aead_ctx *ctx)
{
    hwaf_be_aead *s = stream_get(ctx);
    int r;

    if (s == NULL)
        return 0;
    r = hwaf_soft_aead_finish(s, ctx->enc, ctx->tag, ctx->enc ? HWAF_GCM_TAG : ctx->taglen);
    ctx->stream = 0;
    if (r == -1)
        HWAF_RAISE(PROV(ctx), HWAF_R_TAG_MISMATCH, NULL);
    return r == 1;
}

/* A whole TLS record of n bytes under such an IV: one stream, start to end. */
static int stream_record(hwaf_aead_ctx *ctx, const unsigned char *in, unsigned char *out,
                         size_t n, unsigned char *tag)
{
    hwaf_be_aead *s = stream_get(ctx);
    int r = 0;

    if (s != NULL && hwaf_soft_aead_run(s, ctx->enc, ctx->tls_aad, NULL, TLS_AAD_LEN)
        && hwaf_soft_aead_run(s, ctx->enc, in, out, n))
        r = hwaf_soft_aead_finish(s, ctx->enc, tag, HWAF_GCM_TAG);
    ctx->stream = 0;
    return r;
}

static int tls_record(hwaf_aead_ctx *ctx, unsigned char *out, size_t *outl,
                      const unsigned char *in, size_t len);

static int aead_update(void *vctx, unsigned char *out, size_t *outl, size_t outsize,
                       const unsigned char *in, size_t inl)
{
    hwaf_aead_ctx *ctx = vctx;

    *outl = 0;
    /* As OpenSSL's GCM: an empty update does nothing, in any state. */
    if (inl == 0)
        return 1;
    if (ctx->tls_aad_set)
        return tls_record(ctx, out, outl, in, inl);
    if (!aead_ready(ctx))
        return 0;
    if (out == NULL && ctx->updates > 0) {
        HWAF_RAISE(PROV(ctx), HWAF_R_AAD_AFTER_DATA, NULL);
        return 0;
    }
    if (out != NULL && outsize < inl) {
        HWAF_RAISE(PROV(ctx), HWAF_R_OUTPUT_BUFFER_TOO_SMALL, "%zu bytes for %zu",
                   outsize, inl);
        return 0;
    }
    if (ctx->ivlen != HWAF_GCM_IV) {
        if (!stream_run(ctx, in, out, inl)) {
            ctx->failed = 1;
            return 0;
        }
    } else if (out == NULL) {
        if (!fits(ctx, inl, 0) || !grow(ctx, &ctx->aad, &ctx->aadcap, ctx->aadlen + inl)) {
            ctx->failed = 1;
            return 0;
        }
        memcpy(ctx->aad + ctx->aadlen, in, inl);
        ctx->aadlen += inl;
    } else if (!data_update(ctx, out, in, inl)) {
        ctx->failed = 1;
        return 0;
    }
    /* the AAD's length too, as OpenSSL's GCM */
    *outl = inl;
    return 1;
}

/*
 * The full tag over everything so far, computed again: one GCM request
 * encrypting the message's plaintext (kept when decrypting; when
 * encrypting, the counter mode turns the kept ciphertext back into it).
 */
static int tag_of_message(hwaf_aead_ctx *ctx, unsigned char tag[HWAF_GCM_TAG])
{
    const unsigned char *pt = ctx->data;
    unsigned char *scratch;
    int r;

    scratch = OPENSSL_malloc(ctx->datalen ? ctx->datalen : 1);
    if (scratch == NULL) {
        HWAF_RAISE(PROV(ctx), HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    if (!ctx->data_plain && ctx->datalen > 0) {
        if (!ctr_at(ctx, 0, ctx->data, scratch, ctx->datalen)) {
            OPENSSL_clear_free(scratch, ctx->datalen);
            return 0;
        }
        pt = scratch;
    }
    /* With no data update, this is the message's first request. */
    r = req_crypt(ctx, ctx->updates == 0, 1, ctx->aad, ctx->aadlen,
                  pt, scratch, ctx->datalen, tag, 0);
    OPENSSL_clear_free(scratch, ctx->datalen ? ctx->datalen : 1);
    return r == 1;
}

static int aead_final(void *vctx, unsigned char *out, size_t *outl, size_t outsize)
{
    hwaf_aead_ctx *ctx = vctx;
    unsigned char tag[HWAF_GCM_TAG];
    int ok;

    *outl = 0;
    if (ctx->tls_aad_set) {
        /* as OpenSSL's GCM, the record mode and the IV end here */
        ctx->tls_aad_set = 0;
        ctx->iv_state = IV_FINISHED;
        HWAF_RAISE(PROV(ctx), HWAF_R_NOT_SUPPORTED, "TLS records go through update");
        return 0;
    }
    if (!aead_ready(ctx))
        return 0;
    if (!ctx->enc && ctx->taglen == 0) {
        /* the tag can still be set, and the final called again */
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_TAG, "no tag set before the final");
        return 0;
    }
    ctx->finalised = 1;
    ctx->iv_state = IV_FINISHED;
    if (ctx->ivlen != HWAF_GCM_IV) {
        if (!stream_final(ctx))
            return 0;
    } else if (ctx->enc && !ctx->tag_ready && !tag_of_message(ctx, ctx->tag)) {
        return 0;
    }
    if (ctx->enc) {
        /* As OpenSSL's GCM: the tag (and its length) stand until the next
         * final; a decryption that follows without setting one checks it. */
        ctx->tag_ready = 1;
        ctx->taglen = HWAF_GCM_TAG;
        return 1;
    }
    if (ctx->ivlen != HWAF_GCM_IV)
        return 1;
    if (ctx->verified && ctx->taglen == HWAF_GCM_TAG)
        return 1;
    if (!tag_of_message(ctx, tag))
        return 0;
    ok = CRYPTO_memcmp(tag, ctx->tag, ctx->taglen) == 0;
    OPENSSL_cleanse(tag, sizeof(tag));
    if (!ok) {
        HWAF_RAISE(PROV(ctx), HWAF_R_TAG_MISMATCH, NULL);
        return 0;
    }
    return 1;
}

/* ---- TLS 1.2 records: explicit IV || data || tag, in place ---- */

static int tls_record(hwaf_aead_ctx *ctx, unsigned char *out, size_t *outl,
                      const unsigned char *in, size_t len)
{
    unsigned char *tag;
    size_t n;
    int r;

    /* One record per tls1-aad, and no message under the IV it leaves, as
     * OpenSSL's GCM. */
    ctx->tls_aad_set = 0;
    ctx->iv_state = IV_FINISHED;
    *outl = 0;
    if (out != in || len < TLS_EXPLICIT_IV + HWAF_GCM_TAG) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER,
                   "a TLS record is processed in place and holds IV and tag");
        return 0;
    }
    if (!ctx->key_set) {
        HWAF_RAISE(PROV(ctx), HWAF_R_NO_KEY_SET, NULL);
        return 0;
    }
    if (!ctx->iv_gen) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH, "no fixed IV set (tlsivfixed)");
        return 0;
    }
    message_new(ctx);
    n = len - TLS_EXPLICIT_IV - HWAF_GCM_TAG;
    /* The explicit IV: the invocation field, sent when sealing (and counted
     * on for the next record), taken from the record when opening. */
    if (ctx->enc)
        memcpy(out, ctx->iv + ctx->ivlen - TLS_EXPLICIT_IV, TLS_EXPLICIT_IV);
    else
        memcpy(ctx->iv + ctx->ivlen - TLS_EXPLICIT_IV, in, TLS_EXPLICIT_IV);
    memcpy(ctx->miv, ctx->iv, ctx->ivlen);
    if (ctx->enc)
        iv_count(ctx);
    tag = out + TLS_EXPLICIT_IV + n;
    /* Each record is a message of its own: its size picks its path. */
    if (ctx->ivlen != HWAF_GCM_IV)
        r = stream_record(ctx, in + TLS_EXPLICIT_IV, out + TLS_EXPLICIT_IV, n, tag);
    else
        r = req_crypt(ctx, 1, ctx->enc, ctx->tls_aad, TLS_AAD_LEN, in + TLS_EXPLICIT_IV,
                      out + TLS_EXPLICIT_IV, n, tag, 0);
    if (r != 1) {
        if (r == -1) {
            OPENSSL_cleanse(out + TLS_EXPLICIT_IV, n);
            HWAF_RAISE(PROV(ctx), HWAF_R_TAG_MISMATCH, "TLS record");
        }
        return 0;
    }
    /* through update: the record sealed, the payload opened */
    *outl = ctx->enc ? len : n;
    return 1;
}

/*
 * EVP_Cipher(): as OpenSSL's GCM, a whole TLS record hands back its length
 * both ways, AAD and data their length, the final 0.
 */
static int aead_cipher(void *vctx, unsigned char *out, size_t *outl, size_t outsize,
                       const unsigned char *in, size_t inl)
{
    hwaf_aead_ctx *ctx = vctx;

    if (ctx->tls_aad_set) {
        if (!tls_record(ctx, out, outl, in, inl))
            return 0;
        *outl = inl;
        return 1;
    }
    if (in == NULL)
        return aead_final(vctx, out, outl, outsize);
    if (inl == 0) {
        *outl = 0;
        return aead_ready(ctx);
    }
    return aead_update(vctx, out, outl, outsize, in, inl);
}

/* ---- parameters ---- */

/* The first data_size bytes of the tag, after an encryption. */
static int get_tag(hwaf_aead_ctx *ctx, OSSL_PARAM *p)
{
    if (!ctx->enc || !ctx->finalised || !ctx->tag_ready
        || p->data_type != OSSL_PARAM_OCTET_STRING
        || p->data_size == 0 || p->data_size > HWAF_GCM_TAG) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_TAG,
                   "the tag (1 to 16 bytes) is there after an encryption's final");
        return 0;
    }
    memcpy(p->data, ctx->tag, p->data_size);
    p->return_size = p->data_size;
    return 1;
}

/* "iv" and "updated-iv": the IV as set, or the random one an encryption
 * without one gets now, as in OpenSSL's GCM. */
static int get_iv(hwaf_aead_ctx *ctx, OSSL_PARAM *p)
{
    if ((ctx->iv_state == IV_NONE && (ctx->tls_aad_set || !iv_random(ctx)))
        || p->data_size < ctx->ivlen || !hwaf_set_octets(p, ctx->iv, ctx->ivlen))
        return hwaf_param_failed(PROV(ctx), p->key);
    return 1;
}

static int aead_get_ctx_params(void *vctx, OSSL_PARAM params[])
{
    hwaf_aead_ctx *ctx = vctx;
    OSSL_PARAM *p;

    /* What EVP asks for alone with every message -- the IV length at each
     * init, the tag after each encryption -- without looking for every
     * other name first. */
    if (params != NULL && params[0].key != NULL && params[1].key == NULL) {
        if (strcmp(params[0].key, OSSL_CIPHER_PARAM_AEAD_TAG) == 0)
            return get_tag(ctx, params);
        if (strcmp(params[0].key, OSSL_CIPHER_PARAM_IVLEN) == 0)
            return OSSL_PARAM_set_size_t(params, ctx->ivlen)
                   ? 1 : hwaf_param_failed(PROV(ctx), params[0].key);
    }

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAGLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, ctx->taglen ? ctx->taglen : HWAF_GCM_TAG))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IV)) != NULL && !get_iv(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_UPDATED_IV)) != NULL
        && !get_iv(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL
        && !get_tag(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD)) != NULL
        && !OSSL_PARAM_set_size_t(p, HWAF_GCM_TAG))
        return hwaf_param_failed(PROV(ctx), p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN)) != NULL) {
        /* As OpenSSL's GCM: a new message under the IV handed back (its
         * last data_size bytes); the invocation field moves on for the next. */
        size_t n = p->data_size;

        if (p->data == NULL || p->data_type != OSSL_PARAM_OCTET_STRING || !ctx->iv_gen
            || !ctx->key_set)
            return hwaf_param_failed(PROV(ctx), p->key);
        if (n == 0 || n > ctx->ivlen)
            n = ctx->ivlen;
        message_new(ctx);
        memcpy(ctx->miv, ctx->iv, ctx->ivlen);
        ctx->iv_state = IV_COPIED;
        memcpy(p->data, ctx->iv + ctx->ivlen - n, n);
        p->return_size = n;
        iv_count(ctx);
    }
    return hwaf_cipher_ctx_get_common(ctx->impl, params, ctx->keylen, ctx->ivlen,
                                      ctx->offload);
}

static const OSSL_PARAM aead_known_gettable_ctx_params[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TAGLEN, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_IV, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD_PAD, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_GET_IV_GEN, NULL, 0),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    HWAF_IMPL_GETTABLE_PARAMS,
    OSSL_PARAM_END
};

static const OSSL_PARAM *aead_gettable_ctx_params(void *cctx, void *provctx)
{
    return aead_known_gettable_ctx_params;
}

/* tls1-aad: keep the record header, its length reduced to the payload's. */
static int set_tls_aad(hwaf_aead_ctx *ctx, const OSSL_PARAM *p)
{
    size_t len;

    if (p->data_type != OSSL_PARAM_OCTET_STRING || p->data_size != TLS_AAD_LEN) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "tls1-aad: %d bytes expected",
                   TLS_AAD_LEN);
        return 0;
    }
    memcpy(ctx->tls_aad, p->data, TLS_AAD_LEN);
    len = (size_t)ctx->tls_aad[TLS_AAD_LEN - 2] << 8 | ctx->tls_aad[TLS_AAD_LEN - 1];
    if (len < TLS_EXPLICIT_IV + (ctx->enc ? 0 : HWAF_GCM_TAG)) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "tls1-aad: record too short");
        return 0;
    }
    len -= TLS_EXPLICIT_IV + (ctx->enc ? 0 : HWAF_GCM_TAG);
    ctx->tls_aad[TLS_AAD_LEN - 2] = (unsigned char)(len >> 8);
    ctx->tls_aad[TLS_AAD_LEN - 1] = (unsigned char)len;
    ctx->tls_aad_set = 1;
    return 1;
}

/* tlsivfixed: the whole IV (length -1) or its fixed part (4 bytes or more,
 * leaving 8 or more to count); the rest starts random when encrypting, as
 * in OpenSSL's GCM. */
static int set_tls_iv_fixed(hwaf_aead_ctx *ctx, const OSSL_PARAM *p)
{
    size_t len = p->data_size;

    if (p->data_type != OSSL_PARAM_OCTET_STRING || p->data == NULL
        || (len != (size_t)-1
            && (len < TLS_FIXED_IV || len > ctx->ivlen || ctx->ivlen - len < TLS_EXPLICIT_IV))) {
        HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH,
                   "tlsivfixed: %zu bytes; %d to %zu, or -1 for the whole IV", len,
                   TLS_FIXED_IV, ctx->ivlen - TLS_EXPLICIT_IV);
        return 0;
    }
    if (len == (size_t)-1) {
        memcpy(ctx->iv, p->data, ctx->ivlen);
    } else {
        memcpy(ctx->iv, p->data, len);
        if (ctx->enc
            && RAND_bytes_ex(hwaf_soft_libctx(), ctx->iv + len, ctx->ivlen - len, 0) <= 0) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_PARAMETER, "tlsivfixed: no random bytes");
            return 0;
        }
    }
    ctx->iv_state = IV_BUFFERED;
    ctx->iv_gen = 1;
    return 1;
}

static int aead_set_ctx_params(void *vctx, const OSSL_PARAM params[])
{
    hwaf_aead_ctx *ctx = vctx;
    const OSSL_PARAM *p;
    size_t sz;

    if (params == NULL)
        return 1;
    /* EVP sets the padding alone with every init; GCM has none and, as
     * OpenSSL's GCM, ignores it, without looking for every other name. */
    if (params[0].key != NULL && params[1].key == NULL
        && strcmp(params[0].key, OSSL_CIPHER_PARAM_PADDING) == 0)
        return 1;
    if (!hwaf_cipher_ctx_set_common(ctx->impl, params, &ctx->offload))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TAG)) != NULL) {
        if (p->data_type != OSSL_PARAM_OCTET_STRING || p->data_size == 0
            || p->data_size > HWAF_GCM_TAG || ctx->enc) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_TAG,
                       "a tag of 1 to 16 bytes is set before a decryption's final");
            return 0;
        }
        if (p->data != NULL) {
            memcpy(ctx->tag, p->data, p->data_size);
            ctx->taglen = p->data_size;
            ctx->tag_new = 1;
            ctx->verified = 0;   /* a first update checked another tag */
        }
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_IVLEN)) != NULL) {
        if (!OSSL_PARAM_get_size_t(p, &sz))
            return hwaf_param_failed(PROV(ctx), p->key);
        if (!ivlen_ok(ctx, sz))
            return 0;
        if (sz != ctx->ivlen) {
            /* As OpenSSL's GCM: an IV set or generated before is spent. */
            if (ctx->iv_state != IV_NONE)
                ctx->iv_state = IV_FINISHED;
            ctx->ivlen = sz;
        }
    }
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_AAD)) != NULL
        && !set_tls_aad(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED)) != NULL
        && !set_tls_iv_fixed(ctx, p))
        return 0;
    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV)) != NULL) {
        /* As OpenSSL's GCM: a new message under the fixed IV with these
         * last bytes. */
        if (p->data == NULL || p->data_type != OSSL_PARAM_OCTET_STRING || !ctx->iv_gen
            || !ctx->key_set || ctx->enc || p->data_size > ctx->ivlen) {
            HWAF_RAISE(PROV(ctx), HWAF_R_INVALID_IV_LENGTH,
                       "tlsivinv: up to the IV's length, when decrypting after tlsivfixed");
            return 0;
        }
        message_new(ctx);
        memcpy(ctx->iv + ctx->ivlen - p->data_size, p->data, p->data_size);
        memcpy(ctx->miv, ctx->iv, ctx->ivlen);
        ctx->iv_state = IV_COPIED;
    }
    return 1;
}

static const OSSL_PARAM aead_known_settable_ctx_params[] = {
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, NULL),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_AAD, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_IV_FIXED, NULL, 0),
    OSSL_PARAM_octet_string(OSSL_CIPHER_PARAM_AEAD_TLS1_SET_IV_INV, NULL, 0),
    OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, NULL),
    OSSL_PARAM_END
};

static const OSSL_PARAM *aead_settable_ctx_params(void *cctx, void *provctx)
{
    return aead_known_settable_ctx_params;
}

/* ---- one dispatch table per (algorithm, implementation slot) ---- */

#define AEAD_SLOT(id, s)                                                           \
    static OSSL_FUNC_cipher_newctx_fn anewctx_##id##_##s;                          \
    static void *anewctx_##id##_##s(void *provctx)                                 \
    {                                                                              \
        return aead_newctx(provctx, HWAF_ALG_##id, s);                             \
    }                                                                              \
    static const OSSL_DISPATCH afns_##id##_##s[] = {                               \
        { OSSL_FUNC_CIPHER_NEWCTX, (void (*)(void))anewctx_##id##_##s },           \
        { OSSL_FUNC_CIPHER_GET_PARAMS, (void (*)(void))aget_params_##id },         \
        { OSSL_FUNC_CIPHER_FREECTX, (void (*)(void))aead_freectx },                \
        { OSSL_FUNC_CIPHER_DUPCTX, (void (*)(void))aead_dupctx },                  \
        { OSSL_FUNC_CIPHER_ENCRYPT_INIT, (void (*)(void))aead_einit },             \
        { OSSL_FUNC_CIPHER_DECRYPT_INIT, (void (*)(void))aead_dinit },             \
        { OSSL_FUNC_CIPHER_UPDATE, (void (*)(void))aead_update },                  \
        { OSSL_FUNC_CIPHER_FINAL, (void (*)(void))aead_final },                    \
        { OSSL_FUNC_CIPHER_CIPHER, (void (*)(void))aead_cipher },                  \
        { OSSL_FUNC_CIPHER_GETTABLE_PARAMS, (void (*)(void))hwaf_cipher_gettable_params }, \
        { OSSL_FUNC_CIPHER_GET_CTX_PARAMS, (void (*)(void))aead_get_ctx_params },  \
        { OSSL_FUNC_CIPHER_SET_CTX_PARAMS, (void (*)(void))aead_set_ctx_params },  \
        { OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS,                                    \
          (void (*)(void))aead_gettable_ctx_params },                              \
        { OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS,                                    \
          (void (*)(void))aead_settable_ctx_params },                              \
        { 0, NULL }                                                                \
    };

#define AEAD_ALG(id, names, kname, kind, mode, kl, ivl, bl, mdl)                   \
    static OSSL_FUNC_cipher_get_params_fn aget_params_##id;                        \
    static int aget_params_##id(OSSL_PARAM params[])                               \
    {                                                                              \
        return hwaf_cipher_alg_params(&hwaf_algs[HWAF_ALG_##id], params);                 \
    }                                                                              \
    AEAD_SLOT(id, 0) AEAD_SLOT(id, 1) AEAD_SLOT(id, 2) AEAD_SLOT(id, 3)

#define ONLY_AEAD(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    ONLY_AEAD_##kind(id, names, kname, kind, mode, kl, ivl, bl, mdl)
#define ONLY_AEAD_AEAD AEAD_ALG
#define ONLY_AEAD_CIPHER(...)
#define ONLY_AEAD_DIGEST(...)
#define ONLY_AEAD_MAC(...)

HWAF_ALGORITHMS(ONLY_AEAD)

#define AEAD_TABLE_ROW(id, names, kname, kind, mode, kl, ivl, bl, mdl) \
    AEAD_TABLE_ROW_##kind(id)
#define AEAD_TABLE_ROW_AEAD(id) \
    [HWAF_ALG_##id] = { afns_##id##_0, afns_##id##_1, afns_##id##_2, afns_##id##_3 },
#define AEAD_TABLE_ROW_CIPHER(id)
#define AEAD_TABLE_ROW_DIGEST(id)
#define AEAD_TABLE_ROW_MAC(id)

static const OSSL_DISPATCH *const aead_tables[HWAF_NALGS][HWAF_NSLOTS] = {
    HWAF_ALGORITHMS(AEAD_TABLE_ROW)
};

const OSSL_DISPATCH *hwaf_aead_dispatch(int alg, int slot)
{
    return aead_tables[alg][slot];
}
