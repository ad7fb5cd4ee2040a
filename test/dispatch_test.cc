/*
 * Size-aware dispatch: with a small threshold configured, one context
 * switches between software (OpenSSL's default provider inside hwaf) and the
 * kernel many times -- random sizes straddling the threshold, copies and
 * fork() mid-stream -- and must give, step by step, exactly what the default
 * provider gives: output, "num", "updated-iv", digests.  The counters prove
 * both paths ran.  Also: the configuration keys (policy, offload_min,
 * calibration) by their effect, the per-context hwaf-offload parameter, and
 * clean errors for bad values and malformed calibration files.
 */
#include "hwaf_test.h"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sstream>
#include <thread>

using namespace hwaf_test;

namespace {

const size_t kThreshold = 64;

std::string cstate(EVP_CIPHER_CTX *c)
{
    std::ostringstream s;
    unsigned char iv[16];
    s << "num=" << EVP_CIPHER_CTX_get_num(c);
    if (EVP_CIPHER_CTX_get_updated_iv(c, iv, sizeof(iv)))
        s << " iv=" << tohex(iv, sizeof(iv));
    ERR_clear_error();
    return s.str();
}

class Dispatch : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        use_config("offload_min = " + std::to_string(kThreshold) + "\n");
    }
    void use_config(const std::string &extra)
    {
        lib_.reset(new LibCtx(make_config(extra)));
        ASSERT_TRUE(lib_->config_ok() && lib_->hwaf_loaded()) << lib_->load_errors();
    }
    /* AES-128-GCM of hwaf (h) and of the default provider (d), hwaf's every
     * request for the kernel by size (threshold 0); false when the test
     * cannot go on (failed or skipped). */
    bool kernel_gcm(CipherPtr *h, CipherPtr *d)
    {
        use_config("offload_min = 0\n");
        if (HasFatalFailure())
            return false;
        need_cipher("AES-128-GCM", h, d);
        return *h != nullptr;
    }
    /* A size around the threshold: below, at, or above it. */
    size_t straddle(size_t lo)
    {
        size_t n = random_size(0, 3 * kThreshold);
        return n < lo ? lo : n;
    }
};

class DispatchCipher : public Dispatch, public ::testing::WithParamInterface<CipherAlg> {
protected:
    Bytes key()
    {
        const CipherAlg &a = GetParam();
        Bytes k = random_bytes(a.keylen);
        if (a.mode == Mode::XTS)
            k[0] = (unsigned char)(k[a.keylen / 2] ^ 0x5a);
        return k;
    }
    /* Update sizes for one stream: XTS data units of 16+, CBC blocks when
     * padding is off, anything for CTR. */
    size_t piece(bool whole_blocks)
    {
        const CipherAlg &a = GetParam();
        size_t n = straddle(a.mode == Mode::XTS ? 16 : 0);
        if (whole_blocks)
            n -= n % 16;
        return n;
    }

    /*
     * One stream through both providers in lock step: updates of random
     * sizes; now and then both contexts are copied and the copies carry on
     * (the originals are freed: the copy must have the whole state); at
     * fork_at the stream continues in a child, which reports by its exit
     * status; "num" and "updated-iv" are compared after about a third of
     * the updates and after the last.  Returns false on the first difference.
     */
    void stream(int enc, bool padding, int fork_at)
    {
        const CipherAlg &a = GetParam();
        CipherPtr h, d;
        need_cipher(a.name, &h, &d);
        if (!h)
            return;
        Bytes k = key(), iv = random_bytes(a.ivlen);
        CtxPtr ch(EVP_CIPHER_CTX_new()), cd(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_CipherInit_ex2(ch.get(), h.get(), k.data(), iv.data(), enc, nullptr)) << error_queue_text();
        ASSERT_TRUE(EVP_CipherInit_ex2(cd.get(), d.get(), k.data(), iv.data(), enc, nullptr));
        EVP_CIPHER_CTX_set_padding(ch.get(), padding);
        EVP_CIPHER_CTX_set_padding(cd.get(), padding);
        bool whole = a.mode == Mode::CBC && !padding;
        std::ostringstream log;
        pid_t child = -1;
        for (int i = 0; i < 40; i++) {
            if (i == fork_at) {
                child = fork();
                ASSERT_NE(child, -1);
                if (child > 0)
                    break;  /* the parent stops here; the child carries on */
            }
            if (rng_() % 5 == 0) {
                CtxPtr ch2(EVP_CIPHER_CTX_new()), cd2(EVP_CIPHER_CTX_new());
                bool copied = EVP_CIPHER_CTX_copy(ch2.get(), ch.get()) && EVP_CIPHER_CTX_copy(cd2.get(), cd.get());
                if (child == 0 && !copied)
                    _exit(2);
                ASSERT_TRUE(copied) << error_queue_text();
                ch = std::move(ch2);
                cd = std::move(cd2);
                log << "copy ";
            }
            if (rng_() % 6 == 0) {
                /* A new IV, as OpenVPN gives one per packet; or for CTR none
                 * at all (the stream goes on from the running counter). */
                bool none = a.mode == Mode::CTR && rng_() % 2 == 0;
                Bytes iv2 = random_bytes(a.ivlen);
                int rh = EVP_CipherInit_ex(ch.get(), nullptr, nullptr, nullptr, none ? nullptr : iv2.data(), -1);
                int rd = EVP_CipherInit_ex(cd.get(), nullptr, nullptr, nullptr, none ? nullptr : iv2.data(), -1);
                if (child == 0 && (!rh || !rd))
                    _exit(3);
                ASSERT_TRUE(rh && rd) << "re-init: hwaf " << rh << ", default " << rd << "\n" << error_queue_text();
                log << (none ? "reinit " : "new-iv ");
            }
            size_t n = piece(whole);
            Bytes in = random_bytes(n), oh(n + 32), od(n + 32);
            int lh = -1, ld = -1;
            int okh = EVP_CipherUpdate(ch.get(), oh.data(), &lh, in.data(), (int)n);
            int okd = EVP_CipherUpdate(cd.get(), od.data(), &ld, in.data(), (int)n);
            log << n << " ";
            /* The state asked now and then, not after every update: a
             * stream that stays in software keeps it in the default
             * provider's context until it is asked for, copied, or the
             * context switches to the kernel. */
            bool ask = rng_() % 3 == 0 || i == 39;
            std::string sh = ask ? cstate(ch.get()) : "", sd = ask ? cstate(cd.get()) : "";
            bool same = okh == okd && lh == ld && (lh <= 0 || memcmp(oh.data(), od.data(), lh) == 0) && sh == sd;
            if (child == 0) {
                if (!same)
                    _exit(1);
                continue;
            }
            ASSERT_TRUE(same) << a.name << (enc ? " encrypt" : " decrypt") << " padding " << padding
                              << ", update of " << n << " after: " << log.str() << "\nhwaf " << okh << " outl "
                              << lh << " " << sh << "\ndflt " << okd << " outl " << ld << " " << sd << "\n"
                              << error_queue_text();
        }
        if (child > 0) {
            int status = 0;
            ASSERT_EQ(waitpid(child, &status, 0), child);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
                << a.name << ": the stream continued in a child after fork() differs from the default provider";
            return;
        }
        if (!enc && padding && a.mode == Mode::CBC) {
            ERR_clear_error();
        } else {
            Bytes fh(32), fd(32);
            int lh = -1, ld = -1;
            int okh = EVP_CipherFinal_ex(ch.get(), fh.data(), &lh);
            int okd = EVP_CipherFinal_ex(cd.get(), fd.data(), &ld);
            bool same = okh == okd && lh == ld && (lh <= 0 || memcmp(fh.data(), fd.data(), lh) == 0);
            if (child == 0)
                _exit(same ? 0 : 1);
            EXPECT_TRUE(same) << "final: hwaf " << okh << "/" << lh << ", default " << okd << "/" << ld;
        }
        if (child == 0)
            _exit(0);
        ERR_clear_error();
    }
};

TEST_P(DispatchCipher, SwitchesBothWaysWithinOneContext)
{
    const CipherAlg &a = GetParam();
    Counts c0 = counts(*lib_);
    for (int enc : {1, 0})
        for (bool padding : {true, false}) {
            if (a.mode != Mode::CBC && !padding)
                continue;
            for (int rep = 0; rep < 3; rep++) {
                stream(enc, padding, -1);
                if (HasFailure())
                    return;
            }
        }
    Counts c1 = counts(*lib_);
    EXPECT_GT(c1.sw_ops, c0.sw_ops) << "nothing was computed in software";
    EXPECT_GT(c1.k_ops, c0.k_ops) << "nothing reached the kernel";
}

TEST_P(DispatchCipher, ForkMidStream)
{
    for (int rep = 0; rep < 2; rep++) {
        stream((int)(rng_() % 2), GetParam().mode != Mode::CBC || rng_() % 2, 3 + (int)(rng_() % 20));
        if (HasFailure())
            return;
    }
}

INSTANTIATE_TEST_SUITE_P(Dispatch, DispatchCipher, ::testing::ValuesIn(kCiphers),
                         [](const ::testing::TestParamInfo<CipherAlg> &i) { return test_name(i.param.name); });

class DispatchDigest : public Dispatch, public ::testing::WithParamInterface<DigestAlg> {};

/* Messages of random length around the threshold in random pieces, a copy
 * taken mid-message that continues with other data, the context re-used. */
TEST_P(DispatchDigest, HeldBackThenDecided)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    Counts c0 = counts(*lib_);
    MdCtxPtr ch(EVP_MD_CTX_new()), cd(EVP_MD_CTX_new());
    for (int msg = 0; msg < 30; msg++) {
        ASSERT_TRUE(EVP_DigestInit_ex2(ch.get(), h.get(), nullptr)) << error_queue_text();
        ASSERT_TRUE(EVP_DigestInit_ex2(cd.get(), d.get(), nullptr));
        int pieces = 1 + (int)(rng_() % 5);
        MdCtxPtr kh, kd;
        std::ostringstream log;
        for (int p = 0; p < pieces; p++) {
            Bytes in = random_bytes(random_size(0, 2 * kThreshold / pieces + 8));
            ASSERT_TRUE(EVP_DigestUpdate(ch.get(), in.data(), in.size())) << error_queue_text();
            ASSERT_TRUE(EVP_DigestUpdate(cd.get(), in.data(), in.size()));
            log << in.size() << " ";
            if (!kh && rng_() % 3 == 0) {
                kh.reset(EVP_MD_CTX_new());
                kd.reset(EVP_MD_CTX_new());
                ASSERT_TRUE(EVP_MD_CTX_copy_ex(kh.get(), ch.get())) << error_queue_text();
                ASSERT_TRUE(EVP_MD_CTX_copy_ex(kd.get(), cd.get()));
                Bytes more = random_bytes(random_size(0, 2 * kThreshold));
                ASSERT_TRUE(EVP_DigestUpdate(kh.get(), more.data(), more.size()));
                ASSERT_TRUE(EVP_DigestUpdate(kd.get(), more.data(), more.size()));
                log << "copy+" << more.size() << " ";
            }
        }
        unsigned char oh[EVP_MAX_MD_SIZE], od[EVP_MAX_MD_SIZE];
        unsigned int lh = 0, ld = 0;
        ASSERT_TRUE(EVP_DigestFinal_ex(ch.get(), oh, &lh)) << error_queue_text();
        ASSERT_TRUE(EVP_DigestFinal_ex(cd.get(), od, &ld));
        ASSERT_EQ(tohex(oh, lh), tohex(od, ld)) << a.name << " pieces " << log.str();
        if (kh) {
            ASSERT_TRUE(EVP_DigestFinal_ex(kh.get(), oh, &lh)) << error_queue_text();
            ASSERT_TRUE(EVP_DigestFinal_ex(kd.get(), od, &ld));
            ASSERT_EQ(tohex(oh, lh), tohex(od, ld)) << a.name << " copy, pieces " << log.str();
        }
    }
    Counts c1 = counts(*lib_);
    EXPECT_GT(c1.sw_ops, c0.sw_ops) << "no message was hashed in software";
    EXPECT_GT(c1.k_ops, c0.k_ops) << "no message reached the kernel";
}

