/*
 * Bare reference loop on /dev/crypto (cryptodev-linux ABI): one session
 * created once (key set once), then per operation exactly one CIOCCRYPT
 * ioctl.  A digest or HMAC operation is one CIOCCRYPT without update/final
 * flags, which hashes the buffer in one go.  An AES-GCM operation is one
 * CIOCAUTHCRYPT sealing a message as hwaf-bench's GCM lines do (13 bytes of
 * AAD, the data, the IV), the tag written after the ciphertext.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "bench.h"
#include "cryptodev_abi.h" /* provider/: the cryptodev-linux ABI */

const char *bench_cryptodev_path = "/dev/crypto";

typedef struct {
    int fd;
    uint32_t ses;
    int have_ses;
    const bench_alg *a;
} cdev_st;

static void cdev_close(void *vst)
{
    cdev_st *st = vst;

    if (st == NULL)
        return;
    if (st->have_ses)
        ioctl(st->fd, CIOCFSESSION, &st->ses);
    if (st->fd >= 0)
        close(st->fd);
    free(st);
}

static int cdev_reset(void *vst, char *why, size_t whylen)
{
    (void)vst, (void)why, (void)whylen;
    return 1;
}

static int cdev_op(void *vst, const unsigned char *in, unsigned char *out,
                   size_t len, char *why, size_t whylen)
{
    cdev_st *st = vst;
    struct crypt_op cop;

    if (st->a->kind == BENCH_AEAD) {
        struct crypt_auth_op aop;

        memset(&aop, 0, sizeof(aop));
        aop.ses = st->ses;
        aop.op = COP_ENCRYPT;
        aop.len = (uint32_t)len;
        aop.auth_len = BENCH_AEAD_AAD_LEN;
        aop.auth_src = (uint8_t *)BENCH_AEAD_AAD;
        aop.src = (uint8_t *)in;
        aop.dst = out;
        aop.tag_len = st->a->mdlen;
        aop.iv = (uint8_t *)bench_iv;
        if (ioctl(st->fd, CIOCAUTHCRYPT, &aop) < 0) {
            snprintf(why, whylen, "CIOCAUTHCRYPT: %s", strerror(errno));
            return 0;
        }
        return 1;
    }
    memset(&cop, 0, sizeof(cop));
    cop.ses = st->ses;
    cop.op = COP_ENCRYPT;
    cop.len = (uint32_t)len;
    cop.src = (uint8_t *)in;
    if (st->a->kind == BENCH_CIPHER) {
        cop.dst = out;
        cop.iv = (uint8_t *)bench_iv;
    } else {
        cop.mac = out;
    }
    if (ioctl(st->fd, CIOCCRYPT, &cop) < 0) {
        snprintf(why, whylen, "CIOCCRYPT: %s", strerror(errno));
        return 0;
    }
    return 1;
}

static const bench_ops cdev_ops = { cdev_op, cdev_reset, cdev_close };

void bench_open_bare_cryptodev(bench_set *s, const bench_alg *a)
{
    const char *name = "bare-cryptodev";
    struct session_op sop;
    struct session_info_op info;
    cdev_st *st;
    bench_inst *inst;

    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return;
    st->a = a;
    st->fd = open(bench_cryptodev_path, O_RDWR | O_CLOEXEC);
    if (st->fd < 0) {
        bench_set_absent(s, name, "open %s: %s", bench_cryptodev_path, strerror(errno));
        cdev_close(st);
        return;
    }
    memset(&sop, 0, sizeof(sop));
    if (a->kind == BENCH_CIPHER || a->kind == BENCH_AEAD) {
        sop.cipher = (uint32_t)a->cdev_cipher;
        sop.keylen = a->keylen;
        sop.key = (uint8_t *)bench_key;
    } else {
        sop.mac = (uint32_t)a->cdev_mac;
        if (a->kind == BENCH_MAC) {
            sop.mackeylen = a->keylen;
            sop.mackey = (uint8_t *)bench_key;
        }
    }
    if (ioctl(st->fd, CIOCGSESSION, &sop) < 0) {
        bench_set_absent(s, name, "CIOCGSESSION: %s", strerror(errno));
        cdev_close(st);
        return;
    }
    st->ses = sop.ses;
    st->have_ses = 1;
    inst = bench_set_add(s, name, BENCH_FAM_BARE);
    if (inst == NULL) {
        cdev_close(st);
        return;
    }
    inst->ops = &cdev_ops;
    inst->st = st;
    memset(&info, 0, sizeof(info));
    info.ses = st->ses;
    if (ioctl(st->fd, CIOCGSESSINFO, &info) == 0) {
        const struct alg_info *ai = a->kind == BENCH_CIPHER || a->kind == BENCH_AEAD
                                        ? &info.cipher_info : &info.hash_info;

        snprintf(inst->driver, sizeof(inst->driver), "%.*s",
                 CRYPTODEV_MAX_ALG_NAME, ai->cra_driver_name);
        inst->hw = (info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY) != 0;
    } else {
        snprintf(inst->driver, sizeof(inst->driver), "?");
    }
}
