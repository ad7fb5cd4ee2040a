/*
 * Properties, introspection and configuration keys.
 *
 *   Props*         every implementation carries hwaf.hw=yes|no (the brief
 *                  calls it "hw"; OpenSSL 3 needs a dotted name) and
 *                  hwaf.backend,
 *                  is listed in hwaf-algorithms, and its context reports the
 *                  listed driver; hw=yes fetches succeed exactly where a
 *                  hardware driver is listed; config keys take effect
 *   Counters*      the provider counts the work it hands to the kernel
 *   GuestCpuOnly*  guest without virtio-crypto: all drivers are CPU ones, so
 *                  hw=yes fails everywhere until hw_drivers says otherwise
 *   GuestVirtio*   guest with virtio-crypto: AES-CBC hw=yes is served by
 *                  virtio_crypto_aes_cbc, hw=no by the CPU's driver
 *                  (aesni on x86-64, the ARMv8 Crypto Extension's on ARM)
 */
#include "hwaf_test.h"

#include <unistd.h>

#include <cstring>
#include <map>
#include <set>

using namespace hwaf_test;

namespace {

/* The hardware class is the property HWAF_PROP_HW ("hwaf.hw"). */
const char *const kHwYes = "provider=" HWAF_PROVIDER_NAME "," HWAF_PROP_HW "=yes";
const char *const kHwNo = "provider=" HWAF_PROVIDER_NAME "," HWAF_PROP_HW "=no";

const char *const kGcmNames[] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};

bool is_gcm(const std::string &name)
{
    for (const char *g : kGcmNames)
        if (name == g)
            return true;
    return false;
}

bool is_cipher(const std::string &name)
{
    for (const auto &c : kCiphers)
        if (name == c.name)
            return true;
    return is_gcm(name);
}

/* The digest of an HMAC implementation, from its kernel driver's name. */
const char *hmac_digest(const std::string &driver)
{
    for (const char *d : {"sha1", "sha224", "sha256", "sha384", "sha512"})
        if (driver.find(d) != std::string::npos)
            return d;
    return "SHA256";
}

/* An HMAC context for digest md from the HMAC fetched with query. */
EVP_MAC_CTX *hmac_ctx(OSSL_LIB_CTX *lib, const std::string &query, const char *md, std::string *provider)
{
    EVP_MAC *m = EVP_MAC_fetch(lib, "HMAC", query.c_str());
    if (m == nullptr)
        return nullptr;
    if (provider != nullptr)
        *provider = OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(m));
    EVP_MAC_CTX *x = EVP_MAC_CTX_new(m);
    EVP_MAC_free(m);
    static const unsigned char key[20] = {1, 2, 3};
    OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)md, 0), OSSL_PARAM_END};
    if (x != nullptr && !EVP_MAC_init(x, key, sizeof(key), p)) {
        EVP_MAC_CTX_free(x);
        return nullptr;
    }
    return x;
}

/* Our canonical name for whatever name the provider listed (it may use an
 * alias); "" when it is none of the 13 ciphers and digests, 3 GCM ciphers
 * and HMAC. */
std::string canonical(OSSL_LIB_CTX *lib, const std::string &name)
{
    if (name == "HMAC")
        return name;
    for (const char *g : kGcmNames) {
        EVP_CIPHER *e = EVP_CIPHER_fetch(lib, g, "provider=default");
        bool is = e != nullptr && EVP_CIPHER_is_a(e, name.c_str());
        EVP_CIPHER_free(e);
        if (is)
            return g;
    }
    for (const auto &c : kCiphers) {
        EVP_CIPHER *e = EVP_CIPHER_fetch(lib, c.name, "provider=default");
        bool is = e != nullptr && EVP_CIPHER_is_a(e, name.c_str());
        EVP_CIPHER_free(e);
        if (is)
            return c.name;
    }
    for (const auto &d : kDigests) {
        EVP_MD *e = EVP_MD_fetch(lib, d.name, "provider=default");
        bool is = e != nullptr && EVP_MD_is_a(e, name.c_str());
        EVP_MD_free(e);
        if (is)
            return d.name;
    }
    ERR_clear_error();
    return "";
}

