/*
 * Bare reference loops on AF_ALG sockets: what any user-space offload can
 * get from the interface, with nothing above it.
 *
 *  bare-afalg     skcipher: bind, set the key once, accept; per operation
 *                 one sendmsg carrying ALG_SET_OP + ALG_SET_IV cmsgs and the
 *                 data, then one read of the result.  Buffers over one round
 *                 (128 KiB, what the socket takes without a reader) go in
 *                 rounds: sendmsg(MSG_MORE) + read, the cipher chaining on in
 *                 the kernel.
 *                 hash and keyed hash (HMAC): per operation one send of the
 *                 data + one read of the digest.
 *                 aead (GCM): key and tag size set once; per message one
 *                 sendmsg (op, IV, AAD length; AAD and data) + one readv
 *                 (AAD back into scratch, ciphertext and tag).
 *  bare-afalg-zc  skcipher only: the input is handed over with vmsplice +
 *                 splice instead of being copied by sendmsg (page-aligned
 *                 buffers), in rounds of at most 128 KiB, each round's output
 *                 read before the next is spliced.  SPLICE_F_GIFT is never
 *                 used: the pages belong to the caller.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/if_alg.h>

#include "bench.h"

#ifndef SOL_ALG
#define SOL_ALG 279
#endif

#define BARE_ROUND (128 * 1024)

typedef struct {
    int tfm, op;
    int pipefd[2];
    int zc;
    const bench_alg *a;
} afalg_st;

static void afalg_close(void *vst)
{
    afalg_st *st = vst;

    if (st == NULL)
        return;
    if (st->op >= 0)
        close(st->op);
    if (st->tfm >= 0)
        close(st->tfm);
    if (st->pipefd[0] >= 0)
        close(st->pipefd[0]);
    if (st->pipefd[1] >= 0)
        close(st->pipefd[1]);
    free(st);
}

static int afalg_reset(void *vst, char *why, size_t whylen)
{
    (void)vst, (void)why, (void)whylen;
    return 1;
}

static int read_full(int fd, unsigned char *out, size_t n, char *why, size_t whylen)
{
    while (n > 0) {
        ssize_t r = read(fd, out, n);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, whylen, "read: %s", r < 0 ? strerror(errno) : "EOF");
            return 0;
        }
        out += r;
        n -= (size_t)r;
    }
    return 1;
}

/* sendmsg with the operation and IV control messages, plus optional data;
 * for AEAD also the AAD length, the AAD going first. */
static int send_with_iv(afalg_st *st, const unsigned char *in, size_t n, int flags,
                        char *why, size_t whylen)
{
    union {
        char buf[CMSG_SPACE(sizeof(__u32)) + CMSG_SPACE(sizeof(struct af_alg_iv) + 16)
                 + CMSG_SPACE(sizeof(__u32))];
        struct cmsghdr align;
    } cbuf;
    struct msghdr msg;
    struct cmsghdr *c;
    struct af_alg_iv *aiv;
    struct iovec iov[2];
    int aead = st->a->kind == BENCH_AEAD, k = 0;
    size_t aadlen = aead ? BENCH_AEAD_AAD_LEN : 0;
    ssize_t r;

    memset(&cbuf, 0, sizeof(cbuf));
    memset(&msg, 0, sizeof(msg));
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(__u32))
        + CMSG_SPACE(sizeof(struct af_alg_iv) + st->a->ivlen)
        + (aead ? CMSG_SPACE(sizeof(__u32)) : 0);
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_OP;
    c->cmsg_len = CMSG_LEN(sizeof(__u32));
    *(__u32 *)(void *)CMSG_DATA(c) = ALG_OP_ENCRYPT;
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_IV;
    c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + st->a->ivlen);
    aiv = (struct af_alg_iv *)(void *)CMSG_DATA(c);
    aiv->ivlen = st->a->ivlen;
    memcpy(aiv->iv, bench_iv, st->a->ivlen);
    if (aead) {
        c = CMSG_NXTHDR(&msg, c);
        c->cmsg_level = SOL_ALG;
        c->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
        c->cmsg_len = CMSG_LEN(sizeof(__u32));
        *(__u32 *)(void *)CMSG_DATA(c) = (__u32)aadlen;
        iov[k].iov_base = (void *)BENCH_AEAD_AAD;
        iov[k++].iov_len = aadlen;
    }
    if (n > 0) {
        iov[k].iov_base = (void *)in;
        iov[k++].iov_len = n;
    }
    msg.msg_iov = k ? iov : NULL;
    msg.msg_iovlen = (size_t)k;
    r = sendmsg(st->op, &msg, flags);
    if (r != (ssize_t)(aadlen + n)) {
        snprintf(why, whylen, "sendmsg: %s", r < 0 ? strerror(errno) : "short");
        return 0;
    }
    return 1;
}

