// Checking a planned graph before a GPU backend compiles it, shared header-only by the in-tree
// backends (vulkan, cuda, rocm): whether each node's op, dtypes, shapes and attributes are ones
// the kernels handle (node_problem, also what supports() answers), where each slot's tensors end,
// and that views and kv_store sit on input 0's storage as ops.def's alias column says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph_desc.h"
#include "rlx/quant.h"

namespace rlx::plugin {

// What differs between backends.
struct NodeRules {
  const char* backend;                // named in messages: "vulkan"
  bool (*packed_ok)(uint32_t dtype);  // a GGUF block type its matmul / embed read in place
  int64_t max_elems;                  // every tensor has fewer elements than this
  int64_t max_head_dim;               // attention's d
  const char* rope_missing = nullptr; // non-null: why rope cannot run on this device
};

namespace detail {
struct OpInfo {
  const char* name;
  uint32_t min_in, max_in;
};
inline constexpr OpInfo kOps[] = {
#define RLX_OP(id, name, min_in, max_in, alias) {name, min_in, max_in},
#include "rlx/ops.def"
#undef RLX_OP
};
static_assert(sizeof kOps / sizeof kOps[0] == RLX_OP_BUILTIN_COUNT);
}  // namespace detail

inline const char* builtin_op_name(uint32_t op) {
  return op < RLX_OP_BUILTIN_COUNT ? detail::kOps[op].name : "?";
}

// The checks every backend shares before its own: the op's input count and the tensor indices.
// On success fills in[0 .. n_inputs) and *out.
inline std::string node_tensors(const rlx_graph_desc& g, uint32_t index,
                                const rlx_tensor_desc* in[RLX_MAX_INPUTS],
                                const rlx_tensor_desc** out) {
  if (index >= g.n_nodes || !g.nodes) return cat("node index ", index, " out of range");
  const rlx_node_desc& n = g.nodes[index];
  if (n.op >= RLX_OP_BUILTIN_COUNT) return cat("op id ", n.op, " is not a built-in op");
  const detail::OpInfo& op = detail::kOps[n.op];
  if (n.n_inputs < op.min_in || n.n_inputs > op.max_in)
    return cat(n.n_inputs, " inputs, expected ", op.min_in,
               op.min_in == op.max_in ? "" : cat(" to ", op.max_in));
  if (!g.tensors) return "graph has no tensor table";
  for (uint32_t k = 0; k < n.n_inputs; ++k)
    if (n.inputs[k] >= g.n_tensors)
      return cat("input ", k, " is tensor ", n.inputs[k], " of ", g.n_tensors);
  if (n.output >= g.n_tensors) return cat("output is tensor ", n.output, " of ", g.n_tensors);

  for (uint32_t k = 0; k < n.n_inputs; ++k) in[k] = &g.tensors[n.inputs[k]];
  *out = &g.tensors[n.output];
  return {};
}

// Whether node n's shapes and attributes fit its op, as ops.def defines it ("" if they do);
// dtypes are the backend's business. `max_head_dim` bounds attention's d.
inline std::string shape_problem(const rlx_node_desc& n, const rlx_tensor_desc* const* in,
                                 const rlx_tensor_desc& out, int64_t max_head_dim) {
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
      if (a.shape[2] > max_head_dim)
        return cat("head dim ", a.shape[2], " > ", max_head_dim, " (the kernel's limit)");
      if (n.n_inputs == 4) {  // positions: the attributes are ignored
        if (in[3]->ndim != 1 || in[3]->shape[0] != a.shape[0])
          return cat("shapes ", shapes(), ": expected one position per query row");
        return {};
      }
      if (n.iattr[0] != 0 && n.iattr[0] != 1)
        return cat("causal iattr[0] = ", n.iattr[0], ", expected 0 or 1");
      if (n.iattr[1] < 0 || n.iattr[1] > INT32_MAX / 2)
        return cat("past iattr[1] = ", n.iattr[1], " is negative or too large");
      if (n.iattr[2] < 0 || n.iattr[2] > k.shape[0])
        return cat("kv_len iattr[2] = ", n.iattr[2], " outside [0, ", k.shape[0], "]");
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
    default: break;
  }
  return cat("op ", builtin_op_name(n.op), " has no shape rule");
}