struct Served {
    bool ok = false;
    std::string provider, driver, backend;
    int hw = -1;
};

/* Fetch name with an exact query (no HWAF_TEST_BACKEND added), set up a
 * context and read what serves it.  HMAC: with the digest named in driver. */
Served serve(OSSL_LIB_CTX *lib, const std::string &name, const std::string &query,
             const std::string &driver = "sha256")
{
    Served s;
    if (name == "HMAC") {
        EVP_MAC_CTX *x = hmac_ctx(lib, query, hmac_digest(driver), &s.provider);
        if (x == nullptr)
            return s;
        char drv[128] = "", be[32] = "";
        int hw = -1;
        OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, drv, sizeof(drv)),
                          OSSL_PARAM_utf8_string(HWAF_PARAM_BACKEND, be, sizeof(be)),
                          OSSL_PARAM_int(HWAF_PARAM_HW, &hw), OSSL_PARAM_END};
        s.ok = EVP_MAC_CTX_get_params(x, p) == 1;
        s.driver = drv;
        s.backend = be;
        s.hw = hw;
        EVP_MAC_CTX_free(x);
        return s;
    }
    if (is_cipher(name)) {
        CipherPtr c(EVP_CIPHER_fetch(lib, name.c_str(), query.c_str()));
        if (!c)
            return s;
        s.provider = OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c.get()));
        Bytes key((size_t)EVP_CIPHER_get_key_length(c.get())), iv(16, 7);
        for (size_t i = 0; i < key.size(); i++)
            key[i] = (unsigned char)(i + 1);
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        if (!EVP_EncryptInit_ex2(ctx.get(), c.get(), key.data(), iv.data(), nullptr))
            return s;
        s.ok = true;
        s.driver = ctx_param_str(ctx.get(), HWAF_PARAM_DRIVER);
        s.backend = ctx_param_str(ctx.get(), HWAF_PARAM_BACKEND);
        s.hw = ctx_param_int(ctx.get(), HWAF_PARAM_HW);
    } else {
        MdPtr m(EVP_MD_fetch(lib, name.c_str(), query.c_str()));
        if (!m)
            return s;
        s.provider = OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(m.get()));
        MdCtxPtr ctx(EVP_MD_CTX_new());
        if (!EVP_DigestInit_ex2(ctx.get(), m.get(), nullptr))
            return s;
        s.ok = true;
        s.driver = md_ctx_param_str(ctx.get(), HWAF_PARAM_DRIVER);
        s.backend = md_ctx_param_str(ctx.get(), HWAF_PARAM_BACKEND);
        s.hw = md_ctx_param_int(ctx.get(), HWAF_PARAM_HW);
    }
    return s;
}

/* The result of a one-shot operation through hwaf with query equals the
 * default provider's. */
