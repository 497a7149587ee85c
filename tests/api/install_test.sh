#!/bin/sh
# cmake --install into a fresh prefix, then build examples/c (C and C++) with
# `pkg-config --cflags --libs onnxllm` and a tiny CMake project with find_package(onnxllm), and
# run them on stories260K built by the installed CLI (on a missing folder when ../shared is absent).
#   install_test.sh BUILD_DIR SOURCE_DIR SHARED_DIR
set -eu
build=$1 source=$2 shared=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/onnxllm-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() { echo "FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in lib/libonnxllm.so include/ort_genai_c.h include/ort_genai.h bin/onnxllm lib/pkgconfig/onnxllm.pc \
         lib/cmake/onnxllm/onnxllmConfig.cmake include/onnxllm/compat/onnxruntime_cxx_api.h; do
  [ -e "$prefix/$f" ] || fail "$f was not installed"
done
# Only the C API is exported.
others=$(nm -D --defined-only "$prefix/lib/libonnxllm.so" | awk '{print $3}' | grep -v '^Oga' || true)
[ -z "$others" ] || fail "libonnxllm.so exports non-Oga symbols: $others"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs onnxllm)
cc -std=c11 -Wall -Wextra -Werror -pedantic "$source/examples/c/generate.c" $flags -o "$work/generate_c"
c++ -std=c++20 -Wall -Wextra -Werror "$source/examples/c/generate.cpp" $flags -o "$work/generate_cpp20"
c++ -std=c++17 -Wall -Wextra -Werror "$source/examples/c/generate.cpp" $flags -o "$work/generate_cpp17"
# onnxruntime-genai's published examples include onnxruntime_cxx_api.h for Ort::Env (provider
# libraries) next to ort_genai.h: the same flags must find both.
cat > "$work/ort_env.cpp" <<'CPP'
#include <cstring>
#include <iostream>
#include "onnxruntime_cxx_api.h"
#include "ort_genai.h"
int main() {
  auto env = Ort::Env();
  env.RegisterExecutionProviderLibrary("CUDAExecutionProvider", "/nonexistent/libonnxruntime_providers_cuda.so");
  try {
    auto config = OgaConfig::Create("/nonexistent-model");
  } catch (const std::exception& e) {
    std::cout << e.what() << std::endl;
    return std::strstr(e.what(), "genai_config.json") ? 0 : 1;
  }
  return 1;
}
CPP
c++ -std=c++20 -Wall -Wextra -Werror "$work/ort_env.cpp" $flags -o "$work/ort_env"
env -u LD_LIBRARY_PATH "$work/ort_env" > "$work/ort_env.out" 2> "$work/ort_env.err" || fail "ort_env: $(cat "$work/ort_env.out")"
grep -q "was not registered (built-in providers: cpu)" "$work/ort_env.err" || fail "ort_env warning: $(cat "$work/ort_env.err")"

mkdir -p "$work/cmake_project"
cat > "$work/cmake_project/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(uses_onnxllm LANGUAGES C CXX)
find_package(onnxllm 0.1 CONFIG REQUIRED)
add_executable(generate_c ${EXAMPLES}/generate.c)
target_link_libraries(generate_c PRIVATE onnxllm::onnxllm)
add_executable(generate_cpp ${EXAMPLES}/generate.cpp)
target_compile_features(generate_cpp PRIVATE cxx_std_20)
target_link_libraries(generate_cpp PRIVATE onnxllm::onnxllm)
add_executable(ort_env ${ORT_ENV})
target_compile_features(ort_env PRIVATE cxx_std_20)
target_link_libraries(ort_env PRIVATE onnxllm::onnxllm)
CMAKE
cmake -S "$work/cmake_project" -B "$work/cmake_build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLES="$source/examples/c" -DORT_ENV="$work/ort_env.cpp" > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "find_package(onnxllm)"; }
cmake --build "$work/cmake_build" > "$work/cmake_build.log" 2>&1 || { cat "$work/cmake_build.log"; fail "cmake build"; }
env -u LD_LIBRARY_PATH "$work/cmake_build/ort_env" > /dev/null 2>&1 || fail "ort_env built with find_package(onnxllm)"

programs="$work/generate_c $work/generate_cpp20 $work/generate_cpp17 $work/cmake_build/generate_c $work/cmake_build/generate_cpp"
if [ -d "$shared/models/stories260K-hf" ]; then
  "$prefix/bin/onnxllm" build -i "$shared/models/stories260K-hf" -o "$work/model" -p fp32 > /dev/null
  expected="Once upon a time, there was a little girl named Lily. She loved to play outside in the park."
  for p in $programs; do
    out=$(env -u LD_LIBRARY_PATH "$p" "$work/model" "Once upon a time" 40 2>/dev/null)
    case "$out" in "$expected"*) ;; *) fail "$p printed '$out'" ;; esac
  done
  echo "install test: 5 programs built against $prefix generated the expected story"
else
  for p in $programs; do
    if out=$(env -u LD_LIBRARY_PATH "$p" "$work/no-such-model" 2>&1); then fail "$p succeeded on a missing folder"; fi
    case "$out" in *genai_config.json*) ;; *) fail "$p: '$out'" ;; esac
  done
  echo "install test: 5 programs built and ran (../shared absent: checked the error on a missing model)"
fi
