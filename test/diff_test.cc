/*
 * Differential tests: hwaf against OpenSSL's default provider over random
 * keys, IVs, lengths (0 to 64 KiB + 1) and random update splits, encrypt and
 * decrypt, padding on and off, in place, re-init with a new IV, and copies
 * taken mid-stream that then continue independently.  Every step's output
 * length, output bytes, "num" and "updated-iv" must be the same as the
 * default provider's.
 */
#include "hwaf_test.h"

#include <cstdlib>
#include <sstream>

using namespace hwaf_test;

namespace {

int iterations()
{
    const char *s = getenv("HWAF_TEST_ITERATIONS");
    int n = s != nullptr ? atoi(s) : 0;
    return n > 0 ? n : 12;
}

const size_t kLengths[] = {0, 1, 15, 16, 17, 31, 32, 33, 48, 100, 255, 256, 1000, 4096, 16384, 65536, 65537};

uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* A cipher run: init, updates of the given sizes, final; optionally a copy
 * taken after update copy_at that continues with in_b, and a re-init with a
 * new IV afterwards. */
struct Scenario {
    int enc = 1;
    Bytes key, iv;
    int padding = 1;
    Bytes in;
    std::vector<size_t> splits; /* sizes summing to in.size() */
    bool inplace = false;
    int copy_at = -1;           /* index of the update after which to copy */
    Bytes in_b;                 /* the copy's input for the rest */
    Bytes iv2, in2;             /* re-init with iv2 (same key), run in2 */
};

struct Transcript {
    std::vector<std::string> steps;
    Bytes out, out_b, out2;
};

std::string state(EVP_CIPHER_CTX *c)
{
    std::ostringstream s;
    unsigned char iv[16];
    s << " num=" << EVP_CIPHER_CTX_get_num(c);
    if (EVP_CIPHER_CTX_get_updated_iv(c, iv, sizeof(iv)))
        s << " iv=" << tohex(iv, sizeof(iv));
    else
        s << " iv=<error>";
    ERR_clear_error();
    return s.str();
}

/* Runs updates of sizes[from..] over in starting at offset off. */
void run_updates(EVP_CIPHER_CTX *c, const Bytes &in, size_t off, const std::vector<size_t> &sizes, size_t from,
                 bool inplace, Bytes *out, std::vector<std::string> *steps, const char *tag)
{
    Bytes buf = in; /* in-place works on a copy of the input */
    for (size_t i = from; i < sizes.size(); i++) {
        size_t n = sizes[i];
        size_t pos = out->size();
        out->resize(pos + n + 32);
        int outl = 0, ok;
        if (inplace) {
            ok = EVP_CipherUpdate(c, buf.data() + off, &outl, buf.data() + off, (int)n);
            if (ok && outl > 0)
                std::copy(buf.begin() + off, buf.begin() + off + outl, out->begin() + pos);
        } else {
            ok = EVP_CipherUpdate(c, out->data() + pos, &outl, in.data() + off, (int)n);
        }
        out->resize(pos + (ok ? (size_t)outl : 0));
        std::ostringstream s;
        s << tag << " update#" << i << " in=" << n << (ok ? " ok" : " FAIL") << " outl=" << outl << " h="
          << std::hex << fnv(out->data() + pos, ok ? (size_t)outl : 0) << std::dec << state(c);
        steps->push_back(s.str());
        ERR_clear_error();
        off += n;
    }
}

void run_final(EVP_CIPHER_CTX *c, Bytes *out, std::vector<std::string> *steps, const char *tag)
{
    size_t pos = out->size();
    out->resize(pos + 32);
    int outl = 0;
    int ok = EVP_CipherFinal_ex(c, out->data() + pos, &outl);
    out->resize(pos + (ok ? (size_t)outl : 0));
    std::ostringstream s;
    s << tag << " final" << (ok ? " ok" : " FAIL") << " outl=" << outl << state(c);
    steps->push_back(s.str());
    ERR_clear_error();
}

Transcript run_scenario(const EVP_CIPHER *cipher, const Scenario &sc)
{
    Transcript t;
    CtxPtr c(EVP_CIPHER_CTX_new());
    if (!EVP_CipherInit_ex2(c.get(), cipher, sc.key.data(), sc.iv.data(), sc.enc, nullptr)) {
        t.steps.push_back("init FAIL");
        ERR_clear_error();
        return t;
    }
    EVP_CIPHER_CTX_set_padding(c.get(), sc.padding);
    t.steps.push_back("init ok" + state(c.get()));
    if (sc.copy_at < 0) {
        run_updates(c.get(), sc.in, 0, sc.splits, 0, sc.inplace, &t.out, &t.steps, "A");
    } else {
        std::vector<size_t> head(sc.splits.begin(), sc.splits.begin() + sc.copy_at + 1);
        run_updates(c.get(), sc.in, 0, head, 0, sc.inplace, &t.out, &t.steps, "A");
        size_t off = 0;
        for (size_t n : head)
            off += n;
        CtxPtr c2(EVP_CIPHER_CTX_new());
        if (!EVP_CIPHER_CTX_copy(c2.get(), c.get())) {
            t.steps.push_back("copy FAIL");
            ERR_clear_error();
            return t;
        }
        t.steps.push_back("copy ok" + state(c2.get()));
        /* Interleave: the copy runs its rest first, then the original. */
        Bytes inb = sc.in;
        size_t rest = std::min(sc.in_b.size(), sc.in.size() - off);
        std::copy(sc.in_b.begin(), sc.in_b.begin() + rest, inb.begin() + off);
        t.out_b = t.out;
        run_updates(c2.get(), inb, off, sc.splits, sc.copy_at + 1, sc.inplace, &t.out_b, &t.steps, "B");
        run_updates(c.get(), sc.in, off, sc.splits, sc.copy_at + 1, sc.inplace, &t.out, &t.steps, "A");
        run_final(c2.get(), &t.out_b, &t.steps, "B");
    }
    run_final(c.get(), &t.out, &t.steps, "A");
    if (!sc.iv2.empty()) {
        if (!EVP_CipherInit_ex(c.get(), nullptr, nullptr, nullptr, sc.iv2.data(), -1)) {
            t.steps.push_back("reinit FAIL");
            ERR_clear_error();
            return t;
        }
        t.steps.push_back("reinit ok" + state(c.get()));
        std::vector<size_t> one;
        if (!sc.in2.empty())
            one.push_back(sc.in2.size());
        run_updates(c.get(), sc.in2, 0, one, 0, false, &t.out2, &t.steps, "R");
        run_final(c.get(), &t.out2, &t.steps, "R");
    }
    return t;
}

std::string first_diff(const Bytes &a, const Bytes &b)
{
    if (a == b)
        return "identical";
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i])
        i++;
    std::ostringstream s;
    s << "sizes " << a.size() << " vs " << b.size() << ", first difference at byte " << i;
    return s.str();
}

