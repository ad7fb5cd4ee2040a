/* System-call helpers for AF_ALG and the kernel's crypto registry. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <pthread.h>
#include <linux/if_alg.h>
#include <linux/netlink.h>
#include <linux/cryptouser.h>
#include "afalg_sys.h"
#include "hwaf_sys.h"

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef SOL_ALG
#define SOL_ALG 279
#endif

int afalg_bind(const char *type, const char *name, const char **call)
{
    struct sockaddr_alg sa;
    int fd, err;

    if (strlen(type) >= sizeof(sa.salg_type) || strlen(name) >= sizeof(sa.salg_name))
        return -ENAMETOOLONG;
    memset(&sa, 0, sizeof(sa));
    sa.salg_family = AF_ALG;
    strcpy((char *)sa.salg_type, type);
    strcpy((char *)sa.salg_name, name);
    fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err = errno;
        if (call != NULL)
            *call = "socket";
        return hwaf_sys_error(err);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        err = errno;
        close(fd);
        if (call != NULL)
            *call = "bind";
        return hwaf_sys_error(err);
    }
    return fd;
}

int afalg_setkey(int tfm, const unsigned char *key, size_t keylen)
{
    if (setsockopt(tfm, SOL_ALG, ALG_SET_KEY, key, (socklen_t)keylen) != 0)
        return hwaf_sys_error(errno);
    return 0;
}

int afalg_accept(int fd)
{
    int op = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    return op < 0 ? hwaf_sys_error(errno) : op;
}

/*
 * The kernel describes one request's data with scatterlists it allocates
 * from the socket's option memory, net.core.optmem_max bytes: 20480 by
 * default on a 64-bit kernel, 10240 on a 32-bit one.  Past that read()
 * fails with ENOMEM.  Measured on armhf 6.1 (optmem_max 10240): requests of
 * 160 KiB work, the 348 KiB its send buffer allows fail.  So a request
 * carries at most 16 bytes of data per byte of option memory.  An AEAD
 * message (one request, AAD and data) measured there: 256 KiB work,
 * 320 KiB fail; it may carry 24 bytes per byte (240 KiB on armhf; above
 * the send buffer on a 64-bit kernel, where 384 KiB work).  When the value
 * cannot be read, the 32-bit default is assumed.
 */
#define AFALG_OPTMEM_DEFAULT 10240
#define AFALG_DATA_PER_OPTMEM 16
#define AFALG_AEAD_DATA_PER_OPTMEM 24

size_t afalg_optmem_budget(int aead)
{
    static size_t optmem;   /* 0: not read yet */
    size_t b = __atomic_load_n(&optmem, __ATOMIC_ACQUIRE);
    long v = AFALG_OPTMEM_DEFAULT;
    char buf[32];
    ssize_t n;
    int fd;

    if (b == 0) {
        fd = open("/proc/sys/net/core/optmem_max", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            n = read(fd, buf, sizeof(buf) - 1);
            close(fd);
            if (n > 0) {
                buf[n] = '\0';
                v = strtol(buf, NULL, 10);
                if (v < 1024)
                    v = AFALG_OPTMEM_DEFAULT;
            }
        }
        b = (size_t)v;
        __atomic_store_n(&optmem, b, __ATOMIC_RELEASE);
    }
    return b * (aead ? AFALG_AEAD_DATA_PER_OPTMEM : AFALG_DATA_PER_OPTMEM);
}

size_t afalg_grow_buffers(int fd, size_t want)
{
    static const int opt[2] = { SO_SNDBUF, SO_RCVBUF };
    size_t got = (size_t)-1;
    int i;

    for (i = 0; i < 2; i++) {
        int val = (int)want;
        socklen_t len = sizeof(val);

        (void)setsockopt(fd, SOL_SOCKET, opt[i], &val, sizeof(val));
        if (getsockopt(fd, SOL_SOCKET, opt[i], &val, &len) != 0) {
            hwaf_sys_error(errno);  /* counted when passing; errno kept */
            return 0;
        }
        if (val < 0)
            return 0;
        if ((size_t)val < got)
            got = (size_t)val;
    }
    return got;
}

