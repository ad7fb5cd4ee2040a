/*
 * AES-GCM and HMAC through EVP (the default provider, hwaf); their bare
 * AF_ALG loops are in impl_afalg.c.
 *
 * One GCM operation seals one message as TLS does for a record: a new IV
 * (init with the IV only), 13 bytes of AAD, the data in one update, the
 * final and the 16-byte tag.  Its output is ciphertext || tag.  One HMAC
 * operation is init (same key) + update + final of the buffer.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "bench.h"
#include "hwaf/hwaf.h"

#define TAG_LEN 16

/* "HMAC-SHA2-256" -> "SHA2-256" */
static const char *mac_digest(const bench_alg *a)
{
    return a->name + 5;
}

static void why_ssl(char *why, size_t whylen, const char *what)
{
    char buf[200] = "no error queued";
    unsigned long e = ERR_peek_error();

    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(why, whylen, "%s: %s", what, buf);
    ERR_clear_error();
}

/* ---- EVP ---- */

typedef struct {
    const bench_alg *a;
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *cctx;
    EVP_MAC *mac;
    EVP_MAC_CTX *mctx;
} evp_am_st;

static void evp_am_close(void *vst)
{
    evp_am_st *st = vst;

    if (st == NULL)
        return;
    EVP_CIPHER_CTX_free(st->cctx);
    EVP_CIPHER_free(st->cipher);
    EVP_MAC_CTX_free(st->mctx);
    EVP_MAC_free(st->mac);
    free(st);
}

static int evp_am_reset(void *vst, char *why, size_t whylen)
{
    (void)vst, (void)why, (void)whylen;
    return 1;
}

static int evp_gcm_op(void *vst, const unsigned char *in, unsigned char *out,
                      size_t len, char *why, size_t whylen)
{
    evp_am_st *st = vst;
    int l = 0, l2 = 0;

    if (!EVP_EncryptInit_ex(st->cctx, NULL, NULL, NULL, bench_iv)
        || !EVP_EncryptUpdate(st->cctx, NULL, &l, BENCH_AEAD_AAD, BENCH_AEAD_AAD_LEN)
        || !EVP_EncryptUpdate(st->cctx, out, &l, in, (int)len)
        || !EVP_EncryptFinal_ex(st->cctx, out + l, &l2)
        || EVP_CIPHER_CTX_ctrl(st->cctx, EVP_CTRL_AEAD_GET_TAG, TAG_LEN, out + len) <= 0) {
        why_ssl(why, whylen, "GCM seal");
        return 0;
    }
    return 1;
}

static int evp_mac_op(void *vst, const unsigned char *in, unsigned char *out,
                      size_t len, char *why, size_t whylen)
{
    evp_am_st *st = vst;
    size_t n = 0;

    if (!EVP_MAC_init(st->mctx, NULL, 0, NULL)
        || !EVP_MAC_update(st->mctx, in, len)
        || !EVP_MAC_final(st->mctx, out, &n, st->a->mdlen)) {
        why_ssl(why, whylen, "HMAC");
        return 0;
    }
    return 1;
}

static const bench_ops evp_gcm_ops = { evp_gcm_op, evp_am_reset, evp_am_close };
static const bench_ops evp_mac_ops = { evp_mac_op, evp_am_reset, evp_am_close };

int bench_aead_mac_offered(const bench_alg *a, const char *propq)
{
    int ok;

    if (a->kind == BENCH_AEAD) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, a->name, propq);

        ok = c != NULL;
        EVP_CIPHER_free(c);
    } else {
        /* hwaf's HMAC serves the digest when init with it succeeds. */
        EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", propq);
        EVP_MAC_CTX *x = m != NULL ? EVP_MAC_CTX_new(m) : NULL;
        OSSL_PARAM p[] = {
            OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)mac_digest(a), 0),
            OSSL_PARAM_END
        };

        ok = x != NULL && EVP_MAC_init(x, bench_key, a->keylen, p);
        EVP_MAC_CTX_free(x);
        EVP_MAC_free(m);
    }
    ERR_clear_error();
    return ok;
}

