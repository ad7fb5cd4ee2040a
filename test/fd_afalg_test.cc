/*
 * AF_ALG: descriptor economy.
 *
 *   AfalgFd*  a live cipher or GCM context holds one descriptor (its
 *             operation socket; the kernel keeps the transform and key
 *             through it), not two, and computes the default provider's
 *             bytes; under a descriptor limit contexts that cannot get a
 *             socket fail cleanly, never with wrong bytes.
 *
 * AF_ALG only (not in the /dev/crypto runs, which have DevcryptoFd*).
 */
#include "hwaf_test.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include <openssl/core_names.h>

using namespace hwaf_test;

namespace {

/* Key and IV of context i, and its input. */
void material(size_t i, size_t keylen, Bytes *key, Bytes *iv, Bytes *in)
{
    key->resize(keylen);
    iv->resize(16);
    in->resize(48);
    for (size_t j = 0; j < keylen; j++)
        (*key)[j] = (unsigned char)(i * 7 + j * 13 + (j >= keylen / 2 ? 1 : 0));
    for (size_t j = 0; j < 16; j++)
        (*iv)[j] = (unsigned char)(i * 3 + j);
    for (size_t j = 0; j < in->size(); j++)
        (*in)[j] = (unsigned char)(i + j * 29);
}

} // namespace

class AfalgFd : public KernelTest {};

TEST_F(AfalgFd, OneDescriptorPerCipherContext)
{
    const size_t N = 200;
    for (const char *name : {"AES-128-CBC", "AES-256-CTR", "AES-128-XTS", "AES-128-GCM"}) {
        CipherPtr h(EVP_CIPHER_fetch(lib_->get(), name, "provider=hwaf,hwaf.backend=afalg"));
        CipherPtr d(EVP_CIPHER_fetch(lib_->get(), name, "provider=default"));
        ASSERT_TRUE(h && d) << name << ": " << error_queue_text();
        const bool gcm = strstr(name, "GCM") != nullptr;
        const size_t keylen = (size_t)EVP_CIPHER_get_key_length(d.get());
        const int fds0 = count_fds();
        std::vector<CtxPtr> ctx(N);
        size_t fail = 0, wrong = 0;
        Bytes key, iv, in, out(64), ref;
        for (size_t i = 0; i < N; i++) {
            material(i, keylen, &key, &iv, &in);
            if (gcm)
                iv.resize(12);
            ctx[i].reset(EVP_CIPHER_CTX_new());
            int l = 0;
            if (!EVP_EncryptInit_ex2(ctx[i].get(), h.get(), key.data(), iv.data(), nullptr)
                || !EVP_EncryptUpdate(ctx[i].get(), out.data(), &l, in.data(), (int)in.size())) {
                fail++;
                ERR_clear_error();
                continue;
            }
            /* The default provider's bytes (GCM: the ciphertext so far). */
            CtxPtr r(EVP_CIPHER_CTX_new());
            int rl = 0;
            ref.assign(64, 0);
            if (!EVP_EncryptInit_ex2(r.get(), d.get(), key.data(), iv.data(), nullptr)
                || !EVP_EncryptUpdate(r.get(), ref.data(), &rl, in.data(), (int)in.size()) || rl != l
                || memcmp(ref.data(), out.data(), (size_t)l) != 0)
                wrong++;
        }
        const int fds1 = count_fds();
        EXPECT_EQ(fail, 0u) << name;
        EXPECT_EQ(wrong, 0u) << name;
        /* One operation socket each; the transform's socket is closed. */
        EXPECT_LE(fds1 - fds0, (int)N + 2) << name << ": " << N << " live contexts hold "
                                           << fds1 - fds0 << " descriptors";
        EXPECT_EQ(ctx_param_str(ctx[0].get(), HWAF_PARAM_BACKEND), "afalg") << name;
        ctx.clear();
        EXPECT_LE(count_fds(), fds0 + 2) << name << ": descriptors left after freeing";
    }
}

/*
 * Under `ulimit -n 1024`, 1500 live cipher contexts: those that cannot get
 * a socket fail with a reason or are computed in software; every one that
 * succeeds gives the default provider's bytes, and the first 900 or so all
 * get a socket (one descriptor each).
 */
TEST_F(AfalgFd, ManyContextsUnderUlimit1024)
{
    const size_t N = 1500;
    CipherPtr h(EVP_CIPHER_fetch(lib_->get(), "AES-128-CBC", "provider=hwaf,hwaf.backend=afalg"));
    CipherPtr d(EVP_CIPHER_fetch(lib_->get(), "AES-128-CBC", "provider=default"));
    ASSERT_TRUE(h && d);
    FdLimit limit(1024);
    ASSERT_TRUE(limit.ok) << strerror(errno);
    const int fds0 = count_fds();
    std::vector<CtxPtr> ctx(N);
    size_t ok = 0, clean = 0, wrong = 0, unclean = 0;
    Bytes key, iv, in, out(64), ref;
    for (size_t i = 0; i < N; i++) {
        material(i, 16, &key, &iv, &in);
        ctx[i].reset(EVP_CIPHER_CTX_new());
        int l = 0;
        if (!EVP_EncryptInit_ex2(ctx[i].get(), h.get(), key.data(), iv.data(), nullptr)
            || !EVP_EncryptUpdate(ctx[i].get(), out.data(), &l, in.data(), (int)in.size())) {
            if (has_reasoned_error())
                clean++;
            else
                unclean++;
            continue;
        }
        if (!cipher_oneshot(d.get(), 1, key, iv, in, &ref, 0) || ref.size() != (size_t)l
            || memcmp(ref.data(), out.data(), (size_t)l) != 0)
            wrong++;
        else
            ok++;
    }
    ctx.clear();
    EXPECT_EQ(wrong, 0u) << "contexts with wrong bytes";
    EXPECT_EQ(unclean, 0u) << "failures without a reason";
    EXPECT_GE(ok, (size_t)(1024 - fds0 - 64)) << ok << " of " << N << " worked, " << clean
                                              << " failed cleanly, " << fds0 << " descriptors open before";
}
