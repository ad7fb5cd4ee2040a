/*
 * Debug log, switched on at run time: HWAF_DEBUG=1 (to stderr) or
 * HWAF_DEBUG=file:/path, or "debug = yes" in the provider's config section.
 * Read once, lazily; each line carries a timestamp, pid and file:line.
 */
#ifndef HWAF_DEBUG_H
#define HWAF_DEBUG_H

extern int hwaf_debug_level;  /* -1 not read yet, 0 off, 1 on */
void hwaf_debug_init(void);
void hwaf_debug_enable(void);
/* A sandbox was installed: stop writing when the log is a regular file. */
void hwaf_debug_sandboxed(void);
void hwaf_debug_log(const char *file, int line, const char *func,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#define HWAF_DEBUG(...)                                              \
    do {                                                             \
        if (hwaf_debug_level < 0)                                    \
            hwaf_debug_init();                                       \
        if (hwaf_debug_level > 0)                                    \
            hwaf_debug_log(__FILE__, __LINE__, __func__, __VA_ARGS__); \
    } while (0)

#endif
