/*
 * Fault injection at every system call hwaf makes.
 *
 * For every algorithm (both directions for ciphers; AF_ALG with zero-copy
 * off and on, or /dev/crypto with HWAF_TEST_BACKEND=devcrypto) one life
 * cycle of a context -- init, update of 100 bytes, update of 16 KiB of
 * page-aligned data, final, the same again after a re-init of the same
 * context, free -- is first run with hwaf's calls only counted.  Then each
 * call n = 1, 2, ... of that cycle is failed in turn with EMFILE, ENFILE,
 * ENOMEM, EINTR, EAGAIN, EFAULT, EBADMSG, EINVAL, or made short (half the
 * bytes read or written).  Every case must end in
 *   - output equal to the default provider's, or
 *   - a failed EVP call whose error names the call and the errno (a short
 *     call: any error with a reason string),
 * never a hang (an alarm per case); a context whose cycle failed must
 * refuse to go on (one more update and a final, without an init: the
 * message is no longer whole) with an error, and give the right output
 * after the re-init; and afterwards a fresh context
 * must give the right output (no poisoned pool).  The fault shim
 * (fault_shim.c) counts and fails only calls made from hwaf.so.
 */
#include "../hwaf_test.h"
#include "fault_shim.h"

#include <openssl/core_names.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

using namespace hwaf_test;

