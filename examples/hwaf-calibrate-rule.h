/*
 * How hwaf-info --calibrate decides a threshold from its figures
 * (hwaf-calibrate-rule.c): the sizes it times, the rounds' timings of one
 * implementation, the statistic taken from them and the rule that picks the
 * threshold.  Apart from the timing itself (hwaf-calibrate.c), so that the
 * decision can be fed recorded figures.
 */
#ifndef HWAF_CALIBRATE_RULE_H
#define HWAF_CALIBRATE_RULE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAL_NSIZES 9
extern const size_t cal_sizes[CAL_NSIZES];   /* 16 B to 1 MiB, by factors of 4 */
#define CAL_TOP (CAL_NSIZES - 2)   /* 256 KiB: the largest size always measured */
#define CAL_ROUNDS 5
#define CAL_HW_ROUNDS 9   /* on an engine */
/* The kernel wins a size when its ratio to software is below CAL_WIN; the
 * 1 MiB point is measured too when the ratio at 256 KiB is below CAL_CLOSE
 * without winning. */
#define CAL_WIN 0.95
#define CAL_CLOSE 1.15

enum { CAL_KERNEL = 0, CAL_SOFT = 1 };
enum { CAL_WALL = 0, CAL_CPU = 1 };

typedef struct {
    int state;               /* 0 not measured, 1 measured, -1 the kernel cannot
                              * take it in one request (GCM): does not count */
    int n;                   /* rounds so far: CAL_ROUNDS, CAL_HW_ROUNDS on an engine */
    double c[2][2][CAL_HW_ROUNDS];  /* [CAL_WALL|CAL_CPU][CAL_KERNEL|CAL_SOFT][round]:
                                     * seconds per operation */
    double cost[2][2];       /* [measure][path]: median seconds per operation */
    double ratio[2];         /* [measure]: kernel/software, the statistic decided on */
} cal_point;

typedef struct {
    cal_point p[CAL_NSIZES];
} cal_costs;

/* The median of v[0..n) (sorted in place: v[0] is then the smallest). */
double cal_median(double *v, int n);

/*
 * From pt's pt->n rounds: the medians of each path and the ratio decided on
 * for each measure; pt->state becomes 1.  hw: the implementation is on an
 * engine.
 */
void cal_settle(cal_point *pt, int hw);

/* Whether the kernel wins measure m at pt (measured, ratio below CAL_WIN). */
int cal_wins(const cal_point *pt, int m);

/*
 * The thresholds, [CAL_WALL] for policy throughput and [CAL_CPU] for
 * policy cpu, as indexes into cal_sizes (-1: never): the smallest measured
 * size at which the kernel wins and wins at every measured size above it
 * (a size the kernel cannot take, state -1, does not count; a size not
 * measured ends the run).
 */
void cal_thresholds(const cal_costs *r, int from[2]);

/*
 * The comment lines of measure m for the implementation impl ("<name>
 * <backend> <driver>"): "# <impl> wall:" (or "cpu: ") and per size the
 * medians, kernel/software in us per operation; then "# <impl> wall ratio:"
 * (or "cpu ratio: ") and per size the ratio decided on, cut to 3 decimals.
 * "-" where not measured, "-/-" where the kernel cannot take it.
 */
void cal_print_figures(FILE *f, const char *impl, const cal_costs *r, int m);

#ifdef __cplusplus
}
#endif

#endif
