/*
 * AES-GCM and HMAC through hwaf.
 *
 *  GcmKat*    the test cases of McGrew and Viega, "The Galois/Counter Mode
 *             of Operation (GCM)" (the vectors NIST SP 800-38D refers to):
 *             encrypt, decrypt, and a flipped tag or ciphertext bit refused.
 *  GcmDiff*   hwaf against the default provider: random keys, IVs, AAD and
 *             data split into random updates, tags of 4 to 16 bytes, tag set
 *             before or after the data, in place, copies mid-stream, re-init
 *             with a new IV; cross decryption both ways; tampering.
 *  GcmTls*    the TLS 1.2 record mode libssl uses (tls1-aad, tlsivfixed),
 *             records compared with the default provider's.
 *  GcmErrors* what hwaf refuses, each with a reason string.
 *  HmacKat*   RFC 4231 test cases 1 and 6 (key longer than the block),
 *             RFC 2202 test case 1 for SHA-1.
 *  HmacDiff*  hwaf against the default provider: key lengths from 0 to
 *             beyond the block, random splits, copies, re-init, params.
 *  HmacTest.GcmAndHmacRefusedUnderSeccompFilter: a filter installed after
 *             load bars new GCM and HMAC sessions of contexts forced to the
 *             kernel with a reason, no SIGSYS (others are served in
 *             software: Sandbox*).
 */
#include "hwaf_test.h"

#include <cstddef>
#include <cstring>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace hwaf_test;

namespace {

const char *const kGcm[] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};

/* One GCM run: the tag is set before the data (like TLS 1.3 and OpenSSH)
 * or before the final (like OpenVPN). */
struct GcmRun {
    Bytes key, iv, aad, in, tag;   /* tag: input when decrypting */
    std::vector<size_t> aad_splits, splits;
    size_t taglen = 16;
    bool tag_first = false;
    bool inplace = false;
};

struct GcmResult {
    bool ok = false;
    Bytes out, tag;
    std::string err;
};

GcmResult gcm(const EVP_CIPHER *c, int enc, const GcmRun &r)
{
    GcmResult res;
    CtxPtr x(EVP_CIPHER_CTX_new());
    int outl = 0;
    if (!EVP_CipherInit_ex2(x.get(), c, r.key.data(), r.iv.data(), enc, nullptr)) {
        res.err = "init: " + error_queue_text();
        return res;
    }
    if (!enc && r.tag_first
        && !EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, (int)r.tag.size(), (void *)r.tag.data())) {
        res.err = "set tag: " + error_queue_text();
        return res;
    }
    size_t off = 0;
    for (size_t n : r.aad_splits) {
        if (!EVP_CipherUpdate(x.get(), nullptr, &outl, r.aad.data() + off, (int)n)) {
            res.err = "aad: " + error_queue_text();
            return res;
        }
        off += n;
    }
    Bytes buf = r.in;
    res.out.resize(r.in.size() + 16);
    size_t got = 0;
    off = 0;
    for (size_t n : r.splits) {
        unsigned char *dst = r.inplace ? buf.data() + off : res.out.data() + got;
        if (!EVP_CipherUpdate(x.get(), dst, &outl, buf.data() + off, (int)n)) {
            res.err = "update: " + error_queue_text();
            return res;
        }
        if (r.inplace && outl > 0)  /* an empty buffer's data() may be NULL */
            memcpy(res.out.data() + got, dst, (size_t)outl);
        got += (size_t)outl;
        off += n;
    }
    if (!enc && !r.tag_first
        && !EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, (int)r.tag.size(), (void *)r.tag.data())) {
        res.err = "set tag: " + error_queue_text();
        return res;
    }
    if (!EVP_CipherFinal_ex(x.get(), res.out.data() + got, &outl)) {
        res.err = "final: " + error_queue_text();
        res.out.resize(got);
        return res;
    }
    got += (size_t)outl;
    res.out.resize(got);
    if (enc) {
        res.tag.resize(r.taglen);
        if (!EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, (int)r.taglen, res.tag.data())) {
            res.err = "get tag: " + error_queue_text();
            return res;
        }
    }
    res.ok = true;
    return res;
}

std::vector<size_t> split(std::mt19937_64 &rng, size_t total, int maxparts)
{
    std::vector<size_t> s;
    int parts = 1 + (int)(rng() % (uint64_t)maxparts);
    size_t left = total;
    for (int i = 1; i < parts && left > 0; i++) {
        size_t n = (size_t)(rng() % (left + 1));
        s.push_back(n);
        left -= n;
    }
    s.push_back(left);
    return s;
}

} // namespace

