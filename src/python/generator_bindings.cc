// GeneratorParams and Generator. The GIL is released around every call that runs the model
// (append_tokens, generate_next_token, compute_logits, get_logits, creation); a mutex per
// Generator keeps two Python threads from driving one engine generator at the same time.
// Logits and outputs come back as numpy views over the engine's tensors; they hold the Generator
// (and so the Model) alive, and, as in onnxruntime-genai, show the values of the latest step.
#include <pybind11/stl.h>

#include <cmath>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "bindings.h"
#include "numpy_interop.h"

namespace onnxllm::python {
namespace {

enum class OptionKind { kBool, kInt, kFloat };

struct SearchOption {
  const char* name;
  OptionKind kind;
};

// onnxruntime-genai's search options (genai_config.json "search"), also settable as the legacy
// attributes `params.max_length = 200` etc.
constexpr SearchOption kSearchOptions[] = {
    {"do_sample", OptionKind::kBool},          {"early_stopping", OptionKind::kBool},
    {"past_present_share_buffer", OptionKind::kBool}, {"min_length", OptionKind::kInt},
    {"max_length", OptionKind::kInt},          {"batch_size", OptionKind::kInt},
    {"num_beams", OptionKind::kInt},           {"num_return_sequences", OptionKind::kInt},
    {"top_k", OptionKind::kInt},               {"no_repeat_ngram_size", OptionKind::kInt},
    {"random_seed", OptionKind::kInt},         {"chunk_size", OptionKind::kInt},
    {"top_p", OptionKind::kFloat},             {"temperature", OptionKind::kFloat},
    {"repetition_penalty", OptionKind::kFloat}, {"length_penalty", OptionKind::kFloat},
    {"diversity_penalty", OptionKind::kFloat},
};

// Speculative options, and the statistics Generator.get_speculative_stats() reads (the counters,
// then the numbers, of genai::SpeculativeStats).
constexpr SearchOption kSpeculativeOptions[] = {
    {"max_draft_tokens", OptionKind::kInt}, {"ngram_size", OptionKind::kInt},
    {"ngram_chained_lookup", OptionKind::kBool}, {"min_adaptive_k", OptionKind::kInt},
    {"cooldown", OptionKind::kBool},
};
constexpr const char* kSpeculativeCounts[] = {
    "rounds", "completed_rounds", "interrupted_rounds", "active_rounds", "draft_tokens_proposed",
    "draft_tokens_evaluated", "draft_tokens_accepted", "correction_tokens", "bonus_tokens", "tokens_emitted",
    "full_accept_rounds", "partial_accept_rounds", "zero_accept_rounds", "target_forward_passes",
    "target_verify_forward_passes", "standard_fallback_steps", "ngram_lookup_hits", "ngram_lookup_misses",
    "ngram_lookup_tokens_proposed", "ngram_chained_tokens_proposed", "cooldown_entries", "cooldown_steps",
    "cooldown_remaining", "effective_k", "draft_forward_passes", "tokens_queued", "tokens_discarded",
    "tokens_buffered", "adaptive_k_increases", "adaptive_k_decreases", "adaptive_k_observations",
    "adaptive_k_probes"};
constexpr const char* kSpeculativeNumbers[] = {"acceptance_rate", "total_target_verify_ms"};

std::string type_name(py::handle value) { return py::str(py::type::of(value).attr("__name__")).cast<std::string>(); }

// set_model_input's value as a C tensor the engine keeps alive itself: a Tensor's own handle (its
// data is C-owned), or a copy of a numpy array (onnxruntime-genai binds the array in place; a copy
// cannot be freed or resized under a generator, however the Python objects are released).
// `copy` receives the copy.
OgaTensor& model_input_tensor(py::handle value, std::unique_ptr<OgaTensor>& copy) {
  if (py::isinstance<OgaTensor>(value)) return value.cast<OgaTensor&>();
  if (!py::isinstance<py::array>(value))
    throw py::type_error("the value must be a numpy array or a Tensor, got " + type_name(value));
  copy = tensor_copy(py::reinterpret_borrow<py::array>(value));
  return *copy;
}

class PyGeneratorParams {
 public:
  explicit PyGeneratorParams(const OgaModel& model) : params_(OgaGeneratorParams::Create(model)) {}

  OgaGeneratorParams& params() { return *params_; }

