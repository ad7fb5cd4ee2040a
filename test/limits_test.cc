/*
 * Limits where 32-bit arithmetic breaks: each against the default provider,
 * in one update, on every architecture (the same tests run on x86-64, arm64
 * and armhf).
 *
 *   Limits.CtrCounterWraps      the 128-bit CTR counter carries out of its
 *                               low 32 bits, out of its low 64 bits and
 *                               wraps to zero, each inside one update and
 *                               past the points where hwaf splits a request
 *   Limits.XtsLargestDataUnit   an AES-128-XTS data unit of 2^20 blocks (the
 *                               largest IEEE 1619 and OpenSSL allow) and of
 *                               2^20 - 1 blocks plus a stolen tail; one more
 *                               block is refused, as by the default provider
 *   Limits.DigestOver2GiB       one EVP_DigestUpdate of more than 2^31 bytes
 *                               (2^31 + 2^20 + 13) where the address space
 *                               holds it: the buffer is one 1 MiB page set
 *                               mapped again and again, so it costs 1 MiB of
 *                               memory.  A 32-bit process maps the largest
 *                               such buffer it can (at least 1 GiB) and says
 *                               how large it was.  (A cipher update takes an
 *                               int length: 2^31 - 1 bytes at most, through
 *                               EVP itself, not hwaf.)
 *   Limits.LargeGcmMessagesAndHashUpdates
 *                               GCM messages of 16 KiB to 1 MiB and SHA2-256 /
 *                               HMAC-SHA2-256 updates of 256 KiB to 4 MiB,
 *                               against the kernel's option memory (32-bit:
 *                               optmem_max 10240)
 */
#include "hwaf_test.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

using namespace hwaf_test;

namespace {

class Limits : public KernelTest {
protected:
    /* One update of in through c (encrypt), or false. */
    static bool one_update(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &in, Bytes *out)
    {
        CtxPtr ctx(EVP_CIPHER_CTX_new());
        out->assign(in.size() + 32, 0);
        int l1 = 0, l2 = 0;
        if (!EVP_EncryptInit_ex2(ctx.get(), c, key.data(), iv.data(), nullptr) ||
            !EVP_EncryptUpdate(ctx.get(), out->data(), &l1, in.data(), (int)in.size()) ||
            !EVP_EncryptFinal_ex(ctx.get(), out->data() + l1, &l2))
            return false;
        out->resize((size_t)(l1 + l2));
        return true;
    }
};

/* A read-only buffer of len bytes whose every 1 MiB is the same pages:
 * a memfd of 1 MiB mapped over and over.  Empty when it cannot be mapped. */
struct RepeatedBuffer {
    static constexpr size_t kPiece = 1 << 20;
    unsigned char *p = nullptr;
    size_t len = 0, mapped = 0;
    Bytes piece;

