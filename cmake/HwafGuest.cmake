# HwafGuest.cmake: ctest tests that need the kernel crypto API.
#
#   hwaf_add_kernel_test(NAME <name> COMMAND <cmd> [args...]
#                        [KERNELS 6.1 6.12] [VIRTIO_CRYPTO] [NO_CRYPTO_USER]
#                        [TIMEOUT secs] [ENVIRONMENT k=v ...]
#                        [WORKING_DIRECTORY dir] [RW dir ...] [LABELS l ...]
#                        [ARCH arm64|armhf])
#
# adds one test per kernel line, named <name>.<line>[.virtio], labelled
# "kernel" (plus "kernel-<line>", and "virtio-crypto" with VIRTIO_CRYPTO).
# ARCH boots the ARM guest of that architecture (labels "arm" and <arch>;
# fixture guest.fetch-<arch>: its kernels and Debian root).
# Each runs tools/guest/kernel-test, which decides when the test runs:
# natively with HWAF_GUEST=0 when the host kernel serves AF_ALG (probed at
# test time), else inside the QEMU guest (tools/guest/run) with the build
# directory writable.  COMMAND may use generator expressions; a first word
# that names a target is replaced by its file.  Every such test requires
# the fixture test guest.fetch, which downloads the guest kernels once.
# A test that can run neither natively nor in the guest fails; it is never
# skipped.

set(HWAF_GUEST_TOOLS ${CMAKE_CURRENT_LIST_DIR}/../tools/guest)
get_filename_component(HWAF_GUEST_TOOLS ${HWAF_GUEST_TOOLS} ABSOLUTE)
set(HWAF_GUEST_KERNELS 6.1 6.12 CACHE STRING "Kernel lines the kernel tests boot")
set(HWAF_GUEST_TIMEOUT 600 CACHE STRING "Default time limit of one kernel test, in seconds")

function(_hwaf_guest_fetch_fixture)
  get_property(done GLOBAL PROPERTY HWAF_GUEST_FETCH_ADDED)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY HWAF_GUEST_FETCH_ADDED TRUE)
  add_test(NAME guest.fetch
           COMMAND ${HWAF_GUEST_TOOLS}/kernel-test --fetch ${HWAF_GUEST_KERNELS})
  set_tests_properties(guest.fetch PROPERTIES
    FIXTURES_SETUP hwaf_guest_kernels
    LABELS "kernel"
    TIMEOUT 1800)
endfunction()

function(hwaf_add_kernel_test)
  cmake_parse_arguments(KT "VIRTIO_CRYPTO;NO_CRYPTO_USER"
    "NAME;TIMEOUT;WORKING_DIRECTORY;ARCH" "COMMAND;KERNELS;ENVIRONMENT;RW;LABELS" ${ARGN})
  if(NOT KT_NAME OR NOT KT_COMMAND)
    message(FATAL_ERROR "hwaf_add_kernel_test: NAME and COMMAND are required")
  endif()
  if(KT_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "hwaf_add_kernel_test(${KT_NAME}): unknown arguments ${KT_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT KT_KERNELS)
    set(KT_KERNELS ${HWAF_GUEST_KERNELS})
  endif()
  if(NOT KT_TIMEOUT)
    set(KT_TIMEOUT ${HWAF_GUEST_TIMEOUT})
  endif()
  if(NOT KT_WORKING_DIRECTORY)
    set(KT_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()

  list(GET KT_COMMAND 0 first)
  if(TARGET ${first})
    list(REMOVE_AT KT_COMMAND 0)
    list(PREPEND KT_COMMAND "$<TARGET_FILE:${first}>")
  endif()

  # The source tree too: the guest sees the host's / read-only, but its /tmp
  # is its own, so a checkout under /tmp would be invisible without a share.
  set(opts --rw ${CMAKE_SOURCE_DIR} --rw ${CMAKE_BINARY_DIR} --timeout ${KT_TIMEOUT})
  foreach(d IN LISTS KT_RW)
    list(APPEND opts --rw ${d})
  endforeach()
  set(suffix "")
  set(labels kernel ${KT_LABELS})
  if(KT_VIRTIO_CRYPTO)
    list(APPEND opts --virtio-crypto)
    set(suffix ".virtio")
    list(APPEND labels virtio-crypto)
  endif()
  if(KT_NO_CRYPTO_USER)
    list(APPEND opts --no-crypto-user)
  endif()
  foreach(e IN LISTS KT_ENVIRONMENT)
    list(APPEND opts --env ${e})
  endforeach()

  set(fixture hwaf_guest_kernels)
  if(KT_ARCH)
    if(NOT KT_ARCH MATCHES "^(arm64|armhf)$")
      message(FATAL_ERROR "hwaf_add_kernel_test(${KT_NAME}): unknown ARCH '${KT_ARCH}' (arm64 or armhf)")
    endif()
    list(APPEND opts --arch ${KT_ARCH})
    list(APPEND labels arm ${KT_ARCH})
    set(fixture hwaf_guest_${KT_ARCH})
    if(NOT TEST guest.fetch-${KT_ARCH})
      add_test(NAME guest.fetch-${KT_ARCH}
               COMMAND ${HWAF_GUEST_TOOLS}/kernel-test --fetch --arch ${KT_ARCH})
      set_tests_properties(guest.fetch-${KT_ARCH} PROPERTIES
        FIXTURES_SETUP ${fixture} LABELS "kernel;arm;${KT_ARCH}" TIMEOUT 1800)
    endif()
  else()
    _hwaf_guest_fetch_fixture()
  endif()
  # ctest's own limit leaves the guest time to report its own timeout.
  math(EXPR ctest_timeout "${KT_TIMEOUT} + 120")
  foreach(k IN LISTS KT_KERNELS)
    if(NOT k MATCHES "^(6\\.1|6\\.12)$")
      message(FATAL_ERROR "hwaf_add_kernel_test(${KT_NAME}): unknown kernel line '${k}' (6.1 or 6.12)")
    endif()
    set(name ${KT_NAME}.${k}${suffix})
    add_test(NAME ${name}
             COMMAND ${HWAF_GUEST_TOOLS}/kernel-test --kernel ${k} ${opts} -- ${KT_COMMAND}
             WORKING_DIRECTORY ${KT_WORKING_DIRECTORY})
    set_tests_properties(${name} PROPERTIES
      LABELS "${labels};kernel-${k}"
      FIXTURES_REQUIRED ${fixture}
      TIMEOUT ${ctest_timeout})
  endforeach()
endfunction()