/* ---- GCM: the specification's vectors ------------------------------------ */

struct GcmVector {
    const char *name, *alg, *key, *iv, *aad, *pt, *ct, *tag;
};

/* McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", test cases
 * 1-4 (AES-128), 7 (AES-192), 13, 14 and 16 (AES-256); re-typed. */
#define GCM_P4                                                                   \
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"           \
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
const GcmVector kGcmVectors[] = {
    {"TC1", "AES-128-GCM", "00000000000000000000000000000000", "000000000000000000000000", "", "", "",
     "58e2fccefa7e3061367f1d57a4e7455a"},
    {"TC2", "AES-128-GCM", "00000000000000000000000000000000", "000000000000000000000000", "",
     "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
    {"TC3", "AES-128-GCM", "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", "", GCM_P4 "1aafd255",
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
     "4d5c2af327cd64a62cf35abd2ba6fab4"},
    {"TC4", "AES-128-GCM", "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
     "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P4,
     "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
     "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
     "5bc94fbc3221a5db94fae95ae7121a47"},
    {"TC7", "AES-192-GCM", "000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "",
     "", "cd33b28ac773f74ba00ed1f312572435"},
    {"TC13", "AES-256-GCM", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
    {"TC14", "AES-256-GCM", "0000000000000000000000000000000000000000000000000000000000000000",
     "000000000000000000000000", "", "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18",
     "d0d1c8a799996bf0265b98b5d48ab919"},
    {"TC16", "AES-256-GCM", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
     "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", GCM_P4,
     "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
     "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
     "76fc6ece0f4e1768cddf8853bb2d551b"},
};

class GcmKat : public KernelTest, public ::testing::WithParamInterface<GcmVector> {};

TEST_P(GcmKat, EncryptDecryptTamper)
{
    const GcmVector &v = GetParam();
    CipherPtr h, d;
    need_cipher(v.alg, &h, &d);
    if (!h)
        return;
    GcmRun r;
    r.key = unhex(v.key);
    r.iv = unhex(v.iv);
    r.aad = unhex(v.aad);
    r.in = unhex(v.pt);
    r.aad_splits = {r.aad.size()};
    r.splits = {r.in.size()};
    GcmResult e = gcm(h.get(), 1, r);
    ASSERT_TRUE(e.ok) << e.err;
    EXPECT_EQ(tohex(e.out), v.ct);
    EXPECT_EQ(tohex(e.tag), v.tag);

    for (bool first : {false, true}) {
        GcmRun dr = r;
        dr.in = unhex(v.ct);
        dr.splits = {dr.in.size()};
        dr.tag = unhex(v.tag);
        dr.tag_first = first;
        GcmResult o = gcm(h.get(), 0, dr);
        ASSERT_TRUE(o.ok) << o.err;
        EXPECT_EQ(tohex(o.out), v.pt);

        dr.tag[15] ^= 0x80;
        o = gcm(h.get(), 0, dr);
        EXPECT_FALSE(o.ok) << "a wrong tag was accepted";
        EXPECT_NE(o.err.find("final"), std::string::npos) << o.err;
        EXPECT_NE(o.err.find("tag mismatch"), std::string::npos) << o.err;
        dr.tag[15] ^= 0x80;
        if (!dr.in.empty()) {
            dr.in[0] ^= 1;
            o = gcm(h.get(), 0, dr);
            EXPECT_FALSE(o.ok) << "a changed ciphertext was accepted";
        }
        if (!dr.aad.empty()) {
            dr = r;
            dr.in = unhex(v.ct);
            dr.tag = unhex(v.tag);
            dr.tag_first = first;
            dr.aad[0] ^= 1;
            o = gcm(h.get(), 0, dr);
            EXPECT_FALSE(o.ok) << "a changed AAD was accepted";
        }
    }
    ERR_clear_error();
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmKat, ::testing::ValuesIn(kGcmVectors),
                         [](const ::testing::TestParamInfo<GcmVector> &i) { return std::string(i.param.name); });

/* ---- GCM: against the default provider ----------------------------------- */

class GcmDiff : public KernelTest, public ::testing::WithParamInterface<const char *> {};

TEST_P(GcmDiff, RandomSplitsAndTags)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    size_t keylen = (size_t)EVP_CIPHER_get_key_length(h.get());
    const size_t lengths[] = {0, 1, 15, 16, 17, 60, 255, 1000, 4096, 16384, 65536};
    for (size_t len : lengths) {
        for (int it = 0; it < 3; it++) {
            GcmRun r;
            r.key = random_bytes(keylen);
            r.iv = random_bytes(12);
            r.aad = random_bytes(random_size(0, it == 0 ? 0 : 300));
            r.in = random_bytes(len);
            r.aad_splits = split(rng_, r.aad.size(), 3);
            r.splits = split(rng_, len, it + 1);
            r.taglen = it == 0 ? 16 : random_size(4, 16);
            r.inplace = it == 2;
            GcmResult eh = gcm(h.get(), 1, r), ed = gcm(d.get(), 1, r);
            std::string what = std::string(GetParam()) + " len " + std::to_string(len) + " aad "
                               + std::to_string(r.aad.size()) + " updates " + std::to_string(r.splits.size())
                               + " taglen " + std::to_string(r.taglen);
            ASSERT_TRUE(eh.ok) << what << ": " << eh.err;
            ASSERT_TRUE(ed.ok) << what << ": " << ed.err;
            EXPECT_EQ(eh.out, ed.out) << what;
            EXPECT_EQ(eh.tag, ed.tag) << what;

            /* Decrypt the default provider's message with hwaf, tag first or last,
             * in other splits; and hwaf's with the default provider. */
            GcmRun dr = r;
            dr.in = ed.out;
            dr.tag = ed.tag;
            dr.splits = split(rng_, len, 3);
            dr.tag_first = (rng_() & 1) != 0;
            GcmResult oh = gcm(h.get(), 0, dr);
            ASSERT_TRUE(oh.ok) << what << ": " << oh.err;
            EXPECT_EQ(oh.out, r.in) << what;
            dr.in = eh.out;
            dr.tag = eh.tag;
            GcmResult od = gcm(d.get(), 0, dr);
            ASSERT_TRUE(od.ok) << what << ": " << od.err;
            EXPECT_EQ(od.out, r.in) << what;

            /* Tampering: tag, data or AAD; both providers refuse. */
            GcmRun tr = dr;
            int which = (int)(rng_() % 3);
            if (which == 1 && !tr.in.empty())
                tr.in[rng_() % tr.in.size()] ^= 0x10;
            else if (which == 2 && !tr.aad.empty())
                tr.aad[rng_() % tr.aad.size()] ^= 0x10;
            else
                tr.tag[rng_() % tr.tag.size()] ^= 0x10;
            EXPECT_FALSE(gcm(h.get(), 0, tr).ok) << what << ": tampered message accepted by hwaf";
            EXPECT_FALSE(gcm(d.get(), 0, tr).ok) << what;
            ERR_clear_error();
        }
    }
}

/* A copy taken after the first data update, continued with other data, and
 * the original continued too; then a re-init with a new IV on the same key. */
TEST_P(GcmDiff, CopyMidStreamAndReinit)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    size_t keylen = (size_t)EVP_CIPHER_get_key_length(h.get());
    for (int enc : {1, 0}) {
        Bytes key = random_bytes(keylen), iv = random_bytes(12), iv2 = random_bytes(12);
        Bytes aad = random_bytes(33), a = random_bytes(1000), b1 = random_bytes(777), b2 = random_bytes(50);
        std::vector<std::string> logs[2];
        for (int k = 0; k < 2; k++) {
            EVP_CIPHER *c = k == 0 ? h.get() : d.get();
            std::vector<std::string> &log = logs[k];
            CtxPtr x(EVP_CIPHER_CTX_new());
            Bytes out(4096);
            int outl = 0;
            ASSERT_TRUE(EVP_CipherInit_ex2(x.get(), c, key.data(), iv.data(), enc, nullptr));
            ASSERT_TRUE(EVP_CipherUpdate(x.get(), nullptr, &outl, aad.data(), (int)aad.size()));
            ASSERT_TRUE(EVP_CipherUpdate(x.get(), out.data(), &outl, a.data(), (int)a.size()));
            log.push_back(tohex(out.data(), (size_t)outl));
            CtxPtr y(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(EVP_CIPHER_CTX_copy(y.get(), x.get())) << error_queue_text();
            const std::pair<EVP_CIPHER_CTX *, const Bytes *> branches[] = {{x.get(), &b1}, {y.get(), &b2}};
            for (const auto &[ctx, more] : branches) {
                ASSERT_TRUE(EVP_CipherUpdate(ctx, out.data(), &outl, more->data(), (int)more->size()));
                log.push_back(tohex(out.data(), (size_t)outl));
                if (enc) {
                    ASSERT_TRUE(EVP_CipherFinal_ex(ctx, out.data(), &outl));
                    unsigned char tag[16];
                    ASSERT_TRUE(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag));
                    log.push_back(tohex(tag, 16));
                } else {
                    /* Not the right tag: both refuse the same way. */
                    unsigned char tag[16] = {0};
                    ASSERT_TRUE(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag));
                    log.push_back(EVP_CipherFinal_ex(ctx, out.data(), &outl) ? "accepted" : "refused");
                    ERR_clear_error();
                }
            }
            /* The same key, a new IV. */
            ASSERT_TRUE(EVP_CipherInit_ex2(x.get(), nullptr, nullptr, iv2.data(), enc, nullptr));
            ASSERT_TRUE(EVP_CipherUpdate(x.get(), out.data(), &outl, b1.data(), (int)b1.size()));
            log.push_back(tohex(out.data(), (size_t)outl));
            /* And without a new IV after a finished message: refused by both. */
            if (enc) {
                ASSERT_TRUE(EVP_CipherFinal_ex(x.get(), out.data(), &outl));
                ASSERT_TRUE(EVP_CipherInit_ex2(x.get(), nullptr, nullptr, nullptr, enc, nullptr));
                log.push_back(EVP_CipherUpdate(x.get(), out.data(), &outl, b2.data(), (int)b2.size())
                                  ? "reused IV accepted"
                                  : "reused IV refused");
                ERR_clear_error();
            }
        }
        EXPECT_EQ(logs[0], logs[1]) << (enc ? "encrypt" : "decrypt");
    }
}

