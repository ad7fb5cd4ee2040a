/*
 * The software path of size-aware dispatch: OpenSSL's default provider,
 * loaded once per process into a library context of its own (so that it
 * can never resolve back to hwaf), reached through its dispatch functions.
 * Loaded and looked up at first need (an implementation's first context,
 * hwaf_soft_ready), never at hwaf's load.
 * A cipher stream that stays in software keeps its state in the default
 * provider's context (hwaf_soft_cipher_start/run): an operation costs the
 * default provider's own work and one indirect call; no EVP layer, no
 * allocation.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include "hwaf_local.h"
#include "hwaf_soft.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"

/* ---- the default provider, once per process ---- */

static OSSL_LIB_CTX *soft_libctx;
static OSSL_PROVIDER *soft_prov;
static pthread_once_t soft_once = PTHREAD_ONCE_INIT;

static void soft_load(void)
{
    soft_libctx = OSSL_LIB_CTX_new();
    if (soft_libctx != NULL)
        soft_prov = OSSL_PROVIDER_load(soft_libctx, "default");
    HWAF_DEBUG("software path: OpenSSL's default provider %s",
               soft_prov != NULL ? "loaded" : "could not be loaded");
}

/* name is one of the ':'-separated names of an algorithm definition. */
static int names_have(const char *names, const char *name)
{
    size_t nl = strlen(name);
    const char *p = names;

    while (p != NULL && *p != '\0') {
        size_t l = strcspn(p, ":");

        if (l == nl && OPENSSL_strncasecmp(p, name, nl) == 0)
            return 1;
        p = p[l] == ':' ? p + l + 1 : NULL;
    }
    return 0;
}

OSSL_LIB_CTX *hwaf_soft_libctx(void)
{
    pthread_once(&soft_once, soft_load);
    return soft_prov != NULL ? soft_libctx : NULL;
}

int hwaf_soft_fetch(int operation_id, const char *name,
                    const OSSL_DISPATCH **fns, void **provctx)
{
    const OSSL_ALGORITHM *algs, *a;
    int no_cache = 0, found = 0;

    pthread_once(&soft_once, soft_load);
    if (soft_prov == NULL)
        return 0;
    algs = OSSL_PROVIDER_query_operation(soft_prov, operation_id, &no_cache);
    for (a = algs; a != NULL && a->algorithm_names != NULL; a++) {
        if (names_have(a->algorithm_names, name)) {
            *fns = a->implementation;
            *provctx = OSSL_PROVIDER_get0_provider_ctx(soft_prov);
            found = 1;
            break;
        }
    }
    if (algs != NULL)
        OSSL_PROVIDER_unquery_operation(soft_prov, operation_id, algs);
    return found;
}

void (*hwaf_soft_fn(const OSSL_DISPATCH *fns, int function_id))(void)
{
    for (; fns != NULL && fns->function_id != 0; fns++)
        if (fns->function_id == function_id)
            return fns->function;
    return NULL;
}

/* ---- what the reference accepts ---- */

static int ctr_num_ok;
static pthread_once_t ctr_num_once = PTHREAD_ONCE_INIT;

/* Does the default provider take num = 1 on a fresh AES-128-CTR context? */
static void ctr_num_probe(void)
{
    const OSSL_DISPATCH *fns;
    void *provctx, *c;
    OSSL_FUNC_cipher_newctx_fn *cnew;
    OSSL_FUNC_cipher_set_ctx_params_fn *cset;
    OSSL_FUNC_cipher_freectx_fn *cfree;
    unsigned int num = 1;
    OSSL_PARAM p[2];

    if (!hwaf_soft_fetch(OSSL_OP_CIPHER, "AES-128-CTR", &fns, &provctx))
        return;
    cnew = (OSSL_FUNC_cipher_newctx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_NEWCTX);
    cset = (OSSL_FUNC_cipher_set_ctx_params_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_SET_CTX_PARAMS);
    cfree = (OSSL_FUNC_cipher_freectx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_FREECTX);
    if (cnew == NULL || cset == NULL || cfree == NULL || (c = cnew(provctx)) == NULL)
        return;
    p[0] = OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_NUM, &num);
    p[1] = OSSL_PARAM_construct_end();
    ERR_set_mark();
    ctr_num_ok = cset(c, p);
    ERR_pop_to_mark();
    cfree(c);
    HWAF_DEBUG("software path: the default provider %s a CTR position (num) other than 0",
               ctr_num_ok ? "takes" : "refuses");
}

