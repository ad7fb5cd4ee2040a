/*
 * Differential fuzzing: random sequences of EVP calls on hwaf and on the
 * default provider side by side, in one library context.  The input picks
 * an algorithm and then a list of steps:
 *   init / re-init (new key and IV, or a new IV on the same key; either
 *   direction), update (0 to 70000 bytes, in place or not), copy (carry on
 *   with the copy, or with the original), final, padding on/off, get the
 *   IV / updated IV / num, set num (CTR);
 *   digests: init, update (0 to 70000 bytes), copy, final.
 * Every step's return value, output length and bytes must be equal; any
 * divergence aborts (libFuzzer keeps the input).  The reference is not
 * handed sequences it cannot take (see xts_copy_broken).  Nothing here knows how
 * hwaf serves a call, so whatever path it takes (kernel or software) is
 * checked the same way.
 *
 * HWAF_MODULE_DIR: where hwaf.so is; HWAF_TEST_BACKEND=afalg|devcrypto adds
 * hwaf.backend=<b> to the fetches.
 */
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<unsigned char>;

struct Alg {
    const char *name;
    bool md;
    EVP_CIPHER *hc = nullptr, *dc = nullptr;
    EVP_MD *hm = nullptr, *dm = nullptr;
};
Alg g_algs[] = {
    {"AES-128-CBC", false}, {"AES-192-CBC", false}, {"AES-256-CBC", false},
    {"AES-128-CTR", false}, {"AES-192-CTR", false}, {"AES-256-CTR", false},
    {"AES-128-XTS", false}, {"AES-256-XTS", false},
    {"SHA1", true}, {"SHA2-224", true}, {"SHA2-256", true}, {"SHA2-384", true}, {"SHA2-512", true},
};
const size_t kAlgs = sizeof(g_algs) / sizeof(g_algs[0]);

/* Reads choices from the input; past its end, zeros. */
struct Input {
    const uint8_t *p;
    size_t n;
    bool done() const { return n == 0; }
    uint8_t byte()
    {
        if (n == 0)
            return 0;
        n--;
        return *p++;
    }
    uint32_t u16() { return byte() | (uint32_t)byte() << 8; }
};

/* Bulk data: a cheap generator seeded from the input. */
void fill(Bytes *b, size_t n, uint32_t seed)
{
    b->resize(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (*b)[i] = (unsigned char)x;
    }
}

std::string g_trace;
[[noreturn]] void diverge(const char *alg, const std::string &what)
{
    fprintf(stderr, "hwaf-fuzz: %s: hwaf and default differ: %s\nsteps: %s\n", alg, what.c_str(),
            g_trace.c_str());
    ERR_print_errors_fp(stderr);
    abort();
}

std::string hex(const unsigned char *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n && i < 64; i++) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return n > 64 ? s + "..." : s;
}

void same(const char *alg, const char *step, int rh, int rd, const unsigned char *oh, int lh,
          const unsigned char *od, int ld)
{
    if (rh != rd)
        diverge(alg, std::string(step) + " returns " + std::to_string(rh) + " (hwaf) vs " + std::to_string(rd));
    ERR_clear_error();
    if (rh != 1)
        return;
    if (lh != ld)
        diverge(alg, std::string(step) + " output length " + std::to_string(lh) + " vs " + std::to_string(ld));
    if (lh > 0 && memcmp(oh, od, (size_t)lh) != 0)
        diverge(alg, std::string(step) + " bytes " + hex(oh, (size_t)lh) + " vs " + hex(od, (size_t)ld));
}

