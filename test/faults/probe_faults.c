/*
 * hwaf-probe-faults: faults during hwaf's load-time probe of the kernel.
 *
 *   hwaf-probe-faults MODULE_DIR [STRIDE [FIRST LAST]]
 *
 * The probe runs once per process, so every case is a child forked before
 * hwaf was ever loaded in this process.  First a child loads hwaf with the
 * calls only counted (the probe's sequence: socket, bind, accept, sendmsg,
 * read, open, ioctl, ... from hwaf.so), and another loads it undisturbed
 * (the reference: each backend's status and the algorithms offered).  Then,
 * for each call n of the sequence (calls FIRST to LAST) and each errno
 * below -- every STRIDE-th of these (call, errno) pairs, all with STRIDE 1
 * -- a child loads hwaf with call n failing, then loads it again in a new
 * library context with no fault.  A passing shortage (EMFILE, ENFILE, ENOMEM,
 * EINTR, EAGAIN) must not be blamed on the kernel nor kept: the first
 * load's status is the reference's or says the backend is unavailable "for
 * now" (never "unusable", never "usable, 0 of"), and the second load gives
 * exactly the reference.  Other errors (EINVAL, EFAULT) are the kernel's
 * answer as far as hwaf can tell: they may drop a driver, but the load must
 * end, without a crash.  Every child runs under an alarm.
 *
 * One more child loads hwaf under a seccomp filter present before the load
 * (allowing everything, as a container's lets hwaf's calls through): the
 * load must give the reference, and a digest forced to the kernel
 * (HWAF_OFFLOAD_MIN=0) must reach it with the right bytes, not be barred
 * as if the filter had come after the load (hwaf_sandbox.c takes the state
 * at load from prctl() when there is no filter, from /proc/self/status
 * under one).
 *
 * Prints one line per defect and a summary; exit 0 when there is none.
 * Linked with the fault shim (fault_shim.c), like hwaf-faults.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <hwaf/hwaf.h>

#include "fault_shim.h"

#define MAX_CALLS 4096
#define TEXT 8192

/* What one load of hwaf reports. */
struct load {
    int loaded;
    char afalg[512], devcrypto[512], algs[TEXT];
};

static const char *module_dir;

static void load(struct load *r)
{
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    OSSL_PROVIDER *p = NULL;
    char *st[3] = { NULL, NULL, NULL };
    OSSL_PARAM params[] = {
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_AFALG_STATUS, &st[0], 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_DEVCRYPTO_STATUS, &st[1], 0),
        OSSL_PARAM_utf8_ptr(HWAF_PARAM_ALGORITHMS, &st[2], 0),
        OSSL_PARAM_END
    };

    memset(r, 0, sizeof(*r));
    if (lib != NULL && OSSL_PROVIDER_set_default_search_path(lib, module_dir))
        p = OSSL_PROVIDER_load(lib, HWAF_PROVIDER_NAME);
    if (p != NULL && OSSL_PROVIDER_get_params(p, params)) {
        r->loaded = 1;
        snprintf(r->afalg, sizeof(r->afalg), "%s", st[0] ? st[0] : "<none>");
        snprintf(r->devcrypto, sizeof(r->devcrypto), "%s", st[1] ? st[1] : "<none>");
        snprintf(r->algs, sizeof(r->algs), "%s", st[2] ? st[2] : "<none>");
    }
    OSSL_PROVIDER_unload(p);
    OSSL_LIB_CTX_free(lib);
    ERR_clear_error();
}

/* Run fn in a child under an alarm; it writes len bytes of its result into
 * out through a pipe.  Returns the child's wait status, or -1. */