    RepeatedBuffer(size_t want, const Bytes &one_piece) : piece(one_piece)
    {
        int fd = memfd_create("hwaf-limits", 0);
        if (fd < 0)
            return;
        if (write(fd, piece.data(), kPiece) != (ssize_t)kPiece) {
            close(fd);
            return;
        }
        size_t pieces = (want + kPiece - 1) / kPiece;
        void *base = mmap(nullptr, pieces * kPiece, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) {
            close(fd);
            return;
        }
        for (size_t i = 0; i < pieces; i++) {
            void *at = (unsigned char *)base + i * kPiece;
            if (mmap(at, kPiece, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
                munmap(base, pieces * kPiece);
                close(fd);
                return;
            }
        }
        close(fd);
        p = (unsigned char *)base;
        mapped = pieces * kPiece;
        len = want;
    }
    ~RepeatedBuffer()
    {
        if (p != nullptr)
            munmap(p, mapped);
    }
};

} // namespace

TEST_F(Limits, CtrCounterWraps)
{
    CipherPtr h, d;
    need_cipher("AES-128-CTR", &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes(16);
    /* 1.25 MiB + 7 bytes: several kernel requests and not whole blocks. */
    Bytes in = random_bytes((1280 << 10) + 7);
    const size_t blocks = in.size() / 16;
    struct Case {
        const char *what;
        int low_bytes;   /* counter bytes (from the end) set just below the wrap */
        size_t before;   /* blocks before the carry */
    };
    const Case cases[] = {
        {"low 32 bits carry after 1 block", 4, 1},
        {"low 32 bits carry after 70000 blocks", 4, 70000},
        {"low 64 bits carry after 4097 blocks", 8, 4097},
        {"low 64 bits carry after 38000 blocks", 8, 38000},
        {"all 128 bits wrap after 5 blocks", 16, 5},
        {"all 128 bits wrap before the last block", 16, blocks - 1},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        ASSERT_LT(c.before, blocks);
        Bytes iv = random_bytes(16);
        /* The low bytes hold 2^(8*low_bytes) - before: the carry out of
         * them comes after exactly `before` blocks. */
        uint64_t v = (uint64_t)0 - (uint64_t)c.before; /* 2^64 - before */
        for (int i = 0; i < c.low_bytes; i++) {
            unsigned char b = i < 8 ? (unsigned char)(v >> (8 * i)) : 0xff;
            iv[15 - i] = b;
        }
        if (c.low_bytes < 16)
            iv[15 - c.low_bytes] = 0x7e; /* the carry into the next byte shows */
        Bytes got, want;
        ASSERT_TRUE(one_update(d.get(), key, iv, in, &want));
        ASSERT_TRUE(one_update(h.get(), key, iv, in, &got)) << error_queue_text();
        ASSERT_EQ(got.size(), want.size());
        EXPECT_TRUE(got == want) << "hwaf differs from the default provider; iv " << tohex(iv);
    }
}

TEST_F(Limits, XtsLargestDataUnit)
{
    /* One key size: the data-unit arithmetic does not depend on it, and
     * 16 MiB units cost ~20 s of TCG time each way. */
    for (const char *name : {"AES-128-XTS"}) {
        SCOPED_TRACE(name);
        CipherPtr h, d;
        need_cipher(name, &h, &d);
        if (!h)
            return;
        const size_t klen = (size_t)EVP_CIPHER_get_key_length(d.get());
        Bytes key = random_bytes(klen);
        while (std::equal(key.begin(), key.begin() + klen / 2, key.begin() + klen / 2))
            key = random_bytes(klen);
        Bytes iv = random_bytes(16);
        const size_t max = (size_t)16 << 20; /* 2^20 blocks */
        for (size_t len : {max, max - 16 - 9}) {
            SCOPED_TRACE("data unit of " + std::to_string(len) + " bytes");
            Bytes in = random_bytes(len), got, want;
            ASSERT_TRUE(one_update(d.get(), key, iv, in, &want));
            ASSERT_TRUE(one_update(h.get(), key, iv, in, &got)) << error_queue_text();
            ASSERT_EQ(got.size(), want.size());
            EXPECT_TRUE(got == want) << "hwaf differs from the default provider";
            Bytes back;
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            back.assign(len, 0);
            int l = 0;
            ASSERT_TRUE(EVP_DecryptInit_ex2(ctx.get(), h.get(), key.data(), iv.data(), nullptr));
            ASSERT_TRUE(EVP_DecryptUpdate(ctx.get(), back.data(), &l, got.data(), (int)got.size()));
            EXPECT_TRUE(back == in) << "decryption does not give the plaintext back";
        }
        /* One block more than a data unit may have: refused by both. */
        Bytes in = random_bytes(max + 16), out(max + 48);
        for (const EVP_CIPHER *c : {d.get(), h.get()}) {
            CtxPtr ctx(EVP_CIPHER_CTX_new());
            int l = 0;
            ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c, key.data(), iv.data(), nullptr));
            EXPECT_FALSE(EVP_EncryptUpdate(ctx.get(), out.data(), &l, in.data(), (int)in.size()))
                << OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c)) << ": a data unit of 2^20 + 1 blocks was accepted";
            ERR_clear_error();
        }
    }
}

