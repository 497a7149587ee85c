// Engine and Request (continuous batching, onnxruntime-genai's og.Engine / og.Request) over the C
// API. step() releases the GIL while the model runs, so other Python threads can add requests
// meanwhile, as onnxruntime-genai's continuous-batching example does. The engine keeps the Python
// objects of its requests alive until they are removed, and step() returns the caller's own
// Request object; its opaque data is any Python object.
#include <pybind11/stl.h>

#include <map>
#include <memory>

#include "bindings.h"
#include "numpy_interop.h"

namespace onnxllm::python {
namespace {

// One row of token ids from a Python sequence or array, as the C API takes it.
std::unique_ptr<OgaSequences> one_sequence(py::handle tokens, const char* method) {
  const py::array_t<int32_t> ids = to_token_array(tokens, method);
  if (ids.ndim() != 1) throw py::value_error(std::string("Request.") + method + " takes one sequence of token ids");
  auto sequences = OgaSequences::Create();
  sequences->Append(ids.data(), static_cast<size_t>(ids.size()));
  return sequences;
}

class PyRequest {
 public:
  explicit PyRequest(OgaGeneratorParams& params) : request_(OgaRequest::Create(params)) {
    // The C-level opaque pointer finds this object again after a step.
    request_->SetOpaqueData(this);
  }

  OgaRequest& request() { return *request_; }

  void add_tokens(py::handle tokens) { request_->AddTokens(*one_sequence(tokens, "add_tokens")); }
  void continue_with(py::handle tokens) { request_->Continue(*one_sequence(tokens, "continue_with")); }
  bool has_unseen_tokens() const { return request_->HasUnseenTokens(); }
  int32_t get_unseen_token() { return request_->GetUnseenToken(); }
  bool is_done() const { return request_->IsDone(); }
  bool is_turn_complete() const { return request_->IsTurnComplete(); }
  void set_opaque_data(py::object data) { opaque_ = std::move(data); }
  py::object get_opaque_data() const { return opaque_; }

 private:
  std::unique_ptr<OgaRequest> request_;
  py::object opaque_ = py::none();
};

class PyEngine {
 public:
  explicit PyEngine(OgaModel& model) {
    py::gil_scoped_release release;
    engine_ = OgaEngine::Create(model);
  }

  void add_request(py::object request) {
    PyRequest& r = request.cast<PyRequest&>();
    {
      py::gil_scoped_release release;
      engine_->Add(r.request());
    }
    requests_[&r] = std::move(request);
  }

  void remove_request(PyRequest& r) {
    {
      py::gil_scoped_release release;
      engine_->Remove(r.request());
    }
    requests_.erase(&r);
  }

  py::object step() {
    OgaRequest* ready;
    {
      py::gil_scoped_release release;
      ready = engine_->Step();
    }
    if (!ready) return py::none();
    auto it = requests_.find(static_cast<PyRequest*>(ready->GetOpaqueData()));
    return it == requests_.end() ? py::none() : it->second;
  }

  bool has_pending_requests() {
    py::gil_scoped_release release;
    return engine_->HasPendingRequests();
  }

 private:
  std::unique_ptr<OgaEngine> engine_;
  std::map<PyRequest*, py::object> requests_;
};

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<PyRequest>(m, "Request", "One generation request served by an Engine")
      .def(py::init([](py::handle params) { return new PyRequest(oga_params(params)); }), py::arg("params"))
      .def("add_tokens", &PyRequest::add_tokens, py::arg("tokens"))
      .def("continue_with", &PyRequest::continue_with, py::arg("tokens"))
      .def("has_unseen_tokens", &PyRequest::has_unseen_tokens)
      .def("get_unseen_token", &PyRequest::get_unseen_token)
      .def("is_done", &PyRequest::is_done)
      .def("is_turn_complete", &PyRequest::is_turn_complete)
      .def("set_opaque_data", &PyRequest::set_opaque_data, py::arg("opaque_data"))
      .def("get_opaque_data", &PyRequest::get_opaque_data);
  py::class_<PyEngine>(m, "Engine", "Continuous batching over a paged KV cache: many requests, one model")
      .def(py::init<OgaModel&>(), py::arg("model"), py::keep_alive<1, 2>())
      .def("add_request", &PyEngine::add_request, py::arg("request"))
      .def("remove_request", &PyEngine::remove_request, py::arg("request"))
      .def("step", &PyEngine::step)
      .def("has_pending_requests", &PyEngine::has_pending_requests);
}

}  // namespace onnxllm::python
