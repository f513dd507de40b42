#include "program.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "../common/graph_desc.h"
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "kernels/kernels.h"
#include "rlx/quant.h"

namespace rlx::cpu {

namespace {

// ---- op table from ops.def: name and arity, indexed by op id ----------------------------

struct OpInfo {
  const char* name;
  uint32_t min_in, max_in;
};
constexpr OpInfo kOps[] = {
#define RLX_OP(id, name, min_in, max_in, alias) {name, min_in, max_in},
#include "rlx/ops.def"
#undef RLX_OP
};
static_assert(sizeof kOps / sizeof kOps[0] == RLX_OP_BUILTIN_COUNT);

// ---- tensor helpers (numel, rows, describe, ...: plugins/common/graph_desc.h) ----------

using namespace plugin;

// Alignment the kernels need for a tensor's address: they load f32 / i32 directly and read
// f16, bf16 and blocks through memcpy.
uint64_t elem_align(uint32_t dt) {
  return dt == RLX_F32 || dt == RLX_I32 ? 4 : dt == RLX_F16 || dt == RLX_BF16 ? 2 : 1;
}

// A dtype MATMUL's weight and EMBED's table may have: f32, f16, bf16 or a GGUF block type.
bool is_weight_dtype(uint32_t dt) { return quant::block_elems(static_cast<rlx_dtype>(dt)) > 0; }

}  // namespace

// ---- what the kernels support ---------------------------------------------------------------

std::string node_problem(const rlx_graph_desc& g, uint32_t index) {
  if (index >= g.n_nodes || !g.nodes) return cat("node index ", index, " out of range");
  const rlx_node_desc& n = g.nodes[index];
  if (n.op >= RLX_OP_BUILTIN_COUNT)
    return cat("op id ", n.op, " is not a built-in op; the cpu backend has no custom ops");
  const OpInfo& op = kOps[n.op];
  if (n.n_inputs < op.min_in || n.n_inputs > op.max_in)
    return cat(n.n_inputs, " inputs, expected ", op.min_in,
               op.min_in == op.max_in ? "" : cat(" to ", op.max_in));
  if (!g.tensors) return "graph has no tensor table";
  for (uint32_t k = 0; k < n.n_inputs; ++k)
    if (n.inputs[k] >= g.n_tensors)
      return cat("input ", k, " is tensor ", n.inputs[k], " of ", g.n_tensors);
  if (n.output >= g.n_tensors) return cat("output is tensor ", n.output, " of ", g.n_tensors);

  const rlx_tensor_desc* in[RLX_MAX_INPUTS] = {};
  for (uint32_t k = 0; k < n.n_inputs; ++k) in[k] = &g.tensors[n.inputs[k]];
  const rlx_tensor_desc& out = g.tensors[n.output];

  // Every tensor: a well-formed shape, a dtype the kernels read, and bytes that match.
  auto tensor_problem = [](const rlx_tensor_desc& t, const char* role) -> std::string {
    int64_t ne = numel(t);
    if (ne < 0) return cat(role, " has a malformed shape (ndim ", t.ndim, ")");
    int64_t bytes = t.dtype == RLX_I32 ? ne * 4 : -1;
    if (is_weight_dtype(t.dtype)) {
      const auto dt = static_cast<rlx_dtype>(t.dtype);
      if (last_dim(t) % quant::block_elems(dt) != 0)
        return cat(role, " is ", describe(t), ": rows are not whole blocks of ",
                   quant::block_elems(dt));
      bytes = quant::row_bytes(dt, ne);
    }
    if (bytes < 0)
      return cat(role, " is ", describe(t),
                 ": the cpu backend reads f32, i32, f16, bf16 and the GGUF block types");
    if (t.nbytes != static_cast<uint64_t>(bytes))
      return cat(role, " ", describe(t), " has nbytes ", t.nbytes, ", expected ", bytes);
    return {};
  };
  for (uint32_t k = 0; k < n.n_inputs; ++k)
    if (auto p = tensor_problem(*in[k], cat("input ", k).c_str()); !p.empty()) return p;
  if (auto p = tensor_problem(out, "output"); !p.empty()) return p;

  // Expected dtypes: f32 everywhere except i32 ids / positions / argmax indices, packed weights
  // for MATMUL's w and EMBED's table, and any dtype for the views (output = input dtype).
  auto want = [](const rlx_tensor_desc& t, uint32_t dt, const char* role) -> std::string {
    if (t.dtype == dt) return {};
    return cat(role, " is ", describe(t), ", expected ", dtype_name(dt));
  };
  const bool is_view = n.op == RLX_OP_RESHAPE || n.op == RLX_OP_SLICE;
  std::string p;
  auto first = [&p](std::string s) {
    if (p.empty()) p = std::move(s);
  };
  for (uint32_t k = 0; !is_view && k < n.n_inputs; ++k) {
    const std::string role = cat("input ", k);
    if ((n.op == RLX_OP_MATMUL && k == 1) || (n.op == RLX_OP_EMBED && k == 0)) {
      if (!is_weight_dtype(in[k]->dtype))
        first(cat(role, " is ", describe(*in[k]), ", expected f32, f16, bf16 or a block type"));
      continue;
    }
    bool is_i32 = (n.op == RLX_OP_EMBED && k == 1) || (n.op == RLX_OP_ROPE && k == 1) ||
                  (n.op == RLX_OP_ATTENTION && k == 3) || (n.op == RLX_OP_KV_STORE && k == 2);
    first(want(*in[k], is_i32 ? RLX_I32 : RLX_F32, role.c_str()));
  }
  if (is_view)
    first(want(out, in[0]->dtype, "output"));
  else
    first(want(out, n.op == RLX_OP_ARGMAX ? RLX_I32 : RLX_F32, "output"));
  if (!p.empty()) return p;

  const rlx_tensor_desc& a = *in[0];
  auto shapes = [&] {
    std::string s;
    for (uint32_t k = 0; k < n.n_inputs; ++k) s += cat(k ? ", " : "", describe(*in[k]));
    return s + " -> " + describe(out);
  };
  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL:
      if (!same_shape(a, out) || !trailing_dims_match(a, *in[1]))
        return cat("shapes ", shapes(), ": b must be a's shape or its trailing dims");
      return {};
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SOFTMAX:
      if (!same_shape(a, out)) return cat("shapes ", shapes(), ": output must be like the input");
      return {};
    case RLX_OP_SILU_MUL:
      if (!same_shape(a, *in[1]) || !same_shape(a, out))
        return cat("shapes ", shapes(), ": gate, up and output must match");
      return {};
    case RLX_OP_RMS_NORM:
      if (!same_shape(a, out) || numel(*in[1]) != last_dim(a))
        return cat("shapes ", shapes(), ": weight must have x's last dim");
      return {};
    case RLX_OP_MATMUL: {
      const rlx_tensor_desc& w = *in[1];
      bool ok = a.ndim >= 1 && w.ndim == 2 && last_dim(a) == w.shape[1] && out.ndim == a.ndim &&
                last_dim(out) == w.shape[0] && rows(out) == rows(a);
      if (!ok) return cat("shapes ", shapes(), ": expected x [.., k] @ w [n, k]^T -> [.., n]");
      return {};
    }
    case RLX_OP_EMBED: {
      const rlx_tensor_desc& ids = *in[1];
      bool ok = a.ndim == 2 && out.ndim == ids.ndim + 1 && last_dim(out) == a.shape[1] &&
                rows(out) == numel(ids);
      if (!ok) return cat("shapes ", shapes(), ": expected table [v, d], ids [s] -> [s, d]");
      return {};
    }
    case RLX_OP_ROPE: {
      if (a.ndim != 3 || !same_shape(a, out))
        return cat("shapes ", shapes(), ": expected x [s, h, d] and an output like x");
      if (numel(*in[1]) != a.shape[0])
        return cat("shapes ", shapes(), ": expected one position per row of x");
      int64_t d = a.shape[2], r = n.iattr[1] == 0 ? d : n.iattr[1];
      if (n.iattr[0] != 0 && n.iattr[0] != 1)
        return cat("mode iattr[0] = ", n.iattr[0], ", expected 0 or 1");
      if (r < 0 || r > d || r % 2 != 0)
        return cat("rotated dims iattr[1] = ", n.iattr[1], ": must be even and <= head dim ", d);
      if (n.n_inputs == 3 && numel(*in[2]) != r / 2)
        return cat("shapes ", shapes(), ": freq_factors must have r/2 = ", r / 2, " values");
      return {};
    }
    case RLX_OP_ATTENTION: {
      const rlx_tensor_desc &k = *in[1], &v = *in[2];
      bool ok = a.ndim == 3 && k.ndim == 3 && same_shape(k, v) && same_shape(a, out) &&
                k.shape[2] == a.shape[2] && k.shape[1] > 0 && a.shape[1] % k.shape[1] == 0;
      if (!ok)
        return cat("shapes ", shapes(),
                   ": expected q [s, hq, d], k and v [t, hkv, d] with hq % hkv == 0");
      if (n.n_inputs == 4) {  // positions: the attributes are ignored
        if (in[3]->ndim != 1 || in[3]->shape[0] != a.shape[0])
          return cat("shapes ", shapes(), ": expected one position per query row");
        return {};
      }
      if (n.iattr[0] != 0 && n.iattr[0] != 1)
        return cat("causal iattr[0] = ", n.iattr[0], ", expected 0 or 1");
      if (n.iattr[1] < 0) return cat("past iattr[1] = ", n.iattr[1], " is negative");
      if (n.iattr[2] < 0 || n.iattr[2] > k.shape[0])
        return cat("kv_len iattr[2] = ", n.iattr[2], " outside [0, ", k.shape[0], "]");
      return {};
    }
    case RLX_OP_RESHAPE:
      if (a.dtype != out.dtype || a.nbytes != out.nbytes)
        return cat("shapes ", shapes(), ": a reshape keeps dtype and element count");
      return {};
    case RLX_OP_SLICE: {
      const int64_t start = n.iattr[0], count = n.iattr[1];
      if (a.ndim < 1 || start < 0 || count <= 0 || start > a.shape[0] - count)
        return cat("rows [", start, ", ", start + count, ") (iattr[0], iattr[1]) outside [0, ",
                   a.ndim ? a.shape[0] : 0, ")");
      bool ok = out.ndim == a.ndim && out.shape[0] == count;
      for (uint32_t i = 1; ok && i < a.ndim; ++i) ok = out.shape[i] == a.shape[i];
      if (!ok) return cat("shapes ", shapes(), ": expected x [n, ..] -> [", count, ", ..]");
      return {};
    }
    case RLX_OP_KV_STORE: {
      const rlx_tensor_desc &x = *in[1], &pos = *in[2];
      bool ok = a.ndim == 3 && x.ndim == 3 && x.shape[1] == a.shape[1] &&
                x.shape[2] == a.shape[2] && pos.ndim == 1 && pos.shape[0] == x.shape[0] &&
                same_shape(a, out);
      if (!ok)
        return cat("shapes ", shapes(),
                   ": expected cache [t, h, d], x [s, h, d], pos [s] -> the cache");
      return {};
    }
    case RLX_OP_ARGMAX:
      if (a.ndim < 1 || numel(out) != rows(a) || last_dim(a) < 1)
        return cat("shapes ", shapes(), ": expected a [.., n] (n > 0) -> [..]");
      return {};
  }
  return cat("op ", op.name, " has no cpu kernel");
}