int hwaf_soft_ctr_num_settable(void)
{
    pthread_once(&ctr_num_once, ctr_num_probe);
    return ctr_num_ok;
}

/* ---- a kernel object that cannot be had: software takes over ---- */

void hwaf_open_begin(const hwaf_impl *impl, hwaf_open_try *t)
{
    t->shortages = hwaf_sys_transient_count();
    t->refusals = hwaf_sandbox_refusals_here();
    t->marked = impl->soft != NULL && hwaf_err_mark(impl->prov);
    t->kat_failed = 0;
}

int hwaf_open_verify(const hwaf_impl *impl, hwaf_open_try *t)
{
    int v = hwaf_impl_verify(impl);

    if (v == HWAF_KAT_PASSED)
        return 1;
    if (v == HWAF_KAT_FAILED) {
        t->kat_failed = 1;
        HWAF_RAISE(impl->prov, HWAF_R_KNOWN_ANSWER_FAILED, "%s driver %s (%s)",
                   impl->be->name, impl->drv.name, impl->alg->kname);
    }
    return 0;
}

static void open_done(const hwaf_impl *impl, hwaf_open_try *t)
{
    if (t->marked)
        hwaf_err_mark_drop(impl->prov, 0);
    t->marked = 0;
}

void hwaf_open_cancel(const hwaf_impl *impl, hwaf_open_try *t)
{
    open_done(impl, t);
}

void hwaf_open_end(const hwaf_impl *impl, hwaf_open_try *t)
{
    hwaf_impl *m = (hwaf_impl *)impl;

    /* an open that succeeded ends a run of shortages */
    if (__atomic_load_n(&m->fd_backoff.fails, __ATOMIC_RELAXED) != 0)
        __atomic_store_n(&m->fd_backoff.fails, 0, __ATOMIC_RELAXED);
    open_done(impl, t);
}

int hwaf_open_backoff(const hwaf_impl *impl, int force)
{
    /* the implementation's own back-off state, shared by its contexts */
    hwaf_impl *m = (hwaf_impl *)impl;

    /* a driver that failed its known answer: software, no open (counted) */
    if (__atomic_load_n(&m->kat, __ATOMIC_RELAXED) == HWAF_KAT_FAILED) {
        if (impl->soft == NULL || hwaf_offload_forced(impl, force))
            return 0;   /* the open path raises the reason */
        hwaf_stats_add_fallback(HWAF_FALLBACK_KNOWN_ANSWER);
        return 1;
    }
    if (__atomic_load_n(&m->fd_backoff.skip, __ATOMIC_RELAXED) <= 0
        || impl->soft == NULL || force == HWAF_OFFLOAD_KERNEL)
        return 0;
    if (__atomic_load_n(&m->fd_backoff.releases, __ATOMIC_RELAXED) != hwaf_sys_fd_releases()
        || __atomic_load_n(&m->fd_backoff.gen, __ATOMIC_RELAXED) != hwaf_fork_generation) {
        /* a descriptor came free, or a new process: try again */
        __atomic_store_n(&m->fd_backoff.skip, 0, __ATOMIC_RELAXED);
        return 0;
    }
    /* several threads may take the last skip at once: one of them tries */
    return __atomic_sub_fetch(&m->fd_backoff.skip, 1, __ATOMIC_RELAXED) >= 0;
}

