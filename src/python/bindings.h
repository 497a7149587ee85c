// The parts of the `onnxllm._onnxllm` extension, one function per area, called in this order by
// module.cc (later parts use the classes earlier ones registered).
#pragma once

#include <pybind11/pybind11.h>

namespace onnxllm::python {

namespace py = pybind11;

void bind_config_and_model(py::module_& m);  // Config, Model
void bind_tokenizer(py::module_& m);          // Tokenizer, TokenizerStream
void bind_generator(py::module_& m);          // GeneratorParams, Generator

}  // namespace onnxllm::python
