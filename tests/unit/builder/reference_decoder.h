// A deliberately plain forward pass of the Hugging Face decoder families the builder supports,
// written from the transformers modeling code's semantics (not from the builder's graph), used as
// the independent reference for built models: per token, with a float KV cache, batch 1.
// Rotary: default, linear and llama3 scaling.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "builder/hf_config.h"
#include "builder/weight_source.h"
#include "core/error.h"
#include "core/thread_pool.h"

namespace onnxllm::test {

class ReferenceDecoder {
 public:
  ReferenceDecoder(const HfConfig& c, const WeightSource& w) : c_(c), w_(w), pool_(1) {
    k_cache_.resize(static_cast<size_t>(c.num_layers));
    v_cache_.resize(static_cast<size_t>(c.num_layers));
    const int64_t half = c.rotary_dim() / 2;
    for (int64_t i = 0; i < half; ++i) {
      const double exponent = 2.0 * static_cast<double>(i) / static_cast<double>(c.rotary_dim());
      // Gemma 3's sliding layers use their own base and no scaling.
      inv_freq_local_.push_back(1.0 / std::pow(c.rope_local_theta > 0 ? c.rope_local_theta : c.rope_theta, exponent));
      double f = 1.0 / std::pow(c.rope_theta, exponent);
      const RopeScaling& s = c.rope_scaling;
      if (s.type == "linear") f /= s.factor;
      if (s.type == "llama3") {
        const double wavelen = 2 * M_PI / f, old = static_cast<double>(s.original_max_position_embeddings);
        if (wavelen > old / s.low_freq_factor) {
          f /= s.factor;
        } else if (wavelen >= old / s.high_freq_factor) {
          const double smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1 - smooth) * f / s.factor + smooth * f;
        }
      }
      ONNXLLM_CHECK(s.type == "default" || s.type == "linear" || s.type == "llama3", kUnsupported,
                    "reference decoder: rope ", s.type);
      inv_freq_.push_back(f);
    }
  }

  // Logits of the next token after feeding `token` at the next position.
  std::vector<float> step(int64_t token) {
    const int64_t d = c_.hidden_size, hd = c_.head_dim, nh = c_.num_heads, nkv = c_.num_kv_heads;
    const int64_t pos = position_++;
    std::vector<float> x = row("model.embed_tokens.weight", {c_.vocab_size, d}, token);
    const bool gemma = c_.norm_weight_offset;
    if (gemma) for (float& v : x) v *= static_cast<float>(std::sqrt(static_cast<double>(d)));
    for (int64_t l = 0; l < c_.num_layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      std::vector<float> h = rms(x, p + "input_layernorm.weight");
      std::vector<float> q, k, v;
      if (c_.family == ModelFamily::kPhi3) {
        std::vector<float> qkv = linear(h, p + "self_attn.qkv_proj.weight", (nh + 2 * nkv) * hd, d, "");
        q.assign(qkv.begin(), qkv.begin() + nh * hd);
        k.assign(qkv.begin() + nh * hd, qkv.begin() + (nh + nkv) * hd);
        v.assign(qkv.begin() + (nh + nkv) * hd, qkv.end());
      } else {
        q = linear(h, p + "self_attn.q_proj.weight", nh * hd, d, p + "self_attn.q_proj.bias");
        k = linear(h, p + "self_attn.k_proj.weight", nkv * hd, d, p + "self_attn.k_proj.bias");
        v = linear(h, p + "self_attn.v_proj.weight", nkv * hd, d, p + "self_attn.v_proj.bias");
      }
      if (c_.qk_norm) {
        head_rms(q, nh, p + "self_attn.q_norm.weight");
        head_rms(k, nkv, p + "self_attn.k_norm.weight");
      }
      const bool sliding = c_.sliding_layers[static_cast<size_t>(l)];
      const auto& inv = sliding && c_.rope_local_theta > 0 ? inv_freq_local_ : inv_freq_;
      rope(q, nh, pos, inv);
      rope(k, nkv, pos, inv);
      auto& kc = k_cache_[static_cast<size_t>(l)];
      auto& vc = v_cache_[static_cast<size_t>(l)];
      kc.insert(kc.end(), k.begin(), k.end());
      vc.insert(vc.end(), v.begin(), v.end());
      std::vector<float> attn(static_cast<size_t>(nh * hd), 0.0f);
      for (int64_t head = 0; head < nh; ++head) {
        const int64_t kvh = head / (nh / nkv);
        std::vector<double> scores;
        int64_t first = 0;
        // A window of W keys ends at the current token (HF sliding_window; ORT 1.30 GQA local_window_size).
        if (sliding && c_.sliding_window > 0) first = std::max<int64_t>(0, pos - c_.sliding_window + 1);
        for (int64_t j = first; j <= pos; ++j) {
          double s = 0;
          for (int64_t i = 0; i < hd; ++i) s += q[head * hd + i] * kc[(j * nkv + kvh) * hd + i];
          s *= c_.attention_scale;
          if (c_.attn_softcap > 0) s = c_.attn_softcap * std::tanh(s / c_.attn_softcap);
          scores.push_back(s);
        }
        const double m = *std::max_element(scores.begin(), scores.end());
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - m));
        for (int64_t j = first; j <= pos; ++j)
          for (int64_t i = 0; i < hd; ++i)
            attn[head * hd + i] += static_cast<float>(scores[j - first] / sum * vc[(j * nkv + kvh) * hd + i]);
      }
      std::vector<float> o = linear(attn, p + "self_attn.o_proj.weight", d, nh * hd, p + "self_attn.o_proj.bias");
      if (c_.post_norms) o = rms(o, p + "post_attention_layernorm.weight");
      for (int64_t i = 0; i < d; ++i) x[i] += o[i];
      h = rms(x, p + (c_.post_norms ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight"));
      std::vector<float> gate, up;
      if (c_.family == ModelFamily::kPhi3) {
        std::vector<float> gu = linear(h, p + "mlp.gate_up_proj.weight", 2 * c_.intermediate_size, d, "");
        gate.assign(gu.begin(), gu.begin() + c_.intermediate_size);
        up.assign(gu.begin() + c_.intermediate_size, gu.end());
      } else {
        gate = linear(h, p + "mlp.gate_proj.weight", c_.intermediate_size, d, p + "mlp.gate_proj.bias");
        up = linear(h, p + "mlp.up_proj.weight", c_.intermediate_size, d, p + "mlp.up_proj.bias");
      }
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = act(gate[i]) * up[i];
      std::vector<float> down = linear(gate, p + "mlp.down_proj.weight", d, c_.intermediate_size, p + "mlp.down_proj.bias");
      if (c_.post_norms) down = rms(down, p + "post_feedforward_layernorm.weight");
      for (int64_t i = 0; i < d; ++i) x[i] += down[i];
    }
    x = rms(x, "model.norm.weight");
    const std::string head = c_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    std::vector<float> logits = linear(x, head, c_.vocab_size, d, "");
    if (c_.final_softcap > 0)
      for (float& l : logits) l = static_cast<float>(c_.final_softcap * std::tanh(l / c_.final_softcap));
    return logits;
  }