/* EVP_Cipher() with a NULL input finishes the message, as OpenSSH does. */
TEST_P(GcmDiff, EvpCipherCalls)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    size_t keylen = (size_t)EVP_CIPHER_get_key_length(h.get());
    Bytes key = random_bytes(keylen), iv = random_bytes(12), aad = random_bytes(4), pt = random_bytes(100);
    std::string res[2];
    for (int k = 0; k < 2; k++) {
        CtxPtr x(EVP_CIPHER_CTX_new());
        Bytes ct(100), tag(16), back(100);
        ASSERT_TRUE(EVP_CipherInit_ex2(x.get(), k ? d.get() : h.get(), key.data(), iv.data(), 1, nullptr));
        EXPECT_GE(EVP_Cipher(x.get(), nullptr, aad.data(), 4), 0);
        EXPECT_GE(EVP_Cipher(x.get(), ct.data(), pt.data(), 100), 0);
        EXPECT_GE(EVP_Cipher(x.get(), nullptr, nullptr, 0), 0);
        ASSERT_TRUE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()));
        ASSERT_TRUE(EVP_CipherInit_ex2(x.get(), nullptr, nullptr, iv.data(), 0, nullptr));
        ASSERT_TRUE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag.data()));
        EXPECT_GE(EVP_Cipher(x.get(), nullptr, aad.data(), 4), 0);
        EXPECT_GE(EVP_Cipher(x.get(), back.data(), ct.data(), 100), 0);
        EXPECT_GE(EVP_Cipher(x.get(), nullptr, nullptr, 0), 0) << error_queue_text();
        EXPECT_EQ(back, pt);
        res[k] = tohex(ct) + tohex(tag);
    }
    EXPECT_EQ(res[0], res[1]);
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmDiff, ::testing::ValuesIn(kGcm),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- GCM: TLS 1.2 records -------------------------------------------------- */

