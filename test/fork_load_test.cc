/*
 * fork() while other threads work.
 *
 * ThreadsAndFork.ForksWhileThreadsWork: four threads loop over fresh digest
 * and cipher contexts (new, init, update, final, free), and a fifth seals
 * 4 KiB AES-GCM messages (whose result the kernel writes into the
 * context's own pages, hwaf_aead.c keep_grow()), while the main
 * thread forks HWAF_TEST_FORKS times (1000 unless set).  Each child, under
 * an alarm, does one digest and one cipher of its own through hwaf and
 * checks them against the default provider's results; the parent counts
 * children that hang (killed by the alarm) or report wrong results.  Run
 * through whichever backend the suite runs (HWAF_TEST_BACKEND).
 *
 * AfalgFork.ForksDuringZeroCopyMeasurement: zerocopy = auto measures
 * once per process, at the first large page-aligned operation.  A fresh
 * process (this binary again, running the disabled trial below) starts
 * that measurement in a thread and forks children while it runs; each child
 * does its own large aligned update under an alarm.
 */
#include "hwaf_test.h"

#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

using namespace hwaf_test;

namespace {

/* Seconds a child may take before it counts as hung. */
constexpr unsigned kChildAlarm = 30;

bool digest_is(const EVP_MD *md, const Bytes &in, const Bytes &want)
{
    Bytes got;
    return digest_oneshot(md, in, &got) && got == want;
}

bool cipher_is(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &in, const Bytes &want)
{
    Bytes got;
    return cipher_oneshot(c, 1, key, iv, in, &got) && got == want;
}

/* One sealed GCM message on a fresh context: ciphertext || tag. */
bool gcm_seal(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const Bytes &in, Bytes *out)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    int l = 0, f = 0;
    out->assign(in.size() + 16, 0);
    return x && EVP_EncryptInit_ex2(x.get(), c, key.data(), iv.data(), nullptr)
           && EVP_EncryptUpdate(x.get(), nullptr, &l, key.data(), 13)
           && EVP_EncryptUpdate(x.get(), out->data(), &l, in.data(), (int)in.size())
           && EVP_EncryptFinal_ex(x.get(), out->data() + l, &f)
           && EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_GET_TAG, 16, out->data() + in.size()) > 0;
}

/* Wait for a child; "ok", "hang" (alarm) or a description. */
std::string reap(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return "waitpid failed";
    if (WIFSIGNALED(status))
        return WTERMSIG(status) == SIGALRM ? "hang" : "signal " + std::to_string(WTERMSIG(status));
    if (WEXITSTATUS(status) != 0)
        return "wrong result (exit " + std::to_string(WEXITSTATUS(status)) + ")";
    return "ok";
}

struct Aligned {
    unsigned char *p = nullptr;
    explicit Aligned(size_t n)
    {
        if (posix_memalign((void **)&p, 4096, n) != 0)
            p = nullptr;
    }
    ~Aligned() { free(p); }
};

} // namespace

class ThreadsAndFork : public KernelTest {};
/* AF_ALG only: not in the /dev/crypto runs (test/CMakeLists.txt). */
class AfalgFork : public KernelTest {};

TEST_F(ThreadsAndFork, ForksWhileThreadsWork)
{
    MdPtr hmd, dmd;
    need_md("SHA2-256", &hmd, &dmd);
    if (!hmd)
        return;
    CipherPtr hc, dc;
    need_cipher("AES-128-CBC", &hc, &dc);
    if (!hc)
        return;
    CipherPtr hg, dg;
    need_cipher("AES-128-GCM", &hg, &dg);
    if (!hg)
        return;
    const char *e = getenv("HWAF_TEST_FORKS");
    const int forks = e != nullptr ? atoi(e) : 1000;
    Bytes msg = random_bytes(3000), key = random_bytes(16), iv = random_bytes(16), pt = random_bytes(5000);
    Bytes md_want, ct_want;
    ASSERT_TRUE(digest_oneshot(dmd.get(), msg, &md_want));
    ASSERT_TRUE(cipher_oneshot(dc.get(), 1, key, iv, pt, &ct_want));
    Bytes gcm_in = random_bytes(4096), gcm_iv = random_bytes(12), gcm_want;
    ASSERT_TRUE(gcm_seal(dg.get(), key, gcm_iv, gcm_in, &gcm_want));

    std::atomic<bool> stop{false};
    std::atomic<long> thread_ops{0}, thread_bad{0};
    std::vector<std::thread> threads;
    static const char *const kinds[] = {"digest", "cipher", "digest", "cipher", "GCM"};
    for (int t = 0; t < 5; t++) {
        threads.emplace_back([&, t] {
            while (!stop.load()) {
                Bytes got;
                bool done = t == 4       ? gcm_seal(hg.get(), key, gcm_iv, gcm_in, &got)
                            : t % 2 == 0 ? digest_oneshot(hmd.get(), msg, &got)
                                         : cipher_oneshot(hc.get(), 1, key, iv, pt, &got);
                bool ok = done && got == (t == 4 ? gcm_want : t % 2 == 0 ? md_want : ct_want);
                /* Leave the forking thread some of the two CPUs. */
                usleep(200);
                if (!ok && thread_bad++ == 0)
                    fprintf(stderr, "hwaf-tests: thread %d (%s): %s %s\n", t, kinds[t],
                            done ? "wrong bytes" : "failed", error_queue_text().c_str());
                thread_ops++;
            }
            ERR_clear_error();
        });
    }
    int hangs = 0, wrong = 0;
    std::string first;
    /* Up to four children at a time, reaped oldest first. */
    std::vector<std::pair<int, pid_t>> kids;
    auto reap_one = [&] {
        std::string r = reap(kids.front().second);
        if (r == "hang")
            hangs++;
        else if (r != "ok")
            wrong++;
        if (r != "ok" && first.empty())
            first = "fork " + std::to_string(kids.front().first) + ": " + r;
        kids.erase(kids.begin());
    };
    for (int i = 0; i < forks; i++) {
        fflush(nullptr);
        pid_t pid = fork();
        if (pid < 0) {
            ADD_FAILURE() << "fork: " << strerror(errno);
            break;
        }
        if (pid == 0) {
            alarm(kChildAlarm);
            int rc = 0;
            if (!digest_is(hmd.get(), msg, md_want))
                rc |= 1;
            if (!cipher_is(hc.get(), key, iv, pt, ct_want))
                rc |= 2;
            _exit(rc);
        }
        kids.emplace_back(i, pid);
        if (kids.size() >= 4)
            reap_one();
    }
    while (!kids.empty())
        reap_one();
    stop = true;
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(hangs, 0) << first;
    EXPECT_EQ(wrong, 0) << first;
    EXPECT_EQ(thread_bad.load(), 0) << "wrong results in the parent's threads";
    EXPECT_GT(thread_ops.load(), 0);
    fprintf(stderr, "hwaf-tests: %d forks (%d hung, %d wrong) while 5 threads did %ld operations\n", forks, hangs,
            wrong, thread_ops.load());
}

