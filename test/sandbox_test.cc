/*
 * Sandbox*: a seccomp filter installed after hwaf loaded, as OpenSSH's sshd
 * installs one in its pre-authentication child (sandbox-seccomp-filter.c):
 * socket(), accept4(), sendmsg(), ioctl(), splice() and pipes kill the
 * process, open() fails with EACCES.  In a child that installs such a
 * filter, every algorithm (ciphers, digests, AES-GCM, HMAC) must still give
 * the default provider's bytes, through the software path (hwaf_open_fallback),
 * counted as sandbox fallbacks, with nothing on the error queue and
 * without the kernel killing the child; a context forced to the kernel fails cleanly with the
 * sandbox reason.  Before the filter the same contexts reach the kernel
 * (offload_min = 0), so the test proves the switch, not a default.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <string>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <hwaf/hwaf.h>
#include "hwaf_test.h"

using namespace hwaf_test;

namespace {

#define KILL_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define EACCES_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
                      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES)

/* The calls OpenSSH's pre-authentication filter refuses that hwaf's
 * backends and its record would make. */
bool install_sshd_like_filter()
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        KILL_NR(__NR_socket), KILL_NR(__NR_accept4), KILL_NR(__NR_accept),
        KILL_NR(__NR_sendmsg), KILL_NR(__NR_sendto), KILL_NR(__NR_recvmsg),
        KILL_NR(__NR_ioctl), KILL_NR(__NR_splice), KILL_NR(__NR_vmsplice),
        KILL_NR(__NR_pipe2), KILL_NR(__NR_pwrite64), KILL_NR(__NR_ftruncate),
#ifdef __NR_pipe
        KILL_NR(__NR_pipe),
#endif
#ifdef __NR_open
        EACCES_NR(__NR_open),
#endif
        EACCES_NR(__NR_openat),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
           && syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

class Sandbox : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        /* Every context offloads: the kernel path is what the filter bars. */
        lib_.reset(new LibCtx(make_config("offload_min = 0\n")));
        ASSERT_TRUE(lib_->config_ok() && lib_->hwaf_loaded()) << lib_->load_errors();
    }

    uint64_t counter(const char *name)
    {
        uint64_t v = 0;
        EXPECT_TRUE(lib_->prov_param(name, &v)) << name;
        return v;
    }
    uint64_t kernel_bytes()
    {
        return counter(HWAF_PARAM_AFALG_BYTES) + counter(HWAF_PARAM_DEVCRYPTO_BYTES);
    }

    /*
     * Run body in a child that installs the filter first; the child reports
     * a failure as text on a pipe.  Expect a clean exit, not SIGSYS.
     */
    template <typename F> void in_sandboxed_child(F body)
    {
        int p[2];
        ASSERT_EQ(pipe(p), 0);
        fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            close(p[0]);
            std::string why = install_sshd_like_filter() ? body() : "cannot install the filter";
            if (!why.empty() && write(p[1], why.data(), why.size()) < 0)
                _exit(3);
            _exit(why.empty() ? 0 : 1);
        }
        close(p[1]);
        std::string msg;
        char buf[512];
        ssize_t n;
        while ((n = read(p[0], buf, sizeof(buf))) > 0)
            msg.append(buf, (size_t)n);
        close(p[0]);
        int st = 0;
        ASSERT_EQ(waitpid(pid, &st, 0), pid);
        ASSERT_FALSE(WIFSIGNALED(st)) << "child killed by signal " << WTERMSIG(st)
                                      << (WTERMSIG(st) == SIGSYS ? " (SIGSYS: a system call the filter forbids)" : "");
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << msg;
    }
};

/* One cipher stream (two updates and final) through c; empty on failure. */
Bytes encrypt(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &in,
              const OSSL_PARAM *params = nullptr)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    Bytes out(in.size() + 32);
    int l1 = 0, l2 = 0, l3 = 0;
    size_t half = in.size() / 2;

    if (!x || !EVP_EncryptInit_ex2(x.get(), c, key.data(), iv.data(), params)
        || !EVP_EncryptUpdate(x.get(), out.data(), &l1, in.data(), (int)half)
        || !EVP_EncryptUpdate(x.get(), out.data() + l1, &l2, in.data() + half,
                              (int)(in.size() - half))
        || !EVP_EncryptFinal_ex(x.get(), out.data() + l1 + l2, &l3))
        return Bytes();
    out.resize((size_t)(l1 + l2 + l3));
    return out;
}

/* One GCM message (AAD, two data updates, tag) through c; empty on failure. */
Bytes gcm_encrypt(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &in,
                  const OSSL_PARAM *params = nullptr)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    Bytes out(in.size() + 16), aad(20, 0xa5);
    int l = 0, l2 = 0;
    size_t half = in.size() / 2;

    if (!x || !EVP_EncryptInit_ex2(x.get(), c, key.data(), iv.data(), params)
        || !EVP_EncryptUpdate(x.get(), nullptr, &l, aad.data(), (int)aad.size())
        || !EVP_EncryptUpdate(x.get(), out.data(), &l, in.data(), (int)half)
        || !EVP_EncryptUpdate(x.get(), out.data() + l, &l2, in.data() + half, (int)(in.size() - half))
        || !EVP_EncryptFinal_ex(x.get(), out.data(), &l)
        || EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, 16, out.data() + in.size()) <= 0)
        return Bytes();
    return out;
}

