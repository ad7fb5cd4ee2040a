# Cross-build hwaf for Debian armhf (arm-linux-gnueabihf) with Debian 12's cross toolchain
# (gcc-arm-linux-gnueabihf, g++-arm-linux-gnueabihf) and the multiarch development packages
# (libssl-dev:armhf, libgtest-dev:armhf, libkcapi-dev:armhf, libfuse3-dev:armhf;
# tools/deps --test installs them):
#
#   cmake -S . -B build-armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake
#
# The binaries run in the armhf guest of the kernel rig (docs/kernel-rig.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(HWAF_CROSS_TRIPLET arm-linux-gnueabihf)
include(${CMAKE_CURRENT_LIST_DIR}/HwafCross.cmake)
