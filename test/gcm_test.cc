/*
 * AES-GCM's EVP control surface, step by step against the default provider:
 * the same calls on a context of each, every call's return value, output,
 * IV and tag written to a log, and the two logs compared line by line.
 *
 *  GcmIvGen*          the IV generator of OpenSSH's aes*-gcm@openssh.com and
 *                     of TLS: the whole IV (EVP_CTRL_AEAD_SET_IV_FIXED, -1)
 *                     or a fixed part of 4 bytes, EVP_CTRL_GCM_IV_GEN before
 *                     each of many messages on one context, each encrypted
 *                     under the IV handed back; the invocation field wrapping
 *                     (32 and 64 bits); copies and fork() between messages;
 *                     a peer decrypting with IV_GEN or EVP_CTRL_GCM_SET_IV_INV;
 *                     a re-init without key or IV between messages.
 *  GcmTls12*          the TLS 1.2 record mode's controls: SET_IV_FIXED with
 *                     -1, 4 and refused lengths, TLS1_AAD and its refusals,
 *                     SET_IV_INV, IV_GEN, records through EVP_Cipher() and
 *                     EVP_CipherUpdate() (return values, bytes, a tampered
 *                     record), and what a context allows after a record.
 *  GcmEvpTest*        the call orders of OpenSSL's test/evp_test.c: IV length
 *                     and tag set before the key, the tag late, copy and dup
 *                     before the AAD, AAD and data in fragments, in place.
 *  GcmIvLength*       IV lengths 1 to 128 (all but 12 in software, counted),
 *                     set before or after the key, both directions, tampering;
 *                     refused lengths; a context forced to the kernel refuses
 *                     other lengths with a reason.
 *  DispatchGcmIvGen*  IV_GEN messages straddling a threshold of 64 bytes: both
 *                     paths in one context, copies and fork() between messages,
 *                     and a context forced to the kernel.
 */
#include "hwaf_test.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <sstream>

using namespace hwaf_test;

namespace {

const char *const kGcmAlgs[] = {"AES-128-GCM", "AES-192-GCM", "AES-256-GCM"};

using Log = std::vector<std::string>;

std::string hex_or_empty(const unsigned char *p, size_t n)
{
    return n == 0 ? std::string("-") : tohex(p, n);
}

/*
 * The calls of one context, each written to the log as "prefix what -> result":
 * a refused call is "refused" (its errors dropped), a data call adds its
 * output.
 */
struct Steps {
    EVP_CIPHER_CTX *x;
    Log *log;
    std::string prefix;

