/*
 * Configuration keys that the other suites do not reach: zerocopy,
 * zerocopy_min (their effect is visible in the hwaf-afalg-spliced-bytes
 * counter) and prefer (which implementation a fetch that names no backend
 * gets).  Each key is checked by what it changes, not by being accepted.
 *
 *   HostZerocopyConfig*  bad values are refused (no kernel needed)
 *   Zerocopy*            AF_ALG in the guest
 *   TwoBackends*         AF_ALG and /dev/crypto both usable
 *   RequestMax*          request_max splits work into requests of its size
 */
#include "hwaf_test.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

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

/* zerocopy = auto with a calibration file that has a verdict for the
 * driver: the file decides, either way, and no measurement runs. */
TEST_F(Zerocopy, CalibrationVerdictIsUsed)
{
    std::string drv;
    {
        LibCtx lib(make_config("zerocopy = auto\n"));
        ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
        CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=hwaf,hwaf.backend=afalg"));
        ASSERT_TRUE(h);
        CtxPtr c(EVP_CIPHER_CTX_new());
        Bytes key(16, 1), iv(16, 2);
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr));
        drv = ctx_param_str(c.get(), HWAF_PARAM_DRIVER);
        ASSERT_FALSE(drv.empty());
    }
    for (const char *verdict : {"splice", "copy", "splice"}) {
        std::string path = write_temp_file("calibration", std::string("hwaf-calibration 1\n")
                                                              + "zerocopy afalg " + drv + " "
                                                              + verdict + "\n");
        LibCtx lib(make_config("zerocopy = auto\ncalibration = " + path + "\n"));
        ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
        bool splice = strcmp(verdict, "splice") == 0;
        EXPECT_EQ(run_cbc(lib, 256 * 1024, 0), splice ? 256u * 1024 : 0u) << verdict;
        EXPECT_EQ(run_cbc(lib, 1024 * 1024, 0), splice ? 1024u * 1024 : 0u) << verdict;
        EXPECT_EQ(run_cbc(lib, 32 * 1024, 0), 0u) << "under zerocopy_min";
    }
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

/* Drivers of the kernel algorithm kname in /proc/crypto (not internal ones). */
std::vector<std::string> proc_crypto_drivers(const std::string &kname)
{
    std::vector<std::string> out;
    FILE *f = fopen("/proc/crypto", "re");
    if (f == nullptr)
        return out;
    char line[256];
    std::string name, driver;
    bool internal = false;
    auto flush = [&]() {
        if (name == kname && !driver.empty() && !internal)
            out.push_back(driver);
        name.clear();
        driver.clear();
        internal = false;
    };
    while (fgets(line, sizeof(line), f) != nullptr) {
        std::string l(line);
        if (l == "\n") {
            flush();
            continue;
        }
        size_t c = l.find(':');
        if (c == std::string::npos)
            continue;
        std::string k = l.substr(0, l.find_first_of(" \t")), v = l.substr(c + 2);
        if (!v.empty() && v.back() == '\n')
            v.pop_back();
        if (k == "name")
            name = v;
        else if (k == "driver")
            driver = v;
        else if (k == "internal")
            internal = v == "yes";
    }
    flush();
    fclose(f);
    return out;
}

/*
 * With prefer = auto, hardware wins across backends.  A driver that AF_ALG
 * can bind and /dev/crypto does not use is declared hardware: AF_ALG's
 * implementation must then win.  With the CUSE device (drivers cuse-*)
 * any AF_ALG driver will do; the real cryptodev-linux module binds the
 * very driver AF_ALG prefers (ctr-aes-aesni), so a lower-priority one
 * (sha256-generic, ...) is taken, found in /proc/crypto.
 */
