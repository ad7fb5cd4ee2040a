/*
 * Provider-wide declarations shared by the upper layers (provider entry,
 * algorithm table, mode and digest layers).  Backends see only
 * hwaf_backend.h, hwaf_err.h and hwaf_debug.h.
 */
#ifndef HWAF_LOCAL_H
#define HWAF_LOCAL_H

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <stdint.h>
#include "hwaf_backend.h"

/*
 * The algorithm variants, one line each:
 *   X(id, OpenSSL names, kernel name, kind, mode, key bytes, IV bytes,
 *     block bytes, digest bytes)
 * Names and aliases are spelled as OpenSSL's default provider spells them.
 * GCM: digest bytes = tag bytes.  HMAC: one EVP_MAC "HMAC" whose digest is
 * chosen by parameter; each line is the HMAC of the digest with the same
 * place among the digests (HWAF_ALG_HMAC_x - HWAF_ALG_HMAC_SHA1 ==
 * HWAF_ALG_x - HWAF_ALG_SHA1), key bytes = the known answer's key length.
 */
#define HWAF_ALGORITHMS(X)                                                                 \
    X(AES_128_CBC, "AES-128-CBC:AES128:2.16.840.1.101.3.4.1.2", "cbc(aes)", CIPHER, CBC, 16, 16, 16, 0) \
    X(AES_192_CBC, "AES-192-CBC:AES192:2.16.840.1.101.3.4.1.22", "cbc(aes)", CIPHER, CBC, 24, 16, 16, 0) \
    X(AES_256_CBC, "AES-256-CBC:AES256:2.16.840.1.101.3.4.1.42", "cbc(aes)", CIPHER, CBC, 32, 16, 16, 0) \
    X(AES_128_CTR, "AES-128-CTR", "ctr(aes)", CIPHER, CTR, 16, 16, 1, 0)                   \
    X(AES_192_CTR, "AES-192-CTR", "ctr(aes)", CIPHER, CTR, 24, 16, 1, 0)                   \
    X(AES_256_CTR, "AES-256-CTR", "ctr(aes)", CIPHER, CTR, 32, 16, 1, 0)                   \
    X(AES_128_XTS, "AES-128-XTS:1.3.111.2.1619.0.1.1", "xts(aes)", CIPHER, XTS, 32, 16, 1, 0) \
    X(AES_256_XTS, "AES-256-XTS:1.3.111.2.1619.0.1.2", "xts(aes)", CIPHER, XTS, 64, 16, 1, 0) \
    X(SHA1, "SHA1:SHA-1:SSL3-SHA1:1.3.14.3.2.26", "sha1", DIGEST, NONE, 0, 0, 64, 20)      \
    X(SHA2_224, "SHA2-224:SHA-224:SHA224:2.16.840.1.101.3.4.2.4", "sha224", DIGEST, NONE, 0, 0, 64, 28) \
    X(SHA2_256, "SHA2-256:SHA-256:SHA256:2.16.840.1.101.3.4.2.1", "sha256", DIGEST, NONE, 0, 0, 64, 32) \
    X(SHA2_384, "SHA2-384:SHA-384:SHA384:2.16.840.1.101.3.4.2.2", "sha384", DIGEST, NONE, 0, 0, 128, 48) \
    X(SHA2_512, "SHA2-512:SHA-512:SHA512:2.16.840.1.101.3.4.2.3", "sha512", DIGEST, NONE, 0, 0, 128, 64) \
    X(AES_128_GCM, "AES-128-GCM:id-aes128-GCM:2.16.840.1.101.3.4.1.6", "gcm(aes)", AEAD, GCM, 16, 12, 1, 16) \
    X(AES_192_GCM, "AES-192-GCM:id-aes192-GCM:2.16.840.1.101.3.4.1.26", "gcm(aes)", AEAD, GCM, 24, 12, 1, 16) \
    X(AES_256_GCM, "AES-256-GCM:id-aes256-GCM:2.16.840.1.101.3.4.1.46", "gcm(aes)", AEAD, GCM, 32, 12, 1, 16) \
    X(HMAC_SHA1, "HMAC", "hmac(sha1)", MAC, NONE, 32, 0, 64, 20)                         \
    X(HMAC_SHA2_224, "HMAC", "hmac(sha224)", MAC, NONE, 32, 0, 64, 28)                   \
    X(HMAC_SHA2_256, "HMAC", "hmac(sha256)", MAC, NONE, 32, 0, 64, 32)                   \
    X(HMAC_SHA2_384, "HMAC", "hmac(sha384)", MAC, NONE, 32, 0, 128, 48)                  \
    X(HMAC_SHA2_512, "HMAC", "hmac(sha512)", MAC, NONE, 32, 0, 128, 64)

