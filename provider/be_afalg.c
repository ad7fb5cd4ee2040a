/*
 * The AF_ALG backend: one transform socket per key (or hash), one operation
 * socket accepted from it.  A cipher or AEAD session keeps only its
 * operation socket (one descriptor): the kernel's accepted socket holds its
 * transform and key, and the transform's socket is needed again only for a
 * new key, which takes a new transform anyway.  A cipher operation is one sendmsg() carrying
 * the direction, the IV and the data, and one read() of the result straight
 * into the caller's buffer.  A hash is fed with send(MSG_MORE) and finished
 * with read(); accept() on its operation socket clones the running state.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <openssl/crypto.h>
#include "hwaf_backend.h"
#include "hwaf_err.h"
#include "hwaf_debug.h"
#include "afalg_sys.h"
#include "hwaf_sys.h"

#ifndef AF_ALG
#define AF_ALG 38
#endif

#define AFALG_MAX_REG 32
/* What we ask of an operation socket's send buffer; the kernel caps it. */
#define AFALG_SNDBUF_WANT (1u << 20)
#define AFALG_PAGE 4096u

struct hwaf_be_cipher_st {
    const hwaf_impl *impl;
    int tfm;
    int op;
    size_t max;
    int pipe[2];   /* zero-copy path, opened on first use */
    size_t round;  /* bytes per vmsplice/splice round */
};

/* Zero-copy rounds: as large as the pipe and the send buffer allow. */
#define AFALG_ROUND_WANT (256u * 1024)
#define AFALG_CALIBRATE_LEN (256u * 1024)

/* Whether splicing beats copying on this kernel: -1 not measured yet. */
static int zc_pays = -1;
/*
 * Who measures it: 0 nobody yet, else the fork generation of the process
 * whose thread measures, plus one.  No lock: a thread that cannot claim the
 * measurement copies meanwhile, and a child that finds its parent's claim
 * (the measuring thread is not in the child) claims it for itself.
 */
static unsigned int zc_claim;

struct hwaf_be_md_st {
    const hwaf_impl *impl;
    int op;
    int spare;   /* fork snapshot, -1 when none */
    int more;    /* data sent since the last read */
    int keyed;   /* an HMAC: its own keyed transform, never pooled */
    /* Sends made since the counters were last updated: they are counted
     * with the message's read (one update of the counters per message),
     * or when the object is closed; a child after fork() leaves its
     * parent's to the parent. */
    unsigned int tally_ops;
    uint64_t tally_bytes;
};

/* AEAD: one transform socket per key, one operation socket; one request per
 * message, AAD, data and tag together. */
struct hwaf_be_aead_st {
    const hwaf_impl *impl;
    int tfm;
    int op;
    size_t max;
};

/*
 * Per hash implementation: one transform socket (a hash transform holds no
 * state) and a few idle operation sockets.  OpenSSL 3.0 frees and recreates
 * the digest context on every EVP_DigestInit_ex(), so without this pool each
 * digest would cost socket + bind + accept + two close() on top of its send
 * and read.  The pool belongs to one process: a child empties it.
 */
#define MD_POOL_MAX 8
typedef struct md_pool_st {
    hwaf_mutex lock;  /* fork-safe: see hwaf_backend.h */
    unsigned int gen;
    int tfm;
    int n;
    int idle[MD_POOL_MAX];
} md_pool;

static const char *alg_type(const hwaf_alg *alg)
{
    switch (alg->kind) {
    case HWAF_KIND_CIPHER:
        return "skcipher";
    case HWAF_KIND_AEAD:
        return "aead";
    default:
        return "hash";
    }
}

/* The /proc/crypto types a driver of this kind is listed with. */
static const char *reg_types(const hwaf_alg *alg)
{
    switch (alg->kind) {
    case HWAF_KIND_CIPHER:
        return "skcipher";
    case HWAF_KIND_AEAD:
        return "aead";
    default:
        return "shash ahash";
    }
}

/* What a probe kept of the kernel's registry: dropped at its end. */
static void afalg_probe_done(void)
{
    afalg_registry_release();
    afalg_netlink_release();
}

static int afalg_available(char *why, size_t whylen)
{
    int fd;

    afalg_probe_done();   /* a probe starts from the registry as it is now */
    fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        int err = errno;

        hwaf_sys_error(err);
        if (hwaf_errno_transient(err))  /* the process's want, not the kernel's */
            snprintf(why, whylen, "socket(AF_ALG): %s", strerror(err));
        else
            snprintf(why, whylen, "socket(AF_ALG): %s: this kernel has no AF_ALG "
                     "(CONFIG_CRYPTO_USER_API_SKCIPHER/HASH)", strerror(err));
        return 0;
    }
    close(fd);
    return 1;
}