/* One more open failed for want of descriptors: from the second in a row
 * (a lasting shortage, not a passing one), skip the next opens. */
static void backoff_start(const hwaf_impl *impl)
{
    hwaf_impl *m = (hwaf_impl *)impl;

    if (__atomic_add_fetch(&m->fd_backoff.fails, 1, __ATOMIC_RELAXED) < 2)
        return;

    __atomic_store_n(&m->fd_backoff.releases, hwaf_sys_fd_releases(), __ATOMIC_RELAXED);
    __atomic_store_n(&m->fd_backoff.gen, hwaf_fork_generation, __ATOMIC_RELAXED);
    __atomic_store_n(&m->fd_backoff.skip, HWAF_FD_BACKOFF, __ATOMIC_RELAXED);
}

int hwaf_open_fallback(const hwaf_impl *impl, hwaf_open_try *t, int force)
{
    int reason, err = 0;

    if (t->kat_failed) {
        if (!t->marked || hwaf_offload_forced(impl, force)) {
            open_done(impl, t);
            return 0;
        }
        hwaf_err_mark_drop(impl->prov, 1);
        t->marked = 0;
        hwaf_stats_add_fallback(HWAF_FALLBACK_KNOWN_ANSWER);
        HWAF_DEBUG("dispatch: %s via %s: the driver failed its known answer; served in "
                   "software instead", impl->alg->kname, impl->drv.name);
        return 1;
    }
    if (hwaf_sandbox_refusals_here() != t->refusals) {
        reason = HWAF_FALLBACK_SANDBOX;
    } else if (hwaf_sys_transient_count() != t->shortages
               && ((err = hwaf_sys_transient_errno()) == EMFILE || err == ENFILE)) {
        reason = HWAF_FALLBACK_DESCRIPTORS;
    } else {
        open_done(impl, t);
        return 0;
    }
    if (!t->marked || force == HWAF_OFFLOAD_KERNEL) {
        open_done(impl, t);
        return 0;
    }
    hwaf_err_mark_drop(impl->prov, 1);
    t->marked = 0;
    hwaf_stats_add_fallback(reason);
    if (reason == HWAF_FALLBACK_DESCRIPTORS)
        backoff_start(impl);
    HWAF_DEBUG("dispatch: %s via %s: %s; served in software instead",
               impl->alg->kname, impl->drv.name,
               reason == HWAF_FALLBACK_SANDBOX ? "sandboxed, no kernel calls"
                                              : strerror(err));
    return 1;
}

/* ---- per implementation: the default provider's functions ---- */

typedef struct soft_alg_st {
    void *provctx;
    size_t ivlen;
    /* ciphers */
    OSSL_FUNC_cipher_newctx_fn *c_new;
    OSSL_FUNC_cipher_encrypt_init_fn *c_einit;
    OSSL_FUNC_cipher_decrypt_init_fn *c_dinit;
    OSSL_FUNC_cipher_cipher_fn *c_cipher;
    OSSL_FUNC_cipher_update_fn *c_update;
    OSSL_FUNC_cipher_get_ctx_params_fn *c_get;
    OSSL_FUNC_cipher_freectx_fn *c_free;
    /* digests */
    OSSL_FUNC_digest_newctx_fn *d_new;
    OSSL_FUNC_digest_init_fn *d_init;
    OSSL_FUNC_digest_update_fn *d_update;
    OSSL_FUNC_digest_final_fn *d_final;
    OSSL_FUNC_digest_dupctx_fn *d_dup;
    OSSL_FUNC_digest_freectx_fn *d_free;
} soft_alg;