TEST_F(Limits, DigestOver2GiB)
{
    MdPtr h, d;
    need_md("SHA1", &h, &d);
    if (!h)
        return;
    size_t want = sizeof(size_t) > 4 ? ((size_t)1 << 31) + ((size_t)1 << 20) + 13 : (size_t)3 << 30;
    const Bytes piece = random_bytes(RepeatedBuffer::kPiece);
    std::unique_ptr<RepeatedBuffer> buf;
    /* A 32-bit process: the largest that fits, down to 1 GiB. */
    for (;;) {
        buf.reset(new RepeatedBuffer(want, piece));
        if (buf->p != nullptr || want <= ((size_t)1 << 30))
            break;
        want -= (size_t)256 << 20;
    }
    ASSERT_NE(buf->p, nullptr) << "cannot map a buffer of " << want << " bytes";
    if (sizeof(size_t) > 4) {
        ASSERT_GT(buf->len, (size_t)1 << 31);
    }
    fprintf(stderr, "hwaf-tests: one digest update of %zu bytes (%s)\n", buf->len,
            buf->len > ((size_t)1 << 31) ? "over 2^31" : "the largest this address space maps");
    /* The mapping repeats: its first and last pieces are the same bytes. */
    ASSERT_EQ(memcmp(buf->p, buf->p + buf->mapped - RepeatedBuffer::kPiece, RepeatedBuffer::kPiece), 0);
    Bytes got, ref;
    for (const EVP_MD *m : {d.get(), h.get()}) {
        MdCtxPtr ctx(EVP_MD_CTX_new());
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        ASSERT_TRUE(EVP_DigestInit_ex2(ctx.get(), m, nullptr));
        ASSERT_TRUE(EVP_DigestUpdate(ctx.get(), buf->p, buf->len)) << error_queue_text();
        ASSERT_TRUE(EVP_DigestFinal_ex(ctx.get(), md, &n)) << error_queue_text();
        (m == d.get() ? ref : got).assign(md, md + n);
    }
    EXPECT_EQ(tohex(got), tohex(ref)) << "hwaf differs from the default provider over " << buf->len << " bytes";
}

namespace {

/* One AES-GCM message (AAD, then the data in one update), encrypted or,
 * with a tag given, decrypted and checked; false on any failure.  params
 * go to the init (hwaf-offload). */
bool gcm_message(const EVP_CIPHER *c, int enc, const Bytes &key, const Bytes &iv, const Bytes &aad,
                 const Bytes &in, Bytes *out, Bytes *tag, const OSSL_PARAM *params)
{
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    int l = 0, l2 = 0;
    out->assign(in.size(), 0);
    if (!EVP_CipherInit_ex2(ctx.get(), c, key.data(), iv.data(), enc, params) ||
        !EVP_CipherUpdate(ctx.get(), nullptr, &l, aad.data(), (int)aad.size()) ||
        !EVP_CipherUpdate(ctx.get(), out->data(), &l, in.data(), (int)in.size()))
        return false;
    if (!enc && !EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, (int)tag->size(), tag->data()))
        return false;
    if (!EVP_CipherFinal_ex(ctx.get(), out->data() + l, &l2) || (size_t)(l + l2) != in.size())
        return false;
    if (enc) {
        tag->assign(16, 0);
        if (!EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag->data()))
            return false;
    }
    return true;
}

} // namespace

/*
 * Large requests against the kernel's option memory (net.core.optmem_max,
 * 10240 bytes on a 32-bit kernel, 20480 on a 64-bit one), on the paths
 * other than the cipher requests hwaf already bounds by it:
 *  - AES-128-GCM messages of 16 KiB to 1 MiB in one update.  hwaf's own
 *    mode (every message to the kernel, one larger than the kernel takes
 *    to software) gives the default provider's ciphertext and tag, and
 *    decrypts them.  A context forced to the kernel gives the same bytes or
 *    refuses with the reason `aead message larger than one kernel request`,
 *    and once refused every larger message is refused too: no size fails
 *    in the kernel (an ENOMEM) below the limit hwaf believes in.
 *  - SHA2-256 and HMAC-SHA2-256 single updates of 256 KiB to 4 MiB.
 */