std::string describe(const Scenario &sc)
{
    std::ostringstream s;
    s << (sc.enc ? "encrypt" : "decrypt") << " len=" << sc.in.size() << " padding=" << sc.padding
      << (sc.inplace ? " in-place" : "") << " splits=";
    for (size_t n : sc.splits)
        s << n << ",";
    if (sc.copy_at >= 0)
        s << " copy after update#" << sc.copy_at;
    if (!sc.iv2.empty())
        s << " reinit len=" << sc.in2.size();
    return s.str();
}

class DiffCipher : public KernelTest, public ::testing::WithParamInterface<CipherAlg> {
protected:
    /* Random split of n into pieces; for XTS every piece is a whole data
     * unit of at least 16 bytes; for CBC with block_only, multiples of 16. */
    std::vector<size_t> split(size_t n, bool block_only)
    {
        const CipherAlg &a = GetParam();
        std::vector<size_t> s;
        if (n == 0) {
            if (a.mode != Mode::XTS && rng_() % 2)
                s.push_back(0);
            return s;
        }
        int pieces = 1 + (int)(rng_() % 6);
        size_t left = n;
        for (int i = 0; i < pieces - 1 && left > 0; i++) {
            size_t p;
            if (a.mode == Mode::XTS) {
                if (left < 32)
                    break;
                p = random_size(16, left - 16);
            } else {
                p = random_size(0, left);
                if (block_only)
                    p -= p % 16;
            }
            s.push_back(p);
            left -= p;
        }
        if (left > 0 || s.empty())
            s.push_back(left);
        return s;
    }