bench_inst *bench_open_aead_mac(bench_set *s, const bench_alg *a, const char *name,
                                const char *propq, bench_family fam,
                                const OSSL_PARAM *init)
{
    evp_am_st *st = calloc(1, sizeof(*st));
    char why[BENCH_WHY_MAX];
    bench_inst *inst;
    int ok;

    if (st == NULL)
        return NULL;
    st->a = a;
    if (a->kind == BENCH_AEAD) {
        st->cipher = EVP_CIPHER_fetch(NULL, a->name, propq);
        st->cctx = EVP_CIPHER_CTX_new();
        ok = st->cipher != NULL && st->cctx != NULL
            && EVP_EncryptInit_ex2(st->cctx, st->cipher, bench_key, bench_iv, init);
    } else {
        OSSL_PARAM p[] = {
            OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)mac_digest(a), 0),
            OSSL_PARAM_END, OSSL_PARAM_END
        };

        if (init != NULL)
            p[1] = init[0];

        st->mac = EVP_MAC_fetch(NULL, "HMAC", propq);
        st->mctx = st->mac != NULL ? EVP_MAC_CTX_new(st->mac) : NULL;
        ok = st->mctx != NULL && EVP_MAC_init(st->mctx, bench_key, a->keylen, p);
    }
    if (!ok) {
        why_ssl(why, sizeof(why), a->kind == BENCH_AEAD ? "GCM init" : "HMAC init");
        bench_set_absent(s, name, "%s", why);
        evp_am_close(st);
        return NULL;
    }
    inst = bench_set_add(s, name, fam);
    if (inst == NULL) {
        evp_am_close(st);
        return NULL;
    }
    inst->ops = a->kind == BENCH_AEAD ? &evp_gcm_ops : &evp_mac_ops;
    inst->st = st;
    inst->hw = -1;
    inst->counter = -1;
    if (fam == BENCH_FAM_HWAF) {
        /* Its kernel driver, and the backend whose counter shows where its
         * operations go (hwaf-auto: the context's own choice). */
        char backend[16] = "";
        OSSL_PARAM p[] = {
            OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, inst->driver, sizeof(inst->driver)),
            OSSL_PARAM_int(HWAF_PARAM_HW, &inst->hw),
            OSSL_PARAM_utf8_string(HWAF_PARAM_BACKEND, backend, sizeof(backend)),
            OSSL_PARAM_size_t(HWAF_PARAM_OFFLOAD_MIN, &inst->offload_min),
            OSSL_PARAM_END
        };

        if (!(a->kind == BENCH_AEAD ? EVP_CIPHER_CTX_get_params(st->cctx, p)
                                    : EVP_MAC_CTX_get_params(st->mctx, p)))
            snprintf(inst->driver, sizeof(inst->driver), "?");
        else if (strcmp(backend, "afalg") == 0)
            inst->counter = BENCH_CTR_AFALG;
        else if (strcmp(backend, "devcrypto") == 0)
            inst->counter = BENCH_CTR_DEVCRYPTO;
        ERR_clear_error();
    }
    return inst;
}

int bench_reference_aead_mac(const bench_alg *a, const unsigned char *in, size_t len,
                             unsigned char *out)
{
    bench_set s;
    bench_inst *inst;
    char why[BENCH_WHY_MAX];
    int ok;

    memset(&s, 0, sizeof(s));
    inst = bench_open_aead_mac(&s, a, "reference", "provider=default", BENCH_FAM_SOFTWARE, NULL);
    if (inst == NULL)
        return 0;
    ok = inst->ops->op(inst->st, in, out, len, why, sizeof(why));
    inst->ops->close(inst->st);
    return ok;
}