TEST_F(Limits, LargeGcmMessagesAndHashUpdates)
{
    CipherPtr h, d;
    need_cipher("AES-128-GCM", &h, &d);
    if (!h)
        return;
    Bytes key = random_bytes(16), aad = random_bytes(13);
    int force = 1;
    OSSL_PARAM forced[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
    size_t largest_forced = 0;
    bool refused = false;
    for (size_t len : {(size_t)16 << 10, (size_t)32 << 10, (size_t)64 << 10, (size_t)128 << 10, (size_t)160 << 10, (size_t)192 << 10,
                       (size_t)256 << 10, (size_t)320 << 10, (size_t)352 << 10, (size_t)384 << 10,
                       (size_t)448 << 10, (size_t)1 << 20}) {
        SCOPED_TRACE("GCM message of " + std::to_string(len) + " bytes");
        Bytes iv = random_bytes(12), in = random_bytes(len + 5), want, wtag, got, gtag, back;
        ASSERT_TRUE(gcm_message(d.get(), 1, key, iv, aad, in, &want, &wtag, nullptr));
        ASSERT_TRUE(gcm_message(h.get(), 1, key, iv, aad, in, &got, &gtag, nullptr)) << error_queue_text();
        EXPECT_TRUE(got == want) << "ciphertext differs from the default provider's";
        EXPECT_EQ(tohex(gtag), tohex(wtag));
        ASSERT_TRUE(gcm_message(h.get(), 0, key, iv, aad, want, &back, &wtag, nullptr)) << error_queue_text();
        EXPECT_TRUE(back == in);
        ERR_clear_error();
        if (gcm_message(h.get(), 1, key, iv, aad, in, &got, &gtag, forced)) {
            EXPECT_FALSE(refused) << "forced to the kernel: taken after a smaller message was refused";
            EXPECT_TRUE(got == want && gtag == wtag) << "forced to the kernel: wrong bytes";
            largest_forced = len + 5;
        } else {
            std::string e = error_queue_text();
            EXPECT_NE(e.find("aead message larger than one kernel request"), std::string::npos)
                << "forced to the kernel, failed for another reason: " << e;
            refused = true;
        }
        ERR_clear_error();
    }
    fprintf(stderr, "hwaf-tests: largest GCM message forced to the kernel here: %zu bytes of data + 13 of AAD\n",
            largest_forced);
    /* AF_ALG takes 236 KiB or more (docs/design.md, "Sizes"); a /dev/crypto
     * device has its own, smaller limit (the CUSE device's 65,520 bytes). */
    if (env().backend != "devcrypto") {
        EXPECT_GE(largest_forced, (size_t)(128 << 10) + 5) << "not even a 128 KiB message went through AF_ALG";
    }

    MdPtr mh, md;
    need_md("SHA2-256", &mh, &md);
    if (!mh)
        return;
    MacPtr hm(EVP_MAC_fetch(lib_->get(), "HMAC", hwaf_query().c_str()));
    MacPtr dm(EVP_MAC_fetch(lib_->get(), "HMAC", "provider=default"));
    ASSERT_TRUE(hm && dm) << error_queue_text();
    Bytes mkey = random_bytes(32);
    for (size_t len : {(size_t)256 << 10, (size_t)1 << 20, ((size_t)4 << 20) + 5}) {
        SCOPED_TRACE("one update of " + std::to_string(len) + " bytes");
        Bytes in = random_bytes(len), got, want;
        ASSERT_TRUE(digest_oneshot(md.get(), in, &want));
        ASSERT_TRUE(digest_oneshot(mh.get(), in, &got)) << error_queue_text();
        EXPECT_EQ(tohex(got), tohex(want)) << "SHA2-256";
        std::string macs[2];
        for (int i = 0; i < 2; i++) {
            MacCtxPtr c(EVP_MAC_CTX_new(i == 0 ? dm.get() : hm.get()));
            OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA2-256", 0),
                              OSSL_PARAM_construct_end()};
            unsigned char out[EVP_MAX_MD_SIZE];
            size_t l = 0;
            ASSERT_TRUE(c && EVP_MAC_init(c.get(), mkey.data(), mkey.size(), p) &&
                        EVP_MAC_update(c.get(), in.data(), in.size()) && EVP_MAC_final(c.get(), out, &l, sizeof(out)))
                << (i == 0 ? "default" : "hwaf") << " HMAC: " << error_queue_text();
            macs[i] = tohex(out, l);
        }
        EXPECT_EQ(macs[1], macs[0]) << "HMAC-SHA2-256";
    }
}
