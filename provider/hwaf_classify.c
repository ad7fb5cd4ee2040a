/*
 * Is a kernel driver hardware?  Evidence in order of strength: the
 * operator's word (hw_drivers / sw_drivers), the kernel's own flag
 * (CRYPTO_ALG_KERN_DRIVER_ONLY, reported through crypto_user or
 * CIOCGSESSINFO), and last the driver's name and whether it is asynchronous.
 */
#include <string.h>
#include "hwaf_local.h"

/*
 * Name fragments of drivers that run on the CPU: instruction-set
 * accelerated code and generic C.  Matched as whole '-', '_' or '('
 * separated words of the driver name.
 */
static const char *const cpu_words[] = {
    "generic", "aesni", "avx", "avx2", "avx512", "ssse3", "sse2", "sse4",
    "ni", "shani", "x86", "x86_64", "asm", "ce", "neon", "arm", "arm64",
    "armv8", "riscv64", "zvkned", "zvknha", "zvknhb", "s390", "p8", "ppc",
    "vmx", "spe", "octeon", "mips", "sparc64", "lib", "neonbs", "ppc64le",
};

static int is_cpu_word(const char *w, size_t len)
{
    size_t i;

    for (i = 0; i < sizeof(cpu_words) / sizeof(cpu_words[0]); i++)
        if (strlen(cpu_words[i]) == len && strncmp(cpu_words[i], w, len) == 0)
            return 1;
    return 0;
}

int hwaf_guess_hw(const char *driver, int async)
{
    const char *p = driver;

    while (*p != '\0') {
        size_t len = strcspn(p, "-_()");

        if (len > 0 && is_cpu_word(p, len))
            return 0;
        p += len;
        if (*p != '\0')
            p++;
    }
    return async == 1 ? 1 : 0;
}

int hwaf_classify(const hwaf_driver *drv, const hwaf_config *cfg)
{
    if (hwaf_config_list_has(cfg->hw_drivers, drv->name))
        return 1;
    if (hwaf_config_list_has(cfg->sw_drivers, drv->name))
        return 0;
    return drv->hw == 1;
}