static int soft_impl_init(hwaf_impl *impl)
{
    const hwaf_alg *alg = impl->alg;
    const OSSL_DISPATCH *fns;
    soft_alg *f;
    char name[64];
    size_t nl = strcspn(alg->names, ":");
    int op = alg->kind == HWAF_KIND_CIPHER ? OSSL_OP_CIPHER : OSSL_OP_DIGEST;

    if (nl >= sizeof(name)
        || (alg->kind != HWAF_KIND_CIPHER && alg->kind != HWAF_KIND_DIGEST))
        return 0;
    memcpy(name, alg->names, nl);
    name[nl] = '\0';
    if ((f = OPENSSL_zalloc(sizeof(*f))) == NULL)
        return 0;
    if (!hwaf_soft_fetch(op, name, &fns, &f->provctx)) {
        OPENSSL_free(f);
        return 0;
    }
    f->ivlen = alg->ivlen;
    if (op == OSSL_OP_CIPHER) {
        f->c_new = (OSSL_FUNC_cipher_newctx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_NEWCTX);
        f->c_einit = (OSSL_FUNC_cipher_encrypt_init_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_ENCRYPT_INIT);
        f->c_dinit = (OSSL_FUNC_cipher_decrypt_init_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_DECRYPT_INIT);
        f->c_cipher = (OSSL_FUNC_cipher_cipher_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_CIPHER);
        f->c_update = (OSSL_FUNC_cipher_update_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_UPDATE);
        f->c_get = (OSSL_FUNC_cipher_get_ctx_params_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_GET_CTX_PARAMS);
        f->c_free = (OSSL_FUNC_cipher_freectx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_CIPHER_FREECTX);
        if (f->c_new && f->c_einit && f->c_dinit && f->c_cipher && f->c_update && f->c_get
            && f->c_free) {
            impl->be_data = f;
            return 1;
        }
    } else {
        f->d_new = (OSSL_FUNC_digest_newctx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_NEWCTX);
        f->d_init = (OSSL_FUNC_digest_init_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_INIT);
        f->d_update = (OSSL_FUNC_digest_update_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_UPDATE);
        f->d_final = (OSSL_FUNC_digest_final_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_FINAL);
        f->d_dup = (OSSL_FUNC_digest_dupctx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_DUPCTX);
        f->d_free = (OSSL_FUNC_digest_freectx_fn *)hwaf_soft_fn(fns, OSSL_FUNC_DIGEST_FREECTX);
        if (f->d_new && f->d_init && f->d_update && f->d_final && f->d_dup && f->d_free) {
            impl->be_data = f;
            return 1;
        }
    }
    OPENSSL_free(f);
    return 0;
}

static void soft_impl_free(hwaf_impl *impl)
{
    OPENSSL_free(impl->be_data);
    impl->be_data = NULL;
}

/* impl's software twin, or NULL when the default provider has none. */
static hwaf_impl *soft_twin(const hwaf_impl *impl)
{
    hwaf_impl *twin = OPENSSL_malloc(sizeof(*twin));

    if (twin == NULL)
        return NULL;
    *twin = *impl;
    twin->be = &hwaf_backend_soft;
    twin->be_data = NULL;
    twin->soft = NULL;
    twin->soft_ready = 1;
    twin->be_index = -1;
    twin->offload_min = SIZE_MAX;
    snprintf(twin->drv.name, sizeof(twin->drv.name), "openssl-default");
    if (impl->alg->kind == HWAF_KIND_AEAD || impl->alg->kind == HWAF_KIND_MAC)
        twin->be = &hwaf_backend_soft_aead_mac;   /* hwaf_soft_aead_mac.c */
    if (!twin->be->impl_init(twin)) {
        HWAF_DEBUG("software path: the default provider has no %s", impl->alg->names);
        OPENSSL_free(twin);
        return NULL;
    }
    return twin;
}

/*
 * At an implementation's first need, not at load: a load that makes no
 * context of it (`openssl list`, a TLS client that negotiates ChaCha20, a
 * process that uses hwaf for one digest) neither loads the default
 * provider nor looks up its functions.  One mutex for all: the first
 * caller sets the twin up, callers of the same implementation meanwhile
 * wait for it.  An hwaf_mutex: fork() waits for a set-up under way, and
 * the child gets the mutex fresh.  Nothing here takes another hwaf lock.
 */
