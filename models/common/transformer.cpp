#include "transformer.h"

#include <cmath>
#include <cstring>

namespace rlx::model {
namespace {

const char* gguf_part(Part p) {
  switch (p) {
    case Part::AttnNorm: return "attn_norm";
    case Part::Q: return "attn_q";
    case Part::K: return "attn_k";
    case Part::V: return "attn_v";
    case Part::O: return "attn_output";
    case Part::QNorm: return "attn_q_norm";
    case Part::KNorm: return "attn_k_norm";
    case Part::FfnNorm: return "ffn_norm";
    case Part::Gate: return "ffn_gate";
    case Part::Up: return "ffn_up";
    case Part::Down: return "ffn_down";
  }
  return "?";
}

const char* hf_part(Part p) {
  switch (p) {
    case Part::AttnNorm: return "input_layernorm";
    case Part::Q: return "self_attn.q_proj";
    case Part::K: return "self_attn.k_proj";
    case Part::V: return "self_attn.v_proj";
    case Part::O: return "self_attn.o_proj";
    case Part::QNorm: return "self_attn.q_norm";
    case Part::KNorm: return "self_attn.k_norm";
    case Part::FfnNorm: return "post_attention_layernorm";
    case Part::Gate: return "mlp.gate_proj";
    case Part::Up: return "mlp.up_proj";
    case Part::Down: return "mlp.down_proj";
  }
  return "?";
}

}  // namespace

std::string Transformer::embed_name() const {
  return gguf ? "token_embd.weight" : "model.embed_tokens.weight";
}
std::string Transformer::out_norm_name() const {
  return gguf ? "output_norm.weight" : "model.norm.weight";
}
std::string Transformer::output_name() const {
  if (tied) return embed_name();
  return gguf ? "output.weight" : "lm_head.weight";
}
std::string Transformer::tensor_name(int layer, Part part) const {
  return gguf ? "blk." + std::to_string(layer) + "." + gguf_part(part) + ".weight"
              : "model.layers." + std::to_string(layer) + "." + hf_part(part) + ".weight";
}

std::vector<float> llama3_rope_factors(int64_t head_dim, double theta, double factor,
                                       double low_freq_factor, double high_freq_factor,
                                       double original_max_pos) {
  // Wavelengths longer than original/low are slowed by `factor`, shorter than original/high are
  // kept, and the band between is interpolated smoothly (Llama 3.1 / 3.2 rope_scaling).
  const double low_wavelen = original_max_pos / low_freq_factor;
  const double high_wavelen = original_max_pos / high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    double wavelen = 2.0 * M_PI / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) {
      f = factor;
    } else if (wavelen >= high_wavelen) {
      double smooth =
          (original_max_pos / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

Transformer read_transformer(const Source& src, const FamilyDefaults& d, bool qk_norm) {
  Transformer t;
  t.gguf = src.is_gguf();
  rlx_model_config& c = t.config;
  c.struct_size = sizeof c;
  auto key = [&](const char* gguf_key, const char* hf_key) {
    return t.gguf ? std::string(d.gguf_arch) + "." + gguf_key : std::string(hf_key);
  };

  c.dim = src.require_int(key("embedding_length", "hidden_size"));
  c.n_layers = src.require_int(key("block_count", "num_hidden_layers"));
  c.ffn_dim = src.require_int(key("feed_forward_length", "intermediate_size"));
  c.n_heads = src.require_int(key("attention.head_count", "num_attention_heads"));
  c.n_kv_heads =
      src.get_int(key("attention.head_count_kv", "num_key_value_heads")).value_or(c.n_heads);
  c.head_dim = src.get_int(key("attention.key_length", "head_dim")).value_or(0);
  if (c.head_dim == 0) {
    if (c.n_heads <= 0 || c.dim % c.n_heads != 0)
      fail("embedding length " + std::to_string(c.dim) + " is not a multiple of the " +
           std::to_string(c.n_heads) + " attention heads, and no head dim is given");
    c.head_dim = c.dim / c.n_heads;
  }
  c.max_seq = src.get_int(key("context_length", "max_position_embeddings")).value_or(4096);
  c.rope_theta =
      static_cast<float>(src.get_float(key("rope.freq_base", "rope_theta")).value_or(d.rope_theta));
  c.norm_eps = static_cast<float>(
      src.get_float(key("attention.layer_norm_rms_epsilon", "rms_norm_eps")).value_or(d.norm_eps));
  c.bos_id =
      src.get_int_or_first(t.gguf ? "tokenizer.ggml.bos_token_id" : "bos_token_id").value_or(-1);
  c.eos_id =
      src.get_int_or_first(t.gguf ? "tokenizer.ggml.eos_token_id" : "eos_token_id").value_or(-1);
  std::snprintf(c.architecture, sizeof c.architecture, "%s", d.gguf_arch);

  for (int64_t v : {c.dim, c.n_layers, c.ffn_dim, c.n_heads, c.n_kv_heads, c.head_dim})
    if (v <= 0 || v > (int64_t{1} << 20))
      fail("hyper-parameter out of range: dim " + std::to_string(c.dim) + ", layers " +
           std::to_string(c.n_layers) + ", ffn " + std::to_string(c.ffn_dim) + ", heads " +
           std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + ", head dim " +
           std::to_string(c.head_dim));
  if (c.n_heads % c.n_kv_heads != 0)
    fail(std::to_string(c.n_heads) + " attention heads are not a multiple of " +
         std::to_string(c.n_kv_heads) + " kv heads");

  // The vocabulary: the embedding's row count is the truth; metadata must agree with it.
  auto embd = src.tensor(t.embed_name());
  if (!embd) fail("missing tensor '" + t.embed_name() + "'");
  if (embd->shape.size() != 2 || embd->shape[1] != c.dim)
    fail("tensor '" + t.embed_name() + "' has shape " + Source::shape_str(embd->shape) +
         ", expected [vocab, " + std::to_string(c.dim) + "]");
  c.vocab_size = embd->shape[0];
  if (auto v = src.get_int(key("vocab_size", "vocab_size")); v && *v != c.vocab_size)
    fail("metadata vocab_size " + std::to_string(*v) + " does not match '" + t.embed_name() +
         "' with " + std::to_string(c.vocab_size) + " rows");

  // Rope: GGUF llama files rotate adjacent pairs (q/k rows were permuted by the converter);
  // HF checkpoints and every qwen3 file rotate halves.
  t.rope_mode = (t.gguf && std::strcmp(d.gguf_arch, "llama") == 0) ? 0 : 1;
  if (t.gguf) {
    if (src.tensor("rope_freqs.weight")) {
      src.require_tensor("rope_freqs.weight", {c.head_dim / 2});
      t.rope_freqs = "rope_freqs.weight";
    }
  } else if (auto type = src.get_string("rope_scaling.rope_type"); type && *type == "llama3") {
    auto need = [&](const char* k) {
      auto v = src.get_float(std::string("rope_scaling.") + k);
      if (!v)
        fail(std::string("rope_scaling.rope_type is llama3 but rope_scaling.") + k + " is missing");
      return *v;
    };
    t.rope_factors =
        llama3_rope_factors(c.head_dim, c.rope_theta, need("factor"), need("low_freq_factor"),
                            need("high_freq_factor"), need("original_max_position_embeddings"));
  }

  t.tied = !src.tensor(t.gguf ? "output.weight" : "lm_head.weight");
  const int64_t q_rows = c.n_heads * c.head_dim, kv_rows = c.n_kv_heads * c.head_dim;
  for (int l = 0; l < c.n_layers; ++l) {
    src.require_tensor(t.tensor_name(l, Part::AttnNorm), {c.dim});
    src.require_tensor(t.tensor_name(l, Part::Q), {q_rows, c.dim});
    src.require_tensor(t.tensor_name(l, Part::K), {kv_rows, c.dim});
    src.require_tensor(t.tensor_name(l, Part::V), {kv_rows, c.dim});
    src.require_tensor(t.tensor_name(l, Part::O), {c.dim, q_rows});
    if (qk_norm) {
      src.require_tensor(t.tensor_name(l, Part::QNorm), {c.head_dim});
      src.require_tensor(t.tensor_name(l, Part::KNorm), {c.head_dim});
    }
    src.require_tensor(t.tensor_name(l, Part::FfnNorm), {c.dim});
    src.require_tensor(t.tensor_name(l, Part::Gate), {c.ffn_dim, c.dim});
    src.require_tensor(t.tensor_name(l, Part::Up), {c.ffn_dim, c.dim});
    src.require_tensor(t.tensor_name(l, Part::Down), {c.dim, c.ffn_dim});
  }
  src.require_tensor(t.out_norm_name(), {c.dim});
  if (!t.tied) src.require_tensor(t.output_name(), {c.vocab_size, c.dim});
  return t;
}

}  // namespace rlx::model
