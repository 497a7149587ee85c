// Generation needs the logits of one position per row, but a decoder graph computes them for every
// position it runs: in a prompt of 128 tokens the LM head is over a quarter of a 0.5B model's
// multiply-adds, and [rows, seq, vocab] floats of output. split_lm_head rewrites the graph so that
// the LM head sees only the rows' chosen positions (llama.cpp and vLLM do the same); the hidden
// states stay available, so the full logits (onnxruntime-genai's get_output("logits") after a
// prompt) are computed on demand by the LM head alone.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "graph/graph.h"

namespace onnxllm::genai {

struct LmHeadSplit {
  // New int64 [rows] input: for each row, the flat index row * seq + column of the position whose
  // logits the run gives; the logits output becomes [rows, 1, vocab].
  std::string positions_input;
  // New output: the LM head's input [rows, seq, hidden] of the last run.
  std::string hidden_output;
  // hidden -> logits [rows, seq, vocab]: the LM head alone (same nodes and weights).
  std::shared_ptr<Graph> head;
};

// Rewrites g when `logits` comes from a MatMul or MatMulNBits on constant weights over
// [rows, seq, hidden], followed by nothing or by elementwise ops with constant operands (a bias,
// Gemma's soft-capping, a Cast); nullopt (g untouched) for any other shape of graph.
std::optional<LmHeadSplit> split_lm_head(Graph& g, const std::string& logits);

}  // namespace onnxllm::genai