static hwaf_mutex soft_setup_lock = HWAF_MUTEX_INIT;

void hwaf_soft_setup(hwaf_impl *impl)
{
    hwaf_mutex_lock(&soft_setup_lock);
    if (!__atomic_load_n(&impl->soft_ready, __ATOMIC_RELAXED)) {
        /* The caller's queue is not the place for the default provider's
         * load errors: without it, impl simply has no software path. */
        ERR_set_mark();
        impl->soft = soft_twin(impl);
        ERR_pop_to_mark();
        if (impl->soft == NULL) {
            /* always the kernel, as hwaf_threshold_assign says for it */
            impl->offload_min = 0;
            impl->offload_src = HWAF_SRC_DEFAULT;
        }
        __atomic_add_fetch(&impl->prov->soft_ready, 1, __ATOMIC_RELAXED);
        HWAF_DEBUG("software path: %.*s via %s %s: %s",
                   (int)strcspn(impl->alg->names, ":"), impl->alg->names, impl->be->name,
                   impl->drv.name, impl->soft != NULL ? "set up" : "none, always the kernel");
        __atomic_store_n(&impl->soft_ready, 1, __ATOMIC_RELEASE);
    }
    hwaf_mutex_unlock(&soft_setup_lock);
}

void hwaf_soft_impl_free(hwaf_impl *impl)
{
    if (impl->soft == NULL)
        return;
    impl->soft->be->impl_free(impl->soft);
    OPENSSL_free(impl->soft);
    impl->soft = NULL;
}

#define FNS(impl) ((const soft_alg *)(impl)->be_data)

/*
 * ---- ciphers: one default-provider context per direction ----
 * (AES decrypts with its own key schedule: a context keyed for one direction
 * cannot be re-initialised for the other without the key.)
 */

struct hwaf_be_cipher_st {
    const hwaf_impl *impl;
    void *c[2];                     /* [enc], created on first use */
    int rekey[2];                   /* [enc]: c[enc] is to be keyed at its next start */
    unsigned char key[HWAF_MAX_KEY];
    size_t keylen;
};

/* Both software backends: always there, no kernel drivers to bind. */
int hwaf_soft_available(char *why, size_t whylen)
{
    return 1;
}

int hwaf_soft_drivers(const hwaf_alg *alg, hwaf_driver *out, int max)
{
    return 0;
}

static int soft_cipher_open(hwaf_be_cipher **out, const hwaf_impl *impl,
                            const unsigned char *key, size_t keylen)
{
    hwaf_be_cipher *s;

    if (keylen > HWAF_MAX_KEY || (s = OPENSSL_zalloc(sizeof(*s))) == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    s->impl = impl;
    memcpy(s->key, key, keylen);
    s->keylen = keylen;
    *out = s;
    return 1;
}

/* The default provider's context of one direction, keyed on first use. */
static void *soft_cipher_ctx(hwaf_be_cipher *s, int enc, const unsigned char *iv)
{
    const soft_alg *f = FNS(s->impl);
    int ok = 0;

    if (s->c[enc] == NULL && (s->c[enc] = f->c_new(f->provctx)) != NULL)
        s->rekey[enc] = 1;
    if (s->c[enc] != NULL) {
        /* the session's key only when the context does not hold it yet */
        const unsigned char *key = s->rekey[enc] ? s->key : NULL;
        size_t keylen = s->rekey[enc] ? s->keylen : 0;

        ok = enc ? f->c_einit(s->c[enc], key, keylen, iv, f->ivlen, NULL)
                 : f->c_dinit(s->c[enc], key, keylen, iv, f->ivlen, NULL);
        if (ok)
            s->rekey[enc] = 0;
    }
    if (!ok) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s: init",
                   s->impl->alg->kname);
        return NULL;
    }
    return s->c[enc];
}