ssize_t afalg_send_op(int op, int enc, const unsigned char *iv, size_t ivlen,
                      const void *in, size_t len, int more)
{
    /* Room for ALG_SET_OP and ALG_SET_IV with a 16-byte IV. */
    union {
        char buf[CMSG_SPACE(sizeof(__u32)) + CMSG_SPACE(sizeof(struct af_alg_iv) + 16)];
        struct cmsghdr align;
    } cbuf;
    struct msghdr msg;
    struct cmsghdr *c;
    struct iovec iov;
    ssize_t n;

    if (ivlen > 16)
        return -EINVAL;
    memset(&cbuf, 0, sizeof(cbuf));
    memset(&msg, 0, sizeof(msg));
    iov.iov_base = (void *)in;
    iov.iov_len = len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(__u32))
        + (iv != NULL ? CMSG_SPACE(sizeof(struct af_alg_iv) + ivlen) : 0);

    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_OP;
    c->cmsg_len = CMSG_LEN(sizeof(__u32));
    *(__u32 *)CMSG_DATA(c) = enc ? ALG_OP_ENCRYPT : ALG_OP_DECRYPT;
    if (iv != NULL) {
        struct af_alg_iv *aiv;

        c = CMSG_NXTHDR(&msg, c);
        c->cmsg_level = SOL_ALG;
        c->cmsg_type = ALG_SET_IV;
        c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + ivlen);
        aiv = (struct af_alg_iv *)CMSG_DATA(c);
        aiv->ivlen = (__u32)ivlen;
        memcpy(aiv->iv, iv, ivlen);
    }
    n = sendmsg(op, &msg, more ? MSG_MORE : 0);
    return n < 0 ? hwaf_sys_error(errno) : n;
}

ssize_t afalg_send_aead(int op, int enc, const unsigned char *iv, size_t ivlen,
                        size_t assoclen, const struct iovec *iov, int iovcnt)
{
    union {
        char buf[2 * CMSG_SPACE(sizeof(__u32)) + CMSG_SPACE(sizeof(struct af_alg_iv) + 16)];
        struct cmsghdr align;
    } cbuf;
    struct msghdr msg;
    struct cmsghdr *c;
    struct af_alg_iv *aiv;
    ssize_t n;

    if (ivlen > 16)
        return -EINVAL;
    memset(&cbuf, 0, sizeof(cbuf));
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = (struct iovec *)iov;
    msg.msg_iovlen = (size_t)iovcnt;
    msg.msg_control = cbuf.buf;
    msg.msg_controllen = 2 * CMSG_SPACE(sizeof(__u32))
                         + CMSG_SPACE(sizeof(struct af_alg_iv) + ivlen);

    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_OP;
    c->cmsg_len = CMSG_LEN(sizeof(__u32));
    *(__u32 *)CMSG_DATA(c) = enc ? ALG_OP_ENCRYPT : ALG_OP_DECRYPT;
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_IV;
    c->cmsg_len = CMSG_LEN(sizeof(struct af_alg_iv) + ivlen);
    aiv = (struct af_alg_iv *)CMSG_DATA(c);
    aiv->ivlen = (__u32)ivlen;
    memcpy(aiv->iv, iv, ivlen);
    c = CMSG_NXTHDR(&msg, c);
    c->cmsg_level = SOL_ALG;
    c->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
    c->cmsg_len = CMSG_LEN(sizeof(__u32));
    *(__u32 *)CMSG_DATA(c) = (__u32)assoclen;
    n = sendmsg(op, &msg, 0);
    return n < 0 ? hwaf_sys_error(errno) : n;
}

int afalg_set_authsize(int tfm, size_t authsize)
{
    if (setsockopt(tfm, SOL_ALG, ALG_SET_AEAD_AUTHSIZE, NULL, (socklen_t)authsize) != 0)
        return hwaf_sys_error(errno);
    return 0;
}