    Scenario make(int enc, size_t len, int padding, bool inplace, bool copy, bool reinit)
    {
        const CipherAlg &a = GetParam();
        Scenario sc;
        sc.enc = enc;
        sc.key = random_bytes(a.keylen);
        if (a.mode == Mode::XTS)
            while (std::equal(sc.key.begin(), sc.key.begin() + a.keylen / 2, sc.key.begin() + a.keylen / 2))
                sc.key = random_bytes(a.keylen);
        sc.iv = random_bytes(a.ivlen);
        if (a.mode == Mode::CTR && rng_() % 4 == 0) /* counter about to wrap */
            std::fill(sc.iv.begin() + 8, sc.iv.end(), 0xff);
        sc.padding = padding;
        sc.in = random_bytes(len);
        bool block_only = a.mode == Mode::CBC && (padding == 0 || inplace);
        sc.splits = split(len, block_only);
        sc.inplace = inplace;
        if (copy && sc.splits.size() >= 2) {
            sc.copy_at = (int)(rng_() % (sc.splits.size() - 1));
            sc.in_b = random_bytes(len);
        }
        if (reinit) {
            sc.iv2 = random_bytes(a.ivlen);
            size_t l2 = a.mode == Mode::XTS ? random_size(16, 300) : random_size(0, 300);
            if (a.mode == Mode::CBC && padding == 0)
                l2 -= l2 % 16;
            sc.in2 = random_bytes(l2);
        }
        return sc;
    }

    void compare(const EVP_CIPHER *h, const EVP_CIPHER *d, const Scenario &sc)
    {
        Transcript th = run_scenario(h, sc);
        Transcript td = run_scenario(d, sc);
        EXPECT_EQ(th.steps, td.steps) << describe(sc) << "\n(left: hwaf, right: default)";
        EXPECT_TRUE(th.out == td.out) << describe(sc) << ": output " << first_diff(th.out, td.out);
        EXPECT_TRUE(th.out_b == td.out_b) << describe(sc) << ": copy's output " << first_diff(th.out_b, td.out_b);
        EXPECT_TRUE(th.out2 == td.out2) << describe(sc) << ": output after re-init " << first_diff(th.out2, td.out2);
    }

    /* Lengths valid for this mode and padding setting. */
    bool valid_len(size_t len, int padding) const
    {
        const CipherAlg &a = GetParam();
        if (a.mode == Mode::XTS)
            return len >= 16;
        if (a.mode == Mode::CBC && padding == 0)
            return len % 16 == 0;
        return true;
    }
};

TEST_P(DiffCipher, FixedLengths)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    for (int padding : {1, 0}) {
        if (a.mode != Mode::CBC && padding == 0)
            continue;
        for (size_t len : kLengths) {
            if (!valid_len(len, padding))
                continue;
            for (int enc : {1, 0}) {
                Scenario sc = make(enc, len, padding, false, false, false);
                if (!enc && a.mode == Mode::CBC && padding) {
                    /* Decrypt a valid padded ciphertext. */
                    Bytes ct;
                    ASSERT_TRUE(cipher_oneshot(d.get(), 1, sc.key, sc.iv, sc.in, &ct));
                    sc.in = ct;
                    sc.splits = split(ct.size(), false);
                }
                compare(h.get(), d.get(), sc);
                if (HasFailure())
                    return;
            }
        }
    }
}