  // bool -> a bool option, int or float -> a number (as onnxruntime-genai's binding decides).
  void set_option(const std::string& name, py::handle value) {
    static py::handle numpy_bool = python_attr("numpy", "bool_");
    if (py::isinstance<py::bool_>(value) || py::isinstance(value, numpy_bool)) {
      params_->SetSearchOptionBool(name.c_str(), PyObject_IsTrue(value.ptr()) == 1);
    } else if (!py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value) && py::hasattr(value, "__float__")) {
      const double number = py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();  // ints, floats and numpy scalars
      if (std::isnan(number)) throw py::value_error("search option " + name + " is NaN");
      params_->SetSearchOption(name.c_str(), number);
    } else {
      throw py::type_error("search option " + name + " must be a bool, int or float, got " + type_name(value));
    }
    if (name == "batch_size") batch_size_set_ = true;
  }

  // set_speculative_options: the same rules for the speculative options.
  void set_speculative_option(const std::string& name, py::handle value) {
    static py::handle numpy_bool = python_attr("numpy", "bool_");
    if (py::isinstance<py::bool_>(value) || py::isinstance(value, numpy_bool)) {
      params_->SetSpeculativeBool(name.c_str(), PyObject_IsTrue(value.ptr()) == 1);
    } else if (!py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value) && py::hasattr(value, "__float__")) {
      const double number = py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>();
      if (std::isnan(number)) throw py::value_error("speculative option " + name + " is NaN");
      params_->SetSpeculativeNumber(name.c_str(), number);
    } else {
      throw py::type_error("speculative option " + name + " must be a bool, int or float, got " + type_name(value));
    }
  }
  void set_speculative_options(const py::args& args, const py::kwargs& kwargs) {
    for (const auto& arg : args) {
      if (!py::isinstance<py::dict>(arg))
        throw py::type_error("set_speculative_options takes keywords or one dict of options");
      for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(arg)) set_speculative_option(py::str(key), value);
    }
    for (const auto& [key, value] : kwargs) set_speculative_option(py::str(key), value);
  }
  py::dict get_speculative_options() const {
    py::dict out;
    for (const auto& option : kSpeculativeOptions) {
      if (option.kind == OptionKind::kBool) out[option.name] = py::bool_(params_->GetSpeculativeBool(option.name));
      else out[option.name] = py::int_(static_cast<long long>(params_->GetSpeculativeNumber(option.name)));
    }
    return out;
  }

  void set_options(const py::args& args, const py::kwargs& kwargs) {
    // set_search_options({"max_length": 32}) as older examples call it, or keywords.
    for (const auto& arg : args) {
      if (!py::isinstance<py::dict>(arg)) throw py::type_error("set_search_options takes keywords or one dict of options");
      for (const auto& [key, value] : py::reinterpret_borrow<py::dict>(arg)) set_option(py::str(key), value);
    }
    for (const auto& [key, value] : kwargs) set_option(py::str(key), value);
  }

  py::object get_option(const SearchOption& option) const {
    if (option.kind == OptionKind::kBool) return py::bool_(params_->GetSearchBool(option.name));
    const double value = params_->GetSearchNumber(option.name);
    if (option.kind == OptionKind::kInt) return py::int_(static_cast<long long>(value));
    return py::float_(value);
  }

  py::dict get_options() const {
    py::dict out;
    for (const auto& option : kSearchOptions) out[option.name] = get_option(option);
    return out;
  }

  void set_model_input(const std::string& name, py::handle value) {
    std::unique_ptr<OgaTensor> copy;
    params_->SetModelInput(name.c_str(), model_input_tensor(value, copy));
  }
  void set_inputs(OgaNamedTensors& named) { params_->SetInputs(named); }

  // Legacy `params.input_ids = tokens`: appended by Generator(model, params).
  void set_input_ids(py::handle tokens) { input_ids_ = to_token_array(tokens, "input_ids"); }
  py::object input_ids() const { return input_ids_; }

  // The rows of a 2-D input_ids set batch_size unless it was set explicitly (as the old API did).
  void prepare_for_generator() {
    if (input_ids_.is_none()) return;
    const auto ids = py::reinterpret_borrow<py::array>(input_ids_);
    if (ids.ndim() == 2 && !batch_size_set_) params_->SetSearchOption("batch_size", static_cast<double>(ids.shape(0)));
  }

 private:
  std::unique_ptr<OgaGeneratorParams> params_;
  py::object input_ids_ = py::none();
  bool batch_size_set_ = false;
};

class PyGenerator {
 public:
  PyGenerator(const OgaModel& model, PyGeneratorParams& params) {
    params.prepare_for_generator();
    OgaGeneratorParams& p = params.params();
    const double beams = p.GetSearchNumber("num_beams");
    num_sequences_ = static_cast<size_t>(p.GetSearchNumber("batch_size")) *
                     static_cast<size_t>(beams > 1 ? p.GetSearchNumber("num_return_sequences") : 1);
    {
      py::gil_scoped_release release;
      generator_ = OgaGenerator::Create(model, p);
    }
    const py::object ids = params.input_ids();
    if (!ids.is_none()) append_tokens(ids);
  }