namespace {

struct Fault {
    enum fault_kind kind;
    int err;
    const char *name;
};
const Fault kFaults[] = {
    {FAULT_ERRNO, EMFILE, "EMFILE"}, {FAULT_ERRNO, ENFILE, "ENFILE"},
    {FAULT_ERRNO, ENOMEM, "ENOMEM"}, {FAULT_ERRNO, EINTR, "EINTR"},
    {FAULT_ERRNO, EAGAIN, "EAGAIN"}, {FAULT_ERRNO, EFAULT, "EFAULT"},
    {FAULT_ERRNO, EBADMSG, "EBADMSG"}, {FAULT_ERRNO, EINVAL, "EINVAL"},
    {FAULT_SHORT, 0, "short"},
};

/* Calls hwaf names in its errors by another name. */
bool names_call(const std::string &err, const std::string &call)
{
    if (err.find(call) != std::string::npos)
        return true;
    return (call == "send" && err.find("sendmsg") != std::string::npos)
        || (call == "recv" && err.find("read") != std::string::npos);
}

struct Totals {
    unsigned long cases = 0, output = 0, errors = 0, retried = 0, defects = 0;
};
Totals g_total;

char g_case[256];
void on_alarm(int)
{
    static const char msg[] = "\nhwaf-faults: case hangs (no answer in 30 s): ";
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    r = write(2, g_case, strlen(g_case));
    r = write(2, "\n", 1);
    (void)r;
    _exit(3);
}

class Summary : public ::testing::Environment {
    void TearDown() override
    {
        /* The matrix ran (not only ProbeFaults) yet injected nothing. */
        const ::testing::UnitTest *u = ::testing::UnitTest::GetInstance();
        int matrix = 0;
        for (int i = 0; i < u->total_test_suite_count(); i++) {
            const std::string n = u->GetTestSuite(i)->name();
            if (n.size() >= 7 && n.compare(n.size() - 7, 7, "/Faults") == 0)
                matrix += u->GetTestSuite(i)->test_to_run_count();
        }
        if (matrix > 0 && g_total.cases == 0)
            ADD_FAILURE() << "no fault was injected";
        fprintf(stderr,
                "hwaf-faults: %lu injected cases: %lu correct output (%lu after EINTR), "
                "%lu clean errors, %lu defects\n",
                g_total.cases, g_total.output, g_total.retried, g_total.errors, g_total.defects);
    }
};
::testing::Environment *const g_summary = ::testing::AddGlobalTestEnvironment(new Summary);

/* One life cycle: run(ctx, out) is init + updates + final on ctx. */
struct Cycle {
    std::function<void *()> make;
    std::function<void(void *)> free;
    std::function<bool(void *, Bytes *)> run_hwaf;
    std::function<bool(void *)> go_on;   /* update + final, no init */
    Bytes want;
};

class Faults : public KernelTest, public ::testing::WithParamInterface<std::string> {
protected:
    void run_matrix(const std::string &label, Cycle &cy);
    void run_aead_mac(const std::string &name, const unsigned char *big, size_t bigl);
    unsigned long cases_ = 0, defects_ = 0;
    std::string report_;
    std::map<std::string, unsigned> kinds_;
};

void Faults::run_matrix(const std::string &label, Cycle &cy)
{
    /* Count the calls of one cycle in steady state. */
    void *c = cy.make();
    Bytes out;
    ASSERT_TRUE(cy.run_hwaf(c, &out)) << label << ": " << error_queue_text();
    ASSERT_EQ(tohex(out), tohex(cy.want)) << label;
    cy.free(c);
    c = cy.make();
    fault_arm(0, FAULT_COUNT, 0);
    bool ok1 = cy.run_hwaf(c, &out);
    bool ok2 = cy.run_hwaf(c, &out);
    cy.free(c);
    unsigned total = fault_calls();
    fault_disarm();
    ASSERT_TRUE(ok1 && ok2) << label << ": " << error_queue_text();
    ASSERT_TRUE(fault_shim_active()) << "the fault shim never saw a call from hwaf.so";
    ASSERT_GT(total, 0u) << label << ": no system call counted";
    std::string calls;
    for (unsigned i = 1; i <= total && fault_call_name(i) != nullptr; i++)
        calls += std::string(i > 1 ? " " : "") + fault_call_name(i);
    fprintf(stderr, "hwaf-faults: %s: %u calls per cycle: %s\n", label.c_str(), total, calls.c_str());

    unsigned long before = cases_;
    for (const Fault &f : kFaults) {
        for (unsigned n = 1; n <= total + 2; n++) {
            snprintf(g_case, sizeof(g_case), "%s: %s at call %u", label.c_str(), f.name, n);
            alarm(30);
            ERR_clear_error();
            c = cy.make();
            fault_arm(n, f.kind, f.err);
            Bytes o1, o2;
            bool r1 = cy.run_hwaf(c, &o1);
            unsigned c1 = fault_calls();
            std::string e1 = r1 ? "" : error_queue_text();
            ERR_clear_error();
            bool gone_on = false;
            std::string eg;
            if (!r1) {
                gone_on = cy.go_on(c);
                eg = gone_on ? "" : error_queue_text();
                ERR_clear_error();
            }
            bool r2 = cy.run_hwaf(c, &o2);
            unsigned c2 = fault_calls();
            std::string e2 = r2 ? "" : error_queue_text();
            ERR_clear_error();
            cy.free(c);
            const char *fired = fault_fired();
            unsigned reached = fault_calls();
            fault_disarm();
            ERR_clear_error();
            /* Afterwards a fresh context works (nothing stale in a pool). */
            Bytes o3;
            c = cy.make();
            bool r3 = cy.run_hwaf(c, &o3);
            std::string e3 = r3 ? "" : error_queue_text();
            cy.free(c);
            alarm(0);
            if (fired == nullptr) {
                if (reached < n)
                    break;  /* past the end of the cycle */
                continue;   /* a short fault on a call that has no length */
            }
            cases_++;
            g_total.cases++;
            std::ostringstream why;
            std::string call = fired;
            auto judge = [&](bool r, const Bytes &o, const std::string &e, const char *which) {
                if (r) {
                    if (o != cy.want)
                        why << which << " returned wrong bytes with success; ";
                    return;
                }
                if (e.empty())
                    why << which << " failed without an error; ";
                else if (f.kind == FAULT_ERRNO && e.find("(errno " + std::to_string(f.err) + ")") == std::string::npos)
                    why << which << " failed without naming errno " << f.err << ": " << e << "; ";
                else if (f.kind == FAULT_ERRNO && !names_call(e, call))
                    why << which << " failed without naming the call " << call << ": " << e << "; ";
            };
            bool in1 = n <= c1, in2 = !in1 && n <= c2;
            if (!r1 && gone_on)
                why << "going on after a failure without an init succeeded; ";
            else if (!r1 && eg.empty())
                why << "going on after a failure failed without an error; ";
            if (in1) {
                judge(r1, o1, e1, "first run");
                if (!r2 || o2 != cy.want)
                    why << "run after re-init " << (r2 ? "returned wrong bytes" : "failed: " + e2) << "; ";
            } else if (in2) {
                if (!r1 || o1 != cy.want)
                    why << "run before the fault " << (r1 ? "returned wrong bytes" : "failed: " + e1) << "; ";
                judge(r2, o2, e2, "run after re-init");
            } else if (!r1 || !r2 || o1 != cy.want || o2 != cy.want) {
                why << "runs before a fault in free went wrong; ";
            }
            if (!r3 || o3 != cy.want)
                why << "fresh context afterwards " << (r3 ? "returned wrong bytes" : "failed: " + e3) << "; ";
            std::string w = why.str();
            if (!w.empty()) {
                defects_++;
                g_total.defects++;
                /* One example per call and kind of failure. */
                std::string kind = call + ": " + w.substr(0, w.find_first_of(":;"));
                if (kinds_[kind]++ == 0)
                    report_ += std::string(g_case) + " (" + call + "): " + w + "\n";
            } else if ((in1 && r1) || (in2 && r2) || (!in1 && !in2)) {
                g_total.output++;
                if (f.kind == FAULT_ERRNO && f.err == EINTR)
                    g_total.retried++;
            } else {
                g_total.errors++;
            }
        }
    }
    fprintf(stderr, "hwaf-faults: %s: %lu cases\n", label.c_str(), cases_ - before);
}

std::vector<std::string> configs()
{
    if (env().backend == "devcrypto")
        return {""};
    return {"zerocopy = no", "zerocopy = yes\nzerocopy_min = 4096"};
}

std::string backend_label() { return env().backend == "devcrypto" ? "devcrypto" : "afalg"; }

struct AlignedFree { void operator()(unsigned char *p) const { free(p); } };

void on_alarm_install()
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, nullptr);
}