    void put(const std::string &what, const std::string &result)
    {
        log->push_back(prefix + what + " -> " + result);
        ERR_clear_error();
    }
    int ctrl(const std::string &what, int type, int arg, const void *ptr)
    {
        int r = EVP_CIPHER_CTX_ctrl(x, type, arg, const_cast<void *>(ptr));
        put(what, r > 0 ? std::to_string(r) : "refused");
        return r > 0 ? r : 0;
    }
    bool init(const std::string &what, const EVP_CIPHER *c, const unsigned char *key,
              const unsigned char *iv, int enc, const OSSL_PARAM *params = nullptr)
    {
        bool ok = EVP_CipherInit_ex2(x, c, key, iv, enc, params) == 1;
        put(what, ok ? "ok" : "refused");
        return ok;
    }
    /* EVP_CipherUpdate (AAD when out is null); the output returned */
    Bytes update(const std::string &what, bool aad, const Bytes &in, bool inplace = false)
    {
        Bytes buf = in, out(in.size() + 16);
        int outl = -1;
        unsigned char *dst = aad ? nullptr : inplace ? buf.data() : out.data();
        bool ok = EVP_CipherUpdate(x, dst, &outl, buf.data(), (int)in.size()) == 1;
        if (ok && dst != nullptr && outl > 0)
            out.assign(dst, dst + outl);
        else
            out.clear();
        put(what, ok ? "outl " + std::to_string(outl) + " " + hex_or_empty(out.data(), out.size())
                     : "refused");
        return out;
    }
    /* EVP_Cipher: its return value and what it wrote */
    Bytes cipher(const std::string &what, bool out, const Bytes &in, bool inplace = true)
    {
        Bytes buf = in, o(in.size());
        unsigned char *dst = !out ? nullptr : inplace ? buf.data() : o.data();
        int r = EVP_Cipher(x, dst, in.empty() && !out ? nullptr : buf.data(), (unsigned int)in.size());
        Bytes res = dst != nullptr ? Bytes(dst, dst + in.size()) : Bytes();
        put(what, std::to_string(r) + " " + hex_or_empty(res.data(), res.size()));
        return res;
    }
    bool final(const std::string &what)
    {
        unsigned char out[32];
        int outl = -1;
        bool ok = EVP_CipherFinal_ex(x, out, &outl) == 1;
        put(what, ok ? "ok outl " + std::to_string(outl) : "refused");
        return ok;
    }
    Bytes tag(size_t n = 16)
    {
        Bytes t(n);
        if (!ctrl("get tag " + std::to_string(n), EVP_CTRL_AEAD_GET_TAG, (int)n, t.data()))
            return Bytes();
        log->back() += " " + tohex(t);
        return t;
    }
    /* EVP_CTRL_GCM_IV_GEN with arg n: the bytes it wrote (of a zeroed buffer
     * as long as the IV) */
    Bytes ivgen(int n)
    {
        Bytes b(128, 0);
        int ivlen = EVP_CIPHER_CTX_get_iv_length(x);
        if (!ctrl("iv-gen " + std::to_string(n), EVP_CTRL_GCM_IV_GEN, n, b.data()))
            return Bytes();
        b.resize(ivlen > 0 && ivlen <= 128 ? (size_t)ivlen : 128);
        log->back() += " " + tohex(b);
        return b;
    }
    /* The IV parameter (128 bytes of room, as evp_test asks) and its length */
    Bytes iv(const std::string &what)
    {
        unsigned char b[128];
        int ivlen = EVP_CIPHER_CTX_get_iv_length(x);
        bool ok = ivlen > 0 && EVP_CIPHER_CTX_get_updated_iv(x, b, sizeof(b)) == 1;
        put(what, "ivlen " + std::to_string(ivlen) + (ok ? " " + tohex(b, (size_t)ivlen) : " refused"));
        return ok ? Bytes(b, b + ivlen) : Bytes();
    }
};

/* The first line where the logs differ, with the lines before it. */
::testing::AssertionResult same_logs(const Log &h, const Log &d)
{
    size_t n = std::min(h.size(), d.size()), i = 0;
    while (i < n && h[i] == d[i])
        i++;
    if (i == n && h.size() == d.size())
        return ::testing::AssertionSuccess();
    std::ostringstream s;
    s << "the logs differ at line " << i << " of " << h.size() << " (hwaf) and " << d.size()
      << " (default)\n";
    for (size_t k = i > 3 ? i - 3 : 0; k < i; k++)
        s << "   both:    " << h[k] << "\n";
    s << "   hwaf:    " << (i < h.size() ? h[i] : "(end)") << "\n"
      << "   default: " << (i < d.size() ? d[i] : "(end)");
    return ::testing::AssertionFailure() << s.str();
}

/* The child's log and pipe, for the fatal-signal handler below */
const Log *child_log;
int child_fd = -1;

void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/*
 * A child that dies of a signal still sends the lines it logged, then the
 * signal and the faulting address, so a failure names the step it reached.
 * Only write() and the log's existing bytes are touched.
 */
void child_fatal(int sig, siginfo_t *si, void *)
{
    if (child_log != nullptr && child_fd >= 0) {
        for (const std::string &line : *child_log) {
            write_all(child_fd, line.data(), line.size());
            write_all(child_fd, "\n", 1);
        }
        char b[64] = "signal ";
        size_t n = strlen(b);
        b[n++] = (char)('0' + sig / 10);
        b[n++] = (char)('0' + sig % 10);
        memcpy(b + n, " at 0x", 6);
        n += 6;
        uintptr_t a = (uintptr_t)si->si_addr;
        for (int i = (int)sizeof(a) * 2 - 1; i >= 0; i--)
            b[n++] = "0123456789abcdef"[(a >> (4 * i)) & 0xf];
        b[n++] = '\n';
        write_all(child_fd, b, n);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/*
 * f in a child after fork(): its log lines come back through a pipe and are
 * appended to log, followed by how the child ended.
 */
void in_child(Log &log, const std::function<void(Log &)> &f)
{
    int p[2];
    if (pipe(p) != 0) {
        log.push_back("pipe failed");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        Log l;
        child_log = &l;
        child_fd = p[1];
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = child_fatal;
        sa.sa_flags = SA_SIGINFO;
        for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE})
            sigaction(sig, &sa, nullptr);
        f(l);
        std::string s;
        for (const std::string &line : l)
            s += line + "\n";
        size_t off = 0;
        while (off < s.size()) {
            ssize_t w = write(p[1], s.data() + off, s.size() - off);
            if (w <= 0)
                _exit(2);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    std::string s;
    char buf[4096];
    ssize_t r;
    while ((r = read(p[0], buf, sizeof(buf))) > 0)
        s.append(buf, (size_t)r);
    close(p[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        log.push_back("fork failed");
        return;
    }
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line))
        log.push_back("child: " + line);
    log.push_back("child exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
}

/* The invocation field (the IV's last 8 bytes) plus one, as a counter that
 * wraps within those 8 bytes. */
Bytes next_iv(Bytes iv)
{
    for (size_t i = iv.size(); i-- > iv.size() - 8;)
        if (++iv[i] != 0)
            break;
    return iv;
}

/* The default provider's encryption of one message under iv (of any
 * length): ciphertext and 16-byte tag; false when it fails. */
bool ref_seal(const EVP_CIPHER *d, const Bytes &key, const Bytes &iv, const Bytes &aad, const Bytes &pt, Bytes *ct,
              Bytes *tag)
{
    CtxPtr r(EVP_CIPHER_CTX_new());
    size_t ivlen = iv.size();
    int n = 0;
    OSSL_PARAM p[] = {OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &ivlen), OSSL_PARAM_construct_end()};
    ct->assign(pt.size(), 0);
    tag->assign(16, 0);
    return EVP_EncryptInit_ex2(r.get(), d, nullptr, nullptr, p)
           && EVP_EncryptInit_ex2(r.get(), nullptr, key.data(), iv.data(), nullptr)
           && EVP_EncryptUpdate(r.get(), nullptr, &n, aad.data(), (int)aad.size())
           && EVP_EncryptUpdate(r.get(), ct->data(), &n, pt.data(), (int)pt.size())
           && EVP_EncryptFinal_ex(r.get(), ct->data(), &n)
           && EVP_CIPHER_CTX_ctrl(r.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag->data()) > 0;
}

/* One message of an IV_GEN session. */
struct Msg {
    Bytes aad, pt;
    int genlen = 1;         /* IV_GEN's length: 1 as OpenSSH, 8 (explicit part), 12 */
    bool evp_cipher = true; /* EVP_Cipher() as OpenSSH, else EVP_CipherUpdate/Final */
    bool reinit = false;    /* EVP_CipherInit_ex2(ctx, NULL, NULL, NULL, NULL) before it */
    bool copy = false;      /* sender and peer go on as copies */
    bool tamper = false;    /* the peer gets a changed tag */
};

std::vector<Msg> make_messages(std::mt19937_64 &rng, int n, size_t maxlen)
{
    static const int genlens[] = {1, 8, 12, 4};
    std::vector<Msg> v;
    for (int i = 0; i < n; i++) {
        Msg m;
        m.aad = Bytes(4 + rng() % 2 * (rng() % 20));
        for (auto &b : m.aad)
            b = (unsigned char)rng();
        m.pt = Bytes(rng() % (maxlen + 1));
        for (auto &b : m.pt)
            b = (unsigned char)rng();
        m.genlen = genlens[i % 4];
        m.evp_cipher = i % 3 != 2;
        m.reinit = i % 5 == 1;
        m.copy = i % 7 == 4;
        m.tamper = i % 6 == 5;
        v.push_back(std::move(m));
    }
    return v;
}

/*
 * A sender and a peer with the whole IV fixed (-1), as OpenSSH: each
 * message IV_GEN on both, the sender seals (AAD, data, final, tag), the peer
 * opens it with the tag set first.  fork_at: messages fork_at to fork_at + 2
 * run in a child first, then in the parent.
 */
void ivgen_session(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, const std::vector<Msg> &msgs,
                   int fork_at, const OSSL_PARAM *params, Log &log)
{
    CtxPtr e(EVP_CIPHER_CTX_new()), p(EVP_CIPHER_CTX_new());
    Steps S{e.get(), &log, "sender "}, P{p.get(), &log, "peer "};
    if (!S.init("init", c, key.data(), nullptr, 1, params) || !P.init("init", c, key.data(), nullptr, 0, params))
        return;
    if (iv.size() != 12) {
        S.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, (int)iv.size(), nullptr);
        P.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, (int)iv.size(), nullptr);
    }
    S.ctrl("fixed -1", EVP_CTRL_GCM_SET_IV_FIXED, -1, iv.data());
    P.ctrl("fixed -1", EVP_CTRL_GCM_SET_IV_FIXED, -1, iv.data());
    auto one = [](Steps &s, Steps &p, const Msg &m, size_t i) {
        std::string n = "msg " + std::to_string(i) + " ";
        if (m.reinit) {
            s.init(n + "reinit", nullptr, nullptr, nullptr, 1);
            p.init(n + "reinit", nullptr, nullptr, nullptr, 0);
        }
        s.ivgen(m.genlen);
        Bytes ct, tag;
        if (m.evp_cipher) {
            s.cipher(n + "aad", false, m.aad);
            ct = s.cipher(n + "data", true, m.pt, false);
            s.cipher(n + "final", false, Bytes());
        } else {
            s.update(n + "aad", true, m.aad);
            ct = s.update(n + "data", false, m.pt);
            s.final(n + "final");
        }
        tag = s.tag();
        s.iv(n + "iv");
        p.ivgen(m.genlen);
        if (m.tamper && !tag.empty())
            tag[i % tag.size()] ^= 0x04;
        p.ctrl(n + "set tag", EVP_CTRL_AEAD_SET_TAG, (int)tag.size(), tag.data());
        if (m.evp_cipher) {
            p.cipher(n + "aad", false, m.aad);
            p.cipher(n + "data", true, ct, true);
            p.cipher(n + "final", false, Bytes());
        } else {
            p.update(n + "aad", true, m.aad);
            p.update(n + "data", false, ct, true);
            p.final(n + "final");
        }
    };
    for (size_t i = 0; i < msgs.size(); i++) {
        if (msgs[i].copy) {
            CtxPtr e2(EVP_CIPHER_CTX_new()), p2(EVP_CIPHER_CTX_new());
            S.put("copy", EVP_CIPHER_CTX_copy(e2.get(), S.x) ? "ok" : "refused");
            P.put("copy", EVP_CIPHER_CTX_copy(p2.get(), P.x) ? "ok" : "refused");
            e = std::move(e2);
            p = std::move(p2);
            S.x = e.get();
            P.x = p.get();
        }
        if ((int)i == fork_at)
            in_child(log, [&](Log &cl) {
                Steps cs{S.x, &cl, S.prefix}, cp{P.x, &cl, P.prefix};
                for (size_t k = i; k < i + 3 && k < msgs.size(); k++)
                    one(cs, cp, msgs[k], k);
            });
        one(S, P, msgs[i], i);
    }
}

