/*
 * hwaf-bench: common types.
 *
 * The benchmark measures "implementations" of one algorithm.  An
 * implementation is opened once per algorithm (key set, sockets bound,
 * sessions created) and then performs operations: one operation is one call
 * an application would make for one buffer (a cipher update over the whole
 * buffer, or a complete digest of the buffer).
 *
 * Files, top-down (none uses one above it): hwaf_bench.c (options, timing,
 * report, targets), impl_*.c (one family of implementations each),
 * bench_common.c (key and IV, implementation sets, /proc/crypto).
 */
#ifndef HWAF_BENCH_H
#define HWAF_BENCH_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <openssl/core.h>

#define BENCH_NAME_MAX 48
#define BENCH_DRIVER_MAX 128
#define BENCH_WHY_MAX 256

typedef enum { BENCH_CIPHER, BENCH_DIGEST, BENCH_AEAD, BENCH_MAC } bench_kind;
typedef enum { BENCH_CBC, BENCH_CTR, BENCH_XTS, BENCH_HASH, BENCH_GCM, BENCH_HMAC } bench_mode;

/* One algorithm the benchmark knows. */
typedef struct bench_alg_st {
    const char *name;      /* OpenSSL name: "AES-128-CBC", "SHA2-256" */
    const char *kname;     /* kernel name: "cbc(aes)", "sha256" */
    bench_kind kind;
    bench_mode mode;
    unsigned int keylen;   /* bytes (XTS: both halves) */
    unsigned int ivlen;
    unsigned int blocklen; /* cipher: data must be a multiple (CBC, XTS: >= 16) */
    unsigned int mdlen;
    int cdev_cipher;       /* cryptodev-linux algorithm id, 0 if none */
    int cdev_mac;
    int nid;               /* OpenSSL NID (for ENGINE_get_cipher) */
} bench_alg;

/* What an implementation belongs to, for the table and the plot. */
typedef enum {
    BENCH_FAM_SOFTWARE,  /* OpenSSL default provider */
    BENCH_FAM_HWAF,      /* this project */
    BENCH_FAM_PEER,      /* afalg engine, libkcapi */
    BENCH_FAM_BARE       /* reference loops on the raw kernel interfaces */
} bench_family;

typedef struct bench_ops_st {
    /* One operation over len bytes.  in and out are distinct buffers of at
     * least len bytes (out: at least mdlen for digests).  1 ok, 0 error
     * (with a message in why). */
    int (*op)(void *st, const unsigned char *in, unsigned char *out,
              size_t len, char *why, size_t whylen);
    /* Back to the state right after open (cipher: initial IV). */
    int (*reset)(void *st, char *why, size_t whylen);
    void (*close)(void *st);
} bench_ops;

/* One opened implementation of one algorithm. */
typedef struct bench_inst_st {
    char name[BENCH_NAME_MAX];      /* "default", "hwaf-afalg", "bare-afalg", ... */
    char driver[BENCH_DRIVER_MAX];  /* kernel driver, "-" for user space */
    bench_family family;
    int hw;                         /* 1 off-CPU driver, 0 CPU, -1 unknown/n.a. */
    int counter;                    /* hwaf backend counter to watch, -1 none */
    size_t maxlen;                  /* largest buffer it can take, 0 = any */
    size_t offload_min;             /* hwaf: the context's threshold (SIZE_MAX never) */
    const bench_ops *ops;
    void *st;
} bench_inst;

/* An implementation that could not be opened, kept to say why. */
typedef struct bench_absent_st {
    char name[BENCH_NAME_MAX];
    char why[BENCH_WHY_MAX];
} bench_absent;

/*
 * The list being built for one algorithm.  Openers append opened
 * instances, or an absence with the reason.
 */
#define BENCH_MAX_INST 24
typedef struct bench_set_st {
    bench_inst inst[BENCH_MAX_INST];
    int n;
    bench_absent absent[BENCH_MAX_INST];
    int nabsent;
} bench_set;

bench_inst *bench_set_add(bench_set *s, const char *name, bench_family fam);
void bench_set_absent(bench_set *s, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* bench_common.c: fixed test material, deterministic so runs are comparable. */
extern const unsigned char bench_key[64];
extern const unsigned char bench_iv[16];

/* Openers (impl_*.c). Each adds zero or more instances or absences. */
int bench_evp_init(const char *modules_dir, const char *calibration, const char *policy,
                   char *why, size_t whylen);
void bench_evp_cleanup(void);
void bench_open_default(bench_set *s, const bench_alg *a);
void bench_open_hwaf(bench_set *s, const bench_alg *a);
void bench_open_engine(bench_set *s, const bench_alg *a);
void bench_open_kcapi(bench_set *s, const bench_alg *a);
void bench_open_bare_afalg(bench_set *s, const bench_alg *a,
                           const char *bind_name, const char *suffix);
void bench_open_bare_cryptodev(bench_set *s, const bench_alg *a);

/* impl_aead.c: AES-GCM (one TLS-like sealed message per operation, output
 * ciphertext || 16-byte tag) and HMAC (name "HMAC-<digest>") through EVP. */
#define BENCH_AEAD_AAD_LEN 13          /* a TLS record header's worth */
#define BENCH_AEAD_AAD (bench_key + 32) /* ...of fixed bytes */
int bench_aead_mac_offered(const bench_alg *a, const char *propq);
/* init: NULL, or one parameter given at the first init and kept by the
 * context (hwaf-offload for hwaf's forced lines). */
bench_inst *bench_open_aead_mac(bench_set *s, const bench_alg *a, const char *name,
                                const char *propq, bench_family fam,
                                const OSSL_PARAM *init);
int bench_reference_aead_mac(const bench_alg *a, const unsigned char *in, size_t len,
                             unsigned char *out);

/* Reference results from the default provider, for checking every
 * implementation's output before it is timed. */
int bench_reference(const bench_alg *a, const unsigned char *in, size_t len,
                    unsigned char *out);

/* hwaf in its default mode: size-aware dispatch by the provider's
 * thresholds (the other hwaf-* lines are forced to the kernel). */
#define BENCH_HWAF_AUTO "hwaf-auto"

/* hwaf provider facts. */
enum { BENCH_CTR_AFALG = 0, BENCH_CTR_DEVCRYPTO = 1, BENCH_CTR_COUNT };
int bench_hwaf_loaded(void);
const char *bench_hwaf_why(void);
int bench_hwaf_counters(uint64_t ops[BENCH_CTR_COUNT],
                        uint64_t bytes[BENCH_CTR_COUNT]);
void bench_hwaf_describe(FILE *f);

/* bench_common.c, best-effort: highest-priority driver for a kernel name,
 * from /proc/crypto. */
void bench_proc_crypto_driver(const char *kname, bench_kind kind, char *out,
                              size_t outlen);

#endif
