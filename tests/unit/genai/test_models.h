// Small decoder graphs built in code for the generation tests, with what each computes written
// out plainly so the tests can check the generator against an independent reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "genai/config/config.h"
#include "genai/model/model.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm::genai::test {

using onnxllm::test::add_constant;
using onnxllm::test::add_input;
using onnxllm::test::add_output;
using onnxllm::test::int_attr;

// The test models are tiny: one thread avoids waiting on workers of a busy machine.
inline ModelOptions one_thread() {
  ModelOptions o;
  o.num_threads = 1;
  return o;
}

inline std::vector<float> random_values(size_t n, uint32_t seed) { return onnxllm::test::uniform(n, -1.0f, 1.0f, seed); }

inline Tensor float_tensor(const std::vector<float>& v, Shape shape) {
  return Tensor::from<float>(shape, std::span<const float>(v));
}

inline Tensor int64_tensor(std::vector<int64_t> v) {
  return Tensor::from<int64_t>(Shape{static_cast<int64_t>(v.size())}, std::span<const int64_t>(v));
}

// A genai_config.json text for a test model.
inline std::string config_json(const std::string& type, int vocab, int context, int pad, const std::string& eos,
                               const std::string& decoder_extra = "", const std::string& search = "{}") {
  return R"({"model": {"type": ")" + type + R"(", "vocab_size": )" + std::to_string(vocab) +
         R"(, "context_length": )" + std::to_string(context) + R"(, "pad_token_id": )" + std::to_string(pad) +
         R"(, "eos_token_id": )" + eos + R"(, "decoder": {"filename": "model.onnx")" + decoder_extra +
         R"(}}, "search": )" + search + "}";
}

// logits[b, s, :] = table[input_ids[b, s], :]. No cache: every run sees the whole sequence, and
// the next token depends only on the last one.
struct TableModel {
  int vocab;
  std::vector<float> table;  // vocab x vocab

  std::shared_ptr<Graph> graph() const {
    auto g = onnxllm::test::new_graph();
    add_input(*g, "input_ids", DType::kInt64, {-1, -1}, {"batch", "seq"});
    add_constant(*g, "table", float_tensor(table, Shape{vocab, vocab}));
    g->add_node("Gather", "", {"table", "input_ids"}, {"logits"});
    add_output(*g, "logits");
    return g;
  }
  std::shared_ptr<const Model> model(const std::string& search = "{}", int pad = 0, const std::string& eos = "0",
                                     int context = 64) const {
    Config c = Config::parse(config_json("decoder", vocab, context, pad, eos, "", search));
    return Model::create(c, graph(), one_thread());
  }
};

// A decoder with a KV cache in standard ops (Gather, Concat, MatMul), `layers` layers of one head.
// Each token t at position p contributes key EK_l[t] and value EV_l[t] + PE[p] per layer; the
// logits of every position are h . W with
//   h = sum over layers l and unmasked sequence positions j of (EK_l[t_j] + EV_l[t_j] + PE[p_j]),
// read through the cache, so they depend on the whole (unpadded) history and its positions.
// combined: gpt2-style past_%d [2, B, 1, S, D] and int32 inputs; else separate K/V and int64.
struct KvModel {
  int vocab = 32;
  int dim = 8;
  int layers = 2;
  int max_position = 64;
  bool combined = false;
  uint32_t seed = 7;
  // Extra inputs onnxllm does not fill: "logits_bias" float [vocab], added to the logits, and
  // onnxruntime-genai's preset "num_logits_to_keep" int64 [1] (added too, as a float).
  bool logits_bias_input = false;
  bool keep_input = false;

  std::vector<float> ek(int l) const { return random_values(static_cast<size_t>(vocab) * dim, seed + 10 * l + 1); }
  std::vector<float> ev(int l) const { return random_values(static_cast<size_t>(vocab) * dim, seed + 10 * l + 2); }
  std::vector<float> pe() const { return random_values(static_cast<size_t>(max_position) * dim, seed + 100); }
  std::vector<float> w() const { return random_values(static_cast<size_t>(dim) * vocab, seed + 101); }

