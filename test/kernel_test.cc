/*
 * Completeness against the kernel, and libkcapi as an independent
 * reference.
 *
 *   Complete*      probe the kernel directly (AF_ALG bind per algorithm) and
 *                  require hwaf to offer exactly what the kernel has; in the
 *                  guest all 13 algorithms must be there
 *   Kcapi*         with crypto_user: libkcapi agrees on what exists and on
 *                  results
 *   NoCryptoUser*  without crypto_user: libkcapi cannot work (asserted, so
 *                  this configuration is what it claims), hwaf still does
 */
#include "hwaf_test.h"

#ifdef HWAF_TEST_HAVE_KCAPI
#include <kcapi.h>
#endif

#include <cerrno>
#include <cstring>

using namespace hwaf_test;

namespace {

class Complete : public KernelTest {};

TEST_F(Complete, ProviderOffersWhatTheKernelHas)
{
    int kernel_count = 0;
    auto check = [&](const char *name, bool offered) {
        bool has = kernel_has_alg(name);
        kernel_count += has;
        EXPECT_EQ(offered, has) << name << ": kernel " << (has ? "has" : "lacks") << " it, hwaf "
                                << (offered ? "offers" : "does not offer") << " it";
        if (env().guest) {
            EXPECT_TRUE(has) << "the guest kernel must have " << name;
        }
    };
    for (const auto &c : kCiphers) {
        CipherPtr h(EVP_CIPHER_fetch(lib_->get(), c.name, hwaf_query().c_str()));
        check(c.name, h != nullptr);
    }
    for (const auto &d : kDigests) {
        MdPtr h(EVP_MD_fetch(lib_->get(), d.name, hwaf_query().c_str()));
        check(d.name, h != nullptr);
    }
    ERR_clear_error();
    EXPECT_GT(kernel_count, 0) << "a kernel backend with no algorithm at all";
}

TEST_F(Complete, ListedDriversExistInTheKernel)
{
    std::string text;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
    std::vector<ImplLine> lines = parse_algorithms(text);
    ASSERT_FALSE(lines.empty());
    for (const ImplLine &l : lines) {
        if (l.backend != "afalg")
            continue;
        bool cipher = l.name.rfind("AES", 0) == 0;
        bool aead = l.name.find("GCM") != std::string::npos;
        /* Binding by driver name reaches exactly that driver. */
        EXPECT_EQ(afalg_bind(aead ? "aead" : cipher ? "skcipher" : "hash", l.driver.c_str()), 0)
            << l.name << ": listed driver '" << l.driver << "' does not bind";
    }
}

#ifdef HWAF_TEST_HAVE_KCAPI

/* Does the configuration have crypto_user?  In the guest the rig says so and
 * the kernel must agree; elsewhere, ask the kernel. */
bool crypto_user_expected(bool *ok_to_run, bool want)
{
    bool probe = kernel_has_crypto_user();
    if (env().guest) {
        EXPECT_EQ(env().crypto_user_env, probe)
            << "HWAF_GUEST_CRYPTO_USER says " << env().crypto_user_env << " but NETLINK_CRYPTO opens: " << probe;
        EXPECT_EQ(probe, want) << "this suite was selected for a guest " << (want ? "with" : "without")
                               << " crypto_user";
        *ok_to_run = probe == want;
    } else {
        *ok_to_run = probe == want;
    }
    return probe;
}

class Kcapi : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        bool ok;
        crypto_user_expected(&ok, true);
        if (HasFailure())
            return;
        if (!ok) {
            if (env().ci)
                FAIL() << "no crypto_user (NETLINK_CRYPTO) here; Kcapi* needs it";
            GTEST_SKIP() << "no crypto_user (NETLINK_CRYPTO) here; libkcapi cannot run";
        }
    }
};

TEST_F(Kcapi, AgreesOnWhatTheKernelHas)
{
    for (const auto &c : kCiphers) {
        struct kcapi_handle *h = nullptr;
        int rc = kcapi_cipher_init(&h, c.kname, 0);
        kcapi_cipher_destroy(h);
        CipherPtr e(EVP_CIPHER_fetch(lib_->get(), c.name, hwaf_query().c_str()));
        EXPECT_EQ(rc == 0, e != nullptr) << c.name << ": kcapi_cipher_init(" << c.kname << ") = " << rc;
    }
    for (const auto &d : kDigests) {
        struct kcapi_handle *h = nullptr;
        int rc = kcapi_md_init(&h, d.kname, 0);
        kcapi_md_destroy(h);
        MdPtr e(EVP_MD_fetch(lib_->get(), d.name, hwaf_query().c_str()));
        EXPECT_EQ(rc == 0, e != nullptr) << d.name << ": kcapi_md_init(" << d.kname << ") = " << rc;
    }
    ERR_clear_error();
}

