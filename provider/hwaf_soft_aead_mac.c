/*
 * The software path of size-aware dispatch for AES-GCM and HMAC: the
 * default provider's AES-GCM and HMAC (hwaf_soft_fetch), their dispatch
 * functions called directly, offered to hwaf_aead.c and hwaf_mac.c as the
 * backend of the software twins of AEAD and MAC implementations
 * (hwaf_backend_soft_aead_mac): the same whole-message aead_crypt() and
 * the same keyed-hash calls as the kernel backends, so that the mode layers
 * keep one way of working whichever path a message takes.
 */
#include <stdio.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_soft.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"

typedef struct soft_am_st {
    void *provctx;
    /* AES-GCM */
    OSSL_FUNC_cipher_newctx_fn *c_new;
    OSSL_FUNC_cipher_encrypt_init_fn *c_einit;
    OSSL_FUNC_cipher_decrypt_init_fn *c_dinit;
    OSSL_FUNC_cipher_update_fn *c_update;
    OSSL_FUNC_cipher_final_fn *c_final;
    OSSL_FUNC_cipher_get_ctx_params_fn *c_get;
    OSSL_FUNC_cipher_set_ctx_params_fn *c_set;
    OSSL_FUNC_cipher_freectx_fn *c_free;
    OSSL_FUNC_cipher_dupctx_fn *c_dup;
    /* HMAC */
    const char *digest;   /* the digest's OpenSSL name, "SHA2-256" */
    OSSL_FUNC_mac_newctx_fn *m_new;
    OSSL_FUNC_mac_init_fn *m_init;
    OSSL_FUNC_mac_update_fn *m_update;
    OSSL_FUNC_mac_final_fn *m_final;
    OSSL_FUNC_mac_dupctx_fn *m_dup;
    OSSL_FUNC_mac_freectx_fn *m_free;
} soft_am;

#define FNS(impl) ((const soft_am *)(impl)->be_data)
/* f->field = the function id of fns, typed as the field; 0 when fns has none. */
#define TAKE(field, id) ((f->field = (__typeof__(f->field))hwaf_soft_fn(fns, id)) != NULL)

/* The first of the ':'-separated names. */
static int first_name(const char *names, char *buf, size_t len)
{
    size_t nl = strcspn(names, ":");

    if (nl >= len)
        return 0;
    memcpy(buf, names, nl);
    buf[nl] = '\0';
    return 1;
}

static int am_impl_init(hwaf_impl *impl)
{
    const hwaf_alg *alg = impl->alg;
    const OSSL_DISPATCH *fns;
    soft_am *f;
    char name[64];
    int ok;

    if ((f = OPENSSL_zalloc(sizeof(*f))) == NULL)
        return 0;
    if (alg->kind == HWAF_KIND_AEAD) {
        ok = first_name(alg->names, name, sizeof(name))
             && hwaf_soft_fetch(OSSL_OP_CIPHER, name, &fns, &f->provctx)
             && TAKE(c_new, OSSL_FUNC_CIPHER_NEWCTX) && TAKE(c_einit, OSSL_FUNC_CIPHER_ENCRYPT_INIT)
             && TAKE(c_dinit, OSSL_FUNC_CIPHER_DECRYPT_INIT) && TAKE(c_update, OSSL_FUNC_CIPHER_UPDATE)
             && TAKE(c_final, OSSL_FUNC_CIPHER_FINAL) && TAKE(c_get, OSSL_FUNC_CIPHER_GET_CTX_PARAMS)
             && TAKE(c_set, OSSL_FUNC_CIPHER_SET_CTX_PARAMS) && TAKE(c_free, OSSL_FUNC_CIPHER_FREECTX)
             && TAKE(c_dup, OSSL_FUNC_CIPHER_DUPCTX);
    } else if (alg->kind == HWAF_KIND_MAC) {
        /* hmac(x) is the HMAC of the digest at the same place among the
         * digests (hwaf_local.h): its first name is what HMAC is told. */
        f->digest = hwaf_algs[HWAF_ALG_SHA1 + (int)(alg - &hwaf_algs[HWAF_ALG_HMAC_SHA1])].names;
        ok = hwaf_soft_fetch(OSSL_OP_MAC, "HMAC", &fns, &f->provctx)
             && TAKE(m_new, OSSL_FUNC_MAC_NEWCTX) && TAKE(m_init, OSSL_FUNC_MAC_INIT)
             && TAKE(m_update, OSSL_FUNC_MAC_UPDATE) && TAKE(m_final, OSSL_FUNC_MAC_FINAL)
             && TAKE(m_dup, OSSL_FUNC_MAC_DUPCTX) && TAKE(m_free, OSSL_FUNC_MAC_FREECTX);
    } else {
        ok = 0;
    }
    if (!ok) {
        OPENSSL_free(f);
        return 0;
    }
    impl->be_data = f;
    return 1;
}

