#include "genai/generator/adaptive_width.h"

#include <algorithm>

namespace onnxllm::genai {

AdaptiveDraftWidth::AdaptiveDraftWidth(int floor) : floor_(std::clamp(floor, 1, kMaxWidth)), width_(floor_) {}

void AdaptiveDraftWidth::move_to(int width) {
  ++(width > width_ ? increases : decreases);
  width_ = width;
}

void AdaptiveDraftWidth::observe(int evaluated, int accepted, int emitted, double ms) {
  if (evaluated <= 0 || ms <= 0.0) return;
  ++observations;
  const double throughput = emitted / ms, acceptance = static_cast<double>(accepted) / evaluated;
  Estimate& e = estimates_[static_cast<size_t>(width_)];
  if (e.seen) {
    e.throughput = 0.75 * e.throughput + 0.25 * throughput;
    e.acceptance = 0.75 * e.acceptance + 0.25 * acceptance;
  } else {
    e = {throughput, acceptance, true};
  }
  if (probe_from_ > 0) {
    const Estimate& before = estimates_[static_cast<size_t>(probe_from_)];
    ++probe_rounds_;
    const bool worse = e.throughput < 0.8 * before.throughput;
    if (!worse && probe_rounds_ < 2) return;
    const bool keep = !worse && e.throughput >= 0.97 * before.throughput && (width_ < probe_from_ || e.acceptance >= 0.75);
    if (!keep) move_to(probe_from_);
    wait_ = keep ? 1 : 6;
    probe_from_ = 0;
    return;
  }
  if (wait_ > 0) {
    --wait_;
    return;
  }
  int next = width_;
  if (e.acceptance < 0.5 && width_ > floor_) next = width_ - 1;
  else if (e.acceptance >= 0.75 && width_ < kMaxWidth) next = width_ + 1;
  if (next == width_) return;
  ++probes;
  probe_from_ = width_;
  probe_rounds_ = 0;
  move_to(next);
}

}  // namespace onnxllm::genai
