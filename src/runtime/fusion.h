// Graph fusions run at session creation (after constant folding). Each rewrites a pattern into a
// node (or a few) computing what the nodes it replaces computed; SessionOptions::fusions = false
// (or ONNXLLM_FUSIONS=0) turns them off. The MatMulNBits siblings (gated or not) give the same bits; the fusions
// of exported PyTorch patterns (normalizations, activations, attention) run their float operations
// in another order, so their results agree within rounding (tests compare fused and unfused runs).
#pragma once

#include "graph/graph.h"

namespace onnxllm {

// MatMulNBits nodes that read the same A with the same K / bits / block_size at accuracy_level 4
// (the q, k and v projections; gate and up) become one com.onnxllm.MatMulNBitsSiblings node with
// one output per member: one pass over A's quantization and one parallel region instead of
// several. Members need constant 4-bit weights without zero points, g_idx or bias, N a multiple
// of 16 and float32 A. Returns the number of nodes replaced.
int fuse_matmul_nbits_siblings(Graph& g);

// Two MatMulNBitsSiblings members of one N read only by Mul(QuickGelu(gate), up) (the gated MLP
// of Llama-family models; SiLU is QuickGelu at alpha 1 once fuse_activations ran) become one
// siblings node with attribute gate_alpha writing the Mul's output: the products are combined in
// the kernel's scratch instead of passing through memory and two more nodes. The same bits.
int fuse_gated_siblings(Graph& g);

// MatMul nodes reading the same float32 A with constant 2-D float32 weights of the same K (an
// exported model's q, k and v projections; gate and up) become com.onnxllm.MatMulSiblings, up to
// kMaxMatMulSiblings at a time: one parallel region instead of several, the same bits.
inline constexpr int kMaxMatMulSiblings = 8;
int fuse_matmul_siblings(Graph& g);

// transformers' RMSNorm as torch.onnx.export writes it, w * (x * Reciprocal(Sqrt(ReduceMean(x^2)
// + eps))) (or x / Sqrt(...); x^2 as Pow(x, 2) or Mul(x, x); the mean over the last axis), becomes
// SimplifiedLayerNormalization(x, w) when w is a float32 initializer. Returns the patterns fused.
int fuse_rms_norm(Graph& g);

// nn.LayerNorm decomposed (opset < 17 exports), (x - mean) / Sqrt(var + eps) * w + b with var the
// mean of the centered square over the last axis, becomes LayerNormalization(x, w, b).
int fuse_layer_norm(Graph& g);

// A residual Add read by an RMSNorm or LayerNorm over the last axis (constant float32 scale and
// bias), norm(a + b), becomes com.microsoft.SkipSimplifiedLayerNormalization / SkipLayerNormalization
// (a, b, scale[, bias]) whose input_skip_bias_sum output replaces the Add's: one node and one pass
// over the row instead of two.
int fuse_skip_norm(Graph& g);

// On float32 values: x * Sigmoid(x) (SiLU) becomes com.microsoft.QuickGelu(alpha = 1), and
// transformers' gelu_new, 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))), com.microsoft.FastGelu.
int fuse_activations(Graph& g);

// transformers' apply_rotary_pos_emb as exported, x * cos + Concat(Neg(x[..., s:]), x[..., :s], -1)
// * sin (Slice on axis -1, either operand order), becomes com.onnxllm.ApplyRotaryPosEmb(x, cos,
// sin) on float32 x: one pass instead of seven nodes per query and key; the same bits.
int fuse_rotary(Graph& g);

// Eager attention, Transpose(MatMul(Softmax(MatMul(Q, Transpose(K)) / c + mask), V), [0,2,1,3])
// with float32 Q, K, V per head ([B, N, S, H]), becomes com.microsoft.MultiHeadAttention (Q
// transposed back to [B, S, N*H], K and V in BNSH, the mask as attention_bias, scale 1/c): one pass
// per head instead of two batched products, a softmax and the copies between them. N comes from
// the Reshape that split Q into heads. K and V repeated per query head by transformers' repeat_kv
// (Reshape(Expand(Unsqueeze(kv, 2)))) are replaced by kv: the kernel shares each K/V head with
// its query heads.
int fuse_attention(Graph& g);

// com.microsoft.MultiHeadAttention without bias or past whose K and V are repeated per query head
// as onnxruntime-genai's builder wrote them for CPU before ORT had GroupQueryAttention there
// (make_repeat_kv: Unsqueeze, Expand, Reshape, then Transpose and Reshape to [B, T, N * H]) reads
// kv [B, Nkv, T, H] itself instead: the same values without the copy, and a layer that
// update_kv_in_place can append in place (and the engine can page). Returns the nodes rewritten.
int share_repeated_kv(Graph& g);

// Runs before constant folding. Gather(Transpose(W, [1, 0]), ids) with W a 2-D float32 constant
// (a tied embedding: the LM head's [hidden, vocab] weight, transposed for the token lookup) becomes
// com.onnxllm.GatherColumns(W, ids): the same values, read from the LM head's packed copy of W,
// instead of a transposed copy (the embedding's size) folded into memory. Returns the Gathers
// rewritten.
int gather_before_transpose(Graph& g);

// Identity(x) where x is computed by a node (not a graph input or output, not read by a subgraph):
// the producer writes the Identity's output itself and every reader of x reads that. A present
// output written as Identity(Concat(past, new)) then lands in its bound buffer directly instead of
// in the arena and then being copied there after the run. Returns the Identities removed.
int eliminate_identities(Graph& g);

// Every fusion above, in an order where each sees the others' results, in `g` and in its If
// branches. Returns the number of fused patterns.
int run_fusions(Graph& g);

}  // namespace onnxllm
