#include "builder/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace onnxllm {
namespace {

constexpr int kBarWidth = 28;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

}  // namespace

std::string format_count(double n) {
  const char* suffix[] = {"", " K", " M", " G", " T"};
  int i = 0;
  while (n >= 1000 && i < 4) {
    n /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), i == 0 ? "%.0f%s" : "%.2f%s", n, suffix[i]);
  return buf;
}

std::string format_bytes(double bytes) {
  const char* suffix[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (bytes >= 1000 && i < 4) {
    bytes /= 1000;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), i == 0 ? "%.0f %s" : "%.2f %s", bytes, suffix[i]);
  return buf;
}

std::string format_duration(double seconds) {
  char buf[32];
  if (seconds < 60) std::snprintf(buf, sizeof(buf), "%.1f s", seconds);
  else std::snprintf(buf, sizeof(buf), "%d:%02d", static_cast<int>(seconds) / 60, static_cast<int>(seconds) % 60);
  return buf;
}

bool Progress::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::ostream& out, bool terminal, std::string label, int64_t total_work, int64_t total_items)
    : out_(out),
      terminal_(terminal),
      label_(std::move(label)),
      total_work_(std::max<int64_t>(total_work, 1)),
      total_items_(total_items),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - kRedrawInterval) {}

Progress::~Progress() {
  // An unfinished bar (an error interrupted the work) ends its line so the message starts clean.
  if (terminal_ && !finished_) out_ << "\n" << std::flush;
}

void Progress::advance(int64_t work, int64_t items, const std::string& current) {
  work_ = std::min(total_work_, work_ + work);
  items_ += items;
  current_ = current;
  draw(false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (!terminal_ && last_decile_ == 10) return;  // the 100% line is already out
  work_ = total_work_;
  current_.clear();
  draw(true);
}

void Progress::draw(bool final_line) {
  const auto now = std::chrono::steady_clock::now();
  const double fraction = static_cast<double>(work_) / static_cast<double>(total_work_);
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string counts = std::to_string(items_) + "/" + std::to_string(total_items_);
  if (!terminal_) {
    const int decile = static_cast<int>(fraction * 10);
    if (!final_line && decile == last_decile_) return;
    last_decile_ = decile;
    out_ << label_ << ": " << static_cast<int>(fraction * 100) << "% (" << counts << ", "
         << format_duration(elapsed) << ")\n"
         << std::flush;
    return;
  }
  if (!final_line && now - last_draw_ < kRedrawInterval) return;
  last_draw_ = now;
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kBarWidth, '.');
  std::string eta = "--";
  if (final_line) eta = format_duration(elapsed);
  else if (fraction > 0.01) eta = "ETA " + format_duration(elapsed * (1 - fraction) / fraction);
  std::string line = "\r" + label_ + " [" + bar + "] " + std::to_string(static_cast<int>(fraction * 100)) + "% " +
                     counts + "  " + eta;
  if (!current_.empty()) line += "  " + current_.substr(0, 48);
  out_ << line << "\x1b[K" << (final_line ? "\n" : "") << std::flush;  // clear the rest of the old line
}

}  // namespace onnxllm
