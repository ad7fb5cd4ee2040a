/*
 * The harness: environment, providers, fetch helpers, the fd-leak listener
 * and main().
 */
#include "hwaf_test.h"

#include <openssl/bio.h>
#include <openssl/rand.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/if_alg.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef NETLINK_CRYPTO
#define NETLINK_CRYPTO 21
#endif

namespace hwaf_test {

/* ---- hex ---------------------------------------------------------------- */

Bytes unhex(const std::string &hex)
{
    Bytes out;
    int hi = -1;
    for (char ch : hex) {
        int v;
        if (ch >= '0' && ch <= '9') v = ch - '0';
        else if (ch >= 'a' && ch <= 'f') v = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') v = ch - 'A' + 10;
        else continue; /* spaces and line breaks */
        if (hi < 0) {
            hi = v;
        } else {
            out.push_back((unsigned char)(hi << 4 | v));
            hi = -1;
        }
    }
    if (hi >= 0)
        ADD_FAILURE() << "odd number of hex digits in test vector";
    return out;
}

std::string tohex(const unsigned char *p, size_t n)
{
    static const char d[] = "0123456789abcdef";
    std::string s;
    s.reserve(n * 2);
    for (size_t i = 0; i < n; i++) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

/* ---- environment -------------------------------------------------------- */

static bool env_true(const char *name)
{
    const char *v = getenv(name);
    return v != nullptr && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"));
}

const Env &env()
{
    static Env e = [] {
        Env x;
        x.ci = env_true("CI");
        x.guest = env_true("HWAF_GUEST");
        if (const char *k = getenv("HWAF_GUEST_KERNEL")) x.kernel = k;
        if (const char *a = getenv("HWAF_GUEST_ARCH")) x.arch = a;
        x.virtio = env_true("HWAF_GUEST_VIRTIO_CRYPTO");
        x.crypto_user_env = env_true("HWAF_GUEST_CRYPTO_USER");
        if (const char *b = getenv("HWAF_TEST_BACKEND")) x.backend = b;
        return x;
    }();
    return e;
}

bool kernel_has_afalg()
{
    int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

bool kernel_has_crypto_user()
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_CRYPTO);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

bool devcrypto_present()
{
    int fd = open("/dev/crypto", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

std::string request_line(const LibCtx &lib, const std::string &name, const std::string &backend)
{
    std::string text;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_REQUEST_MAX, &text)) << HWAF_PARAM_REQUEST_MAX;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(name + " " + backend + " ", 0) == 0)
            return line;
    return "";
}

std::string devcrypto_device()
{
    struct stat st;
    if (stat("/dev/crypto", &st) != 0 || !S_ISCHR(st.st_mode))
        return "";
    char link[96], target[PATH_MAX];
    snprintf(link, sizeof(link), "/sys/dev/char/%u:%u/subsystem", major(st.st_rdev), minor(st.st_rdev));
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return "unknown";
    target[n] = '\0';
    std::string sub = strrchr(target, '/') != nullptr ? strrchr(target, '/') + 1 : target;
    return sub == "misc" ? "module" : sub;
}

int afalg_bind(const char *type, const char *name)
{
    struct sockaddr_alg sa;
    memset(&sa, 0, sizeof(sa));
    sa.salg_family = AF_ALG;
    snprintf((char *)sa.salg_type, sizeof(sa.salg_type), "%s", type);
    snprintf((char *)sa.salg_name, sizeof(sa.salg_name), "%s", name);
    int fd = socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

std::string hwaf_query(const std::string &extra)
{
    std::string q = "provider=" HWAF_PROVIDER_NAME;
    if (!env().backend.empty())
        q += "," HWAF_PROP_BACKEND "=" + env().backend;
    if (!extra.empty())
        q += "," + extra;
    return q;
}

const char *module_dir()
{
    const char *d = getenv("HWAF_MODULE_DIR");
    return d != nullptr && *d ? d : HWAF_TEST_MODULE_DIR;
}

std::string module_path() { return std::string(module_dir()) + "/hwaf.so"; }

std::string tmp_dir()
{
    const char *d = getenv("HWAF_TEST_TMPDIR");
    return d != nullptr && *d ? d : HWAF_TEST_TMPDIR_DEFAULT;
}

std::string write_temp_file(const std::string &stem, const std::string &text)
{
    std::string tmpl = tmp_dir() + "/" + stem + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd < 0) {
        ADD_FAILURE() << "mkstemp in " << tmp_dir() << ": " << strerror(errno);
        return "";
    }
    size_t off = 0;
    while (off < text.size()) {
        ssize_t n = write(fd, text.data() + off, text.size() - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(fd);
    return std::string(buf.data());
}

std::string make_config(const std::string &extra)
{
    std::ostringstream s;
    s << "openssl_conf = openssl_init\n\n"
      << "[openssl_init]\nproviders = provider_sect\n\n"
      << "[provider_sect]\nhwaf = hwaf_sect\ndefault = default_sect\n\n"
      << "[default_sect]\nactivate = 1\n\n"
      << "[hwaf_sect]\nmodule = " << module_path() << "\n"
      << extra << (extra.empty() || extra.back() == '\n' ? "" : "\n")
      << "activate = 1\n";
    return write_temp_file("openssl-cnf", s.str());
}

/* ---- errors ------------------------------------------------------------- */

std::string error_queue_text()
{
    BIO *b = BIO_new(BIO_s_mem());
    ERR_print_errors(b); /* also empties the queue */
    char *p = nullptr;
    long n = BIO_get_mem_data(b, &p);
    std::string s(p != nullptr ? p : "", n > 0 ? (size_t)n : 0);
    BIO_free(b);
    return s;
}

::testing::AssertionResult has_reasoned_error()
{
    if (ERR_peek_error() == 0)
        return ::testing::AssertionFailure() << "failed without an OpenSSL error";
    std::string bad;
    const char *file, *func, *data;
    int line, flags;
    unsigned long e;
    std::ostringstream all;
    while ((e = ERR_get_error_all(&file, &line, &func, &data, &flags)) != 0) {
        const char *lib = ERR_lib_error_string(e);
        const char *reason = ERR_reason_error_string(e);
        all << "  " << (lib ? lib : "?") << ": " << (reason ? reason : "(no reason string)")
            << " [" << (func ? func : "") << "] " << ((flags & ERR_TXT_STRING) && data ? data : "")
            << "\n";
        if (reason == nullptr || *reason == '\0')
            bad += "error 0x" + tohex((const unsigned char *)&e, sizeof(e)) + " has no reason string; ";
    }
    if (!bad.empty())
        return ::testing::AssertionFailure() << bad << "\n" << all.str();
    return ::testing::AssertionSuccess() << all.str();
}

/* ---- library context ---------------------------------------------------- */

LibCtx::LibCtx()
{
    ctx_ = OSSL_LIB_CTX_new();
    if (ctx_ == nullptr)
        return;
    OSSL_PROVIDER_set_default_search_path(ctx_, module_dir());
    hwaf_ = OSSL_PROVIDER_load(ctx_, HWAF_PROVIDER_NAME);
    hwaf_available_ = hwaf_ != nullptr;
    if (hwaf_ == nullptr)
        errors_ = error_queue_text();
    dflt_ = OSSL_PROVIDER_load(ctx_, "default");
}

LibCtx::LibCtx(const std::string &config)
{
    ctx_ = OSSL_LIB_CTX_new();
    if (ctx_ == nullptr)
        return;
    OSSL_PROVIDER_set_default_search_path(ctx_, module_dir());
    /* libcrypto 3.0 drops the error queue of a provider that fails to
     * activate from a config file; what the provider writes to stderr is
     * all a user sees then, so capture that too. */
    fflush(stderr);
    std::string cap = tmp_dir() + "/stderr-XXXXXX";
    std::vector<char> capbuf(cap.begin(), cap.end());
    capbuf.push_back('\0');
    int capfd = mkstemp(capbuf.data());
    int saved = capfd >= 0 ? dup(2) : -1;
    if (saved >= 0)
        dup2(capfd, 2);
    config_ok_ = OSSL_LIB_CTX_load_config(ctx_, config.c_str()) == 1;
    errors_ = error_queue_text();
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        std::ifstream f(capbuf.data());
        std::stringstream ss;
        ss << f.rdbuf();
        errors_ += ss.str();
    }
    if (capfd >= 0) {
        close(capfd);
        unlink(capbuf.data());
    }
    unlink(config.c_str());
    /* Configured providers are owned by the context; only look. */
    hwaf_available_ = OSSL_PROVIDER_available(ctx_, HWAF_PROVIDER_NAME) == 1;
    ERR_clear_error();
}

LibCtx::~LibCtx()
{
    if (hwaf_ != nullptr)
        OSSL_PROVIDER_unload(hwaf_);
    if (dflt_ != nullptr)
        OSSL_PROVIDER_unload(dflt_);
    OSSL_LIB_CTX_free(ctx_);
}

static int find_hwaf(OSSL_PROVIDER *p, void *arg)
{
    if (strcmp(OSSL_PROVIDER_get0_name(p), HWAF_PROVIDER_NAME) == 0) {
        *(OSSL_PROVIDER **)arg = p;
        return 0;
    }
    return 1;
}

bool LibCtx::prov_param(const char *name, std::string *out) const
{
    OSSL_PROVIDER *p = nullptr;
    OSSL_PROVIDER_do_all(ctx_, find_hwaf, &p);
    if (p == nullptr)
        return false;
    char *v = nullptr;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_ptr(name, &v, 0), OSSL_PARAM_construct_end()};
    if (!OSSL_PROVIDER_get_params(p, params) || !OSSL_PARAM_modified(params) || v == nullptr) {
        ERR_clear_error();
        return false;
    }
    *out = v;
    return true;
}

bool LibCtx::prov_param(const char *name, uint64_t *out) const
{
    OSSL_PROVIDER *p = nullptr;
    OSSL_PROVIDER_do_all(ctx_, find_hwaf, &p);
    if (p == nullptr)
        return false;
    uint64_t v = 0;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_uint64(name, &v), OSSL_PARAM_construct_end()};
    if (!OSSL_PROVIDER_get_params(p, params) || !OSSL_PARAM_modified(params)) {
        ERR_clear_error();
        return false;
    }
    *out = v;
    return true;
}