// ---- compile ------------------------------------------------------------------------------

Program::Program(const rlx_graph_desc& g) {
  if (g.struct_size < offsetof(rlx_graph_desc, arena_alignment) + sizeof g.arena_alignment)
    fail(RLX_ERR_INVALID, "graph desc struct_size ", g.struct_size, " is smaller than this ABI's ",
         sizeof(rlx_graph_desc));
  if ((g.n_tensors && !g.tensors) || (g.n_nodes && !g.nodes))
    fail(RLX_ERR_INVALID, "graph desc has counts but null tables");

  tensors_.assign(g.tensors, g.tensors + g.n_tensors);
  nodes_.resize(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    nodes_[i].name = n.op_name ? n.op_name : n.op < RLX_OP_BUILTIN_COUNT ? kOps[n.op].name : "?";
    std::string why = node_problem(g, i);
    if (!why.empty()) fail(RLX_ERR_UNSUPPORTED, "node ", i, " (", nodes_[i].name, "): ", why);
    nodes_[i].desc = n;
  }
  // op_name must point at our copy; done after the loop since nodes_ no longer moves.
  for (auto& n : nodes_) n.desc.op_name = n.name.c_str();

  slots_.resize(g.n_slots);
  slot_base_.resize(g.n_slots);
  check_placement(g);
  check_aliases();
  // Always allocated (a zero-byte arena is one cache line) so every arena address is valid.
  arena_ = std::make_unique<Buffer>(g.arena_bytes,
                                    std::max<uint64_t>(g.arena_alignment, Buffer::kAlignment));
}

