/*
 * Implementations reached through OpenSSL's EVP API: the default provider,
 * the hwaf provider (per backend and hw class) and Debian's afalg engine
 * (where libcrypto has the ENGINE API: OpenSSL 4.0 removed it).
 *
 * A cipher operation is one EVP_EncryptUpdate over the buffer on a context
 * initialised once (padding off), as an application streaming data does and
 * as `openssl speed -evp` does.  A digest operation is a complete
 * EVP_DigestInit_ex + Update + Final_ex on a reused context.
 */
#define OPENSSL_SUPPRESS_DEPRECATED /* ENGINE: the afalg engine is a peer */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#ifndef OPENSSL_NO_ENGINE
#include <openssl/engine.h>
#endif
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include "bench.h"
#include "hwaf/hwaf.h"

static OSSL_PROVIDER *prov_default;
static OSSL_PROVIDER *prov_hwaf;
static char hwaf_why[BENCH_WHY_MAX] = "not loaded";
static void afalg_engine_close(void);

/* The most recent OpenSSL error as text, then the queue cleared. */
static void last_error(char *why, size_t whylen, const char *what)
{
    const char *data = NULL;
    int flags = 0;
    unsigned long e = ERR_peek_error_data(&data, &flags);
    char buf[200] = "no error queued";

    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    if (e != 0 && data != NULL && (flags & ERR_TXT_STRING) && data[0] != '\0')
        snprintf(why, whylen, "%s: %s (%s)", what, buf, data);
    else
        snprintf(why, whylen, "%s: %s", what, buf);
    ERR_clear_error();
}

/*
 * hwaf configured as openssl.cnf would configure it, with calibration = file
 * (docs/config.md): a temporary configuration loaded into the default
 * library context, which activates hwaf with that key.
 */
static int load_calibration(const char *file, const char *policy, char *why, size_t whylen)
{
    char path[] = "/tmp/hwaf-bench-cnf.XXXXXX";
    int fd = mkstemp(path), ok;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

    if (f == NULL) {
        snprintf(why, whylen, "--calibration: temporary configuration: %s", strerror(errno));
        if (fd >= 0)
            close(fd), unlink(path);
        return 0;
    }
    fprintf(f, "openssl_conf = bench_init\n[bench_init]\nproviders = bench_providers\n"
               "[bench_providers]\n%s = bench_hwaf\n[bench_hwaf]\ncalibration = %s\n"
               "%s%s%sactivate = 1\n", HWAF_PROVIDER_NAME, file,
            policy != NULL ? "policy = " : "", policy != NULL ? policy : "",
            policy != NULL ? "\n" : "");
    /* A configuration whose provider fails to activate can still load:
     * hwaf must be there now, else it would come up without the file. */
    ok = fclose(f) == 0 && OSSL_LIB_CTX_load_config(NULL, path)
         && OSSL_PROVIDER_available(NULL, HWAF_PROVIDER_NAME);
    if (!ok && ERR_peek_error() == 0)
        snprintf(why, whylen, "--calibration %s: hwaf did not load with it", file);
    else if (!ok)
        last_error(why, whylen, "--calibration: loading hwaf with the calibration");
    unlink(path);
    return ok;
}

int bench_evp_init(const char *modules_dir, const char *calibration, const char *policy,
                   char *why, size_t whylen)
{
    prov_default = OSSL_PROVIDER_load(NULL, "default");
    if (prov_default == NULL) {
        last_error(why, whylen, "loading the default provider");
        return 0;
    }
    if (getenv("OPENSSL_MODULES") == NULL && modules_dir != NULL
        && modules_dir[0] != '\0')
        OSSL_PROVIDER_set_default_search_path(NULL, modules_dir);
    if (calibration != NULL && !load_calibration(calibration, policy, why, whylen))
        return 0;
    prov_hwaf = OSSL_PROVIDER_load(NULL, HWAF_PROVIDER_NAME);
    if (prov_hwaf == NULL) {
        last_error(hwaf_why, sizeof(hwaf_why), "loading provider hwaf");
    } else {
        snprintf(hwaf_why, sizeof(hwaf_why), "loaded");
    }
    return 1;
}

void bench_evp_cleanup(void)
{
    afalg_engine_close();
    if (prov_hwaf != NULL)
        OSSL_PROVIDER_unload(prov_hwaf);
    if (prov_default != NULL)
        OSSL_PROVIDER_unload(prov_default);
    prov_hwaf = prov_default = NULL;
}