static int by_priority(const void *a, const void *b)
{
    const hwaf_driver *x = a, *y = b;

    return (y->priority > x->priority) - (y->priority < x->priority);
}

static int any_usable(const afalg_reginfo *reg, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (reg[i].selftest_ok)
            return 1;
    return 0;
}

static int afalg_drivers(const hwaf_alg *alg, hwaf_driver *out, int max)
{
    afalg_reginfo reg[AFALG_MAX_REG];
    const char *type = alg_type(alg);
    int fd, n, i, k = 0;

    /* The registry as this probe read it (once, not per algorithm). */
    afalg_registry_hold(0);
    n = afalg_proc_crypto(alg->kname, reg_types(alg), reg, AFALG_MAX_REG);
    if (!any_usable(reg, n)) {
        /* Binding the generic name makes the kernel instantiate its best
         * implementation, so that /proc/crypto lists it.  When the
         * registry lists a usable one already, the kernel would take that
         * one and instantiate nothing. */
        fd = afalg_bind(type, alg->kname, NULL);
        if (fd < 0) {
            HWAF_DEBUG("afalg: %s \"%s\" not available: %s", type, alg->kname,
                       strerror(-fd));
            return 0;
        }
        close(fd);
        afalg_registry_hold(1);
        n = afalg_proc_crypto(alg->kname, reg_types(alg), reg, AFALG_MAX_REG);
    }
    if (n <= 0) {
        /* No registry to read: offer the generic name, driver unknown. */
        HWAF_DEBUG("afalg: /proc/crypto lists no %s; binding by name", alg->kname);
        memset(&out[0], 0, sizeof(out[0]));
        snprintf(out[0].name, sizeof(out[0].name), "%s", alg->kname);
        out[0].priority = -1;
        out[0].hw = -1;
        return 1;
    }
    for (i = 0; i < n && k < max; i++) {
        unsigned int flags = 0;
        int nl;

        if (!reg[i].selftest_ok) {
            /* Failed, or not finished yet (a driver that registered
             * moments ago): /proc/crypto tells the two apart no more. */
            HWAF_DEBUG("afalg: %s: driver %s has not passed the kernel's self-test: "
                       "not offered", alg->kname, reg[i].driver);
            continue;
        }
        fd = afalg_bind(type, reg[i].driver, NULL);
        if (fd < 0) {
            HWAF_DEBUG("afalg: driver %s refuses to bind: %s", reg[i].driver,
                       strerror(-fd));
            continue;
        }
        close(fd);
        memset(&out[k], 0, sizeof(out[k]));
        snprintf(out[k].name, sizeof(out[k].name), "%s", reg[i].driver);
        out[k].priority = reg[i].priority;
        nl = afalg_netlink_flags(reg[i].driver, &flags);
        if (nl == 0 && (flags & HWAF_CRYPTO_ALG_KERN_DRIVER_ONLY) != 0)
            out[k].hw = 1;
        else
            out[k].hw = hwaf_guess_hw(reg[i].driver,
                                      nl == 0 ? (flags & HWAF_CRYPTO_ALG_ASYNC) != 0
                                              : reg[i].async);
        /* Not for every async driver: x86's aesni ciphers are async too. */
        if (out[k].hw != 0)
            out[k].req_max = HWAF_REQ_MAX_ASYNC;
        HWAF_DEBUG("afalg: %s: driver %s priority %d async %d crypto_user %s -> hw %d, "
                   "request max %zu", alg->kname, reg[i].driver, reg[i].priority,
                   reg[i].async, nl == 0 ? "yes" : "no", out[k].hw, out[k].req_max);
        k++;
    }
    qsort(out, (size_t)k, sizeof(out[0]), by_priority);
    return k;
}

/* ---- ciphers ---- */

static void afalg_cipher_close(hwaf_be_cipher *s)
{
    if (s == NULL)
        return;
    if (s->op >= 0)
        hwaf_sys_fd_released();
    if (s->pipe[0] >= 0)
        close(s->pipe[0]);
    if (s->pipe[1] >= 0)
        close(s->pipe[1]);
    if (s->op >= 0)
        close(s->op);
    if (s->tfm >= 0)
        close(s->tfm);
    OPENSSL_free(s);
}