static int soft_cipher_crypt(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                             const unsigned char *in, unsigned char *out, size_t len)
{
    enc = enc ? 1 : 0;
    return soft_cipher_ctx(s, enc, iv) != NULL
           && hwaf_soft_cipher_run(s, enc, in, out, len);
}

int hwaf_soft_cipher_start(hwaf_be_cipher *s, int enc, const unsigned char *iv)
{
    return soft_cipher_ctx(s, enc, iv) != NULL;
}

void hwaf_soft_cipher_rekey(hwaf_be_cipher *s, const unsigned char *key, size_t keylen)
{
    OPENSSL_cleanse(s->key, sizeof(s->key));
    memcpy(s->key, key, keylen);
    s->keylen = keylen;
    s->rekey[0] = s->rekey[1] = 1;
}

void hwaf_soft_cipher_direct(hwaf_be_cipher *s, int enc, OSSL_FUNC_cipher_update_fn **fn,
                             void **c)
{
    /* The cheaper of the two for such updates: CBC's and XTS's raw cipher
     * call skips the update's buffering logic; CTR's update is the raw
     * call less a check the default provider's cipher call adds. */
    *fn = s->impl->alg->mode == HWAF_MODE_CTR ? FNS(s->impl)->c_update
                                              : FNS(s->impl)->c_cipher;
    *c = s->c[enc];
}

static void soft_cipher_failed(hwaf_be_cipher *s, size_t len)
{
    HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s, %zu bytes",
               s->impl->alg->kname, len);
}

int hwaf_soft_cipher_run(hwaf_be_cipher *s, int enc, const unsigned char *in,
                         unsigned char *out, size_t len)
{
    size_t outl = 0;

    if (!FNS(s->impl)->c_cipher(s->c[enc], out, &outl, len, in, len) || outl != len) {
        soft_cipher_failed(s, len);
        return 0;
    }
    hwaf_stats_add_soft(len);
    return 1;
}

int hwaf_soft_cipher_iv(hwaf_be_cipher *s, int enc, unsigned char *iv, unsigned int *num)
{
    const soft_alg *f = FNS(s->impl);
    OSSL_PARAM p[3];
    int ok;

    p[0] = OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, iv, f->ivlen);
    p[1] = num != NULL ? OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_NUM, num)
                       : OSSL_PARAM_construct_end();
    p[2] = OSSL_PARAM_construct_end();
    /* The default provider tries the IV as a pointer first and then as a
     * string; OpenSSL 3.5 raises an error for the first attempt, which EVP
     * hides the same way. */
    ERR_set_mark();
    ok = s->c[enc] != NULL && f->c_get(s->c[enc], p) && p[0].return_size == f->ivlen
         && (num == NULL || (OSSL_PARAM_modified(&p[1]) && *num < HWAF_SOFT_BLOCK));
    ERR_pop_to_mark();
    if (!ok) {
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s: updated-iv",
                   s->impl->alg->kname);
        return 0;
    }
    return 1;
}

int hwaf_soft_cipher_keystream(hwaf_be_cipher *s, const unsigned char *ctr,
                               unsigned char *ks)
{
    static const unsigned char zero[HWAF_SOFT_BLOCK];
    unsigned char c[HWAF_SOFT_BLOCK];
    size_t outl = 0;
    int i, ok;

    /* ctr is the counter after the block: E_K(ctr - 1). */
    memcpy(c, ctr, sizeof(c));
    for (i = HWAF_SOFT_BLOCK - 1; i >= 0 && c[i]-- == 0; i--)
        ;
    ok = soft_cipher_ctx(s, 1, c) != NULL
         && FNS(s->impl)->c_cipher(s->c[1], ks, &outl, HWAF_SOFT_BLOCK, zero,
                                   HWAF_SOFT_BLOCK)
         && outl == HWAF_SOFT_BLOCK;
    OPENSSL_cleanse(c, sizeof(c));
    if (!ok)
        HWAF_RAISE(s->impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "%s: keystream",
                   s->impl->alg->kname);
    return ok;
}