/* ---- algorithms --------------------------------------------------------- */

const std::vector<CipherAlg> kCiphers = {
    {"AES-128-CBC", "cbc(aes)", Mode::CBC, 16, 16},
    {"AES-192-CBC", "cbc(aes)", Mode::CBC, 24, 16},
    {"AES-256-CBC", "cbc(aes)", Mode::CBC, 32, 16},
    {"AES-128-CTR", "ctr(aes)", Mode::CTR, 16, 16},
    {"AES-192-CTR", "ctr(aes)", Mode::CTR, 24, 16},
    {"AES-256-CTR", "ctr(aes)", Mode::CTR, 32, 16},
    {"AES-128-XTS", "xts(aes)", Mode::XTS, 32, 16},
    {"AES-256-XTS", "xts(aes)", Mode::XTS, 64, 16},
};

const std::vector<DigestAlg> kDigests = {
    {"SHA1", "sha1", 20},
    {"SHA2-224", "sha224", 28},
    {"SHA2-256", "sha256", 32},
    {"SHA2-384", "sha384", 48},
    {"SHA2-512", "sha512", 64},
};

void PrintTo(const CipherAlg &a, std::ostream *os) { *os << a.name; }
void PrintTo(const DigestAlg &a, std::ostream *os) { *os << a.name; }

