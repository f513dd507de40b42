// The sample third-party backend: host-memory buffers and two f32 ops (add, scale). It uses
// only rlx/plugin_abi.h, as any out-of-tree plugin must.
#include <rlx/plugin_abi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

struct rlx_buffer {
  std::vector<unsigned char> bytes;
};
struct rlx_program {
  std::vector<rlx_tensor_desc> tensors;
  std::vector<rlx_node_desc> nodes;
  std::vector<unsigned char> arena;
};
struct rlx_device {
  int unused = 0;
};

namespace {

rlx_device g_device;

rlx_status fail(rlx_err err, rlx_status st, const char* msg) {
  if (err.msg && err.cap) std::snprintf(err.msg, err.cap, "sample: %s", msg);
  return st;
}

rlx_status init(const rlx_host_api*, rlx_err) { return RLX_OK; }
void shutdown() {}

rlx_status device_count(uint32_t* n, rlx_err) {
  *n = 1;
  return RLX_OK;
}

rlx_status device_info(uint32_t, rlx_device_info* out, rlx_err) {
  out->type = RLX_DEVICE_VIRTUAL;
  std::snprintf(out->name, sizeof out->name, "sample host device");
  std::snprintf(out->capabilities, sizeof out->capabilities, "f32 add scale");
  return RLX_OK;
}

rlx_status device_open(uint32_t, const rlx_device_options*, rlx_device** out, rlx_err) {
  *out = &g_device;
  return RLX_OK;
}
void device_close(rlx_device*) {}

rlx_status buffer_alloc(rlx_device*, uint64_t bytes, rlx_buffer** out, rlx_err err) {
  auto* b = new (std::nothrow) rlx_buffer;
  if (!b) return fail(err, RLX_ERR_OUT_OF_MEMORY, "out of host memory");
  b->bytes.resize(bytes);
  *out = b;
  return RLX_OK;
}
void buffer_free(rlx_device*, rlx_buffer* b) { delete b; }

rlx_status buffer_write(rlx_device*, rlx_buffer* b, uint64_t off, const void* src, uint64_t n,
                        rlx_err err) {
  if (off + n > b->bytes.size()) return fail(err, RLX_ERR_INVALID, "write past end of buffer");
  std::memcpy(b->bytes.data() + off, src, n);
  return RLX_OK;
}
rlx_status buffer_read(rlx_device*, rlx_buffer* b, uint64_t off, void* dst, uint64_t n,
                       rlx_err err) {
  if (off + n > b->bytes.size()) return fail(err, RLX_ERR_INVALID, "read past end of buffer");
  std::memcpy(dst, b->bytes.data() + off, n);
  return RLX_OK;
}

bool supports(rlx_device*, const rlx_graph_desc* g, uint32_t node) {
  const rlx_node_desc& n = g->nodes[node];
  if (n.op != RLX_OP_ADD && n.op != RLX_OP_SCALE) return false;
  for (uint32_t i = 0; i < n.n_inputs; ++i)
    if (g->tensors[n.inputs[i]].dtype != RLX_F32) return false;
  return true;
}

rlx_status program_compile(rlx_device* dev, const rlx_graph_desc* g, rlx_program** out,
                           rlx_err err) {
  for (uint32_t i = 0; i < g->n_nodes; ++i)
    if (!supports(dev, g, i)) return fail(err, RLX_ERR_UNSUPPORTED, "only add and scale");
  auto* p = new (std::nothrow) rlx_program;
  if (!p) return fail(err, RLX_ERR_OUT_OF_MEMORY, "out of host memory");
  p->tensors.assign(g->tensors, g->tensors + g->n_tensors);
  p->nodes.assign(g->nodes, g->nodes + g->n_nodes);
  p->arena.resize(g->arena_bytes);
  *out = p;
  return RLX_OK;
}

rlx_status program_run(rlx_device*, rlx_program* p, const rlx_binding* b, uint32_t nb,
                       rlx_err err) {
  auto addr = [&](uint32_t t) -> float* {
    const rlx_tensor_desc& d = p->tensors[t];
    unsigned char* base =
        d.storage == RLX_STORAGE_ARENA
            ? p->arena.data()
            : (d.slot < nb ? b[d.slot].buffer->bytes.data() + b[d.slot].offset : nullptr);
    return base ? reinterpret_cast<float*>(base + d.offset) : nullptr;
  };
  for (const rlx_node_desc& n : p->nodes) {
    float* y = addr(n.output);
    const float* a = addr(n.inputs[0]);
    if (!y || !a) return fail(err, RLX_ERR_INVALID, "missing binding");
    size_t count = p->tensors[n.output].nbytes / sizeof(float);
    if (n.op == RLX_OP_SCALE) {
      for (size_t i = 0; i < count; ++i) y[i] = a[i] * n.fattr[0];
    } else {
      const float* c = addr(n.inputs[1]);
      size_t cn = p->tensors[n.inputs[1]].nbytes / sizeof(float);  // broadcast over rows
      for (size_t i = 0; i < count; ++i) y[i] = a[i] + c[i % cn];
    }
  }
  return RLX_OK;
}
void program_free(rlx_device*, rlx_program* p) { delete p; }

const rlx_backend_api kApi = {sizeof(rlx_backend_api),
                              init,
                              shutdown,
                              device_count,
                              device_info,
                              device_open,
                              device_close,
                              buffer_alloc,
                              buffer_free,
                              buffer_write,
                              buffer_read,
                              supports,
                              program_compile,
                              program_run,
                              program_free,
                              {}};

const rlx_plugin_info kInfo = {RLX_ABI_MAJOR,
                               RLX_ABI_MINOR,
                               sizeof(rlx_plugin_info),
                               RLX_PLUGIN_BACKEND,
                               "sample",
                               "",
                               "1.0.0",
                               "third-party sample backend built out of tree",
                               nullptr,
                               &kApi,
                               {}};

}  // namespace

extern "C" RLX_PLUGIN_EXPORT const rlx_plugin_info* rlx_plugin_query(uint32_t host_abi_major) {
  return host_abi_major == RLX_ABI_MAJOR ? &kInfo : nullptr;
}