TEST_P(DiffCipher, RandomSplitsCopiesReinit)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    for (int i = 0; i < iterations() * 2; i++) {
        int padding = a.mode == Mode::CBC ? (int)(rng_() % 2) : 1;
        size_t len = random_size(0, i % 4 == 0 ? 70000 : 2000);
        if (a.mode == Mode::XTS && len < 16)
            len += 16;
        if (a.mode == Mode::CBC && padding == 0)
            len -= len % 16;
        int enc = (int)(rng_() % 2);
        Scenario sc = make(enc, len, padding, false, rng_() % 2, rng_() % 2);
        if (!enc && a.mode == Mode::CBC && padding) {
            Bytes ct;
            ASSERT_TRUE(cipher_oneshot(d.get(), 1, sc.key, sc.iv, sc.in, &ct));
            sc.in = ct;
            sc.splits = split(ct.size(), false);
            if (sc.copy_at >= (int)sc.splits.size() - 1)
                sc.copy_at = -1;
            sc.in_b = sc.in; /* padding must stay valid in the copy's stream */
        }
        compare(h.get(), d.get(), sc);
        if (HasFailure())
            return;
    }
}

TEST_P(DiffCipher, InPlace)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    for (int i = 0; i < iterations(); i++) {
        size_t len = random_size(a.mode == Mode::XTS ? 16 : 0, i % 3 == 0 ? 66000 : 3000);
        if (a.mode == Mode::CBC)
            len -= len % 16;
        Scenario sc = make((int)(rng_() % 2), len, a.mode == Mode::CBC ? 0 : 1, true, false, false);
        /* Reference: the default provider out of place. */
        Scenario ref = sc;
        ref.inplace = false;
        Transcript th = run_scenario(h.get(), sc);
        Transcript td = run_scenario(d.get(), ref);
        EXPECT_EQ(th.steps, td.steps) << describe(sc);
        EXPECT_TRUE(th.out == td.out) << describe(sc) << ": " << first_diff(th.out, td.out);
        if (HasFailure())
            return;
    }
}

/*
 * One context through a run of inits and updates, the key changed along the
 * way: a key-only init after updates (OpenSSL's CTR-DRBG re-keys so once per
 * RAND_bytes: the running IV or counter stays), an IV-only init, a new key
 * and IV in the other direction, and updates of any size the mode takes.
 * Every init's result, every output and the state after it as the default
 * provider's.
 */
TEST_P(DiffCipher, NewKeysInOneContext)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    auto new_key = [&]() {
        Bytes k = random_bytes(a.keylen);
        if (a.mode == Mode::XTS)
            k[0] ^= k[a.keylen / 2] ^ 0x5a; /* halves differ */
        return k;
    };
    for (int i = 0; i < iterations(); i++) {
        CtxPtr ch(EVP_CIPHER_CTX_new()), cd(EVP_CIPHER_CTX_new());
        Bytes key = new_key(), iv = random_bytes(a.ivlen);
        int enc = 1;
        ASSERT_TRUE(EVP_CipherInit_ex2(ch.get(), h.get(), key.data(), iv.data(), enc, nullptr))
            << error_queue_text();
        ASSERT_TRUE(EVP_CipherInit_ex2(cd.get(), d.get(), key.data(), iv.data(), enc, nullptr));
        EVP_CIPHER_CTX_set_padding(ch.get(), 0);
        EVP_CIPHER_CTX_set_padding(cd.get(), 0);
        std::ostringstream what;
        /* Every other run in software whatever the size: the software
         * session is what a new key keys again in place. */
        int offload = 0;
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &offload), OSSL_PARAM_construct_end()};
        if (i % 2 == 0) {
            ASSERT_TRUE(EVP_CIPHER_CTX_set_params(ch.get(), p)) << error_queue_text();
            what << "software:";
        }
        for (int step = 0; step < 16; step++) {
            int kind = (int)(rng_() % 4);
            const unsigned char *k = nullptr, *v = nullptr;
            if (kind == 0 || kind == 2) {
                key = new_key();
                k = key.data();
            }
            if (kind == 1 || kind == 2) {
                iv = random_bytes(a.ivlen);
                v = iv.data();
            }
            if (kind == 2)
                enc = (int)(rng_() % 2);
            what << " " << "KVBU"[kind] << enc;
            if (kind != 3) {
                int oh = EVP_CipherInit_ex(ch.get(), nullptr, nullptr, k, v, enc);
                int od = EVP_CipherInit_ex(cd.get(), nullptr, nullptr, k, v, enc);
                ASSERT_EQ(oh, od) << what.str() << "\n" << error_queue_text();
                ERR_clear_error();
            }
            size_t len = random_size(a.mode == Mode::XTS ? 16 : 0, step % 5 == 0 ? 3000 : 100);
            if (a.mode == Mode::CBC)
                len -= len % 16;
            what << ":" << len;
            Bytes in = random_bytes(len), oh(len + 16), od(len + 16);
            int lh = -1, ld = -1;
            int rh = EVP_CipherUpdate(ch.get(), oh.data(), &lh, in.data(), (int)len);
            int rd = EVP_CipherUpdate(cd.get(), od.data(), &ld, in.data(), (int)len);
            ASSERT_EQ(rh, rd) << what.str() << "\n" << error_queue_text();
            ASSERT_EQ(lh, ld) << what.str();
            oh.resize((size_t)std::max(lh, 0));
            od.resize((size_t)std::max(ld, 0));
            ASSERT_TRUE(oh == od) << what.str() << ": " << first_diff(oh, od);
            ASSERT_EQ(state(ch.get()), state(cd.get())) << what.str();
        }
    }
}

