/*
 * Bad input.  Two rules:
 *  - what the project's issue names as bad input (a wrong key length,
 *    update after final, a digest used after final) is refused by hwaf with
 *    an OpenSSL error that has a reason string, even where the default
 *    provider is lenient;
 *  - everything else is exactly as strict as the default provider: where it
 *    refuses, hwaf refuses with a reasoned error; where it accepts, hwaf
 *    accepts and produces the same bytes (XTS with equal key halves: the
 *    default provider refuses to encrypt and accepts to decrypt).
 * Nothing crashes.
 */
#include "hwaf_test.h"

#include <cstring>
#include <functional>

using namespace hwaf_test;

namespace {

/* Run op against hwaf and against default; same verdict, and a reasoned
 * error from hwaf when it refuses. */
struct Verdict {
    bool ok_h, ok_d;
};

Verdict both(const std::function<bool(bool hwaf)> &op, const std::string &what)
{
    ERR_clear_error();
    bool ok_h = op(true);
    ::testing::AssertionResult eh = ok_h ? ::testing::AssertionSuccess() : has_reasoned_error();
    ERR_clear_error();
    bool ok_d = op(false);
    std::string ed = error_queue_text();
    EXPECT_EQ(ok_h, ok_d) << what << ": hwaf " << (ok_h ? "accepts" : "refuses") << ", default "
                          << (ok_d ? "accepts" : "refuses") << "\ndefault's errors:\n" << ed << "hwaf's errors:\n"
                          << eh.message();
    if (!ok_h) {
        EXPECT_TRUE(eh) << what;
    }
    return {ok_h, ok_d};
}

/* hwaf must refuse op with a reasoned error; the default provider's verdict
 * is only reported. */
void refused(const std::function<bool(bool hwaf)> &op, const std::string &what)
{
    ERR_clear_error();
    bool ok_h = op(true);
    ::testing::AssertionResult eh = ok_h ? ::testing::AssertionSuccess() : has_reasoned_error();
    ERR_clear_error();
    bool ok_d = op(false);
    ERR_clear_error();
    EXPECT_FALSE(ok_h) << what << ": hwaf accepts it (the default provider " << (ok_d ? "accepts" : "refuses")
                       << " it)";
    if (!ok_h) {
        EXPECT_TRUE(eh) << what;
    }
}

class ErrorsCipher : public KernelTest, public ::testing::WithParamInterface<CipherAlg> {
protected:
    CipherPtr h_, d_;
    Bytes key_, iv_;

    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        const CipherAlg &a = GetParam();
        need_cipher(a.name, &h_, &d_);
        key_ = random_bytes(a.keylen);
        iv_ = random_bytes(a.ivlen);
        if (a.mode == Mode::XTS)
            key_[0] = (unsigned char)(key_[a.keylen / 2] ^ 0x80);
    }
    void TearDown() override
    {
        h_.reset();
        d_.reset();
        KernelTest::TearDown();
    }
    const EVP_CIPHER *c(bool hwaf) const { return hwaf ? h_.get() : d_.get(); }
};

TEST_P(ErrorsCipher, WrongKeyLength)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    for (int delta : {-1, 1, 8}) {
        Bytes out_h, out_d;
        auto op = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            if (!EVP_EncryptInit_ex2(ctx.get(), c(hw), nullptr, nullptr, nullptr))
                return false;
            if (!EVP_CIPHER_CTX_set_key_length(ctx.get(), (int)a.keylen + delta))
                return false;
            Bytes key(a.keylen + 8);
            for (size_t i = 0; i < key.size(); i++)
                key[i] = (unsigned char)(i * 7 + 1);
            unsigned char out[64];
            int outl;
            if (!EVP_EncryptInit_ex2(ctx.get(), nullptr, key.data(), iv_.data(), nullptr))
                return false;
            return EVP_EncryptUpdate(ctx.get(), out, &outl, key.data(), 32) == 1;
        };
        refused(op, std::string(a.name) + " key length " + std::to_string(a.keylen + delta));
        /* The same through the "keylen" parameter at init. */
        auto op2 = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            size_t kl = a.keylen + delta;
            OSSL_PARAM p[] = {OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_KEYLEN, &kl), OSSL_PARAM_construct_end()};
            Bytes key(a.keylen + 8);
            for (size_t i = 0; i < key.size(); i++)
                key[i] = (unsigned char)(i * 7 + 1);
            return EVP_EncryptInit_ex2(ctx.get(), c(hw), key.data(), iv_.data(), p) == 1;
        };
        refused(op2, std::string(a.name) + " keylen param " + std::to_string(a.keylen + delta));
    }
}

