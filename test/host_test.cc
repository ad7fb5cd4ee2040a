/*
 * Host tests: no kernel backend needed.  On a host without AF_ALG and
 * /dev/crypto the provider still loads, says why each backend is unusable,
 * offers nothing (so nothing can fail later), and refuses bad
 * configuration at load time with an error naming the key.
 */
#include "hwaf_test.h"

#include <cstring>

using namespace hwaf_test;

namespace {

class HostNoKernel : public HwafTest {
protected:
    void SetUp() override
    {
        HwafTest::SetUp();
        if (HasFatalFailure())
            return;
        if (kernel_has_afalg() || devcrypto_present())
            GTEST_SKIP() << "this host has a kernel backend; the kernel suites cover it";
    }
};

TEST_F(HostNoKernel, LoadsAndSaysWhyBackendsAreUnusable)
{
    std::string st;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_AFALG_STATUS, &st)) << HWAF_PARAM_AFALG_STATUS;
    EXPECT_NE(st.compare(0, 6, "usable"), 0) << st;
    EXPECT_GT(st.size(), 5u) << "a reason, not just a word: '" << st << "'";
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_DEVCRYPTO_STATUS, &st)) << HWAF_PARAM_DEVCRYPTO_STATUS;
    EXPECT_NE(st.compare(0, 6, "usable"), 0) << st;
    EXPECT_FALSE(st.empty());

    /* The standard provider parameters. */
    OSSL_PROVIDER *p = nullptr;
    OSSL_PROVIDER_do_all(
        lib_->get(),
        [](OSSL_PROVIDER *q, void *arg) {
            if (strcmp(OSSL_PROVIDER_get0_name(q), HWAF_PROVIDER_NAME) == 0)
                *(OSSL_PROVIDER **)arg = q;
            return 1;
        },
        &p);
    ASSERT_NE(p, nullptr);
    char *name = nullptr, *version = nullptr;
    int status = 0;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_NAME, &name, 0),
                           OSSL_PARAM_construct_utf8_ptr(OSSL_PROV_PARAM_VERSION, &version, 0),
                           OSSL_PARAM_construct_int(OSSL_PROV_PARAM_STATUS, &status), OSSL_PARAM_construct_end()};
    ASSERT_TRUE(OSSL_PROVIDER_get_params(p, params));
    EXPECT_TRUE(name != nullptr && *name);
    EXPECT_TRUE(version != nullptr && *version);
    EXPECT_EQ(status, 1);
}

TEST_F(HostNoKernel, OffersNothing)
{
    std::string text = "unset";
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_ALGORITHMS, &text));
    EXPECT_TRUE(parse_algorithms(text).empty()) << text;
    for (const auto &c : kCiphers) {
        ERR_clear_error();
        EVP_CIPHER *e = EVP_CIPHER_fetch(lib_->get(), c.name, "provider=hwaf");
        EXPECT_EQ(e, nullptr) << c.name << " offered without a kernel";
        EXPECT_NE(ERR_peek_error(), 0u) << "a failed fetch leaves an error";
        EVP_CIPHER_free(e);
    }
    for (const auto &d : kDigests) {
        EVP_MD *e = EVP_MD_fetch(lib_->get(), d.name, "provider=hwaf");
        EXPECT_EQ(e, nullptr) << d.name << " offered without a kernel";
        EVP_MD_free(e);
    }
    ERR_clear_error();
    uint64_t ops = 1;
    ASSERT_TRUE(lib_->prov_param(HWAF_PARAM_AFALG_OPS, &ops));
    EXPECT_EQ(ops, 0u);
    /* The default provider in the same context is unaffected. */
    Bytes out;
    MdPtr m(EVP_MD_fetch(lib_->get(), "SHA2-256", "provider=default"));
    ASSERT_TRUE(m);
    ASSERT_TRUE(digest_oneshot(m.get(), Bytes{'a', 'b', 'c'}, &out));
}

/* Configuration: every key with a good value loads; a bad value refuses to
 * load, with an error that names the key. */
class HostConfig : public ::testing::Test {};

TEST_F(HostConfig, GoodValuesLoad)
{
    const char *good[] = {
        "backends = afalg devcrypto\n",
        "backends = afalg\n",
        "backends = devcrypto, afalg\n",
        "prefer = auto\n",
        "prefer = afalg\n",
        "prefer = devcrypto\n",
        "allow_software = yes\n",
        "allow_software = no\n",
        "hw_drivers = cbc-aes-aesni sha256-avx2\n",
        "sw_drivers = virtio_crypto_aes_cbc\n",
        "hw_drivers = a,b, c\n",
        "debug = no\n",
        "backends = afalg devcrypto\nprefer = auto\nallow_software = yes\nhw_drivers = x\nsw_drivers = y\ndebug = no\n",
    };
    for (const char *g : good) {
        LibCtx lib(make_config(g));
        EXPECT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << "refused:\n" << g << "\n" << lib.load_errors();
    }
}

