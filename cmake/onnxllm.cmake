# Shared compile settings for every onnxllm target.
add_library(onnxllm_options INTERFACE)
# -ffp-contract=off: a * b + c is never silently fused, so a translation unit built with -mfma
# computes what its scalar reference computes; kernels fuse explicitly (std::fma, intrinsics),
# which keeps results bit-identical across instruction sets.
target_compile_options(onnxllm_options INTERFACE -Wall -Wextra -ffp-contract=off)
if(ONNXLLM_WERROR)
  target_compile_options(onnxllm_options INTERFACE -Werror)
endif()
if(ONNXLLM_ENABLE_ASAN)
  target_compile_options(onnxllm_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(onnxllm_options INTERFACE -fsanitize=address,undefined)
endif()
target_include_directories(onnxllm_options INTERFACE ${PROJECT_SOURCE_DIR}/src)

# onnxllm_library(name SOURCES ... DEPS ...): one static library per layer.
function(onnxllm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC onnxllm_options ${ARG_DEPS})
endfunction()

# Flags for translation units that use a particular instruction set (chosen at run time).
set(ONNXLLM_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)
set(ONNXLLM_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma -mf16c -mbmi2)

# Fuzzing builds instrument every library for coverage and memory errors.
if(ONNXLLM_BUILD_FUZZERS)
  target_compile_options(onnxllm_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -g)
  target_link_options(onnxllm_options INTERFACE -fsanitize=address,undefined)
endif()