TEST_F(TwoBackends, AutoPrefersHardware)
{
    LibCtx probe;
    std::string text;
    ASSERT_TRUE(probe.prov_param(HWAF_PARAM_ALGORITHMS, &text));
    std::vector<ImplLine> lines = parse_algorithms(text);
    std::vector<std::pair<std::string, std::string>> algs; /* OpenSSL name, kernel name */
    for (const CipherAlg &c : kCiphers)
        algs.emplace_back(c.name, c.kname);
    for (const DigestAlg &d : kDigests)
        algs.emplace_back(d.name, d.kname);
    std::string name, driver;
    for (const auto &a : algs) {
        std::string dc;
        for (const ImplLine &l : lines)
            if (l.name == a.first && l.backend == "devcrypto")
                dc = l.driver;
        ASSERT_FALSE(dc.empty()) << a.first << " not offered through /dev/crypto:\n" << text;
        for (const std::string &d : proc_crypto_drivers(a.second)) {
            if (d != dc && afalg_bind(a.second.find('(') != std::string::npos ? "skcipher" : "hash",
                                      d.c_str()) == 0) {
                name = a.first;
                driver = d;
                break;
            }
        }
        if (!driver.empty())
            break;
    }
    ASSERT_FALSE(driver.empty()) << "no algorithm has an AF_ALG driver that /dev/crypto does not use";
    LibCtx lib(make_config("hw_drivers = " + driver + "\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    Bytes key(64), iv(16, 2);
    for (size_t i = 0; i < key.size(); i++)
        key[i] = (unsigned char)(i + 1);  /* XTS: the halves differ */
    CipherPtr c(EVP_CIPHER_fetch(lib.get(), name.c_str(), "provider=hwaf"));
    if (c) {
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c.get(), key.data(), iv.data(), nullptr))
            << name << " " << driver << "\n" << error_queue_text();
        EXPECT_EQ(ctx_param_str(ctx.get(), HWAF_PARAM_BACKEND), "afalg") << name << " " << driver;
        EXPECT_EQ(ctx_param_str(ctx.get(), HWAF_PARAM_DRIVER), driver) << name;
        EXPECT_EQ(ctx_param_int(ctx.get(), HWAF_PARAM_HW), 1) << name;
    } else {
        ERR_clear_error();
        MdPtr m(EVP_MD_fetch(lib.get(), name.c_str(), "provider=hwaf"));
        ASSERT_TRUE(m) << name;
        MdCtxPtr mctx(EVP_MD_CTX_new());
        ASSERT_TRUE(EVP_DigestInit_ex(mctx.get(), m.get(), nullptr));
        EXPECT_EQ(md_ctx_param_str(mctx.get(), HWAF_PARAM_BACKEND), "afalg") << name << " " << driver;
        EXPECT_EQ(md_ctx_param_str(mctx.get(), HWAF_PARAM_DRIVER), driver) << name;
        EXPECT_EQ(md_ctx_param_int(mctx.get(), HWAF_PARAM_HW), 1) << name;
    }
}

/* ---- request_max: the largest request a driver gets ------------------------ */

namespace {

uint64_t backend_ops(const LibCtx &lib)
{
    uint64_t v = 0;
    const char *name = env().backend == "devcrypto" ? HWAF_PARAM_DEVCRYPTO_OPS : HWAF_PARAM_AFALG_OPS;
    EXPECT_TRUE(lib.prov_param(name, &v)) << name;
    return v;
}

} // namespace

class RequestMax : public KernelTest {};

/*
 * A request limit per driver and for every driver, shown per implementation
 * (hwaf-request-max and buildinfo) and kept: a 1 MiB update is split into
 * requests of that size (counted in the backend's operations, one per
 * kernel request) and gives the default provider's bytes.
 */