std::string test_name(const char *alg)
{
    std::string s(alg);
    for (char &c : s)
        if (c == '-')
            c = '_';
    return s;
}

std::vector<ImplLine> parse_algorithms(const std::string &text)
{
    std::vector<ImplLine> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty())
            continue;
        std::istringstream ls(line);
        ImplLine l;
        std::string hw;
        ls >> l.name >> l.backend >> l.driver >> hw;
        if (hw != "hw=yes" && hw != "hw=no") {
            ADD_FAILURE() << "malformed hwaf-algorithms line: '" << line << "'";
            continue;
        }
        l.hw = hw == "hw=yes";
        out.push_back(l);
    }
    return out;
}

/* ---- fixtures ----------------------------------------------------------- */

static uint64_t g_seed;

void HwafTest::SetUp()
{
    rng_.seed(g_seed ^ std::hash<std::string>()(
                           ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ERR_clear_error();
    lib_ = std::make_unique<LibCtx>();
    ASSERT_NE(lib_->get(), nullptr);
    ASSERT_TRUE(lib_->hwaf_loaded())
        << "cannot load hwaf from " << module_dir() << "\n" << lib_->load_errors();
}

void HwafTest::TearDown()
{
    lib_.reset();
    ERR_clear_error();
}

void KernelTest::SetUp()
{
    HwafTest::SetUp();
    if (HasFatalFailure())
        return;
    bool have;
    std::string what;
    if (env().backend == "devcrypto") {
        have = devcrypto_present();
        what = "/dev/crypto";
    } else {
        have = kernel_has_afalg();
        what = "AF_ALG";
    }
    if (!have) {
        if (env().ci || env().guest)
            FAIL() << "no kernel backend here: " << what << "; in CI and in the guest this is a failure";
        GTEST_SKIP() << "no kernel backend on this host: " << what
                     << " (run in the guest: ctest -L kernel)";
    }
    std::string status;
    const char *sp = env().backend == "devcrypto" ? HWAF_PARAM_DEVCRYPTO_STATUS : HWAF_PARAM_AFALG_STATUS;
    ASSERT_TRUE(lib_->prov_param(sp, &status)) << sp << " is not gettable";
    /* "usable" (optionally followed by detail such as ", 13 of 13 ..."). */
    ASSERT_EQ(status.compare(0, 6, "usable"), 0) << "the kernel has " << what << " but the provider says: " << status;
}

bool kernel_has_alg(const char *name)
{
    if (env().backend == "devcrypto")
        return devcrypto_present();
    for (const auto &c : kCiphers)
        if (strcmp(c.name, name) == 0)
            return afalg_bind("skcipher", c.kname) == 0;
    for (const auto &d : kDigests)
        if (strcmp(d.name, name) == 0)
            return afalg_bind("hash", d.kname) == 0;
    return false;
}

void KernelTest::need_cipher(const char *name, CipherPtr *h, CipherPtr *d, const std::string &extra)
{
    *d = default_cipher(name);
    *h = hwaf_cipher(name, extra);
    if (*h && *d)
        return;
    std::string errs = error_queue_text();
    h->reset();
    if (kernel_has_alg(name) || env().guest || env().ci)
        FAIL() << name << " is not offered by hwaf (query '" << hwaf_query(extra) << "'); kernel has it: "
               << (kernel_has_alg(name) ? "yes" : "no") << "\n" << errs;
    GTEST_SKIP() << "the kernel here has no " << name;
}

void KernelTest::need_md(const char *name, MdPtr *h, MdPtr *d, const std::string &extra)
{
    *d = default_md(name);
    *h = hwaf_md(name, extra);
    if (*h && *d)
        return;
    std::string errs = error_queue_text();
    h->reset();
    if (kernel_has_alg(name) || env().guest || env().ci)
        FAIL() << name << " is not offered by hwaf (query '" << hwaf_query(extra) << "'); kernel has it: "
               << (kernel_has_alg(name) ? "yes" : "no") << "\n" << errs;
    GTEST_SKIP() << "the kernel here has no " << name;
}

Bytes HwafTest::random_bytes(size_t n)
{
    Bytes b(n);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)rng_();
    return b;
}

size_t HwafTest::random_size(size_t lo, size_t hi)
{
    return lo + (size_t)(rng_() % (hi - lo + 1));
}

CipherPtr HwafTest::hwaf_cipher(const char *name, const std::string &extra)
{
    std::string q = hwaf_query(extra);
    CipherPtr c(EVP_CIPHER_fetch(lib_->get(), name, q.c_str()));
    if (c) {
        const char *pn = OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c.get()));
        EXPECT_STREQ(pn, HWAF_PROVIDER_NAME) << name << " with '" << q << "' served by " << pn;
    }
    return c;
}

