/*
 * The probe result kept in the calibration file (hwaf_probe_cache.c).
 *
 * The probe is once per process, so each load runs in a fresh process: this
 * binary again, running the disabled ProbeCache.DISABLED_Load, which loads
 * hwaf through the backend of the suite (HWAF_TEST_BACKEND) with
 * offload_min = 0 and the calibration file HWAF_TEST_PROBE_CAL names (none
 * when empty), prints the backend's status, the probe result
 * (hwaf-probe) and the debug log of the load, then encrypts and hashes
 * through hwaf against the default provider, in the process and in a child
 * forked after the load.  (The load's debug log comes from the stderr
 * LibCtx captures while loading; later stderr is dropped.)
 *
 * ProbeCache.KeptResultOnlyForTheSameKernelState: a full probe's result,
 * written into a calibration file, is used by the next process (no known
 * answers run, the same drivers); another kernel release or a changed
 * /proc/crypto (HWAF_TEST_KERNEL_RELEASE / HWAF_TEST_PROC_CRYPTO) means a
 * full probe; /proc/crypto's refcnt lines do not count; a malformed probe
 * line refuses the load naming file and line.
 *
 * ProbeCache.TemplateInstancesDoNotCount: /proc/crypto's template instances
 * (hmac(sha256-avx2), which hwaf's own probe makes the kernel create) do
 * not count: the result kept after a probe is taken with none of them (a
 * fresh boot) and with one more; a driver of its own more still counts.
 */
#include "hwaf_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

using namespace hwaf_test;

namespace {

std::string backend_name()
{
    return env().backend == "devcrypto" ? "devcrypto" : "afalg";
}

/* AES-128-CBC and SHA2-256 through hwaf equal the default provider's. */
bool same_as_default(OSSL_LIB_CTX *lib)
{
    unsigned char key[16], iv[16], in[64], out[2][80], md[2][32];
    int len[2] = {0, 0}, tail;
    unsigned int mdlen;
    const std::string q[2] = {hwaf_query(), "provider=default"};

    for (int i = 0; i < 16; i++)
        key[i] = (unsigned char)(i * 7 + 1), iv[i] = (unsigned char)(0xa0 + i);
    for (int i = 0; i < 64; i++)
        in[i] = (unsigned char)(i * 31);
    for (int k = 0; k < 2; k++) {
        EVP_CIPHER *c = EVP_CIPHER_fetch(lib, "AES-128-CBC", q[k].c_str());
        EVP_MD *m = EVP_MD_fetch(lib, "SHA2-256", q[k].c_str());
        EVP_CIPHER_CTX *cx = EVP_CIPHER_CTX_new();
        bool ok = c != nullptr && m != nullptr && cx != nullptr
                  && (k == 1 || strcmp(OSSL_PROVIDER_get0_name(EVP_CIPHER_get0_provider(c)),
                                       "hwaf") == 0)
                  && EVP_EncryptInit_ex2(cx, c, key, iv, nullptr)
                  && EVP_EncryptUpdate(cx, out[k], &len[k], in, sizeof(in))
                  && EVP_EncryptFinal_ex(cx, out[k] + len[k], &tail)
                  && EVP_Digest(in, sizeof(in), md[k], &mdlen, m, nullptr);
        len[k] += tail;
        EVP_CIPHER_CTX_free(cx);
        EVP_CIPHER_free(c);
        EVP_MD_free(m);
        if (!ok)
            return false;
    }
    return len[0] == len[1] && memcmp(out[0], out[1], len[0]) == 0
           && memcmp(md[0], md[1], sizeof(md[0])) == 0;
}

struct Load {
    std::string status, probe, log, result, all;
};

/* One load in a fresh process: cal the calibration file ("" for none),
 * envs more environment ("A=1 B=2"). */
Load load_in_new_process(const std::string &cal, const std::string &envs = "")
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    Load r;

    if (n <= 0)
        return r;
    self[n] = '\0';
    /* The child runs its one test itself: not a shard of the parent's run
     * (a shard's variables would filter the test out), not sharded again. */
    std::string cmd = "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX HWAF_TEST_SHARDS=1"
                      " HWAF_DEBUG=1 HWAF_TEST_PROBE_CAL='" + cal + "' " + envs + " '" + self
                      + "' --gtest_also_run_disabled_tests --gtest_filter=ProbeCache.DISABLED_Load"
                        " --gtest_brief=1 2>/dev/null";
    fflush(nullptr);
    FILE *f = popen(cmd.c_str(), "r");
    if (f == nullptr)
        return r;
    char line[4096];
    while (fgets(line, sizeof(line), f) != nullptr) {
        std::string l = line;
        r.all += l;
        if (l.rfind("status: ", 0) == 0)
            r.status = l.substr(8);
        else if (l.rfind("probe ", 0) == 0 || l.rfind("driver ", 0) == 0)
            r.probe += l;
        else if (l.rfind("result: ", 0) == 0)
            r.result = l.substr(8);
        else
            r.log += l;
    }
    pclose(f);
    return r;
}

