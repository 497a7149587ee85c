// Output is written into a hidden folder beside its destination and moved into place only when
// complete, so a failed or interrupted run (a full disk, a bad tensor) never leaves a folder or
// file that looks finished. The staging folder is removed unless commit() succeeded; one left by
// a killed run (named .NAME.tmp-PID) is removed by the next run to the same output once process
// PID is gone, and SIGINT/SIGTERM/SIGHUP remove the live ones before the process exits.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace onnxllm {

class StagingDir {
 public:
  // What commit will put at the target: a folder (build) or files beside it (quantize).
  enum class Kind { kFolder, kFiles };

  // `target` is what will exist after commit. Throws kInvalidArgument when it exists and
  // `overwrite` is false, or (with overwrite) when a kFolder target is not a folder or holds
  // files other than `replaceable` ones, so a mistyped path never deletes unrelated data.
  StagingDir(std::filesystem::path target, bool overwrite, Kind kind, std::vector<std::string> replaceable = {});
  ~StagingDir();
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Throws kInvalidArgument when an output path is (the same file as) one of the inputs: checked
  // with filesystem::equivalent, so links and "a/../b" spellings are caught, before anything is
  // written. Every command that writes files calls this with all it writes and all it reads.
  static void check_outputs_are_not_inputs(const std::vector<std::filesystem::path>& outputs,
                                           const std::vector<std::filesystem::path>& inputs);

  // Removes staging folders of `target` left by processes that no longer run (kill(pid, 0)
  // fails with ESRCH); a live process's folder is left alone. Returns how many were removed.
  static int remove_stale(const std::filesystem::path& target);

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