/* IVs whose invocation field wraps within the first messages: 32 bits into
 * the next byte, and all 64 bits back to zero (the fixed part untouched). */
std::vector<Bytes> wrapping_ivs(std::mt19937_64 &rng)
{
    Bytes a(12), b, c;
    for (auto &x : a)
        x = (unsigned char)rng();
    b = a;
    c = a;
    const unsigned char w32[8] = {0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xfe};
    const unsigned char w64[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd};
    memcpy(b.data() + 4, w32, 8);
    memcpy(c.data() + 4, w64, 8);
    return {a, b, c};
}

/*
 * One GCM algorithm (the parameter) of hwaf (h) and of the default provider
 * (d); a test returns when h is empty (need_cipher failed or skipped).
 */
class GcmAlg : public KernelTest, public ::testing::WithParamInterface<const char *> {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        fetch();
    }
    void fetch()
    {
        need_cipher(GetParam(), &h, &d);
        if (d)
            keylen = (size_t)EVP_CIPHER_get_key_length(d.get());
    }
    CipherPtr h, d;
    size_t keylen = 0;
};

class GcmIvGen : public GcmAlg {};

/*
 * OpenSSH's first two packets: the IV handed back is the one the message is
 * encrypted under (ciphertext and tag as the default provider's under that
 * IV in the ordinary way), and a second message after a re-init without key
 * or IV is taken, under the next IV.
 */
TEST_P(GcmIvGen, EachMessageUnderTheIvHandedBack)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen);
    Bytes iv = unhex("0102030405060708090a0b05"), aad = random_bytes(4), pt = random_bytes(100);
    Log logs[2];
    for (int k = 0; k < 2; k++) {
        CtxPtr x(EVP_CIPHER_CTX_new());
        Steps s{x.get(), &logs[k], ""};
        s.init("init", k ? d.get() : h.get(), key.data(), nullptr, 1);
        s.ctrl("fixed -1", EVP_CTRL_GCM_SET_IV_FIXED, -1, iv.data());
        for (int m = 0; m < 2; m++) {
            if (m == 1)
                s.init("reinit", nullptr, nullptr, nullptr, 1);
            Bytes used = s.ivgen(12);
            s.update("aad", true, aad);
            Bytes ct = s.update("data", false, pt);
            s.final("final");
            Bytes tag = s.tag();
            /* The same message the ordinary way under the IV handed back. */
            Bytes out, reftag;
            ASSERT_TRUE(ref_seal(d.get(), key, used, aad, pt, &out, &reftag)) << "message " << m;
            EXPECT_EQ(tohex(ct), tohex(out)) << (k ? "default" : "hwaf") << ", message " << m << " under "
                                             << tohex(used);
            EXPECT_EQ(tohex(tag), tohex(reftag)) << (k ? "default" : "hwaf") << ", message " << m;
            EXPECT_EQ(tohex(used), tohex(m == 0 ? iv : next_iv(iv))) << "message " << m;
        }
    }
    EXPECT_TRUE(same_logs(logs[0], logs[1]));
}

/*
 * Many messages on one context with the whole IV fixed, the peer opening
 * them with IV_GEN too: random IV and IVs whose invocation field wraps;
 * EVP_Cipher() and update/final; re-inits, copies and a fork() between
 * messages; changed tags refused.
 */
TEST_P(GcmIvGen, WholeIvFixedOverManyMessages)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen);
    for (const Bytes &iv : wrapping_ivs(rng_)) {
        std::vector<Msg> msgs = make_messages(rng_, 24, 300);
        Log lh, ld;
        ivgen_session(h.get(), key, iv, msgs, 10, nullptr, lh);
        ivgen_session(d.get(), key, iv, msgs, 10, nullptr, ld);
        EXPECT_TRUE(same_logs(lh, ld)) << GetParam() << ", IV " << tohex(iv);
    }
}

/*
 * A fixed part of 4 bytes and a random invocation field (TLS 1.2's nonce):
 * hwaf's IVs keep the fixed part and count up by one per message, each
 * message is the default provider's under the IV handed back, and both
 * providers open it with the explicit part set by SET_IV_INV; the default
 * provider's own messages opened by hwaf the same way.  Copies and a
 * fork() between messages.
 */
