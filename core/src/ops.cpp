// Built-in op definitions: arity from ops.def, shape and dtype inference here. Inference
// messages describe only the inputs; GraphBuilder adds the op, node and shapes around them.
#include "rlx/ops.h"

#include <deque>

#include "rlx/error.h"

namespace rlx {

int64_t TensorInfo::elems() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string info_str(const TensorInfo& t) {
  return fmt::format("{}{}", dtype_name(t.dtype), shape_str(t.shape));
}

namespace {

template <typename... Args>
void require(bool ok, fmt::format_string<Args...> f, Args&&... args) {
  if (!ok) fail(f, std::forward<Args>(args)...);
}

void require_f32(const TensorInfo& t, const char* what) {
  require(t.dtype == RLX_F32, "{} must be f32, got {}", what, dtype_name(t.dtype));
}

void require_rank(const TensorInfo& t, size_t rank, const char* what) {
  require(t.shape.size() == rank, "{} must have {} dims, got {}", what, rank, shape_str(t.shape));
}

int64_t last_dim(const TensorInfo& t, const char* what) {
  require(!t.shape.empty(), "{} must have at least 1 dim", what);
  return t.shape.back();
}

// A weight may be stored in any float or block-quantized type; its rows must be whole blocks.
void require_weight_rows(const TensorInfo& w, const char* what) {
  require(w.dtype != RLX_I32 && w.dtype != RLX_I8, "{} must be a float or quantized type, got {}",
          what, dtype_name(w.dtype));
  int64_t row = last_dim(w, what);
  require(row % dtype_block_elems(w.dtype) == 0,
          "{} rows of {} elements are not whole {} blocks of {}", what, row, dtype_name(w.dtype),
          dtype_block_elems(w.dtype));
}

TensorInfo same_as_input0_f32(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  require_f32(in[0], "input 0");
  last_dim(in[0], "input 0");
  return in[0];
}

TensorInfo broadcast_binary(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  const TensorInfo &a = in[0], &b = in[1];
  require_f32(a, "input 0");
  require_f32(b, "input 1");
  bool suffix = b.shape.size() <= a.shape.size() && !b.shape.empty();
  for (size_t i = 0; suffix && i < b.shape.size(); ++i)
    suffix = b.shape[b.shape.size() - 1 - i] == a.shape[a.shape.size() - 1 - i];
  require(suffix, "input 1 {} must equal input 0 {} or its trailing dims", shape_str(b.shape),
          shape_str(a.shape));
  return a;
}

TensorInfo infer_silu_mul(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  require_f32(in[0], "gate");
  require_f32(in[1], "up");
  require(in[0].shape == in[1].shape, "gate {} and up {} must have the same shape",
          shape_str(in[0].shape), shape_str(in[1].shape));
  return in[0];
}

TensorInfo infer_rms_norm(std::span<const TensorInfo> in, const NodeAttrs& a, const Shape&) {
  require_f32(in[0], "x");
  require_f32(in[1], "weight");
  int64_t d = last_dim(in[0], "x");
  require(in[1].shape == Shape{d}, "weight must be [{}] (x's last dim), got {}", d,
          shape_str(in[1].shape));
  require(a.f[0] >= 0.0f, "eps (fattr[0]) must be >= 0, got {}", a.f[0]);
  return in[0];
}

TensorInfo infer_matmul(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  const TensorInfo &x = in[0], &w = in[1];
  require_f32(x, "x");
  require_rank(w, 2, "weight");
  require_weight_rows(w, "weight");
  int64_t k = last_dim(x, "x");
  require(w.shape[1] == k, "weight {} must be [n, {}] to match x's last dim {}", shape_str(w.shape),
          k, k);
  TensorInfo out{RLX_F32, x.shape};
  out.shape.back() = w.shape[0];
  return out;
}

TensorInfo infer_embed(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  const TensorInfo &table = in[0], &ids = in[1];
  require_rank(table, 2, "table");
  require_weight_rows(table, "table");
  require(ids.dtype == RLX_I32, "ids must be i32, got {}", dtype_name(ids.dtype));
  require_rank(ids, 1, "ids");
  return TensorInfo{RLX_F32, {ids.shape[0], table.shape[1]}};
}

TensorInfo infer_rope(std::span<const TensorInfo> in, const NodeAttrs& a, const Shape&) {
  const TensorInfo &x = in[0], &pos = in[1];
  require_f32(x, "x");
  require_rank(x, 3, "x [seq, heads, head_dim]");
  require(pos.dtype == RLX_I32, "positions must be i32, got {}", dtype_name(pos.dtype));
  require(pos.shape == Shape{x.shape[0]}, "positions must be [{}] (x's seq), got {}", x.shape[0],
          shape_str(pos.shape));
  require(a.i[0] == 0 || a.i[0] == 1, "mode (iattr[0]) must be 0 (adjacent) or 1 (halves), got {}",
          a.i[0]);
  int64_t d = x.shape[2];
  int64_t r = a.i[1] == 0 ? d : a.i[1];
  require(r > 0 && r <= d && r % 2 == 0, "rotated dims (iattr[1]) {} must be even and <= {}", r, d);
  require(a.f[0] > 0.0f, "theta base (fattr[0]) must be > 0, got {}", a.f[0]);
  if (in.size() == 3) {
    require_f32(in[2], "freq_factors");
    require(in[2].shape == Shape{r / 2}, "freq_factors must be [{}], got {}", r / 2,
            shape_str(in[2].shape));
  }
  return x;
}

TensorInfo infer_attention(std::span<const TensorInfo> in, const NodeAttrs& a, const Shape&) {
  const TensorInfo &q = in[0], &k = in[1], &v = in[2];
  if (in.size() == 4) {
    require(in[3].dtype == RLX_I32, "positions must be i32, got {}", dtype_name(in[3].dtype));
    require(in[3].shape == Shape{q.shape.at(0)}, "positions must be [{}] (q's seq), got {}",
            q.shape.at(0), shape_str(in[3].shape));
  }
  require_f32(q, "q");
  require_f32(k, "k");
  require_f32(v, "v");
  require_rank(q, 3, "q [seq, heads, head_dim]");
  require_rank(k, 3, "k [kv_seq, kv_heads, head_dim]");
  require(k.shape == v.shape, "k {} and v {} must have the same shape", shape_str(k.shape),
          shape_str(v.shape));
  require(k.shape[2] == q.shape[2], "k head_dim {} must equal q head_dim {}", k.shape[2],
          q.shape[2]);
  require(k.shape[1] > 0 && q.shape[1] % k.shape[1] == 0,
          "q heads {} must be a multiple of kv heads {}", q.shape[1], k.shape[1]);
  if (in.size() == 3) {  // with positions the attributes are ignored
    require(a.i[1] >= 0, "past (iattr[1]) must be >= 0, got {}", a.i[1]);
    require(a.i[2] >= 0 && a.i[2] <= k.shape[0], "kv_len (iattr[2]) {} must be in [0, {}]", a.i[2],
            k.shape[0]);
  }
  return q;
}

TensorInfo infer_reshape(std::span<const TensorInfo> in, const NodeAttrs&, const Shape& hint) {
  require(!hint.empty(), "reshape needs a target shape");
  Shape out = hint;
  int64_t known = 1;
  int free_dim = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      require(free_dim < 0, "target shape {} has more than one -1", shape_str(hint));
      free_dim = static_cast<int>(i);
    } else {
      require(out[i] > 0, "target shape {} has a dim <= 0", shape_str(hint));
      known *= out[i];
    }
  }
  int64_t n = in[0].elems();
  if (free_dim >= 0) {
    require(known > 0 && n % known == 0, "cannot infer -1 in {} from {} elements", shape_str(hint),
            n);
    out[free_dim] = n / known;
  }
  require(TensorInfo{in[0].dtype, out}.elems() == n, "target {} has {} elements, input has {}",
          shape_str(out), TensorInfo{in[0].dtype, out}.elems(), n);
  return TensorInfo{in[0].dtype, out};
}

