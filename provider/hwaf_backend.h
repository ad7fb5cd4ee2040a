/*
 * The backend interface: what the mode and digest layers need from a kernel
 * crypto interface (AF_ALG sockets, /dev/crypto).  Backends know nothing of
 * EVP, padding, partial blocks or IV chaining; those live above this line.
 *
 * A cipher operation is stateless from the caller's point of view: it takes
 * the IV (or tweak, or counter block) explicitly and whole blocks of data
 * (for CTR any length; for XTS one whole data unit).  The mode layer tracks
 * the next IV itself.
 */
#ifndef HWAF_BACKEND_H
#define HWAF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#define HWAF_DRIVER_NAME_MAX 128  /* CRYPTO_MAX_ALG_NAME */
#define HWAF_MAX_KEY 64
#define HWAF_MAX_IV 16
#define HWAF_MAX_MD 64
#define HWAF_MAX_MD_BLOCK 128

typedef enum { HWAF_KIND_CIPHER, HWAF_KIND_DIGEST, HWAF_KIND_AEAD, HWAF_KIND_MAC } hwaf_kind;
typedef enum { HWAF_MODE_NONE, HWAF_MODE_CBC, HWAF_MODE_CTR, HWAF_MODE_XTS,
               HWAF_MODE_GCM } hwaf_mode;

#define HWAF_GCM_IV 12    /* the only IV length the kernel's gcm(aes) takes */
#define HWAF_GCM_TAG 16   /* tag length every AEAD session is opened with */

/* One algorithm variant hwaf knows (static table in hwaf_algs.c). */
typedef struct hwaf_alg_st {
    const char *names;    /* OpenSSL names and aliases, "AES-128-CBC:AES128:..." */
    const char *kname;    /* kernel algorithm name: "cbc(aes)", "sha256", ... */
    hwaf_kind kind;
    hwaf_mode mode;
    unsigned int keylen;  /* cipher key bytes (XTS: both halves; HMAC: the
                           * known answer's key) */
    unsigned int ivlen;   /* cipher IV bytes */
    unsigned int blocklen;/* cipher block / digest input block bytes */
    unsigned int mdlen;   /* digest output bytes */
    /* Known answer used to check every driver before it is offered. */
    const unsigned char *kat_key, *kat_iv, *kat_in, *kat_out;
    unsigned int kat_inlen;
} hwaf_alg;

/* XTS: t = t * x^n in GF(2^128), IEEE 1619's byte order (t[0] the lowest
 * byte): the tweak n blocks on (hwaf_algs.c). */
void hwaf_xts_mul(unsigned char t[16], size_t n);

/* A kernel driver one backend can reach for one algorithm. */
typedef struct hwaf_driver_st {
    char name[HWAF_DRIVER_NAME_MAX]; /* driver name, e.g. "cbc-aes-aesni" */
    int priority;                    /* kernel priority, -1 when unknown */
    int hw;                          /* backend's own verdict: 1 off-CPU, 0 CPU, -1 unknown */
    size_t req_max;                  /* largest single request the driver is known
                                      * to take, 0 when unbounded (CPU drivers) */
} hwaf_driver;

/*
 * What a hardware (or unknown) driver is trusted with in one request.
 * Engines have descriptor rings and DMA segment limits: virtio-crypto's
 * cbc(aes) stops the device (the caller sleeps uninterruptibly) at 128 KiB
 * and works at 96 KiB.
 */
#define HWAF_REQ_MAX_ASYNC ((size_t)64 * 1024)