// Why node `index` of `g` cannot run on this backend ("" if it can).
inline std::string node_problem(const rlx_graph_desc& g, uint32_t index, const NodeRules& rules) {
  const rlx_tensor_desc* in[RLX_MAX_INPUTS] = {};
  const rlx_tensor_desc* outp = nullptr;
  if (auto p = node_tensors(g, index, in, &outp); !p.empty()) return p;
  const rlx_node_desc& n = g.nodes[index];
  const rlx_tensor_desc& out = *outp;
  switch (n.op) {
    case RLX_OP_ADD:
    case RLX_OP_MUL:
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SILU_MUL:
    case RLX_OP_SOFTMAX:
    case RLX_OP_RMS_NORM:
    case RLX_OP_MATMUL:
    case RLX_OP_EMBED:
    case RLX_OP_RESHAPE:
    case RLX_OP_SLICE:
    case RLX_OP_ATTENTION:
    case RLX_OP_KV_STORE:
    case RLX_OP_ARGMAX: break;
    case RLX_OP_ROPE:
      if (rules.rope_missing) return rules.rope_missing;
      break;
    default: return cat("op ", builtin_op_name(n.op), " has no ", rules.backend, " kernel yet");
  }

  // f32 everywhere (i32 for embed's ids); the views accept i32 too.
  // `dt` RLX_F16 stands for "a weight": f32, f16 or bf16.
  auto tensor_problem = [&rules](const rlx_tensor_desc& t, uint32_t dt, const char* role) {
    int64_t ne = numel(t);
    if (ne < 0) return cat(role, " has a malformed shape (ndim ", t.ndim, ")");
    if (dt == RLX_F16) {
      if (quant::is_block_quantized(static_cast<rlx_dtype>(t.dtype))) {
        if (!rules.packed_ok(t.dtype))
          return cat(role, " is ", describe(t), ": no ", rules.backend, " kernel reads ", dtype_name(t.dtype), " blocks");  // GGUF blocks along the last dim, read in place
        const int64_t be = quant::block_elems(static_cast<rlx_dtype>(t.dtype));
        const int64_t rb = quant::row_bytes(static_cast<rlx_dtype>(t.dtype), last_dim(t));
        if (t.ndim == 0 || rb < 0)
          return cat(role, " ", describe(t), ": the last dim must be a multiple of ", be);
        if (t.nbytes != static_cast<uint64_t>(rows(t) * rb))
          return cat(role, " ", describe(t), " has nbytes ", t.nbytes, ", expected ", rows(t) * rb);
        if (ne >= rules.max_elems) return cat(role, " ", describe(t), " has too many elements for the kernels' indices");
        return std::string();
      }
      if (t.dtype != RLX_F32 && t.dtype != RLX_F16 && t.dtype != RLX_BF16)
        return cat(role, " is ", describe(t), ", expected f32, f16, bf16 or a GGUF block type");
      dt = t.dtype;
    } else if (t.dtype != dt) {
      return cat(role, " is ", describe(t), ", expected ", dtype_name(dt));
    }
    const int64_t size = dt == RLX_F32 || dt == RLX_I32 ? 4 : 2;
    if (ne >= rules.max_elems) return cat(role, " ", describe(t), " has too many elements for the kernels' indices");
    if (t.nbytes != static_cast<uint64_t>(ne * size))
      return cat(role, " ", describe(t), " has nbytes ", t.nbytes, ", expected ", ne * size);
    return std::string();
  };
  const bool is_view = n.op == RLX_OP_RESHAPE || n.op == RLX_OP_SLICE;
  const uint32_t view_dt = in[0]->dtype == RLX_I32 ? RLX_I32 : RLX_F32;
  for (uint32_t k = 0; k < n.n_inputs; ++k) {
    const bool is_i32 = (n.op == RLX_OP_EMBED && k == 1) || (n.op == RLX_OP_ROPE && k == 1) ||
                        (n.op == RLX_OP_ATTENTION && k == 3) || (n.op == RLX_OP_KV_STORE && k == 2);
    const bool is_weight = (n.op == RLX_OP_MATMUL && k == 1) || (n.op == RLX_OP_EMBED && k == 0);
    const uint32_t dt = is_view    ? view_dt
                        : is_i32   ? uint32_t{RLX_I32}
                        : is_weight ? uint32_t{RLX_F16}
                                    : uint32_t{RLX_F32};
    if (auto p = tensor_problem(*in[k], dt, cat("input ", k).c_str()); !p.empty()) return p;
  }
  const uint32_t out_dt = is_view                 ? view_dt
                          : n.op == RLX_OP_ARGMAX ? uint32_t{RLX_I32}
                                                  : uint32_t{RLX_F32};
  if (auto p = tensor_problem(out, out_dt, "output"); !p.empty()) return p;

  return shape_problem(n, in, out, rules.max_head_dim);
}


