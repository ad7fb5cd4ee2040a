/*
 * Shared implementation helpers, below the cipher and digest layers and
 * above the backends: a new algorithm context bound to its implementation,
 * the parameters every context answers (hwaf-driver, hwaf-backend,
 * hwaf-hw, ...), and the algorithm parameters of every cipher (plain and
 * AEAD).
 */
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_soft.h"
#include <hwaf/hwaf.h>

int hwaf_param_failed(const hwaf_prov *prov, const char *name)
{
    HWAF_RAISE(prov, HWAF_R_FAILED_TO_SET_PARAMETER,
               "%s: wrong type or buffer too small", name);
    return 0;
}

/*
 * Whether params name one of hwaf's own parameters ("hwaf-..."): EVP asks
 * a context for its own (ivlen, padding, ...) at every init, and those
 * queries skip the look-ups of hwaf's.
 */
static int own_params(const OSSL_PARAM *params)
{
    for (; params != NULL && params->key != NULL; params++)
        if (params->key[0] == 'h' && strncmp(params->key, "hwaf-", 5) == 0)
            return 1;
    return 0;
}

int hwaf_set_octets(OSSL_PARAM *p, const void *v, size_t len)
{
    if (p->data_type == OSSL_PARAM_OCTET_PTR)
        return OSSL_PARAM_set_octet_ptr(p, v, len);
    return OSSL_PARAM_set_octet_string(p, v, len);
}

int hwaf_cipher_ctx_get_common(const hwaf_impl *impl, OSSL_PARAM params[], size_t keylen,
                               size_t ivlen, int offload)
{
    OSSL_PARAM *p;

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, ivlen))
        return hwaf_param_failed(impl->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, keylen))
        return hwaf_param_failed(impl->prov, p->key);
    if (!own_params(params))
        return 1;
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_OFFLOAD)) != NULL
        && !OSSL_PARAM_set_int(p, offload))
        return hwaf_param_failed(impl->prov, p->key);
    return hwaf_impl_get_params(impl, params);
}

int hwaf_cipher_ctx_set_common(const hwaf_impl *impl, const OSSL_PARAM params[],
                               int *offload)
{
    const OSSL_PARAM *p;
    size_t keylen;

    if ((p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL) {
        if (!OSSL_PARAM_get_size_t(p, &keylen)) {
            HWAF_RAISE(impl->prov, HWAF_R_INVALID_PARAMETER, "keylen");
            return 0;
        }
        if (keylen != impl->alg->keylen) {
            HWAF_RAISE(impl->prov, HWAF_R_INVALID_KEY_LENGTH,
                       "%zu bytes, this cipher takes %u", keylen, impl->alg->keylen);
            return 0;
        }
    }
    /* Takes effect at the next operation or message. */
    if (own_params(params)
        && (p = OSSL_PARAM_locate_const(params, HWAF_PARAM_OFFLOAD)) != NULL
        && !hwaf_offload_param(impl->prov, p, offload))
        return 0;
    return 1;
}

int hwaf_impl_verify(const hwaf_impl *impl)
{
    int v = __atomic_load_n(&((hwaf_impl *)impl)->kat, __ATOMIC_ACQUIRE);

    return v != HWAF_KAT_UNKNOWN ? v : impl->prov->verify(impl);
}

void *hwaf_ctx_new(void *provctx, int alg, int slot, size_t size)
{
    hwaf_prov *prov = provctx;
    const hwaf_impl *impl = prov->slot[alg][slot];
    void *ctx;

    if (impl == NULL)
        return NULL;
    hwaf_soft_ready(impl);   /* the software path at its first context */
    ctx = OPENSSL_zalloc(size);
    if (ctx == NULL) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return NULL;
    }
    *(const hwaf_impl **)ctx = impl;
    return ctx;
}

int hwaf_impl_get_params(const hwaf_impl *impl, OSSL_PARAM params[])
{
    OSSL_PARAM *p;

    if (!own_params(params))
        return 1;
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_DRIVER)) != NULL
        && !OSSL_PARAM_set_utf8_string(p, impl->drv.name))
        return hwaf_param_failed(impl->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_BACKEND)) != NULL
        && !OSSL_PARAM_set_utf8_string(p, impl->be->name))
        return hwaf_param_failed(impl->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_HW)) != NULL
        && !OSSL_PARAM_set_int(p, impl->hw))
        return hwaf_param_failed(impl->prov, p->key);
    if ((p = OSSL_PARAM_locate(params, HWAF_PARAM_OFFLOAD_MIN)) != NULL
        && !OSSL_PARAM_set_size_t(p, impl->offload_min))
        return hwaf_param_failed(impl->prov, p->key);
    return 1;
}

int hwaf_offload_param(const hwaf_prov *prov, const OSSL_PARAM *p, int *offload)
{
    int v;

    if (!OSSL_PARAM_get_int(p, &v) || v < HWAF_OFFLOAD_AUTO || v > HWAF_OFFLOAD_KERNEL) {
        HWAF_RAISE(prov, HWAF_R_INVALID_PARAMETER,
                   "%s: -1 (auto), 0 (software) or 1 (kernel)", HWAF_PARAM_OFFLOAD);
        return 0;
    }
    *offload = v;
    return 1;
}

int hwaf_cipher_alg_params(const hwaf_alg *alg, OSSL_PARAM params[])
{
    OSSL_PARAM *p;
    unsigned int mode = alg->mode == HWAF_MODE_CBC ? EVP_CIPH_CBC_MODE
                      : alg->mode == HWAF_MODE_CTR ? EVP_CIPH_CTR_MODE
                      : alg->mode == HWAF_MODE_GCM ? EVP_CIPH_GCM_MODE
                      : EVP_CIPH_XTS_MODE;
    int aead = alg->mode == HWAF_MODE_GCM;

    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_MODE)) != NULL
        && !OSSL_PARAM_set_uint(p, mode))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_AEAD)) != NULL
        && !OSSL_PARAM_set_int(p, aead))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_CUSTOM_IV)) != NULL
        && !OSSL_PARAM_set_int(p, aead || alg->mode == HWAF_MODE_XTS))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_CTS)) != NULL
        && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK)) != NULL
        && !OSSL_PARAM_set_int(p, 0))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_HAS_RAND_KEY)) != NULL
        && !OSSL_PARAM_set_int(p, 0))
        return 0;
#ifdef OSSL_CIPHER_PARAM_ENCRYPT_THEN_MAC
    /* Since OpenSSL 3.6 every cipher of the default provider says whether
     * it is an encrypt-then-MAC composite; none of hwaf's is. */
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_ENCRYPT_THEN_MAC)) != NULL
        && !OSSL_PARAM_set_int(p, 0))
        return 0;
#endif
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, alg->keylen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_BLOCK_SIZE)) != NULL
        && !OSSL_PARAM_set_size_t(p, alg->blocklen))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != NULL
        && !OSSL_PARAM_set_size_t(p, alg->ivlen))
        return 0;
    return 1;
}

static const OSSL_PARAM cipher_known_gettable_params[] = {
    OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, NULL),
    OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, NULL),
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, NULL),
#ifdef OSSL_CIPHER_PARAM_ENCRYPT_THEN_MAC
    OSSL_PARAM_int(OSSL_CIPHER_PARAM_ENCRYPT_THEN_MAC, NULL),
#endif
    OSSL_PARAM_END
};

const OSSL_PARAM *hwaf_cipher_gettable_params(void *provctx)
{
    return cipher_known_gettable_params;
}