  void append_tokens(py::handle tokens) {
    py::array_t<int32_t> ids = to_token_array(tokens, "append_tokens");
    const int32_t* data = ids.data();
    const size_t count = static_cast<size_t>(ids.size());
    run([&] { generator_->AppendTokens(data, count); });
  }

  void generate_next_token() { run([&] { generator_->GenerateNextToken(); }); }
  py::dict get_speculative_stats() {
    auto stats = locked([&] { return generator_->GetSpeculativeStats(); });
    py::dict out;
    for (const char* name : kSpeculativeCounts) out[name] = py::int_(stats->GetCount(name));
    for (const char* name : kSpeculativeNumbers) out[name] = py::float_(stats->GetNumber(name));
    return out;
  }
  void compute_logits() { run([&] { generator_->ComputeLogits(); }); }
  bool is_done() {
    return locked([&] { return generator_->IsDone(); });
  }
  size_t token_count() {
    return locked([&] { return generator_->TokenCount(); });
  }

  py::array_t<int32_t> get_sequence(long long index) {
    if (index < 0 || static_cast<size_t>(index) >= num_sequences_)
      throw py::index_error("get_sequence: index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(num_sequences_) + ")");
    return copy_ids(locked([&] { return to_vector(generator_->GetSequence(static_cast<size_t>(index))); }));
  }

  py::array_t<int32_t> get_next_tokens() {
    return copy_ids(locked([&] { return to_vector(generator_->GetNextTokens()); }));
  }

  void rewind_to(long long length) {
    if (length < 0) throw py::value_error("rewind_to: length " + std::to_string(length) + " is negative");
    const size_t count = token_count();
    if (static_cast<size_t>(length) > count)
      throw py::value_error("rewind_to: length " + std::to_string(length) + " is more than the " +
                            std::to_string(count) + " tokens there are");
    run([&] { generator_->RewindTo(static_cast<size_t>(length)); });
  }

  std::unique_ptr<OgaTensor> get_logits() {
    std::unique_ptr<OgaTensor> t;
    run([&] { t = generator_->GetLogits(); });
    return t;
  }

  void set_logits(py::handle values) {
    py::array array = to_float_array(values, "set_logits");
    auto tensor = tensor_over(array);
    run([&] { generator_->SetLogits(*tensor); });
  }

  std::unique_ptr<OgaTensor> get_output(const std::string& name) {
    std::unique_ptr<OgaTensor> t;
    run([&] { t = generator_->GetOutput(name.c_str()); });
    return t;
  }

  void set_model_input(const std::string& name, py::handle value) {
    std::unique_ptr<OgaTensor> copy;
    OgaTensor& tensor = model_input_tensor(value, copy);
    run([&] { generator_->SetModelInput(name.c_str(), tensor); });
  }
  void set_inputs(OgaNamedTensors& named) {
    run([&] { generator_->SetInputs(named); });
  }
  void set_hidden_states(py::handle value) {
    std::unique_ptr<OgaTensor> copy;
    OgaTensor& tensor = model_input_tensor(value, copy);
    run([&] { generator_->SetHiddenStates(tensor); });
  }
  void snapshot_state() {
    run([&] { generator_->SnapshotState(); });
  }
  std::unique_ptr<OgaTensor> get_input(const std::string& name) {
    return locked([&] { return generator_->GetInput(name.c_str()); });
  }

  // Without the mutex: terminate_session is meant to reach a generation running in another thread.
  void set_runtime_option(const std::string& key, const std::string& value) {
    py::gil_scoped_release release;
    generator_->SetRuntimeOption(key.c_str(), value.c_str());
  }

 private:
  // Runs an engine call without the GIL, one call at a time on this generator.
  template <typename Fn>
  void run(Fn&& fn) {
    locked(fn);
  }

  // The same for calls that return a value (copied out while the lock is held).
  template <typename Fn>
  std::invoke_result_t<Fn&> locked(Fn&& fn) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return fn();
  }

  static std::vector<int32_t> to_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

  std::unique_ptr<OgaGenerator> generator_;
  size_t num_sequences_ = 0;
  std::mutex mutex_;
};

}  // namespace

OgaGeneratorParams& oga_params(py::handle params) {
  if (!py::isinstance<PyGeneratorParams>(params))
    throw py::type_error("expected GeneratorParams, got " + type_name(params));
  params.cast<PyGeneratorParams&>().prepare_for_generator();
  return params.cast<PyGeneratorParams&>().params();
}

