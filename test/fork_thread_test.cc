/*
 * fork() and threads.
 *
 * Fork: contexts created before fork() (a CTR stream stopped inside a block,
 * a CBC stream, an XTS context, a digest mid-stream) continue in the parent
 * and in the child at the same time, each checked against results the
 * default provider computed before the fork.  The child reports through its
 * exit status.
 *
 * Threads: several threads, each with its own contexts on shared fetched
 * algorithms, checked against the default provider.
 */
#include "hwaf_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

using namespace hwaf_test;

namespace {

struct Stream {
    const char *name;
    CtxPtr h, d;      /* hwaf, and default in the same state */
    Bytes in_parent, in_child;
    Bytes want_parent, want_child;
};

/* Continue ctx with data in pieces of 1..97 bytes (XTS: 16..97, one data
 * unit each); returns the output. */
bool continue_stream(EVP_CIPHER_CTX *ctx, const Bytes &in, bool xts, Bytes *out)
{
    out->assign(in.size() + 32, 0);
    size_t off = 0, o = 0, step = 0;
    while (off < in.size()) {
        size_t n = xts ? 16 + step % 82 : 1 + step * 37 % 97;
        if (n > in.size() - off)
            n = in.size() - off;
        int outl = 0;
        if (!EVP_CipherUpdate(ctx, out->data() + o, &outl, in.data() + off, (int)n))
            return false;
        off += n;
        o += (size_t)outl;
        step++;
    }
    out->resize(o);
    return true;
}

class Fork : public KernelTest {};

TEST_F(Fork, ContextsContinueInParentAndChild)
{
    struct Spec {
        const char *name;
        size_t before; /* bytes processed before fork */
        bool xts;
    } specs[] = {{"AES-128-CTR", 21, false}, {"AES-256-CTR", 7, false}, {"AES-192-CBC", 48, false},
                 {"AES-128-XTS", 0, true}};
    std::vector<Stream> streams;
    for (const Spec &s : specs) {
        CipherPtr h, d;
        need_cipher(s.name, &h, &d);
        if (!h)
            return;
        Stream st;
        st.name = s.name;
        size_t keylen = (size_t)EVP_CIPHER_get_key_length(d.get());
        Bytes key = random_bytes(keylen), iv = random_bytes(16), pre = random_bytes(s.before);
        if (s.xts)
            key[0] = (unsigned char)(key[keylen / 2] ^ 0x11);
        st.h.reset(EVP_CIPHER_CTX_new());
        st.d.reset(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(st.h.get(), h.get(), key.data(), iv.data(), nullptr));
        ASSERT_TRUE(EVP_EncryptInit_ex2(st.d.get(), d.get(), key.data(), iv.data(), nullptr));
        Bytes o1(s.before + 32), o2(s.before + 32);
        int l1 = 0, l2 = 0;
        if (s.before > 0) {
            ASSERT_TRUE(EVP_EncryptUpdate(st.h.get(), o1.data(), &l1, pre.data(), (int)pre.size()));
            ASSERT_TRUE(EVP_EncryptUpdate(st.d.get(), o2.data(), &l2, pre.data(), (int)pre.size()));
            ASSERT_EQ(tohex(o1.data(), (size_t)l1), tohex(o2.data(), (size_t)l2)) << s.name << " before fork";
        }
        st.in_parent = random_bytes(s.xts ? 3000 : 4001);
        st.in_child = random_bytes(s.xts ? 3000 : 4001);
        /* Expected continuations from two copies of the default context. */
        CtxPtr dc(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_CIPHER_CTX_copy(dc.get(), st.d.get()));
        ASSERT_TRUE(continue_stream(st.d.get(), st.in_parent, s.xts, &st.want_parent));
        ASSERT_TRUE(continue_stream(dc.get(), st.in_child, s.xts, &st.want_child));
        streams.push_back(std::move(st));
    }
    MdPtr mh, md;
    need_md("SHA2-256", &mh, &md);
    if (!mh)
        return;
    MdCtxPtr dh(EVP_MD_CTX_new());
    Bytes pre = random_bytes(100), mp = random_bytes(5000), mc = random_bytes(5000), want_mp, want_mc;
    ASSERT_TRUE(EVP_DigestInit_ex2(dh.get(), mh.get(), nullptr));
    ASSERT_TRUE(EVP_DigestUpdate(dh.get(), pre.data(), pre.size()));
    {
        Bytes all = pre;
        all.insert(all.end(), mp.begin(), mp.end());
        ASSERT_TRUE(digest_oneshot(md.get(), all, &want_mp));
        all = pre;
        all.insert(all.end(), mc.begin(), mc.end());
        ASSERT_TRUE(digest_oneshot(md.get(), all, &want_mc));
    }

    /* Both sides: several rounds of all streams, interleaved. */
    auto work = [&](bool child) -> std::string {
        std::string bad;
        for (auto &st : streams) {
            Bytes out;
            bool xts = std::string(st.name).find("XTS") != std::string::npos;
            if (!continue_stream(st.h.get(), child ? st.in_child : st.in_parent, xts, &out))
                bad += std::string(st.name) + ": update failed; ";
            else if (out != (child ? st.want_child : st.want_parent))
                bad += std::string(st.name) + ": wrong output; ";
        }
        const Bytes &m = child ? mc : mp;
        for (size_t off = 0; off < m.size(); off += 500)
            if (!EVP_DigestUpdate(dh.get(), m.data() + off, std::min<size_t>(500, m.size() - off)))
                bad += "digest update failed; ";
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (!EVP_DigestFinal_ex(dh.get(), out, &n))
            bad += "digest final failed; ";
        else if (Bytes(out, out + n) != (child ? want_mc : want_mp))
            bad += "wrong digest; ";
        /* A fresh context made after the fork works too. */
        Bytes fresh;
        if (!digest_oneshot(mh.get(), Bytes{'a', 'b', 'c'}, &fresh) ||
            tohex(fresh) != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
            bad += "fresh digest after fork wrong; ";
        return bad;
    };

    fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::string bad = work(true);
        if (!bad.empty()) {
            fprintf(stderr, "child: %s\n", bad.c_str());
            ERR_print_errors_fp(stderr);
        }
        _exit(bad.empty() ? 0 : 3);
    }
    std::string bad = work(false);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(bad.empty()) << "parent: " << bad << "\n" << error_queue_text();
    ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child found wrong results (see its stderr above)";
}

/* A context used only in the child, then freed there, leaves the parent's
 * copy working (the child must not close what the parent still uses). */
TEST_F(Fork, ChildFreesContextParentContinues)
{
    CipherPtr h, d;
    need_cipher("AES-128-CBC", &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes(16), iv = random_bytes(16), in = random_bytes(4096), want, got;
    ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &want, 0));
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), h.get(), key.data(), iv.data(), nullptr));
    EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
    got.assign(in.size(), 0);
    int l = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), got.data(), &l, in.data(), 1024));
    fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        unsigned char out[64];
        int ol;
        int ok = EVP_EncryptUpdate(ctx.get(), out, &ol, in.data(), 32);
        ctx.reset();
        _exit(ok ? 0 : 4);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int l2 = 0;
    ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), got.data() + l, &l2, in.data() + 1024, (int)in.size() - 1024))
        << error_queue_text();
    EXPECT_EQ(tohex(got), tohex(want));
}