static void am_impl_free(hwaf_impl *impl)
{
    OPENSSL_free(impl->be_data);
    impl->be_data = NULL;
}

/* ---- AES-GCM: one default-provider context per direction ---- */

struct hwaf_be_aead_st {
    const hwaf_impl *impl;
    void *c[2];                     /* [enc], created and keyed on first use */
    unsigned char key[HWAF_MAX_KEY];
    size_t keylen;
};

static void am_aead_close(hwaf_be_aead *s);

static int am_aead_open(hwaf_be_aead **out, const hwaf_impl *impl,
                        const unsigned char *key, size_t keylen)
{
    hwaf_be_aead *s;

    if (keylen > HWAF_MAX_KEY || (s = OPENSSL_zalloc(sizeof(*s))) == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    s->impl = impl;
    memcpy(s->key, key, keylen);
    s->keylen = keylen;
    *out = s;
    return 1;
}

/*
 * The default provider's context of direction enc (1 or 0), made on first
 * use; *key is then the key to give its init (the key schedule once,
 * afterwards only the IV), else NULL.  NULL with an error raised.
 */
static void *am_ctx(hwaf_be_aead *s, int enc, const unsigned char **key)
{
    const soft_am *f = FNS(s->impl);

    *key = NULL;
    if (s->c[enc] == NULL) {
        if ((s->c[enc] = f->c_new(f->provctx)) == NULL) {
            HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "AES-GCM newctx");
            return NULL;
        }
        *key = s->key;
    }
    return s->c[enc];
}

/* An init that failed on a context never keyed: it starts afresh next time. */
static void am_ctx_failed(hwaf_be_aead *s, int enc, const unsigned char *key)
{
    if (key != NULL) {
        FNS(s->impl)->c_free(s->c[enc]);
        s->c[enc] = NULL;
    }
}

/* The final of direction enc: encrypting, the full tag into tag; decrypting,
 * taglen bytes of tag checked (set first).  1; -1 (nothing raised) when a
 * decryption's tag does not match; 0 with an error raised. */
static int am_final(hwaf_be_aead *s, int enc, unsigned char *tag, size_t taglen)
{
    const soft_am *f = FNS(s->impl);
    OSSL_PARAM tp[2] = { OSSL_PARAM_END, OSSL_PARAM_END };
    unsigned char last[16];
    size_t outl = 0;
    void *c = s->c[enc];
    int ok;

    tp[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag,
                                              enc ? HWAF_GCM_TAG : taglen);
    if (!enc) {
        /* A tag that does not match fails the final, raising nothing of
         * the default provider's on the queue. */
        if (!f->c_set(c, tp)) {
            HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s tag",
                       s->impl->alg->kname);
            return 0;
        }
        ERR_set_mark();
        ok = f->c_final(c, last, &outl, sizeof(last));
        ERR_pop_to_mark();
        return ok ? 1 : -1;
    }
    if (!f->c_final(c, last, &outl, sizeof(last)) || !f->c_get(c, tp)) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s final",
                   s->impl->alg->kname);
        return 0;
    }
    return 1;
}

