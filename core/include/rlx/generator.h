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
#include "rlx/profile.h"
#include "rlx/sampler.h"
#include "rlx/weight_store.h"

namespace rlx {

struct GeneratorOptions {
  int64_t max_seq = 0;          // KV cache rows; 0 = min(model context, 4096)
  size_t prefill_capacity = 4;  // prefill lengths kept compiled (LRU)
  int64_t prefill_seq_cap = 0;  // longer prompts run in chunks of this many tokens (0 = no cap)
  // Pad each prompt (chunk) at the front to the next power of two with padding rows (position
  // -1: they store no K/V and attend to nothing), so O(log n) Programs serve every length.
  bool prefill_dynamic = false;
  // How decode Programs are shaped (attention reads the cache by position, so a Program
  // compiled for R rows serves every past < R): buckets = power-of-two ladder [1,2) [2,3) [3,5)
  // [5,9) ... compiled at the upper bound, O(log N) Programs, padding under 2x; dynamic = one
  // Program at the full cache size; exact = one per past length (LRU of decode_capacity).
  DecodeCache decode_cache = DecodeCache::buckets;
  size_t decode_capacity = 8;        // Exact: decode Programs kept (LRU)
  int64_t decode_max_past = 0;       // Buckets: top of the ladder (0 = max_seq)
  bool keep_decode_programs = true;  // across prefill(): cross-utterance reuse
  // K/V stay in device memory across steps. Off (RLX_RESIDENT_KV=0): the cache lives on the
  // host and each step uploads the history's rows and reads the new ones back (slow; for
  // backends or debugging where device memory cannot be kept).
  bool resident_kv = true;
  // Greedy decode stops the graph at the final hidden row and runs the lm_head on the host
  // device (below), where the logit adjustment and argmax happen. Off: lm_head in the graph.
  bool host_lm_head = true;
  // The host (cpu) device: runs the host-side lm_head, and every node the generator's device
  // has no kernel for (see SplitProgram). nullptr = the generator's device when it is the cpu
  // backend; otherwise the lm_head stays in the graph and a missing kernel is an error.
  std::shared_ptr<Device> host_device;
  // Soft memory budget for kept decode Programs: when compiling one more would pass it, the
  // highest buckets are evicted first. 0 = soft_fraction of physical RAM.
  uint64_t soft_budget_bytes = 0;
  double soft_fraction = 0.8;
  uint64_t bucket_resident_bytes = 0;  // per decode Program; 0 = its measured arena + buffers

  // The compile, memory and decode settings of a profile (rlx.toml + env + flags).
  static GeneratorOptions from_profile(const Profile& p);
  // Both compile profiles at once (the reference's with_compile_profiles).
  GeneratorOptions& with_compile_profiles(const PrefillProfile& prefill,
                                          const DecodeProfile& decode);

  // The reference runtime's builder names.
  GeneratorOptions& with_prefill_cache(size_t capacity) {
    prefill_capacity = capacity;
    return *this;
  }
  GeneratorOptions& with_dynamic_prefill_cache(size_t capacity) {
    prefill_dynamic = true;
    prefill_capacity = capacity;
    return *this;
  }
  GeneratorOptions& with_decode_cache(int64_t max_past) {  // the bucket ladder up to max_past
    decode_cache = DecodeCache::buckets;
    decode_max_past = max_past;
    return *this;
  }
  GeneratorOptions& with_dynamic_decode_cache() {
    decode_cache = DecodeCache::dynamic;
    return *this;
  }
  GeneratorOptions& with_exact_decode_cache(size_t capacity) {
    decode_cache = DecodeCache::exact;
    decode_capacity = capacity;
    return *this;
  }
  GeneratorOptions& with_compile_seq_cap(int64_t cap) {
    prefill_seq_cap = cap;
    return *this;
  }
};

// The sampling settings of a profile; seed -1 becomes a random seed.
SampleOpts sample_opts(const SamplingProfile& s);

// The decode bucket that serves `past` cached positions: past in [lo, hi), compiled with hi
// cache rows.
struct DecodeBucket {
  int64_t lo, hi;
};
DecodeBucket decode_bucket(int64_t past);

struct GeneratorStats {
  uint64_t compiles = 0;
  uint64_t prefill_compiles = 0;
  uint64_t decode_compiles = 0;
  uint64_t decode_evictions = 0;
  uint64_t host_head_tokens = 0;  // decode steps whose lm_head ran on the host device
  uint64_t prompt_tokens = 0;     // tokens run through prefill programs
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
  // Sets the history to `context` like prefill_get_last_logits, but keeps the KV cache rows of
  // the longest prefix `context` shares with the current history (the earlier turns of a chat)
  // and runs only the rest. Returns the last position's logits.
  std::vector<float> continue_get_last_logits(std::span<const int32_t> context);
  // Appends `input`, decodes it at position past(), returns its logits.
  std::vector<float> decode_get_logits(int32_t input);

