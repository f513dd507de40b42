#include "program.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "buffer.h"
#include "device.h"
#include "error.h"
#include "kernels/kernels.h"

namespace rlx::gpu {

namespace {

// numel, rows, describe, node_problem, ...: plugins/common/graph_desc.h, graph_check.h
using namespace plugin;

}  // namespace

std::string node_problem(const rlx_graph_desc& g, uint32_t index) {
  static const NodeRules rules{
      .backend = RLX_GPU_NAME,
      .packed_ok = weight_supported,
      .max_elems = int64_t{1} << 40,
      .max_head_dim = 256,
  };
  return plugin::node_problem(g, index, rules);
}

// ---- compile ------------------------------------------------------------------------------

Program::Program(Device& dev, const rlx_graph_desc& g) : dev_(dev) {
  check_desc(g);

  tensors_.assign(g.tensors, g.tensors + g.n_tensors);
  nodes_.resize(g.n_nodes);
  size_t scratch = 0;
  for (uint32_t i = 0; i < g.n_nodes; ++i) {
    const rlx_node_desc& n = g.nodes[i];
    nodes_[i].name = n.op_name ? n.op_name : builtin_op_name(n.op);
    std::string why = node_problem(g, i);
    if (!why.empty()) fail(RLX_ERR_UNSUPPORTED, "node ", i, " (", nodes_[i].name, "): ", why);
    nodes_[i].desc = n;
    if (n.op == RLX_OP_MATMUL) {
      const rlx_tensor_desc &x = tensors_[n.inputs[0]], &w = tensors_[n.inputs[1]];
      scratch = std::max(scratch, matmul_scratch_bytes(w.dtype, rows(x), last_dim(x), dev_.caps()));
    }
  }
  for (auto& n : nodes_) n.desc.op_name = n.name.c_str();
  slots_ = check_placement(g, [](uint32_t) { return 4u; });  // kernels address 4-byte words
  check_aliases(g, slots_);

  const char* graphs = std::getenv("RLX_CUDA_GRAPHS");
  use_graphs_ = !(graphs && std::strcmp(graphs, "0") == 0);

  dev_.activate();
  arena_ = std::make_unique<Buffer>(g.arena_bytes);
  if (scratch) scratch_ = std::make_unique<Buffer>(scratch);
  err_ = std::make_unique<Buffer>(2 * sizeof(uint32_t));
  void* host = nullptr;
  cuda_check(cudaMallocHost(&host, 2 * sizeof(uint32_t)), "cudaMallocHost");
  err_host_ = static_cast<uint32_t*>(host);
}

Program::~Program() {
  try {
    dev_.activate();
  } catch (...) {
  }
  drop_graph();
  if (err_host_) (void)cudaFreeHost(err_host_);
}

void Program::drop_graph() {
  if (graph_) (void)cudaGraphExecDestroy(graph_);
  graph_ = nullptr;
}

// ---- run ----------------------------------------------------------------------------------

char* Program::where(uint32_t tensor, const std::vector<char*>& slots) const {
  const rlx_tensor_desc& d = tensors_[tensor];
  return (d.storage == RLX_STORAGE_ARENA ? arena_->ptr() : slots[d.slot]) + d.offset;
}

void Program::enqueue(const std::vector<char*>& slots) {
  const cudaStream_t st = dev_.stream();
  const Caps& caps = dev_.caps();
  cuda_check(cudaMemsetAsync(err_->ptr(), 0, 2 * sizeof(uint32_t), st), "cudaMemsetAsync");
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const rlx_node_desc& n = nodes_[i].desc;
    auto in = [&](uint32_t k) { return reinterpret_cast<float*>(where(n.inputs[k], slots)); };
    auto in_i32 = [&](uint32_t k) { return reinterpret_cast<int32_t*>(where(n.inputs[k], slots)); };
    auto shape = [&](uint32_t k) -> const rlx_tensor_desc& { return tensors_[n.inputs[k]]; };
    float* out = reinterpret_cast<float*>(where(n.output, slots));
    const rlx_tensor_desc& a = shape(0);
    const ErrWord err{reinterpret_cast<uint32_t*>(err_->ptr()), i};
    switch (n.op) {
      case RLX_OP_ADD: add(in(0), in(1), out, numel(a), numel(shape(1)), st); break;
      case RLX_OP_MUL: mul(in(0), in(1), out, numel(a), numel(shape(1)), st); break;
      case RLX_OP_SCALE: scale(in(0), out, numel(a), n.fattr[0], st); break;
      case RLX_OP_SILU: silu(in(0), out, numel(a), st); break;
      case RLX_OP_SILU_MUL: silu_mul(in(0), in(1), out, numel(a), st); break;
      case RLX_OP_SOFTMAX: softmax(in(0), out, rows(a), last_dim(a), st); break;
      case RLX_OP_RMS_NORM: rms_norm(in(0), in(1), out, rows(a), last_dim(a), n.fattr[0], st); break;
      case RLX_OP_ARGMAX:
        argmax(in(0), reinterpret_cast<int32_t*>(out), rows(a), last_dim(a), st);
        break;
      case RLX_OP_MATMUL: {
        const rlx_tensor_desc& w = shape(1);
        matmul(in(0), where(n.inputs[1], slots), w.dtype, out, rows(a), w.shape[0], last_dim(a),
               scratch_ ? scratch_->ptr() : nullptr, caps, st);
        break;
      }
      case RLX_OP_EMBED:
        embed(where(n.inputs[0], slots), a.dtype, in_i32(1), out, numel(shape(1)), a.shape[0],
              a.shape[1], err, st);
        break;
      case RLX_OP_ROPE:
        rope(in(0), in_i32(1), n.n_inputs == 3 ? in(2) : nullptr, out, a.shape[0], a.shape[1],
             a.shape[2], n.iattr[1] ? n.iattr[1] : a.shape[2], static_cast<int>(n.iattr[0]),
             n.fattr[0], st);
        break;
      case RLX_OP_ATTENTION: {
        const rlx_tensor_desc& k = shape(1);
        AttnShape s{a.shape[0], a.shape[1], k.shape[1], a.shape[2], k.shape[0], n.fattr[0]};
        s.causal = static_cast<int>(n.iattr[0]);
        s.past = n.iattr[1];
        s.kv_len = n.iattr[2];
        attention(in(0), in(1), in(2), n.n_inputs == 4 ? in_i32(3) : nullptr, out, s, st);
        break;
      }
      case RLX_OP_KV_STORE: {
        const rlx_tensor_desc& x = shape(1);
        kv_store(in(0), in(1), in_i32(2), x.shape[0], x.shape[1] * x.shape[2], a.shape[0], err, st);
        break;
      }
      case RLX_OP_RESHAPE:
      case RLX_OP_SLICE: break;  // views: placed on input 0's storage, nothing to compute
      default: fail(RLX_ERR_INTERNAL, "node ", i, " (", nodes_[i].name, ") has no launcher");
    }
    cuda_check(cudaGetLastError(), "a kernel launch");
  }
  cuda_check(cudaMemcpyAsync(err_host_, err_->ptr(), 2 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                             st),
             "cudaMemcpyAsync (error word)");
}