/* An implementation: one algorithm served by one driver through one backend. */
typedef struct hwaf_impl_st {
    struct hwaf_prov_st *prov;  /* provider context: errors are raised through it */
    const hwaf_alg *alg;
    const struct hwaf_backend_st *be;
    hwaf_driver drv;
    int hw;               /* final classification, after config overrides */
    int be_index;         /* index of the backend in the counters array */
    int zerocopy;         /* page-aligned input without copying: -1 when the
                           * backend measures whether it pays, 0 never, 1 always */
    size_t zerocopy_min;  /* ...for operations of at least this many bytes */
    void *be_data;        /* the backend's own, per implementation */
    int kat;              /* the driver's known answer, HWAF_KAT_*: read and
                           * written atomically (hwaf_impl_verify) */
    /* Size-aware dispatch (hwaf_soft.h): operations of at least offload_min
     * bytes go to the kernel, smaller ones to soft, the same algorithm in
     * OpenSSL's default provider.  SIZE_MAX: never offload; 0: always. */
    size_t offload_min;
    int offload_src;      /* where offload_min came from: HWAF_SRC_* */
    int req_src;          /* where drv.req_max came from: HWAF_SRC_DEFAULT
                           * (the backend's) or HWAF_SRC_CONFIGURED */
    struct hwaf_impl_st *soft; /* software twin, NULL when there is none;
                                * set up at the implementation's first
                                * context, not at load (hwaf_soft_ready) */
    int soft_ready;       /* soft is set up: read and written atomically */
    /* Back-off after opens failed for want of descriptors (hwaf_soft.c):
     * failures in a row, opens left to skip, and the process's descriptor
     * releases and fork generation at the failure; read and written
     * atomically. */
    struct {
        int fails;
        int skip;
        unsigned long releases;
        unsigned int gen;
    } fd_backoff;
} hwaf_impl;

/* A driver's known answer: not run yet, passed, failed. */
enum { HWAF_KAT_UNKNOWN = 0, HWAF_KAT_PASSED = 1, HWAF_KAT_FAILED = -1 };

/* Where a threshold came from (shown by hwaf-info and in buildinfo). */
enum { HWAF_SRC_DEFAULT, HWAF_SRC_CONFIGURED, HWAF_SRC_CACHED };

typedef struct hwaf_be_cipher_st hwaf_be_cipher; /* opaque, backend-owned */
typedef struct hwaf_be_md_st hwaf_be_md;         /* opaque, backend-owned */
typedef struct hwaf_be_aead_st hwaf_be_aead;     /* opaque, backend-owned */

/*
 * All functions return 1 on success and 0 on failure.  On failure they have
 * raised an error with HWAF_RAISE()/HWAF_RAISE_SYS() on impl->prov (see
 * hwaf_err.h), errno attached for system calls, and left their object in a
 * state that can still be closed.  available() and drivers() run once per
 * process, before any provider context exists: they raise nothing.
 */