  std::shared_ptr<Graph> graph() const {
    auto g = onnxllm::test::new_graph();
    const DType index_type = combined ? DType::kInt32 : DType::kInt64;
    add_input(*g, "input_ids", index_type, {-1, -1}, {"batch", "seq"});
    add_input(*g, "attention_mask", index_type, {-1, -1}, {"batch", "total"});
    add_input(*g, "position_ids", index_type, {-1, -1}, {"batch", "seq"});
    add_constant(*g, "PE", float_tensor(pe(), Shape{max_position, dim}));
    add_constant(*g, "W", float_tensor(w(), Shape{dim, vocab}));
    add_constant(*g, "axes0", int64_tensor({0}));
    add_constant(*g, "axes1", int64_tensor({1}));
    add_constant(*g, "axes12", int64_tensor({1, 2}));
    add_constant(*g, "axes_last", int64_tensor({-1}));
    add_constant(*g, "zero", Tensor::scalar<float>(0.0f));
    add_constant(*g, "index0", Tensor::scalar<int64_t>(0));
    add_constant(*g, "index1", Tensor::scalar<int64_t>(1));
    g->add_node("Cast", "", {"attention_mask"}, {"mask_f"}).attributes.push_back(int_attr("to", 1));
    g->add_node("Unsqueeze", "", {"mask_f", "axes12"}, {"mask4"});  // [B,1,1,T]
    g->add_node("Gather", "", {"PE", "position_ids"}, {"pos_emb"});
    std::string h_sum;
    for (int l = 0; l < layers; ++l) {
      const std::string L = std::to_string(l);
      add_constant(*g, "EK" + L, float_tensor(ek(l), Shape{vocab, dim}));
      add_constant(*g, "EV" + L, float_tensor(ev(l), Shape{vocab, dim}));
      g->add_node("Gather", "", {"EK" + L, "input_ids"}, {"k" + L});
      g->add_node("Gather", "", {"EV" + L, "input_ids"}, {"ve" + L});
      g->add_node("Add", "", {"ve" + L, "pos_emb"}, {"v" + L});
      g->add_node("Unsqueeze", "", {"k" + L, "axes1"}, {"k4_" + L});  // [B,1,S,D]
      g->add_node("Unsqueeze", "", {"v" + L, "axes1"}, {"v4_" + L});
      std::string key = "present_k" + L, value = "present_v" + L;
      if (combined) {
        add_input(*g, "past_" + L, DType::kFloat32, {2, -1, 1, -1, dim}, {"", "batch", "", "past", ""});
        g->add_node("Unsqueeze", "", {"k4_" + L, "axes0"}, {"k5_" + L});
        g->add_node("Unsqueeze", "", {"v4_" + L, "axes0"}, {"v5_" + L});
        g->add_node("Concat", "", {"k5_" + L, "v5_" + L}, {"kv_" + L}).attributes.push_back(int_attr("axis", 0));
        g->add_node("Concat", "", {"past_" + L, "kv_" + L}, {"present_" + L}).attributes.push_back(int_attr("axis", 3));
        g->add_node("Gather", "", {"present_" + L, "index0"}, {key}).attributes.push_back(int_attr("axis", 0));
        g->add_node("Gather", "", {"present_" + L, "index1"}, {value}).attributes.push_back(int_attr("axis", 0));
        add_output(*g, "present_" + L);
      } else {
        add_input(*g, "past_key_values." + L + ".key", DType::kFloat32, {-1, 1, -1, dim}, {"batch", "", "past", ""});
        add_input(*g, "past_key_values." + L + ".value", DType::kFloat32, {-1, 1, -1, dim}, {"batch", "", "past", ""});
        key = "present." + L + ".key";
        value = "present." + L + ".value";
        g->add_node("Concat", "", {"past_key_values." + L + ".key", "k4_" + L}, {key}).attributes.push_back(
            int_attr("axis", 2));
        g->add_node("Concat", "", {"past_key_values." + L + ".value", "v4_" + L}, {value}).attributes.push_back(
            int_attr("axis", 2));
        add_output(*g, key);
        add_output(*g, value);
      }
      g->add_node("MatMul", "", {"mask4", key}, {"hk" + L});  // [B,1,1,D]
      g->add_node("MatMul", "", {"mask4", value}, {"hv" + L});
      g->add_node("Add", "", {"hk" + L, "hv" + L}, {"h" + L});
      if (h_sum.empty()) {
        h_sum = "h" + L;
      } else {
        g->add_node("Add", "", {h_sum, "h" + L}, {"hs" + L});
        h_sum = "hs" + L;
      }
    }
    g->add_node("MatMul", "", {h_sum, "W"}, {"l4"});       // [B,1,1,V]
    g->add_node("Squeeze", "", {"l4", "axes1"}, {"l3"});  // [B,1,V]
    // Broadcast to [B,S,V] (every position gets the same logits; only the last one is used).
    g->add_node("Cast", "", {"input_ids"}, {"ids_f"}).attributes.push_back(int_attr("to", 1));
    g->add_node("Mul", "", {"ids_f", "zero"}, {"zeros"});
    g->add_node("Unsqueeze", "", {"zeros", "axes_last"}, {"zeros3"});
    // Each step adds to the logits so far; the last one's output is "logits".
    std::vector<std::pair<std::string, std::string>> adds{{"l3", "zeros3"}};
    if (logits_bias_input) {
      add_input(*g, "logits_bias", DType::kFloat32, {vocab}, {""});
      adds.push_back({"", "logits_bias"});
    }
    if (keep_input) {
      add_input(*g, "num_logits_to_keep", DType::kInt64, {1}, {""});
      g->add_node("Cast", "", {"num_logits_to_keep"}, {"keep_f"}).attributes.push_back(int_attr("to", 1));
      adds.push_back({"", "keep_f"});
    }
    for (size_t i = 0; i < adds.size(); ++i) {
      const std::string in = i == 0 ? adds[i].first : "logits" + std::to_string(i - 1);
      g->add_node("Add", "", {in, adds[i].second}, {i + 1 == adds.size() ? "logits" : "logits" + std::to_string(i)});
    }
    add_output(*g, "logits");
    return g;
  }

