/*
 * hwaf: public names for applications and tests.
 *
 * Everything an application can ask the hwaf provider for is reachable
 * through the ordinary OpenSSL parameter API; this header only spells the
 * names so that callers do not have to repeat string literals.
 */
#ifndef HWAF_HWAF_H
#define HWAF_HWAF_H

#define HWAF_PROVIDER_NAME "hwaf"

/*
 * Properties carried by every implementation (besides provider=hwaf).
 * OpenSSL 3 lets a provider define only dotted property names (apart from
 * its six built-in ones such as "provider" and "fips"), so the hardware
 * class is "hwaf.hw": fetch with "hwaf.hw=yes".  A bare "hw=yes" query names
 * a property no provider can define and never matches anything.
 */
#define HWAF_PROP_HW "hwaf.hw"             /* "yes" | "no" */
#define HWAF_PROP_BACKEND "hwaf.backend"   /* "afalg" | "devcrypto" */

/*
 * Gettable parameters of a cipher context (EVP_CIPHER_CTX_get_params) and of
 * a digest context (EVP_MD_CTX_get_params).
 */
#define HWAF_PARAM_DRIVER "hwaf-driver"    /* utf8 string: kernel driver name */
#define HWAF_PARAM_BACKEND "hwaf-backend"  /* utf8 string: "afalg" | "devcrypto" */
#define HWAF_PARAM_HW "hwaf-hw"            /* int: 1 when the driver runs off the CPU */
/*
 * Size-aware dispatch, per context (gettable and settable): operations
 * below the implementation's threshold are computed in software with
 * OpenSSL's default provider inside the same context.
 *   HWAF_OFFLOAD_AUTO (-1, the default): by the threshold;
 *   0: always software; 1: always the kernel.
 */
#define HWAF_PARAM_OFFLOAD "hwaf-offload"          /* int */
#define HWAF_OFFLOAD_AUTO (-1)
/* Gettable: the threshold in bytes (SIZE_MAX: never offloaded). */
#define HWAF_PARAM_OFFLOAD_MIN "hwaf-offload-min"  /* size_t */

/*
 * Gettable parameters of the provider (OSSL_PROVIDER_get_params).
 * The status strings are "usable" or a sentence saying why not.
 */
#define HWAF_PARAM_AFALG_STATUS "hwaf-afalg-status"         /* utf8 string */
#define HWAF_PARAM_DEVCRYPTO_STATUS "hwaf-devcrypto-status" /* utf8 string */
/*
 * One line per offered implementation:
 *   "<OpenSSL name> <backend> <kernel driver> hw=<yes|no>\n"
 */
#define HWAF_PARAM_ALGORITHMS "hwaf-algorithms"             /* utf8 string */
/*
 * The configuration in effect, every key of the provider's section with its
 * value (defaults included): "backends = afalg devcrypto; prefer = auto; ..."
 */
#define HWAF_PARAM_CONFIG "hwaf-config"                     /* utf8 string */
/* Counters of work handed to each backend since the module was loaded. */
#define HWAF_PARAM_AFALG_OPS "hwaf-afalg-ops"               /* uint64 */
#define HWAF_PARAM_AFALG_BYTES "hwaf-afalg-bytes"           /* uint64 */
#define HWAF_PARAM_DEVCRYPTO_OPS "hwaf-devcrypto-ops"       /* uint64 */
#define HWAF_PARAM_DEVCRYPTO_BYTES "hwaf-devcrypto-bytes"   /* uint64 */
/* The same kernel work (both backends) by kind of algorithm: plain
 * ciphers (with GCM's counter-mode continuation), digests, AEAD (GCM)
 * requests, HMAC. */
#define HWAF_PARAM_CIPHER_OPS "hwaf-cipher-ops"             /* uint64 */
#define HWAF_PARAM_CIPHER_BYTES "hwaf-cipher-bytes"         /* uint64 */
#define HWAF_PARAM_DIGEST_OPS "hwaf-digest-ops"             /* uint64 */
#define HWAF_PARAM_DIGEST_BYTES "hwaf-digest-bytes"         /* uint64 */
#define HWAF_PARAM_AEAD_OPS "hwaf-aead-ops"                 /* uint64 */
#define HWAF_PARAM_AEAD_BYTES "hwaf-aead-bytes"             /* uint64 */
#define HWAF_PARAM_MAC_OPS "hwaf-mac-ops"                   /* uint64 */
#define HWAF_PARAM_MAC_BYTES "hwaf-mac-bytes"               /* uint64 */
/* Of hwaf-afalg-bytes, those that reached the kernel without a copy
 * (vmsplice + splice, see docs/design.md). */
#define HWAF_PARAM_AFALG_SPLICED_BYTES "hwaf-afalg-spliced-bytes" /* uint64 */
/* Work computed in software by size-aware dispatch (operations: cipher
 * operations and hash updates). */
#define HWAF_PARAM_SOFTWARE_OPS "hwaf-software-ops"         /* uint64 */
#define HWAF_PARAM_SOFTWARE_BYTES "hwaf-software-bytes"     /* uint64 */
/* Kernel sessions or hashes that could not be opened, for want of file
 * descriptors (EMFILE, ENFILE), because a sandbox forbids kernel calls or
 * because the driver failed its known answer (run at its first use),
 * whose work was computed in software instead. */
#define HWAF_PARAM_FALLBACKS_DESCRIPTORS "hwaf-fallbacks-descriptors" /* uint64 */
#define HWAF_PARAM_FALLBACKS_SANDBOX "hwaf-fallbacks-sandbox"         /* uint64 */
#define HWAF_PARAM_FALLBACKS_KNOWN_ANSWER "hwaf-fallbacks-known-answer" /* uint64 */
/* Of this provider instance's implementations, how many have their
 * software path (OpenSSL's default provider's functions) set up: none
 * after the load; each at its first context, all at the first request for
 * hwaf-thresholds, hwaf-algorithms, hwaf-request-max or buildinfo. */
#define HWAF_PARAM_SOFTWARE_READY "hwaf-software-ready"     /* uint64 */
/*
 * One line per offered implementation, in the order of hwaf-algorithms:
 *   "<OpenSSL name> <backend> <kernel driver> offload_min=<bytes|never>
 *    source=<cached|configured|default>\n"
 * plus a first line "policy=<throughput|cpu>\n".
 */
#define HWAF_PARAM_THRESHOLDS "hwaf-thresholds"             /* utf8 string */
/*
 * One line per offered implementation, in the order of hwaf-algorithms:
 *   "<OpenSSL name> <backend> <kernel driver> request_max=<bytes|unlimited>
 *    source=<configured|default>\n"
 * the largest single request hwaf sends that driver (larger work is split).
 */
#define HWAF_PARAM_REQUEST_MAX "hwaf-request-max"           /* utf8 string */
/*
 * The kernel probe's result, in the calibration file's syntax, for each
 * backend whose result belongs to a known state of the kernel:
 *   "probe <backend> <key>\n"
 *   "driver <backend> <kernel name>/<key bytes> <driver> <priority> <hw>
 *    <request max>\n" per driver that passed its known answer
 * hwaf-info --calibrate writes it into the file; a later load whose key
 * matches takes the result from there instead of probing (docs/config.md).
 */
#define HWAF_PARAM_PROBE "hwaf-probe"                       /* utf8 string */

#endif