/*
 * A keyed session of impl's driver (ciphers and AEAD): a transform socket
 * of type bound and keyed (and given the tag size when authsize is not 0),
 * an operation socket accepted from it with grown buffers, and in *max how
 * much one operation may carry (both socket buffers, a page of slack).
 * 1, or 0 with an error raised; *tfm and *op hold whatever was opened,
 * -1 otherwise, for the caller to close.
 */
static int keyed_session(const hwaf_impl *impl, const char *type,
                         const unsigned char *key, size_t keylen,
                         size_t authsize, int *tfm, int *op, size_t *max)
{
    const char *call = "bind";
    size_t sndbuf;
    int r;

    *op = -1;
    *tfm = afalg_bind(type, impl->drv.name, &call);
    if (*tfm < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -*tfm, call);
        return 0;
    }
    r = afalg_setkey(*tfm, key, keylen);
    if (r < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, "setsockopt(ALG_SET_KEY)");
        return 0;
    }
    if (authsize != 0 && (r = afalg_set_authsize(*tfm, authsize)) < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "setsockopt(ALG_SET_AEAD_AUTHSIZE)");
        return 0;
    }
    *op = afalg_accept(*tfm);
    if (*op < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -*op, "accept");
        return 0;
    }
    close(*tfm);  /* held by the operation socket: see the top */
    *tfm = -1;
    sndbuf = afalg_grow_buffers(*op, AFALG_SNDBUF_WANT);
    /* A cipher splits to fit any buffers; an AEAD message is one request,
     * and unknown buffers would put a false limit on every message. */
    if (sndbuf == 0 && authsize != 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, errno, "getsockopt(SO_SNDBUF)");
        return 0;
    }
    /* A cipher request and an AEAD message stay within the option memory
     * (32-bit kernels have little of it): a cipher splits its work, a
     * larger AEAD message goes to software (or is refused when forced). */
    if (sndbuf > afalg_optmem_budget(authsize != 0))
        sndbuf = afalg_optmem_budget(authsize != 0);
    *max = sndbuf > 4 * AFALG_PAGE ? (sndbuf / AFALG_PAGE - 1) * AFALG_PAGE
                                   : 3 * AFALG_PAGE;
    return 1;
}

static int afalg_cipher_open(hwaf_be_cipher **out, const hwaf_impl *impl,
                             const unsigned char *key, size_t keylen)
{
    hwaf_be_cipher *s;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    s = OPENSSL_zalloc(sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "afalg cipher");
        return 0;
    }
    s->impl = impl;
    s->pipe[0] = s->pipe[1] = -1;
    if (!keyed_session(impl, "skcipher", key, keylen, 0, &s->tfm, &s->op, &s->max)) {
        afalg_cipher_close(s);
        return 0;
    }
    *out = s;
    return 1;
}

/*
 * CBC and CTR take any length: the kernel chains rounds of one operation.
 * An XTS data unit must fit one round.  Either way no more than the
 * driver's request limit, if it has one.
 */
static size_t afalg_cipher_max(hwaf_be_cipher *s)
{
    size_t max = s->impl->alg->mode == HWAF_MODE_XTS
                 ? s->max : SIZE_MAX & ~(size_t)(AFALG_PAGE - 1);

    /* A driver's request limit: the mode layer splits to fit. */
    if (s->impl->drv.req_max != 0 && s->impl->drv.req_max < max)
        max = s->impl->drv.req_max;
    return max;
}

/* The output of one operation; an XTS data unit comes in one read(). */
static int read_out(hwaf_be_cipher *s, unsigned char *out, size_t len)
{
    if (s->impl->alg->mode == HWAF_MODE_XTS)
        return afalg_read_whole(s->op, out, len);
    return afalg_read_all(s->op, out, len);
}

/*
 * The copying path: one sendmsg() with the direction, the IV and the data,
 * one read().  Work larger than the socket buffers goes in rounds of one
 * operation (MSG_MORE), each round read before the next is sent; the kernel
 * carries the CBC chaining value or CTR counter from round to round (never
 * used for XTS, whose tweak would restart: see afalg_cipher_max).
 */