  std::string config(int pad, const std::string& eos, const std::string& search = "{}", int context = 64) const {
    std::string extra = R"(, "num_hidden_layers": )" + std::to_string(layers);
    if (combined) extra += R"(, "inputs": {"past_names": "past_%d"}, "outputs": {"present_names": "present_%d"})";
    return config_json(combined ? "gpt2" : "llama", vocab, context, pad, eos, extra, search);
  }
  std::shared_ptr<const Model> model(int pad, const std::string& eos, const std::string& search = "{}",
                                     int context = 64) const {
    return Model::create(Config::parse(config(pad, eos, search, context)), graph(), one_thread());
  }

  // Reference: the logits after the unmasked tokens `tokens` at positions 0, 1, ... (double).
  std::vector<double> logits(const std::vector<int32_t>& tokens) const {
    const auto PE = pe(), W = w();
    std::vector<double> h(static_cast<size_t>(dim), 0.0);
    for (int l = 0; l < layers; ++l) {
      const auto EK = ek(l), EV = ev(l);
      for (size_t p = 0; p < tokens.size(); ++p)
        for (int d = 0; d < dim; ++d)
          h[d] += EK[tokens[p] * dim + d] + EV[tokens[p] * dim + d] + PE[p * dim + d];
    }
    std::vector<double> out(static_cast<size_t>(vocab), 0.0);
    for (int v = 0; v < vocab; ++v)
      for (int d = 0; d < dim; ++d) out[v] += h[d] * W[d * vocab + v];
    return out;
  }
  // Reference greedy continuation of `prompt` by `count` tokens, stopping after an EOS id.
  std::vector<int32_t> greedy(std::vector<int32_t> prompt, int count, const std::vector<int>& eos) const {
    std::vector<int32_t> generated;
    for (int i = 0; i < count; ++i) {
      const auto l = logits(prompt);
      const int32_t t = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      generated.push_back(t);
      prompt.push_back(t);
      if (std::find(eos.begin(), eos.end(), t) != eos.end()) break;
    }
    return generated;
  }
};

// A one-layer, one-head attention decoder on com.microsoft.GroupQueryAttention (no rotary):
// q, k, v = EQ[t], EK[t], EV[t]; logits = attention(q, K, V) . W, with seqlens_k and
// total_sequence_length derived from attention_mask as the model builder does. GQA writes the
// new positions in place when past and present share memory, so it runs with either cache mode.
struct GqaModel {
  int vocab = 24;
  int dim = 8;
  uint32_t seed = 11;
  int64_t static_past = -1;  // >= 0: the graph fixes the past length (a preallocated cache)

