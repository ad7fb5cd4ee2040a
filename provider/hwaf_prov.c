/*
 * The provider entry: configuration, the one-time probe of the kernel, the
 * algorithm tables built from what the probe found, and the provider's own
 * parameters.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <openssl/params.h>
#include "hwaf_local.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"
#include "hwaf_soft.h"
#include <hwaf/hwaf.h>

#define MAX_DRIVERS 8

static const hwaf_backend *const backends[HWAF_BE_COUNT] = {
    [HWAF_BE_AFALG] = &hwaf_backend_afalg,
    [HWAF_BE_DEVCRYPTO] = &hwaf_backend_devcrypto,
};

/*
 * What the kernel offers, probed once per process and backend (when a
 * provider load first enables it): which backends work and, per backend
 * and algorithm, the drivers that bind, and each one's known answer: run
 * by the probe with known_answers = load, else at the driver's first use
 * (hwaf_impl_verify).
 *
 * A probe during which a system call failed for want of resources
 * (EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN: see hwaf_sys_error) says nothing
 * about the kernel: its result is used by that load, reported as
 * temporary, and the backend is probed again at the next load.
 */
static struct {
    int done[HWAF_BE_COUNT];       /* the result is the kernel's: kept */
    int transient[HWAF_BE_COUNT];  /* the last probe met a passing shortage */
    int usable[HWAF_BE_COUNT];
    char why[HWAF_BE_COUNT][200];
    hwaf_driver drv[HWAF_BE_COUNT][HWAF_NALGS][MAX_DRIVERS];
    int ndrv[HWAF_BE_COUNT][HWAF_NALGS];
    /* Each driver's known answer: HWAF_KAT_UNKNOWN until it has run (with
     * known_answers = first_use, at the first kernel session or hash of
     * the driver: hwaf_impl_verify), then HWAF_KAT_PASSED or
     * HWAF_KAT_FAILED for the rest of the process. */
    signed char kat[HWAF_BE_COUNT][HWAF_NALGS][MAX_DRIVERS];
    int cached[HWAF_BE_COUNT];     /* the result came from the calibration file */
    /* The key of the kernel's state the result belongs to, "" when it has
     * none (a backend unusable, a probe cut short, /proc/crypto unreadable):
     * what hwaf-info --calibrate keeps with it (HWAF_PARAM_PROBE). */
    char key[HWAF_BE_COUNT][HWAF_PROBE_KEY_LEN];
} probe;

/*
 * The probe's lock: 0 when free, else (fork generation << 1) | 1.  A child
 * after fork() takes over a lock that a thread of its parent held (that
 * thread does not exist in the child), so a load in the child never
 * blocks; the half-done probe is simply done again.  Held through a probe
 * (many system calls): other loads wait, yielding the CPU.
 */
static unsigned long probe_lockword;

