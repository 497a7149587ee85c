# Cross build for aarch64 with Debian's cross compiler (g++-aarch64-linux-gnu), tests run under
# qemu-user: `make test-neon`. Libraries come from the cross toolchain's sysroot only, so a host
# (x86) library is never linked by mistake; header-only packages (nlohmann_json) are found anywhere.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# ctest (and gtest_discover_tests) run every test binary through qemu with the sysroot's loader.
find_program(ONNXLLM_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${ONNXLLM_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