TensorInfo infer_argmax(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  require_f32(in[0], "input 0");
  last_dim(in[0], "input 0");
  Shape out(in[0].shape.begin(), in[0].shape.end() - 1);
  if (out.empty()) out = {1};
  return TensorInfo{RLX_I32, out};
}

TensorInfo infer_kv_store(std::span<const TensorInfo> in, const NodeAttrs&, const Shape&) {
  const TensorInfo &cache = in[0], &x = in[1], &pos = in[2];
  require_f32(cache, "cache");
  require_f32(x, "x");
  require_rank(cache, 3, "cache [capacity, heads, head_dim]");
  require_rank(x, 3, "x [seq, heads, head_dim]");
  require(x.shape[1] == cache.shape[1] && x.shape[2] == cache.shape[2],
          "x {} must match the cache's [_, {}, {}]", shape_str(x.shape), cache.shape[1],
          cache.shape[2]);
  require(pos.dtype == RLX_I32 && pos.shape == Shape{x.shape[0]},
          "positions must be i32[{}] (x's seq), got {}", x.shape[0], info_str(pos));
  return cache;
}

TensorInfo infer_slice(std::span<const TensorInfo> in, const NodeAttrs& a, const Shape&) {
  const TensorInfo& x = in[0];
  int64_t start = a.i[0], count = a.i[1];
  require(start >= 0 && count > 0 && start + count <= x.shape.at(0),
          "rows [{}, {}) (iattr[0] start, iattr[1] count) must lie within [0, {})", start,
          start + count, x.shape.at(0));
  require(!dtype_is_quantized(x.dtype) || x.shape.size() > 1, "cannot slice inside {} blocks",
          dtype_name(x.dtype));
  TensorInfo out = x;
  out.shape[0] = count;
  return out;
}