::testing::AssertionResult matches_default(OSSL_LIB_CTX *lib, const std::string &name, const std::string &query)
{
    Bytes in(1008), key(64), iv(16), a, b;
    for (size_t i = 0; i < in.size(); i++)
        in[i] = (unsigned char)(i * 31 + 7);
    for (size_t i = 0; i < key.size(); i++)
        key[i] = (unsigned char)(i * 13 + 5);
    if (name == "HMAC") {
        for (const char *md : {"SHA1", "SHA2-224", "SHA2-256", "SHA2-384", "SHA2-512"}) {
            std::string r[2];
            for (int k = 0; k < 2; k++) {
                EVP_MAC_CTX *x = hmac_ctx(lib, k ? "provider=default" : query, md, nullptr);
                unsigned char out[64];
                size_t n = 0;
                if (x == nullptr || !EVP_MAC_update(x, in.data(), in.size()) || !EVP_MAC_final(x, out, &n, 64))
                    r[k] = "failed";
                else
                    r[k] = tohex(out, n);
                EVP_MAC_CTX_free(x);
            }
            if (r[0] != r[1] || r[0] == "failed")
                return ::testing::AssertionFailure() << "HMAC " << md << " differs from the default provider\n"
                                                     << error_queue_text();
        }
        return ::testing::AssertionSuccess();
    }
    if (is_gcm(name)) {
        /* One encryption: ciphertext and tag as the default provider's. */
        std::string r[2];
        for (int k = 0; k < 2; k++) {
            CipherPtr c(EVP_CIPHER_fetch(lib, name.c_str(), k ? "provider=default" : query.c_str()));
            CtxPtr x(EVP_CIPHER_CTX_new());
            Bytes out(in.size()), tag(16);
            int n = 0;
            if (!c || !EVP_EncryptInit_ex2(x.get(), c.get(), key.data(), iv.data(), nullptr)
                || !EVP_EncryptUpdate(x.get(), out.data(), &n, in.data(), (int)in.size())
                || !EVP_EncryptFinal_ex(x.get(), out.data() + n, &n)
                || !EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()))
                r[k] = "failed";
            else
                r[k] = tohex(out) + tohex(tag);
        }
        if (r[0] != r[1] || r[0] == "failed")
            return ::testing::AssertionFailure() << name << " differs from the default provider\n" << error_queue_text();
        return ::testing::AssertionSuccess();
    }
    if (is_cipher(name)) {
        CipherPtr h(EVP_CIPHER_fetch(lib, name.c_str(), query.c_str()));
        CipherPtr d(EVP_CIPHER_fetch(lib, name.c_str(), "provider=default"));
        if (!h || !d)
            return ::testing::AssertionFailure() << name << ": fetch failed";
        key.resize((size_t)EVP_CIPHER_get_key_length(d.get()));
        for (int enc : {1, 0}) {
            if (!cipher_oneshot(h.get(), enc, key, iv, in, &a, 0) || !cipher_oneshot(d.get(), enc, key, iv, in, &b, 0))
                return ::testing::AssertionFailure() << name << ": operation failed\n" << error_queue_text();
            if (a != b)
                return ::testing::AssertionFailure() << name << (enc ? " encrypt" : " decrypt")
                                                     << " differs from the default provider";
        }
    } else {
        MdPtr h(EVP_MD_fetch(lib, name.c_str(), query.c_str()));
        MdPtr d(EVP_MD_fetch(lib, name.c_str(), "provider=default"));
        if (!h || !d || !digest_oneshot(h.get(), in, &a) || !digest_oneshot(d.get(), in, &b))
            return ::testing::AssertionFailure() << name << ": digest failed\n" << error_queue_text();
        if (a != b)
            return ::testing::AssertionFailure() << name << " digest differs from the default provider";
    }
    return ::testing::AssertionSuccess();
}

std::vector<std::string> all_names()
{
    std::vector<std::string> v;
    for (const auto &c : kCiphers)
        v.push_back(c.name);
    for (const auto &d : kDigests)
        v.push_back(d.name);
    for (const char *g : kGcmNames)
        v.push_back(g);
    v.push_back("HMAC");
    return v;
}

std::vector<ImplLine> lines_of(const LibCtx &lib)
{
    std::string text;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_ALGORITHMS, &text)) << HWAF_PARAM_ALGORITHMS << " not gettable";
    return parse_algorithms(text);
}

void collect_cipher(EVP_CIPHER *c, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c)), HWAF_PROVIDER_NAME) == 0)
        ((std::vector<std::string> *)arg)->push_back(EVP_CIPHER_get0_name(c));
}

void collect_md(EVP_MD *m, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(m)), HWAF_PROVIDER_NAME) == 0)
        ((std::vector<std::string> *)arg)->push_back(EVP_MD_get0_name(m));
}

class Props : public KernelTest {};

