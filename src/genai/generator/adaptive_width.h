// onnxruntime-genai's adaptive draft width (speculative.min_adaptive_k > 0): from completed rounds
// that proposed a full width, an exponentially weighted estimate (a new round weighs 25%) of each
// width's throughput (tokens a millisecond of verification) and acceptance; it probes one narrower
// when acceptance is below 50%, one wider when it is at least 75%, rejects a probe at once when
// throughput falls below 80% of the width it left, keeps it after two rounds at 97% or more
// (a wider one only while acceptance stays at 75%), and waits 1 round after a kept probe, 6 after
// a rejected one. The width starts at the floor (min_adaptive_k) and stays in [floor, 16]. Only
// speed depends on it: the tokens are standard decoding's at every width.
#pragma once

#include <array>
#include <cstdint>

namespace onnxllm::genai {

class AdaptiveDraftWidth {
 public:
  static constexpr int kMaxWidth = 16;

  explicit AdaptiveDraftWidth(int floor);
  int width() const { return width_; }
  // A completed round at width() that proposed width() drafts: `accepted` of `evaluated` drafts
  // taken, `emitted` tokens, its run `ms` long. Rounds with nothing evaluated or no time are skipped.
  void observe(int evaluated, int accepted, int emitted, double ms);

  uint64_t increases = 0, decreases = 0, observations = 0, probes = 0;

 private:
  struct Estimate {
    double throughput = 0.0, acceptance = 0.0;
    bool seen = false;
  };
  void move_to(int width);

  int floor_;
  int width_;
  std::array<Estimate, kMaxWidth + 1> estimates_{};
  int probe_from_ = 0;   // the width a probe left; 0 when none is running
  int probe_rounds_ = 0;
  int wait_ = 0;         // valid rounds before the next probe
};

}  // namespace onnxllm::genai