/*
 * GCM (both directions: AAD, 100 bytes, 16 KiB, final and tag; one AEAD
 * request and then the AES-CTR continuation) and HMAC (EVP_MAC: 100
 * bytes, 16 KiB, final), on either backend: one configuration, as neither
 * has a zero-copy path.
 */
void Faults::run_aead_mac(const std::string &name, const unsigned char *big, size_t bigl)
{
    on_alarm_install();
    LibCtx lc;
    ASSERT_TRUE(lc.hwaf_loaded()) << lc.load_errors();
    const Bytes small = random_bytes(100), aad = random_bytes(20), key = random_bytes(32);
    if (name.rfind("HMAC-", 0) == 0) {
        const std::string md = name.substr(5);
        EVP_MAC *hm = EVP_MAC_fetch(lc.get(), "HMAC", hwaf_query().c_str());
        EVP_MAC *dm = EVP_MAC_fetch(lc.get(), "HMAC", "provider=default");
        ASSERT_TRUE(hm && dm) << error_queue_text();
        auto run = [&](EVP_MAC_CTX *c, Bytes *out) {
            OSSL_PARAM p[] = {OSSL_PARAM_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)md.c_str(), 0),
                              OSSL_PARAM_END};
            unsigned char m[EVP_MAX_MD_SIZE];
            size_t ml = 0;
            out->clear();
            if (!EVP_MAC_init(c, key.data(), key.size(), p) || !EVP_MAC_update(c, small.data(), small.size())
                || !EVP_MAC_update(c, big, bigl) || !EVP_MAC_final(c, m, &ml, sizeof(m)))
                return false;
            out->assign(m, m + ml);
            return true;
        };
        Cycle cy;
        cy.make = [hm] { return (void *)EVP_MAC_CTX_new(hm); };
        cy.free = [](void *c) { EVP_MAC_CTX_free((EVP_MAC_CTX *)c); };
        cy.run_hwaf = [&](void *c, Bytes *o) { return run((EVP_MAC_CTX *)c, o); };
        cy.go_on = [&](void *c) {
            unsigned char m[EVP_MAX_MD_SIZE];
            size_t ml = 0;
            return EVP_MAC_update((EVP_MAC_CTX *)c, small.data(), small.size()) == 1
                && EVP_MAC_final((EVP_MAC_CTX *)c, m, &ml, sizeof(m)) == 1;
        };
        EVP_MAC_CTX *dc = EVP_MAC_CTX_new(dm);
        ASSERT_TRUE(run(dc, &cy.want));
        EVP_MAC_CTX_free(dc);
        run_matrix(name + " " + backend_label(), cy);
        EVP_MAC_free(hm);
        EVP_MAC_free(dm);
        return;
    }
    CipherPtr h(EVP_CIPHER_fetch(lc.get(), name.c_str(), hwaf_query().c_str()));
    CipherPtr d(EVP_CIPHER_fetch(lc.get(), name.c_str(), "provider=default"));
    ASSERT_TRUE(h && d) << name << ": " << error_queue_text();
    const Bytes k(key.begin(), key.begin() + EVP_CIPHER_get_key_length(d.get())), iv = random_bytes(12);
    Bytes ct, tag(16);
    /* A /dev/crypto GCM message is one request, which the CUSE device
     * bounds (4080 bytes of AAD and data in this run): 2 KiB there. */
    if (env().backend == "devcrypto" && bigl > 2048)
        bigl = 2048;
    /* The ciphertext and tag that decryption takes, from the default provider. */
    Bytes plain = small;
    plain.insert(plain.end(), big, big + bigl);
    for (int enc = 1; enc >= 0; enc--) {
        /* Encrypt: output ciphertext || tag; decrypt: the plaintext. */
        auto run = [&, enc](const EVP_CIPHER *ci, void *vc, Bytes *out) {
            EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)vc;
            Bytes o(plain.size() + 32);
            const Bytes &src = enc ? plain : ct;
            int l = 0, l1 = 0, l2 = 0, l3 = 0;
            out->clear();
            if (!EVP_CipherInit_ex2(c, ci, k.data(), iv.data(), enc, nullptr)
                || !EVP_CipherUpdate(c, nullptr, &l, aad.data(), (int)aad.size())
                || !EVP_CipherUpdate(c, o.data(), &l1, src.data(), 100)
                || !EVP_CipherUpdate(c, o.data() + l1, &l2, src.data() + 100, (int)(src.size() - 100)))
                return false;
            if (!enc && !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, tag.data()))
                return false;
            if (!EVP_CipherFinal_ex(c, o.data() + l1 + l2, &l3))
                return false;
            out->assign(o.begin(), o.begin() + l1 + l2 + l3);
            if (enc) {
                unsigned char t[16];
                if (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, t))
                    return false;
                out->insert(out->end(), t, t + 16);
            }
            return true;
        };
        Cycle cy;
        cy.make = [] { return (void *)EVP_CIPHER_CTX_new(); };
        cy.free = [](void *c) { EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)c); };
        cy.run_hwaf = [&, run](void *c, Bytes *o) { return run(h.get(), c, o); };
        cy.go_on = [&](void *vc) {
            EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)vc;
            Bytes o(small.size() + 32);
            int l1 = 0, l2 = 0;
            return EVP_CipherUpdate(c, o.data(), &l1, small.data(), (int)small.size()) == 1
                && EVP_CipherFinal_ex(c, o.data() + l1, &l2) == 1;
        };
        CtxPtr dc(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(run(d.get(), dc.get(), &cy.want)) << error_queue_text();
        if (enc) {
            ct.assign(cy.want.begin(), cy.want.end() - 16);
            tag.assign(cy.want.end() - 16, cy.want.end());
        }
        run_matrix(name + " " + backend_label() + " " + (enc ? "encrypt" : "decrypt"), cy);
    }
}

