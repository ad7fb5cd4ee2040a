/* Debug log, switched on at run time (see hwaf_debug.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "hwaf_debug.h"

int hwaf_debug_level = -1;
static FILE *debug_out;
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void debug_setup(void)
{
    const char *env = getenv("HWAF_DEBUG");

    debug_out = stderr;
    if (env == NULL || *env == '\0' || strcmp(env, "0") == 0) {
        if (hwaf_debug_level < 0)
            hwaf_debug_level = 0;
        return;
    }
    if (strncmp(env, "file:", 5) == 0) {
        FILE *f = fopen(env + 5, "ae");

        if (f != NULL) {
            setvbuf(f, NULL, _IOLBF, 0);
            debug_out = f;
        }
    }
    hwaf_debug_level = 1;
}

void hwaf_debug_init(void)
{
    pthread_once(&debug_once, debug_setup);
}

void hwaf_debug_enable(void)
{
    hwaf_debug_init();
    hwaf_debug_level = 1;
}

void hwaf_debug_log(const char *file, int line, const char *func,
                    const char *fmt, ...)
{
    struct timespec ts;
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &ts);
    fprintf(debug_out, "[hwaf %ld.%06ld %d] %s:%d %s(): %s\n",
            (long)ts.tv_sec, ts.tv_nsec / 1000, (int)getpid(), file, line,
            func, msg);
}
