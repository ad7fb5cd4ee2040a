/*
 * Parameters: hwaf must expose the same gettable and settable parameter
 * names as the default provider (plus its own "hwaf-*" ones), with the same
 * values, before and during a stream; and the EVP accessors derived from
 * them (block size, key and IV length, mode, flags) must agree.
 */
#include "hwaf_test.h"

#include <cstring>
#include <set>
#include <sstream>

using namespace hwaf_test;

namespace {

std::set<std::string> names(const OSSL_PARAM *p)
{
    std::set<std::string> s;
    for (; p != nullptr && p->key != nullptr; p++)
        s.insert(p->key);
    return s;
}

std::string join(const std::set<std::string> &s)
{
    std::string r;
    for (const auto &x : s)
        r += (r.empty() ? "" : " ") + x;
    return r.empty() ? "(none)" : r;
}

/*
 * Same names, except hwaf's own "hwaf-" parameters and the difference
 * docs/design.md documents: hwaf checks keylen on every cipher (settable, a
 * wrong length refused).
 */
void compare_names(const OSSL_PARAM *h, const OSSL_PARAM *d, const std::string &what,
                   const std::set<std::string> &not_in_hwaf = {},
                   const std::set<std::string> &only_in_hwaf = {})
{
    std::set<std::string> hn = names(h), dn = names(d), missing, extra;
    for (const auto &n : dn)
        if (!hn.count(n) && !not_in_hwaf.count(n))
            missing.insert(n);
    for (const auto &n : hn)
        if (!dn.count(n) && n.rfind("hwaf-", 0) != 0 && !only_in_hwaf.count(n))
            extra.insert(n);
    for (const auto &n : not_in_hwaf)
        EXPECT_FALSE(hn.count(n)) << what << ": hwaf now lists " << n << "; update docs/design.md";
    EXPECT_TRUE(missing.empty()) << what << ": hwaf lacks " << join(missing) << " (default has " << join(dn)
                                 << ")";
    EXPECT_TRUE(extra.empty()) << what << ": hwaf has unknown " << join(extra);
}

/* Fetch one parameter described by desc through get(); "type:value". */
template <typename Get>
std::string get_one(const OSSL_PARAM &desc, Get get)
{
    OSSL_PARAM p[2];
    unsigned char buf[256];
    memset(buf, 0, sizeof(buf));
    void *ptr = nullptr;
    switch (desc.data_type) {
    case OSSL_PARAM_INTEGER:
    case OSSL_PARAM_UNSIGNED_INTEGER:
        p[0] = OSSL_PARAM_construct_uint64(desc.key, (uint64_t *)buf);
        p[0].data_type = desc.data_type;
        break;
    case OSSL_PARAM_OCTET_STRING:
        p[0] = OSSL_PARAM_construct_octet_string(desc.key, buf, sizeof(buf));
        break;
    case OSSL_PARAM_UTF8_STRING:
        p[0] = OSSL_PARAM_construct_utf8_string(desc.key, (char *)buf, sizeof(buf));
        break;
    case OSSL_PARAM_OCTET_PTR:
        p[0] = OSSL_PARAM_construct_octet_ptr(desc.key, &ptr, 0);
        break;
    case OSSL_PARAM_UTF8_PTR:
        p[0] = OSSL_PARAM_construct_utf8_ptr(desc.key, (char **)&ptr, 0);
        break;
    default:
        return "unhandled type";
    }
    p[1] = OSSL_PARAM_construct_end();
    std::ostringstream s;
    s << desc.key << "=";
    if (!get(p)) {
        ERR_clear_error();
        return s.str() + "<get fails>";
    }
    if (!OSSL_PARAM_modified(p))
        return s.str() + "<not set>";
    switch (desc.data_type) {
    case OSSL_PARAM_INTEGER: {
        int64_t v = 0;
        OSSL_PARAM_get_int64(p, &v);
        s << v;
        break;
    }
    case OSSL_PARAM_UNSIGNED_INTEGER: {
        uint64_t v = 0;
        OSSL_PARAM_get_uint64(p, &v);
        s << v;
        break;
    }
    case OSSL_PARAM_OCTET_STRING:
        s << tohex(buf, p[0].return_size);
        break;
    case OSSL_PARAM_UTF8_STRING:
        s << (char *)buf;
        break;
    case OSSL_PARAM_OCTET_PTR:
        s << (ptr == nullptr ? "NULL" : tohex((const unsigned char *)ptr, p[0].return_size));
        break;
    case OSSL_PARAM_UTF8_PTR:
        s << (ptr == nullptr ? "NULL" : (const char *)ptr);
        break;
    }
    return s.str();
}

template <typename Get>
std::vector<std::string> get_all(const OSSL_PARAM *descs, Get get)
{
    std::vector<std::string> r;
    for (const OSSL_PARAM *p = descs; p != nullptr && p->key != nullptr; p++)
        r.push_back(get_one(*p, get));
    return r;
}

class ParamsCipher : public KernelTest, public ::testing::WithParamInterface<CipherAlg> {};

TEST_P(ParamsCipher, NamesAndValues)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    compare_names(EVP_CIPHER_gettable_params(h.get()), EVP_CIPHER_gettable_params(d.get()),
                  std::string(a.name) + " gettable params");
    compare_names(EVP_CIPHER_gettable_ctx_params(h.get()), EVP_CIPHER_gettable_ctx_params(d.get()),
                  std::string(a.name) + " gettable ctx params");
    compare_names(EVP_CIPHER_settable_ctx_params(h.get()), EVP_CIPHER_settable_ctx_params(d.get()),
                  std::string(a.name) + " settable ctx params", {}, {"keylen"});