TEST_P(Faults, EveryCallEveryErrno)
{
    on_alarm_install();

    const std::string name = GetParam();
    bool is_md = name.rfind("SHA", 0) == 0;
    const size_t kBig = 16384;
    std::unique_ptr<unsigned char, AlignedFree> big((unsigned char *)aligned_alloc(4096, kBig));
    /* aligned_alloc takes sizes that are a multiple of the alignment only. */
    std::unique_ptr<unsigned char, AlignedFree> bigout((unsigned char *)aligned_alloc(4096, kBig + 4096));
    Bytes rnd = random_bytes(kBig);
    memcpy(big.get(), rnd.data(), kBig);
    if (name.find("GCM") != std::string::npos || name.rfind("HMAC", 0) == 0)
        run_aead_mac(name, big.get(), kBig);
    else

    for (const std::string &cfg : configs()) {
        std::unique_ptr<LibCtx> lc(cfg.empty() ? new LibCtx() : new LibCtx(make_config(cfg)));
        ASSERT_TRUE(lc->hwaf_loaded()) << lc->load_errors();
        std::string label = name + (env().backend == "devcrypto" ? " devcrypto" : " afalg ")
            + (cfg.empty() ? "" : cfg.substr(0, cfg.find('\n')));
        if (is_md) {
            MdPtr h(EVP_MD_fetch(lc->get(), name.c_str(), hwaf_query().c_str()));
            MdPtr d(EVP_MD_fetch(lc->get(), name.c_str(), "provider=default"));
            ASSERT_TRUE(h && d) << name << ": " << error_queue_text();
            Bytes small = random_bytes(100);
            auto run = [&](const EVP_MD *md, void *vc, Bytes *out) {
                EVP_MD_CTX *c = (EVP_MD_CTX *)vc;
                unsigned char m[EVP_MAX_MD_SIZE];
                unsigned int ml = 0;
                out->clear();
                if (!EVP_DigestInit_ex2(c, md, nullptr) || !EVP_DigestUpdate(c, small.data(), small.size())
                    || !EVP_DigestUpdate(c, big.get(), kBig) || !EVP_DigestFinal_ex(c, m, &ml))
                    return false;
                out->assign(m, m + ml);
                return true;
            };
            Cycle cy;
            cy.make = [] { return (void *)EVP_MD_CTX_new(); };
            cy.free = [](void *c) { EVP_MD_CTX_free((EVP_MD_CTX *)c); };
            cy.run_hwaf = [&](void *c, Bytes *o) { return run(h.get(), c, o); };
            cy.go_on = [&](void *vc) {
                EVP_MD_CTX *c = (EVP_MD_CTX *)vc;
                unsigned char m[EVP_MAX_MD_SIZE];
                unsigned int ml = 0;
                return EVP_DigestUpdate(c, small.data(), small.size()) == 1
                    && EVP_DigestFinal_ex(c, m, &ml) == 1;
            };
            MdCtxPtr dc(EVP_MD_CTX_new());
            ASSERT_TRUE(run(d.get(), dc.get(), &cy.want));
            run_matrix(label, cy);
            continue;
        }
        CipherPtr h(EVP_CIPHER_fetch(lc->get(), name.c_str(), hwaf_query().c_str()));
        CipherPtr d(EVP_CIPHER_fetch(lc->get(), name.c_str(), "provider=default"));
        ASSERT_TRUE(h && d) << name << ": " << error_queue_text();
        size_t keylen = (size_t)EVP_CIPHER_get_key_length(d.get());
        Bytes key = random_bytes(keylen), iv = random_bytes(16);
        for (int enc = 1; enc >= 0; enc--) {
            /* Decryption of random data: no padding, whole blocks. */
            Bytes small = random_bytes(enc ? 100 : 112);
            auto run = [&](const EVP_CIPHER *ci, void *vc, Bytes *out) {
                EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)vc;
                int l1 = 0, l2 = 0, l3 = 0;
                out->clear();
                Bytes o1(small.size() + 32);
                if (!EVP_CipherInit_ex2(c, ci, key.data(), iv.data(), enc, nullptr))
                    return false;
                if (!enc)
                    EVP_CIPHER_CTX_set_padding(c, 0);
                if (!EVP_CipherUpdate(c, o1.data(), &l1, small.data(), (int)small.size())
                    || !EVP_CipherUpdate(c, bigout.get(), &l2, big.get(), (int)kBig))
                    return false;
                out->assign(o1.data(), o1.data() + l1);
                out->insert(out->end(), bigout.get(), bigout.get() + l2);
                if (!EVP_CipherFinal_ex(c, o1.data(), &l3))
                    return false;
                out->insert(out->end(), o1.data(), o1.data() + l3);
                return true;
            };
            Cycle cy;
            cy.make = [] { return (void *)EVP_CIPHER_CTX_new(); };
            cy.free = [](void *c) { EVP_CIPHER_CTX_free((EVP_CIPHER_CTX *)c); };
            cy.run_hwaf = [&](void *c, Bytes *o) { return run(h.get(), c, o); };
            cy.go_on = [&](void *vc) {
                EVP_CIPHER_CTX *c = (EVP_CIPHER_CTX *)vc;
                Bytes o(small.size() + 32);
                int l1 = 0, l2 = 0;
                return EVP_CipherUpdate(c, o.data(), &l1, small.data(), (int)small.size()) == 1
                    && EVP_CipherFinal_ex(c, o.data() + l1, &l2) == 1;
            };
            CtxPtr dc(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(run(d.get(), dc.get(), &cy.want));
            run_matrix(label + (enc ? " encrypt" : " decrypt"), cy);
        }
    }
    EXPECT_GT(cases_, 0u);
    std::string counts;
    for (const auto &k : kinds_)
        counts += "  " + std::to_string(k.second) + " x " + k.first + "\n";
    EXPECT_EQ(defects_, 0u) << defects_ << " of " << cases_ << " cases went wrong:\n" << counts
                            << "one example of each:\n" << report_;
}