static int send_data(afalg_st *st, const unsigned char *in, size_t n, int flags,
                     char *why, size_t whylen)
{
    ssize_t r = send(st->op, in, n, flags);

    if (r != (ssize_t)n) {
        snprintf(why, whylen, "send: %s", r < 0 ? strerror(errno) : "short");
        return 0;
    }
    return 1;
}

static int copy_op(void *vst, const unsigned char *in, unsigned char *out,
                   size_t len, char *why, size_t whylen)
{
    afalg_st *st = vst;
    size_t off = 0;

    while (off < len) {
        size_t n = len - off > BARE_ROUND ? BARE_ROUND : len - off;
        int more = off + n < len ? MSG_MORE : 0;
        int ok = off == 0 ? send_with_iv(st, in, n, more, why, whylen)
                          : send_data(st, in + off, n, more, why, whylen);

        if (!ok || !read_full(st->op, out + off, n, why, whylen))
            return 0;
        off += n;
    }
    return 1;
}

static int splice_full(afalg_st *st, size_t n, unsigned int flags, char *why,
                       size_t whylen)
{
    while (n > 0) {
        ssize_t r = splice(st->pipefd[0], NULL, st->op, NULL, n, flags);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, whylen, "splice: %s", r < 0 ? strerror(errno) : "0");
            return 0;
        }
        n -= (size_t)r;
    }
    return 1;
}

static int zc_op(void *vst, const unsigned char *in, unsigned char *out,
                 size_t len, char *why, size_t whylen)
{
    afalg_st *st = vst;
    size_t off = 0;

    if (!send_with_iv(st, NULL, 0, MSG_MORE, why, whylen))
        return 0;
    while (off < len) {
        size_t n = len - off > BARE_ROUND ? BARE_ROUND : len - off;
        unsigned int more = off + n < len ? SPLICE_F_MORE : 0;
        size_t queued = 0;

        while (queued < n) {
            struct iovec iov = { (void *)(in + off + queued), n - queued };
            ssize_t r = vmsplice(st->pipefd[1], &iov, 1, 0);

            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                snprintf(why, whylen, "vmsplice: %s", r < 0 ? strerror(errno) : "0");
                return 0;
            }
            queued += (size_t)r;
        }
        if (!splice_full(st, n, more, why, whylen)
            || !read_full(st->op, out + off, n, why, whylen))
            return 0;
        off += n;
    }
    return 1;
}

static int hash_op(void *vst, const unsigned char *in, unsigned char *out,
                   size_t len, char *why, size_t whylen)
{
    afalg_st *st = vst;

    return send_data(st, in, len, 0, why, whylen)
        && read_full(st->op, out, st->a->mdlen, why, whylen);
}

/* One sealed GCM message: out receives ciphertext || tag. */
static int gcm_op(void *vst, const unsigned char *in, unsigned char *out,
                  size_t len, char *why, size_t whylen)
{
    afalg_st *st = vst;
    unsigned char scratch[BENCH_AEAD_AAD_LEN];
    struct iovec rx[2];
    ssize_t r;

    if (!send_with_iv(st, in, len, 0, why, whylen))
        return 0;
    rx[0].iov_base = scratch;
    rx[0].iov_len = sizeof(scratch);
    rx[1].iov_base = out;
    rx[1].iov_len = len + st->a->mdlen;
    r = readv(st->op, rx, 2);
    if (r != (ssize_t)(sizeof(scratch) + len + st->a->mdlen)) {
        snprintf(why, whylen, "readv: %s", r < 0 ? strerror(errno) : "short");
        return 0;
    }
    return 1;
}