TEST_P(GcmIvGen, FixedPartOfFourBytesPeerSetsInvocationField)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen), fixed = random_bytes(4);
    std::vector<Msg> msgs = make_messages(rng_, 20, 200);
    for (const EVP_CIPHER *sender : {h.get(), d.get()}) {
        const char *who = sender == h.get() ? "hwaf sends" : "default sends";
        CtxPtr e(EVP_CIPHER_CTX_new()), ph(EVP_CIPHER_CTX_new()), pd(EVP_CIPHER_CTX_new());
        ASSERT_TRUE(EVP_EncryptInit_ex2(e.get(), sender, key.data(), nullptr, nullptr));
        ASSERT_GT(EVP_CIPHER_CTX_ctrl(e.get(), EVP_CTRL_GCM_SET_IV_FIXED, 4, fixed.data()), 0) << error_queue_text();
        ASSERT_TRUE(EVP_DecryptInit_ex2(ph.get(), h.get(), key.data(), nullptr, nullptr));
        ASSERT_TRUE(EVP_DecryptInit_ex2(pd.get(), d.get(), key.data(), nullptr, nullptr));
        ASSERT_GT(EVP_CIPHER_CTX_ctrl(ph.get(), EVP_CTRL_GCM_SET_IV_FIXED, 4, fixed.data()), 0) << error_queue_text();
        ASSERT_GT(EVP_CIPHER_CTX_ctrl(pd.get(), EVP_CTRL_GCM_SET_IV_FIXED, 4, fixed.data()), 0);
        Bytes prev;
        /* One message: "" or what went wrong. */
        auto one = [&](EVP_CIPHER_CTX *s, const Msg &m, size_t i, Bytes *last) -> std::string {
            std::string n = std::string(who) + ", message " + std::to_string(i) + ": ";
            Bytes iv(12);
            if (EVP_CIPHER_CTX_ctrl(s, EVP_CTRL_GCM_IV_GEN, 12, iv.data()) <= 0)
                return n + "iv-gen refused: " + error_queue_text();
            if (!std::equal(fixed.begin(), fixed.end(), iv.begin()))
                return n + "fixed part lost: " + tohex(iv);
            if (!last->empty() && iv != next_iv(*last))
                return n + "IV " + tohex(iv) + " after " + tohex(*last);
            *last = iv;
            Bytes ct(m.pt.size()), tag(16), ref, reftag;
            int l = 0;
            if (!EVP_EncryptUpdate(s, nullptr, &l, m.aad.data(), (int)m.aad.size())
                || !EVP_EncryptUpdate(s, ct.data(), &l, m.pt.data(), (int)m.pt.size())
                || !EVP_EncryptFinal_ex(s, ct.data(), &l)
                || EVP_CIPHER_CTX_ctrl(s, EVP_CTRL_AEAD_GET_TAG, 16, tag.data()) <= 0)
                return n + "seal failed: " + error_queue_text();
            if (!ref_seal(d.get(), key, iv, m.aad, m.pt, &ref, &reftag))
                return n + "reference failed";
            if (ct != ref || tag != reftag)
                return n + "not the message under the IV handed back " + tohex(iv);
            for (EVP_CIPHER_CTX *p : {ph.get(), pd.get()}) {
                const char *pn = p == ph.get() ? "hwaf" : "default";
                Bytes back(ct.size()), t = tag;
                if (m.tamper)
                    t[i % 16] ^= 1;
                bool ok = EVP_CIPHER_CTX_ctrl(p, EVP_CTRL_GCM_SET_IV_INV, 8, iv.data() + 4) > 0
                          && EVP_CIPHER_CTX_ctrl(p, EVP_CTRL_AEAD_SET_TAG, 16, t.data()) > 0
                          && EVP_DecryptUpdate(p, nullptr, &l, m.aad.data(), (int)m.aad.size())
                          && EVP_DecryptUpdate(p, back.data(), &l, ct.data(), (int)ct.size())
                          && EVP_DecryptFinal_ex(p, back.data(), &l);
                if (ok != !m.tamper)
                    return n + pn + " peer " + (ok ? "took a changed tag" : "refused: " + error_queue_text());
                if (ok && back != m.pt)
                    return n + pn + " peer: wrong plaintext";
                ERR_clear_error();
            }
            return "";
        };
        for (size_t i = 0; i < msgs.size(); i++) {
            if (msgs[i].copy) {
                CtxPtr e2(EVP_CIPHER_CTX_new());
                ASSERT_TRUE(EVP_CIPHER_CTX_copy(e2.get(), e.get())) << error_queue_text();
                e = std::move(e2);
            }
            if (i == 8) {
                pid_t pid = fork();
                ASSERT_NE(pid, -1);
                if (pid == 0) {
                    Bytes last = prev;
                    for (size_t k = i; k < i + 3; k++) {
                        std::string err = one(e.get(), msgs[k], k, &last);
                        if (!err.empty()) {
                            fprintf(stderr, "child: %s\n", err.c_str());
                            _exit(1);
                        }
                    }
                    _exit(0);
                }
                int status = 0;
                ASSERT_EQ(waitpid(pid, &status, 0), pid);
                EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << who << ": the child after fork()";
            }
            std::string err = one(e.get(), msgs[i], i, &prev);
            ASSERT_EQ(err, "");
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmIvGen, ::testing::ValuesIn(kGcmAlgs),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- TLS 1.2 records ------------------------------------------------------ */

/* A TLS 1.2 record header (sequence number, type, version, length). */
Bytes tls_header(uint64_t seq, size_t len)
{
    Bytes a(13);
    for (int i = 0; i < 8; i++)
        a[i] = (unsigned char)(seq >> (56 - 8 * i));
    a[8] = 23;
    a[9] = a[10] = 3;
    a[11] = (unsigned char)(len >> 8);
    a[12] = (unsigned char)len;
    return a;
}

/* An explicit IV (8 bytes) || payload || room for the tag (16). */
Bytes tls_body(const Bytes &explicit_iv, const Bytes &payload)
{
    Bytes r(explicit_iv);
    r.insert(r.end(), payload.begin(), payload.end());
    r.resize(r.size() + 16);
    return r;
}

/*
 * The TLS 1.2 control surface of one direction on a fresh context: what is
 * refused before a fixed IV, the lengths SET_IV_FIXED takes, TLS1_AAD's
 * lengths, records through EVP_Cipher() and EVP_CipherUpdate(), a tampered
 * and a short record, what follows a record.  records: sealed records to
 * open (filled when sealing).
 */
void tls12_script(const EVP_CIPHER *c, const Bytes &key, const Bytes &iv, int enc, int fixed,
                  std::vector<Bytes> *records, Log &log)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    Steps s{x.get(), &log, enc ? "seal " : "open "};
    Bytes payload(100);
    for (size_t i = 0; i < payload.size(); i++)
        payload[i] = (unsigned char)(i * 7 + 1);
    s.init("init", c, key.data(), nullptr, enc);
    if (iv.size() != 12)
        s.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, (int)iv.size(), nullptr);
    s.ivgen(8);
    s.ctrl("iv-inv before a fixed IV", EVP_CTRL_GCM_SET_IV_INV, 8, iv.data() + 4);
    /* (Not longer than the IV: OpenSSL 3.0's GCM writes past its buffer
     * for that; GcmTls12.EvpCipherReturnsTheRecordLength asks hwaf alone.) */
    for (int len : {0, 3, 5, 12})
        s.ctrl("fixed " + std::to_string(len), EVP_CTRL_GCM_SET_IV_FIXED, len, iv.data());
    if (!s.ctrl("fixed " + std::to_string(fixed), EVP_CTRL_GCM_SET_IV_FIXED, fixed, iv.data()))
        return;
    if (enc)
        s.ctrl("iv-inv when sealing", EVP_CTRL_GCM_SET_IV_INV, 8, iv.data() + 4);
    /* A random invocation field (fixed 4, sealing) is not the same on both:
     * the IV is looked at only where it is known. */
    bool known = fixed == -1 || !enc;
    for (int r = 0; r < 4; r++) {
        std::string n = "record " + std::to_string(r) + " ";
        size_t hlen = 8 + payload.size() + (enc ? 0 : 16);
        if (s.ctrl(n + "tls1-aad", EVP_CTRL_AEAD_TLS1_AAD, 13, tls_header((uint64_t)r, hlen).data()) == 0)
            return;
        Bytes rec, out;
        if (enc) {
            rec = tls_body(Bytes(8, 0), payload);
        } else {
            if ((size_t)r >= records->size())
                return;
            rec = (*records)[(size_t)r];
            if (r == 2)
                rec[rec.size() - 1] ^= 1;   /* tampered */
        }
        out = rec;
        if (r % 2 == 0) {
            int ret = EVP_Cipher(x.get(), out.data(), out.data(), (unsigned int)out.size());
            s.put(n + "EVP_Cipher", std::to_string(ret));
        } else {
            int outl = -1;
            bool ok = EVP_CipherUpdate(x.get(), out.data(), &outl, out.data(), (int)out.size()) == 1;
            s.put(n + "EVP_CipherUpdate", ok ? "outl " + std::to_string(outl) : "refused");
        }
        if (known)
            log.back() += " " + tohex(out);
        if (enc)
            records->push_back(out);
        if (known)
            s.iv(n + "iv after");
    }
    /* A record that cannot hold IV and tag; one not in place. */
    s.ctrl("tls1-aad short", EVP_CTRL_AEAD_TLS1_AAD, 13, tls_header(9, enc ? 8 : 24).data());
    s.cipher("short record", true, Bytes(20, 0));
    s.ctrl("tls1-aad", EVP_CTRL_AEAD_TLS1_AAD, 13, tls_header(10, 8 + 16 + (enc ? 0 : 16)).data());
    s.cipher("record not in place", true, Bytes(8 + 16 + 16, 0), false);
    /* After the records: an ordinary message needs a new IV (IV_GEN when
     * sealing, SET_IV_INV when opening). */
    s.update("aad after the records", true, Bytes(5, 9));
    if (enc) {
        Bytes g = s.ivgen((int)iv.size());
        if (!known && g.size() >= (size_t)fixed)
            log.back() = "iv-gen after the records: fixed part " + tohex(g.data(), (size_t)fixed);
    } else {
        s.ctrl("iv-inv", EVP_CTRL_GCM_SET_IV_INV, 8, iv.data() + 4);
    }
    s.update("aad", true, Bytes(5, 9));
    Bytes ct = s.update("data", false, payload);
    if (!known)
        log.back() = "data: " + std::to_string(ct.size()) + " bytes";
    if (!enc) {
        Bytes t(16, 0);
        s.ctrl("set tag", EVP_CTRL_AEAD_SET_TAG, 16, t.data());
    }
    s.final("final");
}