  // prompt followed by n greedily chosen tokens.
  std::vector<int64_t> greedy(std::vector<int64_t> ids, int n) {
    std::vector<float> logits;
    for (int64_t t : ids) logits = step(t);
    for (int i = 0; i < n; ++i) {
      ids.push_back(std::max_element(logits.begin(), logits.end()) - logits.begin());
      if (i + 1 < n) logits = step(ids.back());
    }
    return ids;
  }

 private:
  const std::vector<float>& tensor(const std::string& name, const Shape& shape) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second;
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    w_.read_rows(name, shape, 0, shape.rank() ? shape[0] : 1, v.data(), pool_);
    return cache_.emplace(name, std::move(v)).first->second;
  }
  std::vector<float> row(const std::string& name, const Shape& shape, int64_t r) {
    const auto& t = tensor(name, shape);
    return std::vector<float>(t.begin() + r * shape[1], t.begin() + (r + 1) * shape[1]);
  }
  std::vector<float> linear(const std::vector<float>& x, const std::string& w, int64_t out, int64_t in,
                            const std::string& bias) {
    const auto& m = tensor(w, {out, in});
    std::vector<float> y(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(m[o * in + i]) * x[i];
      y[o] = static_cast<float>(s);
    }
    if (!bias.empty() && w_.has(bias)) {
      const auto& b = tensor(bias, {out});
      for (int64_t o = 0; o < out; ++o) y[o] += b[o];
    }
    return y;
  }
  std::vector<float> rms_weighted(const float* x, int64_t n, const std::vector<float>& w) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + c_.norm_eps);
    std::vector<float> y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] * inv * (w[i] + (c_.norm_weight_offset ? 1.0 : 0.0)));
    return y;
  }
  std::vector<float> rms(const std::vector<float>& x, const std::string& w) {
    return rms_weighted(x.data(), static_cast<int64_t>(x.size()), tensor(w, {static_cast<int64_t>(x.size())}));
  }
  void head_rms(std::vector<float>& x, int64_t heads, const std::string& w) {
    const auto& weight = tensor(w, {c_.head_dim});
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<float> y = rms_weighted(x.data() + h * c_.head_dim, c_.head_dim, weight);
      std::copy(y.begin(), y.end(), x.begin() + h * c_.head_dim);
    }
  }
  void rope(std::vector<float>& x, int64_t heads, int64_t pos, const std::vector<double>& inv_freq) {
    const int64_t half = c_.rotary_dim() / 2;
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x.data() + h * c_.head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(pos) * inv_freq[i], cs = std::cos(a), sn = std::sin(a);
        const double x1 = v[i], x2 = v[i + half];
        v[i] = static_cast<float>(x1 * cs - x2 * sn);
        v[i + half] = static_cast<float>(x2 * cs + x1 * sn);
      }
    }
  }
  float act(float g) const {
    const std::string& a = c_.activation;
    if (a == "silu" || a == "swish") return g / (1 + std::exp(-g));
    if (a == "relu") return std::max(g, 0.0f);
    if (a == "gelu") return static_cast<float>(0.5 * g * (1 + std::erf(g / std::sqrt(2.0))));
    return static_cast<float>(0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))));
  }

  HfConfig c_;
  const WeightSource& w_;
  ThreadPool pool_;
  std::map<std::string, std::vector<float>> cache_;
  std::vector<std::vector<float>> k_cache_, v_cache_;  // per layer: [pos][kv head][head dim]
  std::vector<double> inv_freq_, inv_freq_local_;
  int64_t position_ = 0;
};

}  // namespace onnxllm::test