/* Encrypt with one provider, decrypt with the other, both ways. */
TEST_P(DiffCipher, CrossProviderRoundTrip)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    for (size_t len : kLengths) {
        if (a.mode == Mode::XTS && len < 16)
            continue;
        Bytes key = random_bytes(a.keylen), iv = random_bytes(a.ivlen), pt = random_bytes(len), ct, back;
        if (a.mode == Mode::XTS)
            key[0] ^= key[a.keylen / 2] ^ 0x5a; /* halves differ */
        ASSERT_TRUE(cipher_oneshot(h.get(), 1, key, iv, pt, &ct)) << "hwaf encrypt len " << len << "\n"
                                                                  << error_queue_text();
        ASSERT_TRUE(cipher_oneshot(d.get(), 0, key, iv, ct, &back)) << "default decrypt len " << len;
        EXPECT_TRUE(back == pt) << "hwaf -> default, len " << len;
        ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, pt, &ct));
        ASSERT_TRUE(cipher_oneshot(h.get(), 0, key, iv, ct, &back)) << "hwaf decrypt len " << len << "\n"
                                                                    << error_queue_text();
        EXPECT_TRUE(back == pt) << "default -> hwaf, len " << len;
    }
}

/* CTR keeps its position inside a block across calls: byte-by-byte updates
 * report num 1..15 and give the same keystream. */
std::vector<CipherAlg> ctr_only()
{
    std::vector<CipherAlg> v;
    for (const auto &c : kCiphers)
        if (c.mode == Mode::CTR)
            v.push_back(c);
    return v;
}

class DiffCtr : public DiffCipher {};

TEST_P(DiffCtr, PositionAcrossCalls)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    Scenario sc = make(1, 67, 1, false, false, false);
    sc.splits = {1, 1, 1, 5, 7, 1, 16, 3, 13, 19};
    Transcript th = run_scenario(h.get(), sc);
    Transcript td = run_scenario(d.get(), sc);
    EXPECT_EQ(th.steps, td.steps);
    EXPECT_TRUE(th.out == td.out) << first_diff(th.out, td.out);
    /* And num, read through the parameter API, is the position in the block. */
    CtxPtr c(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_CipherInit_ex2(c.get(), h.get(), sc.key.data(), sc.iv.data(), 1, nullptr));
    unsigned char out[16];
    int outl;
    ASSERT_TRUE(EVP_CipherUpdate(c.get(), out, &outl, sc.in.data(), 5));
    unsigned int num = 99;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_NUM, &num), OSSL_PARAM_construct_end()};
    ASSERT_TRUE(EVP_CIPHER_CTX_get_params(c.get(), p));
    EXPECT_EQ(num, 5u);
}

/* Does the default provider take EVP_CIPHER_CTX_set_num(num) on an AES-CTR
 * context in the middle of a block? */
