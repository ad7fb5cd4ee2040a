/*
 * After a failed kernel operation.  An update whose input runs into an
 * unreadable page fails in the kernel (EFAULT) part-way; hwaf must then
 * refuse the context cleanly until the next init, and after an init give
 * the default provider's bytes for large updates again, with zero-copy on
 * and off (no stale data left in a pipe or socket, no hang in vmsplice).
 */
#include "hwaf_test.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

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