/* ---- AES-GCM as a running stream (hwaf_soft.h); a whole operation is one ---- */

int hwaf_soft_aead_start(hwaf_be_aead *s, int enc, const unsigned char *iv, size_t ivlen)
{
    const soft_am *f = FNS(s->impl);
    const unsigned char *key;
    void *c;
    int ok;

    enc = enc ? 1 : 0;
    if ((c = am_ctx(s, enc, &key)) == NULL)
        return 0;
    ok = enc ? f->c_einit(c, key, s->keylen, iv, ivlen, NULL)
             : f->c_dinit(c, key, s->keylen, iv, ivlen, NULL);
    if (!ok) {
        am_ctx_failed(s, enc, key);
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s init, IV of %zu bytes",
                   s->impl->alg->kname, ivlen);
    }
    return ok;
}

/*
 * One whole GCM operation, as the kernel backends do it: 1, or -1 (nothing
 * raised, out[] wiped) when a decryption's tag does not match.
 */
static int am_aead_crypt(hwaf_be_aead *s, int enc, const unsigned char *iv,
                         const unsigned char *aad, size_t aadlen,
                         const unsigned char *in, unsigned char *out, size_t len,
                         unsigned char *tag, int owned)
{
    const soft_am *f = FNS(s->impl);
    size_t outl = 0;
    void *c;
    int ok;

    enc = enc ? 1 : 0;
    if (!hwaf_soft_aead_start(s, enc, iv, HWAF_GCM_IV))
        return 0;
    c = s->c[enc];
    ok = aadlen == 0 || (f->c_update(c, NULL, &outl, aadlen, aad, aadlen) && outl == aadlen);
    ok = ok && (len == 0 || (f->c_update(c, out, &outl, len, in, len) && outl == len));
    if (!ok) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s, %zu + %zu bytes",
                   s->impl->alg->kname, aadlen, len);
        return 0;
    }
    ok = am_final(s, enc, tag, HWAF_GCM_TAG);
    if (ok != 0)
        hwaf_stats_add_soft(aadlen + len);
    if (ok == -1)
        OPENSSL_cleanse(out, len);
    return ok;
}

int hwaf_soft_aead_run(hwaf_be_aead *s, int enc, const unsigned char *in,
                       unsigned char *out, size_t len)
{
    size_t outl = 0;

    if (len == 0)
        return 1;
    if (!FNS(s->impl)->c_update(s->c[enc ? 1 : 0], out, &outl, len, in, len) || outl != len) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s update, %zu bytes",
                   s->impl->alg->kname, len);
        return 0;
    }
    hwaf_stats_add_soft(len);
    return 1;
}

int hwaf_soft_aead_finish(hwaf_be_aead *s, int enc, unsigned char *tag, size_t taglen)
{
    return am_final(s, enc ? 1 : 0, tag, taglen);
}

int hwaf_soft_aead_dup(hwaf_be_aead **out, const hwaf_be_aead *s)
{
    const soft_am *f = FNS(s->impl);
    hwaf_be_aead *d;
    int i;

    if (!am_aead_open(&d, s->impl, s->key, s->keylen))
        return 0;
    for (i = 0; i < 2; i++) {
        if (s->c[i] != NULL && (d->c[i] = f->c_dup(s->c[i])) == NULL) {
            am_aead_close(d);
            HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "AES-GCM dupctx");
            return 0;
        }
    }
    *out = d;
    return 1;
}

static size_t am_aead_max(hwaf_be_aead *s, size_t aadlen, int sizing)
{
    return SIZE_MAX;
}

static void am_aead_close(hwaf_be_aead *s)
{
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < 2; i++)
        if (s->c[i] != NULL)
            FNS(s->impl)->c_free(s->c[i]);
    OPENSSL_clear_free(s, sizeof(*s));
}

/* ---- HMAC: a default-provider HMAC context, its key set once ---- */