class Threads : public KernelTest {};

TEST_F(Threads, IndependentContexts)
{
    struct Alg {
        CipherPtr h, d;
        MdPtr mh, md;
        size_t keylen = 0;  /* ciphers only; moved, so always initialised */
        bool xts = false;
    };
    std::vector<Alg> algs;
    for (const auto &c : kCiphers) {
        Alg a;
        need_cipher(c.name, &a.h, &a.d);
        if (!a.h)
            return;
        a.keylen = c.keylen;
        a.xts = c.mode == Mode::XTS;
        algs.push_back(std::move(a));
    }
    for (const auto &m : kDigests) {
        Alg a;
        need_md(m.name, &a.mh, &a.md);
        if (!a.mh)
            return;
        algs.push_back(std::move(a));
    }
    std::mutex mu;
    std::vector<std::string> failures;
    std::atomic<long> ops{0};
    const uint64_t seed = rng_();  /* rng_ is not for several threads */
    auto worker = [&](int t) {
        std::mt19937_64 r(seed + (uint64_t)t);
        auto rb = [&](size_t n) {
            Bytes b(n);
            for (auto &x : b)
                x = (unsigned char)r();
            return b;
        };
        for (int round = 0; round < 6; round++) {
            for (size_t i = 0; i < algs.size(); i++) {
                Alg &a = algs[(i + (size_t)t) % algs.size()];
                size_t len = 16 + r() % 3000;
                bool okh, okd;
                Bytes in, oh, od;
                if (a.h) {
                    Bytes key = rb(a.keylen), iv = rb(16);
                    if (a.xts)
                        key[0] = (unsigned char)(key[a.keylen / 2] ^ 0x40);
                    int enc = (int)(r() % 2);
                    int pad = enc; /* decrypt random data without padding */
                    if (!enc && !a.xts)
                        len -= len % 16;
                    in = rb(len);
                    okh = cipher_oneshot(a.h.get(), enc, key, iv, in, &oh, pad);
                    okd = cipher_oneshot(a.d.get(), enc, key, iv, in, &od, pad);
                } else {
                    in = rb(len);
                    okh = digest_oneshot(a.mh.get(), in, &oh);
                    okd = digest_oneshot(a.md.get(), in, &od);
                }
                ops++;
                if (!okh || !okd || oh != od) {
                    std::lock_guard<std::mutex> g(mu);
                    failures.push_back("thread " + std::to_string(t) + " alg #" + std::to_string(i) + " len " +
                                       std::to_string(len) + (okh ? "" : " hwaf failed") +
                                       (oh != od ? " outputs differ" : ""));
                }
            }
        }
        ERR_clear_error();
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back(worker, t);
    for (auto &t : ts)
        t.join();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
    EXPECT_GT(ops.load(), 100);
}

} // namespace
