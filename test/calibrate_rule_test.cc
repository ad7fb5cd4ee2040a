/*
 * hwaf-info --calibrate's decision on recorded figures
 * (examples/hwaf-calibrate-rule.c), no kernel needed: the rounds of each
 * size go in, the statistic and the thresholds come out.
 *
 *  HostCalibrationRule.WinsAtThatSizeAndEveryMeasuredSizeAbove  the
 *      threshold is the smallest size from which the kernel wins at every
 *      measured size: a loss above a win ends the run, a size not measured
 *      ends it, a size the kernel cannot take (GCM) does not count, a loss
 *      at the largest size measured is never;
 *  HostCalibrationRule.EngineCpuTimeDecidedOnTheMedian  on an engine the
 *      CPU column goes by the median of the rounds' ratios: a size where
 *      the kernel's median is above software's is not won because one
 *      round of each was fast (6.12, virtio-crypto, AES-256-CBC at 4096
 *      bytes: 69.3 against 68.1 us); wall clock keeps the best rounds;
 *  HostCalibrationRule.FileShowsTheDecidingStatistic  the comment lines
 *      give, per size, the ratio decided on, and the threshold follows
 *      from those figures alone.
 */
#include "hwaf_test.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "hwaf-calibrate-rule.h"

namespace {

int size_index(size_t bytes)
{
    for (int i = 0; i < CAL_NSIZES; i++)
        if (cal_sizes[i] == bytes)
            return i;
    ADD_FAILURE() << bytes << " is not a calibrated size";
    return -1;
}

/* The rounds of one size, us per operation: wall kernel, wall software,
 * cpu kernel, cpu software; then the statistic (cal_settle). */
void put(cal_costs *r, size_t bytes, int hw, const std::vector<double> &wk,
         const std::vector<double> &ws, const std::vector<double> &ck, const std::vector<double> &cs)
{
    cal_point *pt = &r->p[size_index(bytes)];
    ASSERT_TRUE(wk.size() == ws.size() && ck.size() == cs.size() && wk.size() == ck.size());
    ASSERT_LE(wk.size(), (size_t)CAL_HW_ROUNDS);
    pt->n = (int)wk.size();
    for (int j = 0; j < pt->n; j++) {
        pt->c[CAL_WALL][CAL_KERNEL][j] = wk[j] * 1e-6;
        pt->c[CAL_WALL][CAL_SOFT][j] = ws[j] * 1e-6;
        pt->c[CAL_CPU][CAL_KERNEL][j] = ck[j] * 1e-6;
        pt->c[CAL_CPU][CAL_SOFT][j] = cs[j] * 1e-6;
    }
    cal_settle(pt, hw);
}

/* A CPU driver's 5 rounds of one size, kernel/software ratio k for wall
 * and c for CPU time in every round, software 100 us. */
void put_ratio(cal_costs *r, size_t bytes, double k, double c)
{
    std::vector<double> s(CAL_ROUNDS, 100.0), wk(CAL_ROUNDS, 100.0 * k), ck(CAL_ROUNDS, 100.0 * c);
    put(r, bytes, 0, wk, s, ck, s);
}

std::vector<int> thresholds(const cal_costs &r)
{
    int from[2];
    cal_thresholds(&r, from);
    return {from[CAL_WALL], from[CAL_CPU]};
}

std::string printed(const cal_costs &r, int m)
{
    char *buf = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cal_print_figures(f, "AES-256-CBC afalg virtio_crypto_aes_cbc", &r, m);
    fclose(f);
    std::string s(buf, len);
    free(buf);
    return s;
}

/* The figures after "<m> ratio:" in the printed lines; "-" as -1. */
std::vector<double> printed_ratios(const std::string &text, const char *m)
{
    std::vector<double> out;
    std::string key = std::string(" ") + m + " ratio:";
    size_t at = text.find(key);
    if (at == std::string::npos)
        return out;
    std::istringstream in(text.substr(at + key.size(), text.find('\n', at) - at - key.size()));
    std::string w;
    while (in >> w)
        out.push_back(w == "-" || w == "-/-" ? -1 : std::stod(w));
    return out;
}

}  // namespace

