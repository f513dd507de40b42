#include "program.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "../common/graph_check.h"
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "kernels/kernels.h"
#include "rlx/quant.h"

namespace rlx::cpu {

namespace {

// ---- tensor helpers (numel, rows, describe, ...: plugins/common/graph_desc.h) ----------

using namespace plugin;

// Alignment the kernels need for a tensor's address: they load f32 / i32 directly and read
// f16, bf16 and blocks through memcpy.
uint32_t elem_align(uint32_t dt) {
  return dt == RLX_F32 || dt == RLX_I32 ? 4 : dt == RLX_F16 || dt == RLX_BF16 ? 2 : 1;
}

// A dtype MATMUL's weight and EMBED's table may have: f32, f16, bf16 or a GGUF block type.
bool is_weight_dtype(uint32_t dt) { return quant::block_elems(static_cast<rlx_dtype>(dt)) > 0; }

}  // namespace

// ---- what the kernels support ---------------------------------------------------------------

std::string node_problem(const rlx_graph_desc& g, uint32_t index) {
  const rlx_tensor_desc* in[RLX_MAX_INPUTS] = {};
  const rlx_tensor_desc* outp = nullptr;
  if (auto p = node_tensors(g, index, in, &outp); !p.empty()) return p;
  const rlx_node_desc& n = g.nodes[index];
  const rlx_tensor_desc& out = *outp;

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

  return shape_problem(n, in, out, INT64_MAX);  // no head-dim limit here
}

// ---- compile ------------------------------------------------------------------------------

Program::Program(const rlx_graph_desc& g) {
  check_desc(g);

  tensors_.assign(g.tensors, g.tensors + g.n_tensors);
  nodes_.resize(g.n_nodes);
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    nodes_[i].name = n.op_name ? n.op_name : builtin_op_name(n.op);
    std::string why = node_problem(g, i);
    if (!why.empty()) fail(RLX_ERR_UNSUPPORTED, "node ", i, " (", nodes_[i].name, "): ", why);
    nodes_[i].desc = n;
  }
  // op_name must point at our copy; done after the loop since nodes_ no longer moves.
  for (auto& n : nodes_) n.desc.op_name = n.name.c_str();

  slots_ = check_placement(g, elem_align);
  slot_base_.resize(g.n_slots);
  check_aliases(g, slots_);
  // Always allocated (a zero-byte arena is one cache line) so every arena address is valid.
  arena_ = std::make_unique<Buffer>(g.arena_bytes,
                                    std::max<uint64_t>(g.arena_alignment, Buffer::kAlignment));
}

Program::~Program() = default;

// ---- run ----------------------------------------------------------------------------------

uint8_t* Program::addr(uint32_t tensor) const {
  const rlx_tensor_desc& d = tensors_[tensor];
  uint8_t* base = d.storage == RLX_STORAGE_ARENA ? arena_->data() : slot_base_[d.slot];
  return base + d.offset;
}

void Program::run(Device& dev, const rlx_binding* bindings, uint32_t n_bindings) {
  std::lock_guard lk(run_mu_);
  const std::vector<Buffer*> bufs = bound_buffers<Buffer>(
      bindings, n_bindings, slots_, tensors_.data(),
      [&](const rlx_buffer* h) -> Buffer& { return dev.buffer(h); });
  for (uint32_t s = 0; s < n_bindings; ++s) {
    const rlx_binding& b = bindings[s];
    Buffer* buf = bufs[s];
    const SlotUse& u = slots_[s];
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
