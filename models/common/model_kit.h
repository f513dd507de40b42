// C++ conveniences for model-family plugins over the C tables of plugin_abi.h: reading
// hyper-parameters from the model source, and building graphs through the core's builder.
// Header-only and compiled into each model plugin; errors are thrown as ModelError inside the
// plugin and turned into rlx_status + message at its ABI entry points (see catch_to_status).
#pragma once

#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "rlx/plugin_abi.h"

namespace rlx::model {

struct ModelError {
  rlx_status status;
  std::string message;
};

[[noreturn]] inline void fail(std::string message, rlx_status st = RLX_ERR_INVALID) {
  throw ModelError{st, std::move(message)};
}

inline void write_err(rlx_err err, const std::string& msg) {
  if (err.msg && err.cap) std::snprintf(err.msg, err.cap, "%s", msg.c_str());
}

// Runs `fn`, turning any exception into a status and a message: nothing crosses the ABI.
template <typename F>
rlx_status catch_to_status(rlx_err err, F&& fn) noexcept {
  try {
    fn();
    return RLX_OK;
  } catch (const ModelError& e) {
    write_err(err, e.message);
    return e.status;
  } catch (const std::exception& e) {
    write_err(err, e.what());
    return RLX_ERR_INTERNAL;
  } catch (...) {
    write_err(err, "unknown error");
    return RLX_ERR_INTERNAL;
  }
}

struct TensorShape {
  rlx_dtype dtype = RLX_F32;
  std::vector<int64_t> shape;
};

// The weight file as a model plugin sees it: metadata and the tensor table.
class Source {
 public:
  explicit Source(const rlx_model_source* s) : s_(s) {}

  bool is_gguf() const { return std::string(s_->format) == "gguf"; }

  std::optional<int64_t> get_int(const std::string& key) const {
    int64_t v;
    return s_->get_int(s_->ctx, key.c_str(), &v) ? std::optional<int64_t>(v) : std::nullopt;
  }
  std::optional<double> get_float(const std::string& key) const {
    double v;
    return s_->get_float(s_->ctx, key.c_str(), &v) ? std::optional<double>(v) : std::nullopt;
  }
  std::optional<std::string> get_string(const std::string& key) const {
    const char* v = nullptr;
    return s_->get_string(s_->ctx, key.c_str(), &v) && v ? std::optional<std::string>(v)
                                                         : std::nullopt;
  }
  int64_t require_int(const std::string& key) const {
    if (auto v = get_int(key)) return *v;
    fail("missing metadata key '" + key + "' (an integer)");
  }
  // An integer that may also be stored as the first element of an array (HF eos_token_id).
  std::optional<int64_t> get_int_or_first(const std::string& key) const {
    if (auto v = get_int(key)) return v;
    uint64_t n = 0;
    double d = 0;
    if (s_->get_array_len(s_->ctx, key.c_str(), &n) && n > 0 &&
        s_->get_array_float(s_->ctx, key.c_str(), 0, &d))
      return static_cast<int64_t>(d);
    return std::nullopt;
  }
  std::optional<uint64_t> array_len(const std::string& key) const {
    uint64_t n = 0;
    return s_->get_array_len(s_->ctx, key.c_str(), &n) ? std::optional<uint64_t>(n) : std::nullopt;
  }

  std::optional<TensorShape> tensor(const std::string& name) const {
    uint32_t dtype = 0, ndim = 0;
    int64_t shape[RLX_MAX_DIMS];
    if (!s_->tensor_info(s_->ctx, name.c_str(), &dtype, &ndim, shape)) return std::nullopt;
    return TensorShape{static_cast<rlx_dtype>(dtype), std::vector<int64_t>(shape, shape + ndim)};
  }
  // Throws naming the tensor when it is missing or its shape is not `expect`.
  void require_tensor(const std::string& name, const std::vector<int64_t>& expect) const {
    auto t = tensor(name);
    if (!t) fail("missing tensor '" + name + "'");
    if (t->shape != expect)
      fail("tensor '" + name + "' has shape " + shape_str(t->shape) + ", but the metadata says " +
           shape_str(expect));
  }

