/*
 * The hold-back buffer of a stream whose state cannot move from software to
 * the kernel (a digest, an HMAC; see hwaf_soft.h): the message so far,
 * while it has not reached its threshold.  It grows by doubling up to the
 * threshold, so a short message never pays for a buffer of the threshold's
 * size, and held bytes are wiped as soon as they leave it.
 */
#include <stdint.h>
#include <string.h>
#include <openssl/crypto.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_soft.h"

int hwaf_hold_take(hwaf_prov *prov, hwaf_hold *h, size_t t,
                   const unsigned char *in, size_t inl)
{
    if (t == 0 || t == SIZE_MAX || h->held + inl >= t)
        return t == SIZE_MAX ? HWAF_HOLD_SOFTWARE : HWAF_HOLD_KERNEL;
    if (h->held + inl > h->cap) {
        size_t cap = h->cap < 128 ? 256 : 2 * h->cap;
        unsigned char *b;

        if (cap < h->held + inl)
            cap = h->held + inl;
        if (cap > t)
            cap = t;
        if ((b = OPENSSL_malloc(cap)) == NULL) {
            HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
            return HWAF_HOLD_FAILED;
        }
        if (h->held > 0)
            memcpy(b, h->buf, h->held);
        OPENSSL_cleanse(h->buf, h->held);
        OPENSSL_free(h->buf);
        h->buf = b;
        h->cap = cap;
    }
    if (inl > 0) /* in may be NULL then */
        memcpy(h->buf + h->held, in, inl);
    h->held += inl;
    return HWAF_HOLD_KEPT;
}

void hwaf_hold_clear(hwaf_hold *h)
{
    OPENSSL_cleanse(h->buf, h->held);  /* the rest is wiped already */
    h->held = 0;
}

void hwaf_hold_free(hwaf_hold *h)
{
    hwaf_hold_clear(h);
    OPENSSL_free(h->buf);
    h->buf = NULL;
    h->cap = 0;
}

int hwaf_hold_dup(hwaf_prov *prov, hwaf_hold *dst, const hwaf_hold *src)
{
    dst->buf = NULL;
    dst->held = dst->cap = 0;
    if (src->held == 0)
        return 1;
    if ((dst->buf = OPENSSL_memdup(src->buf, src->held)) == NULL) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    dst->held = dst->cap = src->held;
    return 1;
}
