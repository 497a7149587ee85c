#include "builder/genai_config_writer.h"

namespace onnxllm {

nlohmann::ordered_json make_genai_config(const HfConfig& c, const GenaiConfigOptions& o) {
  using nlohmann::ordered_json;
  ordered_json inputs = {{"input_ids", "input_ids"},
                         {"attention_mask", "attention_mask"},
                         {"past_key_names", "past_key_values.%d.key"},
                         {"past_value_names", "past_key_values.%d.value"}};
  ordered_json outputs = ordered_json::object();
  if (!o.exclude_lm_head) outputs["logits"] = "logits";
  outputs["present_key_names"] = "present.%d.key";
  outputs["present_value_names"] = "present.%d.value";

  ordered_json decoder = {{"session_options", {{"log_id", "onnxruntime-genai"}, {"provider_options", ordered_json::array()}}},
                          {"filename", o.filename},
                          {"head_size", c.head_dim},
                          {"hidden_size", c.hidden_size},
                          {"inputs", inputs},
                          {"outputs", outputs},
                          {"num_attention_heads", c.num_heads},
                          {"num_hidden_layers", c.num_layers},
                          {"num_key_value_heads", c.num_kv_heads}};

  ordered_json model = {{"bos_token_id", c.bos_token_id}, {"context_length", c.max_position_embeddings}, {"decoder", decoder}};
  // pad defaults to the (first) eos id, as the genai builder does.
  nlohmann::json pad = c.pad_token_id;
  if (pad.is_null() && !c.eos_token_id.is_null()) pad = c.eos_token_id.is_array() ? c.eos_token_id[0] : c.eos_token_id;
  if (!c.eos_token_id.is_null()) model["eos_token_id"] = c.eos_token_id;
  if (!pad.is_null()) model["pad_token_id"] = pad;
  model["type"] = c.genai_type;
  model["vocab_size"] = c.vocab_size;

  const SearchDefaults& s = c.search;
  ordered_json search = {{"diversity_penalty", s.diversity_penalty},
                         {"do_sample", s.do_sample},
                         {"early_stopping", true},
                         {"length_penalty", s.length_penalty},
                         {"max_length", o.max_length > 0 ? o.max_length : c.max_position_embeddings},
                         {"min_length", 0},
                         {"no_repeat_ngram_size", s.no_repeat_ngram_size},
                         {"num_beams", s.num_beams},
                         {"num_return_sequences", s.num_return_sequences},
                         {"past_present_share_buffer", true},
                         {"repetition_penalty", s.repetition_penalty},
                         {"temperature", s.temperature},
                         {"top_k", s.top_k},
                         {"top_p", s.top_p}};
  return ordered_json{{"model", model}, {"search", search}};
}

}  // namespace onnxllm
