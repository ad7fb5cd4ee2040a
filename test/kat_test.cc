/*
 * Known-answer tests from the standards:
 *   NIST SP 800-38A F.2 (CBC) and F.5 (CTR), with the next IV after every
 *   block, IEEE Std 1619-2007 (XTS), FIPS 180-4 examples (SHA-1, SHA-2).
 * Every vector is also run through the default provider, which checks the
 * vector itself.
 */
#include "hwaf_test.h"

#include <cstring>

using namespace hwaf_test;

namespace {

/* SP 800-38A: the same four plaintext blocks for every CBC and CTR vector. */
const char *kSp800Pt[4] = {
    "6bc1bee22e409f96e93d7e117393172a",
    "ae2d8a571e03ac9c9eb76fac45af8e51",
    "30c81c46a35ce411e5fbc1191a0a52ef",
    "f69f2445df4f9b17ad2b417be66c3710",
};

struct BlockKat {
    const char *label;
    const char *cipher;
    const char *key;
    const char *iv;
    const char *ct[4];
    const char *next_iv[4]; /* IV / counter after block i */
};

const BlockKat kBlockKats[] = {
    {"F_2_1_CBC_AES128", "AES-128-CBC", "2b7e151628aed2a6abf7158809cf4f3c",
     "000102030405060708090a0b0c0d0e0f",
     {"7649abac8119b246cee98e9b12e9197d", "5086cb9b507219ee95db113a917678b2",
      "73bed6b8e3c1743b7116e69e22229516", "3ff1caa1681fac09120eca307586e1a7"},
     {"7649abac8119b246cee98e9b12e9197d", "5086cb9b507219ee95db113a917678b2",
      "73bed6b8e3c1743b7116e69e22229516", "3ff1caa1681fac09120eca307586e1a7"}},
    {"F_2_3_CBC_AES192", "AES-192-CBC", "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
     "000102030405060708090a0b0c0d0e0f",
     {"4f021db243bc633d7178183a9fa071e8", "b4d9ada9ad7dedf4e5e738763f69145a",
      "571b242012fb7ae07fa9baac3df102e0", "08b0e27988598881d920a9e64f5615cd"},
     {"4f021db243bc633d7178183a9fa071e8", "b4d9ada9ad7dedf4e5e738763f69145a",
      "571b242012fb7ae07fa9baac3df102e0", "08b0e27988598881d920a9e64f5615cd"}},
    {"F_2_5_CBC_AES256", "AES-256-CBC", "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
     "000102030405060708090a0b0c0d0e0f",
     {"f58c4c04d6e5f1ba779eabfb5f7bfbd6", "9cfc4e967edb808d679f777bc6702c7d",
      "39f23369a9d9bacfa530e26304231461", "b2eb05e2c39be9fcda6c19078c6a9d1b"},
     {"f58c4c04d6e5f1ba779eabfb5f7bfbd6", "9cfc4e967edb808d679f777bc6702c7d",
      "39f23369a9d9bacfa530e26304231461", "b2eb05e2c39be9fcda6c19078c6a9d1b"}},
    {"F_5_1_CTR_AES128", "AES-128-CTR", "2b7e151628aed2a6abf7158809cf4f3c",
     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     {"874d6191b620e3261bef6864990db6ce", "9806f66b7970fdff8617187bb9fffdff",
      "5ae4df3edbd5d35e5b4f09020db03eab", "1e031dda2fbe03d1792170a0f3009cee"},
     {"f0f1f2f3f4f5f6f7f8f9fafbfcfdff00", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff01",
      "f0f1f2f3f4f5f6f7f8f9fafbfcfdff02", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff03"}},
    {"F_5_3_CTR_AES192", "AES-192-CTR", "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     {"1abc932417521ca24f2b0459fe7e6e0b", "090339ec0aa6faefd5ccc2c6f4ce8e94",
      "1e36b26bd1ebc670d1bd1d665620abf7", "4f78a7f6d29809585a97daec58c6b050"},
     {"f0f1f2f3f4f5f6f7f8f9fafbfcfdff00", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff01",
      "f0f1f2f3f4f5f6f7f8f9fafbfcfdff02", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff03"}},
    {"F_5_5_CTR_AES256", "AES-256-CTR", "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
     "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     {"601ec313775789a5b7a7f504bbf3d228", "f443e3ca4d62b59aca84e990cacaf5c5",
      "2b0930daa23de94ce87017ba2d84988d", "dfc9c58db67aada613c2dd08457941a6"},
     {"f0f1f2f3f4f5f6f7f8f9fafbfcfdff00", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff01",
      "f0f1f2f3f4f5f6f7f8f9fafbfcfdff02", "f0f1f2f3f4f5f6f7f8f9fafbfcfdff03"}},
};

void PrintTo(const BlockKat &k, std::ostream *os) { *os << k.label; }

Bytes updated_iv(EVP_CIPHER_CTX *c)
{
    Bytes iv(16);
    if (!EVP_CIPHER_CTX_get_updated_iv(c, iv.data(), iv.size())) {
        ERR_clear_error();
        return {};
    }
    return iv;
}

class KatBlock : public KernelTest, public ::testing::WithParamInterface<BlockKat> {
protected:
    /* Block by block through one context: output and next IV per block. */
    void run_blocks(const EVP_CIPHER *c, int enc, const char *who)
    {
        const BlockKat &v = GetParam();
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_CipherInit_ex2(ctx.get(), c, unhex(v.key).data(), unhex(v.iv).data(), enc, nullptr))
            << who << "\n" << error_queue_text();
        EVP_CIPHER_CTX_set_padding(ctx.get(), 0);
        for (int i = 0; i < 4; i++) {
            Bytes in = unhex(enc ? kSp800Pt[i] : v.ct[i]);
            Bytes want = unhex(enc ? v.ct[i] : kSp800Pt[i]);
            Bytes out(32);
            int outl = 0;
            ASSERT_TRUE(EVP_CipherUpdate(ctx.get(), out.data(), &outl, in.data(), (int)in.size()))
                << who << " block " << i << "\n" << error_queue_text();
            out.resize((size_t)outl);
            EXPECT_EQ(tohex(out), tohex(want)) << who << (enc ? " encrypt" : " decrypt") << " block " << i;
            EXPECT_EQ(tohex(updated_iv(ctx.get())), v.next_iv[i])
                << who << (enc ? " encrypt" : " decrypt") << " updated IV after block " << i;
        }
        Bytes out(32);
        int outl = -1;
        ASSERT_TRUE(EVP_CipherFinal_ex(ctx.get(), out.data(), &outl)) << who << "\n" << error_queue_text();
        EXPECT_EQ(outl, 0) << who;
        /* The IV a context started from stays reported as the original IV. */
        Bytes orig(16);
        ASSERT_TRUE(EVP_CIPHER_CTX_get_original_iv(ctx.get(), orig.data(), orig.size())) << who;
        EXPECT_EQ(tohex(orig), v.iv) << who << " original IV";
    }

    /* All four blocks in one call. */
    void run_oneshot(const EVP_CIPHER *c, const char *who)
    {
        const BlockKat &v = GetParam();
        std::string pt, ct;
        for (int i = 0; i < 4; i++) {
            pt += kSp800Pt[i];
            ct += v.ct[i];
        }
        Bytes out;
        ASSERT_TRUE(cipher_oneshot(c, 1, unhex(v.key), unhex(v.iv), unhex(pt), &out, 0)) << who;
        EXPECT_EQ(tohex(out), ct) << who;
        ASSERT_TRUE(cipher_oneshot(c, 0, unhex(v.key), unhex(v.iv), unhex(ct), &out, 0)) << who;
        EXPECT_EQ(tohex(out), pt) << who;
    }
};

TEST_P(KatBlock, Sp800_38a)
{
    const BlockKat &v = GetParam();
    CipherPtr d = default_cipher(v.cipher);
    ASSERT_TRUE(d);
    /* The vector against the reference first. */
    run_blocks(d.get(), 1, "default provider");
    run_blocks(d.get(), 0, "default provider");
    ASSERT_FALSE(HasFailure()) << "the vector itself disagrees with OpenSSL's default provider";

    CipherPtr h = hwaf_cipher(v.cipher);
    ASSERT_TRUE(h) << v.cipher << " not offered by hwaf\n" << error_queue_text();
    run_blocks(h.get(), 1, "hwaf");
    run_blocks(h.get(), 0, "hwaf");
    run_oneshot(h.get(), "hwaf");
}

INSTANTIATE_TEST_SUITE_P(KAT, KatBlock, ::testing::ValuesIn(kBlockKats),
                         [](const ::testing::TestParamInfo<BlockKat> &i) { return std::string(i.param.label); });

/* ---- XTS: IEEE Std 1619-2007 ------------------------------------------- */

struct XtsKat {
    const char *label;
    const char *cipher;
    const char *key;   /* key1 | key2 */
    const char *tweak; /* data unit sequence number, little endian, 16 bytes */
    const char *pt;
    const char *ct;
};

const XtsKat kXtsKats[] = {
    /* Vector 2 */
    {"IEEE1619_V2", "AES-128-XTS", "11111111111111111111111111111111" "22222222222222222222222222222222",
     "33333333330000000000000000000000",
     "4444444444444444444444444444444444444444444444444444444444444444",
     "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0"},
    /* Vector 3 */
    {"IEEE1619_V3", "AES-128-XTS", "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0" "22222222222222222222222222222222",
     "33333333330000000000000000000000",
     "4444444444444444444444444444444444444444444444444444444444444444",
     "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89"},
    /* Vector 15: 17 bytes, ciphertext stealing */
    {"IEEE1619_V15_17B", "AES-128-XTS", "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0" "bfbebdbcbbbab9b8b7b6b5b4b3b2b1b0",
     "9a785634120000000000000000000000", "000102030405060708090a0b0c0d0e0f10",
     "6c1625db4671522d3d7599601de7ca09ed"},
    /* Vector 16: 18 bytes */
    {"IEEE1619_V16_18B", "AES-128-XTS", "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0" "bfbebdbcbbbab9b8b7b6b5b4b3b2b1b0",
     "9a785634120000000000000000000000", "000102030405060708090a0b0c0d0e0f1011",
     "d069444b7a7e0cab09e24447d24deb1fedbf"},
    /* Same key and tweak, 31 bytes (one byte short of two blocks) */
    {"XTS_31B", "AES-128-XTS", "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0" "bfbebdbcbbbab9b8b7b6b5b4b3b2b1b0",
     "9a785634120000000000000000000000",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e",
     "d05bc090a8e04f1b3d3ecdd5baec0fd4edbf9dace45d6f6a7306e64be5dd82"},
    /* Vector 10: AES-256, 512 bytes, sequence number 0xff */
    {"IEEE1619_V10", "AES-256-XTS",
     "2718281828459045235360287471352662497757247093699959574966967627"
     "3141592653589793238462643383279502884197169399375105820974944592",
     "ff000000000000000000000000000000",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
     "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
     "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
     "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
     "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
     "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
     "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
     "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
     "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
     "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
     "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
     "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
     "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
     "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"
     "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd"
     "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
     "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca"
     "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0"
     "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
     "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec"
     "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a"
     "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
     "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae"
     "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29"
     "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
     "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f"
     "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385"
     "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
     "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"},
};

void PrintTo(const XtsKat &k, std::ostream *os) { *os << k.label; }

class KatXts : public KernelTest, public ::testing::WithParamInterface<XtsKat> {
protected:
    void run(const EVP_CIPHER *c, const char *who)
    {
        const XtsKat &v = GetParam();
        Bytes out;
        ASSERT_TRUE(cipher_oneshot(c, 1, unhex(v.key), unhex(v.tweak), unhex(v.pt), &out))
            << who << "\n" << error_queue_text();
        EXPECT_EQ(tohex(out), tohex(unhex(v.ct))) << who << " encrypt";
        ASSERT_TRUE(cipher_oneshot(c, 0, unhex(v.key), unhex(v.tweak), unhex(v.ct), &out))
            << who << "\n" << error_queue_text();
        EXPECT_EQ(tohex(out), tohex(unhex(v.pt))) << who << " decrypt";
    }
};

TEST_P(KatXts, Ieee1619)
{
    const XtsKat &v = GetParam();
    CipherPtr d = default_cipher(v.cipher);
    ASSERT_TRUE(d);
    run(d.get(), "default provider");
    ASSERT_FALSE(HasFailure()) << "the vector itself disagrees with OpenSSL's default provider";
    CipherPtr h = hwaf_cipher(v.cipher);
    ASSERT_TRUE(h) << v.cipher << " not offered by hwaf\n" << error_queue_text();
    run(h.get(), "hwaf");
}

INSTANTIATE_TEST_SUITE_P(KAT, KatXts, ::testing::ValuesIn(kXtsKats),
                         [](const ::testing::TestParamInfo<XtsKat> &i) { return std::string(i.param.label); });

/* ---- SHA: FIPS 180-4 examples ------------------------------------------ */

struct ShaKat {
    const char *md;
    const char *abc, *m448, *m896, *million;
};

const ShaKat kShaKats[] = {
    {"SHA1", "a9993e364706816aba3e25717850c26c9cd0d89d", "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
     "a49b2446a02c645bf419f995b67091253a04a259", "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
    {"SHA2-224", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
     "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525",
     "c97ca9a559850ce97a04a96def6d99a9e0e0e2ab14e6b8df265fc0b3",
     "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67"},
    {"SHA2-256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    {"SHA2-384",
     "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
     "3391fdddfc8dc7393707a65b1b4709397cf8b1d162af05abfe8f450de5f36bc6b0455a8520bc4e6f5fe95b1fe3c8452b",
     "09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039",
     "9d0e1809716474cb086e834e310a4a1ced149e9c00f248527972cec5704c2a5b07b8b3dc38ecc4ebae97ddd87f3d8985"},
    {"SHA2-512",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
     "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
     "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c335"
     "96fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445",
     "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018"
     "501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909",
     "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
     "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b"},
};

void PrintTo(const ShaKat &k, std::ostream *os) { *os << k.md; }

class KatSha : public KernelTest, public ::testing::WithParamInterface<ShaKat> {
protected:
    void run(const EVP_MD *m, const char *who)
    {
        const ShaKat &v = GetParam();
        const std::string abc = "abc";
        const std::string m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        const std::string m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                                 "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
        ASSERT_EQ(m448.size() * 8, 448u);
        ASSERT_EQ(m896.size() * 8, 896u);
        struct {
            const std::string *msg;
            const char *want;
        } cases[] = {{&abc, v.abc}, {&m448, v.m448}, {&m896, v.m896}};
        for (auto &c : cases) {
            Bytes out;
            ASSERT_TRUE(digest_oneshot(m, Bytes(c.msg->begin(), c.msg->end()), &out))
                << who << "\n" << error_queue_text();
            EXPECT_EQ(tohex(out), c.want) << who << " '" << *c.msg << "'";
        }
        /* One million 'a', fed in 1000 updates of 1000 bytes. */
        MdCtxPtr ctx(EVP_MD_CTX_new());
        ASSERT_TRUE(EVP_DigestInit_ex2(ctx.get(), m, nullptr)) << who;
        Bytes a(1000, 'a');
        for (int i = 0; i < 1000; i++)
            ASSERT_TRUE(EVP_DigestUpdate(ctx.get(), a.data(), a.size())) << who << "\n" << error_queue_text();
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        ASSERT_TRUE(EVP_DigestFinal_ex(ctx.get(), md, &n)) << who;
        EXPECT_EQ(tohex(md, n), v.million) << who << " one million 'a'";
    }
};

TEST_P(KatSha, Fips180_4)
{
    const ShaKat &v = GetParam();
    MdPtr d = default_md(v.md);
    ASSERT_TRUE(d);
    run(d.get(), "default provider");
    ASSERT_FALSE(HasFailure()) << "the vector itself disagrees with OpenSSL's default provider";
    MdPtr h = hwaf_md(v.md);
    ASSERT_TRUE(h) << v.md << " not offered by hwaf\n" << error_queue_text();
    run(h.get(), "hwaf");
}

INSTANTIATE_TEST_SUITE_P(KAT, KatSha, ::testing::ValuesIn(kShaKats),
                         [](const ::testing::TestParamInfo<ShaKat> &i) { return test_name(i.param.md); });

} // namespace