TEST(HostCalibrationRule, WinsAtThatSizeAndEveryMeasuredSizeAbove)
{
    {
        /* A loss above a win ends the run: 1 KiB and 4 KiB win, 16 KiB does
         * not, 64 KiB and 256 KiB do: from 64 KiB. */
        cal_costs r{};
        const double w[] = {3.0, 2.0, 1.5, 0.9, 0.9, 1.1, 0.8, 0.7};
        for (int i = 0; i < 8; i++)
            put_ratio(&r, cal_sizes[i], w[i], w[i]);
        EXPECT_EQ(thresholds(r), (std::vector<int>{size_index(65536), size_index(65536)}));
    }
    {
        /* Just at the margin is no win (0.95), just under it is. */
        cal_costs r{};
        put_ratio(&r, 65536, 0.95, 0.949);
        put_ratio(&r, 262144, 0.5, 0.5);
        for (size_t b : {16, 64, 256, 1024, 4096, 16384})
            put_ratio(&r, b, 2.0, 2.0);
        EXPECT_EQ(thresholds(r), (std::vector<int>{size_index(262144), size_index(65536)}));
    }
    {
        /* The largest size measured (1 MiB, timed because 256 KiB was
         * close) is lost: never, whatever the sizes below. */
        cal_costs r{};
        put_ratio(&r, 1048576, 1.02, 0.5);
        put_ratio(&r, 262144, 1.05, 0.5);
        put_ratio(&r, 65536, 0.5, 0.5);
        put_ratio(&r, 16384, 2.0, 2.0);
        EXPECT_EQ(thresholds(r), (std::vector<int>{-1, size_index(65536)}));
    }
    {
        /* A CPU driver timed at 256 KiB and 64 KiB only (then both lost):
         * a size not timed is no win. */
        cal_costs r{};
        put_ratio(&r, 262144, 0.8, 0.9);
        put_ratio(&r, 65536, 0.9, 1.2);
        EXPECT_EQ(thresholds(r), (std::vector<int>{size_index(65536), size_index(262144)}));
    }
    {
        /* GCM: 256 KiB and 1 MiB are more than the kernel takes in one
         * request (software whatever the threshold): they do not count. */
        cal_costs r{};
        r.p[size_index(262144)].state = -1;
        r.p[size_index(1048576)].state = -1;
        put_ratio(&r, 65536, 0.6, 0.7);
        put_ratio(&r, 16384, 0.8, 1.3);
        put_ratio(&r, 4096, 1.4, 1.5);
        EXPECT_EQ(thresholds(r), (std::vector<int>{size_index(16384), size_index(65536)}));
    }
    {
        /* Nothing measured: never. */
        cal_costs r{};
        EXPECT_EQ(thresholds(r), (std::vector<int>{-1, -1}));
    }
}

/* On an engine, 9 rounds of every size up to 256 KiB; software steady. */
static void engine_figures(cal_costs *r)
{
    for (size_t b : {16, 64, 256, 1024}) {
        std::vector<double> k(9, 90.0 + (double)b / 64), s(9, 0.1 * (double)b / 16 + 0.7);
        put(r, b, 1, k, s, k, s);
    }
    /* 4096 bytes: the medians of CPU time 69.3 (kernel) and 68.1 us
     * (software), one fast kernel round (58.0) and software never below
     * 66.9: by the best rounds 0.87, by the median of the rounds' ratios
     * about 1.02.  Wall: the kernel loses by any measure. */
    put(r, 4096, 1, {315, 320, 310, 330, 318, 312, 325, 316, 319},
        {67, 68, 67, 69, 68, 67, 68, 69, 68},
        {69.3, 70.1, 58.0, 71.0, 69.0, 68.9, 70.4, 69.5, 69.3},
        {68.1, 68.4, 66.9, 68.0, 68.2, 67.5, 68.8, 68.1, 67.9});
    /* 16 KiB: CPU time won clearly (204.9 against 267.8); wall lost. */
    put(r, 16384, 1, {436, 440, 430, 445, 438, 433, 441, 437, 436},
        {267, 268, 266, 269, 267, 268, 267, 266, 268},
        {204.9, 206.0, 203.1, 205.5, 204.0, 205.1, 204.9, 203.8, 206.2},
        {267.8, 268.0, 266.9, 267.5, 268.3, 267.1, 267.8, 268.1, 267.6});
    /* 64 KiB: wall by the median of the ratios about 1.0, but the best
     * rounds 0.91: a slow spell of the engine, which software does not
     * share, won by the best rounds (kept for wall clock). */
    put(r, 65536, 1, {1090, 1100, 1005, 1110, 1095, 1000, 1102, 1098, 1104},
        {1100, 1101, 1099, 1102, 1100, 1101, 1099, 1100, 1102},
        {522, 530, 518, 525, 521, 524, 523, 527, 520},
        {1107, 1105, 1108, 1104, 1106, 1107, 1103, 1108, 1105});
    put(r, 262144, 1, {3695, 3700, 3690, 3710, 3698, 3702, 3693, 3699, 3701},
        {4077, 4080, 4070, 4081, 4079, 4075, 4078, 4076, 4080},
        {2142, 2150, 2140, 2145, 2141, 2143, 2148, 2144, 2146},
        {4059, 4060, 4058, 4061, 4057, 4059, 4062, 4060, 4058});
}