class GcmTls12 : public GcmAlg {};

/*
 * Sealing and opening, fixed IV as the whole IV (-1) and as 4 bytes: every
 * control's answer, every record's bytes and return value as the default
 * provider's (EVP_Cipher() on a whole record returns the record's length
 * both ways; EVP_CipherUpdate() returns what TLS takes from it).
 */
TEST_P(GcmTls12, ControlsAndRecordsAsTheDefaultProvider)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen);
    /* A 16-byte IV too, its records in software: the fixed part is what
     * the 8 bytes a record carries leave (4 of 12, 8 of 16). */
    for (size_t ivlen : {12, 16}) {
        for (int fixed : {-1, (int)ivlen - 8}) {
            Bytes iv = random_bytes(ivlen);
            /* Records sealed by the default provider, opened by both; and
             * sealed by each, the logs compared where the IV is known. */
            std::vector<Bytes> recs_d, recs_h;
            Log sh, sd, oh, od;
            tls12_script(h.get(), key, iv, 1, fixed, &recs_h, sh);
            tls12_script(d.get(), key, iv, 1, fixed, &recs_d, sd);
            EXPECT_TRUE(same_logs(sh, sd)) << GetParam() << ", IV of " << ivlen << " bytes, sealing, fixed " << fixed;
            tls12_script(h.get(), key, iv, 0, fixed, &recs_d, oh);
            tls12_script(d.get(), key, iv, 0, fixed, &recs_d, od);
            EXPECT_TRUE(same_logs(oh, od)) << GetParam() << ", IV of " << ivlen << " bytes, opening, fixed " << fixed;
            /* hwaf's records opened by the default provider (and its by hwaf
             * above): the same log as when opening its own. */
            Log ohd;
            tls12_script(d.get(), key, iv, 0, fixed, &recs_h, ohd);
            if (fixed == -1) {
                EXPECT_TRUE(same_logs(ohd, od)) << GetParam() << ", hwaf's records opened by the default provider";
            }
            ASSERT_EQ(recs_h.size(), 4u);
            for (size_t r = 0; r < recs_h.size(); r++) {
                /* Each of hwaf's records opens under the default provider. */
                CtxPtr x(EVP_CIPHER_CTX_new());
                Bytes rec = recs_h[r];
                ASSERT_TRUE(EVP_DecryptInit_ex2(x.get(), d.get(), key.data(), nullptr, nullptr));
                ASSERT_GT(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_IVLEN, (int)ivlen, nullptr), 0);
                ASSERT_GT(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_GCM_SET_IV_FIXED, fixed, iv.data()), 0);
                ASSERT_EQ(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_TLS1_AAD, 13,
                                              tls_header(r, rec.size()).data()), 16);
                EXPECT_EQ(EVP_Cipher(x.get(), rec.data(), rec.data(), (unsigned int)rec.size()), (int)rec.size())
                    << "IV of " << ivlen << " bytes, fixed " << fixed << ", hwaf's record " << r
                    << " refused by the default provider";
            }
        }
    }
}

/*
 * The record OpenSSL's own test of EVP_Cipher() on a TLS 1.2 GCM record
 * uses: 100 bytes of payload, returned lengths of 124 both ways through
 * EVP_Cipher(), 124 and 100 through EVP_CipherUpdate().
 */