TEST_P(DispatchDigest, ForkWhileHeldBackAndAfter)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    /* Below the threshold (held back), then above it (in the kernel). */
    for (size_t first : {kThreshold / 2, 2 * kThreshold}) {
        MdCtxPtr ch(EVP_MD_CTX_new()), cd(EVP_MD_CTX_new());
        Bytes in = random_bytes(first), more = random_bytes(random_size(0, 3 * kThreshold));
        ASSERT_TRUE(EVP_DigestInit_ex2(ch.get(), h.get(), nullptr));
        ASSERT_TRUE(EVP_DigestInit_ex2(cd.get(), d.get(), nullptr));
        ASSERT_TRUE(EVP_DigestUpdate(ch.get(), in.data(), in.size()));
        ASSERT_TRUE(EVP_DigestUpdate(cd.get(), in.data(), in.size()));
        pid_t pid = fork();
        ASSERT_NE(pid, -1);
        /* Parent and child both finish the message. */
        unsigned char oh[EVP_MAX_MD_SIZE], od[EVP_MAX_MD_SIZE];
        unsigned int lh = 0, ld = 0;
        bool ok = EVP_DigestUpdate(ch.get(), more.data(), more.size()) && EVP_DigestFinal_ex(ch.get(), oh, &lh) &&
                  EVP_DigestUpdate(cd.get(), more.data(), more.size()) && EVP_DigestFinal_ex(cd.get(), od, &ld) &&
                  tohex(oh, lh) == tohex(od, ld);
        if (pid == 0)
            _exit(ok ? 0 : 1);
        EXPECT_TRUE(ok) << a.name << " parent, " << first << "+" << more.size() << "\n" << error_queue_text();
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << a.name << " child, " << first << "+"
                                                                   << more.size();
    }
}

INSTANTIATE_TEST_SUITE_P(Dispatch, DispatchDigest, ::testing::ValuesIn(kDigests),
                         [](const ::testing::TestParamInfo<DigestAlg> &i) { return test_name(i.param.name); });

/* ---- AES-GCM and HMAC: each message takes its path ---------------------- */

/* n cut into up to `pieces` random sizes that add up to n. */
std::vector<size_t> cuts(std::mt19937_64 &rng, size_t n, int pieces)
{
    std::vector<size_t> v;
    for (int i = 1; i < pieces && n > 0; i++) {
        size_t c = rng() % (n + 1);
        v.push_back(c);
        n -= c;
    }
    v.push_back(n);
    return v;
}

struct GcmRun {
    bool ok = false;
    Bytes out, tag;
};

/*
 * One GCM message through c (key only when given): AAD and data in the
 * given pieces; decrypting, the tag set before the data or before the
 * final; at data piece copy_at the context is copied and the copy carries
 * on.  The same steps on hwaf and on the default provider must agree.
 */
GcmRun gcm_run(EVP_CIPHER_CTX *c, const EVP_CIPHER *ciph, int enc, const Bytes *key, const Bytes &iv,
               const Bytes &aad, const std::vector<size_t> &aad_cuts, const Bytes &in,
               const std::vector<size_t> &data_cuts, Bytes tag, bool tag_first, int copy_at)
{
    GcmRun r;
    CtxPtr copy;
    int outl = 0;
    size_t off = 0, o = 0;

    /* Without a key, no cipher either: EVP would start a fresh context. */
    if (!EVP_CipherInit_ex2(c, key ? ciph : nullptr, key ? key->data() : nullptr, iv.data(), enc, nullptr))
        return r;
    if (!enc && tag_first && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, (int)tag.size(), tag.data()) <= 0)
        return r;
    for (size_t n : aad_cuts) {
        if (n > 0 && !EVP_CipherUpdate(c, nullptr, &outl, aad.data() + off, (int)n))
            return r;
        off += n;
    }
    r.out.resize(in.size() + 16);
    off = 0;
    for (size_t i = 0; i < data_cuts.size(); i++) {
        if ((int)i == copy_at) {
            CtxPtr k(EVP_CIPHER_CTX_new());
            if (!EVP_CIPHER_CTX_copy(k.get(), c))
                return r;
            copy = std::move(k);
            c = copy.get();
        }
        if (data_cuts[i] > 0 && !EVP_CipherUpdate(c, r.out.data() + o, &outl, in.data() + off, (int)data_cuts[i]))
            return r;
        off += data_cuts[i];
        o += data_cuts[i] > 0 ? (size_t)outl : 0;
    }
    if (!enc && !tag_first && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, (int)tag.size(), tag.data()) <= 0)
        return r;
    r.ok = EVP_CipherFinal_ex(c, r.out.data() + o, &outl) == 1;
    r.out.resize(o + (r.ok ? (size_t)outl : 0));
    if (r.ok && enc) {
        r.tag.resize(16);
        r.ok = EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, r.tag.data()) > 0;
    }
    return r;
}

class DispatchGcm : public Dispatch, public ::testing::WithParamInterface<const char *> {};

/*
 * Messages whose AAD and data lie around the threshold, in random pieces,
 * both directions, the tag set first or last (sometimes changed: must fail
 * on both), copies mid-message, one context re-initialised with new IVs and
 * now and then a new key: hwaf gives the default provider's output and tag
 * every time, and both paths ran.
 */
TEST_P(DispatchGcm, EachMessageTakesItsPath)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    Counts c0 = counts(*lib_);
    Bytes key = random_bytes((size_t)EVP_CIPHER_get_key_length(d.get()));
    CtxPtr ch(EVP_CIPHER_CTX_new()), cd(EVP_CIPHER_CTX_new());
    for (int msg = 0; msg < 40; msg++) {
        bool rekey = msg == 0 || rng_() % 6 == 0;
        if (rekey)
            key = random_bytes(key.size());
        Bytes iv = random_bytes(12);
        Bytes aad = random_bytes(rng_() % 3 == 0 ? 0 : random_size(0, 2 * kThreshold));
        Bytes pt = random_bytes(random_size(0, 3 * kThreshold));
        auto acuts = cuts(rng_, aad.size(), 1 + (int)(rng_() % 3));
        auto dcuts = cuts(rng_, pt.size(), 1 + (int)(rng_() % 4));
        int copy_at = rng_() % 4 == 0 ? (int)(rng_() % dcuts.size()) : -1;
        std::ostringstream what;
        what << GetParam() << " message " << msg << ": aad " << aad.size() << " data " << pt.size() << " in "
             << dcuts.size() << " pieces, copy at " << copy_at;
        GcmRun eh = gcm_run(ch.get(), h.get(), 1, rekey ? &key : nullptr, iv, aad, acuts, pt, dcuts, Bytes(), false,
                            copy_at);
        GcmRun ed = gcm_run(cd.get(), d.get(), 1, rekey ? &key : nullptr, iv, aad, acuts, pt, dcuts, Bytes(), false,
                            copy_at);
        ASSERT_TRUE(ed.ok) << what.str();
        ASSERT_TRUE(eh.ok) << what.str() << " encrypt: " << error_queue_text();
        ASSERT_EQ(tohex(eh.out), tohex(ed.out)) << what.str();
        ASSERT_EQ(tohex(eh.tag), tohex(ed.tag)) << what.str();
        Bytes tag = ed.tag;
        bool bad = rng_() % 4 == 0;
        if (bad)
            tag[rng_() % tag.size()] ^= 0x10;
        bool first = rng_() % 2 == 0;
        GcmRun dh = gcm_run(ch.get(), h.get(), 0, &key, iv, aad, acuts, ed.out, dcuts, tag, first, copy_at);
        GcmRun dd = gcm_run(cd.get(), d.get(), 0, &key, iv, aad, acuts, ed.out, dcuts, tag, first, copy_at);
        ASSERT_EQ(dd.ok, !bad) << what.str();
        ASSERT_EQ(dh.ok, dd.ok) << what.str() << " decrypt, tag " << (first ? "first" : "last")
                                << (bad ? " (changed)" : "") << ": " << error_queue_text();
        if (dd.ok) {
            ASSERT_EQ(tohex(dh.out), tohex(pt)) << what.str();
        }
        ERR_clear_error();
    }
    Counts c1 = counts(*lib_);
    EXPECT_GT(c1.sw_ops, c0.sw_ops) << "no message was computed in software";
    EXPECT_GT(c1.k_ops, c0.k_ops) << "no message reached the kernel";
}

/* A message in software and one in the kernel, each continued in a child
 * after fork(): parent and child both finish it as the default provider. */
TEST_P(DispatchGcm, ForkMidMessage)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes((size_t)EVP_CIPHER_get_key_length(d.get())), iv = random_bytes(12);
    for (size_t first : {kThreshold / 4, 2 * kThreshold}) {
        Bytes in = random_bytes(first + 100), oh(in.size()), od(in.size());
        CtxPtr ch(EVP_CIPHER_CTX_new()), cd(EVP_CIPHER_CTX_new());
        int l = 0;
        ASSERT_TRUE(EVP_EncryptInit_ex2(ch.get(), h.get(), key.data(), iv.data(), nullptr));
        ASSERT_TRUE(EVP_EncryptInit_ex2(cd.get(), d.get(), key.data(), iv.data(), nullptr));
        ASSERT_TRUE(EVP_EncryptUpdate(ch.get(), oh.data(), &l, in.data(), (int)first)) << error_queue_text();
        ASSERT_TRUE(EVP_EncryptUpdate(cd.get(), od.data(), &l, in.data(), (int)first));
        pid_t pid = fork();
        ASSERT_NE(pid, -1);
        unsigned char th[16], td[16];
        bool ok = EVP_EncryptUpdate(ch.get(), oh.data() + first, &l, in.data() + first, 100)
                  && EVP_EncryptFinal_ex(ch.get(), oh.data(), &l)
                  && EVP_CIPHER_CTX_ctrl(ch.get(), EVP_CTRL_AEAD_GET_TAG, 16, th) > 0
                  && EVP_EncryptUpdate(cd.get(), od.data() + first, &l, in.data() + first, 100)
                  && EVP_EncryptFinal_ex(cd.get(), od.data(), &l)
                  && EVP_CIPHER_CTX_ctrl(cd.get(), EVP_CTRL_AEAD_GET_TAG, 16, td) > 0
                  && oh == od && memcmp(th, td, 16) == 0;
        if (pid == 0)
            _exit(ok ? 0 : 1);
        EXPECT_TRUE(ok) << GetParam() << " parent, first update " << first << "\n" << error_queue_text();
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << GetParam() << " child, first update " << first;
    }
}

