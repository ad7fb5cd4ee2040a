/*
 * TLS through hwaf: libssl hands provider CBC ciphers whole records
 * (tls-version, tls-mac-size, tls-mac) and expects explicit IV, padding and
 * MAC removed.  A client and a server in one process, over memory BIOs,
 * both preferring hwaf ("?provider=hwaf"), must complete handshakes and
 * exchange data for CBC suites on TLS 1.0, 1.1 and 1.2, with and without
 * encrypt-then-MAC; hwaf's counters prove it carried the records.  A
 * record whose padding is tampered with must be rejected.
 */
#include "hwaf_test.h"

#include <openssl/ec.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

using namespace hwaf_test;

namespace {

struct Pki {
    EVP_PKEY *key = nullptr;
    X509 *cert = nullptr;
    explicit Pki(OSSL_LIB_CTX *lib)
    {
        key = EVP_PKEY_Q_keygen(lib, "provider=default", "EC", "P-256");
        cert = X509_new_ex(lib, nullptr);
        if (key == nullptr || cert == nullptr)
            return;
        X509_set_version(cert, X509_VERSION_3);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
        X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
        /* A name of its own: OpenSSL 4.0 gives the certificate's as const. */
        X509_NAME *n = X509_NAME_new();
        X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"hwaf", -1, -1, 0);
        X509_set_subject_name(cert, n);
        X509_set_issuer_name(cert, n);
        X509_NAME_free(n);
        X509_set_pubkey(cert, key);
        X509_sign(cert, key, EVP_sha256());
    }
    ~Pki()
    {
        X509_free(cert);
        EVP_PKEY_free(key);
    }
};

uint64_t hwaf_bytes(const LibCtx &lib)
{
    uint64_t a = 0, d = 0;
    lib.prov_param(HWAF_PARAM_AFALG_BYTES, &a);
    lib.prov_param(HWAF_PARAM_DEVCRYPTO_BYTES, &d);
    return a + d;
}

/* Move what one side wrote to the other side. */
void pump(BIO *from, BIO *to)
{
    char buf[16384];
    int n;
    while ((n = BIO_read(from, buf, sizeof(buf))) > 0)
        BIO_write(to, buf, n);
}

struct Conn {
    SSL_CTX *sctx = nullptr, *cctx = nullptr;
    SSL *s = nullptr, *c = nullptr;
    BIO *s_in, *s_out, *c_in, *c_out;
    ~Conn()
    {
        SSL_free(s);
        SSL_free(c);
        SSL_CTX_free(sctx);
        SSL_CTX_free(cctx);
    }
    std::string why;
    bool handshake()
    {
        for (int i = 0; i < 50; i++) {
            int rc = SSL_do_handshake(c), rs = SSL_do_handshake(s);
            pump(c_out, s_in);
            pump(s_out, c_in);
            if (rc == 1 && rs == 1)
                return true;
            /* A side waiting for the other reports WANT_READ (or, before its
             * first byte arrives, SYSCALL with nothing queued): go on. */
            int ec = rc == 1 ? 0 : SSL_get_error(c, rc), es = rs == 1 ? 0 : SSL_get_error(s, rs);
            why = "client " + std::to_string(ec) + " in " + SSL_state_string_long(c) + ", server "
                  + std::to_string(es) + " in " + SSL_state_string_long(s) + ": " + error_queue_text();
            if (ec == SSL_ERROR_SSL || es == SSL_ERROR_SSL)
                return false;
        }
        return false;
    }
};

bool setup(Conn &k, OSSL_LIB_CTX *lib, const Pki &pki, int version, const char *suite, bool etm)
{
    k.sctx = SSL_CTX_new_ex(lib, "?provider=hwaf", TLS_server_method());
    k.cctx = SSL_CTX_new_ex(lib, "?provider=hwaf", TLS_client_method());
    if (k.sctx == nullptr || k.cctx == nullptr)
        return false;
    for (SSL_CTX *x : {k.sctx, k.cctx}) {
        SSL_CTX_set_min_proto_version(x, version);
        SSL_CTX_set_max_proto_version(x, version);
        SSL_CTX_set_security_level(x, 0);
        if (!SSL_CTX_set_cipher_list(x, std::string(std::string(suite) + ":@SECLEVEL=0").c_str()))
            return false;
        if (!etm)
            SSL_CTX_set_options(x, SSL_OP_NO_ENCRYPT_THEN_MAC);
    }
    if (!SSL_CTX_use_certificate(k.sctx, pki.cert) || !SSL_CTX_use_PrivateKey(k.sctx, pki.key))
        return false;
    k.s = SSL_new(k.sctx);
    k.c = SSL_new(k.cctx);
    k.s_in = BIO_new(BIO_s_mem());
    k.s_out = BIO_new(BIO_s_mem());
    k.c_in = BIO_new(BIO_s_mem());
    k.c_out = BIO_new(BIO_s_mem());
    /* An empty input is "try again", not end of file. */
    BIO_set_mem_eof_return(k.s_in, -1);
    BIO_set_mem_eof_return(k.c_in, -1);
    SSL_set_bio(k.s, k.s_in, k.s_out);
    SSL_set_bio(k.c, k.c_in, k.c_out);
    SSL_set_accept_state(k.s);
    SSL_set_connect_state(k.c);
    return true;
}

} // namespace

