/*
 * System-call helpers for AF_ALG and the kernel's crypto registry: the
 * bottom layer.  Functions return -errno on failure (errno saved at once,
 * before anything else can clobber it) and never raise OpenSSL errors.
 */
#ifndef HWAF_AFALG_SYS_H
#define HWAF_AFALG_SYS_H

#include <stddef.h>
#include <sys/types.h>

/* socket(AF_ALG) + bind(type, name): a transform socket, or -errno; *call
 * (when call != NULL) names the call that failed. */
int afalg_bind(const char *type, const char *name, const char **call);
int afalg_setkey(int tfm, const unsigned char *key, size_t keylen);
/* accept(): an operation socket, or -errno. */
int afalg_accept(int fd);
/*
 * Raise the socket's send and receive buffers (best effort) and return the
 * smaller.  One operation must fit both: the send buffer or sendmsg() waits
 * for a reader that never comes; the receive buffer or one read() processes
 * only part of it (which restarts an XTS tweak).
 */
size_t afalg_grow_buffers(int fd, size_t want);
/*
 * The most data one request can carry before the kernel runs out of the
 * socket's option memory for its scatterlists (read() fails with ENOMEM):
 * a cipher request (aead 0) or an AEAD message (aead 1).
 */
size_t afalg_optmem_budget(int aead);

/*
 * One sendmsg() carrying the operation, the IV (when iv != NULL) and the
 * data.  Returns bytes accepted or -errno.
 */
ssize_t afalg_send_op(int op, int enc, const unsigned char *iv, size_t ivlen,
                      const void *in, size_t len, int more);
/*
 * An AEAD operation: one sendmsg() carrying the operation, the IV, the
 * length of the associated data and the data gathered from iov[] (AAD first).
 * Returns bytes accepted or -errno.
 */
struct iovec;
ssize_t afalg_send_aead(int op, int enc, const unsigned char *iv, size_t ivlen,
                        size_t assoclen, const struct iovec *iov, int iovcnt);
/* ALG_SET_AEAD_AUTHSIZE on a transform socket: 0 or -errno. */
int afalg_set_authsize(int tfm, size_t authsize);
/* One readv() that must fill every iov[]: 0, -errno (-EBADMSG: the AEAD
 * tag did not match), or -EIO on a short read.  Through the same buffer as
 * afalg_read_all() where the kernel needs it, unless direct: the caller
 * made fork() harmless to the iov[] whose bytes it keeps (they lie in
 * pages of its own that no other thread writes), so straight into them. */
int afalg_readv_all(int op, struct iovec *iov, int iovcnt, int direct);

/* send() with MSG_MORE until all of in[] is accepted; 0 or -errno. */
int afalg_send_all(int op, const void *in, size_t len, int more);
/* read() until len bytes arrived; 0, -errno, or -EIO on a short read.
 * On kernels whose AF_ALG read() is not fork-safe, through a buffer of the
 * thread's own (see afalg_sys.c). */
int afalg_read_all(int op, void *out, size_t len);
/*
 * One read() of all len bytes, for answers that cannot come in pieces: a
 * hash socket finishes its hash at the first read, and an XTS data unit read
 * in two pieces is two data units.  0, -errno, or -EIO on a short read.
 * Through the same buffer as afalg_read_all() where the kernel needs it.
 */
int afalg_read_whole(int op, void *out, size_t len);
/*
 * A hash socket's answer, as afalg_read_whole() but straight into out on
 * every kernel: the hash read copies a result the kernel keeps in its own
 * memory (copy_to_user, algif_hash's recvmsg), holding no page of out[]
 * while it works, so fork() cannot split it.
 */
int afalg_read_hash(int op, void *out, size_t len);
/* 1 when this kernel's AF_ALG read() needs that buffer (before 6.5). */
int afalg_read_bounced(void);

/*
 * Zero-copy input: move len bytes of page-aligned user memory into the
 * operation socket through a pipe (vmsplice + splice, never SPLICE_F_GIFT).
 * more: the operation goes on after these bytes.  len must fit both the
 * pipe and the socket's send buffer, or this waits for a reader that never
 * comes.  0 or -errno; *call (when call != NULL) names the call that failed.
 */
int afalg_splice_in(int op, int pipe_r, int pipe_w, const void *in, size_t len,
                    int more, const char **call);

/* What the kernel's registry says about one driver. */
typedef struct afalg_reginfo_st {
    char name[128];
    char driver[128];
    char module[64];
    char type[32];
    int priority;
    int async;      /* 1, 0, -1 unknown */
    int internal;
    int selftest_ok;
} afalg_reginfo;

/*
 * Every /proc/crypto entry whose name is `name` and whose type is one of the
 * space-separated `types`.  Returns how many were stored (at most max), or
 * -errno when /proc/crypto cannot be read.  Read from the registry's copy
 * in memory, which the first call takes when none is held
 * (afalg_registry_hold).
 */
int afalg_proc_crypto(const char *name, const char *types, afalg_reginfo *out,
                      int max);
/*
 * Keep a copy of /proc/crypto in memory for the afalg_proc_crypto() calls
 * that follow: the kernel prints its whole registry at each read (about 2 ms
 * in the test rig's guest), and a probe asks about a dozen names.  Read
 * when no copy is held, or again when refresh (a bind may have added an
 * instance).  0 or -errno.  Not thread-safe: for the probe, under its
 * lock.
 */
int afalg_registry_hold(int refresh);
void afalg_registry_release(void);

/*
 * A driver's flags from crypto_user (NETLINK_CRYPTO).  Returns 0 and sets
 * *flags, or -errno (typically -EPROTONOSUPPORT when the kernel has no
 * crypto_user; -ENOENT for a driver the dump does not list).  The first
 * call after afalg_netlink_release() asks for every driver's flags in one
 * dump and keeps them (its error too) until the next release.  Not
 * thread-safe: for the probe, under its lock.
 */
int afalg_netlink_flags(const char *driver, unsigned int *flags);
void afalg_netlink_release(void);
#define HWAF_CRYPTO_ALG_LARVAL 0x00000010u
#define HWAF_CRYPTO_ALG_ASYNC 0x00000080u
#define HWAF_CRYPTO_ALG_KERN_DRIVER_ONLY 0x00001000u

#endif
