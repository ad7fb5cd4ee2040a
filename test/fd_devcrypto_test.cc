/*
 * /dev/crypto: descriptor economy and the pages handed to the module.
 *
 *   DevcryptoFd*     one open file of /dev/crypto per process, across
 *                    fork() too (10,000 live contexts under a descriptor
 *                    limit of 1024: FdEconomy*, fd_economy_test.cc).
 *   DevcryptoCounters*  hwaf-devcrypto-ops counts kernel requests: one
 *                    CIOCCRYPT is one operation, a held-back update that
 *                    travels with the final included.
 *   DevcryptoLimit*  the largest request hwaf learns from a refusal
 *                    (ENOMEM) rises again once the refusal has passed, and
 *                    a refusal that lasts is tried again rarely, not in a
 *                    loop (the CUSE device's --size-limit file; skipped on
 *                    the real module, which has no such control).
 *   DevcryptoPages*  hash data in a buffer whose last page is read-only:
 *                    hwaf never hands the module such a buffer in place
 *                    (cryptodev-linux leaks pinned pages on it).  The CUSE
 *                    device refuses such a request, which is checked first.
 *   DevcryptoModule* what only the real cryptodev-linux module shows: the
 *                    probe's request limits against the module's own
 *                    session info, the largest GCM request, and hash
 *                    updates over such buffers without the leak (MemFree).
 *
 * Which device serves /dev/crypto is asked of the device (its sysfs
 * subsystem: misc for the module, cuse for the server).  The tests of the
 * CUSE device's controls fail on the module and DevcryptoModule* fails on
 * the CUSE device: each run leaves the other's out by filter
 * (HWAF_FILTER_DEVCRYPTO, HWAF_FILTER_DEVCRYPTO_MODULE).
 *
 * Both need HWAF_TEST_BACKEND=devcrypto (the kernel.gtest-devcrypto entry,
 * under test/cuse/with-devcrypto); elsewhere they fail rather than skip.
 */
#include "hwaf_test.h"

#include <fstream>
#include <dirent.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

/* The provider's ABI header is C11. */
#define _Static_assert static_assert
#include "../provider/cryptodev_abi.h"
#undef _Static_assert

using namespace hwaf_test;

namespace {

class DevcryptoTest : public KernelTest {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (HasFatalFailure() || IsSkipped())
            return;
        ASSERT_EQ(env().backend, "devcrypto")
            << "run with HWAF_TEST_BACKEND=devcrypto under test/cuse/with-devcrypto";
        ASSERT_TRUE(devcrypto_present()) << "/dev/crypto does not open";
    }
    /* hwaf's /dev/crypto counters: requests and bytes. */
    uint64_t ops()
    {
        uint64_t v = 0;
        EXPECT_TRUE(lib_->prov_param(HWAF_PARAM_DEVCRYPTO_OPS, &v));
        return v;
    }
    uint64_t bytes()
    {
        uint64_t v = 0;
        EXPECT_TRUE(lib_->prov_param(HWAF_PARAM_DEVCRYPTO_BYTES, &v));
        return v;
    }
};

/* Tests of the CUSE device's controls: the runs on the real module leave
 * them out by name (HWAF_FILTER_DEVCRYPTO_MODULE, test/CMakeLists.txt). */
const char *const kCuseOnly = "needs the CUSE device of test/cuse/with-devcrypto; on the cryptodev-linux module "
                              "this test is left out by HWAF_FILTER_DEVCRYPTO_MODULE";

class DevcryptoFd : public DevcryptoTest {};

/* Descriptors of /dev/crypto this process holds. */
int devcrypto_fds()
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == nullptr)
        return -1;
    while (struct dirent *e = readdir(d)) {
        char path[300], target[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t l = readlink(path, target, sizeof(target) - 1);
        if (l > 0) {
            target[l] = '\0';
            n += strcmp(target, "/dev/crypto") == 0;
        }
    }
    closedir(d);
    return n;
}

/*
 * One open file per process, also across fork(): the parent's many
 * contexts share one descriptor; a child keeps the inherited one for the
 * running hash it continues (its snapshot lives in that file) and opens
 * one of its own for everything new, and its results are right.
 */
