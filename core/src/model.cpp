// Model loading: open the weight file, find the family plugin for its architecture, let the
// plugin read the config; and the bridge that lets the plugin build graphs with GraphBuilder.
#include "rlx/model.h"

#include <cstring>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx {
namespace {

constexpr uint64_t kAutoPackBytes = 256ull << 20;

void write_err(rlx_err err, const std::string& msg) {
  if (!err.msg || err.cap == 0) return;
  size_t n = std::min(msg.size(), err.cap - 1);
  std::memcpy(err.msg, msg.data(), n);
  err.msg[n] = '\0';
}

// Runs fn, turning an exception into RLX_ERR_INVALID and its message.
template <typename F>
rlx_status guarded(rlx_err err, F&& fn) noexcept {
  try {
    fn();
    return RLX_OK;
  } catch (const std::exception& e) {
    write_err(err, e.what());
    return RLX_ERR_INVALID;
  }
}

// ---- rlx_model_source over a WeightFile ----

struct SourceCtx {
  const WeightFile* file;
};

const MetaValue* meta(void* ctx, const char* key) {
  return static_cast<SourceCtx*>(ctx)->file->meta(key);
}

bool src_get_int(void* ctx, const char* key, int64_t* out) {
  const MetaValue* v = meta(ctx, key);
  if (!v) return false;
  auto i = v->as_int();
  if (!i) return false;
  *out = *i;
  return true;
}
bool src_get_float(void* ctx, const char* key, double* out) {
  const MetaValue* v = meta(ctx, key);
  auto f = v ? v->as_float() : std::nullopt;
  if (f) *out = *f;
  return f.has_value();
}
bool src_get_string(void* ctx, const char* key, const char** out) {
  const MetaValue* v = meta(ctx, key);
  const std::string* s = v ? v->as_string() : nullptr;
  if (s) *out = s->c_str();
  return s != nullptr;
}
bool src_get_array_len(void* ctx, const char* key, uint64_t* out) {
  const MetaValue* v = meta(ctx, key);
  const auto* a = v ? v->as_array() : nullptr;
  if (a) *out = a->size();
  return a != nullptr;
}
bool src_get_array_float(void* ctx, const char* key, uint64_t i, double* out) {
  const MetaValue* v = meta(ctx, key);
  const auto* a = v ? v->as_array() : nullptr;
  if (!a || i >= a->size()) return false;
  auto f = (*a)[i].as_float();
  if (f) *out = *f;
  return f.has_value();
}
bool src_tensor_info(void* ctx, const char* name, uint32_t* dtype, uint32_t* ndim,
                     int64_t shape[RLX_MAX_DIMS]) {
  const TensorEntry* t = static_cast<SourceCtx*>(ctx)->file->find(name);
  if (!t || t->shape.size() > RLX_MAX_DIMS) return false;
  *dtype = t->dtype;
  *ndim = static_cast<uint32_t>(t->shape.size());
  for (size_t i = 0; i < t->shape.size(); ++i) shape[i] = t->shape[i];
  return true;
}

std::string architecture_of(const WeightFile& f) {
  const char* key = f.format() == "gguf" ? "general.architecture" : "model_type";
  const MetaValue* v = f.meta(key);
  const std::string* s = v ? v->as_string() : nullptr;
  if (!s)
    fail("{}: no '{}' in the {}: cannot tell which model family this is", f.path().string(), key,
         f.format() == "gguf" ? "GGUF metadata" : "config.json");
  return *s;
}

}  // namespace

// ---- rlx_graph_builder over GraphBuilder ----

struct GraphBuilderBridge {
  const Model* model;
  GraphBuilder gb;

  static GraphBuilderBridge& of(void* ctx) { return *static_cast<GraphBuilderBridge*>(ctx); }

  static Shape shape_of(uint32_t ndim, const int64_t* shape) {
    if (ndim > RLX_MAX_DIMS) fail("{} dims; at most {}", ndim, RLX_MAX_DIMS);
    return Shape(shape, shape + ndim);
  }

  static rlx_status input(void* ctx, const char* name, uint32_t dtype, uint32_t ndim,
                          const int64_t* shape, rlx_tensor_id* out, rlx_err err) {
    return guarded(err, [&] {
      if (!dtype_is_known(dtype)) fail("input '{}': unknown dtype {}", name, dtype);
      *out = of(ctx).gb.input(name, static_cast<DType>(dtype), shape_of(ndim, shape));
    });
  }

  // A weight from the file. Matrices keep the file's dtype when packed; everything else (and
  // every matrix when not packed) is converted to f32 at upload.
  static rlx_status weight(void* ctx, const char* name, rlx_tensor_id* out, rlx_err err) {
    return guarded(err, [&] {
      const Model& m = *of(ctx).model;
      const TensorEntry* t = m.file_->find(name);
      if (!t)
        fail("{}: the model needs tensor '{}', which the file does not have",
             m.file_->path().string(), name);
      bool keep = t->dtype == RLX_F32 || (m.packed_ && t->shape.size() == 2);
      WeightSource src{keep ? t->dtype : RLX_F32, t->shape, t->dtype, t->data, t->nbytes};
      m.weights_.emplace(name, src);
      *out = of(ctx).gb.weight(name, src.dtype, src.shape);
    });
  }

