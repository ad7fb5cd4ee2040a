/* Built when libkcapi's development files were not found. */
#include "bench.h"

void bench_open_kcapi(bench_set *s, const bench_alg *a)
{
    (void)a;
    bench_set_absent(s, "libkcapi", "not built in (libkcapi-dev was missing at build time)");
}