const char *const kGcms[] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};
INSTANTIATE_TEST_SUITE_P(Dispatch, DispatchGcm, ::testing::ValuesIn(kGcms),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/*
 * A message larger than one kernel request (AF_ALG 421,872 bytes, armhf
 * 241,648, the CUSE device 65,520) is computed in software, counted, where the default
 * provider succeeds: in one update, and as a small first update whose
 * final's request over the whole message is the one that does not fit.  A
 * context forced to the kernel gets a clean error.
 */
TEST_F(Dispatch, GcmMessageLargerThanTheKernelTakesGoesToSoftware)
{
    CipherPtr h, d;
    if (!kernel_gcm(&h, &d))
        return;
    Bytes key = random_bytes(16), iv = random_bytes(12), aad = random_bytes(20), pt = random_bytes((size_t)1 << 20);
    GcmRun ref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), d.get(), 1, &key, iv, aad, {aad.size()}, pt,
                         {pt.size()}, Bytes(), false, -1);
    ASSERT_TRUE(ref.ok);
    for (auto dc : {std::vector<size_t>{pt.size()}, std::vector<size_t>{1000, pt.size() - 1000}}) {
        Counts c0 = counts(*lib_);
        CtxPtr c(EVP_CIPHER_CTX_new());
        GcmRun r = gcm_run(c.get(), h.get(), 1, &key, iv, aad, {aad.size()}, pt, dc, Bytes(), false, -1);
        ASSERT_TRUE(r.ok) << dc.size() << " updates: " << error_queue_text();
        EXPECT_EQ(tohex(r.out), tohex(ref.out));
        EXPECT_EQ(tohex(r.tag), tohex(ref.tag));
        GcmRun back = gcm_run(c.get(), h.get(), 0, &key, iv, aad, {aad.size()}, r.out, dc, r.tag, dc.size() == 1, -1);
        ASSERT_TRUE(back.ok) << error_queue_text();
        EXPECT_TRUE(back.out == pt);
        EXPECT_EQ(ERR_peek_error(), 0u) << error_queue_text();
        EXPECT_GE(counts(*lib_).sw_bytes - c0.sw_bytes, pt.size()) << "not computed in software";
    }
    CtxPtr c(EVP_CIPHER_CTX_new());
    int force = 1, outl = 0;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
    Bytes out(pt.size());
    ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), p)) << error_queue_text();
    EXPECT_EQ(ctx_param_int(c.get(), HWAF_PARAM_OFFLOAD, -7), 1);
    EXPECT_FALSE(EVP_EncryptUpdate(c.get(), out.data(), &outl, pt.data(), (int)pt.size()));
    EXPECT_TRUE(has_reasoned_error()) << "no reason for the message the kernel cannot take";
    ERR_clear_error();
}

/* AAD the kernel cannot take in one request (cryptodev-linux copies it into
 * one page: 4096 bytes) goes to software like a too-large message; AF_ALG
 * takes it.  Either way the result is the default provider's; a context
 * forced to the kernel gets a reasoned error at the AAD update, before any
 * output. */
TEST_F(Dispatch, GcmAadLargerThanTheKernelTakesGoesToSoftware)
{
    CipherPtr h, d;
    if (!kernel_gcm(&h, &d))
        return;
    Bytes key = random_bytes(16), iv = random_bytes(12), aad = random_bytes(5000), pt = random_bytes(100);
    GcmRun ref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), d.get(), 1, &key, iv, aad, {aad.size()}, pt,
                         {pt.size()}, Bytes(), false, -1);
    ASSERT_TRUE(ref.ok);
    std::string backend;
    {
        CtxPtr c(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr)) << error_queue_text();
        backend = ctx_param_str(c.get(), HWAF_PARAM_BACKEND);
    }
    ASSERT_TRUE(backend == "afalg" || backend == "devcrypto") << backend;
    for (auto ac : {std::vector<size_t>{aad.size()}, std::vector<size_t>{4000, 1000}}) {
        uint64_t a0 = 0, a1 = 0;
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_AEAD_BYTES, &a0));
        Counts c0 = counts(*lib_);
        CtxPtr c(EVP_CIPHER_CTX_new());
        GcmRun r = gcm_run(c.get(), h.get(), 1, &key, iv, aad, ac, pt, {pt.size()}, Bytes(), false, -1);
        ASSERT_TRUE(r.ok) << error_queue_text();
        EXPECT_EQ(tohex(r.out), tohex(ref.out));
        EXPECT_EQ(tohex(r.tag), tohex(ref.tag));
        GcmRun back = gcm_run(c.get(), h.get(), 0, &key, iv, aad, ac, r.out, {pt.size()}, r.tag, true, -1);
        ASSERT_TRUE(back.ok) << error_queue_text();
        EXPECT_TRUE(back.out == pt);
        EXPECT_EQ(ERR_peek_error(), 0u) << error_queue_text();
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_AEAD_BYTES, &a1));
        if (backend == "devcrypto") {
            EXPECT_GE(counts(*lib_).sw_bytes - c0.sw_bytes, 2 * (aad.size() + pt.size())) << "not computed in software";
            EXPECT_EQ(a1, a0) << "the device took AAD over one page";
        } else {
            EXPECT_GE(a1 - a0, 2 * (aad.size() + pt.size())) << "AF_ALG takes this AAD: not in the kernel";
        }
    }
    CtxPtr c(EVP_CIPHER_CTX_new());
    int force = 1, outl = 0;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
    ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), p)) << error_queue_text();
    bool took = EVP_EncryptUpdate(c.get(), nullptr, &outl, aad.data(), (int)aad.size());
    if (backend == "devcrypto") {
        EXPECT_FALSE(took) << "forced to the kernel, AAD over one page was taken";
        EXPECT_TRUE(has_reasoned_error()) << "no reason for the AAD the kernel cannot take";
    } else {
        EXPECT_TRUE(took) << error_queue_text();
    }
    ERR_clear_error();
}

/*
 * A GCM message of more than one update continues its counter stream
 * through hwaf's own AES-CTR of the same backend and hardware class, whose
 * driver a known answer checks, never through a kernel ctr(aes) that none
 * checked.  Here the GCM driver is classed as hardware and only hardware is
 * offered (hw_drivers, allow_software = no), so that class has no AES-CTR:
 * the continuation takes the default provider's AES-CTR (software bytes,
 * no kernel cipher request), and a context forced to the kernel takes the
 * counter stream from the GCM driver itself (no software, one more GCM
 * request per later update).  Both directions, three updates of odd sizes:
 * the default provider's ciphertext, tag and plaintext.
 */
TEST_F(Dispatch, GcmContinuationWithoutAesCtrOfItsClass)
{
    const std::string be = env().backend == "devcrypto" ? "devcrypto" : "afalg";
    std::string text, gcm;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
    for (const ImplLine &l : parse_algorithms(text))
        if (l.name == "AES-128-GCM" && l.backend == be && gcm.empty())
            gcm = l.driver;
    ASSERT_FALSE(gcm.empty()) << "AES-128-GCM not offered through " << be << ":\n" << text;
    LibCtx lib(make_config("backends = " + be + "\nhw_drivers = " + gcm
                           + "\nallow_software = no\noffload_min = 0\n"));
    ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    std::string algs;
    ASSERT_TRUE(lib.prov_param(HWAF_PARAM_ALGORITHMS, &algs));
    ASSERT_EQ(algs.find("AES-128-CTR " + be + " "), std::string::npos)
        << "an AES-CTR of the GCM driver's class is offered:\n" << algs;
    CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-128-GCM", ("provider=hwaf,hwaf.hw=yes,hwaf.backend=" + be).c_str()));
    CipherPtr d(EVP_CIPHER_fetch(lib.get(), "AES-128-GCM", "provider=default"));
    ASSERT_TRUE(h && d) << algs << error_queue_text();
    const Bytes key = random_bytes(16), iv = random_bytes(12), aad = random_bytes(20), pt = random_bytes(3000);
    const std::vector<size_t> dc = {1000, 1100, 900};
    GcmRun ref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), d.get(), 1, &key, iv, aad, {aad.size()}, pt, dc,
                         Bytes(), false, -1);
    ASSERT_TRUE(ref.ok);
    auto kernel = [&](const char *name) {
        uint64_t v = 0;
        EXPECT_TRUE(lib.prov_param(name, &v)) << name;
        return v;
    };
    for (int force : {-1, 1}) {
        CtxPtr c(EVP_CIPHER_CTX_new());
        int f = force;
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &f), OSSL_PARAM_construct_end()};
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), p)) << error_queue_text();
        EXPECT_EQ(ctx_param_int(c.get(), HWAF_PARAM_HW), 1);
        EXPECT_EQ(ctx_param_str(c.get(), HWAF_PARAM_DRIVER), gcm);
        for (int enc : {1, 0}) {
            const std::string what = std::string(enc ? "encrypt" : "decrypt") + (force == 1 ? ", forced" : ", auto");
            Counts c0 = counts(lib);
            uint64_t cops = kernel(HWAF_PARAM_CIPHER_OPS), aops = kernel(HWAF_PARAM_AEAD_OPS);
            GcmRun r = gcm_run(c.get(), h.get(), enc, nullptr, iv, aad, {aad.size()}, enc ? pt : ref.out, dc,
                               enc ? Bytes() : ref.tag, false, -1);
            ASSERT_TRUE(r.ok) << what << ": " << error_queue_text();
            EXPECT_EQ(ERR_peek_error(), 0u) << what << ": " << error_queue_text();
            if (enc) {
                EXPECT_EQ(tohex(r.out), tohex(ref.out)) << what;
                EXPECT_EQ(tohex(r.tag), tohex(ref.tag)) << what;
            } else {
                EXPECT_TRUE(r.out == pt) << what << ": wrong plaintext";
            }
            Counts c1 = counts(lib);
            EXPECT_EQ(kernel(HWAF_PARAM_CIPHER_OPS), cops) << what << ": a kernel cipher request";
            if (force == 1) {
                EXPECT_EQ(c1.sw_bytes, c0.sw_bytes) << what << ": software in a context forced to the kernel";
                /* the first update, one per later update, the final's tag
                 * request, and encrypting one more before it: the kept
                 * ciphertext turned back into the plaintext */
                EXPECT_EQ(kernel(HWAF_PARAM_AEAD_OPS) - aops, enc ? 5u : 4u) << what;
            } else {
                EXPECT_GE(c1.sw_bytes - c0.sw_bytes, 2000u) << what << ": the continuation not in software";
                EXPECT_EQ(kernel(HWAF_PARAM_AEAD_OPS) - aops, 2u) << what;
            }
        }
        EXPECT_EQ(ctx_param_int(c.get(), HWAF_PARAM_OFFLOAD, -7), force);
    }
}