#define HWAF_ALG_ENUM(id, names, kname, kind, mode, kl, ivl, bl, mdl) HWAF_ALG_##id,
enum { HWAF_ALGORITHMS(HWAF_ALG_ENUM) HWAF_NALGS };

/* Algorithm table (hwaf_algs.c), indexed by HWAF_ALG_*. */
extern const hwaf_alg hwaf_algs[HWAF_NALGS];

/*
 * Implementation slots.  OpenSSL hands newctx only the provider context, so
 * each (algorithm, slot) pair has its own small dispatch table whose newctx
 * knows both; the provider fills prov->slot[alg][slot] at load.
 */
#define HWAF_SLOT(be_index, hw) ((be_index) * 2 + ((hw) ? 0 : 1))
#define HWAF_NSLOTS (HWAF_BE_COUNT * 2)
const OSSL_DISPATCH *hwaf_cipher_dispatch(int alg, int slot);
const OSSL_DISPATCH *hwaf_digest_dispatch(int alg, int slot);
/* Free a context kept in prov->md_spare (at teardown). */
void hwaf_digest_spare_free(void *ctx);
const OSSL_DISPATCH *hwaf_aead_dispatch(int alg, int slot);
/* The one "HMAC" of a slot; the digest picks the algorithm at run time. */
const OSSL_DISPATCH *hwaf_mac_dispatch(int slot);

/* Provider configuration (hwaf_config.c), read once per provider load. */
typedef struct hwaf_config_st {
    int use_backend[HWAF_BE_COUNT];  /* "backends" */
    int prefer;                      /* "prefer": -1 auto, else HWAF_BE_* */
    int allow_software;              /* "allow_software" */
    char *hw_drivers;                /* "hw_drivers": normalised " a b c " */
    char *sw_drivers;                /* "sw_drivers" */
    int debug;                       /* "debug" */
    int zerocopy;                    /* "zerocopy": -1 auto, 0 no, 1 yes */
    size_t zerocopy_min;             /* "zerocopy_min" (bytes) */
    char *text;                      /* every key = value in effect (HWAF_PARAM_CONFIG),
                                      * built at its first request
                                      * (hwaf_prov.c: set_text_once) */
    int policy;                      /* "policy": HWAF_POLICY_* */
    int offload_auto;                /* "offload_min" = auto */
    size_t offload_min;              /* "offload_min" in bytes, SIZE_MAX never */
    char *calibration;               /* "calibration": file, or NULL */
    struct hwaf_calib_st *calib;     /* its contents, NULL when none */
    char *request_max;               /* "request_max": normalised, NULL for auto */
    int known_answers;               /* "known_answers": HWAF_KAT_AT_* */
} hwaf_config;

/* When a driver's known answer runs: at its first use (the default), or
 * for every driver at load, only those that pass offered. */
enum { HWAF_KAT_AT_FIRST_USE = 0, HWAF_KAT_AT_LOAD = 1 };

/*
 * The known answer of impl's driver, run once per process at the first
 * call, under the probe's lock (the probe's own, hwaf_prov.c, reached
 * through impl->prov->verify): HWAF_KAT_PASSED or HWAF_KAT_FAILED (kept for
 * the process; errors of the run raised on impl->prov), or
 * HWAF_KAT_UNKNOWN when it could not run for a passing shortage or in a
 * sandbox (its errors raised; it runs again next time).  Once the answer
 * is known, one atomic load (hwaf_impl.c).
 */
typedef int hwaf_verify_fn(const hwaf_impl *impl);
int hwaf_impl_verify(const hwaf_impl *impl);