TEST_F(Props, EveryImplementationListedAndLabelled)
{
    OSSL_LIB_CTX *lib = lib_->get();
    std::vector<ImplLine> lines = lines_of(*lib_);
    ASSERT_FALSE(lines.empty()) << "hwaf offers nothing on a kernel with a usable backend";
    std::multiset<std::string> listed;
    for (const ImplLine &l : lines) {
        std::string name = canonical(lib, l.name);
        ASSERT_FALSE(name.empty()) << "hwaf lists an unknown algorithm '" << l.name << "'";
        listed.insert(name);
        EXPECT_TRUE(l.backend == "afalg" || l.backend == "devcrypto") << l.backend;
        std::string q = std::string("provider=hwaf," HWAF_PROP_HW "=") + (l.hw ? "yes" : "no") + ",hwaf.backend=" + l.backend;
        Served s = serve(lib, name, q, l.driver);
        ASSERT_TRUE(s.ok) << name << " listed but fetch '" << q << "' fails\n" << error_queue_text();
        EXPECT_EQ(s.provider, HWAF_PROVIDER_NAME);
        EXPECT_EQ(s.driver, l.driver) << name << " " << q;
        EXPECT_EQ(s.backend, l.backend) << name << " " << q;
        EXPECT_EQ(s.hw, l.hw ? 1 : 0) << name << " " << q;
        EXPECT_TRUE(matches_default(lib, name, q)) << q;
    }
    /* What EVP enumerates from hwaf is exactly what it lists. */
    std::vector<std::string> seen;
    EVP_CIPHER_do_all_provided(lib, collect_cipher, &seen);
    EVP_MD_do_all_provided(lib, collect_md, &seen);
    EVP_MAC_do_all_provided(
        lib,
        [](EVP_MAC *m, void *arg) {
            if (strcmp(OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(m)), HWAF_PROVIDER_NAME) == 0)
                ((std::vector<std::string> *)arg)->push_back(EVP_MAC_get0_name(m));
        },
        &seen);
    std::multiset<std::string> enumerated;
    for (const auto &n : seen) {
        std::string c = canonical(lib, n);
        EXPECT_FALSE(c.empty()) << "hwaf implements unexpected algorithm " << n;
        enumerated.insert(c);
    }
    /* One listed line per implementation: an implementation without the
     * hwaf.hw and hwaf.backend labels could not be served by its line's
     * exact query above, and would be counted here. */
    /* HMAC is one implementation per backend and class, listed once per
     * digest. */
    std::multiset<std::string> listed_impls;
    std::set<std::string> hmac_slots;
    for (const ImplLine &l : lines) {
        if (l.name != "HMAC")
            listed_impls.insert(canonical(lib, l.name));
        else if (hmac_slots.insert(l.backend + (l.hw ? "/hw" : "/sw")).second)
            listed_impls.insert("HMAC");
    }
    EXPECT_EQ(enumerated, listed_impls) << "implementations EVP enumerates vs lines hwaf lists";
    for (const auto &name : all_names()) {
        bool any = listed.count(name) > 0;
        bool yes = false, no = false;
        for (const ImplLine &l : lines)
            if (canonical(lib, l.name) == name)
                (l.hw ? yes : no) = true;
        EXPECT_EQ(serve(lib, name, kHwYes).ok, yes) << name << " hw=yes";
        EXPECT_EQ(serve(lib, name, kHwNo).ok, no) << name << " hw=no";
        EXPECT_EQ(serve(lib, name, "provider=hwaf").ok, any) << name;
        ERR_clear_error();
    }
}

/* The backends key: with only devcrypto allowed, nothing comes from AF_ALG. */
/*
 * OpenSSL treats a property a provider does not define as "no": a query
 * "hwaf.hw=no" alone also matches the default provider (and any other),
 * so where hwaf lacks an algorithm it is served in software elsewhere.
 * "provider=hwaf,hwaf.hw=no" is what names hwaf's CPU-driver
 * implementation: it fails where hwaf has none.  Both behaviours, as
 * docs/config.md describes them.
 */
