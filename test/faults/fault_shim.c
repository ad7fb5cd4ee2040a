/* The system-call fault injector: see fault_shim.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "fault_shim.h"

#define MAX_NAMES 4096

static __thread int armed;
static __thread unsigned nth_, calls_;
static __thread enum fault_kind kind_;
static __thread int err_;
static __thread const char *fired_;
static __thread const char *names_[MAX_NAMES];
static int seen_hwaf;
static int mmap_only;

void fault_arm(unsigned nth, enum fault_kind kind, int err)
{
    nth_ = nth;
    kind_ = kind;
    err_ = err;
    calls_ = 0;
    fired_ = NULL;
    armed = 1;
}

void fault_disarm(void) { armed = 0; }
unsigned fault_calls(void) { return calls_; }
const char *fault_fired(void) { return fired_; }
int fault_shim_active(void) { return seen_hwaf; }
void fault_mmap_only(int on) { mmap_only = on; }

const char *fault_call_name(unsigned i)
{
    return i >= 1 && i <= MAX_NAMES && i <= calls_ ? names_[i - 1] : NULL;
}

static int from_hwaf(const void *ret)
{
    Dl_info info;
    size_t n;

    if (dladdr(ret, &info) == 0 || info.dli_fname == NULL)
        return 0;
    n = strlen(info.dli_fname);
    return n >= 7 && strcmp(info.dli_fname + n - 7, "hwaf.so") == 0;
}

/*
 * Decide for one call: 0 = run it normally, 1 = fail it with errno err_,
 * 2 = make it short.  can_short says whether the call has a length.
 */
static int decide(const char *name, const void *ret, int can_short)
{
    if (!from_hwaf(ret))
        return 0;
    seen_hwaf = 1;
    if (!armed || (mmap_only && strcmp(name, "mmap") != 0))
        return 0;
    calls_++;
    if (calls_ <= MAX_NAMES)
        names_[calls_ - 1] = name;
    if (calls_ != nth_ || kind_ == FAULT_COUNT)
        return 0;
    if (kind_ == FAULT_SHORT) {
        if (!can_short)
            return 0;
        fired_ = name;
        return 2;
    }
    fired_ = name;
    return 1;
}

static size_t half(size_t n) { return n > 1 ? n / 2 : n; }

#define REAL(name) \
    static __typeof__(name) *real_##name; \
    if (real_##name == NULL) \
        real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
#define RET __builtin_return_address(0)
#define FAIL(val) do { errno = err_; return (val); } while (0)

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    REAL(mmap);
    if (mmap_only && decide("mmap", RET, 0))
        FAIL(MAP_FAILED);
    return real_mmap(addr, len, prot, flags, fd, off);
}

int socket(int domain, int type, int protocol)
{
    REAL(socket);
    if (decide("socket", RET, 0))
        FAIL(-1);
    return real_socket(domain, type, protocol);
}

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    REAL(bind);
    if (decide("bind", RET, 0))
        FAIL(-1);
    return real_bind(fd, sa, len);
}

int setsockopt(int fd, int level, int opt, const void *val, socklen_t len)
{
    REAL(setsockopt);
    if (decide("setsockopt", RET, 0))
        FAIL(-1);
    return real_setsockopt(fd, level, opt, val, len);
}

int getsockopt(int fd, int level, int opt, void *val, socklen_t *len)
{
    REAL(getsockopt);
    if (decide("getsockopt", RET, 0))
        FAIL(-1);
    return real_getsockopt(fd, level, opt, val, len);
}

int accept(int fd, struct sockaddr *sa, socklen_t *len)
{
    REAL(accept);
    if (decide("accept", RET, 0))
        FAIL(-1);
    return real_accept(fd, sa, len);
}

int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
    REAL(accept4);
    if (decide("accept", RET, 0))
        FAIL(-1);
    return real_accept4(fd, sa, len, flags);
}

