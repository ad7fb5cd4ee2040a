/*
 * Shared harness of the hwaf test suite: a fresh library context per test
 * with the hwaf and default providers loaded, fetch helpers that prove which
 * provider served a fetch, the algorithm tables, and a description of the
 * environment the binary runs in (host, guest kernel, virtio-crypto,
 * crypto_user).
 */
#ifndef HWAF_TEST_H
#define HWAF_TEST_H

#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <hwaf/hwaf.h>

#include <sys/resource.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hwaf_test {

using Bytes = std::vector<unsigned char>;

Bytes unhex(const std::string &hex);
std::string tohex(const unsigned char *p, size_t n);
inline std::string tohex(const Bytes &b) { return tohex(b.data(), b.size()); }

/* ---- environment ------------------------------------------------------ */

struct Env {
    bool ci = false;            /* CI=true */
    bool guest = false;         /* HWAF_GUEST=1 */
    std::string kernel;         /* HWAF_GUEST_KERNEL */
    std::string arch;           /* HWAF_GUEST_ARCH: amd64, arm64, armhf ("" off the guest) */
    bool virtio = false;        /* HWAF_GUEST_VIRTIO_CRYPTO=1 */
    bool crypto_user_env = false; /* HWAF_GUEST_CRYPTO_USER=1 */
    std::string backend;        /* HWAF_TEST_BACKEND: "", "afalg", "devcrypto" */
};
const Env &env();

/* Independent kernel probes (no provider involved). */
bool kernel_has_afalg();                 /* socket(AF_ALG) works */
bool kernel_has_crypto_user();           /* NETLINK_CRYPTO socket opens */
bool devcrypto_present();                /* /dev/crypto opens */
/* What serves /dev/crypto, asked of the device itself (the subsystem of
 * its character device in sysfs): "module" for cryptodev-linux (a misc
 * device), "cuse" for test/cuse's server, "" when there is none, else the
 * subsystem's name. */
std::string devcrypto_device();
/* Bind an AF_ALG socket of type ("skcipher"/"hash") to name; 0 or -errno. */
int afalg_bind(const char *type, const char *name);

/* The property query used for every hwaf fetch: "provider=hwaf" plus
 * ",hwaf.backend=X" when HWAF_TEST_BACKEND selects a backend, plus extra. */
std::string hwaf_query(const std::string &extra = "");

const char *module_dir();      /* where hwaf.so is */
std::string module_path();     /* module_dir() + "/hwaf.so" */
std::string tmp_dir();         /* writable scratch directory */
/* Write text to a fresh file in tmp_dir(); returns its path. */
std::string write_temp_file(const std::string &stem, const std::string &text);

/* Write an openssl.cnf that loads hwaf (with extra lines in its section)
 * and the default provider; returns its path. */
std::string make_config(const std::string &hwaf_section_extra);

/* ---- errors ----------------------------------------------------------- */

/* Every entry of the error queue, one per line, "lib:reason:data". */
std::string error_queue_text();
/* Assert the queue is not empty and every entry has a non-empty reason
 * string; the queue is cleared afterwards. */
::testing::AssertionResult has_reasoned_error();

/* ---- descriptors ------------------------------------------------------ */

/* Descriptors open in this process; with list, one "fd -> target" line each. */
int count_fds(std::string *list = nullptr);

/* The soft descriptor limit lowered to n for the life of the object
 * (ok: it was set). */
struct FdLimit {
    struct rlimit old {};
    bool ok = false;
    explicit FdLimit(rlim_t n)
    {
        struct rlimit r;
        if (getrlimit(RLIMIT_NOFILE, &old) != 0)
            return;
        r = old;
        r.rlim_cur = n;
        ok = setrlimit(RLIMIT_NOFILE, &r) == 0;
    }
    ~FdLimit()
    {
        if (ok)
            setrlimit(RLIMIT_NOFILE, &old);
    }
    FdLimit(const FdLimit &) = delete;
    FdLimit &operator=(const FdLimit &) = delete;
};

/* ---- RAII ------------------------------------------------------------- */

struct CipherFree { void operator()(EVP_CIPHER *c) const { EVP_CIPHER_free(c); } };
struct CtxFree { void operator()(EVP_CIPHER_CTX *c) const { EVP_CIPHER_CTX_free(c); } };
struct MdFree { void operator()(EVP_MD *m) const { EVP_MD_free(m); } };
struct MdCtxFree { void operator()(EVP_MD_CTX *m) const { EVP_MD_CTX_free(m); } };
using CipherPtr = std::unique_ptr<EVP_CIPHER, CipherFree>;
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;
using MdPtr = std::unique_ptr<EVP_MD, MdFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;
struct MacFree { void operator()(EVP_MAC *m) const { EVP_MAC_free(m); } };
struct MacCtxFree { void operator()(EVP_MAC_CTX *m) const { EVP_MAC_CTX_free(m); } };
using MacPtr = std::unique_ptr<EVP_MAC, MacFree>;
using MacCtxPtr = std::unique_ptr<EVP_MAC_CTX, MacCtxFree>;