int afalg_send_all(int op, const void *in, size_t len, int more)
{
    const unsigned char *p = in;

    while (len > 0) {
        ssize_t n = send(op, p, len, more ? MSG_MORE : 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return hwaf_sys_error(errno);
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/*
 * Kernels before 6.5 hold the pages of an AF_ALG read() with a plain page
 * reference (FOLL_GET), which fork() does not see.  When a thread forks
 * while the kernel writes a result, and any thread of the parent writes to
 * the same page meanwhile, the parent gets a copy of the page and the rest
 * of the result lands in the child's.  (On 6.1, four threads working while
 * the main thread forked got a few wrong results per 10,000 operations;
 * none on 6.12, whose AF_ALG pins pages with FOLL_PIN, which fork() copies
 * for the parent at once.)  On such kernels the result goes through a
 * buffer of the reading thread's own, which fork() leaves out of the child
 * (MADV_WIPEONFORK), and is copied out after read() returns.
 */
static int fork_unsafe_read = -1;
static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static __thread unsigned char *bounce;
static __thread size_t bounce_len;

struct bounce_st {
    void *p;
    size_t len;
};

static void bounce_free(void *v)
{
    struct bounce_st *b = v;

    munmap(b->p, b->len);
    free(b);
}

static void bounce_setup(void)
{
    struct utsname u;
    int major = 0, minor = 0;

    if (uname(&u) == 0 && sscanf(u.release, "%d.%d", &major, &minor) == 2)
        fork_unsafe_read = major < 6 || (major == 6 && minor < 5);
    else
        fork_unsafe_read = 1;
    if (pthread_key_create(&bounce_key, bounce_free) != 0)
        fork_unsafe_read = 1;
}

int afalg_read_bounced(void)
{
    pthread_once(&bounce_once, bounce_setup);
    return fork_unsafe_read;
}

/* This thread's buffer of at least len bytes, or NULL. */
static unsigned char *bounce_get(size_t len)
{
    struct bounce_st *b;
    void *p;

    if (len <= bounce_len)
        return bounce;
    len = (len + 65535) & ~(size_t)65535;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, len, MADV_WIPEONFORK);
    b = pthread_getspecific(bounce_key);
    if (b == NULL) {
        if ((b = malloc(sizeof(*b))) == NULL) {
            munmap(p, len);
            return NULL;
        }
    } else {
        munmap(b->p, b->len);
    }
    b->p = p;
    b->len = len;
    (void)pthread_setspecific(bounce_key, b);
    bounce = p;
    bounce_len = len;
    return bounce;
}

static int read_all(int op, void *out, size_t len)
{
    unsigned char *p = out;

    while (len > 0) {
        ssize_t n = read(op, p, len);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return hwaf_sys_error(errno);
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_whole(int op, void *out, size_t len)
{
    ssize_t n;

    do
        n = read(op, out, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return hwaf_sys_error(errno);
    return (size_t)n == len ? 0 : -EIO;
}

/* Either read, through this thread's buffer where the kernel needs it. */
static int read_safely(int op, void *out, size_t len, int whole)
{
    unsigned char *b;
    int r;

    if (!afalg_read_bounced())
        return whole ? read_whole(op, out, len) : read_all(op, out, len);
    if ((b = bounce_get(len)) == NULL)
        return -ENOMEM;
    r = whole ? read_whole(op, b, len) : read_all(op, b, len);
    if (r == 0)
        memcpy(out, b, len);
    return r;
}

int afalg_readv_all(int op, struct iovec *iov, int iovcnt, int direct)
{
    unsigned char *b = NULL;
    size_t want = 0, off = 0;
    struct iovec one;
    ssize_t n;
    int i;

    for (i = 0; i < iovcnt; i++)
        want += iov[i].iov_len;
    /* Kernels before 6.5: into this thread's buffer, then scattered. */
    if (!direct && afalg_read_bounced() && want > 0) {
        if ((b = bounce_get(want)) == NULL)
            return -ENOMEM;
        one.iov_base = b;
        one.iov_len = want;
    }
    /* One read per request: a second would wait for a request never sent. */
    do
        n = b != NULL ? readv(op, &one, 1) : readv(op, iov, iovcnt);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return hwaf_sys_error(errno);
    if ((size_t)n != want)
        return -EIO;
    for (i = 0; b != NULL && i < iovcnt; i++) {
        if (iov[i].iov_len > 0)
            memcpy(iov[i].iov_base, b + off, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return 0;
}

int afalg_read_all(int op, void *out, size_t len)
{
    return read_safely(op, out, len, 0);
}

int afalg_read_whole(int op, void *out, size_t len)
{
    return read_safely(op, out, len, 1);
}

int afalg_read_hash(int op, void *out, size_t len)
{
    return read_whole(op, out, len);
}

int afalg_splice_in(int op, int pipe_r, int pipe_w, const void *in, size_t len,
                    int more, const char **call)
{
    struct iovec iov;
    size_t left = len;
    ssize_t n;

    iov.iov_base = (void *)in;
    iov.iov_len = len;
    while (iov.iov_len > 0) {
        n = vmsplice(pipe_w, &iov, 1, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (call != NULL)
                *call = "vmsplice";
            return hwaf_sys_error(errno);
        }
        iov.iov_base = (char *)iov.iov_base + n;
        iov.iov_len -= (size_t)n;
    }
    while (left > 0) {
        n = splice(pipe_r, NULL, op, NULL, left, more ? SPLICE_F_MORE : 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (call != NULL)
                *call = "splice";
            return hwaf_sys_error(errno);
        }
        if (n == 0) {
            if (call != NULL)
                *call = "splice";
            return -EIO;
        }
        left -= (size_t)n;
    }
    return 0;
}

/* Whether the key of a /proc/crypto line (its first kl bytes) is key. */
static int is_key(const char *line, size_t kl, const char *key)
{
    return strlen(key) == kl && memcmp(line, key, kl) == 0;
}

/* v into dst of size bytes, cut short to fit, as snprintf("%s") would
 * (without its formatting machinery: four values per registry entry). */
static void copy_value(char *dst, size_t size, const char *v)
{
    size_t n = strlen(v);

    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* One "key : value" line of /proc/crypto into cur, its key looked at once. */
static void reg_line(char *line, afalg_reginfo *cur)
{
    size_t kl = strcspn(line, " :\n");
    char *v = strchr(line + kl, ':');

    if (v == NULL)
        return;
    for (v++; *v == ' '; v++)
        ;
    v[strcspn(v, "\n")] = '\0';
    if (is_key(line, kl, "name"))
        copy_value(cur->name, sizeof(cur->name), v);
    else if (is_key(line, kl, "driver"))
        copy_value(cur->driver, sizeof(cur->driver), v);
    else if (is_key(line, kl, "module"))
        copy_value(cur->module, sizeof(cur->module), v);
    else if (is_key(line, kl, "type"))
        copy_value(cur->type, sizeof(cur->type), v);
    else if (*v == '\0')
        return;   /* a flag or number with no value: left as it was */
    else if (is_key(line, kl, "priority"))
        cur->priority = atoi(v);
    else if (is_key(line, kl, "async"))
        cur->async = strcmp(v, "yes") == 0;
    else if (is_key(line, kl, "internal"))
        cur->internal = strcmp(v, "yes") == 0;
    else if (is_key(line, kl, "selftest"))
        cur->selftest_ok = strcmp(v, "passed") == 0;
}

static int type_in(const char *type, const char *types)
{
    size_t tl = strlen(type);
    const char *p = types;

    if (tl == 0)
        return 0;
    while ((p = strstr(p, type)) != NULL) {
        if ((p == types || p[-1] == ' ') && (p[tl] == ' ' || p[tl] == '\0'))
            return 1;
        p += tl;
    }
    return 0;
}

/*
 * The copy of /proc/crypto a probe holds, with where each of its entries
 * starts (an entry is its lines up to a blank one) and its name, found in
 * one pass: the probe asks about a dozen names, and reading the whole text
 * line by line for each (through stdio, as this did before) was most of the
 * probe's user-space instructions.
 */
static struct {
    char *text;
    size_t len;
    struct regentry {
        size_t start;      /* its first byte */
        size_t name, nlen; /* its name, when its first line gives it */
    } *e;
    int n;
} registry;

void afalg_registry_release(void)
{
    char *t = registry.text;

    free(registry.e);
    memset(&registry, 0, sizeof(registry));
    free(t);
}

static int registry_index(void)
{
    const char *p = registry.text, *end = registry.text + registry.len;
    int cap = 0, first = 1;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl != NULL ? nl : end;

        if (le == p) {
            first = 1;
        } else if (first) {
            struct regentry *r;
            const char *v = p + 4;

            if (registry.n == cap) {
                cap = cap != 0 ? cap * 2 : 256;
                if ((r = realloc(registry.e, (size_t)cap * sizeof(*r))) == NULL)
                    return -ENOMEM;
                registry.e = r;
            }
            r = &registry.e[registry.n++];
            r->start = (size_t)(p - registry.text);
            r->name = r->nlen = 0;
            if (le - p > 4 && memcmp(p, "name", 4) == 0) {
                while (v < le && *v == ' ')
                    v++;
                if (v < le && *v == ':') {
                    for (v++; v < le && *v == ' '; v++)
                        ;
                    r->name = (size_t)(v - registry.text);
                    r->nlen = (size_t)(le - v);
                }
            }
            first = 0;
        }
        p = le + 1;
    }
    return 0;
}

int afalg_registry_hold(int refresh)
{
    int err;

    if (registry.text != NULL && !refresh)
        return 0;
    afalg_registry_release();
    err = hwaf_sys_read_file("/proc/crypto", 32768, &registry.text, &registry.len);
    if (err == 0 && (err = -registry_index()) != 0)
        afalg_registry_release();
    return err != 0 ? hwaf_sys_error(err) : 0;
}

/* The entry at p (up to end) into cur: 1 when it is name's, else 0. */
static int reg_entry(const char *p, const char *end, const char *name, afalg_reginfo *cur)
{
    memset(cur, 0, sizeof(*cur));
    cur->priority = -1;
    cur->async = -1;
    cur->selftest_ok = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = (size_t)((nl != NULL ? nl : end) - p);
        char line[256];

        if (ll == 0)
            break;   /* the blank line after the entry */
        if (ll > sizeof(line) - 1)
            ll = sizeof(line) - 1;
        memcpy(line, p, ll);
        line[ll] = '\0';
        p += ll + 1;
        reg_line(line, cur);
    }
    return strcmp(cur->name, name) == 0;
}

int afalg_proc_crypto(const char *name, const char *types, afalg_reginfo *out,
                      int max)
{
    size_t nl = strlen(name);
    int i, n = 0, err;

    if (registry.text == NULL && (err = afalg_registry_hold(0)) != 0)
        return err;
    for (i = 0; i < registry.n && n < max; i++) {
        const struct regentry *r = &registry.e[i];
        const char *end = registry.text
                          + (i + 1 < registry.n ? registry.e[i + 1].start : registry.len);

        /* another name's entry: passed over without reading it */
        if (r->nlen != 0 && (r->nlen != nl || memcmp(registry.text + r->name, name, nl) != 0))
            continue;
        if (reg_entry(registry.text + r->start, end, name, &out[n])
            && type_in(out[n].type, types) && !out[n].internal)
            n++;
    }
    return n;
}

/*
 * Every driver's flags from one crypto_user dump (CRYPTO_MSG_GETALG with
 * NLM_F_DUMP), kept while a probe holds them: one socket and a few
 * receives instead of a socket, a request and a reply per driver.
 */
static struct {
    int held;       /* a dump was asked for since the last release */
    int err;        /* its error (-errno), 0 when it succeeded */
    int n, cap;
    struct nlflag {
        char driver[CRYPTO_MAX_NAME];
        unsigned int flags;
    } *v;
} nlflags;

void afalg_netlink_release(void)
{
    free(nlflags.v);
    memset(&nlflags, 0, sizeof(nlflags));
}

/* The entries of one datagram of the dump: 1 at its end (NLMSG_DONE), 0
 * for more to come, -errno. */
static int dump_part(const char *buf, size_t len)
{
    const struct nlmsghdr *h = (const struct nlmsghdr *)(const void *)buf;

    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
        const struct crypto_user_alg *a;
        struct nlflag *f;

        if (h->nlmsg_type == NLMSG_DONE)
            return 1;
        if (h->nlmsg_type == NLMSG_ERROR) {
            const struct nlmsgerr *e = NLMSG_DATA(h);

            return NLMSG_PAYLOAD(h, 0) >= sizeof(*e) && e->error != 0 ? e->error : -EIO;
        }
        if (h->nlmsg_type != CRYPTO_MSG_GETALG || NLMSG_PAYLOAD(h, 0) < sizeof(*a))
            return -EIO;
        a = NLMSG_DATA(h);
        /* A larval entry stands for an instance being made; a lookup by
         * driver name (crypto_user's own) passes over it. */
        if (a->cru_flags & HWAF_CRYPTO_ALG_LARVAL)
            continue;
        if (nlflags.n == nlflags.cap) {
            int cap = nlflags.cap != 0 ? nlflags.cap * 2 : 256;
            struct nlflag *v = realloc(nlflags.v, (size_t)cap * sizeof(*v));

            if (v == NULL)
                return -ENOMEM;
            nlflags.v = v;
            nlflags.cap = cap;
        }
        f = &nlflags.v[nlflags.n++];
        memcpy(f->driver, a->cru_driver_name, sizeof(f->driver));
        f->driver[sizeof(f->driver) - 1] = '\0';
        f->flags = a->cru_flags;
    }
    /* Bytes left that make no whole message: a datagram cut short. */
    return len == 0 ? 0 : -EIO;
}

static int netlink_dump(void)
{
    struct {
        struct nlmsghdr h;
        struct crypto_user_alg cru;
    } req;
    struct sockaddr_nl nl;
    char *buf;
    int fd, err = 0;
    /* A dump's datagram holds at most 64 KiB (crypto_user's own bound). */
    const size_t cap = 65536 + 4096;

    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_CRYPTO);
    if (fd < 0)
        return hwaf_sys_error(errno);
    if ((buf = malloc(cap)) == NULL) {
        close(fd);
        return hwaf_sys_error(ENOMEM);
    }
    memset(&nl, 0, sizeof(nl));
    nl.nl_family = AF_NETLINK;
    memset(&req, 0, sizeof(req));
    req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.cru));
    req.h.nlmsg_type = CRYPTO_MSG_GETALG;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = 1;
    if (sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
        err = hwaf_sys_error(errno);
    while (err == 0) {
        ssize_t n = recv(fd, buf, cap, 0);

        if (n < 0)
            err = hwaf_sys_error(errno);
        else if (n == 0)
            err = -EIO;
        else if ((err = dump_part(buf, (size_t)n)) == 1)
            break;
        else if (err < 0)
            err = hwaf_sys_error(-err);
    }
    free(buf);
    close(fd);
    return err < 0 ? err : 0;
}

int afalg_netlink_flags(const char *driver, unsigned int *flags)
{
    int i;

    if (strlen(driver) >= CRYPTO_MAX_NAME)
        return -ENAMETOOLONG;
    if (!nlflags.held) {
        nlflags.held = 1;
        nlflags.err = netlink_dump();
        if (nlflags.err != 0)
            nlflags.n = 0;
    }
    if (nlflags.err != 0)
        return nlflags.err;
    for (i = 0; i < nlflags.n; i++) {
        if (strcmp(nlflags.v[i].driver, driver) == 0) {
            *flags = nlflags.v[i].flags;
            return 0;
        }
    }
    return -ENOENT;
}
