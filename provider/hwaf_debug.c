/* Debug log, switched on at run time (see hwaf_debug.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "hwaf_debug.h"
#include "hwaf_sys.h"

int hwaf_debug_level = -1;
static FILE *debug_out;
static int debug_regular = 1; /* debug_out is a regular file (or unknown) */
static int debug_quiet;  /* lines would kill the process: drop them */
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;

static void note_regular(void)
{
    struct stat st;

    debug_regular = fstat(fileno(debug_out), &st) != 0 || S_ISREG(st.st_mode);
}

static void debug_setup(void)
{
    const char *env = hwaf_sys_getenv("HWAF_DEBUG");

    debug_out = stderr;
    note_regular();
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
    note_regular();
    hwaf_debug_level = 1;
}

void hwaf_debug_init(void)
{
    pthread_once(&debug_once, debug_setup);
}

/*
 * A seccomp sandbox was installed (hwaf_sandbox.c): OpenSSH's also sets
 * RLIMIT_FSIZE to 0, so a line written to a regular file would kill the
 * process with SIGXFSZ.  Lines to a pipe or terminal go on (what the log
 * is was looked at when it was set up: the sandbox refuses fstat()).
 */
void hwaf_debug_sandboxed(void)
{
    if (debug_regular)
        __atomic_store_n(&debug_quiet, 1, __ATOMIC_RELAXED);
}

void hwaf_debug_enable(void)
{
    hwaf_debug_init();
    hwaf_debug_level = 1;
}

/*
 * One line, one write(): several processes often share the log (sshd's
 * children write to the stderr of the process that started them), and a
 * write of at most PIPE_BUF bytes to a pipe is never interleaved with
 * another's, where stdio on an unbuffered stderr writes a line in pieces.
 */
void hwaf_debug_log(const char *file, int line, const char *func,
                    const char *fmt, ...)
{
    struct timespec ts;
    char msg[1024], out[1536];
    va_list ap;
    ssize_t w;
    int n;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (__atomic_load_n(&debug_quiet, __ATOMIC_RELAXED))
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    n = snprintf(out, sizeof(out), "[hwaf %ld.%06ld %d] %s:%d %s(): %s\n",
                 (long)ts.tv_sec, ts.tv_nsec / 1000, (int)getpid(), file, line,
                 func, msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(out)) {
        n = (int)sizeof(out) - 1;
        out[n - 1] = '\n';
    }
    fflush(debug_out);
    w = write(fileno(debug_out), out, (size_t)n);
    (void)w;
}