TEST_F(DevcryptoFd, OneFilePerProcessAcrossFork)
{
    CipherPtr hc, dc;
    MdPtr hm, dm;
    need_cipher("AES-256-CTR", &hc, &dc);
    need_md("SHA2-512", &hm, &dm);
    if (!hc || !hm)
        return;
    const int base = devcrypto_fds();
    std::vector<CtxPtr> cs;
    Bytes key = random_bytes(32), iv = random_bytes(16), msg = random_bytes(1000), big = random_bytes(20000),
          want;
    for (int i = 0; i < 50; i++) {
        cs.emplace_back(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(cs.back().get(), hc.get(), key.data(), iv.data(), nullptr));
    }
    MdCtxPtr m(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), hm.get(), nullptr));
    ASSERT_TRUE(EVP_DigestUpdate(m.get(), msg.data(), msg.size()));  /* held back */
    ASSERT_TRUE(EVP_DigestUpdate(m.get(), big.data(), big.size()));  /* sent: running */
    EXPECT_EQ(devcrypto_fds(), base + 1) << "50 cipher contexts and a digest: one descriptor";
    Bytes all(msg);
    all.insert(all.end(), big.begin(), big.end());
    ASSERT_TRUE(digest_oneshot(dm.get(), all, &want));
    Bytes ct_want;
    ASSERT_TRUE(cipher_oneshot(dc.get(), 1, key, iv, msg, &ct_want, 0));

    fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int bad = 0;
        unsigned char md[64], ct[1000];
        unsigned int l = 0;
        int ol = 0;
        alarm(60);
        /* The running hash continues in the inherited file. */
        if (!EVP_DigestFinal_ex(m.get(), md, &l) || Bytes(md, md + l) != want)
            bad |= 1;
        if (devcrypto_fds() != base + 1)
            bad |= 2;
        /* A cipher context reopens in a file of the child's own. */
        if (!EVP_EncryptUpdate(cs[7].get(), ct, &ol, msg.data(), (int)msg.size())
            || Bytes(ct, ct + ol) != ct_want)
            bad |= 4;
        if (devcrypto_fds() != base + 2)
            bad |= 8;
        /* Many new contexts: still that one file. */
        for (int i = 0; i < 20; i++) {
            CtxPtr c(EVP_CIPHER_CTX_new());
            if (!EVP_EncryptInit_ex2(c.get(), hc.get(), key.data(), iv.data(), nullptr)
                || !EVP_EncryptUpdate(c.get(), ct, &ol, msg.data(), (int)msg.size())
                || Bytes(ct, ct + ol) != ct_want)
                bad |= 16;
        }
        if (devcrypto_fds() != base + 2)
            bad |= 32;
        _exit(bad);  /* without freeing anything */
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child died";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child: 1 wrong digest, 2/8/32 wrong number of "
                                         "/dev/crypto descriptors, 4/16 wrong ciphertext";
    /* The parent is untouched: its contexts and its running hash go on. */
    unsigned char md[64], ct[1000];
    unsigned int l = 0;
    int ol = 0;
    ASSERT_TRUE(EVP_DigestFinal_ex(m.get(), md, &l)) << error_queue_text();
    EXPECT_EQ(tohex(Bytes(md, md + l)), tohex(want));
    for (auto &c : cs) {
        ASSERT_TRUE(EVP_EncryptUpdate(c.get(), ct, &ol, msg.data(), (int)msg.size()));
        EXPECT_EQ(tohex(Bytes(ct, ct + ol)), tohex(ct_want));
    }
    EXPECT_EQ(devcrypto_fds(), base + 1);
    /* (Freed contexts' digest sessions stay pooled, and the file open,
     * until the provider unloads; the fd-leak listener checks that.) */
}

/* A buffer of n bytes that ends exactly at the end of its last page, which
 * is read-only; the pages before it are writable. */
struct MixedBuffer {
    unsigned char *map = nullptr, *p = nullptr;
    size_t maplen = 0;
    explicit MixedBuffer(size_t n)
    {
        const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        maplen = (n + pg - 1) / pg * pg;
        void *m = mmap(nullptr, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return;
        map = (unsigned char *)m;
        p = map + maplen - n;
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)(i * 131 + 17);
        if (mprotect(map + maplen - pg, pg, PROT_READ) != 0)
            p = nullptr;
    }
    ~MixedBuffer()
    {
        if (map != nullptr)
            munmap(map, maplen);
    }
};

class DevcryptoPages : public DevcryptoTest {};

/* The CUSE device notices what the module would leak on: an in-place hash
 * update over writable pages and a read-only one is refused (EFAULT). */
