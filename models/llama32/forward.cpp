// Llama 3.x forward pass (Llama-3.2-1B/3B shapes): pre-norm decoder layers with GQA attention
// over a KV cache and a SwiGLU MLP.
//   D = dim, H = heads, Hkv = kv heads, hd = head dim, F = ffn dim, S = new tokens, T = cache rows
#include "forward.h"

namespace rlx::model {

void llama32_forward(Builder& b, const Transformer& t, const ForwardShape& s) {
  const rlx_model_config& c = t.config;
  const int64_t S = s.seq, H = c.n_heads, Hkv = c.n_kv_heads, hd = c.head_dim;
  ForwardInputs in = declare_inputs(b, c, s);
  std::optional<Id> freq_factors;  // Llama-3 rope scaling, from the file or from rope_scaling
  if (t.rope_freqs)
    freq_factors = b.weight(*t.rope_freqs);
  else if (!t.rope_factors.empty())
    freq_factors = b.constant("rope_factors", t.rope_factors);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  Id x = b.embed(b.weight(t.embed_name()), in.ids);  // [S, D]
  for (int l = 0; l < c.n_layers; ++l) {
    auto w = [&](Part p) { return b.weight(t.tensor_name(l, p)); };
    // attention: x [S, D] -> q [S, H, hd], k/v [S, Hkv, hd]
    Id h = b.rms_norm(x, w(Part::AttnNorm), c.norm_eps);
    Id q = b.reshape(b.matmul(h, w(Part::Q)), {S, H, hd});
    Id k = b.reshape(b.matmul(h, w(Part::K)), {S, Hkv, hd});
    Id v = b.reshape(b.matmul(h, w(Part::V)), {S, Hkv, hd});
    q = b.rope(q, in.pos, c.rope_theta, t.rope_mode, freq_factors);
    k = b.rope(k, in.pos, c.rope_theta, t.rope_mode, freq_factors);
    Id kc = b.kv_store(in.k_cache[l], k, in.pos);  // [T, Hkv, hd], rows pos[] written
    Id vc = b.kv_store(in.v_cache[l], v, in.pos);
    Id a = b.attention(q, kc, vc, in.pos, scale);                   // [S, H, hd]
    x = b.add(x, b.matmul(b.reshape(a, {S, H * hd}), w(Part::O)));  // [S, D]
    // MLP: x [S, D] -> [S, F] -> [S, D]
    h = b.rms_norm(x, w(Part::FfnNorm), c.norm_eps);
    Id g = b.silu_mul(b.matmul(h, w(Part::Gate)), b.matmul(h, w(Part::Up)));  // [S, F]
    x = b.add(x, b.matmul(g, w(Part::Down)));                                 // [S, D]
  }
  finish_forward(b, t, s, x);
}

}  // namespace rlx::model