Program::~Program() = default;

void Program::check_placement(const rlx_graph_desc& g) {
  for (uint32_t t = 0; t < tensors_.size(); ++t) {
    const rlx_tensor_desc& d = tensors_[t];
    uint64_t end;
    if (__builtin_add_overflow(d.offset, d.nbytes, &end))
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset, " + nbytes ", d.nbytes,
           " overflows");
    uint64_t es = elem_align(d.dtype);
    if (es > 1 && d.offset % es != 0)
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset,
           " is not a multiple of its element size ", es);
    if (d.storage == RLX_STORAGE_ARENA) {
      if (end > g.arena_bytes)
        fail(RLX_ERR_INVALID, "tensor ", t, ": arena offset ", d.offset, " + ", d.nbytes,
             " bytes exceeds the arena (", g.arena_bytes, " bytes)");
    } else if (d.storage == RLX_STORAGE_SLOT) {
      if (d.slot >= g.n_slots)
        fail(RLX_ERR_INVALID, "tensor ", t, ": slot ", d.slot, " of ", g.n_slots);
      SlotUse& s = slots_[d.slot];
      if (!s.used || end > s.end) {
        s.end = end;
        s.tensor = t;
      }
      s.used = true;
      s.align = std::max<uint32_t>(s.align, static_cast<uint32_t>(es));
    } else {
      fail(RLX_ERR_INVALID, "tensor ", t, ": unknown storage ", d.storage);
    }
  }
}

