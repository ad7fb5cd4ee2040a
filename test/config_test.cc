/*
 * Configuration keys that the other suites do not reach: zerocopy,
 * zerocopy_min (their effect is visible in the hwaf-afalg-spliced-bytes
 * counter) and prefer (which implementation a fetch that names no backend
 * gets).  Each key is checked by what it changes, not by being accepted.
 *
 *   HostZerocopyConfig*  bad values are refused (no kernel needed)
 *   Zerocopy*            AF_ALG in the guest
 *   TwoBackends*         AF_ALG and /dev/crypto both usable
 */
#include "hwaf_test.h"

#include <cstdlib>
#include <cstring>

using namespace hwaf_test;

namespace {

uint64_t spliced(const LibCtx &lib)
{
    uint64_t v = 0;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_AFALG_SPLICED_BYTES, &v));
    return v;
}

/* Page-aligned buffers, as the zero-copy path wants them. */
struct Aligned {
    unsigned char *p = nullptr;
    explicit Aligned(size_t n)
    {
        if (posix_memalign((void **)&p, 4096, n) != 0)
            p = nullptr;
    }
    ~Aligned() { free(p); }
};

/*
 * Encrypt len bytes at in + offset with AES-128-CBC through hwaf's AF_ALG
 * implementation in lib, compare with the default provider, and return how
 * many bytes took the zero-copy path.
 */
uint64_t run_cbc(const LibCtx &lib, size_t len, size_t offset)
{
    const size_t total = len + 4096;
    Aligned in(total), out(total);
    Bytes key(16, 0x42), iv(16, 0x17), ref;
    for (size_t i = 0; i < total; i++)
        in.p[i] = (unsigned char)(i * 31 + 7);

    CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=hwaf,hwaf.backend=afalg"));
    CipherPtr d(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=default"));
    EXPECT_TRUE(h && d);
    if (!h || !d)
        return 0;
    uint64_t before = spliced(lib);
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    int l = 0;
    EXPECT_TRUE(EVP_EncryptInit_ex2(ctx.get(), h.get(), key.data(), iv.data(), nullptr));
    EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
    EXPECT_TRUE(EVP_EncryptUpdate(ctx.get(), out.p + offset, &l, in.p + offset, (int)len));
    EXPECT_EQ((size_t)l, len);
    uint64_t after = spliced(lib);
    EXPECT_TRUE(cipher_oneshot(d.get(), 1, key, iv, Bytes(in.p + offset, in.p + offset + len), &ref, 0));
    EXPECT_EQ(ref.size(), len);
    EXPECT_EQ(memcmp(ref.data(), out.p + offset, len), 0) << "wrong bytes, " << len << " at +" << offset;
    return after - before;
}

} // namespace

class Zerocopy : public KernelTest {};