TEST_P(ErrorsCipher, WrongIvLength)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    for (size_t ivlen : {size_t(0), size_t(8), size_t(12), size_t(17), size_t(32)}) {
        Bytes outs[2];
        auto op = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            OSSL_PARAM p[] = {OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_IVLEN, &ivlen), OSSL_PARAM_construct_end()};
            if (!EVP_EncryptInit_ex2(ctx.get(), c(hw), nullptr, nullptr, nullptr))
                return false;
            if (!EVP_CIPHER_CTX_set_params(ctx.get(), p))
                return false;
            Bytes iv(64, 0x42);
            if (!EVP_EncryptInit_ex2(ctx.get(), nullptr, key_.data(), iv.data(), nullptr))
                return false;
            Bytes in(48, 0x17), &out = outs[hw ? 0 : 1];
            out.assign(96, 0);
            int l1 = 0, l2 = 0;
            if (!EVP_EncryptUpdate(ctx.get(), out.data(), &l1, in.data(), (int)in.size()) ||
                !EVP_EncryptFinal_ex(ctx.get(), out.data() + l1, &l2))
                return false;
            out.resize((size_t)(l1 + l2));
            return true;
        };
        Verdict v = both(op, std::string(a.name) + " ivlen param " + std::to_string(ivlen));
        if (v.ok_h && v.ok_d) {
            EXPECT_EQ(tohex(outs[0]), tohex(outs[1])) << a.name << " after ivlen " << ivlen;
        }
    }
}

TEST_P(ErrorsCipher, UpdateAfterFinal)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    for (int enc : {1, 0}) {
        Bytes outs[2];
        auto op = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            Bytes in(48, 0x33), &out = outs[hw ? 0 : 1];
            out.assign(256, 0);
            int l = 0, total = 0;
            if (!EVP_CipherInit_ex2(ctx.get(), c(hw), key_.data(), iv_.data(), enc, nullptr))
                return false;
            EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
            if (!EVP_CipherUpdate(ctx.get(), out.data(), &l, in.data(), 32))
                return false;
            total += l;
            if (!EVP_CipherFinal_ex(ctx.get(), out.data() + total, &l))
                return false;
            total += l;
            bool ok = EVP_CipherUpdate(ctx.get(), out.data() + total, &l, in.data(), 32) == 1;
            if (ok)
                total += l;
            out.resize((size_t)total);
            return ok;
        };
        refused(op, std::string(a.name) + (enc ? " encrypt" : " decrypt") + " update after final");
    }
}

TEST_P(ErrorsCipher, ShortAndOddInput)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    for (size_t len : {size_t(0), size_t(1), size_t(15), size_t(17)}) {
        for (int enc : {1, 0}) {
            for (int pad : {1, 0}) {
                Bytes outs[2];
                auto op = [&](bool hw) {
                    Bytes in(len, 0x5a);
                    return cipher_oneshot(c(hw), enc, key_, iv_, in, &outs[hw ? 0 : 1], pad);
                };
                Verdict v = both(op, std::string(a.name) + (enc ? " encrypt " : " decrypt ") + std::to_string(len) +
                                         " bytes padding " + std::to_string(pad));
                if (v.ok_h && v.ok_d) {
                    EXPECT_EQ(tohex(outs[0]), tohex(outs[1])) << len << " bytes";
                }
            }
        }
    }
}

class ErrorsCbc : public ErrorsCipher {};

TEST_P(ErrorsCbc, BadPadding)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    for (int trial = 0; trial < 4; trial++) {
        Bytes ct;
        /* A ciphertext whose last block decrypts to an invalid padding byte. */
        Bytes pt = random_bytes(32);
        pt[31] = (unsigned char)(trial == 0 ? 0 : 17 + trial);
        ASSERT_TRUE(cipher_oneshot(d_.get(), 1, key_, iv_, pt, &ct, 0));
        Bytes upd[2];
        auto op = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            Bytes &out = upd[hw ? 0 : 1];
            out.assign(64, 0);
            int l = 0, l2 = 0;
            if (!EVP_DecryptInit_ex2(ctx.get(), c(hw), key_.data(), iv_.data(), nullptr) ||
                !EVP_DecryptUpdate(ctx.get(), out.data(), &l, ct.data(), (int)ct.size()))
                return false;
            out.resize((size_t)l);
            return EVP_DecryptFinal_ex(ctx.get(), out.data() + l, &l2) == 1;
        };
        both(op, std::string(a.name) + " decrypt with bad padding byte " + std::to_string(pt[31]));
        EXPECT_EQ(tohex(upd[0]), tohex(upd[1])) << "output before the padding check";
    }
}

class ErrorsXts : public ErrorsCipher {};

TEST_P(ErrorsXts, EqualKeyHalves)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    Bytes key = random_bytes(a.keylen / 2);
    key.insert(key.end(), key.begin(), key.end());
    for (int enc : {1, 0}) {
        Bytes outs[2];
        auto op = [&](bool hw) {
            Bytes in = Bytes(48, 0x21);
            return cipher_oneshot(c(hw), enc, key, iv_, in, &outs[hw ? 0 : 1]);
        };
        Verdict v = both(op, std::string(a.name) + (enc ? " encrypt" : " decrypt") + " with equal key halves");
        if (v.ok_h && v.ok_d) {
            EXPECT_EQ(tohex(outs[0]), tohex(outs[1]));
        }
    }
}