typedef struct hwaf_backend_st {
    const char *name;   /* property value of hwaf.backend */

    /* Once per process: can this backend be used at all?  If not, 0 and a
     * sentence in why[]. */
    int (*available)(char *why, size_t whylen);

    /* Once per process and algorithm: the drivers this backend can reach
     * (each one verified to bind).  Returns how many were written to out[],
     * 0 when none. */
    int (*drivers)(const hwaf_alg *alg, hwaf_driver *out, int max);

    /* Cipher: a session bound to impl->drv.name with a key. */
    int (*cipher_open)(hwaf_be_cipher **s, const hwaf_impl *impl,
                       const unsigned char *key, size_t keylen);
    /* One operation.  len > 0; for CBC a multiple of the block size, for
     * XTS one whole data unit (>= 16).  in == out is allowed. */
    int (*cipher_crypt)(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                        const unsigned char *in, unsigned char *out, size_t len);
    /* Largest len one cipher_crypt() takes; the mode layer splits CBC and
     * CTR work to fit, and XTS data units above it into pieces with their
     * own IVs (xts_split in hwaf_cipher.c).  May change between calls. */
    size_t (*cipher_max)(hwaf_be_cipher *s);
    /* Release everything, kernel objects included.  NULL is a no-op. */
    void (*cipher_close)(hwaf_be_cipher *s);
    /* In a child after fork(): release only this process's handles, leaving
     * kernel objects the parent still uses untouched.  NULL is a no-op. */
    void (*cipher_abandon)(hwaf_be_cipher *s);

    /* Digest: a running hash bound to impl->drv.name. */
    int (*md_open)(hwaf_be_md **s, const hwaf_impl *impl);
    int (*md_update)(hwaf_be_md *s, const unsigned char *in, size_t len);
    /* Write the digest and return the object to its initial state. */
    int (*md_final)(hwaf_be_md *s, unsigned char *md);
    /* Back to the initial state, discarding any data. */
    int (*md_reset)(hwaf_be_md *s);
    /* A new object with a copy of the running state. */
    int (*md_dup)(hwaf_be_md **out, hwaf_be_md *s);
    void (*md_close)(hwaf_be_md *s);
    /*
     * fork() support for running hashes, whose state lives in the kernel:
     * prepare runs in the parent just before fork() and snapshots the state;
     * after fork() the parent calls fork_parent (drop the snapshot) and the
     * child calls fork_child (drop the shared state, adopt the snapshot).
     */
    int (*md_fork_prepare)(hwaf_be_md *s);
    void (*md_fork_parent)(hwaf_be_md *s);
    void (*md_fork_child)(hwaf_be_md *s);

    /* Optional (NULL): set up and release impl->be_data, once per
     * implementation when the provider loads and unloads. */
    int (*impl_init)(hwaf_impl *impl);
    void (*impl_free)(hwaf_impl *impl);

    /*
     * AEAD (optional: NULL when the backend has none): a session bound to
     * impl->drv.name with a key and a HWAF_GCM_TAG-byte tag.
     */
    int (*aead_open)(hwaf_be_aead **s, const hwaf_impl *impl,
                     const unsigned char *key, size_t keylen);
    /*
     * One whole AEAD operation with a HWAF_GCM_IV-byte IV.  Encrypt: out =
     * ciphertext of in, tag[] written.  Decrypt: tag[] read, out = plaintext
     * when it matches; when it does not, returns -1 with nothing raised and
     * out[] undefined.  len or aadlen may be 0; in == out is allowed.
     * owned = 1: out[] and, when encrypting, tag[] lie in pages of the
     * caller's own that no other thread writes during the call and that
     * fork() copies into a child (not MADV_WIPEONFORK), so the kernel may
     * write the result there directly even where fork() could otherwise
     * split it between parent and child (afalg_sys.c, kernels before 6.5).
     */
    int (*aead_crypt)(hwaf_be_aead *s, int enc, const unsigned char *iv,
                      const unsigned char *aad, size_t aadlen,
                      const unsigned char *in, unsigned char *out, size_t len,
                      unsigned char *tag, int owned);
    /* Largest aadlen + len one aead_crypt() takes when aadlen bytes of it
     * are AAD; less than aadlen when no request takes that much AAD.
     * sizing = 1 once per request, when its path is chosen by this answer
     * (a backend that learns its limit counts requests by it); 0 for a
     * check, which counts nothing. */
    size_t (*aead_max)(hwaf_be_aead *s, size_t aadlen, int sizing);
    void (*aead_close)(hwaf_be_aead *s);
    void (*aead_abandon)(hwaf_be_aead *s);

    /*
     * Keyed hash (optional): like md_open, with a key of any length (the
     * kernel's hmac() hashes long keys itself).  md_update, md_final (back
     * to the keyed initial state), md_reset, md_dup, md_close and the fork
     * calls then work on it as on a hash.
     */
    int (*mac_open)(hwaf_be_md **s, const hwaf_impl *impl,
                    const unsigned char *key, size_t keylen);

    /* Optional: the probe of this backend is over (the last drivers() call
     * of it has returned); drop what available() and drivers() kept. */
    void (*probe_done)(void);

    /* Optional: the device node the backend works through; its identity
     * (device number, inode, creation) is part of the probe cache's key
     * (hwaf_probe_cache.c), so that a module reloaded is probed again. */
    const char *device;
} hwaf_backend;

/* Bumped in every child after fork() (hwaf_fork.c). */
extern volatile unsigned int hwaf_fork_generation;

/*
 * A mutex that is safe across fork() (hwaf_fork.c): every one is taken in
 * the parent just before fork() and released after it, and the child gets
 * it fresh, so no child inherits a mutex held by a thread it does not have.
 * Never call into fork() support (register or unregister a fork node, init
 * or destroy another hwaf_mutex) while holding one.  A static one starts as
 * HWAF_MUTEX_INIT and registers itself at its first lock.
 */
