# HwafTiers.cmake: which ctest entries form the default tier.
#
# The default tier (tools/test, `ctest -L default`) keeps every line alive
# with one boot each -- 6.1 AF_ALG with the reference line's whole suite,
# /dev/crypto over the CUSE device and the CLI test in one boot, 6.12 with
# virtio-crypto, arm64, armhf, OpenSSL 3.5 and 4.0 -- plus the host tests
# (the benchmark's statistics scripts, minutes of CPU each, only in the
# full matrix), the package and docs checks, and a short sanitizer and
# fault pass.  Every
# entry is also in the full matrix (tools/test --full, label `full`: all
# entries).  This list is the one place a tier is set; docs/testing.md's
# table of entries is checked against it (host.tiers), and so is the
# default tier's time budget.
#
# Every directory that adds tests calls hwaf_apply_tiers() at its end; the
# top-level CMakeLists.txt calls hwaf_check_tiers() last, which fails the
# configuration when a name below is no entry (in a tree configured with
# the options that make it: the guest rig, the ARM guests, the sanitized
# build, the manual pages).

set(HWAF_TIER_DEFAULT
  # host
  host.gtest host.cli host.docs host.package host.layers host.guest-crash host.tiers
  bench.smoke bench.turn-order
  # the guest rig's kernels and ARM roots (fixtures)
  guest.fetch guest.fetch-arm64 guest.fetch-armhf
  # 6.1, AF_ALG and /dev/crypto over the CUSE device: one boot, every set
  # (OpenSSL's evp_test data among them, built by evp-data.build)
  evp-data.build kernel.suite.6.1
  kernel.package.6.1
  # 6.12 with virtio-crypto
  kernel.virtio.6.12.virtio
  # the sanitized build: a short sanitizer and fault pass
  sanitize.build sanitize.smoke.6.1
  # ARM guests
  cross.build-arm64 arm64.smoke.6.12.virtio
  cross.build-armhf armhf.smoke.6.1
  # OpenSSL 3.5 and 4.0 (test/openssl-lines)
  openssl-3.5.build kernel.openssl-3.5.gtest.6.12
  openssl-4.0.build kernel.openssl-4.0.gtest.6.12
)

# Each entry's time in the reference run (docs/testing.md's table) is its
# ctest COST: with several entries at a time, the longest start first.
set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/../docs/testing.md)
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../docs/testing.md _hwaf_timed
  REGEX "^\\| `[^`]+` \\| (default|full) \\| [0-9]+ \\|")

function(hwaf_apply_tiers)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set(tier full)
    if(t IN_LIST HWAF_TIER_DEFAULT)
      set(tier "default;full")
    endif()
    set_property(TEST ${t} APPEND PROPERTY LABELS ${tier})
    set_property(GLOBAL APPEND PROPERTY HWAF_ALL_TESTS ${t})
    foreach(line IN LISTS _hwaf_timed)
      if(line MATCHES "^\\| `([^`]+)` \\| [a-z]+ \\| ([0-9]+) \\|" AND CMAKE_MATCH_1 STREQUAL t)
        set_property(TEST ${t} PROPERTY COST ${CMAKE_MATCH_2})
      endif()
    endforeach()
  endforeach()
endfunction()

function(hwaf_check_tiers)
  if(NOT HWAF_BUILD_TESTS OR NOT HWAF_GUEST_TESTS OR HWAF_SANITIZE OR CMAKE_CROSSCOMPILING
     OR NOT HWAF_BUILD_MAN OR NOT HWAF_BUILD_BENCH OR NOT HWAF_WITH_DEVCRYPTO)
    return()
  endif()
  get_property(all GLOBAL PROPERTY HWAF_ALL_TESTS)
  foreach(t IN LISTS HWAF_TIER_DEFAULT)
    if(NOT t IN_LIST all)
      if(t MATCHES "^(cross\\.|guest\\.fetch-|arm64\\.|armhf\\.)" AND NOT HWAF_ARM_ARCHES)
        continue()
      endif()
      message(FATAL_ERROR "cmake/HwafTiers.cmake: the default tier names ${t}, which is no ctest entry")
    endif()
  endforeach()
endfunction()