TEST_F(Kcapi, SameResultsAsLibkcapi)
{
    for (const auto &c : kCiphers) {
        CipherPtr h, d;
        need_cipher(c.name, &h, &d);
        if (!h)
            return;
        for (size_t len : {16, 64, 4096, 65536}) {
            Bytes key = random_bytes(c.keylen), iv = random_bytes(16), in = random_bytes(len), mine, ref(len);
            if (c.mode == Mode::XTS)
                key[0] = (unsigned char)(key[c.keylen / 2] ^ 3);
            ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &mine, 0)) << error_queue_text();
            struct kcapi_handle *kh = nullptr;
            ASSERT_EQ(kcapi_cipher_init(&kh, c.kname, 0), 0) << c.kname;
            ASSERT_EQ(kcapi_cipher_setkey(kh, key.data(), (uint32_t)key.size()), 0);
            ssize_t n = kcapi_cipher_encrypt(kh, in.data(), in.size(), iv.data(), ref.data(), ref.size(),
                                             KCAPI_ACCESS_HEURISTIC);
            kcapi_cipher_destroy(kh);
            ASSERT_EQ(n, (ssize_t)len) << c.name;
            EXPECT_EQ(tohex(mine), tohex(ref)) << c.name << " len " << len << " (hwaf vs libkcapi)";
        }
    }
    for (const auto &dg : kDigests) {
        MdPtr h, d;
        need_md(dg.name, &h, &d);
        if (!h)
            return;
        for (size_t len : {0, 3, 64, 1000, 65537}) {
            Bytes in = random_bytes(len), mine, ref(dg.mdlen);
            ASSERT_TRUE(digest_oneshot(h.get(), in, &mine));
            struct kcapi_handle *kh = nullptr;
            ASSERT_EQ(kcapi_md_init(&kh, dg.kname, 0), 0) << dg.kname;
            ssize_t n = kcapi_md_digest(kh, in.data(), in.size(), ref.data(), ref.size());
            kcapi_md_destroy(kh);
            ASSERT_EQ(n, (ssize_t)dg.mdlen) << dg.name;
            EXPECT_EQ(tohex(mine), tohex(ref)) << dg.name << " len " << len << " (hwaf vs libkcapi)";
        }
    }
}

class NoCryptoUser : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        bool ok;
        crypto_user_expected(&ok, false);
        if (HasFailure())
            return;
        if (!ok)
            GTEST_SKIP() << "crypto_user is loaded here; NoCryptoUser* needs a kernel without it";
    }
};

TEST_F(NoCryptoUser, LibkcapiCannotProviderCan)
{
    /* The configuration really lacks crypto_user: libkcapi's init fails. */
    struct kcapi_handle *kh = nullptr;
    int rc = kcapi_md_init(&kh, "sha256", 0);
    kcapi_md_destroy(kh);
    EXPECT_EQ(rc, -EPROTONOSUPPORT) << "kcapi_md_init without crypto_user";
    /* The provider does not need it. */
    std::string text;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
    std::vector<ImplLine> lines = parse_algorithms(text);
    if (env().guest) {
        /* 13 ciphers and digests, 3 GCM key sizes, HMAC over 5 digests. */
        EXPECT_EQ(lines.size(), 21u) << text;
    }
    for (const ImplLine &l : lines) {
        EXPECT_FALSE(l.driver.empty()) << l.name;
        EXPECT_NE(l.driver, "unknown") << l.name;
    }
    for (const auto &c : kCiphers) {
        CipherPtr h, d;
        need_cipher(c.name, &h, &d);
        if (!h)
            return;
        Bytes key = random_bytes(c.keylen), iv = random_bytes(16), in = random_bytes(4096), a, b;
        if (c.mode == Mode::XTS)
            key[0] = (unsigned char)(key[c.keylen / 2] ^ 3);
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &a)) << error_queue_text();
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &b));
        EXPECT_TRUE(a == b) << c.name;
    }
}

#else /* !HWAF_TEST_HAVE_KCAPI */

TEST(Kcapi, BuiltWithLibkcapi)
{
    FAIL() << "built without libkcapi (Debian: libkcapi-dev); the reference tests cannot run";
}

TEST(NoCryptoUser, BuiltWithLibkcapi)
{
    FAIL() << "built without libkcapi (Debian: libkcapi-dev); the reference tests cannot run";
}

#endif

/*
 * The load-time probe and a passing shortage: hwaf's first load in a
 * process with no descriptor free, then one, then enough (a fresh process,
 * hwaf-probe-child, since the probe is once per process).  A shortage is
 * not the kernel's answer: it must not be blamed on the kernel, not be
 * reported as "usable" with nothing offered, and not be kept: the load
 * with descriptors to spare offers the backend's algorithms.
 */
class ProbeShortage : public KernelTest {};

TEST_F(ProbeShortage, NotCachedNotBlamedOnTheKernel)
{
    const std::string be = env().backend.empty() ? "afalg" : env().backend;
    std::string cmd = std::string(HWAF_TEST_PROBE_CHILD) + " '" + module_dir() + "' 2>&1";
    FILE *f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof(buf), f) != nullptr)
        out += buf;
    int rc = pclose(f);
    ASSERT_EQ(rc, 0) << out;
    auto status = [&](const std::string &step) {
        std::string key = step + " " + be + ": ";
        size_t p = out.find(key);
        if (p == std::string::npos)
            return std::string("<missing>");
        p += key.size();
        return out.substr(p, out.find('\n', p) - p);
    };
    for (const char *step : {"none-free", "one-free"}) {
        std::string st = status(step);
        EXPECT_NE(st, "<missing>") << out;
        EXPECT_EQ(st.find("this kernel has no"), std::string::npos) << step << ": " << st;
        EXPECT_EQ(st.find("usable, 0 of"), std::string::npos) << step << ": " << st;
        EXPECT_TRUE(st.rfind("usable, ", 0) == 0 || st.find("for now") != std::string::npos)
            << step << ": neither usable nor said to be temporary: " << st;
    }
    EXPECT_NE(status("none-free").find("for now"), std::string::npos)
        << "no descriptor at all, yet: " << status("none-free");
    std::string st = status("enough");
    EXPECT_EQ(st.rfind("usable, ", 0), 0u) << "the shortage was kept: " << st << "\n" << out;
    EXPECT_EQ(st.find("usable, 0 of"), std::string::npos) << st;
}

} // namespace
