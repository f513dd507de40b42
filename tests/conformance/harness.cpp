#include "harness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <exception>
#include <optional>

#include "compare.h"
#include "rlx/dtype.h"
#include "rlx/graph.h"

namespace rlx::conformance {

Prepared prepare(const Case& c, uint64_t seed) {
  Prepared p;
  p.c = &c;
  try {
    p.inputs = make_inputs(c, seed);
    p.ref = reference(c, p.inputs);

    const OpDef* def = OpRegistry::global().find(c.op);
    if (!def) throw std::runtime_error(fmt::format("the core has no op named '{}'", c.op));
    GraphBuilder gb;
    std::vector<TensorId> ids;
    for (const InputSpec& s : c.inputs)
      ids.push_back(s.weight ? gb.weight(s.name, s.dtype, s.shape)
                             : gb.input(s.name, s.dtype, s.shape));
    TensorId out;
    NodeAttrs wrap_scale;
    wrap_scale.f[0] = kWrapScale;
    if (c.wrap == Wrap::ScaleBefore) {
      TensorId s = gb.op(RLX_OP_SCALE, {ids[0]}, wrap_scale, "wrap");
      std::vector<TensorId> in = ids;
      in[0] = s;
      out = gb.op(def->id, in, c.attrs, "out", c.out_hint);
    } else if (c.wrap == Wrap::ScaleAfter) {
      TensorId t = gb.op(def->id, ids, c.attrs, "under_test", c.out_hint);
      out = gb.op(RLX_OP_SCALE, {t}, wrap_scale, "out");
    } else if (c.wrap == Wrap::IntoAttention) {
      // k_cache, k, pos, v_cache, v, q (see Wrap)
      TensorId kc = gb.op(def->id, {ids.at(0), ids.at(1), ids.at(2)}, {}, "k_store");
      TensorId vc = gb.op(def->id, {ids.at(3), ids.at(4), ids.at(2)}, {}, "v_store");
      out = gb.op(RLX_OP_ATTENTION, {ids.at(5), kc, vc, ids.at(2)}, c.attrs, "out");
    } else {
      out = gb.op(def->id, ids, c.attrs, "out", c.out_hint);
    }
    gb.output(out, "out");
    p.planned = std::make_unique<PlannedGraph>(plan_graph(gb.finish()));

    const Graph& g = p.planned->graph;
    for (TensorId t : ids) p.input_slots.push_back(uint32_t(g.slot_of(t)));
    p.out_slot = uint32_t(g.slot_of(out));
    p.out_info = g.tensors[out].info;
    // The core's shape inference and the reference's idea of the output must agree.
    if (p.out_info.shape != p.ref.shape)
      p.error = fmt::format("core infers output {}, the reference expects {}",
                            shape_str(p.out_info.shape), shape_str(p.ref.shape));
    if ((p.out_info.dtype == RLX_I32) != p.ref.is_int)
      p.error = fmt::format("core infers output dtype {}", dtype_name(p.out_info.dtype));
  } catch (const std::exception& e) {
    p.error = fmt::format("building the case: {}", e.what());
  }
  return p;
}

namespace {

// One guarded device buffer and the image we wrote into it. `host` is the memory a zero-copy
// buffer wraps; it is declared first so it outlives `buf`.
struct Bound {
  std::vector<uint8_t> host;
  Buffer buf;
  std::vector<uint8_t> image;
  uint64_t payload = 0;
};

// `zero_copy`: wrap a host copy of the image (buffer_from_host, as weights are bound straight
// from the mmap'd file) when the backend offers it; else allocate and upload.
Bound bind_guarded(Device& dev, const void* data, uint64_t bytes, bool zero_copy = false) {
  Bound b;
  b.image = guarded(data, bytes);
  b.payload = bytes;
  if (zero_copy) {
    b.host = b.image;
    if (std::optional<Buffer> w = dev.wrap_host(b.host.data(), b.host.size())) {
      b.buf = std::move(*w);
      return b;
    }
    b.host.clear();
  }
  b.buf = dev.alloc(b.image.size());
  b.buf.write(0, b.image.data(), b.image.size());
  return b;
}

// "" when the f32 payload at `bytes` equals `want` exactly, else which elements differ.
std::string compare_f32(const uint8_t* bytes, const std::vector<double>& want) {
  size_t wrong = 0, first = 0;
  float first_got = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    float v;
    std::memcpy(&v, bytes + 4 * k, 4);
    if (double(v) != want[k] && wrong++ == 0) {
      first = k;
      first_got = v;
    }
  }
  if (wrong == 0) return {};
  return fmt::format("{} of {} values differ, first at element {}: got {}, expected {}", wrong,
                     want.size(), first, first_got, want[first]);
}

std::vector<uint8_t> read_all(const Bound& b) {
  std::vector<uint8_t> back(b.image.size());
  b.buf.read(0, back.data(), back.size());
  return back;
}

}  // namespace

