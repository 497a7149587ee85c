// Tokenizer and TokenizerStream. encode returns a numpy view of the engine's sequence (no copy);
// the GIL is released while text is encoded or decoded, which is where long inputs spend time.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "numpy_interop.h"

namespace onnxllm::python {
namespace {

struct SequencesOwner {
  std::unique_ptr<OgaSequences> sequences;
};

py::array_t<int32_t> encode(const OgaTokenizer& tokenizer, const std::string& text) {
  auto sequences = OgaSequences::Create();
  {
    py::gil_scoped_release release;
    tokenizer.Encode(text.c_str(), *sequences);
  }
  const std::span<const int32_t> ids = sequences->Get(0);
  auto* holder = new SequencesOwner{std::move(sequences)};
  py::capsule base(holder, [](void* p) { delete static_cast<SequencesOwner*>(p); });
  return py::array_t<int32_t>(static_cast<py::ssize_t>(ids.size()), ids.data(), base);
}

py::str decode(const OgaTokenizer& tokenizer, py::handle tokens) {
  py::array_t<int32_t> ids = to_token_array(tokens, "decode");
  if (ids.ndim() > 1) throw py::value_error("decode: tokens must be one sequence (1-D); use decode_batch for several");
  const int32_t* data = ids.data();
  const size_t count = static_cast<size_t>(ids.size());
  const char* text = nullptr;
  {
    py::gil_scoped_release release;
    OgaCheckResult(OgaTokenizerDecode(&tokenizer, data, count, &text));
  }
  return to_str(OwnedString(text).get());
}

// Values of update_options as the C API takes them: strings, bools as "true"/"false".
std::string option_value(const std::string& key, py::handle value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(value) || py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value))
    return py::str(value).cast<std::string>();
  throw py::type_error("update_options: " + key + " must be a str, bool or number, got " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

// JSON text for messages/tools given as a str (used as is) or as Python lists/dicts. None and ""
// mean "not given" (onnxruntime-genai's examples pass tools="" and template_str="").
std::optional<std::string> json_text(py::handle value, const char* what) {
  if (value.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(value)) {
    std::string text = value.cast<std::string>();
    if (text.empty()) return std::nullopt;
    return text;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value) || py::isinstance<py::dict>(value)) {
    static py::handle dumps = python_attr("json", "dumps");
    return dumps(value).cast<std::string>();
  }
  throw py::type_error(std::string("apply_chat_template: ") + what + " must be a JSON str or a list of dicts");
}

}  // namespace

void bind_tokenizer(py::module_& m) {
  py::class_<OgaTokenizerStream>(m, "TokenizerStream", "Incremental decoding: text as soon as it is complete")
      .def("decode", [](OgaTokenizerStream& stream, int32_t token) { return to_str(stream.Decode(token)); },
           py::arg("token"));

  py::class_<OgaTokenizer>(m, "Tokenizer", "The model folder's tokenizer and chat template")
      .def(py::init([](const OgaModel& model) { return OgaTokenizer::Create(model); }), py::arg("model"),
           py::keep_alive<1, 2>())
      .def("encode", &encode, py::arg("text"))
      .def("decode", &decode, py::arg("tokens"))
      .def("encode_batch",
           [](const OgaTokenizer& tokenizer, const std::vector<std::string>& texts) {
             std::vector<const char*> c_texts;
             for (const auto& t : texts) c_texts.push_back(t.c_str());
             std::unique_ptr<OgaTensor> tensor;
             {
               py::gil_scoped_release release;
               tensor = tokenizer.EncodeBatch(c_texts.data(), c_texts.size());
             }
             return tensor;  // a Tensor, as onnxruntime-genai's (np.asarray or as_numpy() views it)
           },
           py::arg("texts"))
      .def("decode_batch",
           [](const OgaTokenizer& tokenizer, py::handle tokens) {
             py::array_t<int32_t> ids = to_token_array(tokens, "decode_batch");
             if (ids.ndim() != 2) throw py::value_error("decode_batch: tokens must be 2-D [sequences, length]");
             py::array array = ids;
             auto tensor = tensor_over(array);
             std::unique_ptr<OgaStringArray> texts;
             {
               py::gil_scoped_release release;
               texts = tokenizer.DecodeBatch(*tensor);
             }
             py::list out;
             for (size_t i = 0; i < texts->Count(); ++i) out.append(to_str(texts->Get(i)));
             return out;
           },
           py::arg("tokens"))
      .def("to_token_id", [](const OgaTokenizer& tokenizer, const std::string& s) { return tokenizer.ToTokenId(s.c_str()); },
           py::arg("token"))
      .def("update_options",
           [](OgaTokenizer& tokenizer, const py::kwargs& options) {
             std::vector<std::string> keys, values;
             for (const auto& [key, value] : options) {
               keys.push_back(py::str(key).cast<std::string>());
               values.push_back(option_value(keys.back(), value));
             }
             std::vector<const char*> k, v;
             for (size_t i = 0; i < keys.size(); ++i) k.push_back(keys[i].c_str()), v.push_back(values[i].c_str());
             tokenizer.UpdateOptions(k.data(), v.data(), k.size());
           })
      .def("apply_chat_template",
           [](const OgaTokenizer& tokenizer, py::handle messages, py::handle template_str, py::handle tools,
              bool add_generation_prompt) {
             const auto m = json_text(messages, "messages");
             if (!m) throw py::type_error("apply_chat_template: messages must be given");
             const auto t = json_text(tools, "tools");
             std::optional<std::string> tmpl;
             if (!template_str.is_none()) tmpl = template_str.cast<std::string>();
             if (tmpl && tmpl->empty()) tmpl.reset();
             const char* text = nullptr;
             {
               py::gil_scoped_release release;
               OgaCheckResult(OgaTokenizerApplyChatTemplate(&tokenizer, tmpl ? tmpl->c_str() : nullptr, m->c_str(),
                                                            t ? t->c_str() : nullptr, add_generation_prompt, &text));
             }
             return to_str(OwnedString(text).get());
           },
           py::arg("messages"), py::kw_only(), py::arg("template_str") = py::none(), py::arg("tools") = py::none(),
           py::arg("add_generation_prompt") = true)
      .def("create_stream", [](const OgaTokenizer& tokenizer) { return OgaTokenizerStream::Create(tokenizer); },
           py::keep_alive<0, 1>())
      .def_property_readonly("bos_token_id", &OgaTokenizer::GetBosTokenId)
      .def_property_readonly("eos_token_ids", [](const OgaTokenizer& t) { return copy_ids(t.GetEosTokenIds()); })
      .def_property_readonly("pad_token_id", &OgaTokenizer::GetPadTokenId)
      .def_property_readonly("bot_token_id", &OgaTokenizer::GetBotTokenId)
      .def_property_readonly("eot_token_id", &OgaTokenizer::GetEotTokenId)
      .def_property_readonly("bor_token_id", &OgaTokenizer::GetBorTokenId)
      .def_property_readonly("eor_token_id", &OgaTokenizer::GetEorTokenId);
}

}  // namespace onnxllm::python