TEST_F(DevcryptoPages, CuseDeviceRefusesMixedInPlaceBuffers)
{
    /* Never on the real module: this is the very call that leaks. */
    ASSERT_EQ(devcrypto_device(), "cuse") << kCuseOnly;
    MixedBuffer b(24000);
    ASSERT_NE(b.p, nullptr);
    int fd = open("/dev/crypto", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << strerror(errno);
    struct session_op sop;
    memset(&sop, 0, sizeof(sop));
    sop.mac = CRYPTO_SHA2_256;
    ASSERT_EQ(ioctl(fd, CIOCGSESSION, &sop), 0) << strerror(errno);
    struct crypt_op cop;
    memset(&cop, 0, sizeof(cop));
    cop.ses = sop.ses;
    cop.op = COP_ENCRYPT;
    cop.flags = COP_FLAG_UPDATE;
    cop.len = 24000;
    cop.src = b.p;
    cop.dst = b.p;
    errno = 0;
    EXPECT_EQ(ioctl(fd, CIOCCRYPT, &cop), -1) << "a mixed in-place buffer was accepted";
    EXPECT_EQ(errno, EFAULT);
    /* Writable throughout: accepted. */
    cop.len = 24000 - 4096;
    EXPECT_EQ(ioctl(fd, CIOCCRYPT, &cop), 0) << strerror(errno);
    ioctl(fd, CIOCFSESSION, &sop.ses);
    close(fd);
}

/* The case of the report: SHA-256 updates of 24000 bytes over 5 writable
 * pages and 1 read-only one, through hwaf: correct digests, and the device
 * never sees the caller's pages in place (the CUSE device would refuse). */
TEST_F(DevcryptoPages, HashDataOverReadOnlyPagesIsNotHandedInPlace)
{
    for (const DigestAlg &a : kDigests) {
        MdPtr h, d;
        need_md(a.name, &h, &d);
        if (!h)
            return;
        for (size_t n : {24000u, 8193u, 70000u, 300000u}) {
            MixedBuffer b(n);
            ASSERT_NE(b.p, nullptr);
            Bytes got(64), want;
            unsigned int l = 0;
            MdCtxPtr c(EVP_MD_CTX_new());
            ASSERT_TRUE(EVP_DigestInit_ex2(c.get(), h.get(), nullptr));
            bool ok = EVP_DigestUpdate(c.get(), b.p, n) && EVP_DigestUpdate(c.get(), b.p, n)
                      && EVP_DigestFinal_ex(c.get(), got.data(), &l);
            EXPECT_TRUE(ok) << a.name << " over " << n << " bytes ending in a read-only page: "
                            << error_queue_text();
            ERR_clear_error();
            if (!ok)
                continue;
            got.resize(l);
            Bytes msg(b.p, b.p + n);
            msg.insert(msg.end(), b.p, b.p + n);
            ASSERT_TRUE(digest_oneshot(d.get(), msg, &want));
            EXPECT_EQ(tohex(got), tohex(want)) << a.name << " " << n;
        }
    }
}

class DevcryptoCounters : public DevcryptoTest {};

TEST_F(DevcryptoCounters, OneIoctlIsOneOperation)
{
    MdPtr h, d;
    need_md("SHA2-256", &h, &d);
    CipherPtr ch, cd;
    need_cipher("AES-128-CBC", &ch, &cd);
    if (!h || !ch)
        return;
    /* A short message: held back, sent with the final in one CIOCCRYPT. */
    MdCtxPtr m(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), h.get(), nullptr));
    Bytes in = random_bytes(100), out(32);
    unsigned int l = 0;
    uint64_t o0 = ops(), b0 = bytes();
    ASSERT_TRUE(EVP_DigestUpdate(m.get(), in.data(), in.size()));
    ASSERT_TRUE(EVP_DigestFinal_ex(m.get(), out.data(), &l));
    EXPECT_EQ(ops() - o0, 1u) << "update + final travel in one ioctl";
    EXPECT_EQ(bytes() - b0, 100u);
    /* Two short updates, one final: still one request. */
    ASSERT_TRUE(EVP_DigestInit_ex2(m.get(), h.get(), nullptr));
    o0 = ops();
    ASSERT_TRUE(EVP_DigestUpdate(m.get(), in.data(), 50));
    ASSERT_TRUE(EVP_DigestUpdate(m.get(), in.data() + 50, 50));
    ASSERT_TRUE(EVP_DigestFinal_ex(m.get(), out.data(), &l));
    EXPECT_EQ(ops() - o0, 1u);
    /* One cipher operation of 4 KiB. */
    Bytes key = random_bytes(16), iv = random_bytes(16), pt = random_bytes(4096), ct;
    o0 = ops();
    b0 = bytes();
    ASSERT_TRUE(cipher_oneshot(ch.get(), 1, key, iv, pt, &ct, 0));
    EXPECT_EQ(ops() - o0, 1u);
    EXPECT_EQ(bytes() - b0, 4096u);
}

