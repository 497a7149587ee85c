// A Hugging Face model repository name, "owner/name" (or a legacy bare "name" such as "gpt2"),
// checked with the rules of huggingface_hub's validate_repo_id.
#pragma once

#include <string>
#include <string_view>

namespace onnxllm {

struct RepoId {
  std::string owner;  // empty for a legacy bare name
  std::string name;

  // Throws kInvalidArgument explaining the rule `text` breaks.
  static RepoId parse(std::string_view text);
  // Whether `text` has the owner/name form (one '/', both parts valid); never throws.
  static bool is_owner_name(std::string_view text);

  // "owner/name"
  std::string str() const;
  // The repository's folder in the hub cache: "models--owner--name".
  std::string cache_folder() const;
};

}  // namespace onnxllm
