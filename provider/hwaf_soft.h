/*
 * Size-aware dispatch: the software path and the question the mode layers
 * ask before each operation, "kernel or software for this many bytes?".
 *
 * The software path is OpenSSL's own implementation of the same algorithm:
 * the default provider, loaded once per process into a library context of
 * hwaf's own, its dispatch functions called directly (no second EVP layer).
 * It is offered to the mode layers as one more backend with the same vtable
 * (hwaf_backend_soft), so that they hand the same whole blocks and IV to
 * either path.
 */
#ifndef HWAF_SOFT_H
#define HWAF_SOFT_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include "hwaf_backend.h"

/* The software "backend": OpenSSL's default provider.  Ciphers and
 * digests (hwaf_soft.c); AES-GCM and HMAC (hwaf_soft_aead_mac.c). */
extern const hwaf_backend hwaf_backend_soft;
extern const hwaf_backend hwaf_backend_soft_aead_mac;

/*
 * A software cipher session as a running stream.  The backend's
 * cipher_crypt starts every operation afresh from the IV it is given (an
 * init call each time); a context that stays in software instead lets the
 * default provider's context keep the stream state between operations --
 * the CBC chaining value, the CTR counter, position and keystream -- so that
 * an operation costs the default provider's own work and one indirect call:
 *
 *   hwaf_soft_cipher_start(s, enc, iv)   the stream starts at iv, at a block
 *                                        boundary (CTR: num 0)
 *   hwaf_soft_cipher_run(s, enc, ...)    any number of operations, the state
 *                                        carried along in software
 *   hwaf_soft_cipher_direct(s, enc, &fn, &c) the default provider's
 *                                        function for an update of whole
 *                                        blocks (CBC: no padding held back)
 *                                        and its context of the running
 *                                        stream, for a caller that calls
 *                                        fn(c, ...) itself (an update's
 *                                        arguments; it raises the default
 *                                        provider's error on failure) and
 *                                        counts its operations
 *                                        (hwaf_stats_add_soft_n); valid
 *                                        from start to close
 *   hwaf_soft_cipher_iv(s, enc, iv, num) where it stands: the next IV (CBC)
 *                                        or counter (CTR), and with num not
 *                                        NULL the keystream bytes of the
 *                                        block before it used (CTR); the
 *                                        stream goes on
 *   hwaf_soft_cipher_keystream(s, ctr, ks) CTR: the keystream block before
 *                                        counter ctr; ends the stream
 *   hwaf_soft_cipher_rekey(s, key, keylen) a new key (keylen as at open)
 *                                        for the streams started after it;
 *                                        the default provider's contexts
 *                                        are kept and keyed again at their
 *                                        next start (no free and new)
 *
 * enc is 1 or 0 (CTR: 1): one stream per direction.  cipher_crypt on the
 * same session ends the stream of its direction.  The mode layer takes the
 * state back before an operation goes to the kernel, before a copy, at
 * init (see hwaf_cipher.c).  Each returns 1, or 0 with an error raised.
 */
#define HWAF_SOFT_BLOCK 16
int hwaf_soft_cipher_start(hwaf_be_cipher *s, int enc, const unsigned char *iv);
int hwaf_soft_cipher_run(hwaf_be_cipher *s, int enc, const unsigned char *in,
                         unsigned char *out, size_t len);
void hwaf_soft_cipher_direct(hwaf_be_cipher *s, int enc, OSSL_FUNC_cipher_update_fn **fn,
                             void **c);
int hwaf_soft_cipher_iv(hwaf_be_cipher *s, int enc, unsigned char *iv,
                        unsigned int *num);
void hwaf_soft_cipher_rekey(hwaf_be_cipher *s, const unsigned char *key, size_t keylen);
int hwaf_soft_cipher_keystream(hwaf_be_cipher *s, const unsigned char *ctr,
                               unsigned char *ks);