static void probe_lock(void)
{
    for (;;) {
        unsigned int gen = __atomic_load_n(&hwaf_fork_generation, __ATOMIC_SEQ_CST);
        unsigned long cur = __atomic_load_n(&probe_lockword, __ATOMIC_ACQUIRE);
        unsigned long mine = ((unsigned long)gen << 1) | 1;

        if ((cur == 0 || (unsigned int)(cur >> 1) != gen)
            && __atomic_compare_exchange_n(&probe_lockword, &cur, mine, 0,
                                           __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        sched_yield();
    }
}

static void probe_unlock(void)
{
    __atomic_store_n(&probe_lockword, 0, __ATOMIC_RELEASE);
}

/* Run the algorithm's known answer through one driver; errors of the
 * backend are raised on prov (none when NULL: the probe at load). */
static int known_answer(hwaf_prov *prov, const hwaf_backend *be, const hwaf_alg *alg,
                        const hwaf_driver *drv)
{
    hwaf_impl impl;
    unsigned char out[HWAF_MAX_MD > 64 ? HWAF_MAX_MD : 64];
    int ok = 0;

    memset(&impl, 0, sizeof(impl));
    impl.prov = prov;
    impl.alg = alg;
    impl.be = be;
    impl.drv = *drv;
    if (be->impl_init != NULL && !be->impl_init(&impl))
        return 0;
    hwaf_stats_quiet(1);   /* not the callers' work */
    if (alg->kind == HWAF_KIND_CIPHER) {
        hwaf_be_cipher *s;

        if (be->cipher_open(&s, &impl, alg->kat_key, alg->keylen)) {
            ok = be->cipher_crypt(s, 1, alg->kat_iv, alg->kat_in, out, alg->kat_inlen)
                 && memcmp(out, alg->kat_out, alg->kat_inlen) == 0
                 && be->cipher_crypt(s, 0, alg->kat_iv, alg->kat_out, out, alg->kat_inlen)
                 && memcmp(out, alg->kat_in, alg->kat_inlen) == 0;
            be->cipher_close(s);
        }
    } else if (alg->kind == HWAF_KIND_AEAD) {
        hwaf_be_aead *s;
        unsigned char tag[HWAF_GCM_TAG];

        if (be->aead_open(&s, &impl, alg->kat_key, alg->keylen)) {
            ok = be->aead_crypt(s, 1, alg->kat_iv, NULL, 0, alg->kat_in, out,
                                alg->kat_inlen, tag, 0) == 1
                 && memcmp(out, alg->kat_out, alg->kat_inlen) == 0
                 && memcmp(tag, alg->kat_out + alg->kat_inlen, sizeof(tag)) == 0
                 && be->aead_crypt(s, 0, alg->kat_iv, NULL, 0, alg->kat_out, out,
                                   alg->kat_inlen, tag, 0) == 1
                 && memcmp(out, alg->kat_in, alg->kat_inlen) == 0;
            /* ...and a wrong tag must be refused. */
            tag[0] ^= 1;
            ok = ok && be->aead_crypt(s, 0, alg->kat_iv, NULL, 0, alg->kat_out, out,
                                      alg->kat_inlen, tag, 0) == -1;
            be->aead_close(s);
        }
    } else {
        hwaf_be_md *s;

        if (alg->kind == HWAF_KIND_MAC ? be->mac_open(&s, &impl, alg->kat_key, alg->keylen)
                                       : be->md_open(&s, &impl)) {
            ok = be->md_update(s, alg->kat_in, alg->kat_inlen)
                 && be->md_final(s, out)
                 && memcmp(out, alg->kat_out, alg->mdlen) == 0;
            be->md_close(s);
        }
    }
    if (be->impl_free != NULL)
        be->impl_free(&impl);
    hwaf_stats_quiet(0);
    return ok;
}

/*
 * The calibration file's probe result for backend b when it was taken in the
 * kernel's present state (the key, hwaf_probe_cache.c): 1 and probe.drv
 * filled from it, else 0 and a debug line saying why not.
 */
static int probe_from_cache(int b, const hwaf_config *cfg, const char *key)
{
    const hwaf_backend *be = backends[b];
    const char *kept = hwaf_calib_probe_key(cfg->calib, be->name);
    int a, n = 0;

    if (kept == NULL) {
        HWAF_DEBUG("probe cache: %s: %s", be->name,
                   cfg->calib == NULL ? "no calibration file"
                                      : "the calibration file keeps no probe result");
        return 0;
    }
    if (key == NULL) {
        HWAF_DEBUG("probe cache: %s: the kernel's state cannot be read: full probe",
                   be->name);
        return 0;
    }
    if (strcmp(kept, key) != 0) {
        HWAF_DEBUG("probe cache: %s: kept for key %s, the kernel's state is now %s "
                   "(another kernel release, driver set or device): full probe",
                   be->name, kept, key);
        return 0;
    }
    for (a = 0; a < HWAF_NALGS; a++) {
        probe.ndrv[b][a] = hwaf_calib_probe_drivers(cfg->calib, be->name, &hwaf_algs[a],
                                                    probe.drv[b][a], MAX_DRIVERS);
        n += probe.ndrv[b][a];
        /* hwaf-info --calibrate keeps only drivers that passed */
        memset(probe.kat[b][a], HWAF_KAT_PASSED, sizeof(probe.kat[b][a]));
    }
    HWAF_DEBUG("probe cache: %s: key %s matches: %d drivers from %s, no known answers "
               "run", be->name, key, n, cfg->calibration);
    return 1;
}

/* Probe backend b; registry: the hash of /proc/crypto, NULL when unread. */
static void probe_backend(int b, const hwaf_config *cfg, const uint64_t *registry)
{
    const hwaf_backend *be = backends[b];
    hwaf_driver found[MAX_DRIVERS];
    unsigned long shortages = hwaf_sys_transient_count();
    char key[HWAF_PROBE_KEY_LEN];
    int a, d, k, n, err;

    memset(probe.ndrv[b], 0, sizeof(probe.ndrv[b]));
    memset(probe.kat[b], HWAF_KAT_UNKNOWN, sizeof(probe.kat[b]));
    probe.why[b][0] = '\0';
    probe.key[b][0] = '\0';
    probe.cached[b] = 0;
    probe.usable[b] = be->available(probe.why[b], sizeof(probe.why[b]));
    HWAF_DEBUG("probe: backend %s: %s", be->name,
               probe.usable[b] ? "usable" : probe.why[b]);
    if (probe.usable[b] && registry != NULL)
        hwaf_probe_key(be, *registry, key, sizeof(key));
    if (probe.usable[b] && probe_from_cache(b, cfg, registry != NULL ? key : NULL)) {
        probe.cached[b] = 1;
        strcpy(probe.key[b], key);
    } else if (probe.usable[b]) {
        for (a = 0, n = 0; a < HWAF_NALGS; a++) {
            /* Key sizes of one mode share the kernel name (and sit side by
             * side in the table): list its drivers once; each key size
             * still runs its own known answer. */
            if ((hwaf_algs[a].kind == HWAF_KIND_AEAD && be->aead_open == NULL)
                || (hwaf_algs[a].kind == HWAF_KIND_MAC && be->mac_open == NULL)) {
                /* A backend without AEAD or keyed hashes offers none. */
                probe.ndrv[b][a] = 0;
                n = 0;
                continue;
            }
            if (a == 0 || hwaf_algs[a].kind != hwaf_algs[a - 1].kind
                || strcmp(hwaf_algs[a].kname, hwaf_algs[a - 1].kname) != 0)
                n = be->drivers(&hwaf_algs[a], found, MAX_DRIVERS);

            for (d = 0, k = 0; d < n; d++) {
                /* known_answers = first_use: each at the driver's first use */
                if (cfg->known_answers == HWAF_KAT_AT_LOAD
                    && !known_answer(NULL, be, &hwaf_algs[a], &found[d])) {
                    HWAF_DEBUG("probe: %s %s driver %s fails its known answer: not offered",
                               be->name, hwaf_algs[a].kname, found[d].name);
                    continue;
                }
                probe.kat[b][a][k] = cfg->known_answers == HWAF_KAT_AT_LOAD
                                     ? HWAF_KAT_PASSED : HWAF_KAT_UNKNOWN;
                probe.drv[b][a][k++] = found[d];
            }
            probe.ndrv[b][a] = k;
        }
    }
    if (be->probe_done != NULL)
        be->probe_done();
    if (hwaf_sys_transient_count() == shortages) {
        probe.done[b] = 1;
        probe.transient[b] = 0;
        return;
    }
    /* Not the kernel's answer: what was found is used by this load only. */
    err = hwaf_sys_transient_errno();
    probe.transient[b] = 1;
    HWAF_DEBUG("probe: backend %s: a system call failed with %s during the probe; "
               "probed again at the next load", be->name, strerror(err));
    if (!probe.usable[b] || probe.why[b][0] == '\0')
        snprintf(probe.why[b], sizeof(probe.why[b]), "%s during the probe",
                 strerror(err));
}

/*
 * Probe the backends cfg enables whose result is not known yet: from the
 * calibration file where it keeps a result for the kernel's present state,
 * else in full.  A full probe's result gets the key of the state after it
 * (the probe itself makes the kernel instantiate drivers, which /proc/crypto
 * then lists): the next process finds the same state.
 */
static void probe_kernel(const hwaf_config *cfg)
{
    uint64_t reg;
    int b, want = 0, have = 0;

    for (b = 0; b < HWAF_BE_COUNT; b++)
        want |= cfg->use_backend[b] && !probe.done[b];
    if (!want)
        return;
    /* The registry's hash only when a kept result may match it. */
    for (b = 0; b < HWAF_BE_COUNT; b++)
        if (cfg->use_backend[b] && !probe.done[b]
            && hwaf_calib_probe_key(cfg->calib, backends[b]->name) != NULL)
            have = 1;
    if (have)
        have = hwaf_probe_registry(&reg);
    for (b = 0; b < HWAF_BE_COUNT; b++)
        if (cfg->use_backend[b] && !probe.done[b])
            probe_backend(b, cfg, have ? &reg : NULL);
}

/*
 * The verdict of one run of the known answer through drv: HWAF_KAT_PASSED,
 * HWAF_KAT_FAILED, or HWAF_KAT_UNKNOWN when it could not run for a passing
 * shortage (hwaf_sys_error) or in a sandbox.  Errors raised on prov (none
 * when NULL).
 */
static int known_answer_verdict(hwaf_prov *prov, const hwaf_backend *be,
                                const hwaf_alg *alg, const hwaf_driver *drv)
{
    unsigned long shortages = hwaf_sys_transient_count();
    uint64_t refusals = hwaf_sandbox_refusals();

    if (known_answer(prov, be, alg, drv))
        return HWAF_KAT_PASSED;
    return hwaf_sys_transient_count() != shortages || hwaf_sandbox_refusals() != refusals
           ? HWAF_KAT_UNKNOWN : HWAF_KAT_FAILED;
}

/*
 * Run the known answer of driver d of backend b and algorithm a unless it
 * has run; the probe's lock held.  Returns its verdict (HWAF_KAT_*), kept
 * for the process, or HWAF_KAT_UNKNOWN when it could not run for a passing
 * shortage (hwaf_sys_error) or in a sandbox: nothing kept, it runs again at
 * the next use.  Errors of the run are raised on prov (none when NULL).
 */
static int verify_locked(hwaf_prov *prov, int b, int a, int d)
{
    int v;

    if (probe.kat[b][a][d] != HWAF_KAT_UNKNOWN)
        return probe.kat[b][a][d];
    v = known_answer_verdict(prov, backends[b], &hwaf_algs[a], &probe.drv[b][a][d]);
    if (v == HWAF_KAT_UNKNOWN) {
        HWAF_DEBUG("known answer: %s %s driver %s could not run (a passing shortage or "
                   "a sandbox): tried again at its next use", backends[b]->name,
                   hwaf_algs[a].kname, probe.drv[b][a][d].name);
        return HWAF_KAT_UNKNOWN;
    }
    probe.kat[b][a][d] = (signed char)v;
    HWAF_DEBUG("known answer: %s %s driver %s %s", backends[b]->name, hwaf_algs[a].kname,
               probe.drv[b][a][d].name,
               v == HWAF_KAT_PASSED ? "passes" : "fails: not used for the rest of the process");
    return probe.kat[b][a][d];
}

/* Every driver of backend b not verified yet, verified now (probe lock
 * held): 1, or 0 when one could not run (its verdict stays unknown). */
static int verify_all_locked(int b)
{
    int a, d, all = 1;

    for (a = 0; a < HWAF_NALGS; a++)
        for (d = 0; d < probe.ndrv[b][a]; d++)
            all &= verify_locked(NULL, b, a, d) != HWAF_KAT_UNKNOWN;
    return all;
}

/* hwaf_verify_fn (prov->verify): the first answer for impl, whose own
 * verdict hwaf_impl_verify found unknown. */
static int probe_verify(const hwaf_impl *impl)
{
    hwaf_impl *m = (hwaf_impl *)impl;
    int a = (int)(impl->alg - hwaf_algs), b = impl->be_index, d, v;

    probe_lock();
    /* The probe's list, by name: a later load's probe (after a passing
     * shortage) may have listed it again, at another place. */
    for (d = 0; d < probe.ndrv[b][a]; d++)
        if (strcmp(probe.drv[b][a][d].name, impl->drv.name) == 0)
            break;
    /* Gone from the list: verified for this implementation alone. */
    v = d < probe.ndrv[b][a] ? verify_locked(impl->prov, b, a, d)
        : known_answer_verdict(impl->prov, impl->be, impl->alg, &impl->drv);
    probe_unlock();
    if (v != HWAF_KAT_UNKNOWN)
        __atomic_store_n(&m->kat, v, __ATOMIC_RELEASE);
    return v;
}

/* The best driver of the wanted class, or NULL. */
static const hwaf_driver *pick(int b, int a, int hw, const hwaf_config *cfg)
{
    int d;

    /* Drivers come sorted by kernel priority, highest first; one that
     * failed its known answer is never offered, one not verified yet only
     * with known_answers = first_use. */
    for (d = 0; d < probe.ndrv[b][a]; d++)
        if (probe.kat[b][a][d] != HWAF_KAT_FAILED
            && (probe.kat[b][a][d] == HWAF_KAT_PASSED
                || cfg->known_answers == HWAF_KAT_AT_FIRST_USE)
            && hwaf_classify(&probe.drv[b][a][d], cfg) == hw)
            return &probe.drv[b][a][d];
    return NULL;
}

static const char *const properties[HWAF_BE_COUNT][2] = {
    [HWAF_BE_AFALG] = { "provider=hwaf,hwaf.hw=no,hwaf.backend=afalg",
                        "provider=hwaf,hwaf.hw=yes,hwaf.backend=afalg" },
    [HWAF_BE_DEVCRYPTO] = { "provider=hwaf,hwaf.hw=no,hwaf.backend=devcrypto",
                            "provider=hwaf,hwaf.hw=yes,hwaf.backend=devcrypto" },
};

/*
 * Order of implementations of one algorithm: OpenSSL takes the first that
 * matches a query, so the preferred one goes first.  With prefer = auto:
 * hardware before software, then /dev/crypto (one ioctl per operation)
 * before AF_ALG (two system calls).
 */
static int rank(const hwaf_config *cfg, int b, int hw)
{
    int be_rank = cfg->prefer >= 0 ? (b == cfg->prefer ? 0 : 1)
                                   : (b == HWAF_BE_DEVCRYPTO ? 0 : 1);

    return cfg->prefer >= 0 ? be_rank * 2 + !hw : !hw * 2 + be_rank;
}

static int build_tables(hwaf_prov *prov)
{
    size_t nc = 0, nd = 0, nm = 0;
    int a, b, hw, r, s;

    for (a = 0; a < HWAF_NALGS; a++) {
        for (b = 0; b < HWAF_BE_COUNT; b++) {
            if (!prov->cfg.use_backend[b] || !probe.usable[b])
                continue;
            for (hw = 1; hw >= 0; hw--) {
                const hwaf_driver *drv;
                hwaf_impl *impl;

                if (!hw && !prov->cfg.allow_software)
                    continue;
                if ((drv = pick(b, a, hw, &prov->cfg)) == NULL)
                    continue;
                impl = OPENSSL_zalloc(sizeof(*impl));
                if (impl == NULL)
                    return 0;
                impl->prov = prov;
                impl->alg = &hwaf_algs[a];
                impl->be = backends[b];
                impl->drv = *drv;
                impl->drv.req_max = hwaf_request_max(&prov->cfg, drv, &impl->req_src);
                impl->hw = hw;
                impl->be_index = b;
                impl->zerocopy = prov->cfg.zerocopy;
                impl->zerocopy_min = prov->cfg.zerocopy_min;
                impl->kat = probe.kat[b][a][drv - probe.drv[b][a]];
                prov->slot[a][HWAF_SLOT(b, hw)] = impl;
                if (impl->be->impl_init != NULL && !impl->be->impl_init(impl))
                    return 0;
                /* the software path (impl->soft) at first need, not here */
                hwaf_threshold_assign(impl, &prov->cfg);
                if (hwaf_algs[a].kind == HWAF_KIND_CIPHER
                    || hwaf_algs[a].kind == HWAF_KIND_AEAD)
                    nc++;
                else if (hwaf_algs[a].kind == HWAF_KIND_DIGEST)
                    nd++;
            }
        }
    }

    prov->ciphers = OPENSSL_zalloc((nc + 1) * sizeof(OSSL_ALGORITHM));
    prov->digests = OPENSSL_zalloc((nd + 1) * sizeof(OSSL_ALGORITHM));
    prov->macs = OPENSSL_zalloc((HWAF_NSLOTS + 1) * sizeof(OSSL_ALGORITHM));
    if (prov->ciphers == NULL || prov->digests == NULL || prov->macs == NULL)
        return 0;
    nc = nd = 0;
    /* One "HMAC" per slot that serves at least one of its digests. */
    for (r = 0; r < 4; r++) {
        for (b = 0; b < HWAF_BE_COUNT; b++) {
            for (hw = 0; hw <= 1; hw++) {
                s = HWAF_SLOT(b, hw);
                if (rank(&prov->cfg, b, hw) != r)
                    continue;
                for (a = 0; a < HWAF_NALGS; a++)
                    if (hwaf_algs[a].kind == HWAF_KIND_MAC && prov->slot[a][s] != NULL)
                        break;
                if (a == HWAF_NALGS)
                    continue;
                prov->macs[nm].algorithm_names = "HMAC";
                prov->macs[nm].property_definition = properties[b][hw];
                prov->macs[nm].implementation = hwaf_mac_dispatch(s);
                prov->macs[nm].algorithm_description = prov->slot[a][s]->drv.name;
                nm++;
            }
        }
    }
    for (a = 0; a < HWAF_NALGS; a++) {
        for (r = 0; r < 4; r++) {
            for (b = 0; b < HWAF_BE_COUNT; b++) {
                for (hw = 0; hw <= 1; hw++) {
                    hwaf_impl *impl = prov->slot[a][HWAF_SLOT(b, hw)];
                    OSSL_ALGORITHM *alg;
                    size_t nlen;

                    if (impl == NULL || rank(&prov->cfg, b, hw) != r)
                        continue;
                    nlen = strcspn(hwaf_algs[a].names, ":");
                    HWAF_DEBUG("offer %.*s via %s driver %s hw=%s", (int)nlen,
                               hwaf_algs[a].names, backends[b]->name, impl->drv.name,
                               hw ? "yes" : "no");
                    if (hwaf_algs[a].kind == HWAF_KIND_MAC)
                        continue;   /* offered above, once per slot */
                    if (hwaf_algs[a].kind == HWAF_KIND_CIPHER) {
                        alg = &prov->ciphers[nc++];
                        alg->implementation = hwaf_cipher_dispatch(a, HWAF_SLOT(b, hw));
                    } else if (hwaf_algs[a].kind == HWAF_KIND_AEAD) {
                        alg = &prov->ciphers[nc++];
                        alg->implementation = hwaf_aead_dispatch(a, HWAF_SLOT(b, hw));
                    } else {
                        alg = &prov->digests[nd++];
                        alg->implementation = hwaf_digest_dispatch(a, HWAF_SLOT(b, hw));
                    }
                    alg->algorithm_names = hwaf_algs[a].names;
                    alg->property_definition = properties[b][hw];
                    alg->algorithm_description = impl->drv.name;
                }
            }
        }
    }
    return 1;
}

/*
 * The tables as text (HWAF_PARAM_ALGORITHMS, HWAF_PARAM_THRESHOLDS,
 * HWAF_PARAM_REQUEST_MAX), the configuration in effect (HWAF_PARAM_CONFIG)
 * and the buildinfo that carries them, the tables in the order the
 * implementations are offered.  Built at the first request for
 * one of them, not at load: what they say is fixed at load (the
 * implementations, their thresholds and request limits, the backends'
 * status), and a load that is never asked (most) does not format them.
 */
static int texts_build(hwaf_prov *prov)
{
    size_t textlen = 0, len;
    int a, b, hw, r;
    char *t, *th, *tr, tb[32];

    if (prov->cfg.text == NULL) {
        __atomic_store_n(&prov->cfg.text, hwaf_config_text(&prov->cfg), __ATOMIC_RELEASE);
        if (prov->cfg.text == NULL)
            return 0;
    }

    for (a = 0; a < HWAF_NALGS; a++)
        for (r = 0; r < HWAF_NSLOTS; r++)
            if (prov->slot[a][r] != NULL)
                textlen += strlen(hwaf_algs[a].names) + strlen(prov->slot[a][r]->drv.name)
                           + 80;
    /* A threshold is only known once the software path is: an
     * implementation without one is always the kernel (hwaf_soft.h). */
    for (a = 0; a < HWAF_NALGS; a++)
        for (r = 0; r < HWAF_NSLOTS; r++)
            if (prov->slot[a][r] != NULL)
                hwaf_soft_ready(prov->slot[a][r]);
    prov->algorithms_text = t = OPENSSL_zalloc(textlen + 1);
    prov->thresholds_text = th = OPENSSL_zalloc(textlen + 64);
    prov->request_max_text = tr = OPENSSL_zalloc(textlen + 1);
    if (t == NULL || th == NULL || tr == NULL)
        return 0;
    th += sprintf(th, "policy=%s\n",
                  prov->cfg.policy == HWAF_POLICY_CPU ? "cpu" : "throughput");
    for (a = 0; a < HWAF_NALGS; a++) {
        for (r = 0; r < 4; r++) {
            for (b = 0; b < HWAF_BE_COUNT; b++) {
                for (hw = 0; hw <= 1; hw++) {
                    hwaf_impl *impl = prov->slot[a][HWAF_SLOT(b, hw)];
                    size_t nlen;

                    if (impl == NULL || rank(&prov->cfg, b, hw) != r)
                        continue;
                    nlen = strcspn(hwaf_algs[a].names, ":");
                    t += sprintf(t, "%.*s %s %s hw=%s\n", (int)nlen, hwaf_algs[a].names,
                                 backends[b]->name, impl->drv.name, hw ? "yes" : "no");
                    th += sprintf(th, "%.*s %s %s offload_min=%s source=%s\n", (int)nlen,
                                  hwaf_algs[a].names, backends[b]->name, impl->drv.name,
                                  hwaf_threshold_text(impl->offload_min, tb, sizeof(tb)),
                                  hwaf_src_names[impl->offload_src]);
                    if (impl->drv.req_max == 0)
                        snprintf(tb, sizeof(tb), "unlimited");
                    else
                        snprintf(tb, sizeof(tb), "%zu", impl->drv.req_max);
                    tr += sprintf(tr, "%.*s %s %s request_max=%s source=%s\n", (int)nlen,
                                  hwaf_algs[a].names, backends[b]->name, impl->drv.name,
                                  tb, hwaf_src_names[impl->req_src]);
                }
            }
        }
    }
    /* buildinfo is what `openssl list -providers -verbose` prints: the
     * backend status, the configuration in effect, the offload
     * thresholds and the request limits (one line each, joined by ';') go
     * there too. */
    len = 128 + sizeof(prov->be_status) + strlen(prov->cfg.text)
          + strlen(prov->thresholds_text) + strlen(prov->request_max_text);
    t = OPENSSL_malloc(len);
    if (t != NULL) {
        char *p = t, *e = p + len, *q;

        p += snprintf(p, e - p, "hwaf %s for %s; afalg: %s; devcrypto: %s; "
                      "config: %s; offload thresholds ", HWAF_VERSION_STR,
                      OPENSSL_VERSION_TEXT, prov->be_status[HWAF_BE_AFALG],
                      prov->be_status[HWAF_BE_DEVCRYPTO], prov->cfg.text);
        snprintf(p, e - p, "%srequest limits %s", prov->thresholds_text,
                 prov->request_max_text);
        for (q = p; *q != '\0'; q++)
            if (*q == '\n')
                *q = q[1] != '\0' ? ';' : '\0';
    }
    /* Last: a reader that finds buildinfo finds the rest. */
    __atomic_store_n(&prov->buildinfo, t, __ATOMIC_RELEASE);
    return t != NULL;
}

/* The texts above, built at the first request: 0 when out of memory. */
static int texts_get(hwaf_prov *prov)
{
    int ok;

    if (__atomic_load_n(&prov->buildinfo, __ATOMIC_ACQUIRE) != NULL)
        return 1;
    probe_lock();
    if (prov->buildinfo != NULL) {
        ok = 1;
    } else {
        OPENSSL_free(prov->algorithms_text);   /* an earlier try's, out of memory */
        OPENSSL_free(prov->thresholds_text);
        OPENSSL_free(prov->request_max_text);
        prov->algorithms_text = prov->thresholds_text = prov->request_max_text = NULL;
        ok = texts_build(prov);
    }
    probe_unlock();
    return ok;
}

static void prov_free(hwaf_prov *prov)
{
    int a, s;

    if (prov == NULL)
        return;
    for (a = 0; a < HWAF_NALGS; a++) {
        for (s = 0; s < HWAF_NSLOTS; s++) {
            hwaf_impl *impl = prov->slot[a][s];

            hwaf_digest_spare_free(prov->md_spare[a][s]);
            if (impl != NULL && impl->be->impl_free != NULL)
                impl->be->impl_free(impl);
            if (impl != NULL)
                hwaf_soft_impl_free(impl);
            OPENSSL_free(impl);
        }
    }
    OPENSSL_free(prov->ciphers);
    OPENSSL_free(prov->digests);
    OPENSSL_free(prov->macs);
    OPENSSL_free(prov->algorithms_text);
    OPENSSL_free(prov->thresholds_text);
    OPENSSL_free(prov->request_max_text);
    OPENSSL_free(prov->probe_text);
    OPENSSL_free(prov->buildinfo);
    hwaf_config_free(&prov->cfg);
    OPENSSL_free(prov);
}

/* ---- provider dispatch ---- */

static char *probe_text(const hwaf_prov *prov);

static OSSL_FUNC_provider_teardown_fn prov_teardown;
static OSSL_FUNC_provider_gettable_params_fn prov_gettable_params;
static OSSL_FUNC_provider_get_params_fn prov_get_params;
static OSSL_FUNC_provider_query_operation_fn prov_query;
static OSSL_FUNC_provider_get_reason_strings_fn prov_reason_strings;

static void prov_teardown(void *provctx)
{
    uint64_t ops[HWAF_BE_COUNT], bytes[HWAF_BE_COUNT], sops, sbytes;
    int b;

    /* What this process handed to the kernel: proof, in the debug log,
     * that an application configured only through openssl.cnf used hwaf. */
    for (b = 0; b < HWAF_BE_COUNT; b++)
        hwaf_stats_get(b, &ops[b], &bytes[b]);
    hwaf_stats_get_soft(&sops, &sbytes);
    HWAF_DEBUG("unload: afalg %llu ops %llu bytes, devcrypto %llu ops %llu bytes, "
               "software %llu ops %llu bytes, fallbacks %llu descriptors %llu sandbox "
               "%llu known answer",
               (unsigned long long)ops[HWAF_BE_AFALG],
               (unsigned long long)bytes[HWAF_BE_AFALG],
               (unsigned long long)ops[HWAF_BE_DEVCRYPTO],
               (unsigned long long)bytes[HWAF_BE_DEVCRYPTO],
               (unsigned long long)sops, (unsigned long long)sbytes,
               (unsigned long long)hwaf_stats_fallbacks(HWAF_FALLBACK_DESCRIPTORS),
               (unsigned long long)hwaf_stats_fallbacks(HWAF_FALLBACK_SANDBOX),
               (unsigned long long)hwaf_stats_fallbacks(HWAF_FALLBACK_KNOWN_ANSWER));
    hwaf_stats_flush();
    prov_free(provctx);
}

static const OSSL_PARAM prov_param_types[] = {
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_NAME, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_VERSION, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_BUILDINFO, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(OSSL_PROV_PARAM_STATUS, OSSL_PARAM_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AFALG_STATUS, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_DEVCRYPTO_STATUS, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_ALGORITHMS, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_CONFIG, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AFALG_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AFALG_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_DEVCRYPTO_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_DEVCRYPTO_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AFALG_SPLICED_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_CIPHER_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_CIPHER_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_DIGEST_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_DIGEST_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AEAD_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_AEAD_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_MAC_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_MAC_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_SOFTWARE_OPS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_SOFTWARE_BYTES, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_FALLBACKS_DESCRIPTORS, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_FALLBACKS_SANDBOX, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_FALLBACKS_KNOWN_ANSWER, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_SOFTWARE_READY, OSSL_PARAM_UNSIGNED_INTEGER, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_THRESHOLDS, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_REQUEST_MAX, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_DEFN(HWAF_PARAM_PROBE, OSSL_PARAM_UTF8_PTR, NULL, 0),
    OSSL_PARAM_END
};

static const OSSL_PARAM *prov_gettable_params(void *provctx)
{
    return prov_param_types;
}

static int set_str(OSSL_PARAM params[], const char *key, const char *v)
{
    OSSL_PARAM *p = OSSL_PARAM_locate(params, key);

    if (p == NULL)
        return 1;
    if (p->data_type == OSSL_PARAM_UTF8_STRING)
        return OSSL_PARAM_set_utf8_string(p, v);
    return OSSL_PARAM_set_utf8_ptr(p, v);
}

static char *config_text(const hwaf_prov *prov)
{
    return hwaf_config_text(&prov->cfg);
}

/*
 * A text built at its first request, not at load (HWAF_PARAM_CONFIG,
 * HWAF_PARAM_PROBE): *slot, built by build() under the probe's lock (the
 * configuration's is also built by texts_build(), under the same lock),
 * set into params' key when it is asked for.
 */
static int set_text_once(hwaf_prov *prov, OSSL_PARAM params[], const char *key,
                         char **slot, char *(*build)(const hwaf_prov *))
{
    char *t;

    if (OSSL_PARAM_locate(params, key) == NULL)
        return 1;
    if ((t = __atomic_load_n(slot, __ATOMIC_ACQUIRE)) == NULL) {
        probe_lock();
        if ((t = *slot) == NULL) {
            t = build(prov);
            __atomic_store_n(slot, t, __ATOMIC_RELEASE);
        }
        probe_unlock();
    }
    if (t == NULL) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    return set_str(params, key, t);
}

static int set_u64(OSSL_PARAM params[], const char *key, uint64_t v)
{
    OSSL_PARAM *p = OSSL_PARAM_locate(params, key);

    return p == NULL || OSSL_PARAM_set_uint64(p, v);
}

/* The per-kind counters, [hwaf_kind] = { ops, bytes }. */
static const char *const kind_params[HWAF_KIND_COUNT][2] = {
    [HWAF_KIND_CIPHER] = { HWAF_PARAM_CIPHER_OPS, HWAF_PARAM_CIPHER_BYTES },
    [HWAF_KIND_DIGEST] = { HWAF_PARAM_DIGEST_OPS, HWAF_PARAM_DIGEST_BYTES },
    [HWAF_KIND_AEAD] = { HWAF_PARAM_AEAD_OPS, HWAF_PARAM_AEAD_BYTES },
    [HWAF_KIND_MAC] = { HWAF_PARAM_MAC_OPS, HWAF_PARAM_MAC_BYTES },
};

static int prov_get_params(void *provctx, OSSL_PARAM params[])
{
    hwaf_prov *prov = provctx;
    OSSL_PARAM *p;
    uint64_t ops, bytes;
    int k;

    if ((OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO) != NULL
         || OSSL_PARAM_locate(params, HWAF_PARAM_ALGORITHMS) != NULL
         || OSSL_PARAM_locate(params, HWAF_PARAM_THRESHOLDS) != NULL
         || OSSL_PARAM_locate(params, HWAF_PARAM_REQUEST_MAX) != NULL)
        && !texts_get(prov)) {
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        return 0;
    }
    if (!set_str(params, OSSL_PROV_PARAM_NAME, "hwaf: Linux kernel crypto API offload")
        || !set_str(params, OSSL_PROV_PARAM_VERSION, HWAF_VERSION_STR)
        || !set_str(params, OSSL_PROV_PARAM_BUILDINFO, prov->buildinfo)
        || !set_str(params, HWAF_PARAM_AFALG_STATUS, prov->be_status[HWAF_BE_AFALG])
        || !set_str(params, HWAF_PARAM_DEVCRYPTO_STATUS, prov->be_status[HWAF_BE_DEVCRYPTO])
        || !set_str(params, HWAF_PARAM_ALGORITHMS, prov->algorithms_text)
        || !set_str(params, HWAF_PARAM_THRESHOLDS, prov->thresholds_text)
        || !set_str(params, HWAF_PARAM_REQUEST_MAX, prov->request_max_text))
        return 0;
    if (!set_text_once(prov, params, HWAF_PARAM_CONFIG, &prov->cfg.text, config_text)
        || !set_text_once(prov, params, HWAF_PARAM_PROBE, &prov->probe_text, probe_text))
        return 0;
    hwaf_stats_get_soft(&ops, &bytes);
    if (!set_u64(params, HWAF_PARAM_SOFTWARE_OPS, ops)
        || !set_u64(params, HWAF_PARAM_SOFTWARE_BYTES, bytes)
        || !set_u64(params, HWAF_PARAM_FALLBACKS_DESCRIPTORS,
                    hwaf_stats_fallbacks(HWAF_FALLBACK_DESCRIPTORS))
        || !set_u64(params, HWAF_PARAM_FALLBACKS_SANDBOX,
                    hwaf_stats_fallbacks(HWAF_FALLBACK_SANDBOX))
        || !set_u64(params, HWAF_PARAM_FALLBACKS_KNOWN_ANSWER,
                    hwaf_stats_fallbacks(HWAF_FALLBACK_KNOWN_ANSWER))
        || !set_u64(params, HWAF_PARAM_SOFTWARE_READY,
                    (uint64_t)__atomic_load_n(&prov->soft_ready, __ATOMIC_RELAXED)))
        return 0;
    if ((p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS)) != NULL
        && !OSSL_PARAM_set_int(p, 1))
        return 0;
    hwaf_stats_get(HWAF_BE_AFALG, &ops, &bytes);
    if (!set_u64(params, HWAF_PARAM_AFALG_OPS, ops)
        || !set_u64(params, HWAF_PARAM_AFALG_BYTES, bytes)
        || !set_u64(params, HWAF_PARAM_AFALG_SPLICED_BYTES, hwaf_stats_spliced()))
        return 0;
    hwaf_stats_get(HWAF_BE_DEVCRYPTO, &ops, &bytes);
    if (!set_u64(params, HWAF_PARAM_DEVCRYPTO_OPS, ops)
        || !set_u64(params, HWAF_PARAM_DEVCRYPTO_BYTES, bytes))
        return 0;
    for (k = 0; k < HWAF_KIND_COUNT; k++) {
        hwaf_stats_get_kind((hwaf_kind)k, &ops, &bytes);
        if (!set_u64(params, kind_params[k][0], ops) || !set_u64(params, kind_params[k][1], bytes))
            return 0;
    }
    return 1;
}

static const OSSL_ALGORITHM *prov_query(void *provctx, int operation_id,
                                        int *no_cache)
{
    hwaf_prov *prov = provctx;

    *no_cache = 0;
    switch (operation_id) {
    case OSSL_OP_CIPHER:
        return prov->ciphers;
    case OSSL_OP_DIGEST:
        return prov->digests;
    case OSSL_OP_MAC:
        return prov->macs;
    }
    return NULL;
}

static const OSSL_ITEM *prov_reason_strings(void *provctx)
{
    return hwaf_reason_strings;
}

static const OSSL_DISPATCH prov_dispatch[] = {
    { OSSL_FUNC_PROVIDER_TEARDOWN, (void (*)(void))prov_teardown },
    { OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, (void (*)(void))prov_gettable_params },
    { OSSL_FUNC_PROVIDER_GET_PARAMS, (void (*)(void))prov_get_params },
    { OSSL_FUNC_PROVIDER_QUERY_OPERATION, (void (*)(void))prov_query },
    { OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, (void (*)(void))prov_reason_strings },
    { 0, NULL }
};

/*
 * HWAF_PARAM_PROBE: the probe results of the backends this load enables,
 * what hwaf-info --calibrate keeps (the probe's lock held).  Built when
 * asked, not at load: every driver not verified yet runs its known answer
 * first, and the text lists only drivers that passed, so that a load that
 * takes the kept result offers only verified drivers; a backend one of
 * whose known answers could not run (a passing shortage), or whose probe
 * was cut short, has no result to keep.  The key is taken here too (one
 * more read of /proc/crypto): after the probe and the known answers, the
 * kernel's state as the next process finds it.
 */
static char *probe_text(const hwaf_prov *prov)
{
    size_t len = 1;
    char *t, *p, tok[64];
    uint64_t reg;
    int b, a, d, have = -1;

    for (b = 0; b < HWAF_BE_COUNT; b++)
        for (a = 0; a < HWAF_NALGS; a++)
            len += 64 + (size_t)probe.ndrv[b][a] * (2 * HWAF_DRIVER_NAME_MAX + 64);
    if ((p = t = OPENSSL_zalloc(len)) == NULL)
        return NULL;
    for (b = 0; b < HWAF_BE_COUNT; b++) {
        if (!prov->cfg.use_backend[b] || !probe.usable[b] || !probe.done[b]
            || probe.transient[b] || !verify_all_locked(b))
            continue;
        if (probe.key[b][0] == '\0') {
            if (have < 0)
                have = hwaf_probe_registry(&reg);
            if (have)
                hwaf_probe_key(backends[b], reg, probe.key[b], sizeof(probe.key[b]));
        }
        if (probe.key[b][0] == '\0')
            continue;
        p += sprintf(p, "probe %s %s\n", backends[b]->name, probe.key[b]);
        for (a = 0; a < HWAF_NALGS; a++) {
            hwaf_probe_alg_token(&hwaf_algs[a], tok, sizeof(tok));
            for (d = 0; d < probe.ndrv[b][a]; d++)
                if (probe.kat[b][a][d] == HWAF_KAT_PASSED)
                    p += sprintf(p, "driver %s %s %s %d %d %zu\n", backends[b]->name, tok,
                                 probe.drv[b][a][d].name, probe.drv[b][a][d].priority,
                                 probe.drv[b][a][d].hw, probe.drv[b][a][d].req_max);
        }
    }
    return t;
}

static void describe_backends(hwaf_prov *prov)
{
    int b, a, n;

    for (b = 0; b < HWAF_BE_COUNT; b++) {
        int found = 0;

        for (a = 0, n = 0; a < HWAF_NALGS; a++) {
            n += prov->slot[a][HWAF_SLOT(b, 0)] != NULL
                 || prov->slot[a][HWAF_SLOT(b, 1)] != NULL;
            found += probe.ndrv[b][a] > 0;
        }
        if (!prov->cfg.use_backend[b])
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]),
                     "disabled by the configuration (backends)");
        else if (probe.transient[b])
            /* Not the kernel's fault, and not for good. */
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]),
                     "unavailable for now: %s; %d of %d algorithms offered; "
                     "probed again when hwaf is next loaded", probe.why[b], n,
                     HWAF_NALGS);
        else if (!probe.usable[b])
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]), "unusable: %s",
                     probe.why[b]);
        else if (n == 0 && found == 0)
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]),
                     "unusable: the kernel serves none of the %d algorithms through it "
                     "(no driver binds and passes its known answer)", HWAF_NALGS);
        else if (n == 0)
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]),
                     "offers nothing: the configuration rules out every driver found "
                     "(allow_software, hw_drivers, sw_drivers)");
        else
            snprintf(prov->be_status[b], sizeof(prov->be_status[b]),
                     "usable, %d of %d algorithms offered%s", n, HWAF_NALGS,
                     probe.cached[b] ? " (probe result cached)"
                     : prov->cfg.known_answers == HWAF_KAT_AT_FIRST_USE
                     ? " (known answers at first use)" : "");
        HWAF_DEBUG("%s: status: %s", backends[b]->name, prov->be_status[b]);
    }
}