/* A gettable octet or unsigned parameter on both; equal when both have it. */
void same_param(const char *alg, EVP_CIPHER_CTX *h, EVP_CIPHER_CTX *d, const char *key, bool octets)
{
    unsigned char bh[32], bd[32];
    unsigned int uh = 0, ud = 0;
    OSSL_PARAM ph[2], pd[2];
    if (octets) {
        ph[0] = OSSL_PARAM_construct_octet_string(key, bh, sizeof(bh));
        pd[0] = OSSL_PARAM_construct_octet_string(key, bd, sizeof(bd));
    } else {
        ph[0] = OSSL_PARAM_construct_uint(key, &uh);
        pd[0] = OSSL_PARAM_construct_uint(key, &ud);
    }
    ph[1] = pd[1] = OSSL_PARAM_construct_end();
    int rh = EVP_CIPHER_CTX_get_params(h, ph), rd = EVP_CIPHER_CTX_get_params(d, pd);
    ERR_clear_error();
    if (rh != rd)
        diverge(alg, std::string("get ") + key + " returns " + std::to_string(rh) + " vs " + std::to_string(rd));
    if (rh != 1 || !OSSL_PARAM_modified(&ph[0]) || !OSSL_PARAM_modified(&pd[0]))
        return;
    if (octets ? (ph[0].return_size != pd[0].return_size || memcmp(bh, bd, ph[0].return_size) != 0) : uh != ud)
        diverge(alg, std::string("get ") + key + " values differ");
}

size_t pick_len(Input &in)
{
    uint8_t k = in.byte();
    switch (k & 7) {
    case 0: return 0;
    case 1: return k >> 3;                       /* 0..31 */
    case 2: return 16 * (k >> 3);                /* whole blocks */
    case 3: return in.u16() % 4097;
    case 4: return 4096 * (1 + (k >> 3) % 17);   /* page multiples up to 68 KiB */
    case 5: return 65536 + (k >> 3);             /* just over 64 KiB */
    default: return in.byte();
    }
}

/*
 * OpenSSL 3.0's default provider cannot copy an XTS context that was
 * re-initialised with an IV only (EVP_CipherInit_ex2 with a NULL key) since
 * its last key: updates on the copy fail, and once the original is freed
 * they call through a null function pointer inside CRYPTO_xts128_encrypt
 * (init with a key, init with an IV only, EVP_CIPHER_CTX_copy, free the
 * original, update: SEGV at pc 0, default provider alone, no hwaf loaded).
 * The harness therefore takes no copy of an XTS context in that state
 * (for both providers; every other copy is still compared).
 */
bool xts_copy_broken(bool xts, bool ivonly) { return xts && ivonly; }