MdPtr HwafTest::hwaf_md(const char *name, const std::string &extra)
{
    std::string q = hwaf_query(extra);
    MdPtr m(EVP_MD_fetch(lib_->get(), name, q.c_str()));
    if (m) {
        const char *pn = OSSL_PROVIDER_get0_name(EVP_MD_get0_provider(m.get()));
        EXPECT_STREQ(pn, HWAF_PROVIDER_NAME) << name << " with '" << q << "' served by " << pn;
    }
    return m;
}

CipherPtr HwafTest::default_cipher(const char *name)
{
    CipherPtr c(EVP_CIPHER_fetch(lib_->get(), name, "provider=default"));
    EXPECT_TRUE(c) << "default provider lacks " << name;
    return c;
}

MdPtr HwafTest::default_md(const char *name)
{
    MdPtr m(EVP_MD_fetch(lib_->get(), name, "provider=default"));
    EXPECT_TRUE(m) << "default provider lacks " << name;
    return m;
}

/* ---- context parameters ------------------------------------------------- */

std::string ctx_param_str(EVP_CIPHER_CTX *c, const char *name)
{
    char buf[256] = "";
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(name, buf, sizeof(buf)), OSSL_PARAM_construct_end()};
    if (!EVP_CIPHER_CTX_get_params(c, p) || !OSSL_PARAM_modified(p)) {
        ERR_clear_error();
        return "<not gettable>";
    }
    return buf;
}