void Program::run(const rlx_binding* bindings, uint32_t n_bindings) {
  std::lock_guard lk(run_mu_);
  const std::vector<Buffer*> bufs = bound_buffers<Buffer>(
      bindings, n_bindings, slots_, tensors_.data(),
      [&](const rlx_buffer* h) -> Buffer& { return dev_.buffer(h); });
  std::vector<char*> cur(n_bindings);
  for (uint32_t s = 0; s < n_bindings; ++s) {
    const rlx_binding& b = bindings[s];
    Buffer* buf = bufs[s];
    if (b.offset % 4 != 0)
      fail(RLX_ERR_INVALID, "slot ", s, ": binding offset ", b.offset,
           " is not a multiple of 4 (the element size)");
    cur[s] = buf->ptr() + b.offset;
  }

  dev_.activate();
  std::lock_guard slk(dev_.stream_mutex());
  const cudaStream_t st = dev_.stream();
  const bool same = cur == last_;
  if (!same) drop_graph();
  if (same && use_graphs_ && !graph_) {
    // Second run with these bindings: capture the node sequence once and replay it from now on.
    cuda_check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture");
    cudaGraph_t g = nullptr;
    try {
      enqueue(cur);
    } catch (...) {
      (void)cudaStreamEndCapture(st, &g);
      if (g) (void)cudaGraphDestroy(g);
      throw;
    }
    cuda_check(cudaStreamEndCapture(st, &g), "cudaStreamEndCapture");
    const cudaError_t e = cudaGraphInstantiateWithFlags(&graph_, g, 0);
    (void)cudaGraphDestroy(g);
    if (e != cudaSuccess) graph_ = nullptr;
    cuda_check(e, "cudaGraphInstantiateWithFlags");
  }
  if (graph_)
    cuda_check(cudaGraphLaunch(graph_, st), "cudaGraphLaunch");
  else
    enqueue(cur);
  last_ = std::move(cur);
  cuda_check(cudaStreamSynchronize(st), "cudaStreamSynchronize (running the program)");

  if (err_host_[0] != 0) {
    const uint32_t i = err_host_[0] - 1;
    const rlx_node_desc& n = nodes_[i < nodes_.size() ? i : 0].desc;
    const int32_t bad = static_cast<int32_t>(err_host_[1]);
    if (n.op == RLX_OP_KV_STORE)
      fail(RLX_ERR_INVALID, "node ", i, " (", n.op_name, "): position ", bad,
           " outside the cache's [0, ", tensors_[n.inputs[0]].shape[0],
           ") rows; the cache is unchanged");
    fail(RLX_ERR_INVALID, "node ", i, " (", n.op_name, "): id ", bad, " is outside the table's [0, ",
         tensors_[n.inputs[0]].shape[0], ") rows");
  }
}

}  // namespace rlx::gpu