static int crypt_copy(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                      const unsigned char *in, unsigned char *out, size_t len)
{
    const hwaf_impl *impl = s->impl;
    size_t off, n;
    ssize_t sent;
    int r;

    for (off = 0; off < len; off += n) {
        n = len - off < s->max ? len - off : s->max;
        if (off == 0) {
            sent = afalg_send_op(s->op, enc, iv, impl->alg->ivlen, in, n, n < len);
            if (sent >= 0 && (size_t)sent != n) {
                HWAF_RAISE(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED,
                           "sendmsg took %zd of %zu bytes", sent, n);
                return 0;
            }
            r = sent < 0 ? (int)sent : 0;
        } else {
            r = afalg_send_all(s->op, in + off, n, off + n < len);
        }
        if (r < 0) {
            HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, "sendmsg");
            return 0;
        }
        r = read_out(s, out + off, n);
        if (r < 0) {
            HWAF_RAISE_SYS(impl->prov, r == -EIO ? HWAF_R_KERNEL_SHORT_OUTPUT
                                                 : HWAF_R_KERNEL_OPERATION_FAILED,
                           -r, "read");
            return 0;
        }
    }
    return 1;
}

static int zc_setup(hwaf_be_cipher *s)
{
    int sz;

    if (s->pipe[0] >= 0)
        return 1;
    if (pipe2(s->pipe, O_CLOEXEC) != 0) {
        s->pipe[0] = s->pipe[1] = -1;
        return 0;
    }
    sz = fcntl(s->pipe[1], F_SETPIPE_SZ, (int)AFALG_ROUND_WANT);
    if (sz <= 0)
        sz = fcntl(s->pipe[1], F_GETPIPE_SZ);
    s->round = sz > 0 ? (size_t)sz : 16 * AFALG_PAGE;
    if (s->round > s->max)
        s->round = s->max;
    s->round &= ~(size_t)(AFALG_PAGE - 1);
    return s->round > 0;
}

/*
 * The zero-copy path: the operation and IV in an empty sendmsg(MSG_MORE),
 * then rounds of vmsplice + splice + read.  Between rounds the kernel keeps
 * the chaining value (CBC) or counter (CTR) of the running operation; XTS
 * comes here only in one round.
 */
static int crypt_splice(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                        const unsigned char *in, unsigned char *out, size_t len)
{
    const hwaf_impl *impl = s->impl;
    const char *call = "splice";
    ssize_t n;
    size_t off, k;
    int r;

    n = afalg_send_op(s->op, enc, iv, impl->alg->ivlen, NULL, 0, 1);
    if (n < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, (int)-n, "sendmsg");
        return 0;
    }
    for (off = 0; off < len; off += k) {
        k = len - off < s->round ? len - off : s->round;
        r = afalg_splice_in(s->op, s->pipe[0], s->pipe[1], in + off, k, off + k < len,
                            &call);
        if (r < 0) {
            HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, call);
            return 0;
        }
        r = read_out(s, out + off, k);
        if (r < 0) {
            HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, "read");
            return 0;
        }
    }
    return 1;
}