TEST_F(RequestMax, ConfiguredLimitsSplitEveryRequest)
{
    const std::string be = env().backend == "devcrypto" ? "devcrypto" : "afalg";
    const std::string query = "provider=hwaf,hwaf.backend=" + be;
    std::string cbc_driver;
    {
        std::string text;
        ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
        for (const ImplLine &l : parse_algorithms(text))
            if (l.name == "AES-128-CBC" && l.backend == be && cbc_driver.empty())
                cbc_driver = l.driver;
        ASSERT_FALSE(cbc_driver.empty()) << text;
        /* Without the key: the backend's own limit, unlimited or 64 KiB. */
        std::string line = request_line(*lib_, "AES-128-CBC", be);
        EXPECT_TRUE(line.find(" request_max=unlimited source=default") != std::string::npos
                    || line.find(" request_max=65536 source=default") != std::string::npos) << line;
    }
    LibCtx lib(make_config("request_max = 8192 " + cbc_driver + "=16384\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    std::string cbc_line = request_line(lib, "AES-128-CBC", be);
    EXPECT_NE(cbc_line.find(" " + cbc_driver + " request_max=16384 source=configured"), std::string::npos)
        << cbc_line;
    std::string sha_line = request_line(lib, "SHA2-256", be);
    EXPECT_NE(sha_line.find(" request_max=8192 source=configured"), std::string::npos) << sha_line;
    std::string info;
    ASSERT_TRUE(lib.prov_param(OSSL_PROV_PARAM_BUILDINFO, &info));
    EXPECT_NE(info.find("request limits "), std::string::npos) << info;
    EXPECT_NE(info.find(cbc_line), std::string::npos) << info;

    const size_t len = 1024 * 1024;
    Bytes in = random_bytes(len), key = random_bytes(64), iv = random_bytes(16);
    for (const char *name : {"AES-128-CBC", "AES-128-CTR", "AES-256-XTS"}) {
        CipherPtr h(EVP_CIPHER_fetch(lib.get(), name, query.c_str()));
        CipherPtr d(EVP_CIPHER_fetch(lib.get(), name, "provider=default"));
        ASSERT_TRUE(h && d) << name << ": " << error_queue_text();
        std::string line = request_line(lib, name, be);
        size_t limit = line.find("request_max=16384") != std::string::npos ? 16384 : 8192;
        Bytes k(key.begin(), key.begin() + EVP_CIPHER_get_key_length(d.get())), want, got;
        if (strstr(name, "XTS") != nullptr)
            k[0] ^= 1; /* the halves differ */
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, k, iv, in, &want, 0));
        /* XTS: a data unit of the limit's size (larger units: below). */
        Bytes unit(in.begin(), in.begin() + (strstr(name, "XTS") ? limit : len));
        if (strstr(name, "XTS") != nullptr) {
            ASSERT_TRUE(cipher_oneshot(d.get(), 1, k, iv, unit, &want, 0));
        }
        uint64_t before = backend_ops(lib);
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, k, iv, unit, &got, 0)) << name << ": " << error_queue_text();
        uint64_t ops = backend_ops(lib) - before;
        EXPECT_TRUE(got == want) << name << ": wrong bytes";
        EXPECT_EQ(ops, (unit.size() + limit - 1) / limit) << name << " in requests of " << limit;
    }
    /* An XTS data unit of four limits and 85 bytes (ciphertext stealing in
     * the last piece), both directions: the default provider's bytes.
     * hwaf splits it into five pieces through the driver itself; each
     * piece's tweak (the first's encryption and four decryptions, one block
     * each) comes from the default provider's AES-ECB, never from a kernel
     * ecb(aes) driver no known answer checked.  Through AF_ALG that is five
     * requests.  Over /dev/crypto, which refuses a length that is not whole
     * blocks, the last piece (85 bytes) is its first four blocks through
     * the XTS session, then its tweak and the two blocks of ciphertext
     * stealing over the ecb(aes) the probe checked: eight requests. */
    {
        CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-256-XTS", query.c_str()));
        CipherPtr d(EVP_CIPHER_fetch(lib.get(), "AES-256-XTS", "provider=default"));
        ASSERT_TRUE(h && d) << error_queue_text();
        std::string line = request_line(lib, "AES-256-XTS", be);
        size_t limit = line.find("request_max=16384") != std::string::npos ? 16384 : 8192;
        Bytes k(key.begin(), key.begin() + 64), unit(in.begin(), in.begin() + 4 * limit + 85), want, got,
            back;
        k[0] ^= 1;
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, k, iv, unit, &want, 0));
        uint64_t before = backend_ops(lib), sw0 = 0, sw1 = 0;
        ASSERT_TRUE(lib.prov_param(HWAF_PARAM_SOFTWARE_OPS, &sw0));
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, k, iv, unit, &got, 0)) << error_queue_text();
        uint64_t ops = backend_ops(lib) - before;
        ASSERT_TRUE(lib.prov_param(HWAF_PARAM_SOFTWARE_OPS, &sw1));
        EXPECT_TRUE(got == want) << "AES-256-XTS unit of " << unit.size() << " bytes: wrong bytes";
        ASSERT_TRUE(cipher_oneshot(h.get(), 0, k, iv, want, &back, 0)) << error_queue_text();
        EXPECT_TRUE(back == unit) << "AES-256-XTS unit of " << unit.size() << " bytes: wrong plaintext";
        EXPECT_EQ(ops, be == "afalg" ? 5u : 8u)
            << "AES-256-XTS: " << unit.size() << " bytes in requests of " << limit;
        EXPECT_EQ(sw1 - sw0, 5u) << "AES-256-XTS: the five pieces' tweaks in software";
    }
    MdPtr h(EVP_MD_fetch(lib.get(), "SHA2-256", query.c_str()));
    MdPtr d(EVP_MD_fetch(lib.get(), "SHA2-256", "provider=default"));
    ASSERT_TRUE(h && d);
    Bytes want, got;
    ASSERT_TRUE(digest_oneshot(d.get(), in, &want));
    uint64_t before = backend_ops(lib);
    ASSERT_TRUE(digest_oneshot(h.get(), in, &got)) << error_queue_text();
    uint64_t ops = backend_ops(lib) - before;
    EXPECT_EQ(tohex(got), tohex(want));
    /* 128 updates of 8 KiB and the final. */
    EXPECT_EQ(ops, len / 8192 + 1) << "SHA2-256 in requests of 8192";
}