TEST_F(Zerocopy, YesSplicesAlignedInputAboveTheMinimum)
{
    LibCtx lib(make_config("zerocopy = yes\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    EXPECT_EQ(run_cbc(lib, 256 * 1024, 0), 256u * 1024) << "aligned 256 KiB not spliced";
    EXPECT_EQ(run_cbc(lib, 1024 * 1024, 0), 1024u * 1024) << "aligned 1 MiB not spliced";
    EXPECT_EQ(run_cbc(lib, 256 * 1024, 16), 0u) << "unaligned input spliced";
    EXPECT_EQ(run_cbc(lib, 32 * 1024, 0), 0u) << "input under zerocopy_min spliced";
}

TEST_F(Zerocopy, NoNeverSplices)
{
    LibCtx lib(make_config("zerocopy = no\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    EXPECT_EQ(run_cbc(lib, 1024 * 1024, 0), 0u);
}

TEST_F(Zerocopy, MinimumIsHonoured)
{
    LibCtx lib(make_config("zerocopy = yes\nzerocopy_min = 524288\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    EXPECT_EQ(run_cbc(lib, 256 * 1024, 0), 0u) << "256 KiB spliced below a 512 KiB minimum";
    EXPECT_EQ(run_cbc(lib, 1024 * 1024, 0), 1024u * 1024);
}

TEST_F(Zerocopy, AutoGivesRightBytesEitherWay)
{
    /* auto measures both paths once; whichever it keeps, the bytes match. */
    LibCtx lib(make_config("zerocopy = auto\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    run_cbc(lib, 1024 * 1024, 0);
    run_cbc(lib, 256 * 1024, 0);
}

TEST(HostZerocopyConfig, BadValuesAreRefused)
{
    for (const char *bad : {"zerocopy = maybe\n", "zerocopy_min = 12\n", "zerocopy_min = lots\n",
                            "zerocopy_min = -65536\n", "prefer = fastest\n"}) {
        LibCtx lib(make_config(bad));
        EXPECT_FALSE(lib.hwaf_loaded()) << bad << " accepted";
    }
    LibCtx ok(make_config("zerocopy = no\nzerocopy_min = 4096\nprefer = afalg\n"));
    EXPECT_TRUE(ok.hwaf_loaded()) << ok.load_errors();
}

/* ---- prefer: both backends usable ----------------------------------------- */

class TwoBackends : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        ASSERT_TRUE(devcrypto_present()) << "this suite runs with a /dev/crypto";
    }

    /* The backend a fetch naming none gets, for one cipher and one digest. */
    void expect_backend(const std::string &cfg, const std::string &want)
    {
        LibCtx lib(make_config(cfg));
        ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
        CipherPtr c(EVP_CIPHER_fetch(lib.get(), "AES-256-CTR", "provider=hwaf"));
        ASSERT_TRUE(c);
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        Bytes key(32, 1), iv(16, 2);
        ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c.get(), key.data(), iv.data(), nullptr));
        EXPECT_EQ(ctx_param_str(ctx.get(), HWAF_PARAM_BACKEND), want) << cfg;
        MdPtr m(EVP_MD_fetch(lib.get(), "SHA2-256", "provider=hwaf"));
        ASSERT_TRUE(m);
        MdCtxPtr mctx(EVP_MD_CTX_new());
        ASSERT_TRUE(EVP_DigestInit_ex(mctx.get(), m.get(), nullptr));
        EXPECT_EQ(md_ctx_param_str(mctx.get(), HWAF_PARAM_BACKEND), want) << cfg;
    }
};

TEST_F(TwoBackends, PreferPicksTheBackend)
{
    expect_backend("prefer = afalg\n", "afalg");
    expect_backend("prefer = devcrypto\n", "devcrypto");
}

TEST_F(TwoBackends, AutoPrefersDevcryptoBetweenEquals)
{
    /* Both serve these with software drivers here: /dev/crypto wins. */
    expect_backend("prefer = auto\n", "devcrypto");
    expect_backend("", "devcrypto");
}

TEST_F(TwoBackends, AutoPrefersHardware)
{
    /* Declare AF_ALG's CTR driver hardware: AF_ALG now wins for CTR. */
    LibCtx probe;
    std::string text, driver;
    ASSERT_TRUE(probe.prov_param(HWAF_PARAM_ALGORITHMS, &text));
    for (const ImplLine &l : parse_algorithms(text))
        if (l.name == "AES-256-CTR" && l.backend == "afalg")
            driver = l.driver;
    ASSERT_FALSE(driver.empty()) << text;
    LibCtx lib(make_config("hw_drivers = " + driver + "\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    CipherPtr c(EVP_CIPHER_fetch(lib.get(), "AES-256-CTR", "provider=hwaf"));
    ASSERT_TRUE(c);
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    Bytes key(32, 1), iv(16, 2);
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c.get(), key.data(), iv.data(), nullptr));
    EXPECT_EQ(ctx_param_str(ctx.get(), HWAF_PARAM_BACKEND), "afalg");
    EXPECT_EQ(ctx_param_int(ctx.get(), HWAF_PARAM_HW), 1);
}