/*
 * Offload thresholds (hwaf_calib.c).  A calibration file holds, per
 * implementation, the smallest operation worth sending to the kernel under
 * each policy, and per driver whether zero-copy pays; hwaf-info
 * --calibrate measures and writes it.
 */
enum { HWAF_POLICY_THROUGHPUT = 0, HWAF_POLICY_CPU = 1 };
typedef struct hwaf_calib_st hwaf_calib;
/* Read path; 1 and *out (NULL when the file does not exist), or 0 and a
 * sentence naming the line in err. */
int hwaf_calib_load(const char *path, hwaf_calib **out, char *err, size_t errlen);
void hwaf_calib_free(hwaf_calib *c);
/* Set impl->offload_min and offload_src from the configuration, and with
 * zerocopy = auto impl->zerocopy from the calibration's verdict, if any.
 * At load, before the software path is set up: as for an implementation
 * that has one (hwaf_soft_ready makes it 0, always the kernel, for one that
 * turns out to have none). */
void hwaf_threshold_assign(hwaf_impl *impl, const hwaf_config *cfg);
/* "never", or the number of bytes, into buf. */
const char *hwaf_threshold_text(size_t v, char *buf, size_t len);
extern const char *const hwaf_src_names[];
/*
 * The probe's result cached in the calibration file:
 *   probe <backend> <key>
 *   driver <backend> <kernel name>/<key bytes> <driver> <priority> <hw> <request max>
 * the drivers of one algorithm in the probe's order (highest priority
 * first).  The key (hwaf_probe_cache.c) covers what the result depends on.
 */
#define HWAF_PROBE_KEY_LEN 17   /* 16 hex digits and the NUL */
/* The hash of /proc/crypto without refcnt lines: 1, or 0 when unreadable. */
int hwaf_probe_registry(uint64_t *out);
/* The key of backend be's probe result, given the registry's hash. */
void hwaf_probe_key(const hwaf_backend *be, uint64_t registry, char *key, size_t keylen);
/* The key the file keeps for backend be's probe, or NULL when none. */
const char *hwaf_calib_probe_key(const hwaf_calib *c, const char *be);
/* The drivers the file lists for alg through backend be, into out[max]: how many. */
int hwaf_calib_probe_drivers(const hwaf_calib *c, const char *be, const hwaf_alg *alg,
                             hwaf_driver *out, int max);
/* The token that names alg in a driver line ("cbc(aes)/16"). */
void hwaf_probe_alg_token(const hwaf_alg *alg, char *buf, size_t len);

/* The documented defaults used without a calibration (docs/config.md): for
 * an engine, the sizes from which every calibration of the test rig's
 * virtio-crypto engine that found a crossover had the kernel winning. */
#define HWAF_DEFAULT_OFFLOAD_HW_THROUGHPUT 65536
#define HWAF_DEFAULT_OFFLOAD_HW_CPU 16384
/* The largest threshold in bytes, for offload_min and the calibration
 * file's lines alike (1 GiB). */
#define HWAF_OFFLOAD_MIN_MAX (1ull << 30)

int hwaf_config_load(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                     struct hwaf_prov_st *prov, hwaf_config *cfg);
void hwaf_config_free(hwaf_config *cfg);
/* "key = value; ..." for every key, the values in effect (OPENSSL_malloc'ed). */
char *hwaf_config_text(const hwaf_config *cfg);
/* The largest request for a driver (0: unbounded): request_max's value for
 * it, else the backend's own limit (drv->req_max); *src HWAF_SRC_CONFIGURED
 * or HWAF_SRC_DEFAULT. */
size_t hwaf_request_max(const hwaf_config *cfg, const hwaf_driver *drv, int *src);
/* 1 when name is in the space-separated list (as normalised by the loader). */
int hwaf_config_list_has(const char *list, const char *name);