std::string md_ctx_param_str(EVP_MD_CTX *c, const char *name)
{
    char buf[256] = "";
    OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(name, buf, sizeof(buf)), OSSL_PARAM_construct_end()};
    if (!EVP_MD_CTX_get_params(c, p) || !OSSL_PARAM_modified(p)) {
        ERR_clear_error();
        return "<not gettable>";
    }
    return buf;
}

Counts counts(const LibCtx &lib)
{
    Counts c;
    uint64_t o = 0, b = 0;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_SOFTWARE_OPS, &c.sw_ops)) << HWAF_PARAM_SOFTWARE_OPS;
    EXPECT_TRUE(lib.prov_param(HWAF_PARAM_SOFTWARE_BYTES, &c.sw_bytes)) << HWAF_PARAM_SOFTWARE_BYTES;
    for (auto pr : {std::make_pair(HWAF_PARAM_AFALG_OPS, HWAF_PARAM_AFALG_BYTES),
                    std::make_pair(HWAF_PARAM_DEVCRYPTO_OPS, HWAF_PARAM_DEVCRYPTO_BYTES)}) {
        EXPECT_TRUE(lib.prov_param(pr.first, &o));
        EXPECT_TRUE(lib.prov_param(pr.second, &b));
        c.k_ops += o;
        c.k_bytes += b;
    }
    return c;
}

int ctx_param_int(EVP_CIPHER_CTX *c, const char *name, int dflt)
{
    int v = dflt;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(name, &v), OSSL_PARAM_construct_end()};
    if (!EVP_CIPHER_CTX_get_params(c, p) || !OSSL_PARAM_modified(p)) {
        ERR_clear_error();
        return dflt;
    }
    return v;
}

int md_ctx_param_int(EVP_MD_CTX *c, const char *name, int dflt)
{
    int v = dflt;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(name, &v), OSSL_PARAM_construct_end()};
    if (!EVP_MD_CTX_get_params(c, p) || !OSSL_PARAM_modified(p)) {
        ERR_clear_error();
        return dflt;
    }
    return v;
}

bool cipher_oneshot(const EVP_CIPHER *c, int enc, const Bytes &key, const Bytes &iv,
                    const Bytes &in, Bytes *out, int padding)
{
    CtxPtr ctx(EVP_CIPHER_CTX_new());
    out->assign(in.size() + 32, 0);
    int l1 = 0, l2 = 0;
    if (!EVP_CipherInit_ex2(ctx.get(), c, key.data(), iv.empty() ? nullptr : iv.data(), enc, nullptr))
        return false;
    if (!EVP_CIPHER_CTX_set_padding(ctx.get(), padding))
        return false;
    if (!EVP_CipherUpdate(ctx.get(), out->data(), &l1, in.data(), (int)in.size()))
        return false;
    if (!EVP_CipherFinal_ex(ctx.get(), out->data() + l1, &l2))
        return false;
    out->resize((size_t)(l1 + l2));
    return true;
}

