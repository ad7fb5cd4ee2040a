# HwafPackage.cmake: the Debian packages, built by CPack's DEB generator
# (`tools/package`, or `cpack -G DEB` in a build tree; docs/packaging.md says
# why CPack rather than a debian/ directory).
#
#   hwaf        hwaf.so in libcrypto's modules directory, hwaf-info,
#               hwaf(7), hwaf-info(1), the docs and examples/hwaf.cnf,
#               /var/cache/hwaf, hwaf-calibrate.service, postinst/postrm
#               (packaging/)
#   hwaf-bench  hwaf-bench and hwaf-bench(1)
#
# The first line of each description is the package's summary.
# Depends is computed by dpkg-shlibdeps from the binaries (libssl3's version
# range, libc6, libkcapi1 for hwaf-bench), never typed here.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hwaf)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hwaf developers <hwaf@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL hwaf)
if(HWAF_BUILD_BENCH)
  list(APPEND CPACK_COMPONENTS_ALL bench)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

# The calibration file's place and what keeps it current (docs/packaging.md
# "The calibration file"): an empty /var/cache/hwaf the package owns, the
# boot unit, and maintainer scripts that calibrate at install and clean up
# at removal.  Absolute paths, in the package only (EXCLUDE_FROM_ALL: a
# plain `cmake --install` to a prefix leaves them out).
set(HWAF_SYSTEMD_UNIT_DIR /lib/systemd/system CACHE PATH
  "Where the package puts hwaf-calibrate.service (Debian 12: /lib/systemd/system)")
install(FILES ${PROJECT_SOURCE_DIR}/packaging/hwaf-calibrate.service
  DESTINATION ${HWAF_SYSTEMD_UNIT_DIR} COMPONENT hwaf EXCLUDE_FROM_ALL)
install(DIRECTORY DESTINATION /var/cache/hwaf COMPONENT hwaf EXCLUDE_FROM_ALL
  DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
  WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_HWAF_PACKAGE_CONTROL_EXTRA
  ${PROJECT_SOURCE_DIR}/packaging/postinst ${PROJECT_SOURCE_DIR}/packaging/postrm)
set(CPACK_DEBIAN_HWAF_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

set(CPACK_DEBIAN_HWAF_PACKAGE_NAME hwaf)
set(CPACK_DEBIAN_HWAF_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_HWAF_DESCRIPTION
"OpenSSL 3 provider for the Linux kernel crypto API (AF_ALG, /dev/crypto)
hwaf hands AES-CBC/CTR/XTS and SHA-1/SHA-2 to the Linux kernel crypto API
over AF_ALG sockets and /dev/crypto (cryptodev-linux), so that crypto
engines inside SoCs do the work. Each implementation says which kernel
driver serves it and whether that driver is hardware (hwaf.hw=yes|no).

Load it with -provider hwaf, an openssl.cnf providers section (see
/usr/share/doc/hwaf/examples/hwaf.cnf) or a property query. hwaf-info
shows what it offers on this machine.")
set(CPACK_DEBIAN_BENCH_PACKAGE_NAME hwaf-bench)
set(CPACK_DEBIAN_BENCH_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_BENCH_PACKAGE_RECOMMENDS hwaf)
set(CPACK_DEBIAN_BENCH_DESCRIPTION
"benchmark of the hwaf OpenSSL provider against its peers
hwaf-bench measures hwaf against OpenSSL's default provider, the afalg
engine, libkcapi and bare loops on AF_ALG and /dev/crypto, by wall clock
and by user and system CPU time.")

include(CPack)