/*
 * GCM's kept data: from 1 KiB on, pages of the context's own (mmap) that
 * the kernel writes into; when no mapping can be had (vm.max_map_count
 * reached: ENOMEM), the heap and the bounce buffer instead.  The first
 * mmap of a fresh context's message is failed (only mmap counted):
 * ciphertext, tag and plaintext must equal the default provider's, in one
 * update (the first request lands in the kept data) and in two (the
 * counter-mode continuation copies into it), and a second message of the
 * same context too.  Forced to the kernel.
 */
class KeptDataFaults : public KernelTest {};

TEST_F(KeptDataFaults, GcmWithoutMappingUsesTheHeap)
{
    on_alarm_install();
    LibCtx lc;
    ASSERT_TRUE(lc.hwaf_loaded()) << lc.load_errors();
    CipherPtr h(EVP_CIPHER_fetch(lc.get(), "AES-128-GCM", hwaf_query().c_str()));
    CipherPtr d(EVP_CIPHER_fetch(lc.get(), "AES-128-GCM", "provider=default"));
    ASSERT_TRUE(h && d) << error_queue_text();
    const Bytes key = random_bytes(16), iv = random_bytes(12), aad = random_bytes(13);
    /* The CUSE device bounds a request at 4080 bytes of AAD and data. */
    const size_t big = env().backend == "devcrypto" ? 2048 : 16384;
    for (size_t len : {(size_t)1024, big}) {
        const Bytes plain = random_bytes(len);
        for (size_t first : {len, (size_t)100}) {
            /* Ciphertext || tag when encrypting, plaintext when decrypting;
             * in = plaintext, or ciphertext || tag. */
            auto run = [&](const EVP_CIPHER *ci, EVP_CIPHER_CTX *c, int enc, const Bytes &in,
                           Bytes *out) {
                int force = 1, l = 0, l1 = 0, l2 = 0, l3 = 0;
                OSSL_PARAM p[] = {OSSL_PARAM_int(HWAF_PARAM_OFFLOAD, &force), OSSL_PARAM_END};
                Bytes o(len + 32), tag(16);
                if (!enc)
                    tag.assign(in.end() - 16, in.end());
                out->clear();
                if (!EVP_CipherInit_ex2(c, ci, key.data(), iv.data(), enc,
                                        ci == h.get() ? p : nullptr)
                    || !EVP_CipherUpdate(c, nullptr, &l, aad.data(), (int)aad.size())
                    || !EVP_CipherUpdate(c, o.data(), &l1, in.data(), (int)first)
                    || (first < len
                        && !EVP_CipherUpdate(c, o.data() + l1, &l2, in.data() + first,
                                             (int)(len - first)))
                    || (!enc && !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, tag.data()))
                    || !EVP_CipherFinal_ex(c, o.data() + l1 + l2, &l3))
                    return false;
                out->assign(o.begin(), o.begin() + l1 + l2 + l3);
                if (enc && !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag.data()))
                    return false;
                if (enc)
                    out->insert(out->end(), tag.begin(), tag.end());
                return true;
            };
            Bytes sealed, opened;
            CtxPtr dc(EVP_CIPHER_CTX_new());
            ASSERT_TRUE(run(d.get(), dc.get(), 1, plain, &sealed));
            for (int enc = 1; enc >= 0; enc--) {
                const Bytes &in = enc ? plain : sealed, &want = enc ? sealed : plain;
                std::string what = std::to_string(len) + " bytes, first update "
                    + std::to_string(first) + (enc ? ", encrypt" : ", decrypt");
                Bytes out;
                /* After one message to warm up (this thread's bounce
                 * buffer is mapped once, at its first read), the first
                 * mmap of a fresh context's message, refused.  Only mmap
                 * is counted: how many requests a message makes depends
                 * on the device limit hwaf has learned so far. */
                CtxPtr c(EVP_CIPHER_CTX_new());
                ASSERT_TRUE(run(h.get(), c.get(), enc, in, &out)) << what << ": " << error_queue_text();
                c.reset(EVP_CIPHER_CTX_new());
                fault_mmap_only(1);
                fault_arm(1, FAULT_ERRNO, ENOMEM);
                bool ok = run(h.get(), c.get(), enc, in, &out);
                const char *fired = fault_fired();
                fault_disarm();
                fault_mmap_only(0);
                EXPECT_TRUE(fired != nullptr && strcmp(fired, "mmap") == 0) << what;
                ASSERT_TRUE(ok) << what << ": " << error_queue_text();
                EXPECT_EQ(tohex(out), tohex(want)) << what;
                /* The context's next message, on the heap buffer it kept. */
                ASSERT_TRUE(run(h.get(), c.get(), enc, in, &out)) << what << ": " << error_queue_text();
                EXPECT_EQ(tohex(out), tohex(want)) << what << ", second message";
            }
        }
    }
}