  static std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }

 private:
  const rlx_model_source* s_;
};

using Id = rlx_tensor_id;

struct Attrs {
  int64_t i[RLX_MAX_ATTRS] = {};
  float f[RLX_MAX_ATTRS] = {};
};

// The core's graph builder: each call is validated by the core's op registry.
class Builder {
 public:
  explicit Builder(const rlx_graph_builder* gb) : gb_(gb) {}

  Id input(const char* name, rlx_dtype dtype, std::initializer_list<int64_t> shape) {
    std::vector<int64_t> s(shape);
    Id out = 0;
    check(
        gb_->input(gb_->ctx, name, dtype, static_cast<uint32_t>(s.size()), s.data(), &out, err()));
    return out;
  }
  Id weight(const std::string& file_name) {
    Id out = 0;
    check(gb_->weight(gb_->ctx, file_name.c_str(), &out, err()));
    return out;
  }
  Id constant(const char* name, const std::vector<float>& values) {
    int64_t n = static_cast<int64_t>(values.size());
    Id out = 0;
    check(gb_->constant(gb_->ctx, name, RLX_F32, 1, &n, values.data(), &out, err()));
    return out;
  }
  Id op(const char* op_name, std::initializer_list<Id> inputs, const Attrs& a = {},
        const char* node_name = nullptr, std::initializer_list<int64_t> out_shape = {}) {
    std::vector<Id> in(inputs);
    std::vector<int64_t> shape(out_shape);
    Id out = 0;
    check(gb_->op(gb_->ctx, op_name, in.data(), static_cast<uint32_t>(in.size()), a.i, a.f,
                  shape.empty() ? nullptr : shape.data(), static_cast<uint32_t>(shape.size()),
                  node_name, &out, err()));
    return out;
  }
  void output(Id t, const char* name) { check(gb_->output(gb_->ctx, t, name, err())); }

  // ---- the ops a decoder-only transformer uses, with their attribute conventions ----
  Id embed(Id table, Id ids) { return op("embed", {table, ids}); }
  Id matmul(Id x, Id w, const char* name = nullptr) { return op("matmul", {x, w}, {}, name); }
  Id add(Id a, Id b, const char* name = nullptr) { return op("add", {a, b}, {}, name); }
  Id silu_mul(Id gate, Id up) { return op("silu_mul", {gate, up}); }
  Id rms_norm(Id x, Id w, float eps, const char* name = nullptr) {
    Attrs a;
    a.f[0] = eps;
    return op("rms_norm", {x, w}, a, name);
  }
  Id reshape(Id x, std::initializer_list<int64_t> shape) {
    return op("reshape", {x}, {}, nullptr, shape);
  }
  // mode 0: adjacent pairs (GGUF llama), 1: halves (HF, neox). freq_factors may be absent.
  Id rope(Id x, Id pos, float theta, int mode, std::optional<Id> freq_factors) {
    Attrs a;
    a.i[0] = mode;
    a.f[0] = theta;
    return freq_factors ? op("rope", {x, pos, *freq_factors}, a) : op("rope", {x, pos}, a);
  }
  Id kv_store(Id cache, Id x, Id pos) { return op("kv_store", {cache, x, pos}); }
  Id attention(Id q, Id k, Id v, Id pos, float scale) {
    Attrs a;
    a.f[0] = scale;
    a.i[0] = 1;
    return op("attention", {q, k, v, pos}, a);
  }
  Id slice_rows(Id x, int64_t start, int64_t count) {
    Attrs a;
    a.i[0] = start;
    a.i[1] = count;
    return op("slice", {x}, a);
  }

 private:
  rlx_err err() { return rlx_err{msg_, sizeof msg_}; }
  void check(rlx_status st) {
    if (st != RLX_OK) fail(msg_[0] ? msg_ : "graph builder call failed", st);
  }
  const rlx_graph_builder* gb_;
  char msg_[1024] = {0};
};

}  // namespace rlx::model