/* An HMAC over in, with a copy mid-message (as OpenSSH's HMAC copies its
 * states); empty on failure. */
Bytes hmac(EVP_MAC *m, const char *digest, const Bytes &key, const Bytes &in)
{
    MacCtxPtr x(EVP_MAC_CTX_new(m)), y;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
                      OSSL_PARAM_construct_end()};
    unsigned char out[EVP_MAX_MD_SIZE];
    size_t l = 0;

    if (!x || !EVP_MAC_init(x.get(), key.data(), key.size(), p) || !EVP_MAC_update(x.get(), in.data(), 100))
        return Bytes();
    y.reset(EVP_MAC_CTX_dup(x.get()));
    if (!y || !EVP_MAC_update(y.get(), in.data() + 100, in.size() - 100)
        || !EVP_MAC_final(y.get(), out, &l, sizeof(out)))
        return Bytes();
    return Bytes(out, out + l);
}

TEST_F(Sandbox, EveryAlgorithmFallsBackToSoftware)
{
    struct C { CipherPtr h, d; Bytes key, iv, in, want; bool gcm; };
    struct D { MdPtr h, d; Bytes in, want; };
    struct M { const char *digest; Bytes key, in, want; };
    std::vector<C> cs;
    std::vector<D> ds;
    std::vector<M> ms;
    const char *gcms[] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};

    for (const auto &a : kCiphers) {
        C c;
        need_cipher(a.name, &c.h, &c.d);
        if (!c.h)
            return;
        c.key = random_bytes(a.keylen);
        if (a.mode == Mode::XTS)
            c.key[0] = (unsigned char)(c.key[a.keylen / 2] ^ 0x5a);
        c.iv = random_bytes(16);
        c.in = random_bytes(16 * 1024 + (a.mode == Mode::CTR ? 5 : 0));
        c.want = encrypt(c.d.get(), c.key, c.iv, c.in);
        c.gcm = false;
        ASSERT_FALSE(c.want.empty()) << a.name << ": " << error_queue_text();
        cs.push_back(std::move(c));
    }
    for (const char *name : gcms) {
        C c;
        need_cipher(name, &c.h, &c.d);
        if (!c.h)
            return;
        c.key = random_bytes((size_t)EVP_CIPHER_get_key_length(c.d.get()));
        c.iv = random_bytes(12);
        c.in = random_bytes(16 * 1024 + 3);
        c.want = gcm_encrypt(c.d.get(), c.key, c.iv, c.in);
        c.gcm = true;
        ASSERT_FALSE(c.want.empty()) << name << ": " << error_queue_text();
        cs.push_back(std::move(c));
    }
    MacPtr mh(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
    MacPtr mdflt(EVP_MAC_fetch(lib_->get(), "HMAC", "provider=default"));
    ASSERT_TRUE(mh && mdflt) << error_queue_text();
    for (const auto &a : kDigests) {
        M m{a.name, random_bytes(32), random_bytes(10000), Bytes()};
        m.want = hmac(mdflt.get(), a.name, m.key, m.in);
        ASSERT_FALSE(m.want.empty()) << a.name;
        ms.push_back(std::move(m));
    }
    for (const auto &a : kDigests) {
        D d;
        need_md(a.name, &d.h, &d.d);
        if (!d.h)
            return;
        d.in = random_bytes(10000);
        ASSERT_TRUE(digest_oneshot(d.d.get(), d.in, &d.want)) << a.name;
        ds.push_back(std::move(d));
    }
    /* Without the filter hwaf's contexts go to the kernel. */
    uint64_t k0 = kernel_bytes();
    Bytes got;
    ASSERT_EQ(encrypt(cs[0].h.get(), cs[0].key, cs[0].iv, cs[0].in), cs[0].want);
    ASSERT_TRUE(digest_oneshot(ds[0].h.get(), ds[0].in, &got) && got == ds[0].want);
    ASSERT_EQ(gcm_encrypt(cs.back().h.get(), cs.back().key, cs.back().iv, cs.back().in), cs.back().want);
    ASSERT_EQ(hmac(mh.get(), ms[0].digest, ms[0].key, ms[0].in), ms[0].want);
    ASSERT_GE(kernel_bytes() - k0, cs[0].in.size() + ds[0].in.size() + cs.back().in.size() + ms[0].in.size())
        << "hwaf did not use the kernel before the filter: the test would prove nothing";

    in_sandboxed_child([&]() -> std::string {
        uint64_t k1 = kernel_bytes(), s1 = counter(HWAF_PARAM_SOFTWARE_BYTES);
        uint64_t f1 = counter(HWAF_PARAM_FALLBACKS_SANDBOX);
        size_t total = 0, contexts = 0;

        for (auto &c : cs) {
            if ((c.gcm ? gcm_encrypt(c.h.get(), c.key, c.iv, c.in) : encrypt(c.h.get(), c.key, c.iv, c.in)) != c.want)
                return std::string(EVP_CIPHER_get0_name(c.h.get()))
                       + ": wrong bytes or failure under the filter: " + error_queue_text();
            total += c.in.size();
            contexts++;
        }
        for (auto &d : ds) {
            Bytes out;
            /* A copy mid-message too: OpenSSH's HMAC copies its digest states. */
            MdCtxPtr x(EVP_MD_CTX_new()), y(EVP_MD_CTX_new());
            unsigned char md[EVP_MAX_MD_SIZE];
            unsigned int mdl = 0;
            if (!EVP_DigestInit_ex2(x.get(), d.h.get(), nullptr)
                || !EVP_DigestUpdate(x.get(), d.in.data(), 100)
                || !EVP_MD_CTX_copy_ex(y.get(), x.get())
                || !EVP_DigestUpdate(y.get(), d.in.data() + 100, d.in.size() - 100)
                || !EVP_DigestFinal_ex(y.get(), md, &mdl)
                || Bytes(md, md + mdl) != d.want)
                return std::string(EVP_MD_get0_name(d.h.get()))
                       + ": wrong digest or failure under the filter: " + error_queue_text();
            total += d.in.size();
            contexts++;
        }
        for (auto &m : ms) {
            if (hmac(mh.get(), m.digest, m.key, m.in) != m.want)
                return std::string("HMAC-") + m.digest + ": wrong MAC or failure under the filter: "
                       + error_queue_text();
            total += m.in.size();
            contexts++;
        }
        if (ERR_peek_error() != 0)
            return "errors left on the queue: " + error_queue_text();
        if (kernel_bytes() != k1)
            return "the kernel counted " + std::to_string(kernel_bytes() - k1) + " bytes under the filter";
        if (counter(HWAF_PARAM_SOFTWARE_BYTES) - s1 < total)
            return "software path counted " + std::to_string(counter(HWAF_PARAM_SOFTWARE_BYTES) - s1)
                   + " bytes, expected >= " + std::to_string(total);
        if (counter(HWAF_PARAM_FALLBACKS_SANDBOX) - f1 < contexts)
            return "sandbox fallbacks " + std::to_string(counter(HWAF_PARAM_FALLBACKS_SANDBOX) - f1)
                   + ", expected >= " + std::to_string(contexts);
        return "";
    });
}