    /* Algorithm parameters (keylen, ivlen, blocksize, mode, aead, custom-iv,
     * cts, tls-multi, has-randkey), by the default provider's list. */
    const OSSL_PARAM *dg = EVP_CIPHER_gettable_params(d.get());
    auto vh = get_all(dg, [&](OSSL_PARAM *p) { return EVP_CIPHER_get_params(h.get(), p); });
    auto vd = get_all(dg, [&](OSSL_PARAM *p) { return EVP_CIPHER_get_params(d.get(), p); });
    EXPECT_EQ(vh, vd) << a.name << " algorithm params (left: hwaf, right: default)";

    EXPECT_EQ(EVP_CIPHER_get_block_size(h.get()), EVP_CIPHER_get_block_size(d.get()));
    EXPECT_EQ(EVP_CIPHER_get_key_length(h.get()), EVP_CIPHER_get_key_length(d.get()));
    EXPECT_EQ(EVP_CIPHER_get_key_length(h.get()), (int)a.keylen);
    EXPECT_EQ(EVP_CIPHER_get_iv_length(h.get()), EVP_CIPHER_get_iv_length(d.get()));
    EXPECT_EQ(EVP_CIPHER_get_mode(h.get()), EVP_CIPHER_get_mode(d.get()));
    EXPECT_EQ(EVP_CIPHER_get_flags(h.get()), EVP_CIPHER_get_flags(d.get()));
    EXPECT_EQ(EVP_CIPHER_get_nid(h.get()), EVP_CIPHER_get_nid(d.get()));
    EXPECT_STREQ(EVP_CIPHER_get0_name(h.get()), EVP_CIPHER_get0_name(d.get()));