// Views (reshape, slice) compute nothing and kv_store writes into its cache in place, so their
// outputs must be placed on input 0's storage: the same arena range or slot, at input 0's
// offset plus, for a slice, the rows it skips. Also notes which slots the program writes.
void Program::check_aliases() {
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const rlx_node_desc& n = nodes_[i].desc;
    const rlx_tensor_desc& out = tensors_[n.output];
    if (out.storage == RLX_STORAGE_SLOT) slots_[out.slot].written = true;
    if (n.op != RLX_OP_RESHAPE && n.op != RLX_OP_SLICE && n.op != RLX_OP_KV_STORE) continue;
    const rlx_tensor_desc& in = tensors_[n.inputs[0]];
    uint64_t offset = in.offset;
    if (n.op == RLX_OP_SLICE)
      offset += in.nbytes / static_cast<uint64_t>(in.shape[0]) * static_cast<uint64_t>(n.iattr[0]);
    bool same = out.storage == in.storage && out.offset == offset &&
                (out.storage != RLX_STORAGE_SLOT || out.slot == in.slot);
    if (!same)
      fail(RLX_ERR_INVALID, "node ", i, " (", nodes_[i].name, "): its output (tensor ", n.output,
           ") must be placed on input 0's storage (tensor ", n.inputs[0], ") at byte offset ",
           offset, ", as ops.def's alias column says");
  }
}