void run_cipher(Alg &a, Input &in)
{
    EVP_CIPHER_CTX *h = EVP_CIPHER_CTX_new(), *d = EVP_CIPHER_CTX_new();
    const int keylen = EVP_CIPHER_get_key_length(a.dc);
    const bool xts = strstr(a.name, "XTS") != nullptr, ctr = strstr(a.name, "CTR") != nullptr;
    const bool cbc = strstr(a.name, "CBC") != nullptr;
    bool fresh = false;
    Bytes key, iv, data, oh, od;
    bool inited = false, finished = false;
    bool ivonly = false; /* the last successful init had an IV but no key */
    int steps = 0;

    while (!in.done() && steps++ < 64) {
        uint8_t op = in.byte() % 9;
        char t[64];
        snprintf(t, sizeof(t), "%u ", op);
        g_trace += t;
        if (!inited && op != 0)
            op = 0;
        switch (op) {
        case 0: { /* init: new key + IV, or only a new IV */
            uint8_t f = in.byte();
            int enc = f & 1;
            bool newkey = !inited || (f & 2);
            if (newkey) {
                fill(&key, (size_t)keylen, in.u16());
                if (xts && (f & 4))
                    memcpy(key.data() + keylen / 2, key.data(), (size_t)keylen / 2); /* equal halves */
            }
            fill(&iv, 16, in.u16());
            int rh = EVP_CipherInit_ex2(h, a.hc, newkey ? key.data() : nullptr, iv.data(), enc, nullptr);
            int rd = EVP_CipherInit_ex2(d, a.dc, newkey ? key.data() : nullptr, iv.data(), enc, nullptr);
            same(a.name, "init", rh, rd, nullptr, 0, nullptr, 0);
            if (rh == 1)
                ivonly = !newkey;
            inited = rh == 1;
            finished = false;
            fresh = true;
            break;
        }
        case 1: case 2: case 3: { /* update */
            if (finished)
                break;
            size_t n = pick_len(in);
            /* CBC in place only with nothing buffered (first update after
             * init): with a partial block held back, in == out is not
             * in-place work at the provider, and OpenSSL leaves the result
             * undefined (its legacy path refuses it as overlapping). */
            bool inplace = (in.byte() & 1) && (!cbc || fresh);
            fresh = false;
            fill(&data, n, in.u16());
            size_t room = n + 32;
            oh.assign(room, 0);
            od.assign(room, 0);
            int lh = 0, ld = 0, rh, rd;
            if (inplace) {
                std::copy(data.begin(), data.end(), oh.begin());
                std::copy(data.begin(), data.end(), od.begin());
                rh = EVP_CipherUpdate(h, oh.data(), &lh, oh.data(), (int)n);
                rd = EVP_CipherUpdate(d, od.data(), &ld, od.data(), (int)n);
            } else {
                rh = EVP_CipherUpdate(h, oh.data(), &lh, data.data(), (int)n);
                rd = EVP_CipherUpdate(d, od.data(), &ld, data.data(), (int)n);
            }
            same(a.name, "update", rh, rd, oh.data(), lh, od.data(), ld);
            if (rh != 1)
                finished = true; /* a failed update ends the stream for both */
            break;
        }
        case 4: { /* final */
            if (finished)
                break;
            oh.assign(32, 0);
            od.assign(32, 0);
            int lh = 0, ld = 0;
            int rh = EVP_CipherFinal_ex(h, oh.data(), &lh), rd = EVP_CipherFinal_ex(d, od.data(), &ld);
            same(a.name, "final", rh, rd, oh.data(), lh, od.data(), ld);
            finished = true;
            break;
        }
        case 5: { /* copy: go on with the copy or with the original */
            if (xts_copy_broken(xts, ivonly))
                break;
            EVP_CIPHER_CTX *ch = EVP_CIPHER_CTX_new(), *cd = EVP_CIPHER_CTX_new();
            int rh = EVP_CIPHER_CTX_copy(ch, h), rd = EVP_CIPHER_CTX_copy(cd, d);
            same(a.name, "copy", rh, rd, nullptr, 0, nullptr, 0);
            if (in.byte() & 1) {
                std::swap(ch, h);
                std::swap(cd, d);
            }
            EVP_CIPHER_CTX_free(ch);
            EVP_CIPHER_CTX_free(cd);
            break;
        }
        case 6: { /* padding */
            int pad = in.byte() & 1;
            EVP_CIPHER_CTX_set_padding(h, pad);
            EVP_CIPHER_CTX_set_padding(d, pad);
            ERR_clear_error();
            break;
        }
        case 7: /* parameters */
            same_param(a.name, h, d, OSSL_CIPHER_PARAM_IV, true);
            same_param(a.name, h, d, OSSL_CIPHER_PARAM_UPDATED_IV, true);
            same_param(a.name, h, d, OSSL_CIPHER_PARAM_NUM, false);
            break;
        case 8: { /* set num (CTR: position inside the keystream block) */
            unsigned int num = in.byte() % 16;
            if (!ctr || finished)
                break;
            /* Both take 0; 1-15 where this OpenSSL's default provider
             * does (3.0.19), and hwaf refuses them where it does not. */
            int rh = EVP_CIPHER_CTX_set_num(h, num), rd = EVP_CIPHER_CTX_set_num(d, num);
            same(a.name, "set num", rh, rd, nullptr, 0, nullptr, 0);
            ERR_clear_error();
            break;
        }
        }
    }
    EVP_CIPHER_CTX_free(h);
    EVP_CIPHER_CTX_free(d);
}