  std::shared_ptr<Graph> graph() const {
    auto g = onnxllm::test::new_graph();
    add_input(*g, "input_ids", DType::kInt64, {-1, -1}, {"batch", "seq"});
    add_input(*g, "attention_mask", DType::kInt64, {-1, -1}, {"batch", "total"});
    add_input(*g, "past_key_values.0.key", DType::kFloat32, {-1, 1, static_past, dim}, {"batch", "", "past", ""});
    add_input(*g, "past_key_values.0.value", DType::kFloat32, {-1, 1, static_past, dim}, {"batch", "", "past", ""});
    add_constant(*g, "EQ", float_tensor(random_values(static_cast<size_t>(vocab) * dim, seed + 1), Shape{vocab, dim}));
    add_constant(*g, "EK", float_tensor(random_values(static_cast<size_t>(vocab) * dim, seed + 2), Shape{vocab, dim}));
    add_constant(*g, "EV", float_tensor(random_values(static_cast<size_t>(vocab) * dim, seed + 3), Shape{vocab, dim}));
    add_constant(*g, "W", float_tensor(random_values(static_cast<size_t>(dim) * vocab, seed + 4), Shape{dim, vocab}));
    add_constant(*g, "axes1", int64_tensor({1}));
    add_constant(*g, "one", Tensor::scalar<int64_t>(1));
    g->add_node("Gather", "", {"EQ", "input_ids"}, {"q"});
    g->add_node("Gather", "", {"EK", "input_ids"}, {"k"});
    g->add_node("Gather", "", {"EV", "input_ids"}, {"v"});
    g->add_node("ReduceSum", "", {"attention_mask", "axes1"}, {"mask_sum"})
        .attributes.push_back(int_attr("keepdims", 0));
    g->add_node("Sub", "", {"mask_sum", "one"}, {"seqlens64"});
    g->add_node("Cast", "", {"seqlens64"}, {"seqlens_k"}).attributes.push_back(int_attr("to", 6));
    g->add_node("Shape", "", {"attention_mask"}, {"mask_shape"});
    g->add_node("Gather", "", {"mask_shape", "one"}, {"total64"});
    g->add_node("Cast", "", {"total64"}, {"total_sequence_length"}).attributes.push_back(int_attr("to", 6));
    Node& gqa = g->add_node("GroupQueryAttention", "com.microsoft",
                            {"q", "k", "v", "past_key_values.0.key", "past_key_values.0.value", "seqlens_k",
                             "total_sequence_length"},
                            {"attn", "present.0.key", "present.0.value"});
    gqa.attributes.push_back(int_attr("num_heads", 1));
    gqa.attributes.push_back(int_attr("kv_num_heads", 1));
    g->add_node("MatMul", "", {"attn", "W"}, {"logits"});
    add_output(*g, "logits");
    add_output(*g, "present.0.key");
    add_output(*g, "present.0.value");
    return g;
  }
  std::shared_ptr<const Model> model(const std::string& search = "{}", int context = 64,
                                     ModelOptions options = one_thread()) const {
    const std::string extra =
        R"(, "num_hidden_layers": 1, "num_key_value_heads": 1, "head_size": )" + std::to_string(dim);
    return Model::create(Config::parse(config_json("qwen2", vocab, context, 0, "0", extra, search)), graph(),
                         options);
  }
};

// Beam search written out plainly (double precision, full sort, explicit hypothesis lists) over
// logits_of(sequence) -> vocabulary logits. Returns the best `num_return` hypotheses.
template <typename LogitsOf>
std::vector<std::vector<int32_t>> reference_beam_search(const std::vector<int32_t>& prompt, LogitsOf logits_of,
                                                        int beams, int max_length, int eos, float length_penalty,
                                                        bool early_stopping, int num_return) {
  struct Beam {
    std::vector<int32_t> tokens;
    double score;
  };
  std::vector<Beam> live, hyps;  // hypotheses: score already divided by length^length_penalty
  for (int k = 0; k < beams; ++k) live.push_back({prompt, k == 0 ? 0.0 : -1e9});
  auto add = [&](const std::vector<int32_t>& tokens, double sum) {
    hyps.push_back({tokens, sum / std::pow(static_cast<double>(tokens.size()), length_penalty)});
    std::stable_sort(hyps.begin(), hyps.end(), [](const Beam& a, const Beam& b) { return a.score > b.score; });
    if (static_cast<int>(hyps.size()) > beams) hyps.pop_back();
  };
  bool done = false;
  while (static_cast<int>(live[0].tokens.size()) < max_length && !done) {
    struct Candidate {
      double score;
      int token, beam;
    };
    std::vector<Candidate> candidates;
    for (int k = 0; k < beams; ++k) {
      const auto l = logits_of(live[k].tokens);
      const double max = *std::max_element(l.begin(), l.end());
      double sum = 0;
      for (const auto x : l) sum += std::exp(x - max);
      for (size_t t = 0; t < l.size(); ++t)
        candidates.push_back({live[k].score + (l[t] - max - std::log(sum)), static_cast<int>(t), k});
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    candidates.resize(2 * beams);
    const int length = static_cast<int>(live[0].tokens.size());
    std::vector<Beam> next;
    for (int j = 0; j < 2 * beams && static_cast<int>(next.size()) < beams; ++j) {
      if (candidates[j].token == eos) {
        if (j < beams) add(live[candidates[j].beam].tokens, candidates[j].score);
        continue;
      }
      Beam b = live[candidates[j].beam];
      b.tokens.push_back(candidates[j].token);
      b.score = candidates[j].score;
      next.push_back(b);
    }
    if (static_cast<int>(hyps.size()) == beams) {
      const double best_possible = candidates[0].score / std::pow(static_cast<double>(length), length_penalty);
      if (early_stopping || !(hyps.back().score < best_possible)) done = true;
    }
    live = next;
  }
  if (!done)
    for (const auto& b : live) add(b.tokens, b.score);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < num_return; ++i) out.push_back(hyps[i].tokens);
  return out;
}

}  // namespace onnxllm::genai::test