    /* Context parameters: after init, after a partial update, after final. */
    Bytes key = random_bytes(a.keylen), iv = random_bytes(a.ivlen), in = random_bytes(37);
    if (a.mode == Mode::XTS)
        key[0] = (unsigned char)(key[a.keylen / 2] ^ 1);
    CtxPtr ch(EVP_CIPHER_CTX_new()), cd(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ch.get(), h.get(), key.data(), iv.data(), nullptr)) << error_queue_text();
    ASSERT_TRUE(EVP_EncryptInit_ex2(cd.get(), d.get(), key.data(), iv.data(), nullptr));
    const OSSL_PARAM *dcg = EVP_CIPHER_gettable_ctx_params(d.get());
    auto snap = [&](const char *when) {
        auto sh = get_all(dcg, [&](OSSL_PARAM *p) { return EVP_CIPHER_CTX_get_params(ch.get(), p); });
        auto sd = get_all(dcg, [&](OSSL_PARAM *p) { return EVP_CIPHER_CTX_get_params(cd.get(), p); });
        EXPECT_EQ(sh, sd) << a.name << " ctx params " << when << " (left: hwaf, right: default)";
        EXPECT_EQ(EVP_CIPHER_CTX_get_key_length(ch.get()), EVP_CIPHER_CTX_get_key_length(cd.get())) << when;
        EXPECT_EQ(EVP_CIPHER_CTX_get_iv_length(ch.get()), EVP_CIPHER_CTX_get_iv_length(cd.get())) << when;
        EXPECT_EQ(EVP_CIPHER_CTX_get_block_size(ch.get()), EVP_CIPHER_CTX_get_block_size(cd.get())) << when;
        EXPECT_EQ(EVP_CIPHER_CTX_get_num(ch.get()), EVP_CIPHER_CTX_get_num(cd.get())) << when;
        ERR_clear_error();
    };
    snap("after init");
    unsigned char out[128];
    int lh = 0, ld = 0;
    size_t first = a.mode == Mode::XTS ? 37 : 21;
    ASSERT_TRUE(EVP_EncryptUpdate(ch.get(), out, &lh, in.data(), (int)first)) << error_queue_text();
    ASSERT_TRUE(EVP_EncryptUpdate(cd.get(), out, &ld, in.data(), (int)first));
    EXPECT_EQ(lh, ld);
    snap("after a partial update");
    /* padding=0 through the parameter API, then read back. */
    if (a.mode == Mode::CBC) {
        unsigned int pad = 0;
        OSSL_PARAM p[] = {OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_PADDING, &pad), OSSL_PARAM_construct_end()};
        EXPECT_EQ(EVP_CIPHER_CTX_set_params(ch.get(), p), EVP_CIPHER_CTX_set_params(cd.get(), p));
        snap("after padding=0");
        pad = 1;
        EXPECT_EQ(EVP_CIPHER_CTX_set_params(ch.get(), p), EVP_CIPHER_CTX_set_params(cd.get(), p));
    }
    EXPECT_EQ(EVP_EncryptFinal_ex(ch.get(), out, &lh), EVP_EncryptFinal_ex(cd.get(), out, &ld));
    EXPECT_EQ(lh, ld);
    snap("after final");
    ERR_clear_error();

    /* hwaf's own context parameters are there and sensible. */
    std::string drv = ctx_param_str(ch.get(), HWAF_PARAM_DRIVER);
    EXPECT_NE(drv, "<not gettable>");
    EXPECT_FALSE(drv.empty());
    std::string be = ctx_param_str(ch.get(), HWAF_PARAM_BACKEND);
    EXPECT_TRUE(be == "afalg" || be == "devcrypto") << be;
    if (!env().backend.empty()) {
        EXPECT_EQ(be, env().backend);
    }
    int hw = ctx_param_int(ch.get(), HWAF_PARAM_HW);
    EXPECT_TRUE(hw == 0 || hw == 1) << hw;
}

INSTANTIATE_TEST_SUITE_P(Params, ParamsCipher, ::testing::ValuesIn(kCiphers),
                         [](const ::testing::TestParamInfo<CipherAlg> &i) { return test_name(i.param.name); });

class ParamsDigest : public KernelTest, public ::testing::WithParamInterface<DigestAlg> {};

TEST_P(ParamsDigest, NamesAndValues)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    compare_names(EVP_MD_gettable_params(h.get()), EVP_MD_gettable_params(d.get()),
                  std::string(a.name) + " gettable params");
    compare_names(EVP_MD_gettable_ctx_params(h.get()), EVP_MD_gettable_ctx_params(d.get()),
                  std::string(a.name) + " gettable ctx params");
    compare_names(EVP_MD_settable_ctx_params(h.get()), EVP_MD_settable_ctx_params(d.get()),
                  std::string(a.name) + " settable ctx params");
    const OSSL_PARAM *dg = EVP_MD_gettable_params(d.get());
    auto vh = get_all(dg, [&](OSSL_PARAM *p) { return EVP_MD_get_params(h.get(), p); });
    auto vd = get_all(dg, [&](OSSL_PARAM *p) { return EVP_MD_get_params(d.get(), p); });
    EXPECT_EQ(vh, vd) << a.name << " algorithm params (left: hwaf, right: default)";
    EXPECT_EQ(EVP_MD_get_size(h.get()), EVP_MD_get_size(d.get()));
    EXPECT_EQ(EVP_MD_get_block_size(h.get()), EVP_MD_get_block_size(d.get()));
    EXPECT_EQ(EVP_MD_get_flags(h.get()), EVP_MD_get_flags(d.get()));
    EXPECT_EQ(EVP_MD_get_type(h.get()), EVP_MD_get_type(d.get()));
    EXPECT_STREQ(EVP_MD_get0_name(h.get()), EVP_MD_get0_name(d.get()));

    MdCtxPtr ch(EVP_MD_CTX_new()), cd(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(ch.get(), h.get(), nullptr)) << error_queue_text();
    ASSERT_TRUE(EVP_DigestInit_ex2(cd.get(), d.get(), nullptr));
    const OSSL_PARAM *dcg = EVP_MD_gettable_ctx_params(d.get());
    auto sh = get_all(dcg, [&](OSSL_PARAM *p) { return EVP_MD_CTX_get_params(ch.get(), p); });
    auto sd = get_all(dcg, [&](OSSL_PARAM *p) { return EVP_MD_CTX_get_params(cd.get(), p); });
    EXPECT_EQ(sh, sd) << a.name << " ctx params (left: hwaf, right: default)";
    EXPECT_EQ(EVP_MD_CTX_get_size(ch.get()), EVP_MD_CTX_get_size(cd.get()));
    EXPECT_EQ(EVP_MD_CTX_get_block_size(ch.get()), EVP_MD_CTX_get_block_size(cd.get()));

    std::string drv = md_ctx_param_str(ch.get(), HWAF_PARAM_DRIVER);
    EXPECT_NE(drv, "<not gettable>");
    EXPECT_FALSE(drv.empty());
    std::string be = md_ctx_param_str(ch.get(), HWAF_PARAM_BACKEND);
    EXPECT_TRUE(be == "afalg" || be == "devcrypto") << be;
    int hw = md_ctx_param_int(ch.get(), HWAF_PARAM_HW);
    EXPECT_TRUE(hw == 0 || hw == 1) << hw;
    ERR_clear_error();
}