/* Bytes of an iovec array. */
static size_t iov_total(const struct iovec *iov, size_t n)
{
    size_t t = 0, i;

    for (i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* The first half (in bytes) of an iovec array, into out[] (at most
 * MAX_IOV entries); returns the number of entries. */
#define MAX_IOV 16
static size_t iov_half(const struct iovec *iov, size_t n, struct iovec *out)
{
    size_t want = half(iov_total(iov, n)), k = 0;

    while (want > 0 && k < n && k < MAX_IOV) {
        out[k] = iov[k];
        if (out[k].iov_len > want)
            out[k].iov_len = want;
        want -= out[k].iov_len;
        k++;
    }
    return k;
}

/* Several buffers (GCM: AAD, data, tag) can be made short too. */
ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    REAL(sendmsg);
    int d = decide("sendmsg", RET, msg->msg_iovlen <= MAX_IOV
                   && iov_total(msg->msg_iov, msg->msg_iovlen) > 1);

    if (d == 1)
        FAIL(-1);
    if (d == 2) {
        struct msghdr m = *msg;
        struct iovec v[MAX_IOV];

        m.msg_iovlen = iov_half(msg->msg_iov, msg->msg_iovlen, v);
        m.msg_iov = v;
        return real_sendmsg(fd, &m, flags);
    }
    return real_sendmsg(fd, msg, flags);
}

/* GCM reads AAD, data and tag in one readv(). */
ssize_t readv(int fd, const struct iovec *iov, int n)
{
    REAL(readv);
    int d = decide("readv", RET, n > 0 && n <= MAX_IOV && iov_total(iov, (size_t)n) > 1);

    if (d == 1)
        FAIL(-1);
    if (d == 2) {
        struct iovec v[MAX_IOV];

        return real_readv(fd, v, (int)iov_half(iov, (size_t)n, v));
    }
    return real_readv(fd, iov, n);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    REAL(send);
    int d = decide("send", RET, len > 1);

    if (d == 1)
        FAIL(-1);
    return real_send(fd, buf, d == 2 ? half(len) : len, flags);
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags,
               const struct sockaddr *sa, socklen_t salen)
{
    REAL(sendto);
    int d = decide("send", RET, len > 1);

    if (d == 1)
        FAIL(-1);
    return real_sendto(fd, buf, d == 2 ? half(len) : len, flags, sa, salen);
}

ssize_t read(int fd, void *buf, size_t len)
{
    REAL(read);
    int d = decide("read", RET, len > 1);

    if (d == 1)
        FAIL(-1);
    return real_read(fd, buf, d == 2 ? half(len) : len);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    REAL(recv);
    int d = decide("recv", RET, len > 1);

    if (d == 1)
        FAIL(-1);
    return real_recv(fd, buf, d == 2 ? half(len) : len, flags);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    REAL(recvmsg);
    if (decide("recvmsg", RET, 0))
        FAIL(-1);
    return real_recvmsg(fd, msg, flags);
}

ssize_t vmsplice(int fd, const struct iovec *iov, size_t n, unsigned int flags)
{
    REAL(vmsplice);
    int d = decide("vmsplice", RET, n == 1 && iov[0].iov_len > 1);

    if (d == 1)
        FAIL(-1);
    if (d == 2) {
        struct iovec v = iov[0];

        v.iov_len = half(v.iov_len);
        return real_vmsplice(fd, &v, 1, flags);
    }
    return real_vmsplice(fd, iov, n, flags);
}

ssize_t splice(int fdin, loff_t *offin, int fdout, loff_t *offout, size_t len,
               unsigned int flags)
{
    REAL(splice);
    int d = decide("splice", RET, len > 1);

    if (d == 1)
        FAIL(-1);
    return real_splice(fdin, offin, fdout, offout, d == 2 ? half(len) : len, flags);
}

int pipe(int fds[2])
{
    REAL(pipe);
    if (decide("pipe", RET, 0))
        FAIL(-1);
    return real_pipe(fds);
}

int pipe2(int fds[2], int flags)
{
    REAL(pipe2);
    if (decide("pipe", RET, 0))
        FAIL(-1);
    return real_pipe2(fds, flags);
}

int open(const char *path, int flags, ...)
{
    REAL(open);
    mode_t mode = 0;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;

        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (decide("open", RET, 0))
        FAIL(-1);
    return real_open(path, flags, mode);
}

int ioctl(int fd, unsigned long req, ...)
{
    REAL(ioctl);
    va_list ap;
    void *arg;

    va_start(ap, req);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (decide("ioctl", RET, 0))
        FAIL(-1);
    return real_ioctl(fd, req, arg);
}

int fcntl(int fd, int cmd, ...)
{
    REAL(fcntl);
    va_list ap;
    void *arg;

    va_start(ap, cmd);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (decide("fcntl", RET, 0))
        FAIL(-1);
    return real_fcntl(fd, cmd, arg);
}

/* Linux frees the descriptor even when close() reports an error. */
int close(int fd)
{
    REAL(close);
    if (decide("close", RET, 0)) {
        real_close(fd);
        FAIL(-1);
    }
    return real_close(fd);
}
