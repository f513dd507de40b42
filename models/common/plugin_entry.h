// The ABI entry points every llama-style family plugin shares: init/shutdown, load (read the
// config), free, and build_forward dispatching to the family's forward function. A family's
// plugin.cpp defines its Family and instantiates these with RLX_DEFINE_MODEL_PLUGIN.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transformer.h"

struct rlx_model {
  rlx::model::Transformer t;
};

namespace rlx::model {

struct ForwardShape {
  int64_t seq;       // new tokens in this call
  int64_t capacity;  // KV cache rows
  rlx_logits_mode logits;
};

// Each family provides these.
struct Family {
  const char* name;  // plugin name: "llama32"
  const char* description;
  const char* const* gguf_architectures;
  const char* const* hf_model_types;
  FamilyDefaults defaults;
  bool qk_norm;
  void (*forward)(Builder& b, const Transformer& t, const ForwardShape& s);
};

// Declares the inputs the generator binds, in the order plugin_abi.h promises:
// ids, pos, then k_cache.L / v_cache.L for every layer.
struct ForwardInputs {
  Id ids, pos;
  std::vector<Id> k_cache, v_cache;
};

inline ForwardInputs declare_inputs(Builder& b, const rlx_model_config& c, const ForwardShape& s) {
  ForwardInputs in;
  in.ids = b.input("ids", RLX_I32, {s.seq});
  in.pos = b.input("pos", RLX_I32, {s.seq});
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::string k = "k_cache." + std::to_string(l), v = "v_cache." + std::to_string(l);
    in.k_cache.push_back(b.input(k.c_str(), RLX_F32, {s.capacity, c.n_kv_heads, c.head_dim}));
    in.v_cache.push_back(b.input(v.c_str(), RLX_F32, {s.capacity, c.n_kv_heads, c.head_dim}));
  }
  return in;
}

// Final norm and head, shared by every family: x [seq, dim] -> "logits" or "hidden".
inline void finish_forward(Builder& b, const Transformer& t, const ForwardShape& s, Id x) {
  const rlx_model_config& c = t.config;
  if (s.logits != RLX_LOGITS_ALL && s.seq > 1) x = b.slice_rows(x, s.seq - 1, 1);  // [1, dim]
  x = b.rms_norm(x, b.weight(t.out_norm_name()), c.norm_eps, "out_norm");
  if (s.logits == RLX_LOGITS_NONE) {
    b.output(x, "hidden");
    return;
  }
  b.output(b.matmul(x, b.weight(t.output_name()), "lm_head"), "logits");  // [rows, vocab]
}

inline rlx_status load(const Family& f, const rlx_model_source* src, rlx_model** out,
                       rlx_model_config* config, rlx_err err) {
  return catch_to_status(err, [&] {
    auto m = std::make_unique<rlx_model>();
    m->t = read_transformer(Source(src), f.defaults, f.qk_norm);
    if (config) {
      uint32_t size = config->struct_size ? config->struct_size : sizeof(rlx_model_config);
      std::memcpy(config, &m->t.config, std::min<size_t>(size, sizeof(rlx_model_config)));
      config->struct_size = size;
    }
    *out = m.release();
  });
}

inline rlx_status build(const Family& f, rlx_model* m, const rlx_graph_builder* gb,
                        const rlx_forward_params* p, rlx_err err) {
  return catch_to_status(err, [&] {
    if (!m || !gb || !p) fail("build_forward: null argument");
    const bool head_only = p->logits == RLX_LOGITS_HEAD;
    if (p->seq <= 0 || (!head_only && p->cache_capacity < p->seq))
      fail("build_forward: seq " + std::to_string(p->seq) + " must be > 0 and fit the cache (" +
           std::to_string(p->cache_capacity) + " rows)");
    Builder b(gb);
    if (head_only) {
      // The lm_head alone, for a host that runs it apart from the body: hidden -> logits.
      Id h = b.input("hidden", RLX_F32, {p->seq, m->t.config.dim});              // [S, D]
      b.output(b.matmul(h, b.weight(m->t.output_name()), "lm_head"), "logits");  // [S, V]
      return;
    }
    f.forward(b, m->t,
              ForwardShape{p->seq, p->cache_capacity, static_cast<rlx_logits_mode>(p->logits)});
  });
}

}  // namespace rlx::model

// Defines the family's ABI tables and the exported rlx_plugin_query for `FAMILY` (a Family).
#define RLX_DEFINE_MODEL_PLUGIN(FAMILY)                                                           \
  namespace {                                                                                     \
  rlx_status plugin_init(const rlx_host_api*, rlx_err) { return RLX_OK; }                         \
  void plugin_shutdown() {}                                                                       \
  rlx_status plugin_load(const rlx_model_source* s, rlx_model** o, rlx_model_config* c,           \
                         rlx_err e) {                                                             \
    return rlx::model::load(FAMILY, s, o, c, e);                                                  \
  }                                                                                               \
  void plugin_free(rlx_model* m) { delete m; }                                                    \
  rlx_status plugin_build(rlx_model* m, const rlx_graph_builder* gb, const rlx_forward_params* p, \
                          rlx_err e) {                                                            \
    return rlx::model::build(FAMILY, m, gb, p, e);                                                \
  }                                                                                               \
  const rlx_model_api kApi = {sizeof(rlx_model_api),                                              \
                              plugin_init,                                                        \
                              plugin_shutdown,                                                    \
                              FAMILY.gguf_architectures,                                          \
                              FAMILY.hf_model_types,                                              \
                              plugin_load,                                                        \
                              plugin_free,                                                        \
                              plugin_build,                                                       \
                              {}};                                                                \
  const rlx_plugin_info kInfo = {RLX_ABI_MAJOR,                                                   \
                                 RLX_ABI_MINOR,                                                   \
                                 sizeof(rlx_plugin_info),                                         \
                                 RLX_PLUGIN_MODEL,                                                \
                                 FAMILY.name,                                                     \
                                 "",                                                              \
                                 "0.1.0",                                                         \
                                 FAMILY.description,                                              \
                                 nullptr,                                                         \
                                 &kApi,                                                           \
                                 {}};                                                             \
  }                                                                                               \
  extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t) { return &kInfo; }
