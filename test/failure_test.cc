/*
 * After a failed kernel operation.  An update whose input runs into an
 * unreadable page fails in the kernel (EFAULT) part-way; hwaf must then
 * refuse the context cleanly until the next init, and after an init give
 * the default provider's bytes for large updates again, with zero-copy on
 * and off (no stale data left in a pipe or socket, no hang in vmsplice).
 * Digests and HMAC likewise: the kernel has taken part of the message when
 * the send fails (and starts a new hash at the next send), so neither a
 * later update nor a final may succeed before an init, and neither that
 * context after its init nor a fresh one (the idle-socket pool) may carry
 * anything of the failed message.  Failed sends and ioctls on both
 * backends are covered for every algorithm by the fault matrix
 * (test/faults).
 */
#include "hwaf_test.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>

#include <openssl/core_names.h>

using namespace hwaf_test;

/* AF_ALG only (not in the /dev/crypto runs): there the provider itself reads
 * the input, and an unreadable page ends the process, as with the default
 * provider. */
class AfalgFailure : public KernelTest {};

TEST_F(AfalgFailure, InitGivesACleanContext)
{
    const size_t good = 64 * 1024, page = 4096;
    for (const char *cfg : {"zerocopy = yes\nzerocopy_min = 4096\n", "zerocopy = no\n"}) {
        LibCtx lib(make_config(cfg));
        ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
        CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=hwaf,hwaf.backend=afalg"));
        CipherPtr d(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=default"));
        ASSERT_TRUE(h && d);
        /* good bytes, then a page nobody may read. */
        unsigned char *m = (unsigned char *)mmap(nullptr, good + page, PROT_READ | PROT_WRITE,
                                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(m, MAP_FAILED);
        memset(m, 0x3c, good);
        ASSERT_EQ(mprotect(m + good, page, PROT_NONE), 0);
        Bytes key = random_bytes(16), iv = random_bytes(16), out(good + 2 * page + 32);
        CtxPtr c(EVP_CIPHER_CTX_new());
        int l = 0;
        ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr));
        EVP_CIPHER_CTX_set_padding(c.get(), 0);
        EXPECT_FALSE(EVP_EncryptUpdate(c.get(), out.data(), &l, m, (int)(good + page))) << cfg;
        EXPECT_TRUE(has_reasoned_error()) << cfg;
        /* Refused until init: never bytes from a half-done operation. */
        Bytes small = random_bytes(4096);
        EXPECT_FALSE(EVP_EncryptUpdate(c.get(), out.data(), &l, small.data(), (int)small.size())) << cfg;
        EXPECT_TRUE(has_reasoned_error()) << cfg;
        /* After init (same key, and IV only), large aligned updates are right. */
        alarm(120); /* a hang in the kernel fails the test instead of blocking it */
        for (int same_key = 0; same_key < 2; same_key++) {
            for (size_t len : {128 * 1024, 256 * 1024, 1024 * 1024}) {
                void *p = nullptr;
                ASSERT_EQ(posix_memalign(&p, page, len), 0);
                unsigned char *in = (unsigned char *)p;
                for (size_t i = 0; i < len; i++)
                    in[i] = (unsigned char)(i * 7 + len);
                Bytes want, got(len);
                ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, Bytes(in, in + len), &want, 0));
                ASSERT_TRUE(EVP_EncryptInit_ex2(c.get(), nullptr, same_key ? key.data() : nullptr, iv.data(),
                                                nullptr));
                EVP_CIPHER_CTX_set_padding(c.get(), 0);
                EXPECT_TRUE(EVP_EncryptUpdate(c.get(), got.data(), &l, in, (int)len))
                    << cfg << len << ": " << error_queue_text();
                EXPECT_TRUE(got == want) << cfg << len << " bytes after a failure: wrong bytes";
                free(p);
                /* Fail again before the next round. */
                if (EVP_EncryptUpdate(c.get(), out.data(), &l, m, (int)(good + page)))
                    ADD_FAILURE() << "update over an unreadable page succeeded";
                ERR_clear_error();
            }
        }
        alarm(0);
        munmap(m, good + page);
    }
}

