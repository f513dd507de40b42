// `rlx check`: build one transformer block (random weights), plan it, compile and run it on a
// device, and compare with the cpu backend. A smoke test for a device and a view of the arena
// plan (--verbose prints every tensor's placement).
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "commands.h"
#include "common.h"
#include "rlx/arena.h"
#include "rlx/error.h"
#include "rlx/graph.h"
#include "rlx/log.h"
#include "rlx/split_program.h"

namespace rlx::cli {
namespace {

struct BlockShape {
  int64_t seq = 7, dim = 64, heads = 4, kv_heads = 2, ffn = 160;
  int64_t head_dim() const { return dim / heads; }
};

// One pre-norm llama-style block: attention then SwiGLU MLP, both with residuals.
Graph build_block(const BlockShape& s) {
  GraphBuilder b;
  const int64_t hd = s.head_dim();
  TensorId x = b.input("x", RLX_F32, {s.seq, s.dim});  // [S, D]
  TensorId pos = b.input("pos", RLX_I32, {s.seq});     // [S]
  TensorId attn_norm = b.weight("attn_norm", RLX_F32, {s.dim});
  TensorId wq = b.weight("wq", RLX_F32, {s.heads * hd, s.dim});
  TensorId wk = b.weight("wk", RLX_F32, {s.kv_heads * hd, s.dim});
  TensorId wv = b.weight("wv", RLX_F32, {s.kv_heads * hd, s.dim});
  TensorId wo = b.weight("wo", RLX_F32, {s.dim, s.heads * hd});
  TensorId ffn_norm = b.weight("ffn_norm", RLX_F32, {s.dim});
  TensorId wg = b.weight("w_gate", RLX_F32, {s.ffn, s.dim});
  TensorId wu = b.weight("w_up", RLX_F32, {s.ffn, s.dim});
  TensorId wd = b.weight("w_down", RLX_F32, {s.dim, s.ffn});

  TensorId h = b.rms_norm(x, attn_norm, 1e-5f, "attn_in");           // [S, D]
  TensorId q = b.reshape(b.matmul(h, wq), {s.seq, s.heads, hd});     // [S, H, hd]
  TensorId k = b.reshape(b.matmul(h, wk), {s.seq, s.kv_heads, hd});  // [S, Hkv, hd]
  TensorId v = b.reshape(b.matmul(h, wv), {s.seq, s.kv_heads, hd});  // [S, Hkv, hd]
  NodeAttrs rope;
  rope.f[0] = 10000.0f;
  q = b.op("rope", {q, pos}, rope, "q_rope");
  k = b.op("rope", {k, pos}, rope, "k_rope");
  NodeAttrs attn;
  attn.f[0] = 1.0f / std::sqrt(static_cast<float>(hd));
  attn.i[0] = 1;                                                      // causal
  TensorId a = b.op("attention", {q, k, v}, attn, "attn");            // [S, H, hd]
  a = b.matmul(b.reshape(a, {s.seq, s.heads * hd}), wo, "attn_out");  // [S, D]
  TensorId x2 = b.add(x, a, "resid1");                                // [S, D]
  TensorId m = b.rms_norm(x2, ffn_norm, 1e-5f, "ffn_in");             // [S, D]
  TensorId g = b.op("silu_mul", {b.matmul(m, wg), b.matmul(m, wu)});  // [S, F]
  TensorId y = b.add(x2, b.matmul(g, wd, "ffn_out"), "resid2");       // [S, D]
  b.output(y, "y");
  return b.finish();
}

struct Run {
  std::vector<float> y;
  double ms = 0;
};

// Runs the block on `dev`; nodes it has no kernel for run on `host_dev` (when given).
Run run_on(const std::shared_ptr<Device>& dev, const std::shared_ptr<Device>& host_dev,
           const PlannedGraph& p, std::mt19937& rng_seeded, int reps) {
  std::mt19937 rng = rng_seeded;  // same inputs on every device
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<Buffer> bufs;
  std::map<std::string, Buffer> host_weights;  // for the nodes that fall back to the host
  std::vector<rlx_binding> binds;
  uint32_t out_slot = p.graph.slot_named("y");
  for (uint32_t s = 0; s < p.graph.slots.size(); ++s) {
    const Tensor& t = p.graph.tensors[p.graph.slots[s]];
    Buffer buf = dev->alloc(dtype_bytes(t.info.dtype, t.info.elems()));
    if (t.info.dtype == RLX_I32) {
      std::vector<int32_t> ids(t.info.elems());
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
      buf.write(0, ids.data(), ids.size() * 4);
    } else if (s != out_slot) {
      // Norm weights near 1, matrices and activations small: values a trained block would see.
      bool is_norm = t.info.shape.size() == 1;
      std::vector<float> vals(t.info.elems());
      for (float& f : vals) f = is_norm ? 1.0f + 0.5f * u(rng) : 0.2f * u(rng);
      buf.write(0, vals.data(), vals.size() * 4);
      if (host_dev && t.kind == TensorKind::Weight)
        host_weights.emplace(t.name, host_dev->alloc(vals.size() * 4))
            .first->second.write(0, vals.data(), vals.size() * 4);
    }
    binds.push_back({buf.handle(), 0});
    bufs.push_back(std::move(buf));
  }
  SplitProgram prog(p, dev, host_dev,
                    [&](const std::string& name) -> const Buffer& { return host_weights.at(name); });
  if (prog.fallback_nodes())
    std::printf("%zu of %zu nodes run on %s (%zu segments)\n", prog.fallback_nodes(),
                p.nodes.size(), host_dev->backend().c_str(), prog.segments());
  prog.run(binds);  // warm-up
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) prog.run(binds);
  auto t1 = std::chrono::steady_clock::now();
  Run out;
  out.ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / reps;
  out.y.resize(bufs[out_slot].size() / 4);
  bufs[out_slot].read(0, out.y.data(), bufs[out_slot].size());
  return out;
}

}  // namespace