bool reference_takes_num(const EVP_CIPHER *d, const CipherAlg &a, int num)
{
    CtxPtr c(EVP_CIPHER_CTX_new());
    Bytes key(a.keylen, 1), iv(a.ivlen, 2), buf(5, 3);
    int l = 0;
    if (!EVP_EncryptInit_ex2(c.get(), d, key.data(), iv.data(), nullptr)
        || !EVP_EncryptUpdate(c.get(), buf.data(), &l, buf.data(), 5))
        return false;
    const bool ok = EVP_CIPHER_CTX_set_num(c.get(), num) == 1;
    ERR_clear_error();
    return ok;
}

/*
 * An in-place update ending inside a block, then EVP_CIPHER_CTX_set_num.
 * hwaf takes what the default provider of the running libcrypto takes: 0
 * everywhere (the next byte starts a fresh keystream block), 1-15 only
 * where that provider does (OpenSSL 3.0.19; 3.0.22 and 3.5.9 bound num by
 * the block size they report, 1 for CTR, and refuse it).  Where num is
 * refused, hwaf refuses it with a reason, keeps its position and goes on
 * with the default provider's bytes.  Where num 1 is taken, the rewound
 * bytes get the same keystream again (the saved keystream must not depend
 * on the caller's buffer, which the update overwrote), compared with the
 * default provider rewound the same way.
 */
TEST_P(DiffCtr, InPlaceThenSetNum)
{
    const CipherAlg &a = GetParam();
    CipherPtr h, d;
    need_cipher(a.name, &h, &d);
    if (!h)
        return;
    const bool takes1 = reference_takes_num(d.get(), a, 1);
    ASSERT_TRUE(reference_takes_num(d.get(), a, 0)) << "the default provider refuses num 0";
    std::printf("[          ] the default provider %s num 1 on %s\n", takes1 ? "takes" : "refuses", a.name);
    Bytes key = random_bytes(a.keylen), iv = random_bytes(a.ivlen);
    for (int num : {0, 1})
        for (size_t len : {5, 37, 4093, 8197, 70003}) {
            Bytes in = random_bytes(len), more = random_bytes(16);
            std::vector<Bytes> outs;
            std::vector<int> ret, nums;
            for (const EVP_CIPHER *c : {h.get(), d.get()}) {
                CtxPtr ctx(EVP_CIPHER_CTX_new());
                Bytes buf = in, tail = more;
                int outl = 0;
                ASSERT_TRUE(EVP_EncryptInit_ex2(ctx.get(), c, key.data(), iv.data(), nullptr));
                ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), buf.data(), &outl, buf.data(), (int)len));
                ASSERT_EQ(EVP_CIPHER_CTX_get_num(ctx.get()), (int)(len % 16));
                ret.push_back(EVP_CIPHER_CTX_set_num(ctx.get(), num));
                if (ret.back() != 1 && c == h.get()) {
                    EXPECT_TRUE(has_reasoned_error()) << len << " bytes, num " << num;
                }
                ERR_clear_error();
                nums.push_back(EVP_CIPHER_CTX_get_num(ctx.get()));
                ASSERT_TRUE(EVP_EncryptUpdate(ctx.get(), tail.data(), &outl, tail.data(), 16));
                buf.insert(buf.end(), tail.begin(), tail.end());
                outs.push_back(buf);
            }
            const std::string what = std::string(a.name) + " " + std::to_string(len) + " bytes, num "
                                     + std::to_string(num);
            EXPECT_EQ(ret[0], ret[1]) << what << ": set_num's result";
            EXPECT_EQ(ret[0], num == 0 || takes1 ? 1 : 0) << what;
            EXPECT_EQ(nums[0], nums[1]) << what << ": num afterwards";
            EXPECT_TRUE(outs[0] == outs[1]) << what << ": " << first_diff(outs[0], outs[1]);
        }
}

INSTANTIATE_TEST_SUITE_P(Diff, DiffCipher, ::testing::ValuesIn(kCiphers),
                         [](const ::testing::TestParamInfo<CipherAlg> &i) { return test_name(i.param.name); });
