# Cross-build hwaf for Debian arm64 (aarch64-linux-gnu) with Debian 12's cross toolchain
# (gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu) and the multiarch development packages
# (libssl-dev:arm64, libgtest-dev:arm64, libkcapi-dev:arm64, libfuse3-dev:arm64;
# tools/deps --test installs them):
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake
#
# The binaries run in the arm64 guest of the kernel rig (docs/kernel-rig.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(HWAF_CROSS_TRIPLET aarch64-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/HwafCross.cmake)
