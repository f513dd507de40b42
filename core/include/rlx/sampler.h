// Token sampling: greedy, temperature, top-k, top-p, min-p and a repetition penalty, seeded and
// reproducible. Applied in llama.cpp's order: penalty -> top-k -> temperature -> top-p -> min-p.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <vector>

namespace rlx {

struct SampleOpts {
  float temperature = 0.8f;         // <= 0 means greedy
  int32_t top_k = 40;               // <= 0 disables
  float top_p = 0.95f;              // >= 1 disables
  float min_p = 0.05f;              // <= 0 disables
  float repetition_penalty = 1.0f;  // 1 disables; > 1 discourages tokens already in the window
  int32_t penalty_window = 64;      // how many recent tokens the penalty looks at
  uint64_t seed = 0;
  bool greedy = false;
};

// Called with the raw logits of the step and the token history before any sampling or argmax,
// e.g. to ban tokens or add a bias. The generator applies it on every path, host-greedy too.
using LogitAdjust = std::function<void(std::span<float> logits, std::span<const int32_t> history)>;

class Sampler {
 public:
  explicit Sampler(uint64_t seed = 0) : rng_(seed), seed_(seed) {}
  void reseed(uint64_t seed) {
    rng_.seed(seed);
    seed_ = seed;
  }
  uint64_t seed() const { return seed_; }

  // Picks the next token. `logits` is modified (penalties, temperature).
  int32_t sample(std::span<float> logits, std::span<const int32_t> history, const SampleOpts& o);

  static int32_t argmax(std::span<const float> logits);

 private:
  std::mt19937_64 rng_;
  uint64_t seed_;
  // Reused across steps: no per-token allocation.
  std::vector<std::pair<float, int32_t>> cand_;
  std::vector<uint8_t> seen_;
};

}  // namespace rlx