int cmd_check(int argc, char** argv) {
  cxxopts::Options opts(
      "rlx check", "Run one random-weight transformer block on a device and compare with cpu.");
  add_common_flags(opts);
  opts.add_options()("device", "device to check: NAME or NAME:INDEX",
                     cxxopts::value<std::string>()->default_value("cpu"))(
      "threads", "host threads for the backend (0 = all cores)",
      cxxopts::value<uint32_t>()->default_value("0"))(
      "seq", "sequence length", cxxopts::value<int64_t>()->default_value("7"))(
      "reps", "timed repetitions", cxxopts::value<int>()->default_value("3"));
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  PluginHost host(apply_common_flags(r));
  bool verbose = r.count("verbose") > 0;

  BlockShape shape;
  shape.seq = r["seq"].as<int64_t>();
  if (shape.seq < 1 || shape.seq > 4096) fail("--seq {} must be in [1, 4096]", shape.seq);
  int reps = std::max(1, r["reps"].as<int>());
  uint32_t threads = r["threads"].as<uint32_t>();
  PlannedGraph plan = plan_graph(build_block(shape));

  std::printf("graph: %zu nodes, %zu tensors, %zu slots\n", plan.graph.nodes.size(),
              plan.graph.tensors.size(), plan.graph.slots.size());
  std::printf("arena: %llu bytes planned (lower bound %llu), %u in-place reuses\n",
              static_cast<unsigned long long>(plan.arena_bytes),
              static_cast<unsigned long long>(plan.arena_lower_bound), plan.inplace_reuses);
  if (verbose) {
    for (size_t t = 0; t < plan.tensors.size(); ++t) {
      const auto& d = plan.tensors[t];
      std::printf("  %-12s %-16s %s %llu +%llu\n", plan.graph.tensors[t].name.c_str(),
                  info_str(plan.graph.tensors[t].info).c_str(),
                  d.storage == RLX_STORAGE_ARENA ? "arena" : fmt::format("slot {}", d.slot).c_str(),
                  static_cast<unsigned long long>(d.offset),
                  static_cast<unsigned long long>(d.nbytes));
    }
  }

  std::mt19937 rng(42);
  auto dev = host.open_device_spec(r["device"].as<std::string>(), threads);
  auto cpu = host.host_device_for(*dev, threads);
  Run got = run_on(dev, cpu, plan, rng, reps);
  std::printf("%s:%u: %.3f ms per block run (seq %lld)\n", dev->backend().c_str(), dev->index(),
              got.ms, static_cast<long long>(shape.seq));
  for (float f : got.y)
    if (!std::isfinite(f)) fail("{} produced a non-finite output", dev->backend());
  if (cpu) {
    Run ref = run_on(cpu, nullptr, plan, rng, 1);
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.y.size(); ++i) {
      num += (got.y[i] - ref.y[i]) * double(got.y[i] - ref.y[i]);
      den += double(ref.y[i]) * ref.y[i];
    }
    double nmse = den > 0 ? num / den : num;
    std::printf("NMSE vs cpu: %.3g (%s)\n", nmse, nmse < 1e-5 ? "ok" : "MISMATCH");
    if (nmse >= 1e-5) return 1;
  }
  std::printf("ok\n");
  return 0;
}

}  // namespace rlx::cli
