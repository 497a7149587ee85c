// A progress report for long builder steps: a bar with counts, rate and ETA redrawn in place on a
// terminal, or a plain line every 10% otherwise (logs, CI).
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace onnxllm {

class Progress {
 public:
  // `total_work` is in arbitrary units (weights processed) and drives percentage and ETA;
  // `total_items` (tensors) is shown as a count. `terminal` selects in-place redraws.
  Progress(std::ostream& out, bool terminal, std::string label, int64_t total_work, int64_t total_items);
  ~Progress();

  void advance(int64_t work, int64_t items, const std::string& current = "");
  // Prints the final state (100%) once.
  void finish();

  // Whether stderr is a terminal (for callers choosing `terminal`).
  static bool stderr_is_terminal();

 private:
  void draw(bool final_line);

  std::ostream& out_;
  bool terminal_;
  std::string label_;
  int64_t total_work_, total_items_;
  int64_t work_ = 0, items_ = 0;
  std::string current_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int last_decile_ = -1;
  bool finished_ = false;
};

// "1.24 G", "512 K": a count with a metric suffix.
std::string format_count(double n);
// "1.75 GB"
std::string format_bytes(double bytes);
// "1:05" or "12.3 s"
std::string format_duration(double seconds);

}  // namespace onnxllm