static double now_sec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Does splicing pay on this kernel?  Kernels that copy spliced skcipher data
 * anyway (AF_ALG's zero-copy was removed upstream in 2026) make the splice
 * path strictly more work.  The calibration file's verdict for the driver
 * answers when it has one (hwaf_threshold_assign: impl->zerocopy is then 0
 * or 1 and this is never asked); otherwise measured once per process, at
 * the first aligned operation of at least zerocopy_min bytes of a CPU driver: best of a few
 * runs of each path, on a session of its own (never the caller's: its
 * socket may be mid-operation after a failure, and its driver may be an
 * engine), over no more than the caller's own length.
 */
static void zc_calibrate(const hwaf_impl *impl, size_t len)
{
    hwaf_be_cipher t;
    unsigned char *buf = NULL, iv[HWAF_MAX_IV] = { 0 }, key[HWAF_MAX_KEY];
    double best[2] = { 1e9, 1e9 };
    int i, path, pays = 0;
    size_t sndbuf;

    memset(&t, 0, sizeof(t));
    t.impl = impl;
    t.op = -1;
    t.pipe[0] = t.pipe[1] = -1;
    for (i = 0; i < HWAF_MAX_KEY; i++)
        key[i] = (unsigned char)(i * 37 + 1);   /* XTS halves differ */
    t.tfm = afalg_bind("skcipher", impl->drv.name, NULL);
    if (t.tfm < 0 || afalg_setkey(t.tfm, key, impl->alg->keylen) < 0
        || (t.op = afalg_accept(t.tfm)) < 0)
        goto done;
    sndbuf = afalg_grow_buffers(t.op, AFALG_SNDBUF_WANT);
    if (sndbuf > afalg_optmem_budget(0))
        sndbuf = afalg_optmem_budget(0);
    t.max = sndbuf > 4 * AFALG_PAGE ? (sndbuf / AFALG_PAGE - 1) * AFALG_PAGE
                                    : 3 * AFALG_PAGE;
    if (!zc_setup(&t))
        goto done;
    if (len > AFALG_CALIBRATE_LEN)
        len = AFALG_CALIBRATE_LEN;
    if (len > t.round)
        len = t.round;     /* one round: right for XTS too */
    len &= ~(size_t)(AFALG_PAGE - 1);
    if (len == 0 || posix_memalign((void **)&buf, AFALG_PAGE, len) != 0)
        goto done;
    memset(buf, 0x5a, len);
    for (i = 0; i < 4; i++) {
        for (path = 0; path < 2; path++) {
            double tm = now_sec();
            int ok = path ? crypt_splice(&t, 1, iv, buf, buf, len)
                          : crypt_copy(&t, 1, iv, buf, buf, len);

            tm = now_sec() - tm;
            if (!ok)
                goto done;
            if (i > 0 && tm < best[path])   /* the first round warms up */
                best[path] = tm;
        }
    }
    pays = best[1] < best[0] * 0.95;
 done:
    HWAF_DEBUG("afalg: zero-copy calibration on %s, %zu bytes: copy %.0f us, "
               "splice %.0f us: %s", impl->drv.name, len, best[0] * 1e6,
               best[1] * 1e6, pays ? "splice" : "copy");
    __atomic_store_n(&zc_pays, pays, __ATOMIC_RELEASE);
    free(buf);
    OPENSSL_cleanse(key, sizeof(key));
    if (t.pipe[0] >= 0)
        close(t.pipe[0]);
    if (t.pipe[1] >= 0)
        close(t.pipe[1]);
    if (t.op >= 0)
        close(t.op);
    if (t.tfm >= 0)
        close(t.tfm);
}

/* zerocopy = auto: splice when the measurement says it pays. */
static int zc_auto(const hwaf_impl *impl, size_t len)
{
    int pays = __atomic_load_n(&zc_pays, __ATOMIC_ACQUIRE);
    unsigned int mine, cur;

    if (pays >= 0)
        return pays;
    if (impl->hw != 0)
        return 0;   /* no timing test on an engine: copy until a CPU driver measures */
    mine = __atomic_load_n(&hwaf_fork_generation, __ATOMIC_SEQ_CST) + 1;
    cur = __atomic_load_n(&zc_claim, __ATOMIC_ACQUIRE);
    if (cur == mine
        || !__atomic_compare_exchange_n(&zc_claim, &cur, mine, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;   /* another thread of this process measures: copy meanwhile */
    zc_calibrate(impl, len);
    return __atomic_load_n(&zc_pays, __ATOMIC_ACQUIRE) == 1;
}

static int use_splice(hwaf_be_cipher *s, const unsigned char *in, size_t len)
{
    const hwaf_impl *impl = s->impl;

    if (impl->zerocopy == 0 || len < impl->zerocopy_min
        || ((uintptr_t)in & (AFALG_PAGE - 1)) != 0
        || len < AFALG_PAGE)
        return 0;
    if (impl->zerocopy < 0 && !zc_auto(impl, len))
        return 0;
    if (!zc_setup(s))
        return 0;
    if (impl->alg->mode == HWAF_MODE_XTS && len > s->round)
        return 0;
    return 1;
}

static int afalg_cipher_crypt(hwaf_be_cipher *s, int enc, const unsigned char *iv,
                              const unsigned char *in, unsigned char *out, size_t len)
{
    int ok;

    if (use_splice(s, in, len)) {
        ok = crypt_splice(s, enc, iv, in, out, len);
        if (ok)
            hwaf_stats_add_spliced(len);
    } else {
        ok = crypt_copy(s, enc, iv, in, out, len);
    }
    if (ok)
        hwaf_stats_add(HWAF_BE_AFALG, s->impl->alg->kind, len);
    return ok;
}

/* ---- digests ---- */

/* The sends not counted yet, and reads more operations, into the counters. */
static void md_count(hwaf_be_md *s, unsigned int reads)
{
    if (s->tally_ops + reads != 0)
        hwaf_stats_add_n(HWAF_BE_AFALG, s->impl->alg->kind, s->tally_ops + reads,
                         s->tally_bytes);
    s->tally_ops = 0;
    s->tally_bytes = 0;
}

static md_pool *pool_of(const hwaf_impl *impl)
{
    return impl->be_data;
}

/* Take the pool's lock, emptying it first in a child after fork(). */
static md_pool *pool_lock(const hwaf_impl *impl)
{
    md_pool *p = pool_of(impl);

    hwaf_mutex_lock(&p->lock);
    if (p->gen != hwaf_fork_generation) {
        /* The parent still uses these; drop only our descriptors. */
        while (p->n > 0)
            close(p->idle[--p->n]);
        p->gen = hwaf_fork_generation;
    }
    return p;
}

static void afalg_md_close(hwaf_be_md *s)
{
    md_pool *p;

    if (s == NULL)
        return;
    md_count(s, 0);
    if (s->op >= 0)
        hwaf_sys_fd_released();
    if (s->spare >= 0)
        close(s->spare);
    if (s->op >= 0 && s->keyed) {
        close(s->op);
        s->op = -1;
    }
    if (s->op >= 0) {
        /* A clean operation socket (no data since the last read) is reused. */
        p = pool_lock(s->impl);
        if (!s->more && p->n < MD_POOL_MAX) {
            p->idle[p->n++] = s->op;
            s->op = -1;
        }
        hwaf_mutex_unlock(&p->lock);
        if (s->op >= 0)
            close(s->op);
    }
    OPENSSL_free(s);
}

static hwaf_be_md *md_alloc(const hwaf_impl *impl)
{
    hwaf_be_md *s = OPENSSL_zalloc(sizeof(*s));

    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "afalg digest");
        return NULL;
    }
    s->impl = impl;
    s->op = s->spare = -1;
    return s;
}

static int afalg_md_open(hwaf_be_md **out, const hwaf_impl *impl)
{
    hwaf_be_md *s;
    md_pool *p;
    int err = 0;
    const char *call = NULL;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    s = md_alloc(impl);
    if (s == NULL)
        return 0;
    p = pool_lock(impl);
    if (p->n > 0) {
        s->op = p->idle[--p->n];
    } else {
        if (p->tfm < 0) {
            call = "bind";
            p->tfm = afalg_bind("hash", impl->drv.name, &call);
            if (p->tfm < 0)
                err = -p->tfm;
        }
        if (p->tfm >= 0) {
            s->op = afalg_accept(p->tfm);
            if (s->op < 0) {
                err = -s->op;
                call = "accept";
            }
        }
    }
    hwaf_mutex_unlock(&p->lock);
    if (s->op < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, err, call);
        afalg_md_close(s);
        return 0;
    }
    *out = s;
    return 1;
}

