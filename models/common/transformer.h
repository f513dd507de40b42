// What llama-style decoder families share: reading hyper-parameters from GGUF metadata or an HF
// config.json, the two tensor naming schemes, and Llama-3 rope scaling. Each family's forward
// pass stays in its own plugin (models/<family>/forward.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model_kit.h"

namespace rlx::model {

// Parts of one decoder layer, named per format by tensor_name().
enum class Part { AttnNorm, Q, K, V, O, QNorm, KNorm, FfnNorm, Gate, Up, Down };

struct FamilyDefaults {
  const char* gguf_arch;  // metadata prefix in GGUF: "llama", "qwen3"
  double rope_theta;      // when the file does not say
  double norm_eps;
};

struct Transformer {
  rlx_model_config config{};
  bool gguf = true;
  int rope_mode = 0;                      // 0 adjacent pairs (GGUF llama), 1 halves
  std::optional<std::string> rope_freqs;  // GGUF rope_freqs.weight, when present
  std::vector<float> rope_factors;        // computed from HF rope_scaling (llama3), else empty
  bool tied = false;                      // no output weight: lm_head is the embedding

  std::string embed_name() const;
  std::string out_norm_name() const;
  std::string output_name() const;  // the embedding when tied
  std::string tensor_name(int layer, Part part) const;
};

// Reads the hyper-parameters and checks every tensor of a plain llama-style stack against them
// (qk_norm: also the per-head q/k norms). Throws ModelError naming the key or tensor.
Transformer read_transformer(const Source& src, const FamilyDefaults& d, bool qk_norm);

// Llama-3 frequency factors (one per rotated pair): divide the base frequency by factor[i].
std::vector<float> llama3_rope_factors(int64_t head_dim, double theta, double factor,
                                       double low_freq_factor, double high_freq_factor,
                                       double original_max_pos);

}  // namespace rlx::model