/*
 * The learned request limit (be_devcrypto.c): the CUSE device refuses
 * requests over a size while its --size-limit file (HWAF_CUSE_SIZE_LIMIT,
 * set by with-devcrypto) holds one.  One AES-128-CBC stream forced to the
 * kernel, updates of 32 KiB, every output compared with the default
 * provider's; hwaf-devcrypto-ops counts the requests of each update.
 */
class DevcryptoLimit : public DevcryptoTest {
protected:
    static constexpr size_t kUpdate = 32768;
    const char *alg_ = "AES-128-CBC";

    void SetUp() override
    {
        DevcryptoTest::SetUp();
        if (HasFatalFailure() || IsSkipped())
            return;
        /* The real module cannot be told to refuse sizes. */
        ASSERT_EQ(devcrypto_device(), "cuse") << kCuseOnly;
        const char *c = getenv("HWAF_CUSE_SIZE_LIMIT");
        ASSERT_TRUE(c != nullptr && *c != '\0')
            << "needs the CUSE device of test/cuse/with-devcrypto (HWAF_CUSE_SIZE_LIMIT)";
        ctl_ = c;
        unlink(ctl_.c_str());
        unlink((ctl_ + ".refused").c_str());
        need_cipher(alg_, &h_, &d_);
        if (!h_)
            return;
        Bytes key = random_bytes(EVP_CIPHER_get_key_length(h_.get())), iv = random_bytes(16);
        int force = 1;
        OSSL_PARAM p[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_END };
        hc_.reset(EVP_CIPHER_CTX_new());
        dc_.reset(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(hc_.get(), h_.get(), key.data(), iv.data(), p));
        ASSERT_TRUE(EVP_EncryptInit_ex2(dc_.get(), d_.get(), key.data(), iv.data(), nullptr));
        in_ = random_bytes(kUpdate);
    }
    void TearDown() override
    {
        if (!ctl_.empty()) {
            unlink(ctl_.c_str());
            unlink((ctl_ + ".refused").c_str());
        }
        DevcryptoTest::TearDown();
    }
    void limit(long n)
    {
        FILE *f = fopen(ctl_.c_str(), "w");
        ASSERT_TRUE(f != nullptr);
        fprintf(f, "%ld %ld\n", n, (long)getpid());  /* this process only */
        fclose(f);
    }
    void no_limit() { unlink(ctl_.c_str()); }
    /* Requests the device refused since the test began. */
    int refused()
    {
        FILE *f = fopen((ctl_ + ".refused").c_str(), "r");
        int n = 0, ch;
        if (f == nullptr)
            return 0;
        while ((ch = fgetc(f)) != EOF)
            n += ch == '\n';
        fclose(f);
        return n;
    }
    /* One update of the stream, checked; the requests it took (0 on a
     * failure, recorded). */
    uint64_t update()
    {
        uint64_t o0 = 0, o1 = 0;
        Bytes got(kUpdate), want(kUpdate);
        int gl = 0, wl = 0;
        EXPECT_TRUE(lib_->prov_param(HWAF_PARAM_DEVCRYPTO_OPS, &o0));
        bool ok = EVP_EncryptUpdate(hc_.get(), got.data(), &gl, in_.data(), (int)kUpdate)
                  && EVP_EncryptUpdate(dc_.get(), want.data(), &wl, in_.data(), (int)kUpdate);
        EXPECT_TRUE(ok);
        EXPECT_TRUE(gl == wl && got == want) << "bytes differ from the default provider's";
        EXPECT_TRUE(lib_->prov_param(HWAF_PARAM_DEVCRYPTO_OPS, &o1));
        return ok && !HasFailure() ? o1 - o0 : 0;
    }
    /* Updates until one goes in one request; how many it took (-1: not
     * within max). */
    int until_one_request(int max)
    {
        for (int i = 1; i <= max; i++) {
            uint64_t n = update();
            if (n == 0)
                return -1;
            if (n == 1)
                return i;
        }
        return -1;
    }