/*
 * A software session of another algorithm than impl's, for a mode layer
 * that needs one beside its own (GCM's AES-CTR continuation, the AES-ECB
 * of XTS's split tweaks): the default provider's alg keyed with key, its
 * implementation kept in *holder (impl's software twin, which must be set
 * up, with alg).  NULL with an error raised.  Closed, holder included, by
 * hwaf_soft_cipher_other_close(); nothing of it is shared with a parent
 * after fork().
 */
hwaf_be_cipher *hwaf_soft_cipher_other(const hwaf_impl *impl, const hwaf_alg *alg,
                                       hwaf_impl *holder, const unsigned char *key,
                                       size_t keylen);
void hwaf_soft_cipher_other_close(hwaf_be_cipher *s, hwaf_impl *holder);

/*
 * A message of the software path's AES-GCM as a running stream, for IVs the
 * kernel's gcm(aes) does not take (any length but HWAF_GCM_IV, up to the
 * default provider's 128 bytes): the default provider's context of the
 * direction keeps the GHASH and counter state between calls, on a session
 * of hwaf_backend_soft_aead_mac (impl->soft's aead_open).
 *
 *   hwaf_soft_aead_start(s, enc, iv, ivlen)   a new message under iv
 *   hwaf_soft_aead_run(s, enc, in, out, len)  AAD (out NULL), then data
 *   hwaf_soft_aead_finish(s, enc, tag, taglen) the end: encrypting, the
 *                                          16-byte tag into tag; decrypting,
 *                                          taglen bytes of tag checked: -1
 *                                          (nothing raised) when they do
 *                                          not match
 *   hwaf_soft_aead_dup(&d, s)                 a copy of the session, its
 *                                          streams where they stand
 *
 * enc is 1 or 0: one stream per direction; a whole-message aead_crypt on
 * the session starts its direction afresh.  Each returns 1, or 0 with an
 * error raised; run counts its bytes as software work.
 */
int hwaf_soft_aead_start(hwaf_be_aead *s, int enc, const unsigned char *iv, size_t ivlen);
int hwaf_soft_aead_run(hwaf_be_aead *s, int enc, const unsigned char *in,
                       unsigned char *out, size_t len);
int hwaf_soft_aead_finish(hwaf_be_aead *s, int enc, unsigned char *tag, size_t taglen);
int hwaf_soft_aead_dup(hwaf_be_aead **out, const hwaf_be_aead *s);

/*
 * A software digest for the digest layer: the default provider's own
 * context, its functions called directly.  new: a context initialised;
 * final leaves the hash finished (init starts the next); each returns
 * 1 / non-NULL, or 0 / NULL with an error raised.  soft is impl->soft.
 */
void *hwaf_soft_md_new(const hwaf_impl *soft);
int hwaf_soft_md_init(const hwaf_impl *soft, void *c);
int hwaf_soft_md_update(const hwaf_impl *soft, void *c, const unsigned char *in,
                        size_t len);
int hwaf_soft_md_final(const hwaf_impl *soft, void *c, unsigned char *md);
void *hwaf_soft_md_dup(const hwaf_impl *soft, void *c);
void hwaf_soft_md_free(const hwaf_impl *soft, void *c);
/*
 * c as new, nothing of an earlier message left in it (state and input
 * buffer overwritten but for the buffer's last byte), nothing counted;
 * only for c after a final, where that byte holds the final's length (or
 * nothing), not the message.  1, or 0 (nothing raised): free it instead.
 */
#define HWAF_SOFT_MD_BLOCK_MAX 128
int hwaf_soft_md_wipe(const hwaf_impl *soft, void *c);

/*
 * The default provider's implementation of an algorithm: its dispatch table
 * and provider context, for operation_id (OSSL_OP_CIPHER, OSSL_OP_DIGEST,
 * OSSL_OP_MAC, ...) and an OpenSSL name or alias ("AES-128-GCM").  Returns
 * 1 and fills *fns, *provctx; 0 when the default provider does not have it
 * (nothing raised: the caller knows what it was looking for).  Thread-safe;
 * the first call loads the default provider.
 */