struct hwaf_be_md_st {
    const hwaf_impl *impl;
    void *m;
};

static int am_mac_open(hwaf_be_md **out, const hwaf_impl *impl,
                       const unsigned char *key, size_t keylen)
{
    const soft_am *f = FNS(impl);
    hwaf_be_md *s = OPENSSL_zalloc(sizeof(*s));
    OSSL_PARAM p[2];
    char digest[64];

    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    s->impl = impl;
    first_name(f->digest, digest, sizeof(digest));
    p[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0);
    p[1] = OSSL_PARAM_construct_end();
    /* An empty key is a key (HMAC pads it); the default HMAC wants a
     * non-NULL pointer for it. */
    if ((s->m = f->m_new(f->provctx)) == NULL
        || !f->m_init(s->m, keylen > 0 ? key : (const unsigned char *)"", keylen, p)) {
        if (s->m != NULL)
            f->m_free(s->m);
        OPENSSL_free(s);
        HWAF_RAISE(impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "HMAC %s init", digest);
        return 0;
    }
    *out = s;
    return 1;
}

static int am_md_update(hwaf_be_md *s, const unsigned char *in, size_t len)
{
    if (!FNS(s->impl)->m_update(s->m, in, len)) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "HMAC update");
        return 0;
    }
    hwaf_stats_add_soft(len);
    return 1;
}

/* Back to the keyed initial state: init without a key keeps the key. */
static int am_md_reset(hwaf_be_md *s)
{
    if (!FNS(s->impl)->m_init(s->m, NULL, 0, NULL)) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "HMAC init");
        return 0;
    }
    return 1;
}

static int am_md_final(hwaf_be_md *s, unsigned char *md)
{
    size_t outl = 0;

    if (!FNS(s->impl)->m_final(s->m, md, &outl, s->impl->alg->mdlen)
        || outl != s->impl->alg->mdlen) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "HMAC final");
        return 0;
    }
    return am_md_reset(s);
}

static int am_md_dup(hwaf_be_md **out, hwaf_be_md *s)
{
    hwaf_be_md *d = OPENSSL_zalloc(sizeof(*d));

    if (d == NULL || (d->m = FNS(s->impl)->m_dup(s->m)) == NULL) {
        OPENSSL_free(d);
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "HMAC dupctx");
        return 0;
    }
    d->impl = s->impl;
    *out = d;
    return 1;
}

static void am_md_close(hwaf_be_md *s)
{
    if (s == NULL)
        return;
    FNS(s->impl)->m_free(s->m);   /* the default HMAC wipes its key */
    OPENSSL_free(s);
}

static int am_md_open(hwaf_be_md **s, const hwaf_impl *impl)
{
    HWAF_RAISE(impl->prov, HWAF_R_NOT_SUPPORTED, "an HMAC needs its key");
    return 0;
}

const hwaf_backend hwaf_backend_soft_aead_mac = {
    .name = "software",
    .available = hwaf_soft_available,
    .drivers = hwaf_soft_drivers,
    /* no plain cipher: the GCM layer's counter-mode continuation of a
     * message in software uses hwaf_backend_soft's AES-CTR */
    .md_open = am_md_open,
    .md_update = am_md_update,
    .md_final = am_md_final,
    .md_reset = am_md_reset,
    .md_dup = am_md_dup,
    .md_close = am_md_close,
    .md_fork_prepare = hwaf_soft_md_fork_prepare,
    .md_fork_parent = hwaf_soft_md_fork_noop,
    .md_fork_child = hwaf_soft_md_fork_noop,
    .impl_init = am_impl_init,
    .impl_free = am_impl_free,
    .aead_open = am_aead_open,
    .aead_crypt = am_aead_crypt,
    .aead_max = am_aead_max,
    .aead_close = am_aead_close,
    .aead_abandon = am_aead_close,   /* nothing is shared with a parent */
    .mac_open = am_mac_open,
};