    std::string ctl_;
    CipherPtr h_, d_;
    CtxPtr hc_, dc_;
    Bytes in_;
};

TEST_F(DevcryptoLimit, PassingRefusalDoesNotCapTheProcess)
{
    if (!h_)
        return;
    /* Whatever earlier tests left: 32 KiB in one request to start with. */
    ASSERT_GT(until_one_request(1000), 0);
    /* A passing shortage: the device refuses more than 4 KiB, once. */
    limit(4096);
    EXPECT_EQ(update(), 8u) << "refused at 32, 16 and 8 KiB, then in pieces of 4 KiB";
    EXPECT_EQ(refused(), 3);
    no_limit();
    /* It tries larger requests again: back to one request per update. */
    int n = until_one_request(400);
    EXPECT_GT(n, 0) << "the learned limit never rose again";
    printf("    one request per update again after %d updates\n", n);
    EXPECT_EQ(refused(), 3);
}

TEST_F(DevcryptoLimit, LastingRefusalIsTriedAgainRarely)
{
    if (!h_)
        return;
    ASSERT_GT(until_one_request(1000), 0);
    limit(16384);
    uint64_t last = 0;
    for (int i = 0; i < 300 && !HasFailure(); i++)
        last = update();
    EXPECT_EQ(last, 2u) << "pieces of 16 KiB";
    int r = refused();
    printf("    %d requests of 600 refused\n", r);
    /* The first refusal, then tries after 64, 128 and 256 more requests. */
    EXPECT_GE(r, 2) << "never tried a larger request again";
    EXPECT_LE(r, 6) << "tried again too often";
    /* And once the device takes more again, so does hwaf. */
    no_limit();
    int n = until_one_request(1000);
    EXPECT_GT(n, 0);
    printf("    one request per update again after %d updates\n", n);
}

/*
 * "After 64 requests" counts requests made, once each.  An AES-128-XTS data
 * unit of 32 KiB over a limit of 4 KiB: the first finds the limit (refused
 * at 32, 16 and 8 KiB) and is done over ecb(aes), its tweak and 8 pieces;
 * once the limit is known, the mode layer splits a unit into 8 pieces of
 * 4 KiB through the XTS session itself, their tweaks in software, asking
 * the backend for its limit once per piece.  A piece that tries 8 KiB
 * again is refused and done over ecb(aes) in two with its tweak, so such a
 * unit is 9 requests.  Between two refused tries there are as many
 * requests as the wait then was (64, 128), give or take the 9 of one unit,
 * which is where a try can start; counting the size questions instead
 * would make it several times as many.
 */
class DevcryptoLimitXts : public DevcryptoLimit {
protected:
    DevcryptoLimitXts() { alg_ = "AES-128-XTS"; }
};

TEST_F(DevcryptoLimitXts, TriesAgainAfterSoManyRequests)
{
    if (!h_)
        return;
    ASSERT_GT(until_one_request(1000), 0);
    limit(4096);
    EXPECT_EQ(update(), 9u) << "the tweak, then 8 pieces of 4 KiB over ecb(aes)";
    ASSERT_EQ(refused(), 3) << "refused at 32, 16 and 8 KiB";
    uint64_t since = 0;
    int seen = 3;
    const uint64_t want[] = { 64, 128 };
    for (int i = 0; i < 200 && seen < 5 && !HasFailure(); i++) {
        uint64_t n = update();
        int r = refused();
        since += n;
        if (r == seen) {
            ASSERT_EQ(n, 8u) << "update " << i << ": 8 pieces of 4 KiB through the XTS session";
            continue;
        }
        ASSERT_EQ(r, seen + 1);
        ASSERT_EQ(n, 9u) << "update " << i << ": a piece of 8 KiB refused, done in two with its tweak";
        uint64_t w = want[seen - 3];
        printf("    a larger request tried again after %llu requests (wait %llu)\n",
               (unsigned long long)since, (unsigned long long)w);
        EXPECT_GE(since + 9, w);
        EXPECT_LE(since, w + 9);
        seen = r;
        since = 0;
    }
    EXPECT_EQ(seen, 5) << "never tried a larger request again";
}

