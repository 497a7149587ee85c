// Rewrites that let Optimum's decoder layouts run as one graph with the
// generator's usual inputs: the merged file's bool use_cache_branch input is
// computed from the past length, and the decoder_model.onnx +
// decoder_with_past_model.onnx pair becomes one graph with an If on "past is
// empty". Both then take input_ids / attention_mask / position_ids /
// past_key_values.N.* only.
#pragma once

#include <memory>
#include <string>

#include "graph/graph.h"

namespace onnxllm::genai {

// Optimum's name for the merged decoder's branch switch.
inline constexpr const char* kUseCacheBranchInput = "use_cache_branch";

// When `g` has the input use_cache_branch, replaces it with past_key dim 2 > 0
// (as Optimum's ORTModelForCausalLM feeds it) so the generator need not know
// it. Returns whether it did. Throws kInvalidModel when the graph has no input
// `past_key` to read the length from.
bool bind_use_cache_branch(Graph& g, const std::string& past_key);

// One graph whose inputs are the with-past graph's and whose outputs are
// If(past_key dim 2 > 0, then: with_past, else: no_past). The no-past graph's
// inputs must be among the with-past ones and its outputs must include every
// with-past output (errors name the missing value).
std::shared_ptr<Graph> join_decoder_pair(std::shared_ptr<Graph> no_past, std::shared_ptr<Graph> with_past,
                                         const std::string& past_key);

// Initializers of a graph read by its If branches become the branches' own
// initializers, so constant folding, fusions and kernels that prepack weights
// see them as constants. Recursive.
void inline_outer_initializers(Graph& g);

}  // namespace onnxllm::genai
