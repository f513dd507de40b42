#include "reference.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace rlx::conformance {
namespace {

using Vec = std::vector<double>;

Vec as_double(const HostTensor& t) {
  Vec v(size_t(t.elems()));
  for (int64_t k = 0; k < t.elems(); ++k) v[k] = t.at(k);
  return v;
}

int64_t last(const HostTensor& t) { return t.shape.back(); }

Reference make_ref(Shape shape, Vec values = {}, bool is_int = false) {
  Reference r;
  r.shape = std::move(shape);
  r.values = std::move(values);
  r.is_int = is_int;
  return r;
}

// ADD / MUL: b is a's shape or a's trailing dims, repeated over a's leading rows.
Reference binary(const std::vector<HostTensor>& in, bool mul) {
  const HostTensor &a = in[0], &b = in[1];
  Reference r = make_ref(a.shape);
  int64_t nb = b.elems();
  r.values.resize(a.elems());
  for (int64_t k = 0; k < a.elems(); ++k) {
    double x = a.at(k), y = b.at(k % nb);
    r.values[k] = mul ? x * y : x + y;
  }
  return r;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

Reference softmax(const HostTensor& a) {
  Reference r = make_ref(a.shape, as_double(a));
  int64_t n = last(a);
  for (int64_t row = 0; row < a.elems() / n; ++row) {
    double* v = r.values.data() + row * n;
    double mx = v[0];
    for (int64_t j = 1; j < n; ++j) mx = std::max(mx, v[j]);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += (v[j] = std::exp(v[j] - mx));
    for (int64_t j = 0; j < n; ++j) v[j] /= sum;
  }
  return r;
}

Reference rms_norm(const HostTensor& x, const HostTensor& w, double eps) {
  Reference r = make_ref(x.shape, as_double(x));
  int64_t d = last(x);
  for (int64_t row = 0; row < x.elems() / d; ++row) {
    double* v = r.values.data() + row * d;
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += v[j] * v[j];
    double inv = 1.0 / std::sqrt(ss / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) v[j] = v[j] * inv * w.at(j);
  }
  return r;
}

// x [.., k] @ w[n, k]^T -> [.., n]
Reference matmul(const HostTensor& x, const HostTensor& w) {
  int64_t k = last(x), n = w.shape[0], rows = x.elems() / k;
  Reference r = make_ref(x.shape);
  r.shape.back() = n;
  r.values.resize(size_t(rows * n));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t o = 0; o < n; ++o) {
      double acc = 0;
      for (int64_t j = 0; j < k; ++j) acc += x.at(i * k + j) * w.at(o * k + j);
      r.values[i * n + o] = acc;
    }
  return r;
}

Reference embed(const HostTensor& table, const HostTensor& ids) {
  int64_t v = table.shape[0], d = table.shape[1], s = ids.shape[0];
  Reference r = make_ref({s, d});
  r.values.resize(size_t(s * d));
  for (int64_t i = 0; i < s; ++i) {
    int64_t id = ids.i[i];
    if (id < 0 || id >= v) {
      r.error = fmt::format("id {} at row {} is outside [0, {})", id, i, v);
      return r;
    }
    for (int64_t j = 0; j < d; ++j) r.values[i * d + j] = table.at(id * d + j);
  }
  return r;
}

// x [s, h, d], pos [s], optional freq_factors [r/2].
Reference rope(const std::vector<HostTensor>& in, const NodeAttrs& a) {
  const HostTensor &x = in[0], &pos = in[1];
  int64_t s = x.shape[0], h = x.shape[1], d = x.shape[2];
  int64_t r = a.i[1] == 0 ? d : a.i[1], half = r / 2;
  double base = a.f[0];
  Reference out = make_ref(x.shape, as_double(x));
  for (int64_t t = 0; t < s; ++t)
    for (int64_t hh = 0; hh < h; ++hh) {
      double* v = out.values.data() + (t * h + hh) * d;
      const double* src = v;  // pairs are disjoint, so rotating in place is safe
      for (int64_t i = 0; i < half; ++i) {
        double theta = double(pos.i[t]) * std::pow(base, -2.0 * double(i) / double(r));
        if (in.size() == 3) theta /= in[2].at(i);
        int64_t i0 = a.i[0] == 0 ? 2 * i : i;
        int64_t i1 = a.i[0] == 0 ? 2 * i + 1 : i + half;
        double x0 = src[i0], x1 = src[i1], c = std::cos(theta), sn = std::sin(theta);
        v[i0] = x0 * c - x1 * sn;
        v[i1] = x0 * sn + x1 * c;
      }
    }
  return out;
}

// q [s, hq, d], k/v [t, hkv, d] [, pos [s]] -> [s, hq, d]
Reference attention(const std::vector<HostTensor>& in, const NodeAttrs& a) {
  const HostTensor &q = in[0], &k = in[1], &v = in[2];
  int64_t s = q.shape[0], hq = q.shape[1], d = q.shape[2];
  int64_t t = k.shape[0], hkv = k.shape[1], group = hq / hkv;
  double scale = a.f[0];
  bool causal = a.i[0] == 1;
  int64_t past = a.i[1], kv_len = a.i[2] == 0 ? t : a.i[2];
  const HostTensor* pos = in.size() == 4 ? &in[3] : nullptr;  // then the attributes are ignored
  Reference out = make_ref(q.shape);
  out.values.assign(size_t(q.elems()), 0.0);
  Vec score(static_cast<size_t>(t));
  for (int64_t i = 0; i < s; ++i)
    for (int64_t h = 0; h < hq; ++h) {
      int64_t kh = h / group;
      int64_t n = causal ? std::min(kv_len, past + i + 1) : kv_len;  // keys [0, n) visible
      if (pos) n = std::min(t, int64_t(pos->i[i]) + 1);
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += q.at((i * hq + h) * d + c) * k.at((j * hkv + kh) * d + c);
        score[j] = dot * scale;
        mx = std::max(mx, score[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += (score[j] = std::exp(score[j] - mx));
      double* o = out.values.data() + (i * hq + h) * d;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < d; ++c) o[c] += score[j] / sum * v.at((j * hkv + kh) * d + c);
    }
  return out;
}

// cache [t, h, d], x [s, h, d], pos [s]: the cache with row pos[i] replaced by x[i].
Reference kv_store(const HostTensor& cache, const HostTensor& x, const HostTensor& pos) {
  Reference r = make_ref(cache.shape, as_double(cache));
  int64_t t = cache.shape[0], row = cache.elems() / t;
  for (int64_t i = 0; i < x.shape[0]; ++i) {
    int64_t p = pos.i[i];
    if (p >= t) {
      r.error = fmt::format("position {} at row {} is outside [0, {})", p, i, t);
      return r;
    }
    if (p < 0) continue;  // a padding row stores nothing
    for (int64_t c = 0; c < row; ++c) r.values[p * row + c] = x.at(i * row + c);
  }
  return r;
}

// x [n, ..] -> rows [start, start + count)
Reference slice(const HostTensor& x, const NodeAttrs& a) {
  Shape shape = x.shape;
  shape[0] = a.i[1];
  int64_t row = x.elems() / x.shape[0];
  Vec all = as_double(x);
  return make_ref(shape, Vec(all.begin() + a.i[0] * row, all.begin() + (a.i[0] + a.i[1]) * row));
}

// Inputs k_cache, k, pos, v_cache, v, q: both caches updated, then attention by position.
Reference store_then_attend(const std::vector<HostTensor>& in, const NodeAttrs& a) {
  Reference kc = kv_store(in[0], in[1], in[2]), vc = kv_store(in[3], in[4], in[2]);
  if (!kc.error.empty()) return kc;
  auto as_tensor = [](const HostTensor& like, const Vec& values) {
    HostTensor t;
    t.shape = like.shape;
    t.f.assign(values.begin(), values.end());  // exact: the cache values are f32
    return t;
  };
  Reference r =
      attention({in[5], as_tensor(in[0], kc.values), as_tensor(in[3], vc.values), in[2]}, a);
  r.inputs_after.resize(in.size());
  r.inputs_after[0] = kc.values;
  r.inputs_after[3] = vc.values;
  return r;
}

Reference scaled(Reference r, double by) {
  for (double& x : r.values) x *= by;
  return r;
}

Reference argmax(const HostTensor& a) {
  int64_t n = last(a), rows = a.elems() / n;
  Shape shape = a.shape;
  shape.pop_back();
  if (shape.empty()) shape.push_back(1);
  Reference r = make_ref(shape, {}, true);
  for (int64_t row = 0; row < rows; ++row) {
    int64_t best = 0;
    for (int64_t j = 1; j < n; ++j)
      if (a.at(row * n + j) > a.at(row * n + best)) best = j;  // strict: first max wins
    r.values.push_back(double(best));
  }
  return r;
}

Reference map(const HostTensor& a, double (*f)(double, double), double arg) {
  Reference r = make_ref(a.shape, as_double(a));
  for (double& x : r.values) x = f(x, arg);
  return r;
}

}  // namespace

Reference reference(const Case& c, const std::vector<HostTensor>& in) {
  const std::string& op = c.op;
  if (op == "add" || op == "mul") return binary(in, op == "mul");
  if (op == "scale")
    return map(
        in[0], [](double x, double s) { return x * s; }, c.attrs.f[0]);
  if (op == "silu")
    return map(
        in[0], [](double x, double) { return silu(x); }, 0);
  if (op == "silu_mul") {
    Reference r = map(
        in[0], [](double x, double) { return silu(x); }, 0);
    for (size_t k = 0; k < r.values.size(); ++k) r.values[k] *= in[1].at(int64_t(k));
    return r;
  }
  if (op == "softmax") return softmax(in[0]);
  if (op == "rms_norm") return rms_norm(in[0], in[1], c.attrs.f[0]);
  if (op == "matmul") return matmul(in[0], in[1]);
  if (op == "embed") return embed(in[0], in[1]);
  if (op == "rope") return rope(in, c.attrs);
  if (op == "attention") return attention(in, c.attrs);
  if (op == "reshape") {
    Reference r = make_ref(c.out_hint, as_double(in[0]));
    if (c.wrap != Wrap::None)
      for (double& x : r.values) x *= double(kWrapScale);
    return r;
  }
  if (op == "argmax") return argmax(in[0]);
  if (op == "kv_store") {
    if (c.wrap == Wrap::IntoAttention) return store_then_attend(in, c.attrs);
    Reference r = kv_store(in[0], in[1], in[2]);
    if (r.error.empty()) r.inputs_after = {r.values};  // the cache itself
    return c.wrap == Wrap::ScaleAfter ? scaled(std::move(r), kWrapScale) : r;
  }
  if (op == "slice") {
    Reference r = slice(in[0], c.attrs);
    return c.wrap == Wrap::ScaleAfter ? scaled(std::move(r), kWrapScale) : r;
  }
  throw std::logic_error("conformance: no float64 reference for op '" + op + "'");
}

}  // namespace rlx::conformance