namespace {

/* One TLS 1.2 GCM record, in place: explicit IV (8) || data || tag (16). */
bool tls_record(const EVP_CIPHER *c, int enc, const Bytes &key, const Bytes &fixed, Bytes *rec, size_t *outlen)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    if (!EVP_CipherInit_ex2(x.get(), c, key.data(), nullptr, enc, nullptr)
        || EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_GCM_SET_IV_FIXED, (int)fixed.size(), (void *)fixed.data()) <= 0)
        return false;
    unsigned char aad[13] = {0, 0, 0, 0, 0, 0, 0, 7, 23, 3, 3, 0, 0};
    /* The record's length in the header: sealing, without the tag. */
    size_t hlen = rec->size() - (enc ? 16 : 0);
    aad[11] = (unsigned char)(hlen >> 8);
    aad[12] = (unsigned char)hlen;
    if (EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_TLS1_AAD, 13, aad) != 16)
        return false;
    int n = 0;
    if (!EVP_CipherUpdate(x.get(), rec->data(), &n, rec->data(), (int)rec->size()))
        return false;
    *outlen = (size_t)n;
    return true;
}

} // namespace

class GcmTls : public KernelTest, public ::testing::WithParamInterface<const char *> {};

TEST_P(GcmTls, RecordsMatchTheDefaultProvider)
{
    CipherPtr h, d;
    need_cipher(GetParam(), &h, &d);
    if (!h)
        return;
    size_t keylen = (size_t)EVP_CIPHER_get_key_length(h.get());
    for (size_t len : {0, 1, 16, 100, 1000, 16384}) {
        Bytes key = random_bytes(keylen), fixed = random_bytes(4), payload = random_bytes(len);
        for (int k = 0; k < 2; k++) {
            /* One side seals (a random invocation field, as libssl asks), the
             * other opens with the explicit IV carried in the record. */
            const EVP_CIPHER *seal = k ? d.get() : h.get(), *open = k ? h.get() : d.get();
            Bytes rec(8 + len + 16, 0);
            if (len > 0)  /* an empty vector's data() may be NULL */
                memcpy(rec.data() + 8, payload.data(), len);
            size_t n = 0;
            ASSERT_TRUE(tls_record(seal, 1, key, fixed, &rec, &n)) << error_queue_text();
            EXPECT_EQ(n, 8 + len + 16);
            Bytes back = rec;
            ASSERT_TRUE(tls_record(open, 0, key, fixed, &back, &n)) << "length " << len << ": " << error_queue_text();
            EXPECT_EQ(n, len);
            EXPECT_EQ(Bytes(back.begin() + 8, back.begin() + 8 + len), payload) << "length " << len;
            if (k == 0)
                continue;
            back = rec;
            back[back.size() - 1] ^= 1;
            EXPECT_FALSE(tls_record(h.get(), 0, key, fixed, &back, &n)) << "tampered record accepted";
            EXPECT_TRUE(has_reasoned_error());
            EXPECT_EQ(Bytes(back.begin() + 8, back.begin() + 8 + len), Bytes(len, 0)) << "plaintext of a bad record";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmTls, ::testing::ValuesIn(kGcm),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- GCM: errors ------------------------------------------------------------- */

class GcmErrors : public KernelTest {};

TEST_F(GcmErrors, RefusedWithReasons)
{
    CipherPtr h, d;
    need_cipher("AES-128-GCM", &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes(16), iv = random_bytes(12), buf(64);
    int outl;
    CtxPtr x(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(x.get(), h.get(), key.data(), iv.data(), nullptr));
    /* AAD after data */
    ASSERT_TRUE(EVP_EncryptUpdate(x.get(), buf.data(), &outl, buf.data(), 16));
    EXPECT_FALSE(EVP_EncryptUpdate(x.get(), nullptr, &outl, buf.data(), 16));
    EXPECT_TRUE(has_reasoned_error());
    /* setting a tag when encrypting; a 17-byte tag; no tag before a decryption's final */
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, 16, buf.data()), 0);
    EXPECT_TRUE(has_reasoned_error());
    ASSERT_TRUE(EVP_DecryptInit_ex2(x.get(), nullptr, nullptr, iv.data(), nullptr));
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, 17, buf.data()), 0);
    ERR_clear_error();
    ASSERT_TRUE(EVP_DecryptUpdate(x.get(), buf.data(), &outl, buf.data(), 16));
    EXPECT_FALSE(EVP_DecryptFinal_ex(x.get(), buf.data(), &outl));
    EXPECT_TRUE(has_reasoned_error());
    /* IV lengths the default provider does not take either (others:
     * GcmIvLength*) */
    CtxPtr y(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(y.get(), h.get(), nullptr, nullptr, nullptr));
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(y.get(), EVP_CTRL_AEAD_SET_IVLEN, 129, nullptr), 0);
    EXPECT_TRUE(has_reasoned_error());
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(y.get(), EVP_CTRL_AEAD_SET_IVLEN, 0, nullptr), 0);
    EXPECT_TRUE(has_reasoned_error());
    /* No IV when encrypting: a random one, readable afterwards (as OpenSSL's GCM) */
    ASSERT_TRUE(EVP_EncryptInit_ex2(y.get(), nullptr, key.data(), nullptr, nullptr));
    ASSERT_TRUE(EVP_EncryptUpdate(y.get(), buf.data(), &outl, buf.data(), 16));
    unsigned char got_iv[12];
    ASSERT_TRUE(EVP_CIPHER_CTX_get_updated_iv(y.get(), got_iv, 12));
    /* a message larger than one kernel request, in a context forced to the
     * kernel (otherwise software computes it: Dispatch.GcmMessageLarger...) */
    Bytes big(64u << 20);
    CtxPtr z(EVP_CIPHER_CTX_new());
    int kernel = 1;
    OSSL_PARAM force[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel), OSSL_PARAM_construct_end()};
    ASSERT_TRUE(EVP_EncryptInit_ex2(z.get(), h.get(), key.data(), iv.data(), force));
    ASSERT_EQ(ctx_param_int(z.get(), HWAF_PARAM_OFFLOAD, -7), 1);
    EXPECT_FALSE(EVP_EncryptUpdate(z.get(), big.data(), &outl, big.data(), (int)big.size()));
    EXPECT_TRUE(has_reasoned_error());
}