struct TlsCase {
    int version;
    const char *suite;
    bool etm;
};

class TlsCbc : public KernelTest, public ::testing::WithParamInterface<TlsCase> {};

/* Capture what the process writes to stderr (hwaf's debug log). */
struct StderrCapture {
    std::string path;
    int saved = -1;
    StderrCapture() : path(tmp_dir() + "/tls-debug.log")
    {
        fflush(stderr);
        int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        saved = dup(2);
        dup2(fd, 2);
        close(fd);
    }
    std::string stop()
    {
        fflush(stderr);
        if (saved >= 0) {
            dup2(saved, 2);
            close(saved);
            saved = -1;
        }
        std::ifstream f(path);
        std::stringstream ss;
        ss << f.rdbuf();
        unlink(path.c_str());
        return ss.str();
    }
    ~StderrCapture() { stop(); }
};

TEST_P(TlsCbc, RecordsRoundTripThroughHwaf)
{
    const TlsCase &t = GetParam();
    /* hwaf's debug log says when libssl puts one of its ciphers into TLS
     * record mode: the proof that hwaf, not another provider, carries the
     * records (the byte counters also count the HMAC's hashing). */
    StderrCapture log;
    LibCtx lib(make_config("debug = yes\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    Pki pki(lib.get());
    ASSERT_NE(pki.cert, nullptr);
    Conn k;
    ASSERT_TRUE(setup(k, lib.get(), pki, t.version, t.suite, t.etm)) << error_queue_text();
    uint64_t before = hwaf_bytes(lib);
    ASSERT_TRUE(k.handshake()) << t.suite << ": " << k.why;
    EXPECT_STREQ(SSL_CIPHER_get_name(SSL_get_current_cipher(k.c)), t.suite);
    EXPECT_EQ(SSL_get_version(k.c), std::string(SSL_get_version(k.s)));

    /* Records of many lengths both ways: every padding length occurs. */
    for (int len : {1, 15, 16, 17, 31, 32, 100, 255, 256, 1000, 4096, 16384}) {
        Bytes msg = random_bytes(len), got(len);
        for (auto [from, to, fbio, tbio] : {std::make_tuple(k.c, k.s, k.c_out, k.s_in),
                                            std::make_tuple(k.s, k.c, k.s_out, k.c_in)}) {
            ASSERT_EQ(SSL_write(from, msg.data(), len), len) << error_queue_text();
            pump(fbio, tbio);
            int n = 0, r;
            while (n < len && (r = SSL_read(to, got.data() + n, len - n)) > 0)
                n += r;
            ASSERT_EQ(n, len) << t.suite << " length " << len << ": " << error_queue_text();
            EXPECT_EQ(got, msg) << t.suite << " length " << len;
        }
    }
    EXPECT_GT(hwaf_bytes(lib), before + 2 * 21000) << "hwaf did not carry the records";
    std::string text = log.stop();
    char want[64];
    snprintf(want, sizeof(want), "TLS record mode, version 0x%x", (unsigned)t.version);
    EXPECT_NE(text.find(want), std::string::npos) << "no hwaf cipher in TLS record mode:\n" << text.substr(0, 2000);
}

TEST_P(TlsCbc, TamperedRecordIsRejected)
{
    const TlsCase &t = GetParam();
    Pki pki(lib_->get());
    Conn k;
    ASSERT_TRUE(setup(k, lib_->get(), pki, t.version, t.suite, t.etm));
    ASSERT_TRUE(k.handshake()) << k.why;
    Bytes msg = random_bytes(100), got(100);
    ASSERT_EQ(SSL_write(k.c, msg.data(), 100), 100);
    /* Flip a bit in the last ciphertext block (the padding's block). */
    char *p = nullptr;
    long n = BIO_get_mem_data(k.c_out, &p);
    ASSERT_GT(n, 32);
    p[n - 1] ^= 0x01;
    pump(k.c_out, k.s_in);
    EXPECT_LE(SSL_read(k.s, got.data(), 100), 0) << "a tampered record was accepted";
    ERR_clear_error();
}

INSTANTIATE_TEST_SUITE_P(
    Tls, TlsCbc,
    /*
     * MAC-then-encrypt with an HMAC-SHA1/SHA256 suite makes libssl take a
     * stitched AES-CBC-HMAC cipher when a provider has one (hwaf has none),
     * so MAC-then-encrypt is exercised with SHA384 and the other suites run
     * encrypt-then-MAC (padding and explicit IV, MAC size 0).
     */
    ::testing::Values(TlsCase{TLS1_2_VERSION, "ECDHE-ECDSA-AES256-SHA384", false},
                      TlsCase{TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA256", true},
                      TlsCase{TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA", true},
                      TlsCase{TLS1_1_VERSION, "ECDHE-ECDSA-AES256-SHA", true},
                      TlsCase{TLS1_VERSION, "ECDHE-ECDSA-AES128-SHA", true}),
    [](const ::testing::TestParamInfo<TlsCase> &i) {
        return std::string(i.param.version == TLS1_2_VERSION   ? "TLS12_"
                           : i.param.version == TLS1_1_VERSION ? "TLS11_"
                                                               : "TLS10_")
               + test_name(i.param.suite) + (i.param.etm ? "_ETM" : "_MtE");
    });