void run_md(Alg &a, Input &in)
{
    EVP_MD_CTX *h = EVP_MD_CTX_new(), *d = EVP_MD_CTX_new();
    Bytes data;
    bool inited = false;
    int steps = 0;

    while (!in.done() && steps++ < 64) {
        uint8_t op = in.byte() % 6;
        char t[16];
        snprintf(t, sizeof(t), "%u ", op);
        g_trace += t;
        if (!inited && op != 0)
            op = 0;
        switch (op) {
        case 0: {
            int rh = EVP_DigestInit_ex2(h, a.hm, nullptr), rd = EVP_DigestInit_ex2(d, a.dm, nullptr);
            same(a.name, "init", rh, rd, nullptr, 0, nullptr, 0);
            inited = rh == 1;
            break;
        }
        case 1: case 2: case 3: {
            size_t n = pick_len(in);
            fill(&data, n, in.u16());
            int rh = EVP_DigestUpdate(h, data.data(), n), rd = EVP_DigestUpdate(d, data.data(), n);
            same(a.name, "update", rh, rd, nullptr, 0, nullptr, 0);
            break;
        }
        case 4: {
            EVP_MD_CTX *ch = EVP_MD_CTX_new(), *cd = EVP_MD_CTX_new();
            int rh = EVP_MD_CTX_copy_ex(ch, h), rd = EVP_MD_CTX_copy_ex(cd, d);
            same(a.name, "copy", rh, rd, nullptr, 0, nullptr, 0);
            if (in.byte() & 1) {
                std::swap(ch, h);
                std::swap(cd, d);
            }
            EVP_MD_CTX_free(ch);
            EVP_MD_CTX_free(cd);
            break;
        }
        case 5: {
            unsigned char mh[EVP_MAX_MD_SIZE], md[EVP_MAX_MD_SIZE];
            unsigned int lh = 0, ld = 0;
            int rh = EVP_DigestFinal_ex(h, mh, &lh), rd = EVP_DigestFinal_ex(d, md, &ld);
            same(a.name, "final", rh, rd, mh, (int)lh, md, (int)ld);
            inited = false; /* only an init may follow a final */
            break;
        }
        }
    }
    EVP_MD_CTX_free(h);
    EVP_MD_CTX_free(d);
}

OSSL_LIB_CTX *g_lib;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    const char *dir = getenv("HWAF_MODULE_DIR");
    const char *be = getenv("HWAF_TEST_BACKEND");
    std::string q = "provider=hwaf";
    if (be != nullptr && *be != '\0')
        q += std::string(",hwaf.backend=") + be;
    g_lib = OSSL_LIB_CTX_new();
    if (dir != nullptr)
        OSSL_PROVIDER_set_default_search_path(g_lib, dir);
    if (OSSL_PROVIDER_load(g_lib, "hwaf") == nullptr || OSSL_PROVIDER_load(g_lib, "default") == nullptr) {
        fprintf(stderr, "hwaf-fuzz: cannot load hwaf (HWAF_MODULE_DIR=%s) and default\n", dir ? dir : "");
        ERR_print_errors_fp(stderr);
        exit(1);
    }
    for (Alg &a : g_algs) {
        bool ok;
        if (a.md) {
            a.hm = EVP_MD_fetch(g_lib, a.name, q.c_str());
            a.dm = EVP_MD_fetch(g_lib, a.name, "provider=default");
            ok = a.hm != nullptr && a.dm != nullptr;
        } else {
            a.hc = EVP_CIPHER_fetch(g_lib, a.name, q.c_str());
            a.dc = EVP_CIPHER_fetch(g_lib, a.name, "provider=default");
            ok = a.hc != nullptr && a.dc != nullptr;
        }
        if (!ok) {
            /* Every algorithm must be there: a missing one is not fuzzed
             * around but reported. */
            fprintf(stderr, "hwaf-fuzz: %s not offered by hwaf (%s)\n", a.name, q.c_str());
            ERR_print_errors_fp(stderr);
            exit(1);
        }
    }
    fprintf(stderr, "hwaf-fuzz: %zu algorithms, hwaf fetched with '%s'\n", kAlgs, q.c_str());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Input in{data, size};
    Alg &a = g_algs[in.byte() % kAlgs];
    g_trace.clear();
    if (a.md)
        run_md(a, in);
    else
        run_cipher(a, in);
    ERR_clear_error();
    return 0;
}