std::string first_line(const std::string &s)
{
    return s.substr(0, s.find('\n'));
}

std::string without_first_line(const std::string &s)
{
    size_t nl = s.find('\n');
    return nl == std::string::npos ? "" : s.substr(nl + 1);
}

std::string read_file(const std::string &path)
{
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/* Whether the suite's backend is here. */
bool backend_here(const std::string &be)
{
    return be == "afalg" ? kernel_has_afalg() : devcrypto_present();
}

/* One /proc/crypto entry, as the kernel lists it. */
std::string registry_entry(const std::string &name, const std::string &driver, int priority,
                           const std::string &type)
{
    return "name         : " + name + "\ndriver       : " + driver + "\nmodule       : kernel\n"
           "priority     : " + std::to_string(priority) + "\nrefcnt       : 1\n"
           "selftest     : passed\ninternal     : no\ntype         : " + type + "\n\n";
}

/* One load in a fresh process with registry read instead of /proc/crypto. */
Load load_with_registry(const std::string &cal, const std::string &registry)
{
    return load_in_new_process(cal, "HWAF_TEST_PROC_CRYPTO=" + write_temp_file("crypto", registry));
}

}  // namespace

TEST(ProbeCache, DISABLED_Load)
{
    const char *cal = getenv("HWAF_TEST_PROBE_CAL");
    std::string extra = "backends = " + backend_name() + "\noffload_min = 0\n";

    if (cal != nullptr && *cal != '\0')
        extra += std::string("calibration = ") + cal + "\n";
    LibCtx lib(make_config(extra));
    std::string st, probe;
    printf("log: %s\n", lib.load_errors().c_str());
    if (!lib.hwaf_loaded()) {
        printf("status: not loaded\nresult: not loaded\n");
        return;
    }
    lib.prov_param(backend_name() == "devcrypto" ? HWAF_PARAM_DEVCRYPTO_STATUS
                                                 : HWAF_PARAM_AFALG_STATUS, &st);
    lib.prov_param(HWAF_PARAM_PROBE, &probe);
    printf("status: %s\n%s", st.c_str(), probe.c_str());
    bool ok = same_as_default(lib.get());
    fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
        _exit(same_as_default(lib.get()) ? 0 : 2);
    }
    int status = 0;
    bool child_ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)
                    && WEXITSTATUS(status) == 0;
    printf("result: %s\n", ok && child_ok ? "ok" : !ok ? "wrong in the process" : "wrong in the child");
}

TEST(ProbeCache, KeptResultOnlyForTheSameKernelState)
{
    const std::string be = backend_name();
    ASSERT_TRUE(backend_here(be)) << "no " << be;

    /* A full probe, and its result kept. */
    Load full = load_in_new_process("");
    ASSERT_EQ(full.result, "ok\n") << full.all;
    EXPECT_EQ(full.status.find("cached"), std::string::npos) << full.status;
    std::smatch m;
    std::string head = first_line(full.probe);
    ASSERT_TRUE(std::regex_match(head, m, std::regex("probe " + be + " ([0-9a-f]{16})")))
        << "no probe line: " << full.all;
    const std::string key = m[1];
    const std::string drivers = without_first_line(full.probe);
    ASSERT_NE(drivers.find("driver " + be + " cbc(aes)/16 "), std::string::npos) << full.probe;
    std::string cal = write_temp_file("calibration", "hwaf-calibration 1\n" + full.probe);

    /* The next process takes it: no known answer, same drivers, same bytes,
     * also in a child forked after the load. */
    Load hit = load_in_new_process(cal);
    EXPECT_EQ(hit.result, "ok\n") << hit.all;
    EXPECT_NE(hit.status.find("(probe result cached)"), std::string::npos) << hit.status;
    EXPECT_EQ(hit.probe, full.probe);
    EXPECT_NE(hit.log.find("key " + key + " matches"), std::string::npos) << hit.log;
    /* The full probe listed cbc(aes)'s driver(s); the cached load did not. */
    const std::string listed = be == "afalg" ? "afalg: cbc(aes): driver " : "devcrypto cbc(aes): driver ";
    EXPECT_NE(full.log.find(listed), std::string::npos) << full.log;
    EXPECT_EQ(hit.log.find(listed), std::string::npos) << hit.log;

    /* Another kernel release: a full probe, its result under another key. */
    Load rel = load_in_new_process(cal, "HWAF_TEST_KERNEL_RELEASE=0.0.0-another");
    EXPECT_EQ(rel.result, "ok\n") << rel.all;
    EXPECT_EQ(rel.status.find("cached"), std::string::npos) << rel.status;
    EXPECT_NE(rel.log.find("kept for key " + key), std::string::npos) << rel.log;
    EXPECT_NE(first_line(rel.probe), head);
    EXPECT_EQ(without_first_line(rel.probe), drivers);

    /* /proc/crypto: other refcnt values change nothing; a driver more is
     * another state of the kernel. */
    std::string reg = read_file("/proc/crypto");
    ASSERT_FALSE(reg.empty());
    std::string counted = std::regex_replace(reg, std::regex("refcnt( *): [0-9]+"), "refcnt$1: 4242");
    ASSERT_NE(counted, reg) << "no refcnt line in /proc/crypto";
    Load refcnt = load_with_registry(cal, counted);
    EXPECT_NE(refcnt.status.find("(probe result cached)"), std::string::npos) << refcnt.all;
    EXPECT_EQ(refcnt.result, "ok\n");
    Load changed = load_with_registry(cal, reg + registry_entry("cbc(aes)", "cbc-aes-newengine", 500,
                                                                "skcipher"));
    EXPECT_EQ(changed.status.find("cached"), std::string::npos) << changed.status;
    EXPECT_NE(changed.log.find("full probe"), std::string::npos) << changed.log;
    EXPECT_EQ(changed.result, "ok\n") << changed.all;

    /* A malformed probe result refuses the load, naming file and line. */
    for (const std::string &bad : {"probe " + be + " 12345\n", "probe " + be + " " + key + "\n" + drivers
                                       + "driver " + be + " cbc(aes)/16 x 100 7 0\n"}) {
        std::string badcal = write_temp_file("calibration", "hwaf-calibration 1\n" + bad);
        Load refused = load_in_new_process(badcal);
        EXPECT_EQ(refused.status, "not loaded\n") << refused.all;
        EXPECT_NE(refused.all.find(badcal + ":"), std::string::npos) << refused.all;
    }
}