/* ---- HMAC ------------------------------------------------------------------ */

namespace {

struct HmacVector {
    const char *name, *digest, *key, *data, *mac;
};

#define TC6_KEY /* 131 bytes of 0xaa */ \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" \
    "aaaaaa"
#define TC6_DATA "Test Using Larger Than Block-Size Key - Hash Key First"
#define TC1_KEY "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"

/* RFC 4231 test cases 1 and 6; RFC 2202 test case 1 (HMAC-SHA-1). */
const HmacVector kHmacVectors[] = {
    {"RFC2202_1_SHA1", "SHA1", TC1_KEY, "Hi There", "b617318655057264e28bc0b6fb378c8ef146be00"},
    {"RFC4231_1_SHA224", "SHA2-224", TC1_KEY, "Hi There", "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22"},
    {"RFC4231_1_SHA256", "SHA2-256", TC1_KEY, "Hi There",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
    {"RFC4231_1_SHA384", "SHA2-384", TC1_KEY, "Hi There",
     "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6"},
    {"RFC4231_1_SHA512", "SHA2-512", TC1_KEY, "Hi There",
     "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"},
    {"RFC4231_6_SHA224", "SHA2-224", TC6_KEY, TC6_DATA, "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e"},
    {"RFC4231_6_SHA256", "SHA2-256", TC6_KEY, TC6_DATA,
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
    {"RFC4231_6_SHA384", "SHA2-384", TC6_KEY, TC6_DATA,
     "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952"},
    {"RFC4231_6_SHA512", "SHA2-512", TC6_KEY, TC6_DATA,
     "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"},
};

const char *const kHmacDigests[] = {"SHA1", "SHA2-224", "SHA2-256", "SHA2-384", "SHA2-512"};

} // namespace

class HmacTest : public KernelTest {
protected:
    MacPtr hwaf_hmac()
    {
        MacPtr m(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
        if (m)
            EXPECT_STREQ(OSSL_PROVIDER_get0_name(EVP_MAC_get0_provider(m.get())), HWAF_PROVIDER_NAME);
        else
            ADD_FAILURE() << "hwaf offers no HMAC (query '" << hwaf_query() << "'): " << error_queue_text();
        return m;
    }
    MacPtr default_hmac() { return MacPtr(EVP_MAC_fetch(lib_->get(), "HMAC", "provider=default")); }
    static bool init(EVP_MAC_CTX *x, const char *digest, const Bytes &key)
    {
        OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0), OSSL_PARAM_END};
        static const unsigned char none[1] = {0};
        return EVP_MAC_init(x, key.empty() ? none : key.data(), key.size(), p) == 1;
    }
    static std::string fin(EVP_MAC_CTX *x)
    {
        unsigned char out[64];
        size_t n = 0;
        if (!EVP_MAC_final(x, out, &n, sizeof(out)))
            return "final failed: " + error_queue_text();
        return tohex(out, n);
    }
};

class HmacKat : public HmacTest, public ::testing::WithParamInterface<HmacVector> {};

TEST_P(HmacKat, Rfc)
{
    const HmacVector &v = GetParam();
    MacPtr m = hwaf_hmac();
    if (!m)
        return;
    MacCtxPtr x(EVP_MAC_CTX_new(m.get()));
    ASSERT_TRUE(init(x.get(), v.digest, unhex(v.key))) << error_queue_text();
    ASSERT_TRUE(EVP_MAC_update(x.get(), (const unsigned char *)v.data, strlen(v.data)));
    EXPECT_EQ(fin(x.get()), v.mac);
    EXPECT_EQ(EVP_MAC_CTX_get_mac_size(x.get()), strlen(v.mac) / 2);
    /* which driver: the kernel's hmac() ("hmac(sha256-generic)" through
     * AF_ALG, whatever /dev/crypto reports for its hmac(sha256) session) */
    char drv[128] = "";
    OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, drv, sizeof(drv)), OSSL_PARAM_END};
    ASSERT_TRUE(EVP_MAC_CTX_get_params(x.get(), p));
    EXPECT_NE(std::string(drv).find("hmac"), std::string::npos) << drv;
}