// ---- run ----------------------------------------------------------------------------------

uint8_t* Program::addr(uint32_t tensor) const {
  const rlx_tensor_desc& d = tensors_[tensor];
  uint8_t* base = d.storage == RLX_STORAGE_ARENA ? arena_->data() : slot_base_[d.slot];
  return base + d.offset;
}

void Program::run(Device& dev, const rlx_binding* bindings, uint32_t n_bindings) {
  std::lock_guard lk(run_mu_);
  if (n_bindings != slots_.size())
    fail(RLX_ERR_INVALID, "got ", n_bindings, " bindings, the program has ", slots_.size(),
         " slots");
  if (n_bindings && !bindings) fail(RLX_ERR_INVALID, "null bindings array");
  for (uint32_t s = 0; s < n_bindings; ++s) {
    const rlx_binding& b = bindings[s];
    if (!b.buffer) fail(RLX_ERR_INVALID, "slot ", s, ": null buffer");
    Buffer* buf;
    try {
      buf = &dev.buffer(b.buffer);
    } catch (const Error& e) {
      fail(e.status(), "slot ", s, ": ", e.what());
    }
    const SlotUse& u = slots_[s];
    uint64_t need;
    if (__builtin_add_overflow(b.offset, u.end, &need) || need > buf->size()) {
      if (!u.used)
        fail(RLX_ERR_INVALID, "slot ", s, ": binding offset ", b.offset,
             " is past the end of the buffer (", buf->size(), " bytes)");
      const rlx_tensor_desc& t = tensors_[u.tensor];
      fail(RLX_ERR_INVALID, "slot ", s, " (tensor ", u.tensor, " ", describe(t),
           "): binding offset ", b.offset, " + tensor offset ", t.offset, " + ", t.nbytes,
           " bytes exceeds the buffer size ", buf->size());
    }
    uint8_t* base = buf->data() + b.offset;
    if (reinterpret_cast<uintptr_t>(base) % u.align != 0)
      fail(RLX_ERR_INVALID, "slot ", s, ": buffer address + binding offset ", b.offset,
           " is not a multiple of ", u.align, " (the element size)");
    if (u.written && buf->read_only())
      fail(RLX_ERR_INVALID, "slot ", s,
           ": the program writes this slot but its buffer wraps read-only host memory");
    slot_base_[s] = base;
  }
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    try {
      run_node(dev, i);
    } catch (const Error& e) {
      fail(e.status(), "node ", i, " (", nodes_[i].name, "): ", e.what());
    } catch (const std::bad_alloc&) {
      fail(RLX_ERR_OUT_OF_MEMORY, "node ", i, " (", nodes_[i].name, "): out of memory");
    }
  }
}

