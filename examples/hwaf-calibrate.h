/* hwaf-info --calibrate (hwaf-calibrate.c). */
#ifndef HWAF_CALIBRATE_H
#define HWAF_CALIBRATE_H

#include <openssl/provider.h>

/*
 * Time every implementation of hwaf (loaded in lib) that dispatch can serve
 * in software, and write the calibration file to outfile ("-": standard
 * output; NULL: the file named by the configuration's "calibration" key,
 * else standard output), replacing it atomically.  budget: seconds per
 * measured point.  Returns the exit status: 0 all calibrated, 1 some could
 * not be timed, 2 nothing written.
 */
int hwaf_calibrate(OSSL_LIB_CTX *lib, OSSL_PROVIDER *hwaf, const char *outfile,
                   double budget);

/*
 * The calibration file named by config (hwaf's "hwaf-config" parameter:
 * "calibration = FILE"), copied into out; NULL when it names none.
 */
const char *hwaf_calibration_file(const char *config, char *out, size_t len);

#endif