int bench_hwaf_loaded(void)
{
    return prov_hwaf != NULL;
}

const char *bench_hwaf_why(void)
{
    return hwaf_why;
}

int bench_hwaf_counters(uint64_t ops[BENCH_CTR_COUNT],
                        uint64_t bytes[BENCH_CTR_COUNT])
{
    OSSL_PARAM p[5];

    memset(ops, 0, sizeof(uint64_t) * BENCH_CTR_COUNT);
    memset(bytes, 0, sizeof(uint64_t) * BENCH_CTR_COUNT);
    if (prov_hwaf == NULL)
        return 0;
    p[0] = OSSL_PARAM_construct_uint64(HWAF_PARAM_AFALG_OPS, &ops[BENCH_CTR_AFALG]);
    p[1] = OSSL_PARAM_construct_uint64(HWAF_PARAM_AFALG_BYTES, &bytes[BENCH_CTR_AFALG]);
    p[2] = OSSL_PARAM_construct_uint64(HWAF_PARAM_DEVCRYPTO_OPS,
                                       &ops[BENCH_CTR_DEVCRYPTO]);
    p[3] = OSSL_PARAM_construct_uint64(HWAF_PARAM_DEVCRYPTO_BYTES,
                                       &bytes[BENCH_CTR_DEVCRYPTO]);
    p[4] = OSSL_PARAM_construct_end();
    if (!OSSL_PROVIDER_get_params(prov_hwaf, p)) {
        ERR_clear_error();
        return 0;
    }
    return OSSL_PARAM_modified(&p[0]) && OSSL_PARAM_modified(&p[2]);
}

/* A provider's multi-line parameter, indented under a title. */
static void print_lines(FILE *f, const char *title, const char *s)
{
    if (s == NULL || s[0] == '\0')
        return;
    fprintf(f, "%s:\n", title);
    while (*s != '\0') {
        const char *nl = strchr(s, '\n');
        int n = nl != NULL ? (int)(nl - s) : (int)strlen(s);

        if (n > 0)
            fprintf(f, "  %.*s\n", n, s);
        s += n + (nl != NULL);
    }
}

void bench_hwaf_describe(FILE *f)
{
    char *afalg = NULL, *devcrypto = NULL, *algs = NULL, *thresholds = NULL;
    OSSL_PARAM p[5];

    if (prov_hwaf == NULL) {
        fprintf(f, "hwaf provider: not available (%s)\n", hwaf_why);
        return;
    }
    p[0] = OSSL_PARAM_construct_utf8_ptr(HWAF_PARAM_AFALG_STATUS, &afalg, 0);
    p[1] = OSSL_PARAM_construct_utf8_ptr(HWAF_PARAM_DEVCRYPTO_STATUS, &devcrypto, 0);
    p[2] = OSSL_PARAM_construct_utf8_ptr(HWAF_PARAM_ALGORITHMS, &algs, 0);
    p[3] = OSSL_PARAM_construct_utf8_ptr(HWAF_PARAM_THRESHOLDS, &thresholds, 0);
    p[4] = OSSL_PARAM_construct_end();
    if (!OSSL_PROVIDER_get_params(prov_hwaf, p))
        ERR_clear_error();
    fprintf(f, "hwaf provider: loaded; AF_ALG backend: %s; /dev/crypto backend: %s\n",
            afalg != NULL ? afalg : "?", devcrypto != NULL ? devcrypto : "?");
    print_lines(f, "hwaf implementations", algs);
    /* What hwaf-auto goes by (the other hwaf lines are forced to the kernel). */
    print_lines(f, "hwaf offload thresholds (hwaf-auto)", thresholds);
}

/* ---- EVP cipher ---- */

typedef struct {
    EVP_CIPHER_CTX *ctx;
    EVP_CIPHER *fetched;   /* NULL for the engine */
    const EVP_CIPHER *cipher;
    ENGINE *engine;
} evp_cipher_st;

static int evp_cipher_reset(void *vst, char *why, size_t whylen)
{
    evp_cipher_st *st = vst;

    if (!EVP_EncryptInit_ex(st->ctx, NULL, NULL, NULL, bench_iv)) {
        last_error(why, whylen, "EVP_EncryptInit_ex (IV)");
        return 0;
    }
    return 1;
}