/*
 * Setting context parameters and EVP_DigestFinalXOF: hwaf answers as the
 * default provider does.  SHA-2 has no settable parameters there, so
 * EVP_MD_CTX_set_params and EVP_DigestFinalXOF (which sets "xoflen") fail;
 * SHA1 has ssl3-ms, ignores other names, and its XOF "final" writes the
 * 20-byte digest.  The bytes written must match too.
 */
TEST_P(ParamsDigest, SetParamsAndFinalXofAsDefault)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    EXPECT_EQ(EVP_MD_settable_ctx_params(h.get()) == nullptr,
              EVP_MD_settable_ctx_params(d.get()) == nullptr)
        << a.name << ": settable ctx params offered by one provider only";

    /* An unknown parameter. */
    MdCtxPtr ch(EVP_MD_CTX_new()), cd(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(ch.get(), h.get(), nullptr)) << error_queue_text();
    ASSERT_TRUE(EVP_DigestInit_ex2(cd.get(), d.get(), nullptr));
    size_t xoflen = 64;
    OSSL_PARAM ps[] = {OSSL_PARAM_construct_size_t(OSSL_DIGEST_PARAM_XOFLEN, &xoflen),
                       OSSL_PARAM_construct_end()};
    int rh = EVP_MD_CTX_set_params(ch.get(), ps), rd = EVP_MD_CTX_set_params(cd.get(), ps);
    EXPECT_EQ(rh > 0, rd > 0) << a.name << " set_params(xoflen): hwaf " << rh << ", default " << rd;
    ERR_clear_error();

    /* EVP_DigestFinalXOF asking for 64 bytes. */
    ch.reset(EVP_MD_CTX_new());
    cd.reset(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(ch.get(), h.get(), nullptr)) << error_queue_text();
    ASSERT_TRUE(EVP_DigestInit_ex2(cd.get(), d.get(), nullptr));
    ASSERT_TRUE(EVP_DigestUpdate(ch.get(), "abc", 3));
    ASSERT_TRUE(EVP_DigestUpdate(cd.get(), "abc", 3));
    Bytes oh(64, 0xaa), od(64, 0xaa);
    rh = EVP_DigestFinalXOF(ch.get(), oh.data(), oh.size());
    rd = EVP_DigestFinalXOF(cd.get(), od.data(), od.size());
    EXPECT_EQ(rh, rd) << a.name << " EVP_DigestFinalXOF: hwaf " << rh << ", default " << rd;
    if (rh == rd && rd == 1) {
        EXPECT_EQ(tohex(oh), tohex(od)) << a.name;
    }
    ERR_clear_error();
}

INSTANTIATE_TEST_SUITE_P(Params, ParamsDigest, ::testing::ValuesIn(kDigests),
                         [](const ::testing::TestParamInfo<DigestAlg> &i) { return test_name(i.param.name); });

} // namespace