static int afalg_md_update(hwaf_be_md *s, const unsigned char *in, size_t len)
{
    size_t req = s->impl->drv.req_max, n;
    int r;

    /* The kernel hashes what one send() carries in updates of up to 64 KiB
     * (ALG_MAX_PAGES); a driver limited to less gets sends of its size. */
    while (len > 0) {
        n = req != 0 && req < len ? req : len;
        r = afalg_send_all(s->op, in, n, 1);
        /* Data went in (or may have): never back to the pool unread. */
        s->more = 1;
        if (r < 0) {
            HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, "send");
            return 0;
        }
        s->tally_ops++;
        s->tally_bytes += n;
        in += n;
        len -= n;
    }
    return 1;
}

static int afalg_md_final(hwaf_be_md *s, unsigned char *md)
{
    /* With nothing sent, the kernel hashes the empty message.  The hash
     * ends at the first read; until one succeeds the socket is not clean. */
    int r = afalg_read_hash(s->op, md, s->impl->alg->mdlen);

    if (r == 0)
        s->more = 0;
    md_count(s, r == 0);
    if (r < 0) {
        HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r, "read");
        return 0;
    }
    return 1;
}

static int afalg_md_reset(hwaf_be_md *s)
{
    unsigned char scratch[HWAF_MAX_MD];
    int ok;

    if (!s->more)
        return 1;
    ok = afalg_md_final(s, scratch);
    OPENSSL_cleanse(scratch, sizeof(scratch));
    return ok;
}

static int afalg_md_dup(hwaf_be_md **out, hwaf_be_md *s)
{
    hwaf_be_md *d;

    *out = NULL;
    if (!hwaf_sandbox_allows(s->impl->prov))
        return 0;
    d = md_alloc(s->impl);
    if (d == NULL)
        return 0;
    /* accept() on a hash operation socket clones its running state. */
    d->op = afalg_accept(s->op);
    if (d->op < 0) {
        HWAF_RAISE_SYS(s->impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -d->op, "accept");
        goto err;
    }
    d->more = s->more;
    d->keyed = s->keyed;
    *out = d;
    return 1;
 err:
    afalg_md_close(d);
    return 0;
}