TEST_F(Sandbox, ForcedKernelFailsCleanly)
{
    CipherPtr h, d;
    MdPtr mh, md;
    need_cipher("AES-128-CTR", &h, &d);
    if (!h)
        return;
    need_md("SHA2-512", &mh, &md);
    if (!mh)
        return;
    CipherPtr gh, gd;
    need_cipher("AES-128-GCM", &gh, &gd);
    if (!gh)
        return;
    MacPtr hm(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
    ASSERT_TRUE(hm) << error_queue_text();
    Bytes key = random_bytes(16), iv = random_bytes(16), in = random_bytes(4096);

    in_sandboxed_child([&]() -> std::string {
        int kernel = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel),
                           OSSL_PARAM_construct_end() };

        if (!encrypt(h.get(), key, iv, in, p).empty())
            return "a cipher forced to the kernel worked under the filter";
        std::string e = error_queue_text();
        if (e.find("seccomp filter") == std::string::npos)
            return "cipher: no sandbox reason on the error queue: " + e;
        MdCtxPtr x(EVP_MD_CTX_new());
        if (EVP_DigestInit_ex2(x.get(), mh.get(), p))
            return "a digest forced to the kernel initialised under the filter";
        e = error_queue_text();
        if (e.find("seccomp filter") == std::string::npos)
            return "digest: no sandbox reason on the error queue: " + e;
        if (gh && !gcm_encrypt(gh.get(), key, iv, in, p).empty())
            return "a GCM context forced to the kernel worked under the filter";
        e = error_queue_text();
        if (gh && e.find("seccomp filter") == std::string::npos)
            return "GCM: no sandbox reason on the error queue: " + e;
        MacCtxPtr m(EVP_MAC_CTX_new(hm.get()));
        OSSL_PARAM q[] = { OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel),
                           OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA2-256", 0),
                           OSSL_PARAM_construct_end() };
        if (EVP_MAC_init(m.get(), key.data(), key.size(), q))
            return "an HMAC forced to the kernel initialised under the filter";
        e = error_queue_text();
        if (e.find("seccomp filter") == std::string::npos)
            return "HMAC: no sandbox reason on the error queue: " + e;
        return "";
    });
}

} // namespace