static int evp_cipher_op(void *vst, const unsigned char *in, unsigned char *out,
                         size_t len, char *why, size_t whylen)
{
    evp_cipher_st *st = vst;
    int outl = 0;

    if (!EVP_EncryptUpdate(st->ctx, out, &outl, in, (int)len)) {
        last_error(why, whylen, "EVP_EncryptUpdate");
        return 0;
    }
    if ((size_t)outl != len) {
        snprintf(why, whylen, "EVP_EncryptUpdate wrote %d of %zu bytes", outl, len);
        return 0;
    }
    return 1;
}

static void evp_cipher_close(void *vst)
{
    evp_cipher_st *st = vst;

    if (st == NULL)
        return;
    EVP_CIPHER_CTX_free(st->ctx);
    EVP_CIPHER_free(st->fetched);
    free(st);
}

static const bench_ops evp_cipher_ops = { evp_cipher_op, evp_cipher_reset,
                                          evp_cipher_close };

/* ---- EVP digest ---- */

typedef struct {
    EVP_MD_CTX *ctx;
    EVP_MD *md;
    int offload;          /* hwaf-offload given at every init */
    OSSL_PARAM init[2];
    const OSSL_PARAM *initp;  /* init, or NULL when offload is not set */
} evp_md_st;

static int evp_md_reset(void *vst, char *why, size_t whylen)
{
    (void)vst, (void)why, (void)whylen;
    return 1;
}

static int evp_md_op(void *vst, const unsigned char *in, unsigned char *out,
                     size_t len, char *why, size_t whylen)
{
    evp_md_st *st = vst;
    unsigned int mdlen = 0;

    /* OpenSSL 3.0 makes a new provider context at every init: the forced
     * path is asked for at each one. */
    if (!EVP_DigestInit_ex2(st->ctx, st->md, st->initp)
        || !EVP_DigestUpdate(st->ctx, in, len)
        || !EVP_DigestFinal_ex(st->ctx, out, &mdlen)) {
        last_error(why, whylen, "EVP_Digest*");
        return 0;
    }
    return 1;
}

static void evp_md_close(void *vst)
{
    evp_md_st *st = vst;

    if (st == NULL)
        return;
    EVP_MD_CTX_free(st->ctx);
    EVP_MD_free(st->md);
    free(st);
}

static const bench_ops evp_md_ops = { evp_md_op, evp_md_reset, evp_md_close };

/* Ask a context which kernel driver serves it (hwaf's "hwaf-driver"),
 * over which backend (its counter) and from which size (hwaf-offload-min). */
static void ctx_driver(EVP_CIPHER_CTX *cctx, EVP_MD_CTX *mctx, bench_inst *inst,
                       int *hw)
{
    char *out = inst->driver, backend[16] = "";
    size_t outlen = sizeof(inst->driver);
    OSSL_PARAM q[3];

    q[0] = OSSL_PARAM_construct_utf8_string(HWAF_PARAM_BACKEND, backend, sizeof(backend));
    q[1] = OSSL_PARAM_construct_size_t(HWAF_PARAM_OFFLOAD_MIN, &inst->offload_min);
    q[2] = OSSL_PARAM_construct_end();
    if (cctx != NULL ? EVP_CIPHER_CTX_get_params(cctx, q) : EVP_MD_CTX_get_params(mctx, q)) {
        if (strcmp(backend, "afalg") == 0)
            inst->counter = BENCH_CTR_AFALG;
        else if (strcmp(backend, "devcrypto") == 0)
            inst->counter = BENCH_CTR_DEVCRYPTO;
    }
    ERR_clear_error();

    OSSL_PARAM p[3];
    char *ptr = NULL;
    int ok;

    p[0] = OSSL_PARAM_construct_utf8_string(HWAF_PARAM_DRIVER, out, outlen);
    p[1] = OSSL_PARAM_construct_int(HWAF_PARAM_HW, hw);
    p[2] = OSSL_PARAM_construct_end();
    ok = cctx != NULL ? EVP_CIPHER_CTX_get_params(cctx, p)
                      : EVP_MD_CTX_get_params(mctx, p);
    if (ok && OSSL_PARAM_modified(&p[0]))
        return;
    ERR_clear_error();
    /* A provider may hand out a pointer instead of copying. */
    p[0] = OSSL_PARAM_construct_utf8_ptr(HWAF_PARAM_DRIVER, &ptr, 0);
    ok = cctx != NULL ? EVP_CIPHER_CTX_get_params(cctx, p)
                      : EVP_MD_CTX_get_params(mctx, p);
    if (ok && ptr != NULL)
        snprintf(out, outlen, "%s", ptr);
    else
        snprintf(out, outlen, "?");
    ERR_clear_error();
}