int hwaf_soft_fetch(int operation_id, const char *name,
                    const OSSL_DISPATCH **fns, void **provctx);
/* The function of id in a dispatch table, or NULL. */
void (*hwaf_soft_fn(const OSSL_DISPATCH *fns, int function_id))(void);
/*
 * The library context of the software path (the default provider loaded
 * in it; the first call loads it), or NULL when the default provider could
 * not be loaded: where hwaf itself needs random bytes or another
 * provider's HMAC.  Never the application's: the core's library context
 * may belong to another libcrypto than hwaf's (an application on
 * libcrypto 3 loading hwaf built against OpenSSL 4.0 from the modules
 * directory both share), and is not to be used as an OSSL_LIB_CTX.
 */
OSSL_LIB_CTX *hwaf_soft_libctx(void);

/*
 * 1 when the default provider of the libcrypto hwaf runs with accepts a
 * nonzero "num" (EVP_CIPHER_CTX_set_num) on AES-CTR, 0 when it refuses it
 * (OpenSSL 3.0.22 and 3.5.9 take only 0: they bound num by the block size
 * they report, 1 for CTR; 3.0.19 took 0-15).  Asked once per process.
 */
int hwaf_soft_ctr_num_settable(void);

/* Shared by the software backends' tables (hwaf_soft.c, hwaf_soft_aead_mac.c). */
int hwaf_soft_available(char *why, size_t whylen);
int hwaf_soft_drivers(const hwaf_alg *alg, hwaf_driver *out, int max);
int hwaf_soft_md_fork_prepare(hwaf_be_md *s);
void hwaf_soft_md_fork_noop(hwaf_be_md *s);

/*
 * Per-context choice, settable with HWAF_PARAM_OFFLOAD: the implementation's
 * threshold (auto), always software, always kernel.
 */
enum { HWAF_OFFLOAD_AUTO = -1, HWAF_OFFLOAD_SOFTWARE = 0, HWAF_OFFLOAD_KERNEL = 1 };

/* 1: send an operation of n bytes to the kernel; 0: compute it in software. */
static inline int hwaf_offload(const hwaf_impl *impl, int force, size_t n)
{
    if (force != HWAF_OFFLOAD_AUTO)
        return force;
    return n >= impl->offload_min;
}

/* 1: every operation of the context goes to the kernel by choice
 * (hwaf-offload = 1, or offload_min 0 under auto). */
static inline int hwaf_offload_forced(const hwaf_impl *impl, int force)
{
    return force == HWAF_OFFLOAD_KERNEL
           || (force == HWAF_OFFLOAD_AUTO && impl->offload_min == 0);
}

/*
 * For a stream whose state cannot move from software to the kernel (a
 * digest, an HMAC): the most to hold back before the kernel takes it.
 * 0: the kernel from the start; SIZE_MAX: software for the whole message;
 * else the threshold, at most HWAF_HOLD_MAX (a threshold above it is
 * treated as that much: the most held back).
 */
#define HWAF_HOLD_MAX ((size_t)1 << 20)  /* hwaf_hash.h holds the bytes */
static inline size_t hwaf_hold_threshold(const hwaf_impl *impl, int force)
{
    if (impl->soft == NULL || force == HWAF_OFFLOAD_KERNEL)
        return 0;
    if (force == HWAF_OFFLOAD_SOFTWARE || impl->offload_min == SIZE_MAX)
        return SIZE_MAX;
    return impl->offload_min < HWAF_HOLD_MAX ? impl->offload_min : HWAF_HOLD_MAX;
}