/* /proc/crypto without the entries (blank-line separated) whose driver
 * line names a template instance, "driver : hmac(sha256-avx2)". */
static std::string without_instances(const std::string &reg, int *dropped)
{
    std::string out;
    size_t at = 0;

    *dropped = 0;
    while (at < reg.size()) {
        size_t end = reg.find("\n\n", at);
        end = end == std::string::npos ? reg.size() : end + 2;
        std::string entry = reg.substr(at, end - at);
        size_t d = entry.find("\ndriver ");
        size_t dl = d == std::string::npos ? d : entry.find('\n', d + 1);
        if (d != std::string::npos && entry.substr(d, dl - d).find('(') != std::string::npos)
            ++*dropped;
        else
            out += entry;
        at = end;
    }
    return out;
}

TEST(ProbeCache, TemplateInstancesDoNotCount)
{
    const std::string be = backend_name();
    ASSERT_TRUE(backend_here(be)) << "no " << be;
    /* A full probe (it makes hmac() instances if none were there yet), its
     * result kept. */
    Load full = load_in_new_process("");
    ASSERT_EQ(full.result, "ok\n") << full.all;
    ASSERT_NE(first_line(full.probe).rfind("probe " + be + " ", 0), std::string::npos) << full.all;
    std::string cal = write_temp_file("calibration", "hwaf-calibration 1\n" + full.probe);
    std::string reg = read_file("/proc/crypto");
    /* Over AF_ALG the probe binds hmac(sha1) to hmac(sha512): the kernel
     * has an instance of each now.  (The test's /dev/crypto computes in
     * user space and makes none.) */
    if (be == "afalg") {
        ASSERT_NE(reg.find("driver       : hmac(sha256"), std::string::npos)
            << "no hmac() instance in /proc/crypto after hwaf's probe";
    }

    /* As a fresh boot has it: no instance at all. */
    int dropped = 0;
    std::string bare = without_instances(reg, &dropped);
    if (be == "afalg") {
        ASSERT_GE(dropped, 5) << "hwaf's probe made an hmac() over each of 5 SHA drivers";
    }
    Load boot = load_with_registry(cal, bare);
    EXPECT_EQ(boot.result, "ok\n") << boot.all;
    EXPECT_NE(boot.status.find("(probe result cached)"), std::string::npos) << boot.all;
    EXPECT_EQ(boot.probe, full.probe);

    /* One instance more, as another user of the kernel's crypto makes. */
    std::string more = reg + registry_entry("hmac(sha512)", "hmac(sha512-generic)", 100, "shash");
    Load inst = load_with_registry(cal, more);
    EXPECT_NE(inst.status.find("(probe result cached)"), std::string::npos) << inst.all;
    EXPECT_EQ(inst.result, "ok\n") << inst.all;

    /* The driver under it, new: another driver set, a full probe. */
    Load drv = load_with_registry(cal, more + registry_entry("sha512", "sha512-newengine", 300, "shash"));
    EXPECT_EQ(drv.status.find("cached"), std::string::npos) << drv.status;
    EXPECT_NE(drv.log.find("full probe"), std::string::npos) << drv.log;
    EXPECT_EQ(drv.result, "ok\n") << drv.all;
}