int hwaf_provider_init(const OSSL_CORE_HANDLE *handle, const OSSL_DISPATCH *in,
                       const OSSL_DISPATCH **out, void **provctx)
{
    hwaf_prov *prov;

    hwaf_err_init(in);
    prov = OPENSSL_zalloc(sizeof(*prov));
    if (prov == NULL)
        return 0;
    prov->handle = handle;
    prov->verify = probe_verify;
    if (!hwaf_config_load(handle, in, prov, &prov->cfg))
        goto err;
    if (!hwaf_fork_init()) {
        HWAF_RAISE(prov, HWAF_R_FORK_RECOVERY_FAILED, "pthread_atfork failed");
        goto err;
    }
    hwaf_stats_init();
    hwaf_sandbox_init();
    probe_lock();
    probe_kernel(&prov->cfg);
    if (prov->cfg.known_answers == HWAF_KAT_AT_LOAD) {
        int b;

        /* drivers an earlier load in this process left for first use */
        for (b = 0; b < HWAF_BE_COUNT; b++)
            if (prov->cfg.use_backend[b] && probe.usable[b])
                verify_all_locked(b);
    }
    if (!build_tables(prov)) {
        probe_unlock();
        HWAF_RAISE(prov, HWAF_R_MALLOC_FAILURE, NULL);
        goto err;
    }
    describe_backends(prov);
    probe_unlock();
    *out = prov_dispatch;
    *provctx = prov;
    return 1;
 err:
    prov_free(prov);
    return 0;
}