TEST_P(GcmTls12, EvpCipherReturnsTheRecordLength)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen), iv = random_bytes(12);
    Bytes payload = random_bytes(100);
    for (const EVP_CIPHER *c : {h.get(), d.get()}) {
        const char *who = c == h.get() ? "hwaf" : "default";
        for (bool via_update : {false, true}) {
            Bytes rec = tls_body(Bytes(8, 0), payload);
            /* One record in place, sealed (header length 108) then opened
             * (124): what the call returns. */
            auto record = [&](int enc, size_t hlen) {
                CtxPtr x(EVP_CIPHER_CTX_new());
                int n = -1;
                if (!EVP_CipherInit_ex2(x.get(), c, key.data(), nullptr, enc, nullptr)
                    || EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_GCM_SET_IV_FIXED, 4, iv.data()) <= 0
                    || EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_TLS1_AAD, 13, tls_header(1, hlen).data()) != 16)
                    return -2;
                if (via_update)
                    return EVP_CipherUpdate(x.get(), rec.data(), &n, rec.data(), (int)rec.size()) ? n : -1;
                return EVP_Cipher(x.get(), rec.data(), rec.data(), (unsigned int)rec.size());
            };
            const char *call = via_update ? " EVP_CipherUpdate" : " EVP_Cipher";
            EXPECT_EQ(record(1, 108), 124) << who << call << ", sealing: " << error_queue_text();
            EXPECT_EQ(record(0, 124), via_update ? 100 : 124) << who << call << ", opening: " << error_queue_text();
            EXPECT_EQ(Bytes(rec.begin() + 8, rec.begin() + 108), payload) << who;
        }
    }
    /* A fixed part longer than the IV: refused with a reason. */
    CtxPtr x(EVP_CIPHER_CTX_new());
    Bytes longer = random_bytes(13);
    ASSERT_TRUE(EVP_EncryptInit_ex2(x.get(), h.get(), key.data(), nullptr, nullptr));
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_GCM_SET_IV_FIXED, 13, longer.data()), 0);
    EXPECT_TRUE(has_reasoned_error());
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmTls12, ::testing::ValuesIn(kGcmAlgs),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- the orders of OpenSSL's evp_test -------------------------------------- */

struct EvpTestCase {
    size_t ivlen = 12, taglen = 16;
    bool tag_late = false;     /* decrypting: the tag after the AAD, else before the key */
    bool ivlen_after_key = false;
    bool frag = false;         /* AAD and data as 1, n - 2, 1 bytes */
    bool inplace = false;
};

/*
 * cipher_test_enc() of test/evp_test.c: init without key, the IV length,
 * the tag (decrypting, unless late), the key length, init with key and IV
 * (enc -1), the IV read back, a copy and a dup, the AAD, the late tag, no
 * padding, the data, the final and (encrypting) the tag.  With
 * ivlen_after_key the IV length is set after a key-only init instead.
 */
void evp_test_script(const EVP_CIPHER *c, int enc, const EvpTestCase &t, const Bytes &key, const Bytes &iv,
                     const Bytes &aad, const Bytes &in, const Bytes &tag, Log &log)
{
    CtxPtr base(EVP_CIPHER_CTX_new());
    Steps s{base.get(), &log, ""};
    if (!s.init("init", c, nullptr, nullptr, enc))
        return;
    if (t.ivlen_after_key) {
        s.put("init key", EVP_CipherInit_ex(base.get(), nullptr, nullptr, key.data(), nullptr, -1) ? "ok"
                                                                                                    : "refused");
        s.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, (int)t.ivlen, nullptr);
    } else {
        s.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, (int)t.ivlen, nullptr);
    }
    if (!enc && !t.tag_late)
        s.ctrl("set tag", EVP_CTRL_AEAD_SET_TAG, (int)t.taglen, tag.data());
    s.put("key length", EVP_CIPHER_CTX_set_key_length(base.get(), (int)key.size()) ? "ok" : "refused");
    s.put("init key iv", EVP_CipherInit_ex(base.get(), nullptr, nullptr, t.ivlen_after_key ? nullptr : key.data(),
                                           iv.data(), -1)
                             ? "ok"
                             : "refused");
    s.iv("iv");
    CtxPtr x(EVP_CIPHER_CTX_new());
    s.put("copy", EVP_CIPHER_CTX_copy(x.get(), base.get()) ? "ok" : "refused");
    base.reset();
    /* evp_test's dup (EVP_CIPHER_CTX_dup, OpenSSL 3.1) is a copy into a new context. */
    CtxPtr y(EVP_CIPHER_CTX_new());
    bool dup = EVP_CIPHER_CTX_copy(y.get(), x.get()) == 1;
    s.put("dup", dup ? "ok" : "refused");
    if (!dup)
        return;
    x.reset();
    s.x = y.get();
    auto pieces = [&](const Bytes &b) {
        std::vector<Bytes> v;
        if (!t.frag || b.size() < 3) {
            v.push_back(b);
        } else {
            v.push_back(Bytes(b.begin(), b.begin() + 1));
            v.push_back(Bytes(b.begin() + 1, b.end() - 1));
            v.push_back(Bytes(b.end() - 1, b.end()));
        }
        return v;
    };
    for (const Bytes &p : pieces(aad))
        s.update("aad", true, p);
    if (!enc && t.tag_late)
        s.ctrl("set tag", EVP_CTRL_AEAD_SET_TAG, (int)t.taglen, tag.data());
    s.put("padding", EVP_CIPHER_CTX_set_padding(y.get(), 0) ? "ok" : "refused");
    for (const Bytes &p : pieces(in))
        s.update("data", false, p, t.inplace);
    s.final("final");
    if (enc)
        s.tag(t.taglen);
}

class GcmEvpTest : public GcmAlg {};