/*
 * An XTS data unit that ends in a partial block, over /dev/crypto (which
 * refuses lengths that are not whole blocks): its whole blocks but the
 * last go through the xts(aes) session itself, then its tweak and the two
 * blocks of ciphertext stealing over ecb(aes); the default provider's bytes
 * both ways.  The CUSE device lists the requests it completed for this
 * thread while HWAF_CUSE_SIZE_LIMIT.trace names it.
 */
class DevcryptoXtsTrace : public DevcryptoLimit {
protected:
    DevcryptoXtsTrace() { alg_ = "AES-256-XTS"; }
    void TearDown() override
    {
        if (!ctl_.empty()) {
            unlink((ctl_ + ".trace").c_str());
            unlink((ctl_ + ".trace.log").c_str());
        }
        DevcryptoLimit::TearDown();
    }
    void trace_on()
    {
        unlink((ctl_ + ".trace.log").c_str());
        FILE *f = fopen((ctl_ + ".trace").c_str(), "w");
        ASSERT_TRUE(f != nullptr);
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
    }
    /* The requests completed since trace_on(), one "NAME LENGTH" each. */
    std::vector<std::string> trace_take()
    {
        std::vector<std::string> lines;
        unlink((ctl_ + ".trace").c_str());
        std::ifstream in(ctl_ + ".trace.log");
        std::string line;
        while (std::getline(in, line))
            lines.push_back(line);
        unlink((ctl_ + ".trace.log").c_str());
        return lines;
    }
    /* One unit through a context forced to the kernel, or the default
     * provider's (h false). */
    bool unit(bool h, int enc, const Bytes &key, const Bytes &iv, const Bytes &in, Bytes *out)
    {
        int force = 1, l = 0, lf = 0;
        OSSL_PARAM p[] = { OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_END };
        CtxPtr c(EVP_CIPHER_CTX_new());
        out->assign(in.size() + 16, 0);
        bool ok = c && EVP_CipherInit_ex2(c.get(), h ? h_.get() : d_.get(), key.data(), iv.data(), enc,
                                          h ? p : nullptr)
                  && EVP_CipherUpdate(c.get(), out->data(), &l, in.data(), (int)in.size())
                  && EVP_CipherFinal_ex(c.get(), out->data() + l, &lf);
        out->resize(ok ? (size_t)(l + lf) : 0);
        return ok;
    }
};

TEST_F(DevcryptoXtsTrace, PartialUnitThroughTheXtsSession)
{
    if (!h_)
        return;
    Bytes key = random_bytes(64), iv = random_bytes(16);
    key[32] = key[0] ^ 1; /* the halves differ */
    /* Below the learned limit's floor (4096 bytes, be_devcrypto.c): that
     * limit is the process's, and DevcryptoLimit* may leave it there. */
    for (size_t len : { (size_t)17, (size_t)47, (size_t)1000, (size_t)2048 + 5 }) {
        size_t bulk = len - 16 - len % 16;
        std::vector<std::string> want_trace;
        if (bulk > 0)
            want_trace.push_back("xts(aes) " + std::to_string(bulk));
        for (int i = 0; i < 3; i++) /* the tweak, the two stolen blocks */
            want_trace.push_back("ecb(aes) 16");
        Bytes pt = random_bytes(len), want, got, back;
        ASSERT_TRUE(unit(false, 1, key, iv, pt, &want));
        trace_on();
        ASSERT_TRUE(unit(true, 1, key, iv, pt, &got)) << len << ": " << error_queue_text();
        EXPECT_EQ(trace_take(), want_trace) << len << " bytes encrypted";
        EXPECT_TRUE(got == want) << len << " bytes: wrong ciphertext";
        trace_on();
        ASSERT_TRUE(unit(true, 0, key, iv, want, &back)) << len << ": " << error_queue_text();
        EXPECT_EQ(trace_take(), want_trace) << len << " bytes decrypted";
        EXPECT_TRUE(back == pt) << len << " bytes: wrong plaintext";
    }
}

/*
 * The real cryptodev-linux module (docs/testing.md, "The real
 * cryptodev-linux module").  Left out by filter on the CUSE device; run
 * anywhere else than on the module, they fail.
 */
