// Float64 reference implementations of the attention family, written straight from the formulas in
// ../shared/docs/reference/ops.md (§2.2, 2.3, 2.6, 2.7) with plain loops, independently of the
// kernels. Masked keys are either excluded (causal, window) or get an additive value.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace onnxllm::test::ref {

using Vec = std::vector<double>;

inline double get(const Tensor* t, int64_t i) { return static_cast<double>(t->data<float>()[i]); }

// Rotates x[0, rotary_dim) by the cos/sin row of one position.
inline void rotate(Vec& x, int64_t rotary_dim, const float* c, const float* s, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  const Vec in = x;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    x[a] = in[a] * c[i] - in[b] * s[i];
    x[b] = in[b] * c[i] + in[a] * s[i];
  }
}

// Softmax attention of one query over the keys whose `add[j]` is finite (NaN = excluded):
// x_j = softcap(scale q.k_j) + add[j]; an optional sink logit joins the denominator.
inline Vec attend(const Vec& q, const std::vector<Vec>& keys, const std::vector<Vec>& values, const Vec& add,
                  double scale, double softcap = 0, std::optional<double> sink = std::nullopt) {
  const size_t dv = values.empty() ? 0 : values[0].size();
  Vec x(keys.size(), 0.0);
  double m = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < keys.size(); ++j) {
    if (std::isnan(add[j])) continue;
    double dot = 0;
    for (size_t d = 0; d < q.size(); ++d) dot += q[d] * keys[j][d];
    double v = scale * dot;
    if (softcap > 0) v = softcap * std::tanh(v / softcap);
    x[j] = v + add[j];
    m = std::max(m, x[j]);
  }
  if (sink) m = std::max(m, *sink);
  double den = sink ? std::exp(*sink - m) : 0.0;
  for (size_t j = 0; j < keys.size(); ++j)
    if (!std::isnan(add[j])) den += std::exp(x[j] - m);
  Vec out(dv, 0.0);
  for (size_t j = 0; j < keys.size(); ++j) {
    if (std::isnan(add[j])) continue;
    const double p = std::exp(x[j] - m) / den;
    for (size_t d = 0; d < dv; ++d) out[d] += p * values[j][d];
  }
  return out;
}

inline constexpr double kExcluded = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------
// GroupQueryAttention
struct GqaArgs {
  int64_t num_heads = 0, kv_num_heads = 0;
  const Tensor* query = nullptr;  // [B, S, N*H], or packed [B, S, (N + 2 Nkv) * H] when key is null
  const Tensor* key = nullptr;
  const Tensor* value = nullptr;
  const Tensor* past_key = nullptr;  // [B, Nkv, Cpast, H] or null
  const Tensor* past_value = nullptr;
  std::vector<int32_t> seqlens_k;
  int64_t total = 0;
  const Tensor* cos = nullptr;  // rotary when set
  const Tensor* sin = nullptr;
  bool interleaved = false;
  const Tensor* position_ids = nullptr;  // int64 [B, S]
  const Tensor* attention_bias = nullptr;
  const Tensor* head_sink = nullptr;
  double scale = 0, softcap = 0;
  int64_t local_window = -1;
  bool smooth_softmax = false;
};

struct GqaResult {
  int64_t batch = 0, seq = 0, head_size = 0, present_len = 0;
  Vec output;                 // [B, S, N*H]
  Vec present_key, present_value;  // [B, Nkv, present_len, H]
  std::vector<bool> row_valid;  // [B, S]: false for padding rows of a batched first prompt
};