class DispatchHmac : public Dispatch, public ::testing::WithParamInterface<DigestAlg> {
protected:
    MacPtr fetch(const char *query)
    {
        return MacPtr(EVP_MAC_fetch(lib_->get(), "HMAC", query));
    }
    MacCtxPtr ctx(EVP_MAC *m, const Bytes &key)
    {
        MacCtxPtr c(EVP_MAC_CTX_new(m));
        OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)GetParam().name, 0),
                          OSSL_PARAM_construct_end()};
        EXPECT_TRUE(c && EVP_MAC_init(c.get(), key.data(), key.size(), p)) << GetParam().name << ": "
                                                                           << error_queue_text();
        return c;
    }
    static std::string final_hex(EVP_MAC_CTX *c)
    {
        unsigned char out[EVP_MAX_MD_SIZE];
        size_t l = 0;
        if (!EVP_MAC_final(c, out, &l, sizeof(out)))
            return "failed: " + error_queue_text();
        return tohex(out, l);
    }
};

/* As DispatchDigest.HeldBackThenDecided, for HMAC: messages around the
 * threshold in random pieces, a copy mid-message, the context re-used. */
TEST_P(DispatchHmac, HeldBackThenDecided)
{
    MacPtr h = fetch(hwaf_query().c_str());
    MacPtr d = fetch("provider=default");
    ASSERT_TRUE(h && d) << error_queue_text();
    Counts c0 = counts(*lib_);
    Bytes key = random_bytes(random_size(1, 200));
    MacCtxPtr ch = ctx(h.get(), key), cd = ctx(d.get(), key);
    for (int msg = 0; msg < 30; msg++) {
        if (msg > 0) {
            ASSERT_TRUE(EVP_MAC_init(ch.get(), nullptr, 0, nullptr)) << error_queue_text();
            ASSERT_TRUE(EVP_MAC_init(cd.get(), nullptr, 0, nullptr));
        }
        int pieces = 1 + (int)(rng_() % 5);
        MacCtxPtr kh, kd;
        std::ostringstream log;
        for (int p = 0; p < pieces; p++) {
            Bytes in = random_bytes(random_size(0, 2 * kThreshold / pieces + 8));
            ASSERT_TRUE(EVP_MAC_update(ch.get(), in.data(), in.size())) << error_queue_text();
            ASSERT_TRUE(EVP_MAC_update(cd.get(), in.data(), in.size()));
            log << in.size() << " ";
            if (!kh && rng_() % 3 == 0) {
                kh.reset(EVP_MAC_CTX_dup(ch.get()));
                kd.reset(EVP_MAC_CTX_dup(cd.get()));
                ASSERT_TRUE(kh && kd) << error_queue_text();
                Bytes more = random_bytes(random_size(0, 2 * kThreshold));
                ASSERT_TRUE(EVP_MAC_update(kh.get(), more.data(), more.size()));
                ASSERT_TRUE(EVP_MAC_update(kd.get(), more.data(), more.size()));
                log << "copy+" << more.size() << " ";
            }
        }
        ASSERT_EQ(final_hex(ch.get()), final_hex(cd.get())) << GetParam().name << " pieces " << log.str();
        if (kh) {
            ASSERT_EQ(final_hex(kh.get()), final_hex(kd.get())) << GetParam().name << " copy, pieces " << log.str();
        }
    }
    Counts c1 = counts(*lib_);
    EXPECT_GT(c1.sw_ops, c0.sw_ops) << "no message was computed in software";
    EXPECT_GT(c1.k_ops, c0.k_ops) << "no message reached the kernel";
}

TEST_P(DispatchHmac, ForkWhileHeldBackAndAfter)
{
    MacPtr h = fetch(hwaf_query().c_str());
    MacPtr d = fetch("provider=default");
    ASSERT_TRUE(h && d);
    Bytes key = random_bytes(32);
    for (size_t first : {kThreshold / 2, 2 * kThreshold}) {
        MacCtxPtr ch = ctx(h.get(), key), cd = ctx(d.get(), key);
        Bytes in = random_bytes(first), more = random_bytes(random_size(0, 3 * kThreshold));
        ASSERT_TRUE(EVP_MAC_update(ch.get(), in.data(), in.size()));
        ASSERT_TRUE(EVP_MAC_update(cd.get(), in.data(), in.size()));
        pid_t pid = fork();
        ASSERT_NE(pid, -1);
        bool ok = EVP_MAC_update(ch.get(), more.data(), more.size()) && EVP_MAC_update(cd.get(), more.data(), more.size())
                  && final_hex(ch.get()) == final_hex(cd.get());
        if (pid == 0)
            _exit(ok ? 0 : 1);
        EXPECT_TRUE(ok) << GetParam().name << " parent, " << first << "+" << more.size() << "\n" << error_queue_text();
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << GetParam().name << " child, " << first << "+"
                                                                   << more.size();
    }
}

TEST_P(DispatchHmac, ContextParameterForces)
{
    MacPtr h = fetch(hwaf_query().c_str());
    MacPtr d = fetch("provider=default");
    ASSERT_TRUE(h && d);
    Bytes key = random_bytes(20);
    for (int force : {0, 1}) {
        MacCtxPtr ch = ctx(h.get(), key), cd = ctx(d.get(), key);
        Counts before = counts(*lib_);
        uint64_t mac0 = 0, mac1 = 0, cipher0 = 0, cipher1 = 0;
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_MAC_BYTES, &mac0));
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_CIPHER_BYTES, &cipher0));
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
        ASSERT_TRUE(EVP_MAC_CTX_set_params(ch.get(), p)) << error_queue_text();
        int got = -7;
        OSSL_PARAM q[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &got), OSSL_PARAM_construct_end()};
        ASSERT_TRUE(EVP_MAC_CTX_get_params(ch.get(), q));
        EXPECT_EQ(got, force);
        size_t n = force ? 16 : 4 * kThreshold;
        Bytes in(n, 3);
        ASSERT_TRUE(EVP_MAC_update(ch.get(), in.data(), n));
        ASSERT_TRUE(EVP_MAC_update(cd.get(), in.data(), n));
        EXPECT_EQ(final_hex(ch.get()), final_hex(cd.get()));
        Counts after = counts(*lib_);
        EXPECT_EQ(after.sw_bytes - before.sw_bytes, force ? 0u : n) << "force " << force;
        EXPECT_EQ(after.k_bytes - before.k_bytes, force ? n : 0u) << "force " << force;
        /* The kernel's HMAC work is counted as such, not as cipher work. */
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_MAC_BYTES, &mac1));
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_CIPHER_BYTES, &cipher1));
        EXPECT_EQ(mac1 - mac0, force ? n : 0u) << HWAF_PARAM_MAC_BYTES << ", force " << force;
        EXPECT_EQ(cipher1, cipher0) << HWAF_PARAM_CIPHER_BYTES;
    }
}

INSTANTIATE_TEST_SUITE_P(Dispatch, DispatchHmac, ::testing::ValuesIn(kDigests),
                         [](const ::testing::TestParamInfo<DigestAlg> &i) { return test_name(i.param.name); });

/* ---- the per-context parameter and the configuration keys -------------- */

std::vector<std::string> threshold_lines(const LibCtx &lib)
{
    std::string text;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_THRESHOLDS, &text)) << HWAF_PARAM_THRESHOLDS;
    std::vector<std::string> v;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        v.push_back(line);
    return v;
}

/* Encrypt n bytes of AES-128-CBC with offload forced to `force` (or left
 * alone when force is -2); returns the change of the counters. */
Counts cbc_run(LibCtx &lib, const EVP_CIPHER *c, size_t n, int force)
{
    Counts before = counts(lib);
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    Bytes key(16, 7), iv(16, 9), in(n, 1), out(n + 16);
    int outl;
    EXPECT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c, key.data(), iv.data(), nullptr));
    if (force != -2) {
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
        EXPECT_TRUE(EVP_CIPHER_CTX_set_params(ctx.get(), p)) << error_queue_text();
        EXPECT_EQ(ctx_param_int(ctx.get(), HWAF_PARAM_OFFLOAD, -7), force);
    }
    EXPECT_TRUE(EVP_CipherUpdate(ctx.get(), out.data(), &outl, in.data(), (int)n));
    Counts after = counts(lib), d;
    d.sw_ops = after.sw_ops - before.sw_ops;
    d.sw_bytes = after.sw_bytes - before.sw_bytes;
    d.k_ops = after.k_ops - before.k_ops;
    d.k_bytes = after.k_bytes - before.k_bytes;
    return d;
}

TEST_F(Dispatch, ThresholdDecidesAndContextParameterForces)
{
    CipherPtr h, d;
    need_cipher("AES-128-CBC", &h, &d);
    if (!h)
        return;
    Counts small = cbc_run(*lib_, h.get(), kThreshold - 16, -2);
    EXPECT_EQ(small.sw_bytes, kThreshold - 16);
    EXPECT_EQ(small.k_bytes, 0u) << "below the threshold, yet sent to the kernel";
    Counts big = cbc_run(*lib_, h.get(), kThreshold, -2);
    EXPECT_EQ(big.sw_bytes, 0u);
    EXPECT_EQ(big.k_bytes, kThreshold) << "at the threshold, yet not sent to the kernel";
    Counts forced_k = cbc_run(*lib_, h.get(), 16, 1);
    EXPECT_EQ(forced_k.sw_bytes, 0u);
    EXPECT_EQ(forced_k.k_bytes, 16u);
    Counts forced_s = cbc_run(*lib_, h.get(), 4 * kThreshold, 0);
    EXPECT_EQ(forced_s.sw_bytes, 4 * kThreshold);
    EXPECT_EQ(forced_s.k_bytes, 0u);
    /* Out of range is refused with a reason. */
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    Bytes key(16, 1), iv(16, 2);
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), h.get(), key.data(), iv.data(), nullptr));
    int bad = 5;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &bad), OSSL_PARAM_construct_end()};
    EXPECT_FALSE(EVP_CIPHER_CTX_set_params(ctx.get(), p));
    EXPECT_TRUE(has_reasoned_error());
    size_t min = 0;
    OSSL_PARAM q[] = {OSSL_PARAM_construct_size_t(HWAF_PARAM_OFFLOAD_MIN, &min), OSSL_PARAM_construct_end()};
    ASSERT_TRUE(EVP_CIPHER_CTX_get_params(ctx.get(), q));
    EXPECT_EQ(min, kThreshold);
}

