/*
 * System-call helpers for /dev/crypto and the process's one open file of
 * it (see devcrypto_sys.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "devcrypto_sys.h"
#include "hwaf_debug.h"
#include "hwaf_sys.h"

int dc_open(void)
{
    int fd = open(DC_DEVICE, O_RDWR | O_CLOEXEC);

    return fd < 0 ? hwaf_sys_error(errno) : fd;
}

int dc_ioctl(int fd, unsigned long req, void *arg)
{
    int r;

    do
        r = ioctl(fd, req, arg);
    while (r < 0 && errno == EINTR);
    return r < 0 ? hwaf_sys_error(errno) : 0;
}

int dc_session(int fd, uint32_t cipher, uint32_t mac,
               const unsigned char *key, size_t keylen, uint32_t *ses)
{
    struct session_op sop;
    int r;

    memset(&sop, 0, sizeof(sop));
    sop.cipher = cipher;
    sop.mac = mac;
    if (cipher != 0) {
        sop.keylen = (uint32_t)keylen;
        sop.key = (uint8_t *)key;
    } else {
        sop.mackeylen = (uint32_t)keylen;
        sop.mackey = (uint8_t *)key;
    }
    r = dc_ioctl(fd, CIOCGSESSION, &sop);
    if (r == 0)
        *ses = sop.ses;
    return r;
}

int dc_session_info(int fd, uint32_t ses, struct session_info_op *info)
{
    memset(info, 0, sizeof(*info));
    info->ses = ses;
    return dc_ioctl(fd, CIOCGSESSINFO, info);
}

void dc_free_session(int fd, uint32_t ses)
{
    int r = dc_ioctl(fd, CIOCFSESSION, &ses);

    if (r < 0)
        HWAF_DEBUG("CIOCFSESSION %08x: %s", ses, strerror(-r));
}

int dc_crypt(int fd, uint32_t ses, int op, int flags, const unsigned char *iv,
             const unsigned char *src, unsigned char *dst, size_t len,
             unsigned char *mac)
{
    struct crypt_op cop;

    memset(&cop, 0, sizeof(cop));
    cop.ses = ses;
    cop.op = (uint16_t)op;
    cop.flags = (uint16_t)flags;
    cop.len = (uint32_t)len;
    cop.src = (uint8_t *)src;
    cop.dst = dst;
    cop.mac = mac;
    cop.iv = (uint8_t *)iv;
    return dc_ioctl(fd, CIOCCRYPT, &cop);
}

int dc_auth_crypt(int fd, uint32_t ses, int op, const unsigned char *iv,
                  const unsigned char *aad, size_t aadlen,
                  unsigned char *buf, size_t len, size_t taglen)
{
    struct crypt_auth_op cop;

    memset(&cop, 0, sizeof(cop));
    cop.ses = ses;
    cop.op = (uint16_t)op;
    cop.len = (uint32_t)len;
    cop.auth_len = (uint32_t)aadlen;
    cop.auth_src = aadlen > 0 ? (uint8_t *)aad : NULL;
    cop.src = buf;
    cop.dst = buf;
    cop.tag_len = (uint32_t)taglen;
    cop.iv = (uint8_t *)iv;
    return dc_ioctl(fd, CIOCAUTHCRYPT, &cop);
}

/* ---- the process's open file ---- */

static struct {
    int fd;               /* -1: none open in this generation */
    unsigned int gen;     /* fork generation fd was opened in */
    unsigned long refs;
} dc_file = { -1, 0, 0 };

/*
 * The lock of dc_file: 0 when free, else (generation << 1) | 1.  A child
 * after fork() finds a lock a vanished parent thread held marked with the
 * older generation and takes it over: it never blocks on a lock nobody in
 * it can release.  Held only for a few instructions, never across a
 * system call that can block.
 */
static unsigned long dc_file_lockword;

static void dc_file_lock(void)
{
    for (;;) {
        unsigned int gen = __atomic_load_n(&hwaf_fork_generation, __ATOMIC_SEQ_CST);
        unsigned long cur = __atomic_load_n(&dc_file_lockword, __ATOMIC_ACQUIRE);
        unsigned long mine = ((unsigned long)gen << 1) | 1;

        if ((cur == 0 || (unsigned int)(cur >> 1) != gen)
            && __atomic_compare_exchange_n(&dc_file_lockword, &cur, mine, 0,
                                           __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
        sched_yield();
    }
}

static void dc_file_unlock(void)
{
    __atomic_store_n(&dc_file_lockword, 0, __ATOMIC_RELEASE);
}

int dc_file_get(unsigned int *gen)
{
    unsigned int now;
    int fd = -1, spare;

    for (;;) {
        dc_file_lock();
        now = hwaf_fork_generation;
        if (dc_file.gen != now) {
            /* In a child: the open file is the parent's; leave it to the
             * objects that still have sessions there. */
            dc_file.fd = -1;
            dc_file.refs = 0;
            dc_file.gen = now;
        }
        if (dc_file.fd >= 0 || fd >= 0) {
            spare = -1;
            if (dc_file.fd < 0)
                dc_file.fd = fd;        /* ours becomes the process's */
            else
                spare = fd;             /* another thread was quicker */
            dc_file.refs++;
            fd = dc_file.fd;
            dc_file_unlock();
            if (spare >= 0)
                close(spare);
            *gen = now;
            return fd;
        }
        dc_file_unlock();
        /* Opened outside the lock: open() may sleep. */
        fd = dc_open();
        if (fd < 0)
            return fd;
        HWAF_DEBUG("devcrypto: opened " DC_DEVICE " for this process (fd %d)", fd);
    }
}

void dc_file_put(int fd, unsigned int gen)
{
    int last = 0;

    if (fd < 0)
        return;
    dc_file_lock();
    if (gen == hwaf_fork_generation && gen == dc_file.gen && fd == dc_file.fd
        && --dc_file.refs == 0) {
        dc_file.fd = -1;
        last = 1;
    }
    dc_file_unlock();
    if (last)
        close(fd);
}