std::vector<std::string> all_algs()
{
    std::vector<std::string> v;
    for (const CipherAlg &a : kCiphers)
        v.push_back(a.name);
    for (const DigestAlg &a : kDigests)
        v.push_back(a.name);
    for (const char *n : {"AES-128-GCM", "AES-256-GCM", "HMAC-SHA1", "HMAC-SHA2-256", "HMAC-SHA2-512"})
        v.push_back(n);
    return v;
}

INSTANTIATE_TEST_SUITE_P(All, Faults, ::testing::ValuesIn(all_algs()),
                         [](const ::testing::TestParamInfo<std::string> &i) { return test_name(i.param.c_str()); });

} // namespace

/*
 * Run a fault program (one forked child per case, each case's verdict on
 * its output); it must exit 0, report no defect and end with its summary.
 * Its output is echoed to stderr.
 */
static void expect_no_defects(const std::string &cmd, const char *program)
{
    FILE *f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    std::string out;
    char buf[4096];
    while (fgets(buf, sizeof(buf), f) != nullptr) {
        out += buf;
        fputs(buf, stderr);
    }
    const int rc = pclose(f);
    EXPECT_EQ(rc, 0) << program << " failed";
    EXPECT_EQ(out.find("defect:"), std::string::npos);
    EXPECT_NE(out.find(" 0 defects"), std::string::npos) << "no summary";
}