TEST_F(Props, HwNoAloneAlsoMatchesOtherProviders)
{
    const std::string no = HWAF_PROP_HW "=no";
    /* An algorithm hwaf does not offer. */
    MdPtr m(EVP_MD_fetch(lib_->get(), "SHA3-256", no.c_str()));
    ASSERT_TRUE(m) << "hwaf.hw=no alone did not match the default provider";
    EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(m.get())), "default");
    ERR_clear_error();
    MdPtr n(EVP_MD_fetch(lib_->get(), "SHA3-256", kHwNo));
    EXPECT_FALSE(n) << "provider=hwaf,hwaf.hw=no matched "
                    << OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(n.get()));
    ERR_clear_error();
    /* An algorithm hwaf offers with a CPU driver: the full query gets hwaf's. */
    for (const auto &name : {"AES-128-CBC", "SHA2-256"}) {
        Served s = serve(lib_->get(), name, kHwNo);
        ASSERT_TRUE(s.ok) << name << " " << kHwNo << "\n" << error_queue_text();
        EXPECT_EQ(s.provider, HWAF_PROVIDER_NAME) << name;
        EXPECT_EQ(s.hw, 0) << name;
        /* Alone, hwaf.hw=no may be served by either provider. */
        Served t = serve(lib_->get(), name, no);
        ASSERT_TRUE(t.ok) << name;
        EXPECT_TRUE(t.provider == HWAF_PROVIDER_NAME || t.provider == "default") << t.provider;
    }
}

TEST_F(Props, BackendsKeyTakesEffect)
{
    LibCtx lib(make_config("backends = devcrypto\n"));
    ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    std::string text;
    ASSERT_TRUE(lib.prov_param(HWAF_PARAM_ALGORITHMS, &text));
    for (const ImplLine &l : parse_algorithms(text))
        EXPECT_NE(l.backend, "afalg") << "afalg used although backends = devcrypto";
    std::string st;
    ASSERT_TRUE(lib.prov_param(HWAF_PARAM_AFALG_STATUS, &st));
    EXPECT_NE(st.compare(0, 6, "usable"), 0) << "AF_ALG reported usable although not enabled: " << st;
    EXPECT_FALSE(st.empty());
}

class Counters : public KernelTest {};

TEST_F(Counters, CountWorkHandedToTheKernel)
{
    CipherPtr h, d;
    need_cipher("AES-128-CBC", &h, &d);
    if (!h)
        return;
    CtxPtr probe(EVP_CIPHER_CTX_new());
    Bytes key = random_bytes(16), iv = random_bytes(16), in = random_bytes(4096), out;
    ASSERT_TRUE(EVP_EncryptInit_ex2(probe.get(), h.get(), key.data(), iv.data(), nullptr));
    std::string be = ctx_param_str(probe.get(), HWAF_PARAM_BACKEND);
    const char *ops_p = be == "devcrypto" ? HWAF_PARAM_DEVCRYPTO_OPS : HWAF_PARAM_AFALG_OPS;
    const char *bytes_p = be == "devcrypto" ? HWAF_PARAM_DEVCRYPTO_BYTES : HWAF_PARAM_AFALG_BYTES;
    uint64_t ops0 = 0, bytes0 = 0, ops1 = 0, bytes1 = 0;
    ASSERT_TRUE(lib_->prov_param(ops_p, &ops0)) << ops_p;
    ASSERT_TRUE(lib_->prov_param(bytes_p, &bytes0)) << bytes_p;
    ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &out, 0));
    MdPtr mh, md;
    need_md("SHA2-256", &mh, &md);
    if (!mh)
        return;
    ASSERT_TRUE(digest_oneshot(mh.get(), in, &out));
    ASSERT_TRUE(lib_->prov_param(ops_p, &ops1));
    ASSERT_TRUE(lib_->prov_param(bytes_p, &bytes1));
    EXPECT_GE(ops1 - ops0, 2u) << "one cipher and one digest operation";
    EXPECT_GE(bytes1 - bytes0, 2 * 4096u);
    EXPECT_LE(bytes1 - bytes0, 4 * 4096u) << "counted far more bytes than were processed";
}

/* ---- guest without virtio-crypto ---------------------------------------- */

class GuestCpuOnly : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        ASSERT_TRUE(env().guest && !env().virtio)
            << "GuestCpuOnly* runs in the guest without virtio-crypto (HWAF_GUEST=1, HWAF_GUEST_VIRTIO_CRYPTO=0)";
    }
};