TEST_F(Dispatch, DigestContextParameterForces)
{
    MdPtr h, d;
    need_md("SHA2-256", &h, &d);
    if (!h)
        return;
    for (int force : {0, 1}) {
        Counts before = counts(*lib_);
        MdCtxPtr c(EVP_MD_CTX_new());
        ASSERT_TRUE(EVP_DigestInit_ex2(c.get(), h.get(), nullptr));
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
        ASSERT_TRUE(EVP_MD_CTX_set_params(c.get(), p)) << error_queue_text();
        EXPECT_EQ(md_ctx_param_int(c.get(), HWAF_PARAM_OFFLOAD, -7), force);
        size_t n = force ? 16 : 4 * kThreshold;
        Bytes in(n, 3), ref;
        unsigned char out[64];
        unsigned int outl = 0;
        ASSERT_TRUE(EVP_DigestUpdate(c.get(), in.data(), n));
        ASSERT_TRUE(EVP_DigestFinal_ex(c.get(), out, &outl));
        ASSERT_TRUE(digest_oneshot(d.get(), in, &ref));
        EXPECT_EQ(tohex(out, outl), tohex(ref));
        Counts after = counts(*lib_);
        EXPECT_EQ(after.sw_bytes - before.sw_bytes, force ? 0u : n) << "force " << force;
        EXPECT_EQ(after.k_bytes - before.k_bytes, force ? n : 0u) << "force " << force;
    }
}

TEST_F(Dispatch, ThresholdsReportedWithTheirSource)
{
    std::vector<ImplLine> impls;
    {
        std::string text;
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
        impls = parse_algorithms(text);
    }
    ASSERT_FALSE(impls.empty());
    auto lines = threshold_lines(*lib_);
    ASSERT_EQ(lines.size(), impls.size() + 1);
    EXPECT_EQ(lines[0], "policy=throughput");
    for (size_t i = 0; i < impls.size(); i++)
        EXPECT_EQ(lines[i + 1], impls[i].name + " " + impls[i].backend + " " + impls[i].driver +
                                    " offload_min=" + std::to_string(kThreshold) + " source=configured");

    /* A calibration file: its values are used, per policy, shown as cached. */
    std::ostringstream cal;
    cal << "# written by a test\nhwaf-calibration 1\n";
    for (const ImplLine &l : impls)
        cal << l.name << " " << l.backend << " " << l.driver << " 32 never\n";
    std::string path = write_temp_file("calibration", cal.str());
    for (const char *policy : {"throughput", "cpu"}) {
        use_config(std::string("calibration = ") + path + "\npolicy = " + policy + "\noffload_min = auto\n");
        if (HasFatalFailure())
            return;
        lines = threshold_lines(*lib_);
        ASSERT_EQ(lines.size(), impls.size() + 1);
        EXPECT_EQ(lines[0], std::string("policy=") + policy);
        std::string want = strcmp(policy, "cpu") == 0 ? "never" : "32";
        for (size_t i = 0; i < impls.size(); i++)
            EXPECT_EQ(lines[i + 1], impls[i].name + " " + impls[i].backend + " " + impls[i].driver +
                                        " offload_min=" + want + " source=cached");
        CipherPtr h = hwaf_cipher("AES-128-CBC");
        ASSERT_TRUE(h);
        Counts c = cbc_run(*lib_, h.get(), 48, -2);
        EXPECT_EQ(c.k_bytes, want == "32" ? 48u : 0u) << policy;
        EXPECT_EQ(c.sw_bytes, want == "32" ? 0u : 48u) << policy;
    }
    /* Without calibration and with offload_min = auto: the documented
     * defaults, never for a driver on the CPU. */
    use_config("offload_min = auto\n");
    if (HasFatalFailure())
        return;
    lines = threshold_lines(*lib_);
    ASSERT_EQ(lines.size(), impls.size() + 1);
    for (size_t i = 0; i < impls.size(); i++) {
        std::string want = impls[i].hw ? "65536" : "never";
        EXPECT_EQ(lines[i + 1], impls[i].name + " " + impls[i].backend + " " + impls[i].driver +
                                    " offload_min=" + want + " source=default");
    }
    /* `openssl list -providers -verbose` shows buildinfo: the thresholds
     * are there too. */
    std::string bi;
    ASSERT_TRUE(lib_->prov_param(OSSL_PROV_PARAM_BUILDINFO, &bi));
    EXPECT_NE(bi.find("offload thresholds policy=throughput;"), std::string::npos) << bi;
    EXPECT_NE(bi.find(impls[0].name + " " + impls[0].backend + " " + impls[0].driver + " offload_min="),
              std::string::npos) << bi;
}

namespace {

uint64_t software_ready(const LibCtx &lib)
{
    uint64_t n = UINT64_MAX;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_SOFTWARE_READY, &n)) << HWAF_PARAM_SOFTWARE_READY;
    return n;
}

/* AES-GCM encryption with a 12-byte IV, AAD and data in one piece each
 * (gcm_run): ciphertext then the 16-byte tag. */
bool gcm_oneshot(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &aad,
                 const Bytes &in, Bytes *out)
{
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    GcmRun r = gcm_run(ctx.get(), c, 1, &key, iv, aad, {aad.size()}, in, {in.size()}, Bytes(),
                       false, -1);
    if (!r.ok || r.out.size() != in.size())
        return false;
    *out = r.out;
    out->insert(out->end(), r.tag.begin(), r.tag.end());
    return true;
}

bool hmac_oneshot(EVP_MAC *m, const char *digest, const Bytes &key, const Bytes &in, Bytes *out)
{
    MacCtxPtr ctx(EVP_MAC_CTX_new(m));
    OSSL_PARAM p[] = { OSSL_PARAM_construct_utf8_string("digest", const_cast<char *>(digest), 0),
                       OSSL_PARAM_construct_end() };
    size_t n = 0;
    out->assign(EVP_MAX_MD_SIZE, 0);
    if (!ctx || !EVP_MAC_init(ctx.get(), key.data(), key.size(), p)
        || !EVP_MAC_update(ctx.get(), in.data(), in.size())
        || !EVP_MAC_final(ctx.get(), out->data(), &n, out->size()))
        return false;
    out->resize(n);
    return true;
}

} // namespace

/*
 * The load fetches nothing from the default provider: an implementation's
 * software path is set up at its first context (and only its own), or for
 * all of them when the thresholds are first asked for -- and what the
 * contexts compute is the default provider's either way.
 */
TEST_F(Dispatch, SoftwarePathSetUpAtFirstContextNotAtLoad)
{
    EXPECT_EQ(software_ready(*lib_), 0u) << "the load set up software paths";
    CipherPtr h, d;
    need_cipher("AES-128-CBC", &h, &d);
    if (!h)
        return;
    EXPECT_EQ(software_ready(*lib_), 0u) << "a fetch set up software paths";
    /* The configuration in effect is its own text, built when asked. */
    std::string cfg;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_CONFIG, &cfg));
    EXPECT_NE(cfg.find("offload_min = " + std::to_string(kThreshold) + ";"), std::string::npos) << cfg;
    EXPECT_EQ(software_ready(*lib_), 0u) << "asking for hwaf-config set up software paths";

    Bytes key = random_bytes(16), iv = random_bytes(16), ref, out;
    for (size_t n : {kThreshold / 2, 4 * kThreshold}) {   /* software, then the kernel */
        Bytes in = random_bytes(n);
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &ref));
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &out)) << error_queue_text();
        EXPECT_EQ(tohex(out), tohex(ref)) << n << " bytes";
    }
    EXPECT_EQ(software_ready(*lib_), 1u) << "AES-128-CBC's contexts: its software path only";

    MdPtr hm, dm;
    need_md("SHA2-256", &hm, &dm);
    if (!hm)
        return;
    Bytes msg = random_bytes(kThreshold / 4);
    ASSERT_TRUE(digest_oneshot(dm.get(), msg, &ref));
    ASSERT_TRUE(digest_oneshot(hm.get(), msg, &out)) << error_queue_text();
    EXPECT_EQ(tohex(out), tohex(ref));
    EXPECT_EQ(software_ready(*lib_), 2u) << "and SHA2-256's";

    /* The thresholds are only known with the software paths: asking for
     * them sets up every implementation's. */
    std::string text;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
    size_t impls = parse_algorithms(text).size();
    EXPECT_EQ(software_ready(*lib_), (uint64_t)impls);
    auto lines = threshold_lines(*lib_);
    ASSERT_EQ(lines.size(), impls + 1);
    for (size_t i = 1; i < lines.size(); i++)
        EXPECT_NE(lines[i].find(" offload_min=" + std::to_string(kThreshold) + " source=configured"),
                  std::string::npos) << lines[i];
}

/*
 * Several threads make the first contexts of a fresh load's
 * implementations at once (the software path of each is set up by the
 * first of them while the others wait) and every result, in software below
 * the threshold and in the kernel above it, is the default provider's.
 */
TEST_F(Dispatch, FirstContextsFromManyThreadsAtOnce)
{
    struct Job {
        const char *name;
        int kind;   /* 0 cipher, 1 digest, 2 GCM, 3 HMAC-SHA256 */
        CipherPtr hc, dc;
        MdPtr hm, dm;
    };
    std::vector<Job> jobs;
    for (const char *c : {"AES-128-CBC", "AES-128-CTR", "AES-256-XTS"})
        jobs.push_back({c, 0, nullptr, nullptr, nullptr, nullptr});
    for (const char *m : {"SHA1", "SHA2-256"})
        jobs.push_back({m, 1, nullptr, nullptr, nullptr, nullptr});
    jobs.push_back({"AES-128-GCM", 2, nullptr, nullptr, nullptr, nullptr});
    jobs.push_back({"HMAC", 3, nullptr, nullptr, nullptr, nullptr});
    MacPtr hmac(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
    MacPtr dmac(EVP_MAC_fetch(lib_->get(), "HMAC", "provider=default"));
    ASSERT_TRUE(hmac && dmac) << error_queue_text();
    for (Job &j : jobs) {
        if (j.kind == 0 || j.kind == 2)
            need_cipher(j.name, &j.hc, &j.dc);
        else if (j.kind == 1)
            need_md(j.name, &j.hm, &j.dm);
        if (j.kind != 3 && !j.hc && !j.hm)
            return;
    }
    ASSERT_EQ(software_ready(*lib_), 0u);

    /* The inputs and the default provider's answers, made beforehand. */
    const int kThreads = 8;
    const size_t sizes[] = { kThreshold / 2, 16 * kThreshold };   /* software, kernel */
    Bytes key = random_bytes(64), iv = random_bytes(16), aad = random_bytes(20);
    key[0] = (unsigned char)(key[16] ^ 0x5a);   /* AES-256-XTS: unequal halves */
    std::vector<Bytes> in, want;
    for (const Job &j : jobs) {
        for (size_t n : sizes) {
            Bytes x = random_bytes(n), r;
            Bytes k(key.begin(), key.begin() + (j.kind == 3 ? 32 : j.dc ? EVP_CIPHER_get_key_length(j.dc.get()) : 0));
            bool ok = j.kind == 0   ? cipher_oneshot(j.dc.get(), 1, k, iv, x, &r, 0)
                      : j.kind == 1 ? digest_oneshot(j.dm.get(), x, &r)
                      : j.kind == 2 ? gcm_oneshot(j.dc.get(), k, Bytes(iv.begin(), iv.begin() + 12), aad, x, &r)
                                    : hmac_oneshot(dmac.get(), "SHA2-256", k, x, &r);
            ASSERT_TRUE(ok) << j.name;
            in.push_back(x);
            want.push_back(r);
        }
    }

    std::atomic<int> arrived{0};
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
        threads.emplace_back([&, t] {
            arrived.fetch_add(1);
            while (arrived.load() < kThreads)
                std::this_thread::yield();   /* all start together */
            std::ostringstream e;
            for (size_t s = 0; s < jobs.size(); s++) {
                size_t ji = (s + (size_t)t) % jobs.size();   /* each thread its own order */
                const Job &j = jobs[ji];
                for (size_t z = 0; z < 2; z++) {
                    const Bytes &x = in[2 * ji + z];
                    Bytes k(key.begin(), key.begin() + (j.kind == 3 ? 32 : j.hc ? EVP_CIPHER_get_key_length(j.hc.get()) : 0)), r;
                    bool ok = j.kind == 0   ? cipher_oneshot(j.hc.get(), 1, k, iv, x, &r, 0)
                              : j.kind == 1 ? digest_oneshot(j.hm.get(), x, &r)
                              : j.kind == 2 ? gcm_oneshot(j.hc.get(), k, Bytes(iv.begin(), iv.begin() + 12), aad, x, &r)
                                            : hmac_oneshot(hmac.get(), "SHA2-256", k, x, &r);
                    if (!ok)
                        e << j.name << " " << x.size() << " bytes failed: " << error_queue_text() << "\n";
                    else if (r != want[2 * ji + z])
                        e << j.name << " " << x.size() << " bytes: " << tohex(r) << " != " << tohex(want[2 * ji + z]) << "\n";
                }
            }
            errors[t] = e.str();
        });
    }
    for (auto &th : threads)
        th.join();
    for (int t = 0; t < kThreads; t++)
        EXPECT_EQ(errors[t], "") << "thread " << t;
    /* one implementation per algorithm fetched, each set up once */
    EXPECT_EQ(software_ready(*lib_), (uint64_t)jobs.size());
}

