// The one place that includes the generated ONNX protobuf classes (Debian libonnx-dev).
#pragma once

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_API
#define ONNX_API
#endif
#include <onnx/onnx-ml.pb.h>  // IWYU pragma: export