/*
 * Fetch alg with propq and open it; on failure record why under name.
 * A hwaf line asks the context for its kernel driver and backend; offload
 * is its hwaf-offload (BENCH_OFFLOAD_KERNEL: the forced lines), or
 * BENCH_OFFLOAD_UNSET to leave the context as an application gets it.
 */
#define BENCH_OFFLOAD_UNSET (-2)
#define BENCH_OFFLOAD_KERNEL 1     /* hwaf-offload: every operation to the kernel */
#define BENCH_CTR_FROM_CTX (-2)    /* counter: the backend the context reports */
static void open_fetched(bench_set *s, const bench_alg *a, const char *name,
                         const char *propq, bench_family fam, int counter, int offload)
{
    char why[BENCH_WHY_MAX];
    bench_inst *inst;
    int hw = -1;
    OSSL_PARAM init[2] = { OSSL_PARAM_END, OSSL_PARAM_END };

    if (offload != BENCH_OFFLOAD_UNSET)
        init[0] = OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &offload);

    if (a->kind == BENCH_AEAD || a->kind == BENCH_MAC) {
        inst = bench_open_aead_mac(s, a, name, propq, fam,
                                   offload != BENCH_OFFLOAD_UNSET ? init : NULL);
        if (inst != NULL && counter != BENCH_CTR_FROM_CTX)
            inst->counter = counter;
        return;
    }
    if (a->kind == BENCH_CIPHER) {
        evp_cipher_st *st = calloc(1, sizeof(*st));

        if (st == NULL)
            return;
        st->fetched = EVP_CIPHER_fetch(NULL, a->name, propq);
        if (st->fetched == NULL) {
            last_error(why, sizeof(why), "fetch");
            bench_set_absent(s, name, "%s", why);
            evp_cipher_close(st);
            return;
        }
        st->ctx = EVP_CIPHER_CTX_new();
        if (st->ctx == NULL
            || !EVP_EncryptInit_ex2(st->ctx, st->fetched, bench_key, bench_iv,
                                    offload != BENCH_OFFLOAD_UNSET ? init : NULL)
            || !EVP_CIPHER_CTX_set_padding(st->ctx, 0)) {
            last_error(why, sizeof(why), "EVP_EncryptInit_ex2");
            bench_set_absent(s, name, "%s", why);
            evp_cipher_close(st);
            return;
        }
        inst = bench_set_add(s, name, fam);
        if (inst == NULL) {
            evp_cipher_close(st);
            return;
        }
        inst->ops = &evp_cipher_ops;
        inst->st = st;
        if (fam == BENCH_FAM_HWAF)
            ctx_driver(st->ctx, NULL, inst, &hw);
    } else {
        evp_md_st *st = calloc(1, sizeof(*st));

        if (st == NULL)
            return;
        st->offload = offload;
        st->init[0] = st->init[1] = init[1];
        if (offload != BENCH_OFFLOAD_UNSET) {
            st->init[0] = OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &st->offload);
            st->initp = st->init;
        }
        st->md = EVP_MD_fetch(NULL, a->name, propq);
        st->ctx = EVP_MD_CTX_new();
        if (st->md == NULL || st->ctx == NULL
            || !EVP_DigestInit_ex2(st->ctx, st->md, st->initp)) {
            last_error(why, sizeof(why), st->md == NULL ? "fetch" : "EVP_DigestInit_ex2");
            bench_set_absent(s, name, "%s", why);
            evp_md_close(st);
            return;
        }
        inst = bench_set_add(s, name, fam);
        if (inst == NULL) {
            evp_md_close(st);
            return;
        }
        inst->ops = &evp_md_ops;
        inst->st = st;
        if (fam == BENCH_FAM_HWAF)
            ctx_driver(NULL, st->ctx, inst, &hw);
    }
    inst->hw = hw;
    if (counter != BENCH_CTR_FROM_CTX)
        inst->counter = counter;
}

void bench_open_default(bench_set *s, const bench_alg *a)
{
    open_fetched(s, a, "default", "provider=default", BENCH_FAM_SOFTWARE, -1,
                 BENCH_OFFLOAD_UNSET);
}