/*
 * When the process runs out of descriptors, contexts whose kernel session
 * or hash cannot be opened are served in software -- same bytes, counted --
 * and go back to the kernel once descriptors are free again; a context
 * forced to the kernel fails cleanly instead.
 */
class FdHog {
public:
    explicit FdHog(rlim_t limit)
    {
        if (getrlimit(RLIMIT_NOFILE, &old_) != 0)
            return;
        struct rlimit r = old_;
        if (r.rlim_cur > limit)
            r.rlim_cur = limit;
        if (setrlimit(RLIMIT_NOFILE, &r) != 0)
            return;
        set_ = true;
        int fd;
        while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
            fds_.push_back(fd);
        full_ = errno == EMFILE;
    }
    ~FdHog() { release(); }
    void release()
    {
        for (int fd : fds_)
            close(fd);
        fds_.clear();
        if (set_)
            setrlimit(RLIMIT_NOFILE, &old_);
        set_ = false;
    }
    bool full() const { return full_; }

private:
    struct rlimit old_;
    std::vector<int> fds_;
    bool set_ = false, full_ = false;
};

/* Opens an implementation skips after one failed for want of descriptors
 * (HWAF_FD_BACKOFF, provider/hwaf_soft.h). */
const int kFdBackoff = 64;

uint64_t fallbacks(const LibCtx &lib)
{
    uint64_t n = 0;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_FALLBACKS_DESCRIPTORS, &n)) << HWAF_PARAM_FALLBACKS_DESCRIPTORS;
    return n;
}

/*
 * After work done short of descriptors: no error left, the opens tried
 * since f0 (printed with what was done) and the counts now.  False when
 * the backend opens no descriptor per session (/dev/crypto), after
 * checking that nothing fell back: there is no back-off to look at.
 */
bool backoff_tried(const LibCtx &lib, const std::string &backend, const std::string &what, uint64_t f0,
                   const Counts &c0, uint64_t *tried, Counts *c1)
{
    EXPECT_EQ(ERR_peek_error(), 0u) << error_queue_text();
    *tried = fallbacks(lib) - f0;
    *c1 = counts(lib);
    std::printf("[          ] %s: %s short of descriptors: %llu opens tried\n", backend.c_str(), what.c_str(),
                (unsigned long long)*tried);
    if (backend == "afalg")
        return true;
    EXPECT_EQ(*tried, 0u);
    EXPECT_EQ(c1->sw_bytes, c0.sw_bytes);
    return false;
}

TEST_F(Dispatch, OutOfDescriptorsServedInSoftware)
{
    use_config("offload_min = 0\n");
    if (HasFatalFailure())
        return;
    CipherPtr h, d, gh, gd;
    MdPtr mh, md;
    need_cipher("AES-128-CBC", &h, &d);
    need_md("SHA2-256", &mh, &md);
    need_cipher("AES-256-GCM", &gh, &gd);
    MacPtr hm(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
    MacPtr hd(EVP_MAC_fetch(lib_->get(), "HMAC", "provider=default"));
    if (!h || !mh || !gh)
        return;
    ASSERT_TRUE(hm && hd) << error_queue_text();
    OSSL_PARAM sha256[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA2-256", 0),
                           OSSL_PARAM_construct_end()};
    std::string backend;
    {
        CtxPtr c(EVP_CIPHER_CTX_new());
        Bytes key(16, 3), iv(16, 4);
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr));
        backend = ctx_param_str(c.get(), HWAF_PARAM_BACKEND);
    }
    Counts c0 = counts(*lib_);
    uint64_t f0 = fallbacks(*lib_);
    const int kLive = 40;
    std::vector<CtxPtr> ciphers, gcms;
    std::vector<MdCtxPtr> digests;
    std::vector<MacCtxPtr> macs;
    {
        FdHog hog(256);
        ASSERT_TRUE(hog.full()) << "could not use up the descriptors";
        Bytes key = random_bytes(16), iv = random_bytes(16), in = random_bytes(1000);
        Bytes ref(1016), out(1016);
        int lr = 0, lo = 0, t = 0;
        {
            CtxPtr cd(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(EVP_EncryptInit_ex2(cd.get(), d.get(), key.data(), iv.data(), nullptr));
            ASSERT_TRUE(EVP_EncryptUpdate(cd.get(), ref.data(), &lr, in.data(), (int)in.size()));
            ASSERT_TRUE(EVP_EncryptFinal_ex(cd.get(), ref.data() + lr, &t));
            lr += t;
        }
        Bytes dref;
        ASSERT_TRUE(digest_oneshot(md.get(), in, &dref));
        Bytes gkey = random_bytes(32), giv = random_bytes(12), aad = random_bytes(13);
        GcmRun gref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), gd.get(), 1, &gkey, giv, aad, {aad.size()}, in,
                              {in.size()}, Bytes(), false, -1);
        ASSERT_TRUE(gref.ok);
        std::string mref;
        {
            MacCtxPtr x(EVP_MAC_CTX_new(hd.get()));
            unsigned char mo[64];
            size_t ml = 0;
            ASSERT_TRUE(EVP_MAC_init(x.get(), gkey.data(), gkey.size(), sha256) && EVP_MAC_update(x.get(), in.data(), in.size())
                        && EVP_MAC_final(x.get(), mo, &ml, sizeof(mo)));
            mref = tohex(mo, ml);
        }
        for (int i = 0; i < kLive; i++) {
            CtxPtr c(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr))
                << "context " << i << ": " << error_queue_text();
            ASSERT_TRUE(EVP_EncryptUpdate(c.get(), out.data(), &lo, in.data(), (int)in.size()))
                << "context " << i << ": " << error_queue_text();
            ASSERT_TRUE(EVP_EncryptFinal_ex(c.get(), out.data() + lo, &t));
            ASSERT_EQ(tohex(out.data(), lo + t), tohex(ref.data(), lr)) << "context " << i;
            ciphers.push_back(std::move(c));
            MdCtxPtr m(EVP_MD_CTX_new());
            unsigned char dg[64];
            unsigned int dl = 0;
            ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), mh.get(), nullptr)) << error_queue_text();
            ASSERT_TRUE(EVP_DigestUpdate(m.get(), in.data(), in.size())) << error_queue_text();
            ASSERT_TRUE(EVP_DigestFinal_ex(m.get(), dg, &dl)) << error_queue_text();
            ASSERT_EQ(tohex(dg, dl), tohex(dref)) << "digest " << i;
            ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), mh.get(), nullptr)) << error_queue_text();
            digests.push_back(std::move(m));
            CtxPtr g(EVP_CIPHER_CTX_new());
            GcmRun gr = gcm_run(g.get(), gh.get(), 1, &gkey, giv, aad, {aad.size()}, in, {in.size()}, Bytes(), false, -1);
            ASSERT_TRUE(gr.ok) << "GCM context " << i << ": " << error_queue_text();
            ASSERT_EQ(tohex(gr.out) + tohex(gr.tag), tohex(gref.out) + tohex(gref.tag)) << "GCM context " << i;
            gcms.push_back(std::move(g));
            MacCtxPtr x(EVP_MAC_CTX_new(hm.get()));
            unsigned char mo[64];
            size_t ml = 0;
            ASSERT_TRUE(EVP_MAC_init(x.get(), gkey.data(), gkey.size(), sha256)) << "HMAC " << i << ": " << error_queue_text();
            ASSERT_TRUE(EVP_MAC_update(x.get(), in.data(), in.size())) << error_queue_text();
            ASSERT_TRUE(EVP_MAC_final(x.get(), mo, &ml, sizeof(mo))) << error_queue_text();
            ASSERT_EQ(tohex(mo, ml), mref) << "HMAC " << i;
            ASSERT_TRUE(EVP_MAC_init(x.get(), nullptr, 0, nullptr)) << error_queue_text();
            macs.push_back(std::move(x));
        }
        EXPECT_EQ(ERR_peek_error(), 0u) << error_queue_text();
        if (backend == "afalg") {
            EXPECT_GT(fallbacks(*lib_), f0) << "no context was short of descriptors";
            EXPECT_GT(counts(*lib_).sw_bytes, c0.sw_bytes) << "nothing was computed in software";
            /* Forced to the kernel: a clean error, not software. */
            CtxPtr c(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr));
            int force = 1;
            OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
            ASSERT_TRUE(EVP_CIPHER_CTX_set_params(c.get(), p));
            EXPECT_FALSE(EVP_EncryptUpdate(c.get(), out.data(), &lo, in.data(), (int)in.size()));
            EXPECT_TRUE(has_reasoned_error()) << "no reason for the refused kernel session";
            ERR_clear_error();
        }
    }
    /* Descriptors free again: the same contexts reach the kernel, at the
     * latest once the implementation's skipped opens have run out. */
    Counts c1 = counts(*lib_);
    Bytes in(64, 5), out(80), key(16, 6), iv(16, 8);
    int lo = 0, tries = 0;
    ASSERT_TRUE(EVP_EncryptInit_ex2(ciphers.back().get(), nullptr, key.data(), iv.data(), nullptr))
        << error_queue_text();
    for (; tries <= kFdBackoff && counts(*lib_).k_bytes == c1.k_bytes; tries++)
        ASSERT_TRUE(EVP_EncryptUpdate(ciphers.back().get(), out.data(), &lo, in.data(), (int)in.size()))
            << error_queue_text();
    Counts c2 = counts(*lib_);
    EXPECT_EQ(c2.k_bytes - c1.k_bytes, 64u) << "cipher not back in the kernel after " << tries << " updates";
    /* A digest stays where its message went: the next one goes there. */
    for (tries = 0; tries <= kFdBackoff && counts(*lib_).k_bytes == c2.k_bytes; tries++) {
        unsigned char dg[64];
        unsigned int dl = 0;
        ASSERT_TRUE(EVP_DigestInit_ex2(digests.back().get(), mh.get(), nullptr)) << error_queue_text();
        ASSERT_TRUE(EVP_DigestUpdate(digests.back().get(), in.data(), in.size()));
        ASSERT_TRUE(EVP_DigestFinal_ex(digests.back().get(), dg, &dl));  /* /dev/crypto hashes at final */
    }
    EXPECT_EQ(counts(*lib_).k_bytes - c2.k_bytes, 64u) << "digest not back in the kernel after " << tries
                                                         << " messages";
}