static int in_child(void (*fn)(void *, void *), void *arg, void *out, size_t len)
{
    int fd[2], st = 0;
    pid_t pid;
    size_t got = 0;

    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    if ((pid = fork()) < 0)
        return -1;
    if (pid == 0) {
        char *buf = calloc(1, len);
        size_t off = 0;

        close(fd[0]);
        alarm(60);
        fn(arg, buf);
        while (off < len) {
            ssize_t w = write(fd[1], buf + off, len - off);
            if (w <= 0)
                _exit(3);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    memset(out, 0, len);
    while (got < len) {
        ssize_t r = read(fd[0], (char *)out + got, len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd[0]);
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return got == len ? st : (st != 0 ? st : -1);
}

/* ---- the children ---- */

struct counted {
    unsigned calls;
    char names[MAX_CALLS][12];
    struct load l;
};

static void count_child(void *arg, void *out)
{
    struct counted *c = out;
    unsigned i;

    (void)arg;
    fault_arm(0, FAULT_COUNT, 0);
    load(&c->l);
    fault_disarm();
    c->calls = fault_calls();
    for (i = 1; i <= c->calls && i <= MAX_CALLS; i++) {
        const char *n = fault_call_name(i);
        snprintf(c->names[i - 1], sizeof(c->names[i - 1]), "%s", n ? n : "?");
    }
}

static void ref_child(void *arg, void *out)
{
    (void)arg;
    load(out);
}

struct one_case {
    unsigned nth;
    int err;
};
struct case_result {
    char fired[16];
    struct load first, second;
};

static void case_child(void *arg, void *out)
{
    const struct one_case *c = arg;
    struct case_result *r = out;
    const char *f;

    fault_arm(c->nth, FAULT_ERRNO, c->err);
    load(&r->first);
    f = fault_fired();
    fault_disarm();
    snprintf(r->fired, sizeof(r->fired), "%s", f ? f : "");
    load(&r->second);
}

/* A load under a filter present before it, and a digest through the kernel. */
struct filtered_result {
    int filtered;       /* prctl(PR_GET_SECCOMP) said 2 before the load */
    int digest_ok;      /* SHA-256("abc") through hwaf gave the standard's bytes */
    uint64_t kernel_ops, sandbox_fallbacks;
    struct load l;
};

static void filtered_child(void *arg, void *out)
{
    static const unsigned char abc_sha256[32] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
        0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
        0xf2, 0x00, 0x15, 0xad
    };
    struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
    struct sock_fprog prog = { 1, allow };
    struct filtered_result *r = out;
    OSSL_LIB_CTX *lib;
    OSSL_PROVIDER *p = NULL, *d = NULL;
    EVP_MD *md = NULL;
    unsigned char dg[32];
    unsigned int dlen = 0;
    uint64_t ops[2] = { 0, 0 };
    OSSL_PARAM params[] = {
        OSSL_PARAM_uint64(HWAF_PARAM_AFALG_OPS, &ops[0]),
        OSSL_PARAM_uint64(HWAF_PARAM_DEVCRYPTO_OPS, &ops[1]),
        OSSL_PARAM_uint64(HWAF_PARAM_FALLBACKS_SANDBOX, &r->sandbox_fallbacks),
        OSSL_PARAM_END
    };

    (void)arg;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        || syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
        return;
    r->filtered = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2;
    load(&r->l);   /* the first load in this process: the state at load is taken here */
    setenv("HWAF_OFFLOAD_MIN", "0", 1);
    lib = OSSL_LIB_CTX_new();
    if (lib != NULL && OSSL_PROVIDER_set_default_search_path(lib, module_dir)) {
        p = OSSL_PROVIDER_load(lib, HWAF_PROVIDER_NAME);
        d = OSSL_PROVIDER_load(lib, "default");
    }
    if (p != NULL && d != NULL
        && (md = EVP_MD_fetch(lib, "SHA2-256", "provider=hwaf")) != NULL
        && EVP_Digest("abc", 3, dg, &dlen, md, NULL))
        r->digest_ok = dlen == sizeof(dg) && memcmp(dg, abc_sha256, sizeof(dg)) == 0;
    if (p != NULL && OSSL_PROVIDER_get_params(p, params))
        r->kernel_ops = ops[0] + ops[1];
    EVP_MD_free(md);
    OSSL_PROVIDER_unload(d);
    OSSL_PROVIDER_unload(p);
    OSSL_LIB_CTX_free(lib);
    ERR_clear_error();
}

/* ---- checks ---- */

static int transient(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM || err == EINTR || err == EAGAIN;
}

/* A status after a passing shortage: the reference's, or "for now". */
static const char *bad_first_status(const char *st, const char *ref)
{
    if (strcmp(st, ref) == 0)
        return NULL;
    if (strncmp(st, "unusable", 8) == 0 || strstr(st, "has no") != NULL)
        return "blamed on the kernel";
    if (strncmp(st, "usable, 0 of", 12) == 0)
        return "\"usable\" with nothing offered";
    if (strstr(st, "for now") == NULL)
        return "differs from the reference without saying it is temporary";
    return NULL;
}

int main(int argc, char **argv)
{
    static struct counted cnt;
    static struct load ref;
    static struct case_result r;
    const int errs[] = { EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, EINVAL, EFAULT };
    const unsigned nerrs = sizeof(errs) / sizeof(errs[0]);
    unsigned stride = 1, first = 1, last = MAX_CALLS, n, e;
    unsigned cases = 0, defects = 0, fired = 0, same = 0, temporary = 0, other = 0;

    if (argc != 2 && argc != 3 && argc != 5) {
        fprintf(stderr, "usage: %s MODULE_DIR [STRIDE [FIRST LAST]]\n", argv[0]);
        return 2;
    }
    module_dir = argv[1];
    if (argc >= 3)
        stride = (unsigned)strtoul(argv[2], NULL, 0);
    if (argc == 5) {
        first = (unsigned)strtoul(argv[3], NULL, 0);
        last = (unsigned)strtoul(argv[4], NULL, 0);
    }
    if (stride == 0)
        stride = 1;
    /* libcrypto's own set-up before the first fork, not in every child. */
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);

    /* A first load binds every algorithm, which makes the kernel
     * instantiate templates (gcm(aes), hmac(...)) that /proc/crypto lists
     * from then on: the call sequence is stable only after it. */
    if (in_child(ref_child, NULL, &ref, sizeof(ref)) != 0 || !ref.loaded) {
        printf("defect: hwaf does not load\n");
        return 1;
    }
    if (in_child(count_child, NULL, &cnt, sizeof(cnt)) != 0 || !cnt.l.loaded) {
        printf("defect: hwaf does not load with the calls counted\n");
        return 1;
    }
    if (in_child(ref_child, NULL, &ref, sizeof(ref)) != 0 || !ref.loaded) {
        printf("defect: hwaf does not load\n");
        return 1;
    }
    printf("reference: afalg: %s\nreference: devcrypto: %s\n", ref.afalg, ref.devcrypto);
    printf("probe: %u calls from hwaf.so:", cnt.calls);
    for (n = 0; n < cnt.calls && n < MAX_CALLS; n++)
        printf(" %s", cnt.names[n]);
    printf("\n");
    if (cnt.calls == 0) {
        printf("defect: no call of hwaf.so reached the shim\n");
        return 1;
    }
    if (strcmp(cnt.l.afalg, ref.afalg) != 0 || strcmp(cnt.l.algs, ref.algs) != 0) {
        printf("defect: counting changed the result\n");
        return 1;
    }

    {
        static struct filtered_result fr;
        int st = in_child(filtered_child, NULL, &fr, sizeof(fr));
        const char *why = NULL;

        if (st != 0)
            why = "the child died or failed";
        else if (!fr.filtered)
            why = "the filter could not be installed";
        else if (!fr.l.loaded || strcmp(fr.l.afalg, ref.afalg) != 0
                 || strcmp(fr.l.devcrypto, ref.devcrypto) != 0
                 || strcmp(fr.l.algs, ref.algs) != 0)
            why = "the load differs from the reference";
        else if (!fr.digest_ok)
            why = "SHA-256 through hwaf gave wrong bytes or failed";
        else if (fr.kernel_ops == 0 || fr.sandbox_fallbacks != 0)
            why = "the digest did not reach the kernel (barred by a filter present at load)";
        printf("filter present at load: %s (kernel ops %llu, sandbox fallbacks %llu)\n",
               why != NULL ? why : "load as the reference, digest through the kernel",
               (unsigned long long)fr.kernel_ops, (unsigned long long)fr.sandbox_fallbacks);
        if (why != NULL) {
            printf("defect: under a seccomp filter present at load: %s\n"
                   "  afalg: %s | devcrypto: %s\n", why, fr.l.afalg, fr.l.devcrypto);
            defects++;
        }
    }

    for (n = first; n <= cnt.calls && n <= last && n <= MAX_CALLS; n++) {
        const char *name = cnt.names[n - 1];

        for (e = 0; e < nerrs; e++) {
            struct one_case c = { n, errs[e] };
            const char *why = NULL;
            int st;

            if (((n - 1) * nerrs + e) % stride != 0)
                continue;
            st = in_child(case_child, &c, &r, sizeof(r));

            cases++;
            if (st != 0) {
                printf("defect: call %u (%s) failing with %s: the child %s %d\n", n, name,
                       strerror(errs[e]), WIFSIGNALED(st) ? "died of signal" : "exited with",
                       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
                defects++;
                continue;
            }
            if (r.fired[0] != '\0')
                fired++;
            if (r.fired[0] != '\0' && strcmp(r.fired, name) != 0)
                printf("note: call %u was %s when counted, %s now\n", n, name, r.fired);
            if (!r.first.loaded) {
                why = "hwaf did not load";
            } else if (transient(errs[e])) {
                const char *ba = bad_first_status(r.first.afalg, ref.afalg);
                const char *bd = bad_first_status(r.first.devcrypto, ref.devcrypto);

                if (ba != NULL || bd != NULL)
                    why = ba != NULL ? ba : bd;
                else if (!r.second.loaded || strcmp(r.second.afalg, ref.afalg) != 0
                         || strcmp(r.second.devcrypto, ref.devcrypto) != 0
                         || strcmp(r.second.algs, ref.algs) != 0)
                    why = "the next load did not recover the reference";
                else if (strcmp(r.first.afalg, ref.afalg) == 0
                         && strcmp(r.first.devcrypto, ref.devcrypto) == 0
                         && strcmp(r.first.algs, ref.algs) == 0)
                    same++;
                else
                    temporary++;
            } else {
                other++;
            }
            if (why != NULL) {
                printf("defect: call %u (%s) failing with %s: %s\n"
                       "  first load:  afalg: %s | devcrypto: %s\n"
                       "  second load: afalg: %s | devcrypto: %s\n",
                       n, name, strerror(errs[e]), why, r.first.afalg, r.first.devcrypto,
                       r.second.afalg, r.second.devcrypto);
                defects++;
            }
        }
    }
    printf("hwaf-probe-faults: calls %u-%u of %u, every %u of the (call, errno) pairs: %u cases (%u injected): %u unchanged, %u reported as temporary and "
           "recovered at the next load, %u other errors survived; %u defects\n",
           first, last < cnt.calls ? last : cnt.calls, cnt.calls, stride, cases, fired, same, temporary,
           other, defects);
    return defects == 0 && cases > 0 && fired > 0 ? 0 : 1;
}