TEST(HostCalibrationRule, EngineCpuTimeDecidedOnTheMedian)
{
    cal_costs r{};
    engine_figures(&r);
    const cal_point &p4k = r.p[size_index(4096)];
    EXPECT_NEAR(p4k.cost[CAL_CPU][CAL_KERNEL] * 1e6, 69.3, 0.01);
    EXPECT_NEAR(p4k.cost[CAL_CPU][CAL_SOFT] * 1e6, 68.1, 0.01);
    EXPECT_GE(p4k.ratio[CAL_CPU], CAL_WIN) << "4096 bytes won on CPU time by one fast round";
    EXPECT_LT(r.p[size_index(16384)].ratio[CAL_CPU], CAL_WIN);
    /* Wall clock on the engine: the best rounds still decide 64 KiB. */
    EXPECT_NEAR(r.p[size_index(65536)].ratio[CAL_WALL], 1000.0 / 1099, 1e-9);
    EXPECT_EQ(thresholds(r), (std::vector<int>{size_index(65536), size_index(16384)}));
}

TEST(HostCalibrationRule, FileShowsTheDecidingStatistic)
{
    cal_costs r{};
    engine_figures(&r);
    r.p[size_index(1048576)].state = 0;   /* not timed */
    std::vector<int> from = thresholds(r);
    for (int m : {CAL_WALL, CAL_CPU}) {
        const char *name = m == CAL_WALL ? "wall" : "cpu";
        std::string text = printed(r, m);
        SCOPED_TRACE(text);
        /* The medians first, as before. */
        EXPECT_NE(text.find(std::string("# AES-256-CBC afalg virtio_crypto_aes_cbc ") + name + ": "),
                  std::string::npos);
        std::vector<double> shown = printed_ratios(text, name);
        ASSERT_EQ(shown.size(), (size_t)CAL_NSIZES) << "no ratio line for " << name;
        EXPECT_EQ(shown[CAL_NSIZES - 1], -1) << "1 MiB was not timed";
        /* What is shown is what was decided on, cut to its printed
         * precision (so that a shown 0.950 is no win), and the threshold
         * follows from the shown figures alone: below 0.95 from it up to
         * the largest size timed, not just below it. */
        for (int i = 0; i < CAL_NSIZES - 1; i++) {
            EXPECT_LE(shown[i], r.p[i].ratio[m] + 1e-9) << cal_sizes[i];
            EXPECT_GT(shown[i], r.p[i].ratio[m] - 0.001) << cal_sizes[i];
        }
        ASSERT_GE(from[m], 1);
        for (int i = from[m]; i < CAL_NSIZES - 1; i++)
            EXPECT_LT(shown[i], CAL_WIN) << name << " " << cal_sizes[i];
        EXPECT_GE(shown[from[m] - 1], CAL_WIN) << name << " " << cal_sizes[from[m] - 1];
    }
}