RunResult run_case(Device& dev, const Prepared& p) {
  RunResult r;
  // Every node must be supported: a wrapped case needs scale as well as the op under test.
  for (uint32_t n = 0; n < p.planned->nodes.size(); ++n)
    if (!dev.supports(*p.planned, n)) {
      r.status = RunResult::Status::Unsupported;
      return r;
    }
  std::string stage = "compile";
  try {
    Program prog = dev.compile(*p.planned);
    std::vector<rlx_binding> bindings(p.planned->graph.slots.size(), rlx_binding{nullptr, 0});

    stage = "upload";
    std::vector<Bound> in;
    for (size_t k = 0; k < p.inputs.size(); ++k) {
      in.push_back(
          bind_guarded(dev, p.inputs[k].data(), p.inputs[k].bytes(), p.c->inputs[k].weight));
      bindings.at(p.input_slots[k]) = rlx_binding{in.back().buf.handle(), kGuardBytes};
    }
    // The output starts as all-ones bytes (NaN for f32, -1 for i32), so an element the kernel
    // never writes shows up as a failure instead of a lucky zero.
    uint64_t out_bytes = dtype_bytes(p.out_info.dtype, p.out_info.elems());
    std::vector<uint8_t> unset(out_bytes, 0xFF);
    Bound out = bind_guarded(dev, unset.data(), out_bytes);
    bindings.at(p.out_slot) = rlx_binding{out.buf.handle(), kGuardBytes};

    stage = "run";
    try {
      prog.run(bindings);
    } catch (const std::exception& e) {
      r.run_error = e.what();
      if (r.run_error.empty()) r.run_error = "(error without a message)";
    }

    stage = "read back";
    std::vector<uint8_t> back = read_all(out);
    if (std::string g = check_guards(back, out_bytes); !g.empty())
      r.damage.push_back("output " + g);
    r.out.resize(size_t(p.out_info.elems()));
    const uint8_t* payload = back.data() + kGuardBytes;
    for (size_t k = 0; k < r.out.size(); ++k) {
      if (p.out_info.dtype == RLX_I32) {
        int32_t v;
        std::memcpy(&v, payload + 4 * k, 4);
        r.out[k] = v;
      } else {
        float v;
        std::memcpy(&v, payload + 4 * k, 4);
        r.out[k] = v;
      }
    }
    for (size_t k = 0; k < in.size(); ++k) {
      std::vector<uint8_t> now = read_all(in[k]);
      const std::string& name = p.c->inputs[k].name;
      if (std::string g = check_guards(now, in[k].payload); !g.empty())
        r.damage.push_back(fmt::format("input '{}' {}", name, g));
      const bool updated = k < p.ref.inputs_after.size() && !p.ref.inputs_after[k].empty();
      if (updated && r.run_error.empty()) {
        // An update op's target (a kv cache): exactly the expected values, f32.
        if (std::string d = compare_f32(now.data() + kGuardBytes, p.ref.inputs_after[k]);
            !d.empty())
          r.damage.push_back(fmt::format("input '{}' after the run: {}", name, d));
        continue;
      }
      if (std::memcmp(now.data() + kGuardBytes, in[k].image.data() + kGuardBytes, in[k].payload) !=
          0) {
        uint64_t at = 0;
        while (now[kGuardBytes + at] == in[k].image[kGuardBytes + at]) ++at;
        r.damage.push_back(
            fmt::format("input '{}' was modified (first changed byte {})", name, at));
      }
    }
    r.status = RunResult::Status::Ran;
  } catch (const std::exception& e) {
    r.status = RunResult::Status::Broken;
    r.broken = fmt::format("{}: {}", stage, e.what());
  }
  return r;
}

}  // namespace rlx::conformance