static int afalg_md_fork_prepare(hwaf_be_md *s)
{
    s->spare = afalg_accept(s->op);
    return s->spare >= 0;
}

static void afalg_md_fork_parent(hwaf_be_md *s)
{
    if (s->spare >= 0)
        close(s->spare);
    s->spare = -1;
}

static void afalg_md_fork_child(hwaf_be_md *s)
{
    s->tally_ops = 0;   /* the parent's sends: counted in the parent */
    s->tally_bytes = 0;
    close(s->op);
    s->op = s->spare;
    s->spare = -1;
}

/*
 * HMAC: a transform socket keyed once, one operation socket accepted from it.
 * The operation socket holds the transform in the kernel, so ours is closed
 * at once.
 */
static int afalg_mac_open(hwaf_be_md **out, const hwaf_impl *impl,
                          const unsigned char *key, size_t keylen)
{
    hwaf_be_md *s = md_alloc(impl);
    const char *call = "bind";
    int tfm, r;

    *out = NULL;
    if (s == NULL)
        return 0;
    s->keyed = 1;
    if (!hwaf_sandbox_allows(impl->prov))
        goto err;
    tfm = afalg_bind("hash", impl->drv.name, &call);
    if (tfm < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -tfm, call);
        goto err;
    }
    r = afalg_setkey(tfm, key, keylen);
    if (r < 0) {
        close(tfm);
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -r,
                       "setsockopt(ALG_SET_KEY)");
        goto err;
    }
    s->op = afalg_accept(tfm);
    close(tfm);
    if (s->op < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, -s->op, "accept");
        goto err;
    }
    *out = s;
    return 1;
 err:
    afalg_md_close(s);
    return 0;
}

/* ---- AEAD ---- */

static void afalg_aead_close(hwaf_be_aead *s)
{
    if (s == NULL)
        return;
    if (s->op >= 0)
        hwaf_sys_fd_released();
    if (s->op >= 0)
        close(s->op);
    if (s->tfm >= 0)
        close(s->tfm);
    OPENSSL_free(s);
}

static int afalg_aead_open(hwaf_be_aead **out, const hwaf_impl *impl,
                           const unsigned char *key, size_t keylen)
{
    hwaf_be_aead *s;

    *out = NULL;
    if (!hwaf_sandbox_allows(impl->prov))
        return 0;
    s = OPENSSL_zalloc(sizeof(*s));
    if (s == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "afalg aead");
        return 0;
    }
    s->impl = impl;
    /* The whole request (AAD, data, tag) must fit one operation. */
    if (!keyed_session(impl, "aead", key, keylen, HWAF_GCM_TAG, &s->tfm, &s->op,
                       &s->max)) {
        afalg_aead_close(s);
        return 0;
    }
    *out = s;
    return 1;
}

static size_t afalg_aead_max(hwaf_be_aead *s, size_t aadlen, int sizing)
{
    size_t max = s->max, req = s->impl->drv.req_max;

    /* One message is one request: no more than the driver takes. */
    if (req != 0 && req < max)
        max = req;
    return max - HWAF_GCM_TAG;
}

/*
 * The kernel reads AAD || data (|| tag when decrypting) and writes AAD ||
 * data (|| tag when encrypting): the AAD comes back into a scratch buffer,
 * the data straight into out[], the tag into tag[].  Where fork() can split
 * a read (afalg_sys.c), all of it goes through the thread's buffer unless
 * out[] and tag[] are the caller's own pages (owned); the AAD's copy is
 * never used, so where it lands after a fork() does not matter.
 */