void bind_generator(py::module_& m) {
  auto params = py::class_<PyGeneratorParams>(m, "GeneratorParams", "Search options for one generation request");
  params.def(py::init<const OgaModel&>(), py::arg("model"), py::keep_alive<1, 2>())
      .def("set_search_options", &PyGeneratorParams::set_options)
      .def("get_search_options", &PyGeneratorParams::get_options)
      .def("set_speculative_options", &PyGeneratorParams::set_speculative_options,
           "N-gram speculative decoding: ngram_size (0 off, or 2-16), max_draft_tokens (1-16), "
           "ngram_chained_lookup, cooldown")
      .def("get_speculative_options", &PyGeneratorParams::get_speculative_options)
      .def(
          "set_guidance",
          [](PyGeneratorParams& p, const std::string& type, const std::string& data, bool enable_ff_tokens) {
            p.params().SetGuidance(type.c_str(), data.c_str(), enable_ff_tokens);
          },
          py::arg("type"), py::arg("data"), py::arg("enable_ff_tokens") = false,
          "Constrains the generated tokens: type 'json_schema' (data: the schema as JSON text) or "
          "'json_object' (any JSON object)")
      .def("try_graph_capture_with_max_batch_size", [](PyGeneratorParams&, int) {}, py::arg("max_batch_size"),
           "Accepted for compatibility; graph capture is a GPU feature and onnxllm runs on CPU")
      .def("set_model_input", &PyGeneratorParams::set_model_input, py::arg("name"), py::arg("value"),
           "Feeds a decoder input onnxllm does not fill itself (a numpy array, copied, or a Tensor)")
      .def("set_inputs", &PyGeneratorParams::set_inputs, py::arg("named_tensors"))
      .def_property("input_ids", &PyGeneratorParams::input_ids, &PyGeneratorParams::set_input_ids);
  for (const SearchOption& option : kSearchOptions) {
    params.def_property(
        option.name, [option](const PyGeneratorParams& p) { return p.get_option(option); },
        [option](PyGeneratorParams& p, py::handle value) { p.set_option(option.name, value); });
  }

  py::class_<PyGenerator>(m, "Generator", "One generation request: append tokens, then generate token by token")
      .def(py::init<const OgaModel&, PyGeneratorParams&>(), py::arg("model"), py::arg("params"), py::keep_alive<1, 2>())
      .def("append_tokens", &PyGenerator::append_tokens, py::arg("tokens"))
      .def("generate_next_token", &PyGenerator::generate_next_token)
      .def("get_speculative_stats", &PyGenerator::get_speculative_stats)
      .def("compute_logits", &PyGenerator::compute_logits)
      .def("is_done", &PyGenerator::is_done)
      .def("token_count", &PyGenerator::token_count)
      .def("get_sequence", &PyGenerator::get_sequence, py::arg("index"))
      .def("get_next_tokens", &PyGenerator::get_next_tokens)
      // The tutorial's names: row 0's tokens so far, and their count.
      .def("get_output_tokens", &PyGenerator::get_sequence, py::arg("index") = 0)
      .def("get_current_sequence_length", &PyGenerator::token_count)
      .def("rewind_to", &PyGenerator::rewind_to, py::arg("new_length"))
      .def("get_logits", [](py::object self) { return tensor_to_numpy(self.cast<PyGenerator&>().get_logits(), self); })
      .def("set_logits", &PyGenerator::set_logits, py::arg("new_logits"))
      .def("get_output",
           [](py::object self, const std::string& name) {
             return tensor_to_numpy(self.cast<PyGenerator&>().get_output(name), self);
           },
           py::arg("name"))
      .def("set_model_input", &PyGenerator::set_model_input, py::arg("name"), py::arg("value"),
           "Feeds a decoder input onnxllm does not fill itself to every later run (a numpy array, copied, or "
           "a Tensor); names the decoder graph lacks are ignored")
      .def("set_inputs", &PyGenerator::set_inputs, py::arg("named_tensors"))
      .def("set_hidden_states", &PyGenerator::set_hidden_states, py::arg("hidden_states"),
           "Feeds the decoder input 'hidden_states' where the graph has one (a no-op otherwise)")
      .def("snapshot_state", &PyGenerator::snapshot_state,
           "A no-op: onnxllm's decoders keep no recurrent state to snapshot")
      .def("get_input",
           [](py::object self, const std::string& name) {
             return tensor_to_numpy(self.cast<PyGenerator&>().get_input(name), py::none());
           },
           py::arg("name"), "A copy of a decoder input as the last run saw it")
      .def("set_runtime_option", &PyGenerator::set_runtime_option, py::arg("key"), py::arg("value"));
}

}  // namespace onnxllm::python