// Throws Error(RLX_ERR_INVALID) unless `g` is a desc this ABI can read.
inline void check_desc(const rlx_graph_desc& g) {
  if (g.struct_size < offsetof(rlx_graph_desc, arena_alignment) + sizeof g.arena_alignment)
    fail(RLX_ERR_INVALID, "graph desc struct_size ", g.struct_size, " is smaller than this ABI's ",
         sizeof(rlx_graph_desc));
  if ((g.n_tensors && !g.tensors) || (g.n_nodes && !g.nodes))
    fail(RLX_ERR_INVALID, "graph desc has counts but null tables");
}

// What a program's tensors ask of slot s's binding, for the run-time checks.
struct SlotUse {
  uint64_t end = 0;      // max tensor.offset + tensor.nbytes
  uint32_t tensor = 0;   // the tensor that reaches `end` (named in errors)
  bool used = false;
  uint32_t align = 1;    // the bound address must be a multiple of this
  bool written = false;  // a node's output lives here (an output, or a kv_store cache)
};

// Checks every tensor's placement (arena bounds, slot index, offsets a multiple of
// align_of(dtype)) and returns what each slot needs. Throws Error(RLX_ERR_INVALID) naming the
// tensor.
template <class AlignOf>
std::vector<SlotUse> check_placement(const rlx_graph_desc& g, AlignOf align_of) {
  std::vector<SlotUse> slots(g.n_slots);
  for (uint32_t t = 0; t < g.n_tensors; ++t) {
    const rlx_tensor_desc& d = g.tensors[t];
    uint64_t end;
    if (__builtin_add_overflow(d.offset, d.nbytes, &end))
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset, " + nbytes ", d.nbytes,
           " overflows");
    const uint32_t align = align_of(d.dtype);
    if (align > 1 && d.offset % align != 0)
      fail(RLX_ERR_INVALID, "tensor ", t, ": offset ", d.offset, " is not a multiple of ", align,
           " (its element alignment)");
    if (d.storage == RLX_STORAGE_ARENA) {
      if (end > g.arena_bytes)
        fail(RLX_ERR_INVALID, "tensor ", t, ": arena offset ", d.offset, " + ", d.nbytes,
             " bytes exceeds the arena (", g.arena_bytes, " bytes)");
    } else if (d.storage == RLX_STORAGE_SLOT) {
      if (d.slot >= g.n_slots)
        fail(RLX_ERR_INVALID, "tensor ", t, ": slot ", d.slot, " of ", g.n_slots);
      SlotUse& s = slots[d.slot];
      if (!s.used || end > s.end) {
        s.end = end;
        s.tensor = t;
      }
      s.used = true;
      if (align > s.align) s.align = align;
    } else {
      fail(RLX_ERR_INVALID, "tensor ", t, ": unknown storage ", d.storage);
    }
  }
  return slots;
}