TEST_F(HostConfig, BadValuesRefusedNamingTheKey)
{
    struct {
        const char *key, *line;
    } bad[] = {
        {"allow_software", "allow_software = maybe\n"},
        {"backends", "backends = afalg quantum\n"},
        {"prefer", "prefer = fastest\n"},
        {"debug", "debug = loud\n"},
        /* Empty: would silently disable every backend. */
        {"backends", "backends =\n"},
        {"backends", "backends = ,\n"},
        /* Whole pages from 4096 to 1 GiB, one value for all, each driver once. */
        {"request_max", "request_max = 100\n"},
        {"request_max", "request_max = 6000\n"},
        {"request_max", "request_max = 2147483648\n"},
        {"request_max", "request_max = lots\n"},
        {"request_max", "request_max = 4096 8192\n"},
        {"request_max", "request_max = cbc-aes-aesni=\n"},
        {"request_max", "request_max = =4096\n"},
        {"request_max", "request_max = d=4096 d=8192\n"},
        {"request_max", "request_max = ,\n"},
    };
    for (const auto &b : bad) {
        LibCtx lib(make_config(b.line));
        EXPECT_FALSE(lib.config_ok() && lib.hwaf_loaded()) << "accepted: " << b.line;
        EXPECT_NE(lib.load_errors().find(b.key), std::string::npos)
            << "the error does not name '" << b.key << "':\n" << lib.load_errors();
    }
}

/*
 * OpenSSL gives a provider no way to list the keys of its section, so a
 * misspelt key cannot be refused: the configuration in effect is shown
 * instead (hwaf-config, and buildinfo, which `openssl list -providers
 * -verbose` prints), every key with its value, defaults included.
 */
TEST_F(HostConfig, ConfigurationInEffectShowsEveryKey)
{
    LibCtx lib(make_config("prefer = devcrypto\nhw_drivers = a,b\nalow_software = no\nzerocopy_min = 131072\n"));
    ASSERT_TRUE(lib.config_ok() && lib.hwaf_loaded()) << lib.load_errors();
    std::string cfg, info;
    ASSERT_TRUE(lib.prov_param(HWAF_PARAM_CONFIG, &cfg));
    const char *want[] = {
        "backends = afalg devcrypto", "prefer = devcrypto", "allow_software = yes",
        "hw_drivers = a b", "sw_drivers = ", "debug = no", "zerocopy = auto",
        "zerocopy_min = 131072",
    };
    for (const char *w : want)
        EXPECT_NE(cfg.find(w), std::string::npos) << "'" << w << "' not in: " << cfg;
    /* The misspelt key is not a key: allow_software keeps its default. */
    EXPECT_EQ(cfg.find("alow_software"), std::string::npos) << cfg;
    ASSERT_TRUE(lib.prov_param(OSSL_PROV_PARAM_BUILDINFO, &info));
    EXPECT_NE(info.find("config: " + cfg), std::string::npos) << info;

    LibCtx dflt(make_config(""));
    ASSERT_TRUE(dflt.hwaf_loaded()) << dflt.load_errors();
    ASSERT_TRUE(dflt.prov_param(HWAF_PARAM_CONFIG, &cfg));
    /* offload_min: from HWAF_OFFLOAD_MIN=0, which the test binary sets. */
    EXPECT_EQ(cfg, "backends = afalg devcrypto; prefer = auto; allow_software = yes; "
                   "hw_drivers = ; sw_drivers = ; debug = no; zerocopy = auto; "
                   "zerocopy_min = 65536; policy = throughput; offload_min = 0; calibration = ; "
                   "request_max = auto; known_answers = first_use");
    LibCtx req(make_config("request_max = 8192, virtio_crypto_aes_cbc=98304  d=unlimited e=auto\n"));
    ASSERT_TRUE(req.config_ok() && req.hwaf_loaded()) << req.load_errors();
    ASSERT_TRUE(req.prov_param(HWAF_PARAM_CONFIG, &cfg));
    EXPECT_NE(cfg.find("; request_max = 8192 virtio_crypto_aes_cbc=98304 d=unlimited e=auto"),
              std::string::npos) << cfg;
    /* A driver named after a template instance (gcm(aes) on armhf) keeps
     * the comma between its parentheses; the commas between names part. */
    LibCtx tmpl(make_config("hw_drivers = gcm_base(ctr-aes-ce,ghash-ce),x  y\n"));
    ASSERT_TRUE(tmpl.config_ok() && tmpl.hwaf_loaded()) << tmpl.load_errors();
    ASSERT_TRUE(tmpl.prov_param(HWAF_PARAM_CONFIG, &cfg));
    EXPECT_NE(cfg.find("; hw_drivers = gcm_base(ctr-aes-ce,ghash-ce) x y;"), std::string::npos)
        << cfg;
}

} // namespace