TEST_F(GuestCpuOnly, HwYesFailsCleanlyEverywhere)
{
    std::vector<ImplLine> lines = lines_of(*lib_);
    std::map<std::string, size_t> per_backend;
    for (const ImplLine &l : lines)
        per_backend[l.backend]++;
    /* Every algorithm once per usable backend: AF_ALG always here, and
     * /dev/crypto when the test runs with one. */
    /* 13 ciphers and digests, 3 GCM and 5 HMAC digests (listed once each
     * under "HMAC"), from either backend. */
    EXPECT_EQ(per_backend["afalg"], 21u) << "every algorithm once from AF_ALG";
    if (env().backend == "devcrypto") {
        EXPECT_EQ(per_backend["devcrypto"], 21u) << "every algorithm once from /dev/crypto";
    }
    ASSERT_EQ(lines.size(), per_backend["afalg"] + per_backend["devcrypto"]);
    for (const ImplLine &l : lines) {
        EXPECT_FALSE(l.hw) << l.name << " " << l.driver << " classified as hardware";
        EXPECT_EQ(l.driver.find("virtio"), std::string::npos) << l.driver;
    }
    for (const auto &name : all_names()) {
        ERR_clear_error();
        Served s = serve(lib_->get(), name, kHwYes);
        EXPECT_FALSE(s.ok) << name << " hw=yes served by " << s.driver;
        EXPECT_NE(ERR_peek_error(), 0u) << name << ": fetch failed without an error";
        ERR_clear_error();
        EXPECT_TRUE(serve(lib_->get(), name, kHwNo).ok) << name;
    }
}

std::string drivers_of(const std::vector<ImplLine> &lines, const char *sep)
{
    std::set<std::string> d;
    for (const ImplLine &l : lines)
        d.insert(l.driver);
    std::string s;
    for (const auto &x : d)
        s += (s.empty() ? "" : sep) + x;
    return s;
}

TEST_F(GuestCpuOnly, HwDriversKeyDeclaresThemHardware)
{
    std::vector<ImplLine> lines = lines_of(*lib_);
    ASSERT_FALSE(lines.empty());
    for (const char *sep : {" ", ", "}) {
        LibCtx lib(make_config("hw_drivers = " + drivers_of(lines, sep) + "\n"));
        std::string hwlist = " " + drivers_of(lines, " ") + " ";
        ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
        for (const auto &name : all_names()) {
            Served s = serve(lib.get(), name, kHwYes);
            EXPECT_TRUE(s.ok) << name << " hw=yes with hw_drivers (separator '" << sep << "')\n"
                              << error_queue_text();
            EXPECT_EQ(s.hw, 1) << name;
            EXPECT_TRUE(matches_default(lib.get(), name, kHwYes));
            /* Another CPU driver may still serve hwaf.hw=no, never a
             * declared one. */
            Served n = serve(lib.get(), name, kHwNo);
            if (n.ok) {
                EXPECT_EQ(hwlist.find(" " + n.driver + " "), std::string::npos)
                    << name << ": declared hardware driver " << n.driver << " serves hwaf.hw=no";
            }
            ERR_clear_error();
        }
    }
}

TEST_F(GuestCpuOnly, AllowSoftwareNo)
{
    std::vector<ImplLine> lines = lines_of(*lib_);
    {
        LibCtx lib(make_config("allow_software = no\n"));
        ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
        std::string text;
        ASSERT_TRUE(lib.prov_param(HWAF_PARAM_ALGORITHMS, &text));
        EXPECT_TRUE(parse_algorithms(text).empty()) << "offered with allow_software = no:\n" << text;
        for (const auto &name : all_names())
            EXPECT_FALSE(serve(lib.get(), name, "provider=hwaf").ok) << name;
        ERR_clear_error();
    }
    {
        /* A driver declared hardware is no longer software. */
        LibCtx lib(make_config("allow_software = no\nhw_drivers = " + drivers_of(lines, " ") + "\n"));
        ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
        for (const auto &name : all_names())
            EXPECT_TRUE(serve(lib.get(), name, kHwYes).ok) << name;
    }
}