static const bench_ops copy_ops = { copy_op, afalg_reset, afalg_close };
static const bench_ops gcm_ops = { gcm_op, afalg_reset, afalg_close };
static const bench_ops zc_ops = { zc_op, afalg_reset, afalg_close };
static const bench_ops hash_ops = { hash_op, afalg_reset, afalg_close };

static afalg_st *afalg_bind(const bench_alg *a, const char *bind_name, int zc,
                            char *why, size_t whylen)
{
    struct sockaddr_alg sa;
    afalg_st *st = calloc(1, sizeof(*st));

    if (st == NULL) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    st->tfm = st->op = st->pipefd[0] = st->pipefd[1] = -1;
    st->a = a;
    st->zc = zc;
    memset(&sa, 0, sizeof(sa));
    sa.salg_family = AF_ALG;
    snprintf((char *)sa.salg_type, sizeof(sa.salg_type), "%s",
             a->kind == BENCH_CIPHER ? "skcipher" : a->kind == BENCH_AEAD ? "aead" : "hash");
    snprintf((char *)sa.salg_name, sizeof(sa.salg_name), "%s", bind_name);
    st->tfm = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (st->tfm < 0) {
        snprintf(why, whylen, "socket(AF_ALG): %s", strerror(errno));
        goto fail;
    }
    if (bind(st->tfm, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        snprintf(why, whylen, "bind %s: %s", bind_name, strerror(errno));
        goto fail;
    }
    if (a->kind != BENCH_DIGEST
        && setsockopt(st->tfm, SOL_ALG, ALG_SET_KEY, bench_key, a->keylen) < 0) {
        snprintf(why, whylen, "ALG_SET_KEY: %s", strerror(errno));
        goto fail;
    }
    if (a->kind == BENCH_AEAD
        && setsockopt(st->tfm, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, a->mdlen) < 0) {
        snprintf(why, whylen, "ALG_SET_AEAD_AUTHSIZE: %s", strerror(errno));
        goto fail;
    }
    st->op = accept4(st->tfm, NULL, NULL, SOCK_CLOEXEC);
    if (st->op < 0) {
        snprintf(why, whylen, "accept: %s", strerror(errno));
        goto fail;
    }
    if (zc) {
        if (pipe2(st->pipefd, O_CLOEXEC) < 0) {
            snprintf(why, whylen, "pipe: %s", strerror(errno));
            goto fail;
        }
        if (fcntl(st->pipefd[1], F_SETPIPE_SZ, BARE_ROUND) < BARE_ROUND) {
            snprintf(why, whylen, "F_SETPIPE_SZ %d: %s", BARE_ROUND, strerror(errno));
            goto fail;
        }
    }
    return st;
fail:
    afalg_close(st);
    return NULL;
}

void bench_open_bare_afalg(bench_set *s, const bench_alg *a, const char *bind_name,
                           const char *suffix)
{
    int zc;

    if (bind_name == NULL)
        bind_name = a->kname;
    if (suffix == NULL)
        suffix = "";
    for (zc = 0; zc <= (a->kind == BENCH_CIPHER); zc++) {
        char name[BENCH_NAME_MAX], why[BENCH_WHY_MAX];
        afalg_st *st;
        bench_inst *inst;

        snprintf(name, sizeof(name), "bare-afalg%s%s", zc ? "-zc" : "", suffix);
        st = afalg_bind(a, bind_name, zc, why, sizeof(why));
        if (st == NULL) {
            bench_set_absent(s, name, "%s", why);
            continue;
        }
        inst = bench_set_add(s, name, BENCH_FAM_BARE);
        if (inst == NULL) {
            afalg_close(st);
            continue;
        }
        inst->st = st;
        inst->ops = a->kind == BENCH_DIGEST || a->kind == BENCH_MAC ? &hash_ops
                  : a->kind == BENCH_AEAD ? &gcm_ops : zc ? &zc_ops : &copy_ops;
        /* One XTS data unit, one GCM message must reach the kernel in one
         * piece. */
        if (a->mode == BENCH_XTS || a->mode == BENCH_GCM)
            inst->maxlen = BARE_ROUND;
        if (strcmp(bind_name, a->kname) != 0)
            snprintf(inst->driver, sizeof(inst->driver), "%s", bind_name);
        else
            bench_proc_crypto_driver(a->kname, a->kind, inst->driver,
                                     sizeof(inst->driver));
    }
}