/*
 * When a kernel object cannot be had: a context with a software twin whose
 * kernel session or hash cannot be opened because the process is out of
 * descriptors (EMFILE, ENFILE), a sandbox installed since load forbids
 * kernel calls (hwaf_sandbox.c) or the driver failed its known answer
 * (hwaf_open_verify) is served in software instead, counted
 * (HWAF_PARAM_FALLBACKS_*) and logged.  Around the backend's open:
 *
 *   hwaf_open_try t;
 *   hwaf_open_begin(impl, &t);
 *   ok = hwaf_open_verify(impl, &t) && impl->be->cipher_open(...);
 *   if (ok) hwaf_open_end(impl, &t)
 *   else if (hwaf_open_fallback(impl, &t, force)) -> use impl->soft
 *   else -> errors, if any, stay raised
 *
 * hwaf_open_fallback() returns 1 when the failure was such a shortage, the
 * implementation has a software twin and force is not HWAF_OFFLOAD_KERNEL:
 * the errors raised since hwaf_open_begin() are dropped.  Otherwise it
 * returns 0 and the errors stay.  hwaf_open_end() marks a successful open.
 */
/*
 * A context short of descriptors does not try the kernel at every
 * operation: once two opens in a row (no successful one between) failed
 * with EMFILE or ENFILE and software took over, the implementation's next
 * HWAF_FD_BACKOFF opens are skipped (the operations go to software without
 * a system call) until hwaf releases a descriptor of its own or the
 * process forks; a single passing shortage costs one operation in software.
 * Per implementation, so per provider instance.  Before hwaf_open_begin():
 *
 *   if (hwaf_open_backoff(impl, force)) -> use impl->soft, no open
 *
 * Never for a context forced to the kernel, nor without a software twin.
 */
#define HWAF_FD_BACKOFF 64
int hwaf_open_backoff(const hwaf_impl *impl, int force);

typedef struct hwaf_open_try_st {
    unsigned long shortages, refusals;  /* this thread's, at begin */
    int marked;
    int kat_failed;   /* the driver failed its known answer */
} hwaf_open_try;
void hwaf_open_begin(const hwaf_impl *impl, hwaf_open_try *t);
/*
 * Between hwaf_open_begin() and the backend's open: the driver's known
 * answer (hwaf_impl_verify; with known_answers = first_use it runs here,
 * once per process).  1: open; 0: do not, errors raised -- the driver
 * failed it ("kernel driver failed its known answer"), or it could not run
 * for a shortage or in a sandbox -- and hwaf_open_fallback() decides as
 * after a failed open.  A driver that failed it is not used for the rest
 * of the process: its contexts are served in software, counted
 * (HWAF_PARAM_FALLBACKS_KNOWN_ANSWER), unless forced to the kernel
 * (HWAF_OFFLOAD_KERNEL, or offload_min 0), where the operation fails with
 * that reason.  Costs one atomic load once the answer is known.
 */
int hwaf_open_verify(const hwaf_impl *impl, hwaf_open_try *t);
void hwaf_open_end(const hwaf_impl *impl, hwaf_open_try *t);
/* No open after all: hwaf_open_begin()'s mark dropped, errors kept. */
void hwaf_open_cancel(const hwaf_impl *impl, hwaf_open_try *t);
int hwaf_open_fallback(const hwaf_impl *impl, hwaf_open_try *t, int force);

/*
 * impl->soft: the software twin of impl (same algorithm, the soft backend),
 * or NULL when OpenSSL's default provider has no such implementation or
 * cannot be loaded -- then impl->offload_min is 0 (always the kernel).
 * Not set up at load: the load fetches nothing from the default provider.
 * hwaf_soft_ready(impl) sets it up once, at the implementation's first
 * context (hwaf_ctx_new, the HMAC's digest) or at the first question about
 * thresholds (the provider's texts), and must have run before impl->soft
 * or impl->offload_min is read.  Thread-safe (a fork-safe mutex; the first
 * caller fetches, the others wait for it), errors of the default provider's
 * load are not left on the caller's queue.  Once set up, it costs one
 * atomic load.
 */
void hwaf_soft_setup(hwaf_impl *impl);
static inline void hwaf_soft_ready(const hwaf_impl *impl)
{
    if (!__atomic_load_n(&impl->soft_ready, __ATOMIC_ACQUIRE))
        hwaf_soft_setup((hwaf_impl *)impl);
}
void hwaf_soft_impl_free(hwaf_impl *impl);

#endif