/* Does the hwaf provider offer alg with this property query? */
static int hwaf_offers(const bench_alg *a, const char *propq)
{
    int ok;

    if (a->kind == BENCH_AEAD || a->kind == BENCH_MAC)
        return bench_aead_mac_offered(a, propq);
    if (a->kind == BENCH_CIPHER) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, a->name, propq);

        ok = c != NULL;
        EVP_CIPHER_free(c);
    } else {
        EVP_MD *m = EVP_MD_fetch(NULL, a->name, propq);

        ok = m != NULL;
        EVP_MD_free(m);
    }
    ERR_clear_error();
    return ok;
}

void bench_open_hwaf(bench_set *s, const bench_alg *a)
{
    static const char *backends[] = { "afalg", "devcrypto" };
    size_t i;

    for (i = 0; i < 2; i++) {
        char name[BENCH_NAME_MAX], q_hw[128], q_sw[128];
        int yes, no;

        snprintf(name, sizeof(name), "hwaf-%s", backends[i]);
        if (prov_hwaf == NULL) {
            bench_set_absent(s, name, "%s", hwaf_why);
            continue;
        }
        snprintf(q_hw, sizeof(q_hw), "provider=%s,%s=%s,%s=yes", HWAF_PROVIDER_NAME,
                 HWAF_PROP_BACKEND, backends[i], HWAF_PROP_HW);
        snprintf(q_sw, sizeof(q_sw), "provider=%s,%s=%s,%s=no", HWAF_PROVIDER_NAME,
                 HWAF_PROP_BACKEND, backends[i], HWAF_PROP_HW);
        yes = hwaf_offers(a, q_hw);
        no = hwaf_offers(a, q_sw);
        if (yes && no) {
            char n2[BENCH_NAME_MAX + 4];

            snprintf(n2, sizeof(n2), "%s-hw", name);
            open_fetched(s, a, n2, q_hw, BENCH_FAM_HWAF, (int)i, BENCH_OFFLOAD_KERNEL);
            snprintf(n2, sizeof(n2), "%s-sw", name);
            open_fetched(s, a, n2, q_sw, BENCH_FAM_HWAF, (int)i, BENCH_OFFLOAD_KERNEL);
        } else if (yes || no) {
            open_fetched(s, a, name, yes ? q_hw : q_sw, BENCH_FAM_HWAF, (int)i,
                         BENCH_OFFLOAD_KERNEL);
        } else {
            bench_set_absent(s, name, "not offered by hwaf for this algorithm "
                             "(backend %s unusable or kernel lacks %s)",
                             backends[i], a->kname);
        }
    }
    /* hwaf as an application that prefers it gets it: whichever
     * implementation "provider=hwaf" fetches, in its default mode (each
     * operation, or GCM message, to the kernel or to software by the
     * implementation's threshold). */
    if (prov_hwaf == NULL || !hwaf_offers(a, "provider=" HWAF_PROVIDER_NAME))
        bench_set_absent(s, BENCH_HWAF_AUTO, "%s", prov_hwaf == NULL ? hwaf_why
                         : "not offered by hwaf for this algorithm");
    else
        open_fetched(s, a, BENCH_HWAF_AUTO, "provider=" HWAF_PROVIDER_NAME, BENCH_FAM_HWAF,
                     BENCH_CTR_FROM_CTX, BENCH_OFFLOAD_UNSET);
}

/* ---- Debian's afalg engine ---- */

#ifndef OPENSSL_NO_ENGINE
static ENGINE *afalg_engine;
static int afalg_engine_tried;
static char afalg_engine_why[BENCH_WHY_MAX];

static void afalg_engine_close(void)
{
    if (afalg_engine != NULL) {
        ENGINE_finish(afalg_engine);
        ENGINE_free(afalg_engine);
        afalg_engine = NULL;
    }
}