/* One provider load (one library context). */
typedef struct hwaf_prov_st {
    const OSSL_CORE_HANDLE *handle;
    hwaf_config cfg;
    /* Implementations offered. */
    hwaf_impl *slot[HWAF_NALGS][HWAF_NSLOTS];
    /* A freed digest context kept for the next newctx (hwaf_digest.c). */
    void *md_spare[HWAF_NALGS][HWAF_NSLOTS];
    OSSL_ALGORITHM *ciphers;  /* NULL-terminated, built once at load */
    OSSL_ALGORITHM *digests;
    OSSL_ALGORITHM *macs;
    char *algorithms_text;    /* HWAF_PARAM_ALGORITHMS */
    char *thresholds_text;    /* HWAF_PARAM_THRESHOLDS */
    char *request_max_text;   /* HWAF_PARAM_REQUEST_MAX */
    char *probe_text;         /* HWAF_PARAM_PROBE, built when first asked */
    hwaf_verify_fn *verify;   /* a driver's known answer (hwaf_impl_verify) */
    char *buildinfo;          /* provider "buildinfo" param, with backend status */
    char be_status[HWAF_BE_COUNT][256];
    int soft_ready;           /* implementations whose software path is set up
                               * (hwaf_soft_ready; HWAF_PARAM_SOFTWARE_READY) */
} hwaf_prov;


/*
 * Parameters every context answers (hwaf_impl.c): hwaf-driver,
 * hwaf-backend and hwaf-hw of its implementation.  A value that does not
 * fit the caller's parameter raises "failed to set parameter", as OpenSSL's
 * own implementations do.
 */
int hwaf_param_failed(const hwaf_prov *prov, const char *name);
/*
 * A new, zeroed algorithm context of size bytes for prov->slot[alg][slot],
 * whose first member is the `const hwaf_impl *` it serves (set here).
 */
void *hwaf_ctx_new(void *provctx, int alg, int slot, size_t size);
int hwaf_impl_get_params(const hwaf_impl *impl, OSSL_PARAM params[]);
/* HWAF_PARAM_OFFLOAD's value into *offload, range-checked (error raised). */
int hwaf_offload_param(const hwaf_prov *prov, const OSSL_PARAM *p, int *offload);
/*
 * What a cipher context, plain or AEAD, answers and takes alike (hwaf_impl.c):
 * get keylen, ivlen and hwaf-offload, then hwaf_impl_get_params(); set:
 * keylen refused unless it is the cipher's, hwaf-offload into *offload.
 * hwaf_set_octets() fills an octet string or octet pointer parameter.
 */
int hwaf_cipher_ctx_get_common(const hwaf_impl *impl, OSSL_PARAM params[], size_t keylen,
                               size_t ivlen, int offload);
int hwaf_cipher_ctx_set_common(const hwaf_impl *impl, const OSSL_PARAM params[],
                               int *offload);
int hwaf_set_octets(OSSL_PARAM *p, const void *v, size_t len);
/* The algorithm parameters of a cipher, plain or AEAD (mode, aead,
 * custom-iv, keylen, ivlen, blocksize, ...), and their gettable list. */
int hwaf_cipher_alg_params(const hwaf_alg *alg, OSSL_PARAM params[]);
OSSL_FUNC_cipher_gettable_params_fn hwaf_cipher_gettable_params;
#define HWAF_IMPL_GETTABLE_PARAMS                           \
    OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, NULL, 0),     \
    OSSL_PARAM_utf8_string(HWAF_PARAM_BACKEND, NULL, 0),    \
    OSSL_PARAM_int(HWAF_PARAM_HW, NULL),                   \
    OSSL_PARAM_size_t(HWAF_PARAM_OFFLOAD_MIN, NULL)

/* Hardware classification (hwaf_classify.c). */
int hwaf_classify(const hwaf_driver *drv, const hwaf_config *cfg);

/* fork() support (hwaf_fork.c). */
int hwaf_fork_init(void);
typedef struct hwaf_fork_node_st {
    struct hwaf_fork_node_st *prev, *next;
    void (*prepare)(struct hwaf_fork_node_st *);
    void (*parent)(struct hwaf_fork_node_st *);
    void (*child)(struct hwaf_fork_node_st *);
} hwaf_fork_node;
void hwaf_fork_register(hwaf_fork_node *n);
void hwaf_fork_unregister(hwaf_fork_node *n);

/* The provider entry point of the core library (hwaf_prov.c). */
OSSL_provider_init_fn hwaf_provider_init;

#endif
