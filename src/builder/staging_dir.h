// Output is written into a hidden folder beside its destination and moved into place only when
// complete, so a failed or interrupted run (a full disk, a bad tensor) never leaves a folder or
// file that looks finished. The staging folder is removed unless commit() succeeded.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace onnxllm {

class StagingDir {
 public:
  // `target` is what will exist after commit. Throws kInvalidArgument when it exists and
  // `overwrite` is false, or (with overwrite) when it is a folder holding files other than
  // `replaceable` ones, so a mistyped path never deletes unrelated data.
  StagingDir(std::filesystem::path target, bool overwrite, std::vector<std::string> replaceable = {});
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Moves the staging folder itself to the target (replacing an old target folder).
  void commit_folder();
  // Moves the named staged files into the target's parent folder, in order (put the file that makes
  // the output look complete last), replacing old ones; then removes the staging folder.
  void commit_files(const std::vector<std::string>& names);

 private:
  std::filesystem::path target_;
  std::filesystem::path dir_;
  bool overwrite_;
  bool committed_ = false;
};

}  // namespace onnxllm
