// The parts of the `onnxllm._onnxllm` extension, one function per area, called in this order by
// module.cc (later parts use the classes earlier ones registered).
#pragma once

#include <pybind11/pybind11.h>

struct OgaGeneratorParams;

namespace onnxllm::python {

namespace py = pybind11;

void bind_config_and_model(py::module_& m);  // Config, Model
void bind_tokenizer(py::module_& m);          // Tokenizer, TokenizerStream
void bind_tensors(py::module_& m);            // Tensor, NamedTensors
void bind_generator(py::module_& m);          // GeneratorParams, Generator
void bind_engine(py::module_& m);             // Request, Engine

// The C API params behind a Python GeneratorParams (TypeError for anything else).
::OgaGeneratorParams& oga_params(py::handle params);

}  // namespace onnxllm::python