/* A re-init that passes the cipher again and no key leaves no key set (the
 * EVP layer makes a new context); the default provider's XTS final then has
 * nothing to do and succeeds. */
TEST_P(ErrorsCipher, FinalAfterInitWithoutKey)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    Bytes key = random_bytes(a.keylen);
    for (int enc : {1, 0}) {
        auto op = [&](bool hw) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            unsigned char out[32];
            int outl = -1;
            return EVP_CipherInit_ex2(ctx.get(), c(hw), key.data(), iv_.data(), enc, nullptr)
                && EVP_CipherInit_ex2(ctx.get(), c(hw), nullptr, iv_.data(), enc, nullptr)
                && EVP_CipherFinal_ex(ctx.get(), out, &outl) && outl == 0;
        };
        both(op, std::string(a.name) + (enc ? " encrypt" : " decrypt") + ": final after a re-init without key");
    }
}

TEST_P(ErrorsCipher, ParamBufferTooSmall)
{
    if (!h_)
        return;
    const CipherAlg &a = GetParam();
    auto op = [&](bool hw) {
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        if (!EVP_EncryptInit_ex2(ctx.get(), c(hw), key_.data(), iv_.data(), nullptr))
            return false;
        unsigned char small[4];
        OSSL_PARAM p[] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_UPDATED_IV, small, sizeof(small)),
                          OSSL_PARAM_construct_end()};
        return EVP_CIPHER_CTX_get_params(ctx.get(), p) == 1;
    };
    both(op, std::string(a.name) + " updated-iv into a 4-byte buffer");
    /* hwaf's own string parameter into a buffer too small for it. */
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), h_.get(), key_.data(), iv_.data(), nullptr));
    char small[3];
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(HWAF_PARAM_DRIVER, small, sizeof(small)),
                      OSSL_PARAM_construct_end()};
    ERR_clear_error();
    EXPECT_EQ(EVP_CIPHER_CTX_get_params(ctx.get(), p), 0) << "driver name into a 3-byte buffer";
    EXPECT_TRUE(has_reasoned_error());
}

std::vector<CipherAlg> only(Mode m)
{
    std::vector<CipherAlg> v;
    for (const auto &c : kCiphers)
        if (c.mode == m)
            v.push_back(c);
    return v;
}

std::string pname(const ::testing::TestParamInfo<CipherAlg> &i) { return test_name(i.param.name); }

INSTANTIATE_TEST_SUITE_P(Errors, ErrorsCipher, ::testing::ValuesIn(kCiphers), pname);
INSTANTIATE_TEST_SUITE_P(Errors, ErrorsCbc, ::testing::ValuesIn(only(Mode::CBC)), pname);
INSTANTIATE_TEST_SUITE_P(Errors, ErrorsXts, ::testing::ValuesIn(only(Mode::XTS)), pname);

class ErrorsDigest : public KernelTest, public ::testing::WithParamInterface<DigestAlg> {};

TEST_P(ErrorsDigest, UseAfterFinal)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    auto op = [&](bool hw) {
        MdCtxPtr ctx(EVP_MD_CTX_new());
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n;
        if (!EVP_DigestInit_ex2(ctx.get(), hw ? h.get() : d.get(), nullptr) ||
            !EVP_DigestUpdate(ctx.get(), "abc", 3) || !EVP_DigestFinal_ex(ctx.get(), md, &n))
            return false;
        bool ok = EVP_DigestUpdate(ctx.get(), "abc", 3) == 1 && EVP_DigestFinal_ex(ctx.get(), md, &n) == 1;
        return ok;
    };
    /* The default provider carries on from its finalised state and gives
     * bytes that are no digest of anything; the issue calls this bad input:
     * hwaf refuses it. */
    refused(op, std::string(a.name) + " update and final after final");
    /* A digest output buffer is never too small through EVP_DigestFinal_ex;
     * hwaf's driver string into 3 bytes must fail cleanly. */
    MdCtxPtr ctx(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(ctx.get(), h.get(), nullptr));
    char small[3];
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(HWAF_PARAM_DRIVER, small, sizeof(small)),
                      OSSL_PARAM_construct_end()};
    ERR_clear_error();
    EXPECT_EQ(EVP_MD_CTX_get_params(ctx.get(), p), 0);
    EXPECT_TRUE(has_reasoned_error());
}

INSTANTIATE_TEST_SUITE_P(Errors, ErrorsDigest, ::testing::ValuesIn(kDigests),
                         [](const ::testing::TestParamInfo<DigestAlg> &i) { return test_name(i.param.name); });

} // namespace