/*
 * One trial in a fresh process: a thread runs the first large aligned
 * update (zerocopy = auto measures there) while the main thread forks
 * children; each child encrypts 256 KiB, aligned, under an alarm.  Exit
 * status: kTrialRan all children right (not 0, which is also what a run
 * of no test at all gives), 3 a child hung, anything else a failure.
 */
static const int kTrialRan = 10;

TEST_F(AfalgFork, DISABLED_ZeroCopyTrial)
{
    LibCtx lib(make_config("zerocopy = auto\nzerocopy_min = 65536\n"));
    ASSERT_TRUE(lib.hwaf_loaded()) << lib.load_errors();
    CipherPtr h(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=hwaf,hwaf.backend=afalg,hwaf.hw=no"));
    CipherPtr d(EVP_CIPHER_fetch(lib.get(), "AES-128-CBC", "provider=default"));
    ASSERT_TRUE(h && d);
    const size_t len = 256 * 1024;
    Aligned in(len), out(len);
    ASSERT_TRUE(in.p && out.p);
    for (size_t i = 0; i < len; i++)
        in.p[i] = (unsigned char)(i * 13 + 5);
    Bytes key(16, 0x21), iv(16, 0x43), want;
    ASSERT_TRUE(cipher_oneshot(d.get(), 1, key, iv, Bytes(in.p, in.p + len), &want, 0));
    auto encrypt = [&](unsigned char *o) {
        CtxPtr c(EVP_CIPHER_CTX_new());
        int l = 0;
        return EVP_EncryptInit_ex2(c.get(), h.get(), key.data(), iv.data(), nullptr)
               && EVP_CIPHER_CTX_set_padding(c.get(), 0) && EVP_EncryptUpdate(c.get(), o, &l, in.p, (int)len)
               && (size_t)l == len && memcmp(o, want.data(), len) == 0;
    };
    std::atomic<bool> done{false};
    Aligned tout(len);
    bool tok = false;
    std::thread t([&] {
        tok = encrypt(tout.p);
        done = true;
    });
    int hangs = 0, wrong = 0, n = 0;
    pid_t kids[16];
    while (n < 1 || (!done.load() && n < 16)) {
        fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            alarm(kChildAlarm);
            _exit(encrypt(out.p) ? 0 : 2);
        }
        kids[n++] = pid;
        usleep(500);
    }
    for (int i = 0; i < n; i++) {
        std::string r = reap(kids[i]);
        hangs += r == "hang";
        wrong += r != "hang" && r != "ok";
    }
    t.join();
    EXPECT_TRUE(tok);
    fprintf(stderr, "hwaf-tests: zero-copy trial: %d children, %d hung, %d wrong\n", n, hangs, wrong);
    if (hangs > 0)
        _exit(3);
    if (wrong > 0 || !tok)
        _exit(2);
    _exit(kTrialRan);   /* not 0: a run of no test at all exits 0 */
}

TEST_F(AfalgFork, ForksDuringZeroCopyMeasurement)
{
    if (!kernel_has_afalg()) {
        ADD_FAILURE() << "no AF_ALG";
        return;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    ASSERT_GT(n, 0);
    self[n] = '\0';
    int hung = 0, wrong = 0;
    const int trials = 3;
    for (int i = 0; i < trials; i++) {
        fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            /* The trial runs its one test itself: not a shard of this run
             * (a shard's variables would filter it out), not sharded again. */
            unsetenv("GTEST_TOTAL_SHARDS");
            unsetenv("GTEST_SHARD_INDEX");
            setenv("HWAF_TEST_SHARDS", "1", 1);
            execl(self, self, "--gtest_also_run_disabled_tests",
                  "--gtest_filter=AfalgFork.DISABLED_ZeroCopyTrial", "--gtest_brief=1", (char *)nullptr);
            _exit(127);
        }
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status)) << "trial died";
        ASSERT_NE(WEXITSTATUS(status), 127) << "exec failed";
        ASSERT_NE(WEXITSTATUS(status), 0) << "the trial did not run";
        hung += WEXITSTATUS(status) == 3;
        wrong += WEXITSTATUS(status) != kTrialRan && WEXITSTATUS(status) != 3;
    }
    EXPECT_EQ(hung, 0) << "trials in which a child forked during the measurement hung";
    EXPECT_EQ(wrong, 0) << "trials with wrong bytes or failures";
}