class DevcryptoModule : public DevcryptoTest {
protected:
    void SetUp() override
    {
        DevcryptoTest::SetUp();
        if (HasFatalFailure() || IsSkipped())
            return;
        ASSERT_EQ(devcrypto_device(), "module")
            << "needs the cryptodev-linux module (docs/testing.md); the CUSE device's runs leave "
               "DevcryptoModule* out (HWAF_FILTER_DEVCRYPTO)";
    }
    /* kB of MemFree in /proc/meminfo. */
    static long mem_free_kb()
    {
        std::ifstream f("/proc/meminfo");
        std::string k;
        long v = -1;
        while (f >> k) {
            if (k == "MemFree:") {
                f >> v;
                break;
            }
            f.ignore(256, '\n');
        }
        return v;
    }
};

/* The request limit the probe sets, against what the module itself says
 * of the driver (CIOCGSESSINFO): an engine (SIOP_FLAG_KERNEL_DRIVER_ONLY)
 * gets the asynchronous drivers' 64 KiB (hwaf_backend.h), a CPU driver no
 * limit of hwaf's; the driver named is the module's. */
TEST_F(DevcryptoModule, ProbeLimitsFollowTheModulesSessionInfo)
{
    struct Case {
        const char *name;
        uint32_t cipher, mac;
        bool hash;
    };
    const Case cases[] = {{"AES-128-CBC", CRYPTO_AES_CBC, 0, false},
                          {"AES-128-GCM", CRYPTO_AES_GCM, 0, false},
                          {"SHA2-256", 0, CRYPTO_SHA2_256, true}};
    int fd = open("/dev/crypto", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0) << strerror(errno);
    for (const Case &c : cases) {
        struct session_op sop;
        memset(&sop, 0, sizeof(sop));
        unsigned char key[16] = {1, 2, 3};
        sop.cipher = c.cipher;
        sop.mac = c.mac;
        if (c.cipher != 0) {
            sop.keylen = sizeof(key);
            sop.key = key;
        }
        ASSERT_EQ(ioctl(fd, CIOCGSESSION, &sop), 0) << c.name << ": " << strerror(errno);
        struct session_info_op info;
        memset(&info, 0, sizeof(info));
        info.ses = sop.ses;
        ASSERT_EQ(ioctl(fd, CIOCGSESSINFO, &info), 0) << c.name << ": " << strerror(errno);
        ioctl(fd, CIOCFSESSION, &sop.ses);
        const struct alg_info &ai = c.hash ? info.hash_info : info.cipher_info;
        std::string driver(ai.cra_driver_name, strnlen(ai.cra_driver_name, sizeof(ai.cra_driver_name)));
        bool engine = (info.flags & SIOP_FLAG_KERNEL_DRIVER_ONLY) != 0;
        std::string line = request_line(*lib_, c.name, "devcrypto");
        ASSERT_FALSE(line.empty()) << c.name << " is not offered over /dev/crypto";
        std::string want = std::string(c.name) + " devcrypto " + driver + " request_max="
                           + (engine ? "65536" : "unlimited") + " source=default";
        EXPECT_EQ(line, want) << "the module says driver " << driver << (engine ? ", an engine" : ", a CPU driver");
    }
    close(fd);
}

/* The largest GCM message of one request is hwaf's own cap (16 MiB with
 * the tag, be_devcrypto.c), which the module takes whole: one request
 * each way, the default provider's bytes.  One byte more, a forced
 * context gets a reasoned error and an unforced one software. */