/*
 * Faults during the load-time probe: hwaf-probe-faults (probe_faults.c)
 * fails each call of the probe in turn with EMFILE, ENFILE, ENOMEM, EINTR,
 * EAGAIN, EINVAL and EFAULT, each in a process that never loaded hwaf
 * before, and checks that a passing shortage is neither blamed on the
 * kernel nor kept (the next load in the same process offers everything).
 * Each case is a process and loads hwaf twice (about 30 ms in the TCG
 * guest since the probe asks crypto_user once), so every (call, errno)
 * pair is taken; HWAF_PROBE_FAULTS_STRIDE=N takes every Nth
 * (docs/testing.md).  It also loads hwaf once under a seccomp filter
 * present before the load: the reference, and a digest forced to the
 * kernel reaches it (a filter present at load bars nothing).
 */
TEST(ProbeFaults, TransientErrorsNotCachedNotBlamedOnTheKernel)
{
    const char *s = getenv("HWAF_PROBE_FAULTS_STRIDE");
    std::string cmd = std::string(HWAF_TEST_PROBE_FAULTS) + " '" + module_dir() + "' "
                      + (s != nullptr ? s : "1") + " 2>&1";
    expect_no_defects(cmd, "hwaf-probe-faults");
}

/*
 * Known answers at first use (known_answers = first_use, the default):
 * hwaf-kat-faults runs SHA2-256 and AES-128-CBC through the test's backend
 * in processes that never loaded hwaf before, checks that the known answer
 * runs at the first kernel session and not again (also not in a child
 * after fork), then fails each call of that known answer with EINVAL (the
 * driver fails: software, counted, no more system calls, a forced context
 * fails with "kernel driver failed its known answer", also after fork and
 * in a new load) and with EMFILE (a shortage: nothing blamed, the kernel
 * next time).  Every case compares hwaf's bytes with the default provider's.
 */
TEST(KnownAnswerFaults, FailureAtFirstUseGoesToSoftwareOrFailsWhenForced)
{
    const std::string be = env().backend.empty() ? "afalg" : env().backend;
    std::string cmd = std::string(HWAF_TEST_KAT_FAULTS) + " '" + module_dir() + "' " + be + " 2>&1";
    expect_no_defects(cmd, "hwaf-kat-faults");
}
