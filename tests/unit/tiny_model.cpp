#include "tiny_model.h"

#include <deque>
#include <random>
#include <vector>

#include "rlx/error.h"
#include "rlx/quant.h"
#include "rlx/weights.h"

namespace rlx::test {

void write_tiny_model(const TinyModel& m, const std::filesystem::path& path) {
  const int64_t hd = m.head_dim ? m.head_dim : m.dim / m.heads;
  const std::string a = m.arch;
  GgufWriter w;
  w.set("general.architecture", MetaValue::string(a));
  w.set(a + ".embedding_length", MetaValue::u32(static_cast<uint32_t>(m.dim)));
  w.set(a + ".block_count", MetaValue::u32(static_cast<uint32_t>(m.layers)));
  w.set(a + ".feed_forward_length",
        MetaValue::u32(static_cast<uint32_t>(m.meta_ffn ? m.meta_ffn : m.ffn)));
  w.set(a + ".attention.head_count", MetaValue::u32(static_cast<uint32_t>(m.heads)));
  w.set(a + ".attention.head_count_kv", MetaValue::u32(static_cast<uint32_t>(m.kv_heads)));
  w.set(a + ".attention.key_length", MetaValue::u32(static_cast<uint32_t>(hd)));
  w.set(a + ".context_length", MetaValue::u32(static_cast<uint32_t>(m.ctx)));
  w.set(a + ".rope.freq_base", MetaValue::f32(a == "qwen3" ? 1e6f : 10000.0f));
  w.set(a + ".attention.layer_norm_rms_epsilon", MetaValue::f32(1e-5f));
  w.set("tokenizer.ggml.eos_token_id", MetaValue::u32(static_cast<uint32_t>(m.vocab - 1)));

  std::mt19937 rng(m.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::deque<std::vector<uint8_t>> storage;  // the writer references, not copies
  auto add = [&](std::string name, Shape shape, bool matrix, float scale, float bias) {
    if (m.rename) name = m.rename(name);
    if (name.empty()) return;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = bias + scale * normal(rng);
    DType t = matrix ? m.matrix_dtype : RLX_F32;
    auto& bytes = storage.emplace_back(dtype_bytes(t, n));
    if (!quant::quantize_row(t, v.data(), bytes.data(), n))
      fail("tiny model: cannot quantize to {}", dtype_name(t));
    w.add_tensor(name, t, shape, bytes.data(), bytes.size());
  };

  add("token_embd.weight", {m.vocab, m.dim}, true, 1.0f, 0.0f);
  for (int64_t l = 0; l < m.layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {m.dim}, false, 0.1f, 1.0f);
    add(p + "attn_q.weight", {m.heads * hd, m.dim}, true, 0.15f, 0.0f);
    add(p + "attn_k.weight", {m.kv_heads * hd, m.dim}, true, 0.15f, 0.0f);
    add(p + "attn_v.weight", {m.kv_heads * hd, m.dim}, true, 0.15f, 0.0f);
    add(p + "attn_output.weight", {m.dim, m.heads * hd}, true, 0.15f, 0.0f);
    if (a == "qwen3") {
      add(p + "attn_q_norm.weight", {hd}, false, 0.1f, 1.0f);
      add(p + "attn_k_norm.weight", {hd}, false, 0.1f, 1.0f);
    }
    add(p + "ffn_norm.weight", {m.dim}, false, 0.1f, 1.0f);
    add(p + "ffn_gate.weight", {m.ffn, m.dim}, true, 0.15f, 0.0f);
    add(p + "ffn_up.weight", {m.ffn, m.dim}, true, 0.15f, 0.0f);
    add(p + "ffn_down.weight", {m.dim, m.ffn}, true, 0.15f, 0.0f);
  }
  add("output_norm.weight", {m.dim}, false, 0.1f, 1.0f);
  if (!m.tied) add("output.weight", {m.vocab, m.dim}, true, 0.15f, 0.0f);
  w.write(path);
}

PluginHost& tree_plugins() {
  static PluginHost h([] {
    PluginHostOptions o;
    o.plugin_dirs = {RLX_TEST_PLUGIN_DIR};
    o.use_env = false;
    o.use_install_dir = false;
    return o;
  }());
  return h;
}

}  // namespace rlx::test