bool digest_oneshot(const EVP_MD *m, const Bytes &in, Bytes *out)
{
    MdCtxPtr ctx(EVP_MD_CTX_new());
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_DigestInit_ex2(ctx.get(), m, nullptr) || !EVP_DigestUpdate(ctx.get(), in.data(), in.size()) ||
        !EVP_DigestFinal_ex(ctx.get(), md, &n))
        return false;
    out->assign(md, md + n);
    return true;
}

/* ---- fd leak listener --------------------------------------------------- */

int count_fds(std::string *list)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == nullptr)
        return -1;
    int self = dirfd(d);
    struct dirent *de;
    while ((de = readdir(d)) != nullptr) {
        if (de->d_name[0] == '.')
            continue;
        int fd = atoi(de->d_name);
        if (fd == self)
            continue;
        n++;
        if (list != nullptr) {
            char target[512];
            std::string p = std::string("/proc/self/fd/") + de->d_name;
            ssize_t l = readlink(p.c_str(), target, sizeof(target) - 1);
            target[l > 0 ? l : 0] = '\0';
            *list += std::string(de->d_name) + " -> " + target + "\n";
        }
    }
    closedir(d);
    return n;
}

class FdLeakListener : public ::testing::EmptyTestEventListener {
    int before_ = 0;
    std::string before_list_;

    void OnTestStart(const ::testing::TestInfo &) override
    {
        before_list_.clear();
        before_ = count_fds(&before_list_);
    }
    /* Runs after the fixture is destroyed and before the result printer
     * (listeners' OnTestEnd run in reverse order), so a failure added here
     * fails the test itself. */
    void OnTestEnd(const ::testing::TestInfo &) override
    {
        std::string after_list;
        int after = count_fds(&after_list);
        if (after > before_)
            ADD_FAILURE() << "file descriptor leak: " << before_ << " open before the test, " << after
                          << " after\nbefore:\n" << before_list_ << "after:\n" << after_list;
    }
};

/* Process-wide state that libcrypto creates once (RNG, error strings) is
 * set up before the first test, so the fd count measures hwaf alone. */
class WarmUp : public ::testing::Environment {
    void SetUp() override
    {
        unsigned char b[16];
        RAND_bytes(b, sizeof(b));
        /* ProbeCache.DISABLED_Load: hwaf's first load in the process (the
         * probe) is the one under test. */
        if (getenv("HWAF_TEST_PROBE_CAL") != nullptr)
            return;
        LibCtx lc;
        EVP_CIPHER *c = EVP_CIPHER_fetch(lc.get(), "AES-128-CBC", "provider=default");
        EVP_CIPHER_free(c);
        ERR_clear_error();
    }
};

static std::string auto_filter()
{
    bool kernel = kernel_has_afalg() || devcrypto_present();
    if (!kernel)
        return "Host*";
    std::string f = "-Host*";
    if (!env().guest)
        f += ":Guest*";
    else if (env().virtio)
        f += ":GuestCpuOnly*";
    else
        f += ":GuestVirtio*";
    f += kernel_has_crypto_user() ? ":NoCryptoUser*" : ":Kcapi*";
    return f;
}

} // namespace hwaf_test

/*
 * libcrypto 3.x gives every provider object it creates an error library
 * number of its own, and an error code has 8 bits for it: once a process has
 * created about 128 provider objects (each test's library context loads hwaf
 * and default), the numbers wrap and provider errors lose their reason
 * strings or take another library's.  Real applications load a handful; the
 * suite loads hundreds.  So the selected tests run in several processes, one
 * after another, each creating fewer than that (googletest's sharding, one
 * shard per child).  HWAF_TEST_SHARDS sets their number (1: one process).
 * Each child executes the program anew with the shard in its environment:
 * googletest 1.18 takes GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX only when
 * the program starts (older ones at RUN_ALL_TESTS).
 */