/*
 * A context short of descriptors does not try the kernel at every
 * operation: after two opens failed, the implementation skips its next opens
 * (the fallback counter counts the opens tried); the bytes stay the default
 * provider's.  Once hwaf frees descriptors of its own, the next operation
 * tries again and gets its session.  Over /dev/crypto every session shares
 * one descriptor: nothing falls back.
 */
TEST_F(Dispatch, OutOfDescriptorsBacksOff)
{
    use_config("offload_min = 0\n");
    if (HasFatalFailure())
        return;
    CipherPtr h, d;
    MdPtr mh, md;
    need_cipher("AES-128-CBC", &h, &d);
    need_md("SHA2-256", &mh, &md);
    if (!h || !mh)
        return;
    Bytes key = random_bytes(16), iv = random_bytes(16);
    std::string backend;
    std::vector<CtxPtr> held;  /* two kernel sessions, freed inside the shortage */
    for (int i = 0; i < 2; i++) {
        CtxPtr c(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr)) << error_queue_text();
        backend = ctx_param_str(c.get(), HWAF_PARAM_BACKEND);
        held.push_back(std::move(c));
    }
    const int kOps = 300, kLen = 32;
    Bytes in = random_bytes(kOps * kLen + 64), out(in.size() + 16), ref(in.size() + 16);
    FdHog hog(256);
    ASSERT_TRUE(hog.full()) << "could not use up the descriptors";
    uint64_t f0 = fallbacks(*lib_);
    Counts c0 = counts(*lib_);
    CtxPtr c(EVP_CIPHER_CTX_new()), r(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr)) << error_queue_text();
    ASSERT_TRUE(EVP_EncryptInit_ex2(r.get(), d.get(), key.data(), iv.data(), nullptr));
    int lo = 0, lr = 0;
    for (int i = 0; i < kOps; i++) {
        ASSERT_TRUE(EVP_EncryptUpdate(c.get(), out.data() + i * kLen, &lo, in.data() + i * kLen, kLen))
            << "update " << i << ": " << error_queue_text();
        ASSERT_TRUE(EVP_EncryptUpdate(r.get(), ref.data() + i * kLen, &lr, in.data() + i * kLen, kLen));
        ASSERT_EQ(lo, lr);
    }
    EXPECT_EQ(tohex(out.data(), kOps * kLen), tohex(ref.data(), kOps * kLen));
    MdCtxPtr m(EVP_MD_CTX_new());
    for (int i = 0; i < kOps; i++) {
        Bytes msg(in.begin() + i * kLen, in.begin() + i * kLen + kLen + i % 33), want;
        unsigned char dg[64];
        unsigned int dl = 0;
        ASSERT_TRUE(digest_oneshot(md.get(), msg, &want));
        ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), mh.get(), nullptr) && EVP_DigestUpdate(m.get(), msg.data(), msg.size())
                    && EVP_DigestFinal_ex(m.get(), dg, &dl))
            << "message " << i << ": " << error_queue_text();
        ASSERT_EQ(tohex(dg, dl), tohex(want)) << "message " << i;
    }
    uint64_t tried = 0;
    Counts c1;
    if (!backoff_tried(*lib_, backend, std::to_string(kOps) + " cipher updates and " + std::to_string(kOps) + " digests",
                       f0, c0, &tried, &c1))
        return;
    /* Without the back-off: the init, every update and every message; with
     * it, two failures in a row, then one try after each 64 skipped. */
    const uint64_t most = 2 * (2 + (kOps + 1) / (kFdBackoff + 1) + 1);
    EXPECT_LE(tried, most) << "the kernel was tried at (almost) every operation";
    EXPECT_GE(tried, 6u) << "the kernel was not tried again after the first failures";
    EXPECT_GE(c1.sw_bytes - c0.sw_bytes, (uint64_t)kOps * kLen * 2);
    /* hwaf releases two descriptors: the next update tries and gets them. */
    held.clear();
    ASSERT_TRUE(EVP_EncryptUpdate(c.get(), out.data(), &lo, in.data(), 64)) << error_queue_text();
    ASSERT_TRUE(EVP_EncryptUpdate(r.get(), ref.data(), &lr, in.data(), 64));
    EXPECT_EQ(tohex(out.data(), lo), tohex(ref.data(), lr));
    EXPECT_EQ(counts(*lib_).k_bytes - c1.k_bytes, 64u) << "descriptors hwaf released were not tried";
}

/*
 * GCM backs off as the ciphers do: short of descriptors, 300 connections'
 * contexts (a new context and key each, as a TLS server's) and a
 * long-lived context's messages try a few opens instead of one or two per
 * context, with the default provider's bytes and tags; once hwaf frees
 * descriptors of its own, the long-lived context's next message gets the
 * kernel.  Over /dev/crypto nothing falls back.
 */
TEST_F(Dispatch, GcmOutOfDescriptorsBacksOff)
{
    use_config("offload_min = 0\n");
    if (HasFatalFailure())
        return;
    CipherPtr h, d;
    need_cipher("AES-128-GCM", &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes(16), aad = random_bytes(13), pt = random_bytes(100);
    std::string backend;
    std::vector<CtxPtr> held;  /* two kernel sessions, freed inside the shortage */
    for (int i = 0; i < 2; i++) {
        CtxPtr c(EVP_CIPHER_CTX_new());
        Bytes iv = random_bytes(12);
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr)) << error_queue_text();
        backend = ctx_param_str(c.get(), HWAF_PARAM_BACKEND);
        held.push_back(std::move(c));
    }
    const int kConns = 300;
    FdHog hog(256);
    ASSERT_TRUE(hog.full()) << "could not use up the descriptors";
    uint64_t f0 = fallbacks(*lib_);
    Counts c0 = counts(*lib_);
    CtxPtr live(EVP_CIPHER_CTX_new());
    for (int i = 0; i < kConns; i++) {
        Bytes iv = random_bytes(12);
        GcmRun ref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), d.get(), 1, &key, iv, aad, {aad.size()}, pt,
                             {pt.size()}, Bytes(), false, -1);
        ASSERT_TRUE(ref.ok);
        CtxPtr c(EVP_CIPHER_CTX_new());
        GcmRun r = gcm_run(c.get(), h.get(), 1, &key, iv, aad, {aad.size()}, pt, {pt.size()}, Bytes(), false, -1);
        ASSERT_TRUE(r.ok) << "connection " << i << ": " << error_queue_text();
        ASSERT_EQ(tohex(r.out) + tohex(r.tag), tohex(ref.out) + tohex(ref.tag)) << "connection " << i;
        GcmRun l = gcm_run(live.get(), h.get(), 1, i == 0 ? &key : nullptr, iv, aad, {aad.size()}, pt,
                           {pt.size()}, Bytes(), false, -1);
        ASSERT_TRUE(l.ok) << "message " << i << ": " << error_queue_text();
        ASSERT_EQ(tohex(l.out) + tohex(l.tag), tohex(ref.out) + tohex(ref.tag)) << "message " << i;
    }
    uint64_t tried = 0;
    Counts c1;
    if (!backoff_tried(*lib_, backend, std::to_string(kConns) + " GCM contexts and " + std::to_string(kConns) + " messages",
                       f0, c0, &tried, &c1))
        return;
    /* Without the back-off: an open at each new context's init and at each
     * message of both contexts (901 here); with it, two failures in a row,
     * then one try after each 64 skipped. */
    const uint64_t most = 3 + 3 * kConns / kFdBackoff;
    EXPECT_LE(tried, most) << "the kernel was tried at (almost) every context or message";
    EXPECT_GE(tried, 4u) << "the kernel was not tried again after the first failures";
    EXPECT_GE(c1.sw_bytes - c0.sw_bytes, (uint64_t)kConns * (aad.size() + pt.size()) * 2);
    /* hwaf releases two descriptors: the long-lived context's next message
     * tries and gets them. */
    held.clear();
    Bytes iv = random_bytes(12);
    GcmRun ref = gcm_run(CtxPtr(EVP_CIPHER_CTX_new()).get(), d.get(), 1, &key, iv, aad, {aad.size()}, pt,
                         {pt.size()}, Bytes(), false, -1);
    GcmRun l = gcm_run(live.get(), h.get(), 1, nullptr, iv, aad, {aad.size()}, pt, {pt.size()}, Bytes(), false, -1);
    ASSERT_TRUE(ref.ok && l.ok) << error_queue_text();
    EXPECT_EQ(tohex(l.out) + tohex(l.tag), tohex(ref.out) + tohex(ref.tag));
    EXPECT_EQ(counts(*lib_).k_bytes - c1.k_bytes, aad.size() + pt.size())
        << "descriptors hwaf released were not tried";
}

} // namespace

/* ---- configuration errors: no kernel needed ----------------------------- */

