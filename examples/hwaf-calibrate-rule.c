/*
 * hwaf-info --calibrate's decision on its figures (hwaf-calibrate-rule.h):
 * the statistic taken from an implementation's rounds at each size and the
 * rule that picks its thresholds from them.
 */
#include <stdlib.h>
#include <string.h>
#include "hwaf-calibrate-rule.h"

const size_t cal_sizes[CAL_NSIZES] = { 16, 64, 256, 1024, 4096, 16384, 65536, 262144,
                                       1048576 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double cal_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

/*
 * The kernel/software ratio decided on is the median of the rounds'
 * ratios; for wall clock on an engine (hw) the ratio of each path's best
 * round instead when that is smaller: time only ever gets added to a
 * timing, and an engine working outside the CPU (virtio-crypto: a thread
 * of the host) can be slowed for a while without software being slowed
 * with it, which the pairing cannot cancel.  Not for CPU time: the
 * calling thread waits for a slow engine without spending CPU, and the
 * best rounds of each path, taken at different moments, would only add
 * noise and lean towards the kernel (as on a CPU driver, for both
 * measures).
 */
void cal_settle(cal_point *pt, int hw)
{
    double r[CAL_HW_ROUNDS], v[CAL_HW_ROUNDS], best[2];
    int m, j, path;

    for (m = 0; m < 2; m++) {
        for (j = 0; j < pt->n; j++)
            r[j] = pt->c[m][CAL_KERNEL][j]
                   / (pt->c[m][CAL_SOFT][j] > 0 ? pt->c[m][CAL_SOFT][j] : 1e-12);
        for (path = 0; path < 2; path++) {
            memcpy(v, pt->c[m][path], sizeof(double) * (size_t)pt->n);
            pt->cost[m][path] = cal_median(v, pt->n);
            best[path] = v[0];
        }
        pt->ratio[m] = cal_median(r, pt->n);
        if (hw && m == CAL_WALL && best[CAL_SOFT] > 0
            && best[CAL_KERNEL] / best[CAL_SOFT] < pt->ratio[m])
            pt->ratio[m] = best[CAL_KERNEL] / best[CAL_SOFT];
    }
    pt->state = 1;
}

int cal_wins(const cal_point *pt, int m)
{
    return pt->state == 1 && pt->ratio[m] < CAL_WIN;
}

void cal_thresholds(const cal_costs *r, int from[2])
{
    int m, i;

    for (m = 0; m < 2; m++) {
        from[m] = -1;
        for (i = CAL_NSIZES - 1; i >= 0 && r->p[i].state != 1; i--)
            ;   /* the largest size measured */
        for (; i >= 0; i--) {
            if (r->p[i].state < 0)
                continue;
            if (!cal_wins(&r->p[i], m))
                break;
            from[m] = i;
        }
    }
}

void cal_print_figures(FILE *f, const char *impl, const cal_costs *r, int m)
{
    size_t i;
    int line;

    for (line = 0; line < 2; line++) {
        fprintf(f, "# %s %s", impl, m == CAL_WALL ? line == 0 ? "wall:" : "wall ratio:"
                                                 : line == 0 ? "cpu: " : "cpu ratio: ");
        for (i = 0; i < CAL_NSIZES; i++) {
            const cal_point *pt = &r->p[i];

            if (pt->state == 0)
                fprintf(f, " -");
            else if (pt->state < 0)
                fprintf(f, " -/-");
            else if (line == 0)
                fprintf(f, " %.1f/%.1f", pt->cost[m][CAL_KERNEL] * 1e6,
                        pt->cost[m][CAL_SOFT] * 1e6);
            else   /* cut, not rounded (a ratio is positive): one shown below
                    * 0.950 is a win */
                fprintf(f, " %.3f", (double)(long long)(pt->ratio[m] * 1000) / 1000);
        }
        fprintf(f, "\n");
    }
}