INSTANTIATE_TEST_SUITE_P(Hmac, HmacKat, ::testing::ValuesIn(kHmacVectors),
                         [](const ::testing::TestParamInfo<HmacVector> &i) { return std::string(i.param.name); });

class HmacDiff : public HmacTest, public ::testing::WithParamInterface<const char *> {};

TEST_P(HmacDiff, KeysSplitsCopiesReinit)
{
    MacPtr h = hwaf_hmac(), d = default_hmac();
    if (!h)
        return;
    const char *md = GetParam();
    for (size_t keylen : {0, 1, 20, 64, 65, 128, 129, 300}) {
        for (size_t len : {0, 1, 63, 64, 65, 1000, 70000}) {
            Bytes key = random_bytes(keylen), data = random_bytes(len), more = random_bytes(100);
            std::vector<size_t> parts = split(rng_, len, 4);
            std::vector<std::string> log[2];
            for (int k = 0; k < 2; k++) {
                MacCtxPtr x(EVP_MAC_CTX_new(k ? d.get() : h.get()));
                ASSERT_TRUE(init(x.get(), md, key)) << error_queue_text();
                size_t off = 0;
                for (size_t n : parts) {
                    ASSERT_TRUE(EVP_MAC_update(x.get(), data.data() + off, n));
                    off += n;
                }
                MacCtxPtr y(EVP_MAC_CTX_dup(x.get()));
                ASSERT_TRUE(y) << error_queue_text();
                ASSERT_TRUE(EVP_MAC_update(y.get(), more.data(), more.size()));
                log[k].push_back(fin(x.get()));
                log[k].push_back(fin(y.get()));
                /* re-init keeps the key */
                ASSERT_TRUE(EVP_MAC_init(x.get(), nullptr, 0, nullptr)) << error_queue_text();
                ASSERT_TRUE(EVP_MAC_update(x.get(), more.data(), more.size()));
                log[k].push_back(fin(x.get()));
                log[k].push_back(std::to_string(EVP_MAC_CTX_get_mac_size(x.get())) + "/"
                                 + std::to_string(EVP_MAC_CTX_get_block_size(x.get())));
            }
            EXPECT_EQ(log[0], log[1]) << md << " key " << keylen << " len " << len;
        }
    }
}