InferFn builtin_infer(uint32_t id) {
  switch (id) {
    case RLX_OP_ADD:
    case RLX_OP_MUL: return broadcast_binary;
    case RLX_OP_SCALE:
    case RLX_OP_SILU:
    case RLX_OP_SOFTMAX: return same_as_input0_f32;
    case RLX_OP_SILU_MUL: return infer_silu_mul;
    case RLX_OP_RMS_NORM: return infer_rms_norm;
    case RLX_OP_MATMUL: return infer_matmul;
    case RLX_OP_EMBED: return infer_embed;
    case RLX_OP_ROPE: return infer_rope;
    case RLX_OP_ATTENTION: return infer_attention;
    case RLX_OP_RESHAPE: return infer_reshape;
    case RLX_OP_ARGMAX: return infer_argmax;
    case RLX_OP_KV_STORE: return infer_kv_store;
    case RLX_OP_SLICE: return infer_slice;
    default: return nullptr;
  }
}

}  // namespace

OpRegistry::OpRegistry() {
#define RLX_OP(id, name, min_in, max_in, alias) \
  builtin_.push_back(                           \
      OpDef{RLX_OP_##id, name, min_in, max_in, alias, builtin_infer(RLX_OP_##id), ""});
#include "rlx/ops.def"
#undef RLX_OP
  for (const OpDef& d : builtin_)
    if (!d.infer) fail("internal: op '{}' has no shape inference", d.name);
}

OpRegistry& OpRegistry::global() {
  static OpRegistry r;
  return r;
}

namespace {
// Custom ops live in a deque so references handed out stay valid as more are added.
std::deque<OpDef>& custom_ops() {
  static std::deque<OpDef> d;
  return d;
}
}  // namespace

const OpDef& OpRegistry::get(uint32_t id) const {
  if (id < builtin_.size()) return builtin_[id];
  std::lock_guard lock(mu_);
  if (id >= RLX_OP_CUSTOM_BASE && id - RLX_OP_CUSTOM_BASE < custom_ops().size()) {
    const OpDef& d = custom_ops()[id - RLX_OP_CUSTOM_BASE];
    if (!d.infer) fail("op id {} belonged to plugin '{}', which has been unloaded", id, d.owner);
    return d;
  }
  fail("unknown op id {}", id);
}

const OpDef* OpRegistry::find(std::string_view name) const {
  for (const OpDef& d : builtin_)
    if (d.name == name) return &d;
  std::lock_guard lock(mu_);
  for (const OpDef& d : custom_ops())
    if (d.infer && d.name == name) return &d;
  return nullptr;
}

void OpRegistry::remove_owned_by(const std::string& owner) {
  if (owner.empty()) return;
  std::lock_guard lock(mu_);
  for (OpDef& d : custom_ops())
    if (d.owner == owner) d.infer = nullptr;  // a tombstone: the id stays taken
}

uint32_t OpRegistry::add(OpDef def) {
  if (def.name.empty()) fail("a custom op needs a name");
  if (!def.infer) fail("custom op '{}' needs a shape inference function", def.name);
  if (def.min_inputs < 0 || def.max_inputs < def.min_inputs || def.max_inputs > RLX_MAX_INPUTS)
    fail("custom op '{}': arity {}..{} must be within 0..{}", def.name, def.min_inputs,
         def.max_inputs, RLX_MAX_INPUTS);
  if (find(def.name)) fail("op '{}' is already registered", def.name);
  std::lock_guard lock(mu_);
  def.id = RLX_OP_CUSTOM_BASE + static_cast<uint32_t>(custom_ops().size());
  if (def.aliases_input0()) fail("custom op '{}' may be in place, not a view", def.name);
  custom_ops().push_back(std::move(def));
  return custom_ops().back().id;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const OpDef& d : builtin_) out.push_back(&d);
  std::lock_guard lock(mu_);
  for (const OpDef& d : custom_ops())
    if (d.infer) out.push_back(&d);
  return out;
}

}  // namespace rlx