static ENGINE *get_afalg_engine(void)
{
    if (afalg_engine_tried)
        return afalg_engine;
    afalg_engine_tried = 1;
    ENGINE_load_builtin_engines();
    afalg_engine = ENGINE_by_id("afalg");
    if (afalg_engine == NULL) {
        /* Not built in: Debian ships it as a dynamic engine. */
        ENGINE *dyn = ENGINE_by_id("dynamic");
        const char *dir = getenv("OPENSSL_ENGINES");
        char path[512], built[400] = "";

        ERR_clear_error();
        if (dir == NULL) {
            /* "ENGINESDIR: \"/usr/lib/x86_64-linux-gnu/engines-3\"" */
            const char *v = strchr(OpenSSL_version(OPENSSL_ENGINES_DIR), '"');

            if (v != NULL)
                snprintf(built, sizeof(built), "%.*s", (int)strcspn(v + 1, "\""), v + 1);
            dir = built;
        }
        snprintf(path, sizeof(path), "%s/afalg.so", dir);
        if (dyn != NULL && ENGINE_ctrl_cmd_string(dyn, "SO_PATH", path, 0)
            && ENGINE_ctrl_cmd_string(dyn, "LOAD", NULL, 0)) {
            afalg_engine = dyn;
        } else {
            last_error(afalg_engine_why, sizeof(afalg_engine_why), path);
            ENGINE_free(dyn);
            return NULL;
        }
    }
    if (!ENGINE_init(afalg_engine)) {
        last_error(afalg_engine_why, sizeof(afalg_engine_why), "ENGINE_init(afalg)");
        ENGINE_free(afalg_engine);
        afalg_engine = NULL;
    }
    return afalg_engine;
}

void bench_open_engine(bench_set *s, const bench_alg *a)
{
    const char *name = "engine-afalg";
    char why[BENCH_WHY_MAX];
    evp_cipher_st *st;
    ENGINE *e;
    bench_inst *inst;

    if (a->mode != BENCH_CBC) {
        bench_set_absent(s, name, "the afalg engine offers only AES-CBC");
        return;
    }
    e = get_afalg_engine();
    if (e == NULL) {
        bench_set_absent(s, name, "%s", afalg_engine_why);
        return;
    }
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return;
    st->engine = e;
    st->cipher = ENGINE_get_cipher(e, a->nid);
    st->ctx = EVP_CIPHER_CTX_new();
    if (st->cipher == NULL || st->ctx == NULL
        || !EVP_EncryptInit_ex(st->ctx, st->cipher, e, bench_key, bench_iv)
        || !EVP_CIPHER_CTX_set_padding(st->ctx, 0)) {
        last_error(why, sizeof(why), "engine cipher init");
        bench_set_absent(s, name, "%s", why);
        evp_cipher_close(st);
        return;
    }
    inst = bench_set_add(s, name, BENCH_FAM_PEER);
    if (inst == NULL) {
        evp_cipher_close(st);
        return;
    }
    inst->ops = &evp_cipher_ops;
    inst->st = st;
    /*
     * The engine hands each update to one sendmsg: over the socket's send
     * buffer (about 208 KiB by default) that sendmsg waits for a reader that
     * never comes.  Larger buffers are not measured.
     */
    inst->maxlen = 128 * 1024;
    bench_proc_crypto_driver(a->kname, a->kind, inst->driver, sizeof(inst->driver));
}
#else
static void afalg_engine_close(void)
{
}

void bench_open_engine(bench_set *s, const bench_alg *a)
{
    (void)a;
    bench_set_absent(s, "engine-afalg", "this libcrypto has no ENGINE API (OPENSSL_NO_ENGINE)");
}
#endif

/* ---- reference ---- */

int bench_reference(const bench_alg *a, const unsigned char *in, size_t len,
                    unsigned char *out)
{
    int ok = 0;

    if (a->kind == BENCH_AEAD || a->kind == BENCH_MAC)
        return bench_reference_aead_mac(a, in, len, out);
    if (a->kind == BENCH_CIPHER) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(NULL, a->name, "provider=default");
        EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
        int outl = 0;

        ok = c != NULL && ctx != NULL
            && EVP_EncryptInit_ex2(ctx, c, bench_key, bench_iv, NULL)
            && EVP_CIPHER_CTX_set_padding(ctx, 0)
            && EVP_EncryptUpdate(ctx, out, &outl, in, (int)len)
            && (size_t)outl == len;
        EVP_CIPHER_CTX_free(ctx);
        EVP_CIPHER_free(c);
    } else {
        EVP_MD *m = EVP_MD_fetch(NULL, a->name, "provider=default");
        unsigned int mdlen = 0;

        ok = m != NULL && EVP_Digest(in, len, out, &mdlen, m, NULL);
        EVP_MD_free(m);
    }
    ERR_clear_error();
    return ok;
}