namespace {

class HostDispatchConfig : public HwafTest {};

TEST_F(HostDispatchConfig, BadValuesRefuseToLoadWithAReason)
{
    const char *bad[] = {
        "policy = fast\n",
        "offload_min = -1\n",
        "offload_min = 12kb\n",
        "offload_min = 99999999999999\n",
    };
    for (const char *b : bad) {
        LibCtx lib(make_config(b));
        EXPECT_FALSE(lib.config_ok() && lib.hwaf_loaded()) << "accepted: " << b;
        EXPECT_NE(lib.load_errors().find("hwaf"), std::string::npos) << b << ": " << lib.load_errors();
    }
}

TEST_F(HostDispatchConfig, MalformedCalibrationFilesAreCleanErrors)
{
    struct Case {
        const char *text, *expect;
    } cases[] = {
        {"", "empty"},
        {"AES-128-CBC afalg cbc-aes-aesni 1 2\n", ":1: expected \"hwaf-calibration 1\""},
        {"hwaf-calibration 2\n", ":1: expected \"hwaf-calibration 1\""},
        {"hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni 1024\n", ":2: expected <name>"},
        {"hwaf-calibration 1\n# fine\nAES-128-CBC afalg cbc-aes-aesni 1k never\n", ":3: threshold"},
        {"hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni -5 7\n", ":2: threshold"},
        {"hwaf-calibration 1\nzerocopy afalg cbc-aes-aesni maybe\n", ":2: expected zerocopy"},
        {"hwaf-calibration 1\nzerocopy afalg cbc-aes-aesni\n", ":2: expected zerocopy"},
        {"hwaf-calibration 1\nzerocopy afalg cbc-aes-aesni splice 4096\n", ":2: expected zerocopy"},
    };
    for (const Case &c : cases) {
        std::string path = write_temp_file("calibration", c.text);
        LibCtx lib(make_config("calibration = " + path + "\n"));
        EXPECT_FALSE(lib.config_ok() && lib.hwaf_loaded()) << "accepted:\n" << c.text;
        EXPECT_NE(lib.load_errors().find(c.expect), std::string::npos)
            << "file:\n" << c.text << "\nerrors: " << lib.load_errors();
    }
    /* A file that does not exist yet is no error: defaults until calibrated. */
    LibCtx lib(make_config("calibration = " + tmp_dir() + "/no-such-calibration\n"));
    EXPECT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    /* And a good one loads. */
    std::string path = write_temp_file("calibration", "hwaf-calibration 1\n"
                                                      "AES-128-CBC afalg cbc-aes-aesni 4096 never # ok\n"
                                                      "zerocopy afalg cbc-aes-aesni copy\n"
                                                      "zerocopy devcrypto cuse-cbc-aes splice\n");
    LibCtx good(make_config("calibration = " + path + "\npolicy = cpu\noffload_min = auto\n"));
    EXPECT_TRUE(good.config_ok() && good.hwaf_loaded()) << good.load_errors();
}

/* The file refused, and the errors (queue and stderr) hold every string of
 * expect. */
static void expect_refused(const std::string &path, const std::vector<std::string> &expect,
                           const std::string &what)
{
    LibCtx lib(make_config("calibration = " + path + "\n"));
    EXPECT_FALSE(lib.config_ok() && lib.hwaf_loaded()) << "accepted: " << what;
    for (const std::string &e : expect)
        EXPECT_NE(lib.load_errors().find(e), std::string::npos)
            << what << ": no \"" << e << "\" in the errors: " << lib.load_errors();
}

static void expect_loads(const std::string &text, const std::string &what)
{
    std::string path = write_temp_file("calibration", text);
    LibCtx lib(make_config("calibration = " + path + "\n"));
    EXPECT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << what << ": " << lib.load_errors();
}

/* Two lines that say different things of one implementation (or one
 * driver's zero-copy) are a contradiction: the load fails, naming both. */
TEST_F(HostDispatchConfig, CalibrationSecondLineForTheSameEntryRefused)
{
    struct Case {
        const char *text, *first, *second;
    } cases[] = {
        {"hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni 64 64\n# later\n"
         "AES-128-CBC afalg cbc-aes-aesni never never\n", ":2", ":4"},
        {"hwaf-calibration 1\nSHA2-256 afalg sha256-avx2 never never\n"
         "SHA2-256 afalg sha256-avx2 never never\n", ":2", ":3"},
        {"hwaf-calibration 1\nzerocopy afalg cbc-aes-aesni splice\n"
         "AES-128-CBC afalg cbc-aes-aesni 64 64\nzerocopy afalg cbc-aes-aesni copy\n", ":2", ":4"},
    };
    for (const Case &c : cases) {
        std::string path = write_temp_file("calibration", c.text);
        expect_refused(path, {"second line for the same", path + c.first, path + c.second}, c.text);
    }
    /* Not the same implementation, not the same driver: no contradiction. */
    expect_loads("hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni 64 64\n"
                 "AES-128-CBC afalg virtio_crypto_aes_cbc 65536 16384\n"
                 "AES-128-CBC devcrypto cbc-aes-aesni never never\n"
                 "AES-256-CBC afalg cbc-aes-aesni never never\n"
                 "zerocopy afalg cbc-aes-aesni splice\nzerocopy afalg xts-aes-aesni copy\n"
                 "zerocopy devcrypto cbc-aes-aesni copy\n", "distinct lines");
}

/* The file's thresholds take what offload_min takes: 0 to 1 GiB, or never. */
TEST_F(HostDispatchConfig, CalibrationThresholdsInTheKeysRange)
{
    expect_loads("hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni 1073741824 0\n", "1 GiB and 0");
    expect_loads("hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni never 1073741824\n", "never");
    for (const char *t : {"1073741825 never", "never 1099511627776", "1099511627776 1099511627776"}) {
        std::string path = write_temp_file("calibration",
                                           std::string("hwaf-calibration 1\nAES-128-CBC afalg x ") + t + "\n");
        expect_refused(path, {path + ":2: threshold", "1073741824"}, t);
    }
    /* And the key itself says the same range. */
    LibCtx key(make_config("offload_min = 1073741825\n"));
    EXPECT_FALSE(key.config_ok() && key.hwaf_loaded());
    EXPECT_NE(key.load_errors().find("1073741824"), std::string::npos) << key.load_errors();
}

/* What is not a calibration file at all says so, rather than what a line
 * of one would lack. */
TEST_F(HostDispatchConfig, CalibrationNotARegularFile)
{
    expect_refused(tmp_dir(), {"not a regular file", tmp_dir()}, "a directory");
    expect_refused("/dev/null", {"not a regular file", "/dev/null"}, "/dev/null");
    /* A FIFO: refused at once, not waited on for a writer. */
    std::string fifo = tmp_dir() + "/calibration-fifo";
    unlink(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << strerror(errno);
    expect_refused(fifo, {"not a regular file", fifo}, "a FIFO");
    unlink(fifo.c_str());
}

TEST_F(HostDispatchConfig, CalibrationEmptyOrNulByte)
{
    std::string empty = write_temp_file("calibration", "");
    expect_refused(empty, {"calibration file is empty", empty}, "no byte");
    std::string blank = write_temp_file("calibration", "\n# nothing yet\n\n");
    expect_refused(blank, {blank + ": expected \"hwaf-calibration 1\" first"}, "comments only");

    using namespace std::string_literals;
    const std::string nul_mid = "hwaf-calibration 1\nAES-128-CBC afalg cbc\0-aes-aesni 1 2\n"s;
    const std::string nul_end = "hwaf-calibration 1\nAES-128-CBC afalg cbc-aes-aesni 1 2\n\0"s;
    const std::string nul_header = "hwaf-calibration\0 1\n"s;
    for (const auto &c : {std::make_pair(nul_mid, ":2"), std::make_pair(nul_end, ":3"),
                          std::make_pair(nul_header, ":1")}) {
        ASSERT_NE(c.first.find('\0'), std::string::npos);
        std::string path = write_temp_file("calibration", c.first);
        expect_refused(path, {"NUL byte", path + c.second}, "NUL byte at " + std::string(c.second));
    }
    /* A long line is still a long line. */
    std::string longline = write_temp_file("calibration", "hwaf-calibration 1\n# " + std::string(600, 'x') + "\n");
    expect_refused(longline, {longline + ":2: line too long"}, "600 characters");
}


/*
 * What the software digest's spare context relies on (hwaf_soft_md_wipe):
 * the default provider's final of a 64-byte-block hash (SHA-1, SHA-224,
 * SHA-256) leaves none of the message in its context, so an init alone
 * wipes it; a 128-byte-block hash gets hwaf's fill of zeros as well.  The
 * default provider's own functions, reached as hwaf reaches them, on a
 * message of distinct bytes; its context's whole allocation is searched
 * for any 4 bytes of the message, which are there before the final (the
 * search sees the buffer) and must be gone after it.  Runs with every
 * libcrypto the suites run with (OpenSSL 3.0 and 3.5).
 */
static bool holds_part_of(const unsigned char *mem, size_t memlen, const unsigned char *msg,
                          size_t msglen)
{
    for (size_t i = 0; i + 4 <= msglen; i++)
        for (size_t j = 0; j + 4 <= memlen; j++)
            if (memcmp(mem + j, msg + i, 4) == 0)
                return true;
    return false;
}

TEST(SoftDigestWipe, Md32FinalClearsItsBuffer)
{
    OSSL_PROVIDER *prov = OSSL_PROVIDER_load(nullptr, "default");
    ASSERT_NE(prov, nullptr);
    int no_cache = 0;
    const OSSL_ALGORITHM *algs = OSSL_PROVIDER_query_operation(prov, OSSL_OP_DIGEST, &no_cache);
    ASSERT_NE(algs, nullptr);
    for (const char *name : {"SHA1", "SHA2-224", "SHA2-256"}) {
        SCOPED_TRACE(name);
        const OSSL_DISPATCH *fns = nullptr;
        for (const OSSL_ALGORITHM *a = algs; a->algorithm_names != nullptr; a++) {
            std::string names = std::string(":") + a->algorithm_names + ":";
            if (names.find(std::string(":") + name + ":") != std::string::npos)
                fns = a->implementation;
        }
        ASSERT_NE(fns, nullptr);
        OSSL_FUNC_digest_newctx_fn *newctx = nullptr;
        OSSL_FUNC_digest_init_fn *init = nullptr;
        OSSL_FUNC_digest_update_fn *update = nullptr;
        OSSL_FUNC_digest_final_fn *final = nullptr;
        OSSL_FUNC_digest_freectx_fn *freectx = nullptr;
        for (const OSSL_DISPATCH *f = fns; f->function_id != 0; f++) {
            switch (f->function_id) {
            case OSSL_FUNC_DIGEST_NEWCTX: newctx = OSSL_FUNC_digest_newctx(f); break;
            case OSSL_FUNC_DIGEST_INIT: init = OSSL_FUNC_digest_init(f); break;
            case OSSL_FUNC_DIGEST_UPDATE: update = OSSL_FUNC_digest_update(f); break;
            case OSSL_FUNC_DIGEST_FINAL: final = OSSL_FUNC_digest_final(f); break;
            case OSSL_FUNC_DIGEST_FREECTX: freectx = OSSL_FUNC_digest_freectx(f); break;
            }
        }
        ASSERT_TRUE(newctx && init && update && final && freectx);
        void *c = newctx(OSSL_PROVIDER_get0_provider_ctx(prov));
        ASSERT_NE(c, nullptr);
        size_t memlen = malloc_usable_size(c);
        ASSERT_GE(memlen, 64u);
        /* every length that leaves bytes buffered, the padding in one block or two */
        for (size_t len : {5, 16, 40, 55, 56, 63, 100}) {
            SCOPED_TRACE(len);
            unsigned char msg[128], md[64];
            size_t mdl = 0;
            for (size_t i = 0; i < len; i++)
                msg[i] = (unsigned char)(0x81 + 37 * i);
            ASSERT_TRUE(init(c, nullptr) && update(c, msg, len));
            if (len % 64 >= 4) {
                EXPECT_TRUE(holds_part_of((unsigned char *)c, memlen, msg + len / 64 * 64,
                                          len % 64))
                    << "the search does not see the buffered input";
            }
            ASSERT_TRUE(final(c, md, &mdl, sizeof(md)));
            EXPECT_FALSE(holds_part_of((unsigned char *)c, memlen, msg, len))
                << "the final leaves part of the message: hwaf_soft_md_wipe must fill this "
                   "hash's buffer";
        }
        freectx(c);
    }
    OSSL_PROVIDER_unload(prov);
}

} // namespace
