/*
 * load-syscalls: what the kernel calls of hwaf's load cost on this machine,
 * each timed over N repetitions (CLOCK_MONOTONIC), in two rounds (the first
 * pays for first use).  Not built by CMake; in the test guest:
 *
 *   cc -O2 -o build/load-syscalls bench/load-syscalls.c
 *   tools/guest/run --kernel 6.1 -- build/load-syscalls
 *
 * docs/benchmark.md ("hwaf's load: the calibration file read and the texts
 * built when asked") quotes it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/cryptouser.h>
#include <linux/if_alg.h>
#include <linux/netlink.h>

#define N 50

static char buf[65536];

static double now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void read_all(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    close(fd);
}

static void bind_close(const char *type, const char *name)
{
    struct sockaddr_alg sa;
    int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.salg_family = AF_ALG;
    snprintf((char *)sa.salg_type, sizeof(sa.salg_type), "%s", type);
    snprintf((char *)sa.salg_name, sizeof(sa.salg_name), "%s", name);
    if (fd >= 0) {
        (void)bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        close(fd);
    }
}

/* One crypto_user dump of every algorithm (CRYPTO_MSG_GETALG, NLM_F_DUMP),
 * as the probe asks it: socket, request, receives to NLMSG_DONE, close. */
static void netlink_dump(void)
{
    struct {
        struct nlmsghdr h;
        struct crypto_user_alg cru;
    } req;
    struct sockaddr_nl sa;
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_CRYPTO), done = 0;

    if (fd < 0)
        return;
    memset(&req, 0, sizeof(req));
    memset(&sa, 0, sizeof(sa));
    sa.nl_family = AF_NETLINK;
    req.h.nlmsg_len = sizeof(req);
    req.h.nlmsg_type = CRYPTO_MSG_GETALG;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = 1;
    if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return;
    }
    while (!done) {
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        struct nlmsghdr *h = (struct nlmsghdr *)(void *)buf;
        size_t len = n > 0 ? (size_t)n : 0;

        if (n <= 0)
            break;
        for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len))
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR)
                done = 1;
    }
    close(fd);
}

/* The first read of path in a new process (its /proc/self not looked up
 * yet), mean over N children: what a load pays, not a warm loop. */
static void first_read(const char *path, int prctl_instead)
{
    double sum = 0, t;
    int i, fd[2];

    for (i = 0; i < N; i++) {
        if (pipe(fd) != 0)
            return;
        if (fork() == 0) {
            double t0 = now_ms();

            if (prctl_instead)
                (void)prctl(PR_GET_SECCOMP);
            else
                read_all(path);
            t = now_ms() - t0;
            (void)write(fd[1], &t, sizeof(t));
            _exit(0);
        }
        close(fd[1]);
        if (read(fd[0], &t, sizeof(t)) == sizeof(t))
            sum += t;
        close(fd[0]);
        wait(NULL);
    }
    printf("%-36s %.3f ms\n", prctl_instead ? "first prctl(PR_GET_SECCOMP) in a child"
           : "first read of /proc/self/status in a child", sum / N);
}

#define TIME(what, stmt) do {                                   \
        double t0 = now_ms();                                   \
        for (i = 0; i < N; i++) { stmt; }                       \
        printf("%-36s %.3f ms\n", what, (now_ms() - t0) / N);   \
    } while (0)

int main(void)
{
    int i, r, fd;

    for (r = 1; r <= 2; r++) {
        printf("round %d (mean of %d)\n", r, N);
        TIME("read /proc/self/status", read_all("/proc/self/status"));
        TIME("prctl(PR_GET_SECCOMP)", (void)prctl(PR_GET_SECCOMP));
        TIME("read /proc/crypto", read_all("/proc/crypto"));
        TIME("crypto_user dump (CRYPTO_MSG_GETALG)", netlink_dump());
        TIME("socket+bind+close hash sha1-generic", bind_close("hash", "sha1-generic"));
        TIME("socket+bind+close skcipher cbc-aes-aesni",
             bind_close("skcipher", "cbc-aes-aesni"));
        TIME("socket(AF_ALG)+close",
             if ((fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) >= 0) close(fd));
        TIME("open /dev/crypto", if ((fd = open("/dev/crypto", O_RDWR | O_CLOEXEC)) >= 0)
             close(fd));
        first_read("/proc/self/status", 0);
        first_read(NULL, 1);
    }
    return 0;
}
