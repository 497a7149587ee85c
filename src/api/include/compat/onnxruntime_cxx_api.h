// The few ONNX Runtime C++ names that onnxruntime-genai's published C/C++ examples use next to
// ort_genai.h (their common.h includes onnxruntime_cxx_api.h for Ort::Env, to register plug-in
// execution provider libraries). onnxllm has no ONNX Runtime inside, so this is not ONNX
// Runtime's API: only Ort::Env and its provider-library calls, forwarded to the Oga functions
// (which load nothing and warn that only the built-in providers exist). It is installed in
// include/onnxllm/compat, which pkg-config and the CMake package add to the include path, so a
// real ONNX Runtime installed elsewhere is never shadowed unless a program uses onnxllm's flags.
#pragma once

#include <string>

#include "ort_genai_c.h"

namespace Ort {

class Env {
 public:
  Env() = default;
  Env& RegisterExecutionProviderLibrary(const char* registration_name, const std::string& path) {
    OgaRegisterExecutionProviderLibrary(registration_name, path.c_str());
    return *this;
  }
  Env& UnregisterExecutionProviderLibrary(const char* registration_name) {
    OgaUnregisterExecutionProviderLibrary(registration_name);
    return *this;
  }
};

}  // namespace Ort