TEST_P(GcmEvpTest, CallOrdersOfEvpTest)
{
    if (!h)
        return;
    int cases = 0;
    for (size_t ivlen : {12, 1, 8, 16, 60, 128})
        for (int variant = 0; variant < 8; variant++) {
            EvpTestCase t;
            t.ivlen = ivlen;
            t.tag_late = variant & 1;
            t.frag = variant & 2;
            t.inplace = variant & 4;
            t.ivlen_after_key = variant == 3 || variant == 6;
            t.taglen = variant == 5 ? 8 : 16;
            Bytes key = random_bytes(keylen), iv = random_bytes(ivlen), aad = random_bytes(random_size(0, 40));
            Bytes pt = random_bytes(random_size(0, 200));
            /* The message to decrypt and its tag: the default provider's. */
            Bytes ct, tag;
            ASSERT_TRUE(ref_seal(d.get(), key, iv, aad, pt, &ct, &tag));
            for (int enc : {1, 0}) {
                for (bool bad : {false, true}) {
                    if (enc && bad)
                        continue;
                    Bytes tg = tag;
                    if (bad)
                        tg[0] ^= 0x20;
                    Log lh, ld;
                    evp_test_script(h.get(), enc, t, key, iv, aad, enc ? pt : ct, tg, lh);
                    evp_test_script(d.get(), enc, t, key, iv, aad, enc ? pt : ct, tg, ld);
                    EXPECT_TRUE(same_logs(lh, ld))
                        << GetParam() << (enc ? " encrypt" : " decrypt") << (bad ? " (changed tag)" : "")
                        << ": ivlen " << ivlen << (t.ivlen_after_key ? " after the key" : " before the key")
                        << ", tag " << t.taglen << (t.tag_late ? " late" : " early") << (t.frag ? ", fragments" : "")
                        << (t.inplace ? ", in place" : "");
                    /* The default provider's log says it worked. */
                    ASSERT_FALSE(ld.empty());
                    EXPECT_EQ(ld[ld.size() - (enc ? 2 : 1)].find("refused") == std::string::npos, !bad)
                        << ld[ld.size() - (enc ? 2 : 1)];
                    cases++;
                }
            }
        }
    EXPECT_EQ(cases, 6 * 8 * 3);
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmEvpTest, ::testing::ValuesIn(kGcmAlgs),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- IV lengths -------------------------------------------------------------- */

/*
 * One message with an IV of iv.size() bytes, the length set before the key
 * (init without key, SET_IVLEN, init with key and IV) or after it (init
 * with the key, SET_IVLEN, init with the IV); AAD and data in two pieces,
 * decrypting with the tag first or last.
 */
void ivlen_script(const EVP_CIPHER *c, int enc, bool after_key, bool tag_first, const Bytes &key, const Bytes &iv,
                  const Bytes &aad, const Bytes &in, const Bytes &tag, Log &log)
{
    CtxPtr x(EVP_CIPHER_CTX_new());
    Steps s{x.get(), &log, ""};
    int n = (int)iv.size();
    s.init("init", c, after_key ? key.data() : nullptr, nullptr, enc);
    s.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, n, nullptr);
    s.init("init", nullptr, after_key ? nullptr : key.data(), iv.data(), enc);
    s.put("ivlen now", std::to_string(EVP_CIPHER_CTX_get_iv_length(x.get())));
    s.iv("iv");
    if (!enc && tag_first)
        s.ctrl("set tag", EVP_CTRL_AEAD_SET_TAG, (int)tag.size(), tag.data());
    size_t ha = aad.size() / 2, hd = in.size() / 3;
    s.update("aad", true, Bytes(aad.begin(), aad.begin() + ha));
    s.update("aad", true, Bytes(aad.begin() + ha, aad.end()));
    s.update("data", false, Bytes(in.begin(), in.begin() + hd));
    s.update("data", false, Bytes(in.begin() + hd, in.end()));
    if (!enc && !tag_first)
        s.ctrl("set tag", EVP_CTRL_AEAD_SET_TAG, (int)tag.size(), tag.data());
    bool done = s.final("final");
    if (enc)
        s.tag();
    s.iv("iv after");
    /* The next message under the same IV: refused by both (after a refused
     * tag hwaf refuses the message's going on, hwaf(7)). */
    if (done)
        s.update("reused IV", false, in);
}

class GcmIvLength : public GcmAlg {};

/*
 * Every IV length from 1 to 128 bytes, both directions, the length set
 * before and after the key, tampered tags refused: bytes, tags, IVs and
 * lengths as the default provider's.  Lengths other than 12 are computed
 * in software (the kernel's gcm(aes) takes 12) and counted there: no kernel
 * operation for them; 12 goes to the kernel (every kernel suite offloads).
 */
TEST_P(GcmIvLength, OneTo128BytesBothWays)
{
    if (!h)
        return;
    for (size_t ivlen = 1; ivlen <= 128; ivlen++) {
        Bytes key = random_bytes(keylen), iv = random_bytes(ivlen), aad = random_bytes(random_size(0, 50));
        Bytes pt = random_bytes(random_size(1, 300));   /* some work to count */
        bool after = ivlen % 2 == 0;
        std::string what = std::string(GetParam()) + ", IV of " + std::to_string(ivlen) + " bytes set "
                           + (after ? "after" : "before") + " the key";
        Log lh, ld;
        Counts c0 = counts(*lib_);
        ivlen_script(h.get(), 1, after, false, key, iv, aad, pt, Bytes(), lh);
        Counts c1 = counts(*lib_);
        ivlen_script(d.get(), 1, after, false, key, iv, aad, pt, Bytes(), ld);
        ASSERT_TRUE(same_logs(lh, ld)) << what << ", encrypting";
        if (ivlen != 12) {
            EXPECT_EQ(c1.k_ops, c0.k_ops) << what << ": kernel operations";
            EXPECT_GT(c1.sw_ops, c0.sw_ops) << what << ": not counted as software work";
        } else {
            EXPECT_GT(c1.k_ops, c0.k_ops) << what << ": no kernel operation";
        }
        /* The default provider's message, decrypted by both. */
        Bytes ct, tag;
        ASSERT_TRUE(ref_seal(d.get(), key, iv, aad, pt, &ct, &tag)) << what;
        for (bool first : {false, true})
            for (bool bad : {false, true}) {
                Bytes tg = tag;
                if (bad)
                    tg[ivlen % 16] ^= 0x80;
                Log dh, dd;
                ivlen_script(h.get(), 0, after, first, key, iv, aad, ct, tg, dh);
                ivlen_script(d.get(), 0, after, first, key, iv, aad, ct, tg, dd);
                ASSERT_TRUE(same_logs(dh, dd)) << what << ", decrypting, tag " << (first ? "first" : "last")
                                               << (bad ? ", changed" : "");
            }
    }
}

/*
 * Lengths both refuse (0, 129), an encryption without an IV (a random one:
 * only from 12 bytes up, as the default provider), a copy mid-message, and
 * a context forced to the kernel: other lengths than 12 refused with a
 * reason (at SET_IVLEN, or at the message when forced after it), 12 taken.
 */
