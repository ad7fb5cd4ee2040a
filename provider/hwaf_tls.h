/* TLS CBC record processing for the mode layer (hwaf_tls.c). */
#ifndef HWAF_TLS_H
#define HWAF_TLS_H

#include <stddef.h>
#include <openssl/types.h>

/* A version libssl may set with tls-version that hwaf handles. */
int hwaf_tls_version_ok(unsigned int version);
/* TLS 1.1 and later (and DTLS) records start with an explicit IV block. */
int hwaf_tls_explicit_iv(unsigned int version);

/*
 * A decrypted record rec[0..*len): drop the explicit IV, then padding and
 * MAC in constant time.  On success *len is the payload length (the payload
 * starts bs bytes in when there is an explicit IV) and *mac a newly
 * allocated copy of the MAC (random when the padding was bad; NULL when
 * macsize is 0).  0 only when the record is publicly malformed (too short).
 */
int hwaf_tls_unpad(OSSL_LIB_CTX *libctx, unsigned int version, unsigned char *rec,
                   size_t *len, size_t bs, size_t macsize, unsigned char **mac);

#endif