static int afalg_aead_crypt(hwaf_be_aead *s, int enc, const unsigned char *iv,
                            const unsigned char *aad, size_t aadlen,
                            const unsigned char *in, unsigned char *out, size_t len,
                            unsigned char *tag, int owned)
{
    const hwaf_impl *impl = s->impl;
    unsigned char small[64], *scratch = small;
    struct iovec tx[3], rx[3];
    size_t total = aadlen + len + (enc ? 0 : HWAF_GCM_TAG);
    ssize_t sent;
    int r, ok = 0;

    if (aadlen + len > afalg_aead_max(s, aadlen, 0)) {
        HWAF_RAISE(impl->prov, HWAF_R_AEAD_MESSAGE_TOO_LARGE,
                   "%zu bytes of AAD and data, at most %zu", aadlen + len,
                   afalg_aead_max(s, aadlen, 0));
        return 0;
    }
    if (aadlen > sizeof(small) && (scratch = OPENSSL_malloc(aadlen)) == NULL) {
        HWAF_RAISE(impl->prov, HWAF_R_MALLOC_FAILURE, "afalg aead");
        return 0;
    }
    tx[0].iov_base = (void *)aad;
    tx[0].iov_len = aadlen;
    tx[1].iov_base = (void *)in;
    tx[1].iov_len = len;
    tx[2].iov_base = tag;
    tx[2].iov_len = enc ? 0 : HWAF_GCM_TAG;
    rx[0].iov_base = scratch;
    rx[0].iov_len = aadlen;
    rx[1].iov_base = out;
    rx[1].iov_len = len;
    rx[2].iov_base = tag;
    rx[2].iov_len = enc ? HWAF_GCM_TAG : 0;
    /* A tag right after the data (GCM's kept data) is one buffer with it:
     * a kernel maps each buffer of a read on its own. */
    if (enc && tag == out + len) {
        rx[1].iov_len += HWAF_GCM_TAG;
        rx[2].iov_len = 0;
    }
    sent = afalg_send_aead(s->op, enc, iv, HWAF_GCM_IV, aadlen, tx, tx[2].iov_len != 0 ? 3 : 2);
    if (sent < 0) {
        HWAF_RAISE_SYS(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED, (int)-sent, "sendmsg");
        goto done;
    }
    if ((size_t)sent != total) {
        HWAF_RAISE(impl->prov, HWAF_R_KERNEL_OPERATION_FAILED,
                   "sendmsg took %zd of %zu bytes", sent, total);
        goto done;
    }
    r = afalg_readv_all(s->op, rx, rx[2].iov_len != 0 ? 3 : 2, owned);
    if (r == -EBADMSG && !enc) {
        ok = -1;
    } else if (r < 0) {
        HWAF_RAISE_SYS(impl->prov, r == -EIO ? HWAF_R_KERNEL_SHORT_OUTPUT
                                             : HWAF_R_KERNEL_OPERATION_FAILED,
                       -r, "readv");
        goto done;
    } else {
        ok = 1;
    }
    hwaf_stats_add(HWAF_BE_AFALG, impl->alg->kind, aadlen + len);
 done:
    if (scratch != small)
        OPENSSL_free(scratch);
    return ok;
}

static int afalg_impl_init(hwaf_impl *impl)
{
    md_pool *p;

    if (impl->alg->kind != HWAF_KIND_DIGEST)
        return 1;
    p = OPENSSL_zalloc(sizeof(*p));
    if (p == NULL)
        return 0;
    hwaf_mutex_init(&p->lock);
    p->gen = hwaf_fork_generation;
    p->tfm = -1;
    impl->be_data = p;
    return 1;
}

static void afalg_impl_free(hwaf_impl *impl)
{
    md_pool *p = impl->be_data;

    if (p == NULL)
        return;
    /* In a child, the parent's descriptors are ours to close too. */
    while (p->n > 0)
        close(p->idle[--p->n]);
    if (p->tfm >= 0)
        close(p->tfm);
    hwaf_mutex_destroy(&p->lock);
    OPENSSL_free(p);
    impl->be_data = NULL;
}

const hwaf_backend hwaf_backend_afalg = {
    "afalg",
    afalg_available,
    afalg_drivers,
    afalg_cipher_open,
    afalg_cipher_crypt,
    afalg_cipher_max,
    afalg_cipher_close,
    afalg_cipher_close,   /* abandon: closing our descriptors is all it takes */
    afalg_md_open,
    afalg_md_update,
    afalg_md_final,
    afalg_md_reset,
    afalg_md_dup,
    afalg_md_close,
    afalg_md_fork_prepare,
    afalg_md_fork_parent,
    afalg_md_fork_child,
    afalg_impl_init,
    afalg_impl_free,
    afalg_aead_open,
    afalg_aead_crypt,
    afalg_aead_max,
    afalg_aead_close,
    afalg_aead_close,     /* abandon: as for ciphers */
    afalg_mac_open,
    afalg_probe_done,   /* probe_done */
    NULL,                     /* device: none, a socket family */
};