static const int TESTS_PER_PROCESS = 40;
static std::vector<char *> g_argv; /* main's arguments before InitGoogleTest */

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    fprintf(stderr, "hwaf-tests: a shard ended by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 1;
}

/* Returns -1 in a child (run the tests there), else the combined exit code. */
static int run_in_shards()
{
    if (getenv("GTEST_TOTAL_SHARDS") != nullptr || ::testing::GTEST_FLAG(list_tests))
        return -1;
    const char *e = getenv("HWAF_TEST_SHARDS");
    int total = ::testing::UnitTest::GetInstance()->total_test_count();
    int n = e != nullptr ? atoi(e) : (total + TESTS_PER_PROCESS - 1) / TESTS_PER_PROCESS;
    if (n <= 1)
        return -1;
    int worst = 0;
    for (int i = 0; i < n; i++) {
        fflush(nullptr);
        pid_t pid = fork();
        if (pid < 0) {
            perror("hwaf-tests: fork");
            return 1;
        }
        if (pid == 0) {
            setenv("GTEST_TOTAL_SHARDS", std::to_string(n).c_str(), 1);
            setenv("GTEST_SHARD_INDEX", std::to_string(i).c_str(), 1);
            setenv("HWAF_TEST_SEED", std::to_string(hwaf_test::g_seed).c_str(), 1);
            execv("/proc/self/exe", g_argv.data());
            perror("hwaf-tests: execv /proc/self/exe");
            _exit(1);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        int rc = exit_code_of(status);
        fprintf(stderr, "hwaf-tests: shard %d of %d: exit %d\n", i + 1, n, rc);
        if (rc != 0 && rc != 77)
            worst = 1;
        else if (rc == 77 && worst == 0)
            worst = 77;
    }
    return worst;
}

int main(int argc, char **argv)
{
    using namespace hwaf_test;
    g_argv.assign(argv, argv + argc + 1);
    bool has_filter = getenv("GTEST_FILTER") != nullptr;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], "--gtest_filter", 14) == 0)
            has_filter = true;
    ::testing::InitGoogleTest(&argc, argv);
    /* The suites check the kernel paths: every operation offloaded unless
     * a test configures offload_min itself (the Dispatch* suites do). */
    setenv("HWAF_OFFLOAD_MIN", "0", 0);
    if (!has_filter) {
        /* Run by hand without a filter: pick the suites that apply here.
         * ctest always passes an explicit filter per configuration. */
        std::string f = auto_filter();
        ::testing::GTEST_FLAG(filter) = f;
        fprintf(stderr, "hwaf-tests: no --gtest_filter given; selected '%s' for this machine\n", f.c_str());
    }
    const char *s = getenv("HWAF_TEST_SEED");
    g_seed = s != nullptr ? strtoull(s, nullptr, 0)
                          : (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
    fprintf(stderr, "hwaf-tests: seed %llu (HWAF_TEST_SEED=%llu reproduces), module dir %s, query '%s'\n",
            (unsigned long long)g_seed, (unsigned long long)g_seed, module_dir(), hwaf_query().c_str());
    int sharded = run_in_shards();
    if (sharded >= 0)
        return sharded;
    ::testing::AddGlobalTestEnvironment(new WarmUp);
    ::testing::UnitTest::GetInstance()->listeners().Append(new FdLeakListener);
    int rc = RUN_ALL_TESTS();
    int skipped = ::testing::UnitTest::GetInstance()->skipped_test_count();
    if (rc == 0 && skipped > 0) {
        if (env().ci || env().guest) {
            fprintf(stderr, "hwaf-tests: %d test(s) skipped; in CI and in the guest a skip is a failure\n", skipped);
            return 1;
        }
        /* Not everything was verified here: report "skipped" to ctest. */
        fprintf(stderr, "hwaf-tests: %d test(s) skipped; exit 77 (ctest: Skipped)\n", skipped);
        return 77;
    }
    return rc;
}
