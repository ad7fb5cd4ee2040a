# The part the cross toolchain files (toolchain-<arch>.cmake) share: they set
# HWAF_CROSS_TRIPLET and include this file.
#
# Debian's cross compilers are multiarch-aware: with no sysroot they search
# /usr/include/<triplet> and /usr/lib/<triplet>, where the :<arch> packages
# install.  pkg-config is pointed at that architecture's .pc files only, so
# that nothing of the build machine's own architecture is picked up.
set(CMAKE_C_COMPILER ${HWAF_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${HWAF_CROSS_TRIPLET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${HWAF_CROSS_TRIPLET})

set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${HWAF_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# Programs (openssl, pod2man) are the build machine's; libraries and headers
# only of the target architecture.
set(CMAKE_FIND_ROOT_PATH /usr/${HWAF_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