static size_t soft_cipher_max(hwaf_be_cipher *s)
{
    return SIZE_MAX;
}

static void soft_cipher_close(hwaf_be_cipher *s)
{
    int i;

    if (s == NULL)
        return;
    for (i = 0; i < 2; i++)
        if (s->c[i] != NULL)
            FNS(s->impl)->c_free(s->c[i]);
    OPENSSL_clear_free(s, sizeof(*s));
}

hwaf_be_cipher *hwaf_soft_cipher_other(const hwaf_impl *impl, const hwaf_alg *alg,
                                       hwaf_impl *holder, const unsigned char *key,
                                       size_t keylen)
{
    hwaf_be_cipher *s = NULL;

    *holder = *impl->soft;
    holder->be = &hwaf_backend_soft;
    holder->alg = alg;
    holder->be_data = NULL;
    if (!soft_impl_init(holder)) {
        HWAF_RAISE(impl->prov, HWAF_R_SOFTWARE_PATH_FAILED, "no %.*s",
                   (int)strcspn(alg->names, ":"), alg->names);
        return NULL;
    }
    if (!soft_cipher_open(&s, holder, key, keylen)) {
        soft_impl_free(holder);
        return NULL;
    }
    return s;
}

void hwaf_soft_cipher_other_close(hwaf_be_cipher *s, hwaf_impl *holder)
{
    soft_cipher_close(s);
    soft_impl_free(holder);
}

/* ---- digests: the default provider's context itself ---- */

void *hwaf_soft_md_new(const hwaf_impl *soft)
{
    const soft_alg *f = FNS(soft);
    void *c = f->d_new(f->provctx);

    if (c == NULL || !f->d_init(c, NULL)) {
        if (c != NULL)
            f->d_free(c);
        HWAF_RAISE(soft->prov, HWAF_R_SOFTWARE_PATH_FAILED, "digest init");
        return NULL;
    }
    return c;
}

int hwaf_soft_md_wipe(const hwaf_impl *soft, void *c)
{
    static const unsigned char zero[HWAF_SOFT_MD_BLOCK_MAX];
    const soft_alg *f = FNS(soft);
    size_t n = soft->alg->blocklen;

    /* Init need not clear the input buffer (SHA-512's does not): fill it
     * with zeros, one byte short of a block so that it stays buffered.
     * The first init is needed after a final too: SHA-512's final leaves
     * its count of buffered bytes, and zeros added to it would fill the
     * block, hash it (a second compression per message) and leave the
     * message's last byte where the zeros did not reach.  The 64-byte
     * block hashes (SHA-1, SHA-224, SHA-256) share one final that clears
     * its input buffer itself (the test SoftDigestWipe.Md32FinalClears-
     * ItsBuffer checks it): after it an init alone leaves nothing of the
     * message, and the fill and second init cost 4-13 % of a 16-byte
     * message's time under emulation. */
    if (n == 0 || n > sizeof(zero))
        return 0;
    if (n == 64)
        return f->d_init(c, NULL);
    return f->d_init(c, NULL) && f->d_update(c, zero, n - 1) && f->d_init(c, NULL);
}

int hwaf_soft_md_init(const hwaf_impl *soft, void *c)
{
    if (FNS(soft)->d_init(c, NULL))
        return 1;
    HWAF_RAISE(soft->prov, HWAF_R_SOFTWARE_PATH_FAILED, "digest init");
    return 0;
}

int hwaf_soft_md_update(const hwaf_impl *soft, void *c, const unsigned char *in,
                        size_t len)
{
    if (!FNS(soft)->d_update(c, in, len)) {
        HWAF_RAISE(soft->prov, HWAF_R_SOFTWARE_PATH_FAILED, "digest update");
        return 0;
    }
    hwaf_stats_add_soft(len);
    return 1;
}

