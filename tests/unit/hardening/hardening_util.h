// Helpers of the hardening tests: a scratch folder, files, and running the CLI with a timeout.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace onnxllm::hardening {

inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("onnxllm-hardening-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline std::string deep_array(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

struct CliResult {
  int status = -1;  // exit code, or 128 + signal
  std::string output;  // stdout + stderr
  double seconds = 0;
};

// Runs `onnxllm <args>` through the shell under `timeout`, capturing both streams.
inline CliResult run_cli(const std::string& args, int timeout_s = 30) {
  const auto start = std::chrono::steady_clock::now();
  const std::string cmd = "timeout -s KILL " + std::to_string(timeout_s) + " '" ONNXLLM_CLI "' " + args + " 2>&1";
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; p && (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) r.output.append(buf, n);
  const int st = p ? ::pclose(p) : -1;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace onnxllm::hardening