  static rlx_status constant(void* ctx, const char* name, uint32_t dtype, uint32_t ndim,
                             const int64_t* shape, const void* data, rlx_tensor_id* out,
                             rlx_err err) {
    return guarded(err, [&] {
      const Model& m = *of(ctx).model;
      if (!dtype_is_known(dtype) || dtype_is_quantized(static_cast<DType>(dtype)))
        fail("constant '{}': dtype {} is not a plain type", name, dtype);
      Shape s = shape_of(ndim, shape);
      TensorInfo info{static_cast<DType>(dtype), s};
      uint64_t bytes = dtype_bytes(info.dtype, info.elems());
      std::string key = std::string("const:") + name;
      auto& buf = m.constants_[key];
      buf.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
      m.weights_.insert_or_assign(key, WeightSource{info.dtype, s, info.dtype, buf.data(), bytes});
      *out = of(ctx).gb.weight(key, info.dtype, s);
    });
  }

  static rlx_status op(void* ctx, const char* op_name, const rlx_tensor_id* inputs,
                       uint32_t n_inputs, const int64_t* iattr, const float* fattr,
                       const int64_t* out_shape, uint32_t out_ndim, const char* node_name,
                       rlx_tensor_id* out, rlx_err err) {
    return guarded(err, [&] {
      const OpDef* def = OpRegistry::global().find(op_name ? op_name : "");
      if (!def) fail("unknown op '{}'", op_name ? op_name : "(null)");
      NodeAttrs a;
      if (iattr) std::copy(iattr, iattr + RLX_MAX_ATTRS, a.i.begin());
      if (fattr) std::copy(fattr, fattr + RLX_MAX_ATTRS, a.f.begin());
      *out = of(ctx).gb.op(def->id, std::vector<TensorId>(inputs, inputs + n_inputs), a,
                           node_name ? node_name : "",
                           out_shape ? shape_of(out_ndim, out_shape) : Shape{});
    });
  }

  static rlx_status output(void* ctx, rlx_tensor_id t, const char* name, rlx_err err) {
    return guarded(err, [&] { of(ctx).gb.output(t, name ? name : ""); });
  }

  static rlx_status info(void* ctx, rlx_tensor_id t, uint32_t* dtype, uint32_t* ndim,
                         int64_t shape[RLX_MAX_DIMS], rlx_err err) {
    return guarded(err, [&] {
      const TensorInfo& i = of(ctx).gb.info(t);
      *dtype = i.dtype;
      *ndim = static_cast<uint32_t>(i.shape.size());
      std::copy(i.shape.begin(), i.shape.end(), shape);
    });
  }
};

std::unique_ptr<Model> Model::load(const PluginHost& host, const std::filesystem::path& weights,
                                   const ModelOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = WeightFile::open(weights);
  const std::string arch = architecture_of(*m->file_);
  m->plugin_ = host.model_plugin(m->file_->format(), arch);
  m->family_ = m->plugin_.name;
  m->packed_ = opts.packed.value_or(m->file_->format() == "gguf" &&
                                    m->file_->mapped_bytes() >= kAutoPackBytes);

  SourceCtx ctx{m->file_.get()};
  rlx_model_source src{sizeof(rlx_model_source),
                       &ctx,
                       m->file_->format().c_str(),
                       src_get_int,
                       src_get_float,
                       src_get_string,
                       src_get_array_len,
                       src_get_array_float,
                       src_tensor_info,
                       {}};
  m->config_.struct_size = sizeof(rlx_model_config);
  ErrBuf eb;
  rlx_status st = m->plugin_.api->load(&src, &m->handle_, &m->config_, eb.err());
  if (st != RLX_OK)
    fail("{}: the {} model plugin cannot load it: {}", weights.string(), m->family_, eb.msg);
  log().info("{}: {} ({} {}), {} layers, dim {}, vocab {}, {}", weights.string(), m->family_,
             m->file_->format(), arch, m->config_.n_layers, m->config_.dim, m->config_.vocab_size,
             m->packed_ ? "packed weights" : "f32 weights");
  return m;
}

Model::~Model() {
  if (handle_ && plugin_.api) plugin_.api->free(handle_);
}

PlannedGraph Model::forward(int64_t seq, int64_t capacity, rlx_logits_mode logits) const {
  GraphBuilderBridge bridge{this, {}};
  rlx_graph_builder gb{sizeof(rlx_graph_builder),
                       &bridge,
                       GraphBuilderBridge::input,
                       GraphBuilderBridge::weight,
                       GraphBuilderBridge::constant,
                       GraphBuilderBridge::op,
                       GraphBuilderBridge::output,
                       GraphBuilderBridge::info,
                       {}};
  rlx_forward_params p{
      sizeof(rlx_forward_params), seq, capacity, static_cast<uint32_t>(logits), {}};
  ErrBuf eb;
  rlx_status st = plugin_.api->build_forward(handle_, &gb, &p, eb.err());
  if (st != RLX_OK)
    fail("{}: building the forward graph (seq {}, cache {}): {}", family_, seq, capacity, eb.msg);
  return plan_graph(bridge.gb.finish());
}

const WeightSource& Model::weight(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) fail("the model has no weight '{}'", name);
  return it->second;
}

}  // namespace rlx
