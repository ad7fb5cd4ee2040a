/*
 * System-call helpers for /dev/crypto (cryptodev-linux): the bottom layer
 * of the devcrypto backend.  Functions return -errno on failure (errno
 * saved at once) and never raise OpenSSL errors.
 */
#ifndef HWAF_DEVCRYPTO_SYS_H
#define HWAF_DEVCRYPTO_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "cryptodev_abi.h"

#define DC_DEVICE "/dev/crypto"

/* open(/dev/crypto): a descriptor of its own (the probe's), or -errno. */
int dc_open(void);
/* ioctl(), retried on EINTR: 0 or -errno. */
int dc_ioctl(int fd, unsigned long req, void *arg);
/* A session of a cipher (key = the cipher key) or of a hash (mac; key =
 * the HMAC key of an HMAC, NULL for a plain hash). */
int dc_session(int fd, uint32_t cipher, uint32_t mac,
               const unsigned char *key, size_t keylen, uint32_t *ses);
int dc_session_info(int fd, uint32_t ses, struct session_info_op *info);
void dc_free_session(int fd, uint32_t ses);
int dc_crypt(int fd, uint32_t ses, int op, int flags, const unsigned char *iv,
             const unsigned char *src, unsigned char *dst, size_t len,
             unsigned char *mac);
/*
 * CIOCAUTHCRYPT in plain AEAD mode, in place in buf: encrypting, len bytes
 * of plaintext become ciphertext followed by the taglen-byte tag (buf has
 * room for len + taglen); decrypting, len counts the ciphertext and the tag
 * after it, and a wrong tag gives -EBADMSG.
 */
int dc_auth_crypt(int fd, uint32_t ses, int op, const unsigned char *iv,
                  const unsigned char *aad, size_t aadlen,
                  unsigned char *buf, size_t len, size_t taglen);

/*
 * The process's one open file of /dev/crypto.  cryptodev-linux keeps any
 * number of sessions in one open file, so every object of a process puts
 * its sessions in the same one: a process needs one descriptor, not one
 * per context.  dc_file_get() returns it (opened on first use) and counts a
 * reference, with the fork generation it belongs to in *gen;
 * dc_file_put() drops that reference and closes the file with the last.
 *
 * After fork() the child shares its parent's open file: the child's new
 * objects get a file of their own (so its sessions never land in, and
 * never outlive it in, the parent's), while objects from before fork()
 * keep the inherited descriptor for sessions they already have there
 * (a hash's fork snapshot must stay beside the session it was copied
 * from).  The inherited descriptor is never closed by the child: a
 * reference of an older generation is dropped without effect.
 */
int dc_file_get(unsigned int *gen);
void dc_file_put(int fd, unsigned int gen);

#endif
