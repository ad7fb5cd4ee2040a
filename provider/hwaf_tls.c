/*
 * TLS 1.0-1.2 / DTLS CBC record processing, as libssl asks of a provider's
 * CBC cipher (tls-version, tls-mac-size, tls-mac): on decryption, remove the
 * explicit IV (TLS 1.1 and later), the padding and the MAC in constant time,
 * handing out the MAC for libssl to check (a random one when the padding is
 * bad, so that the failure looks like a MAC failure: RFC 5246 6.2.3.2 and
 * the Lucky Thirteen countermeasures).  Everything that depends on secret
 * data is computed without branches or secret-dependent memory access.
 */
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/prov_ssl.h>
#include <openssl/rand.h>
#include "hwaf_tls.h"

/* All ones when a >= b (a, b < 2^63), else zero. */
static size_t ct_ge(size_t a, size_t b)
{
    return (size_t)0 - (size_t)(1 ^ ((a - b) >> (sizeof(size_t) * 8 - 1)));
}

static size_t ct_lt(size_t a, size_t b)
{
    return ~ct_ge(a, b);
}

static size_t ct_eq(size_t a, size_t b)
{
    size_t x = a ^ b;

    return (size_t)0 - (size_t)(1 ^ ((x | ((size_t)0 - x)) >> (sizeof(size_t) * 8 - 1)));
}

int hwaf_tls_explicit_iv(unsigned int version)
{
    return version == TLS1_1_VERSION || version == TLS1_2_VERSION
           || version == DTLS1_VERSION || version == DTLS1_2_VERSION
           || version == DTLS1_BAD_VER;
}

int hwaf_tls_version_ok(unsigned int version)
{
    return version == TLS1_VERSION || hwaf_tls_explicit_iv(version);
}

int hwaf_tls_unpad(OSSL_LIB_CTX *libctx, unsigned int version, unsigned char *rec,
                   size_t *len, size_t bs, size_t macsize, unsigned char **mac)
{
    unsigned char rotated[EVP_MAX_MD_SIZE], randmac[EVP_MAX_MD_SIZE], *out;
    size_t reclen = *len, orig, good, pad, to_check, i, j;
    size_t mac_end, mac_start, scan_start = 0, in_mac = 0, rotate = 0;

    *mac = NULL;
    if (hwaf_tls_explicit_iv(version)) {
        if (reclen < bs)
            return 0;
        rec += bs;
        reclen -= bs;
    }
    orig = reclen;
    /* Lengths are public: these tests may branch. */
    if (macsize > EVP_MAX_MD_SIZE || 1 + macsize > reclen)
        return 0;

    pad = rec[reclen - 1];
    good = ct_ge(reclen, 1 + macsize + pad);
    /* Check the largest padding there could be, not just pad + 1 bytes. */
    to_check = reclen < 256 ? reclen : 256;
    for (i = 0; i < to_check; i++) {
        size_t in_pad = ct_ge(pad, i);

        good &= ~(in_pad & (pad ^ rec[reclen - 1 - i]));
    }
    good = ct_eq(0xff, good & 0xff);
    reclen -= good & (pad + 1);

    if (macsize == 0) {
        *len = reclen;
        return good != 0;
    }
    mac_end = reclen;
    mac_start = mac_end - macsize;
    reclen -= macsize;

    if (RAND_bytes_ex(libctx, randmac, macsize, 0) <= 0)
        return 0;
    out = OPENSSL_malloc(macsize);
    if (out == NULL)
        return 0;

    /* Copy the MAC out of its secret position, rotated, in constant time. */
    if (orig > macsize + 256)
        scan_start = orig - (macsize + 256);
    memset(rotated, 0, macsize);
    for (i = scan_start, j = 0; i < orig; i++) {
        size_t started = ct_eq(i, mac_start), ended = ct_lt(i, mac_end);

        in_mac |= started;
        in_mac &= ended;
        rotate |= j & started;
        rotated[j++] |= (unsigned char)(rec[i] & in_mac);
        j &= ct_lt(j, macsize);
    }
    /* out[k] = rotated[(k + rotate) % macsize], touching every byte. */
    for (i = 0; i < macsize; i++) {
        size_t src = i + rotate;
        unsigned char v = 0;

        src -= macsize & ct_ge(src, macsize);
        for (j = 0; j < macsize; j++)
            v |= (unsigned char)(rotated[j] & ct_eq(j, src));
        out[i] = (unsigned char)((v & good) | (randmac[i] & ~good));
    }
    OPENSSL_cleanse(rotated, sizeof(rotated));
    *mac = out;
    *len = reclen;
    return 1;
}