/* A fresh library context with hwaf and default loaded (from the build's
 * module directory), or configured from an openssl.cnf file. */
class LibCtx {
public:
    LibCtx();                                 /* load both providers */
    /* OSSL_LIB_CTX_load_config(path); the file is removed afterwards. */
    explicit LibCtx(const std::string &config_path);
    ~LibCtx();
    LibCtx(const LibCtx &) = delete;
    LibCtx &operator=(const LibCtx &) = delete;

    OSSL_LIB_CTX *get() const { return ctx_; }
    bool hwaf_loaded() const { return hwaf_available_; }
    bool config_ok() const { return config_ok_; }
    const std::string &load_errors() const { return errors_; }

    /* Provider parameters (utf8 / uint64); false when not gettable. */
    bool prov_param(const char *name, std::string *out) const;
    bool prov_param(const char *name, uint64_t *out) const;

private:
    OSSL_LIB_CTX *ctx_ = nullptr;
    OSSL_PROVIDER *hwaf_ = nullptr, *dflt_ = nullptr;
    bool hwaf_available_ = false;
    bool config_ok_ = true;
    std::string errors_;
};

/* hwaf's work counters: software, and the kernel's (both backends). */
struct Counts {
    uint64_t sw_ops = 0, sw_bytes = 0, k_ops = 0, k_bytes = 0;
};
Counts counts(const LibCtx &lib);
/* The hwaf-request-max line of one implementation over backend ("" when
 * none). */
std::string request_line(const LibCtx &lib, const std::string &name, const std::string &backend);

/* ---- algorithms ------------------------------------------------------- */

enum class Mode { CBC, CTR, XTS };
struct CipherAlg {
    const char *name;     /* OpenSSL name */
    const char *kname;    /* kernel name */
    Mode mode;
    size_t keylen, ivlen;
};
struct DigestAlg {
    const char *name;
    const char *kname;
    size_t mdlen;
};
extern const std::vector<CipherAlg> kCiphers;
extern const std::vector<DigestAlg> kDigests;
std::string test_name(const char *alg); /* "AES-128-CBC" -> "AES_128_CBC" */
void PrintTo(const CipherAlg &a, std::ostream *os);
void PrintTo(const DigestAlg &a, std::ostream *os);

/* One offered implementation, from the provider's hwaf-algorithms list. */
struct ImplLine {
    std::string name, backend, driver;
    bool hw = false;
};
std::vector<ImplLine> parse_algorithms(const std::string &text);

/* ---- fixtures --------------------------------------------------------- */

/* Any test: a fresh library context. */
class HwafTest : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;

    /* Fetch from hwaf (query hwaf_query(extra)); asserts (non-fatally)
     * that hwaf served it when it succeeds. */
    CipherPtr hwaf_cipher(const char *name, const std::string &extra = "");
    MdPtr hwaf_md(const char *name, const std::string &extra = "");
    CipherPtr default_cipher(const char *name);
    MdPtr default_md(const char *name);

    std::unique_ptr<LibCtx> lib_;
    std::mt19937_64 rng_;
    Bytes random_bytes(size_t n);
    size_t random_size(size_t lo, size_t hi);
};

/* Tests that need a kernel backend.  Without one: a failure in CI or in the
 * guest, otherwise a skip (reported by ctest as "Skipped", never a pass). */
class KernelTest : public HwafTest {
protected:
    void SetUp() override;
    /* The hwaf implementation of an algorithm, and the default provider's.
     * When hwaf does not offer it: a failure if the kernel has the
     * algorithm (independent probe) or if we are in the guest or CI, where
     * every algorithm must be there; a skip otherwise.  The caller returns
     * when *h is empty. */
    void need_cipher(const char *name, CipherPtr *h, CipherPtr *d, const std::string &extra = "");
    void need_md(const char *name, MdPtr *h, MdPtr *d, const std::string &extra = "");
};

/* Does the kernel (probed directly, not through hwaf) have this algorithm
 * for the backend under test? */
bool kernel_has_alg(const char *opensslname);

/* Context parameter of a hwaf context (utf8 / int). */
std::string ctx_param_str(EVP_CIPHER_CTX *c, const char *name);
std::string md_ctx_param_str(EVP_MD_CTX *c, const char *name);
int ctx_param_int(EVP_CIPHER_CTX *c, const char *name, int dflt = -1);
int md_ctx_param_int(EVP_MD_CTX *c, const char *name, int dflt = -1);

/* One-shot helpers (return false on any failure). */
bool cipher_oneshot(const EVP_CIPHER *c, int enc, const Bytes &key, const Bytes &iv,
                    const Bytes &in, Bytes *out, int padding = 1);
bool digest_oneshot(const EVP_MD *m, const Bytes &in, Bytes *out);

} // namespace hwaf_test

#endif