TEST_P(GcmIvLength, RefusedRandomCopiedAndForced)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen), data = random_bytes(77);
    Log logs[2];
    for (int k = 0; k < 2; k++) {
        const EVP_CIPHER *c = k ? d.get() : h.get();
        for (int ivlen : {0, 129, 8, 11, 13, 16, 64}) {
            CtxPtr x(EVP_CIPHER_CTX_new());
            Steps s{x.get(), &logs[k], "ivlen " + std::to_string(ivlen) + ": "};
            s.init("init", c, key.data(), nullptr, 1);
            if (!s.ctrl("ivlen", EVP_CTRL_AEAD_SET_IVLEN, ivlen, nullptr))
                continue;
            /* A random IV: not the same on both, so its output is logged
             * by length only. */
            auto blind = [&](const Bytes &b, const std::string &what) {
                if (!b.empty())
                    logs[k].back() = s.prefix + what + ": " + std::to_string(b.size()) + " bytes";
            };
            s.update("aad", true, data);
            Bytes ct = s.update("data", false, data);
            blind(ct, "data");
            Bytes iv = s.iv("iv");
            blind(iv, "random iv");
            CtxPtr y(EVP_CIPHER_CTX_new());
            s.put("copy", EVP_CIPHER_CTX_copy(y.get(), x.get()) ? "ok" : "refused");
            Bytes more = s.update("more data", false, data);
            blind(more, "more data");
            Steps t{y.get(), &logs[k], s.prefix + "copy "};
            Bytes cmore = t.update("more data", false, data);
            blind(cmore, "copy more data");
            s.final("final");
            t.final("final");
            if (iv.empty())
                continue;
            /* Both branches open under the default provider with that IV. */
            for (EVP_CIPHER_CTX *z : {x.get(), y.get()}) {
                Bytes tg(16), all = ct, back(ct.size() + 77);
                all.insert(all.end(), (z == x.get() ? more : cmore).begin(), (z == x.get() ? more : cmore).end());
                EXPECT_GT(EVP_CIPHER_CTX_ctrl(z, EVP_CTRL_AEAD_GET_TAG, 16, tg.data()), 0);
                CtxPtr r(EVP_CIPHER_CTX_new());
                size_t il = iv.size();
                int n = 0;
                OSSL_PARAM p[] = {OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, &il),
                                  OSSL_PARAM_construct_end()};
                bool ok = EVP_DecryptInit_ex2(r.get(), d.get(), nullptr, nullptr, p)
                          && EVP_DecryptInit_ex2(r.get(), nullptr, key.data(), iv.data(), nullptr)
                          && EVP_DecryptUpdate(r.get(), nullptr, &n, data.data(), (int)data.size())
                          && EVP_DecryptUpdate(r.get(), back.data(), &n, all.data(), (int)all.size())
                          && EVP_CIPHER_CTX_ctrl(r.get(), EVP_CTRL_AEAD_SET_TAG, 16, tg.data()) > 0
                          && EVP_DecryptFinal_ex(r.get(), back.data(), &n);
                EXPECT_TRUE(ok) << (k ? "default" : "hwaf") << ", IV of " << ivlen << " bytes: "
                                << (z == x.get() ? "original" : "copy") << " not opened";
                ERR_clear_error();
            }
        }
    }
    EXPECT_TRUE(same_logs(logs[0], logs[1]));

    /* Forced to the kernel. */
    int kernel = 1;
    OSSL_PARAM force[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel), OSSL_PARAM_construct_end()};
    CtxPtr x(EVP_CIPHER_CTX_new());
    int n = 0;
    Bytes out(data.size()), iv16 = random_bytes(16), iv12 = random_bytes(12);
    ASSERT_TRUE(EVP_EncryptInit_ex2(x.get(), h.get(), key.data(), nullptr, force)) << error_queue_text();
    EXPECT_LE(EVP_CIPHER_CTX_ctrl(x.get(), EVP_CTRL_AEAD_SET_IVLEN, 16, nullptr), 0);
    EXPECT_TRUE(has_reasoned_error());
    EXPECT_EQ(EVP_CIPHER_CTX_get_iv_length(x.get()), 12);
    ASSERT_TRUE(EVP_EncryptInit_ex2(x.get(), nullptr, nullptr, iv12.data(), nullptr));
    EXPECT_TRUE(EVP_EncryptUpdate(x.get(), out.data(), &n, data.data(), (int)data.size())) << error_queue_text();
    /* The length set first, the context forced afterwards. */
    CtxPtr y(EVP_CIPHER_CTX_new());
    ASSERT_TRUE(EVP_EncryptInit_ex2(y.get(), h.get(), key.data(), nullptr, nullptr));
    ASSERT_GT(EVP_CIPHER_CTX_ctrl(y.get(), EVP_CTRL_AEAD_SET_IVLEN, 16, nullptr), 0) << error_queue_text();
    bool ok = EVP_EncryptInit_ex2(y.get(), nullptr, nullptr, iv16.data(), force)
              && EVP_EncryptUpdate(y.get(), out.data(), &n, data.data(), (int)data.size());
    EXPECT_FALSE(ok) << "an IV of 16 bytes in a context forced to the kernel";
    EXPECT_TRUE(has_reasoned_error());
}

INSTANTIATE_TEST_SUITE_P(Gcm, GcmIvLength, ::testing::ValuesIn(kGcmAlgs),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

/* ---- IV_GEN across the dispatch threshold ---------------------------------- */

const size_t kThreshold = 64;

class DispatchGcmIvGen : public GcmAlg {
protected:
    void SetUp() override
    {
        KernelTest::SetUp();
        if (IsSkipped() || HasFatalFailure())
            return;
        lib_.reset(new LibCtx(make_config("offload_min = " + std::to_string(kThreshold) + "\n")));
        ASSERT_TRUE(lib_->config_ok() && lib_->hwaf_loaded()) << lib_->load_errors();
        fetch();
    }
};

/*
 * IV_GEN sessions whose messages straddle the threshold (AAD and data of 4
 * to 200 bytes): with a 12-byte IV both paths run in one context, with a
 * 16-byte IV every message is software; a context forced to the kernel
 * (hwaf-offload = 1) runs every message there.  Copies and a fork()
 * between messages; the default provider's log every time.
 */
TEST_P(DispatchGcmIvGen, MessagesTakeTheirPathsUnderTheIvsHandedBack)
{
    if (!h)
        return;
    Bytes key = random_bytes(keylen);
    int kernel = 1;
    OSSL_PARAM force[] = {OSSL_PARAM_construct_int(HWAF_PARAM_OFFLOAD, &kernel), OSSL_PARAM_construct_end()};
    struct Case {
        size_t ivlen;
        bool forced;
    };
    for (Case cs : {Case{12, false}, Case{16, false}, Case{12, true}}) {
        std::vector<Msg> msgs = make_messages(rng_, 30, 3 * kThreshold);
        Bytes iv = random_bytes(cs.ivlen);
        Log lh, ld;
        Counts c0 = counts(*lib_);
        ivgen_session(h.get(), key, iv, msgs, 12, cs.forced ? force : nullptr, lh);
        Counts c1 = counts(*lib_);
        ivgen_session(d.get(), key, iv, msgs, 12, nullptr, ld);
        std::string what = std::string(GetParam()) + ", IV of " + std::to_string(cs.ivlen) + " bytes"
                           + (cs.forced ? ", forced to the kernel" : "");
        EXPECT_TRUE(same_logs(lh, ld)) << what;
        if (cs.forced) {
            EXPECT_GT(c1.k_ops, c0.k_ops) << what;
            EXPECT_EQ(c1.sw_ops, c0.sw_ops) << what << ": software work in a context forced to the kernel";
        } else if (cs.ivlen == 12) {
            EXPECT_GT(c1.k_ops, c0.k_ops) << what << ": no message reached the kernel";
            EXPECT_GT(c1.sw_ops, c0.sw_ops) << what << ": no message in software";
        } else {
            EXPECT_EQ(c1.k_ops, c0.k_ops) << what << ": kernel operations";
            EXPECT_GT(c1.sw_ops, c0.sw_ops) << what;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Dispatch, DispatchGcmIvGen, ::testing::ValuesIn(kGcmAlgs),
                         [](const ::testing::TestParamInfo<const char *> &i) { return test_name(i.param); });

} // namespace