namespace {

/* good bytes, then a page nobody may read; unmapped when it goes. */
struct HalfReadable {
    static constexpr size_t kGood = 64 * 1024 + 100, kPage = 4096;
    unsigned char *m = nullptr;
    size_t map = 0;
    HalfReadable()
    {
        map = (kGood + kPage - 1) / kPage * kPage + kPage;
        void *p = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return;
        m = (unsigned char *)p;
        memset(m, 0x5a, map - kPage);
        if (mprotect(m + map - kPage, kPage, PROT_NONE) != 0) {
            munmap(m, map);
            m = nullptr;
        }
    }
    ~HalfReadable()
    {
        if (m != nullptr)
            munmap(m, map);
    }
    /* Input that starts kGood bytes before the unreadable page. */
    const unsigned char *in() const { return m + map - kPage - kGood; }
    size_t len() const { return kGood + kPage; }
};

/* One running hash or MAC, the same calls for both. */
struct Hasher {
    std::function<bool()> init;
    std::function<bool(const unsigned char *, size_t)> update;
    std::function<bool(Bytes *)> final;
};

/* The checks every kind shares; want(data) is the default provider's. */
void fail_then_recover(const std::string &label, const std::function<Hasher()> &make,
                       const Bytes &data, const Bytes &want)
{
    HalfReadable bad;
    ASSERT_NE(bad.m, nullptr);
    const Bytes small(33, 0x11);
    Bytes out;
    alarm(120);
    /* Failing at the first update, freed without an init: nothing of it
     * may reach a later context through the pool. */
    for (int round = 0; round < 10; round++) {
        Hasher h = make();
        ASSERT_TRUE(h.init()) << label << ": " << error_queue_text();
        EXPECT_FALSE(h.update(bad.in(), bad.len())) << label;
        EXPECT_TRUE(has_reasoned_error()) << label;
    }
    for (int round = 0; round < 10; round++) {
        Hasher h = make();
        ASSERT_TRUE(h.init() && h.update(data.data(), data.size()) && h.final(&out))
            << label << ": fresh context after failures: " << error_queue_text();
        EXPECT_EQ(tohex(out), tohex(want)) << label << ": fresh context after failures";
    }
    /* Failing mid-message: refused until init, then right. */
    Hasher h = make();
    for (int round = 0; round < 3; round++) {
        ASSERT_TRUE(h.init()) << label << ": " << error_queue_text();
        ASSERT_TRUE(h.update(small.data(), small.size())) << label << ": " << error_queue_text();
        EXPECT_FALSE(h.update(bad.in(), bad.len())) << label << ": update over an unreadable page";
        EXPECT_TRUE(has_reasoned_error()) << label;
        EXPECT_FALSE(h.update(data.data(), data.size()))
            << label << ": an update after a failed one succeeded (part of the message is lost)";
        EXPECT_TRUE(has_reasoned_error()) << label;
        EXPECT_FALSE(h.final(&out)) << label << ": a final after a failed update gave " << tohex(out);
        EXPECT_TRUE(has_reasoned_error()) << label;
        ASSERT_TRUE(h.init()) << label << ": init after a failure: " << error_queue_text();
        ASSERT_TRUE(h.update(data.data(), data.size()) && h.final(&out))
            << label << ": after init: " << error_queue_text();
        EXPECT_EQ(tohex(out), tohex(want)) << label << ": init after a failure";
    }
    alarm(0);
}

} // namespace

TEST_F(AfalgFailure, DigestRefusesUntilInit)
{
    LibCtx lib(make_config("offload_min = 0\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    const Bytes data = random_bytes(70000);
    for (const DigestAlg &a : kDigests) {
        MdPtr h(EVP_MD_fetch(lib.get(), a.name, "provider=hwaf,hwaf.backend=afalg"));
        MdPtr d(EVP_MD_fetch(lib.get(), a.name, "provider=default"));
        ASSERT_TRUE(h && d) << a.name << ": " << error_queue_text();
        Bytes want;
        ASSERT_TRUE(digest_oneshot(d.get(), data, &want));
        fail_then_recover(a.name, [&] {
            auto c = std::make_shared<MdCtxPtr>(EVP_MD_CTX_new());
            const EVP_MD *md = h.get();
            return Hasher{
                [c, md] { return EVP_DigestInit_ex2(c->get(), md, nullptr) == 1; },
                [c](const unsigned char *p, size_t n) { return EVP_DigestUpdate(c->get(), p, n) == 1; },
                [c](Bytes *o) {
                    unsigned char m[EVP_MAX_MD_SIZE];
                    unsigned int l = 0;
                    if (EVP_DigestFinal_ex(c->get(), m, &l) != 1)
                        return false;
                    o->assign(m, m + l);
                    return true;
                }};
        }, data, want);
    }
}

TEST_F(AfalgFailure, HmacRefusesUntilInit)
{
    LibCtx lib(make_config("offload_min = 0\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    const Bytes data = random_bytes(70000), key = random_bytes(32);
    EVP_MAC *hm = EVP_MAC_fetch(lib.get(), "HMAC", "provider=hwaf,hwaf.backend=afalg");
    EVP_MAC *dm = EVP_MAC_fetch(lib.get(), "HMAC", "provider=default");
    ASSERT_TRUE(hm && dm) << error_queue_text();
    for (const char *md : {"SHA1", "SHA2-256", "SHA2-512"}) {
        auto make = [key, md](EVP_MAC *mac) {
            std::shared_ptr<EVP_MAC_CTX> c(EVP_MAC_CTX_new(mac), EVP_MAC_CTX_free);
            return Hasher{
                [c, key, md] {
                    OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)md, 0),
                                      OSSL_PARAM_END};
                    return EVP_MAC_init(c.get(), key.data(), key.size(), p) == 1;
                },
                [c](const unsigned char *p, size_t n) { return EVP_MAC_update(c.get(), p, n) == 1; },
                [c](Bytes *o) {
                    unsigned char m[EVP_MAX_MD_SIZE];
                    size_t l = 0;
                    if (EVP_MAC_final(c.get(), m, &l, sizeof(m)) != 1)
                        return false;
                    o->assign(m, m + l);
                    return true;
                }};
        };
        Hasher ref = make(dm);
        Bytes want;
        ASSERT_TRUE(ref.init() && ref.update(data.data(), data.size()) && ref.final(&want));
        fail_then_recover(std::string("HMAC-") + md, [&] { return make(hm); }, data, want);
    }
    EVP_MAC_free(hm);
    EVP_MAC_free(dm);
}
