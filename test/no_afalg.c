/*
 * hwaf-no-afalg: run a command as on a kernel without AF_ALG.  A seccomp
 * filter makes socket(AF_ALG, ...) fail with EAFNOSUPPORT, the answer of a
 * kernel built without CONFIG_CRYPTO_USER_API; everything else is allowed.
 * The filter is inherited by every child (dpkg's maintainer scripts).
 * Used by test/package_test.sh: installing the package on such a machine.
 *
 *   hwaf-no-afalg COMMAND [ARGS...]
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
/* the low 32 bits of the first argument */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define ARG0_LO (offsetof(struct seccomp_data, args[0]) + 4)
#else
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#endif

int main(int argc, char **argv)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_ALG, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    if (argc < 2) {
        fprintf(stderr, "usage: hwaf-no-afalg COMMAND [ARGS...]\n");
        return 2;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        || syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        fprintf(stderr, "hwaf-no-afalg: seccomp: %s\n", strerror(errno));
        return 2;
    }
    if (socket(AF_ALG, SOCK_SEQPACKET, 0) >= 0 || errno != EAFNOSUPPORT) {
        fprintf(stderr, "hwaf-no-afalg: the filter does not refuse AF_ALG\n");
        return 2;
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "hwaf-no-afalg: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