  // Whether greedy decode runs the lm_head on the host device (host-greedy).
  bool host_lm_head() const { return head_device_ != nullptr; }

  // Bytes counted against the soft budget: weights, KV cache, compiled Programs.
  uint64_t resident_estimate() const;

  // Decode Programs currently compiled, by cache rows.
  std::vector<int64_t> decode_rows() const;

  // Applied to the logits of every step before sampling or argmax.
  void set_logit_adjust(LogitAdjust fn) { adjust_ = std::move(fn); }

  const std::vector<int32_t>& tokens() const { return tokens_; }
  const rlx_model_config& config() const { return model_.config(); }
  int64_t past() const { return past_; }
  // The compile profiles in effect (what with_compile_profiles / the rlx.toml asked for).
  PrefillProfile prefill_profile() const;
  DecodeProfile decode_profile() const;
  const GeneratorOptions& options() const { return opts_; }
  int64_t max_seq() const { return capacity_; }
  // True when the KV cache has no row left for the next step(): it runs the whole history,
  // step_cached() its last token, before sampling.
  bool context_full() const { return static_cast<int64_t>(tokens_.size()) > capacity_; }
  const GeneratorStats& stats() const { return stats_; }
  const WeightStore& weights() const { return weights_; }

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compile(const std::shared_ptr<Device>& dev, WeightStore& weights,
                                    int64_t seq, int64_t rows, rlx_logits_mode mode);
  WeightStore& host_weights();  // the model's weights on the host device (weights_ if it is dev_)
  Compiled& prefill_program(int64_t seq);
  Compiled& decode_program(int64_t past, rlx_logits_mode mode);
  // Runs the body for one token at `past`, then the lm_head on the host device.
  std::span<float> run_host_head(int32_t id, int64_t past);
  void make_room_for_decode(uint64_t bytes, int64_t keep_rows);
  uint64_t budget_bytes() const;
  // Runs `ids` at positions [start, start + n) and returns the last row's logits.
  std::span<float> run(std::span<const int32_t> ids, int64_t start);
  int32_t pick(std::span<float> logits, const SampleOpts& opts);

  std::shared_ptr<Device> dev_;
  const Model& model_;
  GeneratorOptions opts_;
  int64_t capacity_ = 0;
  WeightStore weights_;
  std::vector<Buffer> k_cache_, v_cache_;         // per layer, [capacity, kv_heads, head_dim] f32
  std::list<std::unique_ptr<Compiled>> prefill_;  // most recently used first
  std::list<std::unique_ptr<Compiled>> decode_;   // most recently used first
  uint64_t fixed_bytes_ = 0;                      // KV cache: counted against the budget
  std::shared_ptr<Device> head_device_;           // host-side lm_head, when enabled
  std::unique_ptr<WeightStore> host_weights_;     // on opts_.host_device, when it is another one
  std::unique_ptr<Compiled> head_;                // hidden [1, dim] -> logits [1, vocab]
  std::vector<float> hidden_;
  std::vector<std::vector<float>> host_k_, host_v_;  // the cache when !resident_kv
  void kv_upload(int64_t rows);                      // host -> device, rows [0, rows)
  void kv_download(int64_t from, int64_t to);        // device -> host, rows [from, to)
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