#include <pthread.h>
typedef struct hwaf_mutex_st {
    pthread_mutex_t m;
    struct hwaf_mutex_st *prev, *next;  /* NULL until registered */
} hwaf_mutex;
#define HWAF_MUTEX_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, NULL }
void hwaf_mutex_init(hwaf_mutex *m);
void hwaf_mutex_destroy(hwaf_mutex *m);
void hwaf_mutex_lock(hwaf_mutex *m);
void hwaf_mutex_unlock(hwaf_mutex *m);

extern const hwaf_backend hwaf_backend_afalg;
extern const hwaf_backend hwaf_backend_devcrypto;

/*
 * A backend's guess when the kernel does not flag a driver as hardware
 * (hwaf_classify.c): 0 for drivers named after CPU instructions or generic
 * C code ("aesni", "avx2", "-ce", "-generic", ...), 1 for other asynchronous
 * drivers, 0 otherwise.  async: 1, 0 or -1 when unknown.
 */
int hwaf_guess_hw(const char *driver, int async);

/* Counters (hwaf_stats.c): one slot per backend, and the same work by
 * kind of algorithm (hwaf_kind: cipher, digest, AEAD, MAC), whatever the
 * backend.  A GCM message's counter-mode continuation is cipher work. */
enum { HWAF_BE_AFALG = 0, HWAF_BE_DEVCRYPTO = 1, HWAF_BE_COUNT };
#define HWAF_KIND_COUNT (HWAF_KIND_MAC + 1)
void hwaf_stats_add(int be_index, hwaf_kind kind, size_t bytes);
/* ops operations of bytes in all, counted by a backend object and added
 * up later (one update of the counters for several requests). */
void hwaf_stats_add_n(int be_index, hwaf_kind kind, uint64_t ops, uint64_t bytes);
void hwaf_stats_get(int be_index, uint64_t *ops, uint64_t *bytes);
void hwaf_stats_get_kind(hwaf_kind kind, uint64_t *ops, uint64_t *bytes);
/* 1: this thread's kernel work from now on is not counted (a known
 * answer, hwaf's own check of a driver); 0: counted again. */
void hwaf_stats_quiet(int on);
/* Bytes that reached the kernel without a copy (AF_ALG splice path). */
void hwaf_stats_add_spliced(size_t bytes);
/* Work computed in software by size-aware dispatch (hwaf_soft.c); _n: ops
 * operations of bytes in all, counted by a context and added up later. */
void hwaf_stats_add_soft(size_t bytes);
void hwaf_stats_add_soft_n(uint64_t ops, uint64_t bytes);
void hwaf_stats_get_soft(uint64_t *ops, uint64_t *bytes);
/* Kernel objects that could not be had, whose work software took over
 * (hwaf_open_fallback in hwaf_soft.h), by reason: out of descriptors, a
 * sandbox, the driver failed its known answer. */
enum { HWAF_FALLBACK_DESCRIPTORS, HWAF_FALLBACK_SANDBOX, HWAF_FALLBACK_KNOWN_ANSWER,
       HWAF_FALLBACK_COUNT };
void hwaf_stats_add_fallback(int reason);
uint64_t hwaf_stats_fallbacks(int reason);
uint64_t hwaf_stats_spliced(void);
/* Sandboxes (hwaf_sandbox.c): before a backend creates a kernel object,
 * hwaf_sandbox_allows() says whether a seccomp filter installed since the
 * provider loaded could kill the process for it; 0 raises HWAF_R_SANDBOXED
 * on prov and counts a refusal. */
struct hwaf_prov_st;
void hwaf_sandbox_init(void);
void hwaf_sandbox_forked(void); /* in a child, from hwaf_fork.c */
int hwaf_sandbox_allows(const struct hwaf_prov_st *prov);
/* The same question without raising or counting: 1 when barred. */
int hwaf_sandbox_barred(void);
uint64_t hwaf_sandbox_refusals(void);
unsigned long hwaf_sandbox_refusals_here(void); /* by the calling thread */
/* The per-process record under $HWAF_STATS (hwaf_stats.c): read the
 * environment once, bring the record up to date, restart it in a child. */
void hwaf_stats_init(void);
void hwaf_stats_flush(void);
void hwaf_stats_forked(void);

#endif
