/*
 * libkcapi called directly: kcapi_cipher_encrypt (its own access heuristic:
 * sendmsg for small buffers, vmsplice for large ones) and kcapi_md_digest.
 *
 * libkcapi 1.4.0 asks the kernel's crypto_user netlink interface about the
 * algorithm at init; without crypto_user the init fails with
 * -EPROTONOSUPPORT.  That is reported as the reason it is unavailable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kcapi.h>

#include "bench.h"

typedef struct {
    struct kcapi_handle *h;
    const bench_alg *a;
} kcapi_st;

static int kcapi_reset(void *vst, char *why, size_t whylen)
{
    (void)vst, (void)why, (void)whylen;
    return 1;
}

static int kcapi_cipher_op(void *vst, const unsigned char *in, unsigned char *out,
                           size_t len, char *why, size_t whylen)
{
    kcapi_st *st = vst;
    ssize_t r = kcapi_cipher_encrypt(st->h, in, len, bench_iv, out, len,
                                     KCAPI_ACCESS_HEURISTIC);

    if (r != (ssize_t)len) {
        snprintf(why, whylen, "kcapi_cipher_encrypt: %s",
                 r < 0 ? strerror((int)-r) : "short");
        return 0;
    }
    return 1;
}

static int kcapi_md_op(void *vst, const unsigned char *in, unsigned char *out,
                       size_t len, char *why, size_t whylen)
{
    kcapi_st *st = vst;
    ssize_t r = kcapi_md_digest(st->h, in, len, out, st->a->mdlen);

    if (r != (ssize_t)st->a->mdlen) {
        snprintf(why, whylen, "kcapi_md_digest: %s",
                 r < 0 ? strerror((int)-r) : "short");
        return 0;
    }
    return 1;
}

static void kcapi_close_cipher(void *vst)
{
    kcapi_st *st = vst;

    if (st == NULL)
        return;
    kcapi_cipher_destroy(st->h);
    free(st);
}

static void kcapi_close_md(void *vst)
{
    kcapi_st *st = vst;

    if (st == NULL)
        return;
    kcapi_md_destroy(st->h);
    free(st);
}

static const bench_ops kcapi_cipher_ops = { kcapi_cipher_op, kcapi_reset,
                                            kcapi_close_cipher };
static const bench_ops kcapi_md_ops = { kcapi_md_op, kcapi_reset, kcapi_close_md };

void bench_open_kcapi(bench_set *s, const bench_alg *a)
{
    const char *name = "libkcapi";
    kcapi_st *st;
    bench_inst *inst;
    int r;

    /* Errors are reported here, not printed by the library. */
    kcapi_set_verbosity(KCAPI_LOG_NONE);
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return;
    st->a = a;
    if (a->kind == BENCH_CIPHER) {
        r = kcapi_cipher_init(&st->h, a->kname, 0);
        if (r == 0)
            r = kcapi_cipher_setkey(st->h, bench_key, a->keylen);
    } else {
        r = kcapi_md_init(&st->h, a->kname, 0);
    }
    if (r != 0) {
        if (r == -EPROTONOSUPPORT)
            bench_set_absent(s, name, "init: %s (kernel without crypto_user)",
                             strerror(-r));
        else
            bench_set_absent(s, name, "init: %s", strerror(r < 0 ? -r : r));
        if (a->kind == BENCH_CIPHER)
            kcapi_close_cipher(st);
        else
            kcapi_close_md(st);
        return;
    }
    inst = bench_set_add(s, name, BENCH_FAM_PEER);
    if (inst == NULL) {
        if (a->kind == BENCH_CIPHER)
            kcapi_close_cipher(st);
        else
            kcapi_close_md(st);
        return;
    }
    inst->ops = a->kind == BENCH_CIPHER ? &kcapi_cipher_ops : &kcapi_md_ops;
    inst->st = st;
    bench_proc_crypto_driver(a->kname, a->kind, inst->driver, sizeof(inst->driver));
}