INSTANTIATE_TEST_SUITE_P(Diff, DiffCtr, ::testing::ValuesIn(ctr_only()),
                         [](const ::testing::TestParamInfo<CipherAlg> &i) { return test_name(i.param.name); });

/* ---- digests ------------------------------------------------------------ */

class DiffDigest : public KernelTest, public ::testing::WithParamInterface<DigestAlg> {
protected:
    /* Updates of the given sizes, a copy after copy_at continuing with
     * in_b, then the context re-used after final.  Returns the digests. */
    std::vector<std::string> run(const EVP_MD *md, const Bytes &in, const std::vector<size_t> &splits, int copy_at,
                                 const Bytes &in_b)
    {
        std::vector<std::string> r;
        MdCtxPtr c(EVP_MD_CTX_new()), c2;
        if (!EVP_DigestInit_ex2(c.get(), md, nullptr))
            return {"init FAIL"};
        size_t off = 0;
        for (size_t i = 0; i < splits.size(); i++) {
            if (!EVP_DigestUpdate(c.get(), in.data() + off, splits[i]))
                r.push_back("update FAIL");
            off += splits[i];
            if ((int)i == copy_at) {
                c2.reset(EVP_MD_CTX_new());
                if (!EVP_MD_CTX_copy_ex(c2.get(), c.get()))
                    r.push_back("copy FAIL");
                /* The copy continues with different data. */
                if (!EVP_DigestUpdate(c2.get(), in_b.data(), in_b.size()))
                    r.push_back("copy update FAIL");
            }
        }
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        r.push_back(EVP_DigestFinal_ex(c.get(), out, &n) ? tohex(out, n) : "final FAIL");
        if (c2) {
            r.push_back(EVP_DigestFinal_ex(c2.get(), out, &n) ? tohex(out, n) : "copy final FAIL");
        }
        /* Re-use after final. */
        if (!EVP_DigestInit_ex2(c.get(), nullptr, nullptr) || !EVP_DigestUpdate(c.get(), in_b.data(), in_b.size()) ||
            !EVP_DigestFinal_ex(c.get(), out, &n))
            r.push_back("reuse FAIL");
        else
            r.push_back(tohex(out, n));
        ERR_clear_error();
        return r;
    }
};

TEST_P(DiffDigest, RandomSplitsAndCopies)
{
    const DigestAlg &a = GetParam();
    MdPtr h, d;
    need_md(a.name, &h, &d);
    if (!h)
        return;
    EXPECT_EQ((size_t)EVP_MD_get_size(h.get()), a.mdlen);
    std::vector<size_t> lens(std::begin(kLengths), std::end(kLengths));
    for (size_t extra : {55, 56, 63, 64, 65, 111, 112, 127, 128, 129})
        lens.push_back(extra); /* padding boundaries of 64- and 128-byte blocks */
    for (int i = 0; i < iterations() * 2; i++)
        lens.push_back(random_size(0, i % 4 == 0 ? 70000 : 3000));
    for (size_t len : lens) {
        Bytes in = random_bytes(len), in_b = random_bytes(random_size(0, 500));
        std::vector<size_t> splits;
        size_t left = len;
        int pieces = 1 + (int)(rng_() % 6);
        for (int k = 0; k < pieces - 1; k++) {
            size_t p = random_size(0, left);
            splits.push_back(p);
            left -= p;
        }
        splits.push_back(left);
        int copy_at = (int)(rng_() % (splits.size() + 1)) - 1;
        auto rh = run(h.get(), in, splits, copy_at, in_b);
        auto rd = run(d.get(), in, splits, copy_at, in_b);
        EXPECT_EQ(rh, rd) << a.name << " len " << len << " pieces " << splits.size() << " copy after #" << copy_at
                          << " (left: hwaf, right: default)";
        if (HasFailure())
            return;
    }
}

INSTANTIATE_TEST_SUITE_P(Diff, DiffDigest, ::testing::ValuesIn(kDigests),
                         [](const ::testing::TestParamInfo<DigestAlg> &i) { return test_name(i.param.name); });

} // namespace