/* ---- guest with virtio-crypto ------------------------------------------- */

class GuestVirtio : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        ASSERT_TRUE(env().guest && env().virtio)
            << "GuestVirtio* runs in the guest with virtio-crypto (HWAF_GUEST_VIRTIO_CRYPTO=1)";
    }
};

const char *kCbc[] = {"AES-128-CBC", "AES-192-CBC", "AES-256-CBC"};

TEST_F(GuestVirtio, HwYesCbcServedByVirtioCrypto)
{
    for (const char *name : kCbc) {
        Served s = serve(lib_->get(), name, kHwYes);
        ASSERT_TRUE(s.ok) << name << " hw=yes\n" << error_queue_text();
        EXPECT_EQ(s.driver, "virtio_crypto_aes_cbc") << name;
        EXPECT_EQ(s.hw, 1) << name;
        EXPECT_TRUE(matches_default(lib_->get(), name, kHwYes));
        /* A stream split across updates, and the SP 800-38A vector. */
        CipherPtr h(EVP_CIPHER_fetch(lib_->get(), name, kHwYes));
        CipherPtr d(EVP_CIPHER_fetch(lib_->get(), name, "provider=default"));
        ASSERT_TRUE(h && d);
        for (size_t len : {16, 17, 4096, 65536}) {
            Bytes key = random_bytes((size_t)EVP_CIPHER_get_key_length(d.get())), iv = random_bytes(16);
            Bytes in = random_bytes(len), a, b, back;
            ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &a)) << error_queue_text();
            ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &b));
            EXPECT_TRUE(a == b) << name << " len " << len;
            ASSERT_TRUE(cipher_oneshot(h.get(), 0, key, iv, a, &back)) << error_queue_text();
            EXPECT_TRUE(back == in) << name << " len " << len;
        }
        if (strcmp(name, "AES-128-CBC") == 0) {
            Bytes ct; /* SP 800-38A F.2.1, first block */
            ASSERT_TRUE(cipher_oneshot(h.get(), 1, unhex("2b7e151628aed2a6abf7158809cf4f3c"),
                                       unhex("000102030405060708090a0b0c0d0e0f"),
                                       unhex("6bc1bee22e409f96e93d7e117393172a"), &ct, 0));
            EXPECT_EQ(tohex(ct), "7649abac8119b246cee98e9b12e9197d");
        }
    }
}

/* Multi-megabyte updates on the engine: virtio-crypto stops at a single
 * request of 128 KiB (the caller then sleeps uninterruptibly), so hwaf must
 * split; an alarm turns a hang into a failure. */
TEST_F(GuestVirtio, LargeUpdatesOnTheEngine)
{
    alarm(300);
    for (const char *name : kCbc) {
        CipherPtr h(EVP_CIPHER_fetch(lib_->get(), name, kHwYes));
        CipherPtr d(EVP_CIPHER_fetch(lib_->get(), name, "provider=default"));
        ASSERT_TRUE(h && d) << name;
        for (size_t len : {(size_t)128 * 1024, (size_t)1024 * 1024 + 48, (size_t)4 * 1024 * 1024}) {
            Bytes key = random_bytes((size_t)EVP_CIPHER_get_key_length(d.get())), iv = random_bytes(16);
            Bytes in = random_bytes(len), a, b, back;
            ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &a)) << name << " " << len << error_queue_text();
            ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &b));
            EXPECT_TRUE(a == b) << name << " len " << len;
            ASSERT_TRUE(cipher_oneshot(h.get(), 0, key, iv, a, &back)) << error_queue_text();
            EXPECT_TRUE(back == in) << name << " len " << len;
        }
    }
    alarm(0);
}

/* The engine's requests stay within its limit, 64 KiB by default and the
 * configured one with request_max: counted per kernel request. */