int hwaf_soft_md_final(const hwaf_impl *soft, void *c, unsigned char *md)
{
    size_t outl = 0;

    if (FNS(soft)->d_final(c, md, &outl, soft->alg->mdlen))
        return 1;
    HWAF_RAISE(soft->prov, HWAF_R_SOFTWARE_PATH_FAILED, "digest final");
    return 0;
}

void *hwaf_soft_md_dup(const hwaf_impl *soft, void *c)
{
    void *d = FNS(soft)->d_dup(c);

    if (d == NULL)
        HWAF_RAISE(soft->prov, HWAF_R_SOFTWARE_PATH_FAILED, "digest dupctx");
    return d;
}

void hwaf_soft_md_free(const hwaf_impl *soft, void *c)
{
    if (c != NULL)
        FNS(soft)->d_free(c);
}

/* The same as a backend (for what takes any backend: calibration). */
struct hwaf_be_md_st {
    const hwaf_impl *impl;
    void *c;
};

static int soft_md_open(hwaf_be_md **out, const hwaf_impl *impl)
{
    hwaf_be_md *s = OPENSSL_zalloc(sizeof(*s));

    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    s->impl = impl;
    if ((s->c = hwaf_soft_md_new(impl)) == NULL) {
        OPENSSL_free(s);
        return 0;
    }
    *out = s;
    return 1;
}

static int soft_md_update(hwaf_be_md *s, const unsigned char *in, size_t len)
{
    return hwaf_soft_md_update(s->impl, s->c, in, len);
}

/* As the kernel backends: final leaves the hash ready for a new message. */
static int soft_md_final(hwaf_be_md *s, unsigned char *md)
{
    return hwaf_soft_md_final(s->impl, s->c, md) && hwaf_soft_md_init(s->impl, s->c);
}

static int soft_md_reset(hwaf_be_md *s)
{
    return hwaf_soft_md_init(s->impl, s->c);
}

static int soft_md_dup(hwaf_be_md **out, hwaf_be_md *s)
{
    hwaf_be_md *d = OPENSSL_zalloc(sizeof(*d));

    if (d == NULL || (d->c = hwaf_soft_md_dup(s->impl, s->c)) == NULL) {
        OPENSSL_free(d);
        if (d == NULL)
            HWAF_RAISE(s->impl->prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    d->impl = s->impl;
    *out = d;
    return 1;
}

static void soft_md_close(hwaf_be_md *s)
{
    if (s == NULL)
        return;
    hwaf_soft_md_free(s->impl, s->c);
    OPENSSL_free(s);
}

/* The state is process memory: fork copies it (both software backends). */
int hwaf_soft_md_fork_prepare(hwaf_be_md *s)
{
    return 1;
}

void hwaf_soft_md_fork_noop(hwaf_be_md *s)
{
}

const hwaf_backend hwaf_backend_soft = {
    .name = "software",
    .available = hwaf_soft_available,
    .drivers = hwaf_soft_drivers,
    .cipher_open = soft_cipher_open,
    .cipher_crypt = soft_cipher_crypt,
    .cipher_max = soft_cipher_max,
    .cipher_close = soft_cipher_close,
    .cipher_abandon = soft_cipher_close, /* nothing is shared with a parent */
    .md_open = soft_md_open,
    .md_update = soft_md_update,
    .md_final = soft_md_final,
    .md_reset = soft_md_reset,
    .md_dup = soft_md_dup,
    .md_close = soft_md_close,
    .md_fork_prepare = hwaf_soft_md_fork_prepare,
    .md_fork_parent = hwaf_soft_md_fork_noop,
    .md_fork_child = hwaf_soft_md_fork_noop,
    .impl_init = soft_impl_init,
    .impl_free = soft_impl_free,
    /* no AEAD, no keyed hash: those are hwaf_backend_soft_aead_mac's */
};