/*
 * OpenVPN's pattern: every message starts with an init that passes the
 * digest and the key as parameters, mostly the same key, sometimes another
 * one, sometimes mid-message (the message then restarts at the init, as in
 * the default provider), with and without a hold-back across sizes.
 */
TEST_P(HmacDiff, KeyAgainWithEveryInit)
{
    MacPtr h = hwaf_hmac(), d = default_hmac();
    if (!h)
        return;
    const char *md = GetParam();
    Bytes keys[3] = {random_bytes(32), random_bytes(32), random_bytes(20)};
    MacCtxPtr x[2] = {MacCtxPtr(EVP_MAC_CTX_new(h.get())), MacCtxPtr(EVP_MAC_CTX_new(d.get()))};
    for (int i = 0; i < 60; i++) {
        const Bytes &key = keys[i % 7 == 6 ? 1 + i % 2 : 0];
        Bytes data = random_bytes((size_t)(i * 37 % 1500)), junk = random_bytes(40);
        std::string r[2];
        for (int k = 0; k < 2; k++) {
            OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)md, 0),
                              OSSL_PARAM_octet_string(OSSL_MAC_PARAM_KEY, (void *)key.data(), key.size()),
                              OSSL_PARAM_END};
            if (i % 5 == 4) {  /* a message begun, then abandoned by the next init */
                ASSERT_TRUE(EVP_MAC_init(x[k].get(), nullptr, 0, p) && EVP_MAC_update(x[k].get(), junk.data(), junk.size()))
                    << error_queue_text();
            }
            ASSERT_TRUE(EVP_MAC_init(x[k].get(), nullptr, 0, p)) << error_queue_text();
            ASSERT_TRUE(EVP_MAC_update(x[k].get(), data.data(), data.size())) << error_queue_text();
            r[k] = fin(x[k].get());
        }
        EXPECT_EQ(r[0], r[1]) << md << " message " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Hmac, HmacDiff, ::testing::ValuesIn(kHmacDigests),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