TEST_F(GuestVirtio, EngineRequestsStayWithinTheLimit)
{
    alarm(300);
    for (size_t limit : {(size_t)0, (size_t)32768}) {
        std::unique_ptr<LibCtx> lib(limit == 0 ? new LibCtx()
                                               : new LibCtx(make_config("request_max = virtio_crypto_aes_cbc="
                                                                        + std::to_string(limit) + "\n")));
        ASSERT_TRUE(lib->hwaf_loaded()) << lib->load_errors();
        std::string text;
        ASSERT_TRUE(lib->prov_param(HWAF_PARAM_REQUEST_MAX, &text));
        std::string want = limit == 0 ? "AES-128-CBC afalg virtio_crypto_aes_cbc request_max=65536 source=default"
                                      : "AES-128-CBC afalg virtio_crypto_aes_cbc request_max=32768 source=configured";
        EXPECT_NE(text.find(want), std::string::npos) << text;
        size_t req = limit == 0 ? 65536 : limit;
        CipherPtr h(EVP_CIPHER_fetch(lib->get(), "AES-128-CBC", kHwYes));
        CipherPtr d(EVP_CIPHER_fetch(lib->get(), "AES-128-CBC", "provider=default"));
        ASSERT_TRUE(h && d);
        const size_t len = 4 * 1024 * 1024 + 48;
        Bytes key = random_bytes(16), iv = random_bytes(16), in = random_bytes(len), a, b;
        uint64_t ops0 = 0, ops1 = 0;
        ASSERT_TRUE(lib->prov_param(HWAF_PARAM_AFALG_OPS, &ops0));
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, in, &a, 0)) << error_queue_text();
        ASSERT_TRUE(lib->prov_param(HWAF_PARAM_AFALG_OPS, &ops1));
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, in, &b, 0));
        EXPECT_TRUE(a == b) << "wrong bytes in requests of " << req;
        EXPECT_EQ(ops1 - ops0, (len + req - 1) / req) << "requests of at most " << req;
    }
    alarm(0);
}

TEST_F(GuestVirtio, HwNoStillGetsTheCpuDriver)
{
    /* The guest's CPU driver of cbc(aes): cbc-aes-aesni on x86-64,
     * cbc-aes-ce on arm64 and armhf (QEMU's "max" CPU has the ARMv8 Crypto
     * Extensions). */
    const char *cpu = env().arch == "arm64" || env().arch == "armhf" ? "-aes-ce" : "aesni";
    for (const char *name : kCbc) {
        Served s = serve(lib_->get(), name, kHwNo);
        ASSERT_TRUE(s.ok) << name << " hw=no\n" << error_queue_text();
        EXPECT_NE(s.driver.find(cpu), std::string::npos) << name << " hw=no served by " << s.driver;
        EXPECT_EQ(s.hw, 0);
    }
    /* Nothing else has a hardware driver in this guest. */
    for (const auto &name : all_names()) {
        if (name.find("CBC") != std::string::npos)
            continue;
        EXPECT_FALSE(serve(lib_->get(), name, kHwYes).ok) << name;
        ERR_clear_error();
    }
}

TEST_F(GuestVirtio, SwDriversKeyOverrides)
{
    LibCtx lib(make_config("sw_drivers = virtio_crypto_aes_cbc\n"));
    ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    for (const char *name : kCbc) {
        EXPECT_FALSE(serve(lib.get(), name, kHwYes).ok) << name;
        ERR_clear_error();
    }
}

TEST_F(GuestVirtio, AllowSoftwareNoLeavesOnlyTheEngine)
{
    LibCtx lib(make_config("allow_software = no\n"));
    ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    std::string text;
    ASSERT_TRUE(lib.prov_param(HWAF_PARAM_ALGORITHMS, &text));
    std::vector<ImplLine> lines = parse_algorithms(text);
    EXPECT_EQ(lines.size(), 3u) << text;
    for (const ImplLine &l : lines) {
        EXPECT_TRUE(l.hw) << l.name;
        EXPECT_EQ(l.driver, "virtio_crypto_aes_cbc");
    }
    for (const char *name : kCbc)
        EXPECT_TRUE(matches_default(lib.get(), name, "provider=hwaf"));
}

} // namespace
