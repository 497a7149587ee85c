// Conversions between Python objects and the C API's buffers: token ids and logits in (numpy
// arrays used in place when they already have the right dtype and layout), tensors out as numpy
// views that keep the C tensor alive, and engine strings out as Python str.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <span>

#include "ort_genai.h"

namespace onnxllm::python {

namespace py = pybind11;

// Token ids from a numpy array of any integer dtype, a Tensor, a (nested) list or tuple of ints: a
// C-contiguous int32 array is returned as it is; anything else is converted with a range check.
// Other element types are a TypeError naming `what`; ragged lists and ids outside int32 a ValueError.
py::array_t<int32_t> to_token_array(py::handle tokens, const char* what);

// Float values (numpy float arrays or lists of numbers) as a C-contiguous float32 array.
py::array_t<float> to_float_array(py::handle values, const char* what);

// A numpy array over the tensor's memory, without a copy; the array owns `tensor` and holds
// `owner` (the Python object the memory belongs to, e.g. the Generator) until it is released.
py::array tensor_to_numpy(std::unique_ptr<OgaTensor> tensor, py::object owner);

// A C tensor over a numpy array's memory (no copy); `array` must outlive it.
std::unique_ptr<OgaTensor> tensor_over(py::array& array);
// A C tensor owning a copy of the array (any layout or byte order, read-only arrays too).
std::unique_ptr<OgaTensor> tensor_copy(const py::array& array);
// A numpy view of a Python Tensor's data (`tensor` is the Tensor object, which the view keeps
// alive).
py::array tensor_view(py::object tensor);

// A fresh int32 numpy array with a copy of `ids` (for memory the engine reuses).
py::array_t<int32_t> copy_ids(std::span<const int32_t> ids);

// A string the C API returned, freed with OgaDestroyString.
struct StringDeleter {
  void operator()(const char* s) const { OgaDestroyString(s); }
};
using OwnedString = std::unique_ptr<const char, StringDeleter>;

// `module.name`, imported once and kept for the life of the process.
py::handle python_attr(const char* module, const char* name);

// Engine text as a Python str (invalid UTF-8 becomes U+FFFD rather than an exception).
py::str to_str(const char* utf8);

}  // namespace onnxllm::python