TEST_F(HmacTest, RefusedWithReasons)
{
    MacPtr h = hwaf_hmac();
    if (!h)
        return;
    MacCtxPtr x(EVP_MAC_CTX_new(h.get()));
    Bytes key = random_bytes(16);
    unsigned char out[64];
    size_t n;
    /* no digest; update before init */
    EXPECT_FALSE(EVP_MAC_init(x.get(), key.data(), key.size(), nullptr));
    EXPECT_TRUE(has_reasoned_error());
    EXPECT_FALSE(EVP_MAC_update(x.get(), key.data(), key.size()));
    EXPECT_TRUE(has_reasoned_error());
    /* final twice */
    ASSERT_TRUE(init(x.get(), "SHA256", key));
    ASSERT_TRUE(EVP_MAC_final(x.get(), out, &n, sizeof(out)));
    EXPECT_FALSE(EVP_MAC_final(x.get(), out, &n, sizeof(out)));
    EXPECT_TRUE(has_reasoned_error());
}

/* A digest the kernel has no hmac() for here: a software HMAC hands the
 * context to another provider (so that libssl's MD5-SHA1 PRF works with
 * hwaf preferred); a hardware HMAC refuses it. */
TEST_F(HmacTest, OtherDigestsGoToAnotherProvider)
{
    MacPtr h = hwaf_hmac(), d = default_hmac();
    if (!h)
        return;
    Bytes key = random_bytes(40), data = random_bytes(300);
    for (const char *md : {"SHA3-256", "MD5", "SHA2-256"}) {
        std::string r[2];
        for (int k = 0; k < 2; k++) {
            MacCtxPtr x(EVP_MAC_CTX_new(k ? d.get() : h.get()));
            ASSERT_TRUE(init(x.get(), md, key)) << md << ": " << error_queue_text();
            ASSERT_TRUE(EVP_MAC_update(x.get(), data.data(), data.size()));
            MacCtxPtr y(EVP_MAC_CTX_dup(x.get()));
            ASSERT_TRUE(y);
            r[k] = fin(y.get()) + fin(x.get());
            if (k == 0) {
                char drv[128] = "";
                OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(HWAF_PARAM_DRIVER, drv, sizeof(drv)), OSSL_PARAM_END};
                ASSERT_TRUE(EVP_MAC_CTX_get_params(x.get(), p));
                if (strcmp(md, "SHA2-256") == 0)
                    EXPECT_NE(std::string(drv).find("hmac"), std::string::npos) << drv;
                else
                    EXPECT_STREQ(drv, "none") << md;
            }
        }
        EXPECT_EQ(r[0], r[1]) << md;
    }
    MacPtr hw(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query(HWAF_PROP_HW "=yes").c_str()));
    if (hw) {
        MacCtxPtr x(EVP_MAC_CTX_new(hw.get()));
        EXPECT_FALSE(init(x.get(), "SHA3-256", key));
        EXPECT_TRUE(has_reasoned_error());
    }
    ERR_clear_error();
}

/* ---- GCM and HMAC under a seccomp filter installed after load ----------- */

/*
 * A child installs a filter that kills the process on the system calls a
 * kernel session needs (socket, accept4, ioctl), as sshd's sandboxed child
 * does, and then asks for a GCM key and an HMAC key in contexts forced to
 * the kernel (hwaf-offload = 1): hwaf must refuse both with its "seccomp
 * filter" reason instead of making the call (which would kill the child
 * with SIGSYS).
 */
TEST_F(HmacTest, GcmAndHmacRefusedUnderSeccompFilter)
{
    MacPtr h = hwaf_hmac();
    CipherPtr gh, gd;
    need_cipher("AES-128-GCM", &gh, &gd);
    if (!h || !gh)
        return;
    Bytes key = random_bytes(16);
    fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 3, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_accept4, 2, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        };
        struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
            _exit(10);
        int bad = 0, kernel = 1;
        OSSL_PARAM force[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel), OSSL_PARAM_construct_end()};
        CtxPtr x(EVP_CIPHER_CTX_new());
        ERR_clear_error();
        if (EVP_EncryptInit_ex2(x.get(), gh.get(), key.data(), key.data(), force))
            bad |= 1;  /* a GCM session was opened: the filter let it through? */
        else if (error_queue_text().find("seccomp") == std::string::npos)
            bad |= 2;
        MacCtxPtr m(EVP_MAC_CTX_new(h.get()));
        if (!EVP_MAC_CTX_set_params(m.get(), force) || init(m.get(), "SHA2-256", key))
            bad |= 4;
        else if (error_queue_text().find("seccomp") == std::string::npos)
            bad |= 8;
        _exit(bad);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_FALSE(WIFSIGNALED(st)) << "child killed by signal " << WTERMSIG(st)
                                  << " (31: SIGSYS, a system call the filter forbids)";
    EXPECT_EQ(WEXITSTATUS(st), 0) << "1/4: GCM/HMAC key accepted under the filter; "
                                     "2/8: refused without the seccomp reason; 10: no filter";
}