// At run time: binding `offset` into a buffer of `size` bytes must hold everything the program
// reaches in slot s. Throws Error(RLX_ERR_INVALID) naming the slot and the tensor.
inline void check_binding(uint32_t s, uint64_t offset, uint64_t size, const SlotUse& u,
                          const rlx_tensor_desc* tensors) {
  uint64_t need;
  if (!__builtin_add_overflow(offset, u.end, &need) && need <= size) return;
  if (!u.used)
    fail(RLX_ERR_INVALID, "slot ", s, ": binding offset ", offset,
         " is past the end of the buffer (", size, " bytes)");
  const rlx_tensor_desc& t = tensors[u.tensor];
  fail(RLX_ERR_INVALID, "slot ", s, " (tensor ", u.tensor, " ", describe(t), "): binding offset ",
       offset, " + tensor offset ", t.offset, " + ", t.nbytes, " bytes exceeds the buffer size ",
       size);
}

// Views compute nothing and kv_store writes into its cache in place, so their outputs must
// already be input 0's storage (as ops.def says). Throws Error(RLX_ERR_INVALID). Also marks the
// slots the program writes.
inline void check_aliases(const rlx_graph_desc& g, std::vector<SlotUse>& slots) {
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    const rlx_tensor_desc& o = g.tensors[n.output];
    if (o.storage == RLX_STORAGE_SLOT && o.slot < slots.size()) slots[o.slot].written = true;
    if (n.op != RLX_OP_RESHAPE && n.op != RLX_OP_SLICE && n.op != RLX_OP_KV_STORE) continue;
    const rlx_tensor_desc& out = g.tensors[n.output];
    const rlx_tensor_desc& in = g.tensors[n.inputs[0]];
    uint64_t offset = in.offset;
    if (n.op == RLX_OP_SLICE)
      offset += in.nbytes / static_cast<uint64_t>(in.shape[0]) * static_cast<uint64_t>(n.iattr[0]);
    bool same = out.storage == in.storage && out.offset == offset &&
                (out.storage != RLX_STORAGE_SLOT || out.slot == in.slot);
    if (!same)
      fail(RLX_ERR_INVALID, "node ", i, " (", builtin_op_name(n.op), "): its output (tensor ",
           n.output, ") must be placed on input 0's storage (tensor ", n.inputs[0],
           ") at byte offset ", offset, ", as ops.def's alias column says");
  }
}

// The buffers behind a run's bindings, one per slot, each checked against what the program
// reaches there (check_binding). `lookup(const rlx_buffer*)` is the device's Buffer& for a
// handle (it throws for an unknown one). Throws Error naming the slot.
template <class Buf, class Lookup>
std::vector<Buf*> bound_buffers(const rlx_binding* bindings, uint32_t n,
                                const std::vector<SlotUse>& slots, const rlx_tensor_desc* tensors,
                                Lookup&& lookup) {
  if (n != slots.size())
    fail(RLX_ERR_INVALID, "got ", n, " bindings, the program has ", slots.size(), " slots");
  if (n && !bindings) fail(RLX_ERR_INVALID, "null bindings array");
  std::vector<Buf*> out(n);
  for (uint32_t s = 0; s < n; ++s) {
    const rlx_binding& b = bindings[s];
    if (!b.buffer) fail(RLX_ERR_INVALID, "slot ", s, ": null buffer");
    try {
      out[s] = &lookup(b.buffer);
    } catch (const Error& e) {
      fail(e.status(), "slot ", s, ": ", e.what());
    }
    check_binding(s, b.offset, out[s]->size(), slots[s], tensors);
  }
  return out;
}

}  // namespace rlx::plugin
