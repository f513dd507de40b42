// The Generator: token generation over one model on one device, backend- and model-agnostic.
//
// History and KV cache: tokens() is the history; the KV cache holds past() positions. The
// cached paths keep `past() == tokens().size() - 1` (step_cached) or `past() == tokens().size()`
// (prefill_get_last_logits / decode_get_logits); the uncached step() recomputes everything.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "rlx/backend.h"
#include "rlx/model.h"
#include "rlx/sampler.h"
#include "rlx/weight_store.h"

namespace rlx {

struct GeneratorOptions {
  int64_t max_seq = 0;          // KV cache rows; 0 = min(model context, 4096)
  size_t prefill_programs = 4;  // how many prefill lengths stay compiled (LRU)
};

struct GeneratorStats {
  uint64_t compiles = 0;
  uint64_t prompt_tokens = 0;  // tokens run through prefill programs
  double prompt_seconds = 0;
  uint64_t decode_tokens = 0;  // tokens run one at a time
  double decode_seconds = 0;
};

class Generator {
 public:
  Generator(std::shared_ptr<Device> dev, const Model& model, GeneratorOptions opts = {});
  ~Generator();

  // Replaces the history with `ids` and clears the KV cache.
  void prefill(std::span<const int32_t> ids);
  // Runs the whole history through the model, samples, appends. Returns the new token.
  int32_t step(const SampleOpts& opts);
  std::vector<int32_t> generate(int n, const SampleOpts& opts);
  // First call: fills the KV cache from the history; later calls decode only the last token.
  int32_t step_cached(const SampleOpts& opts);
  std::vector<int32_t> generate_cached(int n, const SampleOpts& opts);
  // Like generate_cached; `on_token` sees each token as it is made and returns false to stop.
  std::vector<int32_t> generate_cached_with(int n, const SampleOpts& opts,
                                            const std::function<bool(int32_t)>& on_token);

  // Sets the history to `context`, fills the cache, returns the last position's logits.
  std::vector<float> prefill_get_last_logits(std::span<const int32_t> context);
  // Appends `input`, decodes it at position past(), returns its logits.
  std::vector<float> decode_get_logits(int32_t input);

  // Compiles the program for `seq` new tokens (uploading the weights it needs) without running
  // it, so that later timings measure compute only.
  void prepare(int64_t seq) { program(seq); }

  // Applied to the logits of every step before sampling or argmax.
  void set_logit_adjust(LogitAdjust fn) { adjust_ = std::move(fn); }

  const std::vector<int32_t>& tokens() const { return tokens_; }
  const rlx_model_config& config() const { return model_.config(); }
  int64_t past() const { return past_; }
  int64_t max_seq() const { return capacity_; }
  const GeneratorStats& stats() const { return stats_; }
  const WeightStore& weights() const { return weights_; }

 private:
  struct Compiled;
  Compiled& program(int64_t seq);
  // Runs `ids` at positions [start, start + n) and returns the last row's logits.
  std::span<float> run(std::span<const int32_t> ids, int64_t start);
  int32_t pick(std::span<float> logits, const SampleOpts& opts);

  std::shared_ptr<Device> dev_;
  const Model& model_;
  GeneratorOptions opts_;
  int64_t capacity_ = 0;
  WeightStore weights_;
  std::vector<Buffer> k_cache_, v_cache_;          // per layer, [capacity, kv_heads, head_dim] f32
  std::list<std::unique_ptr<Compiled>> programs_;  // most recently used first
  std::vector<int32_t> tokens_;
  int64_t past_ = 0;
  std::vector<float> logits_;
  bool logits_fresh_ = false;  // logits_ are the last history token's, unmodified
  Sampler sampler_;
  bool seeded_ = false;
  LogitAdjust adjust_;
  GeneratorStats stats_;
};

}  // namespace rlx