void Program::run_node(Device& dev, uint32_t index) {
  const rlx_node_desc& n = nodes_[index].desc;
  ThreadPool& pool = dev.pool();
  const rlx_tensor_desc& a = tensors_[n.inputs[0]];
  const rlx_tensor_desc& out = tensors_[n.output];
  auto f32 = [&](uint32_t k) { return reinterpret_cast<const float*>(addr(n.inputs[k])); };
  auto i32 = [&](uint32_t k) { return reinterpret_cast<const int32_t*>(addr(n.inputs[k])); };
  float* o = reinterpret_cast<float*>(addr(n.output));
  const int64_t ne = numel(out);

  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL: {
      int64_t nb = numel(tensors_[n.inputs[1]]);
      if (ne == 0) return;
      (n.op == RLX_OP_ADD ? add_f32 : mul_f32)(pool, f32(0), f32(1), o, ne, nb);
      return;
    }
    case RLX_OP_SCALE: scale_f32(pool, f32(0), n.fattr[0], o, ne); return;
    case RLX_OP_SILU: silu_f32(pool, f32(0), o, ne); return;
    case RLX_OP_SILU_MUL: silu_mul_f32(pool, f32(0), f32(1), o, ne); return;
    case RLX_OP_SOFTMAX: softmax_f32(pool, f32(0), o, rows(a), last_dim(a)); return;
    case RLX_OP_RMS_NORM:
      rms_norm_f32(pool, f32(0), f32(1), o, rows(a), last_dim(a), n.fattr[0]);
      return;
    case RLX_OP_MATMUL: {
      const rlx_tensor_desc& w = tensors_[n.inputs[1]];
      if (w.dtype == RLX_F32)
        matmul_f32(pool, f32(0), f32(1), o, rows(a), w.shape[0], w.shape[1]);
      else if (rows(a) < 8 && gemv_16bit_supported(w.dtype))
        gemv_16bit(pool, f32(0), addr(n.inputs[1]), w.dtype, o, rows(a), w.shape[0], w.shape[1]);
      else if (dev.quantize_activations() && matmul_q8_supported(w.dtype, w.shape[1]))
        matmul_q8(pool, dev.scratch(), f32(0), addr(n.inputs[1]), w.dtype, o, rows(a), w.shape[0],
                  w.shape[1]);
      else
        matmul_packed(pool, f32(0), addr(n.inputs[1]), w.dtype, o, rows(a), w.shape[0], w.shape[1]);
      return;
    }
    case RLX_OP_EMBED: {
      const int64_t s = numel(tensors_[n.inputs[1]]);
      if (a.dtype == RLX_F32)
        embed_f32(pool, f32(0), a.shape[0], a.shape[1], i32(1), s, o);
      else
        embed_packed(pool, addr(n.inputs[0]), a.dtype, a.shape[0], a.shape[1], i32(1), s, o);
      return;
    }
    case RLX_OP_ROPE: {
      RopeParams p;
      p.s = a.shape[0];
      p.h = a.shape[1];
      p.d = a.shape[2];
      p.r = n.iattr[1] == 0 ? p.d : n.iattr[1];
      p.mode = static_cast<int>(n.iattr[0]);
      p.theta = n.fattr[0];
      rope_f32(pool, f32(0), i32(1), n.n_inputs == 3 ? f32(2) : nullptr, o, p);
      return;
    }
    case RLX_OP_ATTENTION: {
      const rlx_tensor_desc& k = tensors_[n.inputs[1]];
      AttentionParams p;
      p.s = a.shape[0];
      p.hq = a.shape[1];
      p.d = a.shape[2];
      p.t = k.shape[0];
      p.hkv = k.shape[1];
      p.causal = n.iattr[0] == 1;
      p.past = n.iattr[1];
      p.kv_len = n.iattr[2] == 0 ? p.t : n.iattr[2];
      p.scale = n.fattr[0];
      p.pos = n.n_inputs == 4 ? i32(3) : nullptr;
      attention_f32(pool, f32(0), f32(1), f32(2), o, p);
      return;
    }
    case RLX_OP_RESHAPE:
    case RLX_OP_SLICE:
      return;  // views: the output already is input 0's storage (checked at compile)
    case RLX_OP_KV_STORE: {
      // The output is the cache (checked at compile): write the rows through it.
      const rlx_tensor_desc& x = tensors_[n.inputs[1]];
      kv_store_f32(o, a.shape[0], f32(1), i32(2), x.shape[0], a.shape[1] * a.shape[2]);
      return;
    }
    case RLX_OP_ARGMAX:
      argmax_f32(pool, f32(0), reinterpret_cast<int32_t*>(o), rows(a), last_dim(a));
      return;
  }
  fail(RLX_ERR_INTERNAL, "op ", n.op, " has no cpu kernel");
}

}  // namespace rlx::cpu