inline GqaResult gqa(const GqaArgs& a) {
  GqaResult r;
  const int64_t B = a.query->shape()[0], S = a.query->shape()[1], N = a.num_heads, Nkv = a.kv_num_heads;
  const bool packed = a.key == nullptr;
  const int64_t H = a.query->shape()[2] / (packed ? N + 2 * Nkv : N);
  const int64_t Cpast = a.past_key ? a.past_key->shape()[2] : 0;
  const int64_t Cpres = std::max(Cpast, a.total);
  const bool first = S == a.total;
  r.batch = B, r.seq = S, r.head_size = H, r.present_len = Cpres;
  r.output.assign(B * S * N * H, 0.0);
  r.present_key.assign(B * Nkv * Cpres * H, 0.0);
  r.present_value.assign(B * Nkv * Cpres * H, 0.0);
  r.row_valid.assign(B * S, false);
  const int64_t R = a.cos ? 2 * a.cos->shape()[1] : 0;
  auto new_vec = [&](int which, int64_t b, int64_t s, int64_t head) {  // 0 = q, 1 = k, 2 = v
    Vec x(H);
    for (int64_t d = 0; d < H; ++d) {
      if (packed) {
        const int64_t col = (which == 0 ? head : which == 1 ? N + head : N + Nkv + head) * H + d;
        x[d] = get(a.query, (b * S + s) * (N + 2 * Nkv) * H + col);
      } else {
        const Tensor* t = which == 0 ? a.query : which == 1 ? a.key : a.value;
        const int64_t width = which == 0 ? N : Nkv;
        x[d] = get(t, ((b * S + s) * width + head) * H + d);
      }
    }
    return x;
  };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = a.seqlens_k[b] + 1, P = first ? 0 : L - S;
    auto pos = [&](int64_t s) { return a.position_ids ? a.position_ids->data<int64_t>()[b * S + s] : P + s; };
    // Keys and values of this row: past rows [0, P), then the new ones (keys rotated).
    std::vector<std::vector<Vec>> keys(Nkv), values(Nkv);
    for (int64_t kh = 0; kh < Nkv; ++kh) {
      for (int64_t j = 0; j < P; ++j) {
        Vec k(H), v(H);
        for (int64_t d = 0; d < H; ++d) {
          k[d] = get(a.past_key, ((b * Nkv + kh) * Cpast + j) * H + d);
          v[d] = get(a.past_value, ((b * Nkv + kh) * Cpast + j) * H + d);
        }
        keys[kh].push_back(k);
        values[kh].push_back(v);
      }
      for (int64_t s = 0; s < S; ++s) {
        Vec k = new_vec(1, b, s, kh);
        if (R) rotate(k, R, a.cos->data<float>() + pos(s) * (R / 2), a.sin->data<float>() + pos(s) * (R / 2), a.interleaved);
        keys[kh].push_back(k);
        values[kh].push_back(new_vec(2, b, s, kh));
      }
      for (int64_t j = 0; j < P + S; ++j)
        for (int64_t d = 0; d < H; ++d) {
          r.present_key[((b * Nkv + kh) * Cpres + j) * H + d] = keys[kh][j][d];
          r.present_value[((b * Nkv + kh) * Cpres + j) * H + d] = values[kh][j][d];
        }
    }
    for (int64_t s = 0; s < S; ++s) {
      const int64_t p = P + s;
      if (p >= L) continue;
      r.row_valid[b * S + s] = true;
      for (int64_t h = 0; h < N; ++h) {
        const int64_t kh = h / (N / Nkv);
        Vec q = new_vec(0, b, s, h);
        if (R) rotate(q, R, a.cos->data<float>() + pos(s) * (R / 2), a.sin->data<float>() + pos(s) * (R / 2), a.interleaved);
        Vec add(P + S, kExcluded);
        for (int64_t j = 0; j <= p; ++j) {
          if (a.local_window > 0 && j <= p - a.local_window) continue;  // the window holds W keys, current included
          add[j] = 0;
          if (a.attention_bias) {
            const auto& bs = a.attention_bias->shape();
            const int64_t bb = bs[0] == 1 ? 0 : b, hh = bs[1] == 1 ? 0 : h;
            add[j] = get(a.attention_bias, ((bb * bs[1] + hh) * S + s) * bs[3] + j);
          }
        }
        std::optional<double> sink;
        if (a.head_sink) sink = get(a.head_sink, h);
        else if (a.smooth_softmax) sink = 0.0;
        const double scale = a.scale != 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(H));
        const Vec o = attend(q, keys[kh], values[kh], add, scale, a.softcap, sink);
        for (int64_t d = 0; d < H; ++d) r.output[((b * S + s) * N + h) * H + d] = o[d];
      }
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// RotaryEmbedding: input [B, S, N*H] (bnsh = false) or [B, N, S, H].
inline Vec rotary_embedding(const Tensor& x, const Tensor& pos, const Tensor& cos, const Tensor& sin, int64_t heads,
                            int64_t rotary_dim, bool interleaved) {
  const auto& s = x.shape();
  const bool bnsh = s.rank() == 4;
  const int64_t B = s[0], S = bnsh ? s[2] : s[1], H = bnsh ? s[3] : s[2] / heads, N = bnsh ? s[1] : heads;
  Vec out(x.numel());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < S; ++t) {
      const int64_t p = pos.numel() == 1 ? pos.data<int64_t>()[0] + t : pos.data<int64_t>()[b * S + t];
      for (int64_t n = 0; n < N; ++n) {
        const int64_t base = bnsh ? ((b * N + n) * S + t) * H : ((b * S + t) * N + n) * H;
        Vec v(H);
        for (int64_t d = 0; d < H; ++d) v[d] = get(&x, base + d);
        rotate(v, rotary_dim, cos.data<float>() + p * (rotary_dim / 2), sin.data<float>() + p * (rotary_dim / 2), interleaved);
        for (int64_t d = 0; d < H; ++d) out[base + d] = v[d];
      }
    }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Multi-head attention over explicit per-head Q/K/V, shared by the MultiHeadAttention and packed
// Attention references. q[b][h][i], k/v[b][h][j] (past rows first). key_ok(b, i, j): false
// adds mask_filter_value. Causal: query i sees keys j <= T - S + i.
template <typename KeyOk, typename Bias>
Vec multi_head(const std::vector<std::vector<std::vector<Vec>>>& q, const std::vector<std::vector<std::vector<Vec>>>& k,
               const std::vector<std::vector<std::vector<Vec>>>& v, double scale, bool causal, double mask_filter_value,
               KeyOk&& key_ok, Bias&& bias) {
  const int64_t B = q.size(), N = q[0].size(), S = q[0][0].size(), T = k[0][0].size();
  const int64_t Hv = v[0][0][0].size();
  Vec out(B * S * N * Hv, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < N; ++h)
      for (int64_t i = 0; i < S; ++i) {
        Vec add(T, 0.0);
        for (int64_t j = 0; j < T; ++j) {
          if (causal && j > T - S + i) {
            add[j] = kExcluded;
            continue;
          }
          add[j] = (key_ok(b, i, j) ? 0.0 : mask_filter_value) + bias(b, h, i, j);
        }
        const Vec o = attend(q[b][h][i], k[b][h], v[b][h], add, scale);
        for (int64_t d = 0; d < Hv; ++d) out[((b * S + i) * N + h) * Hv + d] = o[d];
      }
  return out;
}

// Bias lookup for an optional [B|1, N|1, S, T] attention bias.
inline auto bias_lookup(const Tensor* bias) {
  return [bias](int64_t b, int64_t h, int64_t i, int64_t j) {
    if (!bias) return 0.0;
    const auto& s = bias->shape();
    return get(bias, (((s[0] == 1 ? 0 : b) * s[1] + (s[1] == 1 ? 0 : h)) * s[2] + i) * s[3] + j);
  };
}

// ---------------------------------------------------------------------------------------------
// EmbedLayerNormalization
inline Vec embed_layer_norm(const Tensor& ids, const Tensor* segment_ids, const Tensor& word, const Tensor& pos_table,
                            const Tensor* segment_table, const Tensor& gamma, const Tensor* beta,
                            const Tensor* position_ids, double epsilon, Vec* embedding_sum) {
  const int64_t B = ids.shape()[0], S = ids.shape()[1], D = word.shape()[1];
  Vec out(B * S * D);
  if (embedding_sum) embedding_sum->assign(B * S * D, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t r = b * S + s;
      const int64_t w = ids.data<int32_t>()[r];
      const int64_t p = !position_ids ? s
                        : position_ids->shape()[0] == 1 ? position_ids->data<int32_t>()[s]
                                                        : position_ids->data<int32_t>()[r];
      Vec e(D);
      for (int64_t d = 0; d < D; ++d) {
        e[d] = get(&word, w * D + d) + get(&pos_table, p * D + d);
        if (segment_ids) e[d] += get(segment_table, segment_ids->data<int32_t>()[r] * D + d);
        if (embedding_sum) (*embedding_sum)[r * D + d] = e[d];
      }
      double mean = 0, var = 0;
      for (double x : e) mean += x;
      mean /= D;
      for (double x : e) var += (x - mean) * (x - mean);
      var /= D;
      for (int64_t d = 0; d < D; ++d)
        out[r * D + d] = (e[d] - mean) / std::sqrt(var + epsilon) * get(&gamma, d) + (beta ? get(beta, d) : 0.0);
    }
  return out;
}

}  // namespace onnxllm::test::ref