TEST_F(DevcryptoModule, GcmMessageOfSixteenMiBGoesInOneRequest)
{
    CipherPtr h, d;
    need_cipher("AES-128-GCM", &h, &d);
    if (!h)
        return;
    const size_t max = ((size_t)16 << 20) - 16;
    Bytes key = random_bytes(16), iv = random_bytes(12), pt = random_bytes(max + 1);
    auto run = [&](const EVP_CIPHER *c, int enc, int force, const Bytes &in, size_t n, Bytes *tag, Bytes *out) {
        CtxPtr x(EVP_CIPHER_CTX_new());
        OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
        int outl = 0, fl = 0;
        out->assign(n + 16, 0);
        if (!EVP_CipherInit_ex2(x.get(), c, key.data(), iv.data(), enc, force >= 0 ? p : nullptr))
            return false;
        if (!enc && !EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag->data()))
            return false;
        if (!EVP_CipherUpdate(x.get(), out->data(), &outl, in.data(), (int)n)
            || !EVP_CipherFinal_ex(x.get(), out->data() + outl, &fl))
            return false;
        out->resize((size_t)outl + (size_t)fl);
        if (enc) {
            tag->assign(16, 0);
            return EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag->data()) == 1;
        }
        return true;
    };
    Bytes want, wtag, got, gtag, back;
    ASSERT_TRUE(run(d.get(), 1, -1, pt, max, &wtag, &want)) << error_queue_text();
    uint64_t o0 = ops(), b0 = bytes();
    ASSERT_TRUE(run(h.get(), 1, 1, pt, max, &gtag, &got)) << error_queue_text();
    EXPECT_EQ(ops() - o0, 1u) << "not one request";
    EXPECT_EQ(bytes() - b0, max);
    EXPECT_TRUE(got == want) << "wrong ciphertext";
    EXPECT_EQ(tohex(gtag), tohex(wtag));
    o0 = ops();
    ASSERT_TRUE(run(h.get(), 0, 1, got, max, &gtag, &back)) << error_queue_text();
    EXPECT_EQ(ops() - o0, 1u) << "not one request";
    EXPECT_TRUE(back == Bytes(pt.begin(), pt.begin() + (long)max)) << "wrong plaintext";
    /* One byte more. */
    ASSERT_TRUE(run(d.get(), 1, -1, pt, max + 1, &wtag, &want));
    o0 = ops();
    EXPECT_FALSE(run(h.get(), 1, 1, pt, max + 1, &gtag, &got)) << "forced past the cap";
    EXPECT_TRUE(has_reasoned_error());
    ERR_clear_error();
    EXPECT_EQ(ops() - o0, 0u) << "a request past the cap reached the module";
    Counts c0 = counts(*lib_);
    ASSERT_TRUE(run(h.get(), 1, 0, pt, max + 1, &gtag, &got)) << error_queue_text();
    EXPECT_TRUE(got == want) << "wrong ciphertext past the cap";
    EXPECT_EQ(tohex(gtag), tohex(wtag));
    EXPECT_GE(counts(*lib_).sw_bytes - c0.sw_bytes, max + 1) << "not computed in software";
}

/* Hashing a buffer whose last page is read-only, the case the module
 * leaks pinned pages on when it is handed such a buffer in place (about
 * 18 KiB an update of 24000 bytes): 3000 forced SHA-256 updates through
 * hwaf lose no memory -- MemFree falls by less than 8 MiB, where the leak
 * would take some 54 MiB -- and give the default provider's digest. */
TEST_F(DevcryptoModule, HashUpdatesOverReadOnlyPagesLoseNoMemory)
{
    MdPtr h, d;
    need_md("SHA2-256", &h, &d);
    if (!h)
        return;
    const size_t n = 24000;
    const int updates = 3000;
    MixedBuffer b(n);
    ASSERT_NE(b.p, nullptr);
    int force = 1;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_construct_end()};
    MdCtxPtr hc(EVP_MD_CTX_new()), dc(EVP_MD_CTX_new());
    ASSERT_TRUE(EVP_DigestInit_ex2(hc.get(), h.get(), p)) << error_queue_text();
    ASSERT_TRUE(EVP_DigestInit_ex2(dc.get(), d.get(), nullptr));
    for (int i = 0; i < 50; i++) /* the sessions' and buffers' first allocations */
        ASSERT_TRUE(EVP_DigestUpdate(hc.get(), b.p, n) && EVP_DigestUpdate(dc.get(), b.p, n));
    long before = mem_free_kb();
    uint64_t b0 = bytes();
    for (int i = 0; i < updates; i++)
        ASSERT_TRUE(EVP_DigestUpdate(hc.get(), b.p, n)) << i << ": " << error_queue_text();
    long after = mem_free_kb();
    EXPECT_GE(bytes() - b0, (uint64_t)updates * n - 64) << "the updates did not reach the module";
    ASSERT_GT(before, 0);
    EXPECT_LT(before - after, 8 * 1024) << "MemFree fell by " << before - after << " kB over " << updates
                                        << " updates";
    RecordProperty("memfree_drop_kb", std::to_string(before - after));
    for (int i = 0; i < updates; i++)
        ASSERT_TRUE(EVP_DigestUpdate(dc.get(), b.p, n));
    unsigned char x[32], y[32];
    unsigned int xl = 0, yl = 0;
    ASSERT_TRUE(EVP_DigestFinal_ex(hc.get(), x, &xl)) << error_queue_text();
    ASSERT_TRUE(EVP_DigestFinal_ex(dc.get(), y, &yl));
    EXPECT_EQ(tohex(Bytes(x, x + xl)), tohex(Bytes(y, y + yl)));
}

} // namespace
