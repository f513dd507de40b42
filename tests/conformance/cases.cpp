#include "cases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "rlx/dtype.h"

namespace rlx::conformance {

int64_t HostTensor::elems() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t HostTensor::bytes() const { return dtype_bytes(dtype, elems()); }
const void* HostTensor::data() const {
  return dtype == RLX_I32 ? static_cast<const void*>(i.data()) : f.data();
}
void* HostTensor::data() { return dtype == RLX_I32 ? static_cast<void*>(i.data()) : f.data(); }

namespace {

// f32 matmul / attention accumulate long dot products, and GPU backends may use reduced-
// precision tensor-core paths (tf32, f16 accumulation); ggml's test-backend-ops allows 5e-4 here.
constexpr double kDotThreshold = 5e-4;

InputSpec f32(std::string name, Shape shape, double lo = -1.0, double hi = 1.0) {
  InputSpec s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.lo = lo;
  s.hi = hi;
  return s;
}

InputSpec weight(std::string name, Shape shape, double lo = -1.0, double hi = 1.0) {
  InputSpec s = f32(std::move(name), std::move(shape), lo, hi);
  s.weight = true;
  return s;
}

InputSpec i32(std::string name, Shape shape, Fill fill, int64_t lo, int64_t hi) {
  InputSpec s;
  s.name = std::move(name);
  s.dtype = RLX_I32;
  s.shape = std::move(shape);
  s.fill = fill;
  s.lo = double(lo);
  s.hi = double(hi);
  return s;
}

std::string shape_of(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

// "a[3,33] b[33]" plus an optional tag.
std::string describe(const std::vector<InputSpec>& in, const std::string& tag) {
  std::string out;
  for (const InputSpec& s : in) {
    if (!out.empty()) out += ' ';
    out += s.name + shape_of(s.shape);
  }
  if (!tag.empty()) out += ' ' + tag;
  return out;
}

Case make(std::string op, std::vector<InputSpec> in, std::string tag = {}) {
  Case c;
  c.op = std::move(op);
  c.name = describe(in, tag);
  c.inputs = std::move(in);
  return c;
}

// Odd widths catch vector-tail bugs: 1, 7, 33, 127, and 4099 (one past a SIMD-friendly size).
const std::vector<Shape> kRowShapes = {{1}, {7}, {3, 33}, {4, 127}, {2, 4099}, {2, 3, 5}};

void add_binary(std::vector<Case>& out, const std::string& op) {
  for (const Shape& s : kRowShapes) out.push_back(make(op, {f32("a", s), f32("b", s)}));
  // Broadcast: b is a's trailing dims.
  out.push_back(make(op, {f32("a", {5, 33}), f32("b", {33})}, "bcast"));
  out.push_back(make(op, {f32("a", {2, 3, 7}), f32("b", {3, 7})}, "bcast"));
  out.push_back(make(op, {f32("a", {2, 3, 7}), f32("b", {7})}, "bcast"));
  out.push_back(make(op, {f32("a", {9, 1}), f32("b", {1})}, "bcast"));
  out.push_back(make(op, {f32("a", {3, 4099}), f32("b", {4099})}, "bcast"));
}

void add_scale(std::vector<Case>& out) {
  const float scales[] = {0.5f, -2.25f, 1e-3f, 3.0f, 1.0f, -1.0f};
  size_t k = 0;
  for (const Shape& s : kRowShapes) {
    float v = scales[k++ % std::size(scales)];
    Case c = make("scale", {f32("a", s)}, fmt::format("s={}", v));
    c.attrs.f[0] = v;
    out.push_back(c);
  }
}

void add_unary(std::vector<Case>& out, const std::string& op) {
  for (const Shape& s : kRowShapes) out.push_back(make(op, {f32("a", s)}));
}

void add_silu(std::vector<Case>& out) {
  add_unary(out, "silu");
  // Large magnitudes: exp(-a) overflows float for a < -88; silu must still give -0, not NaN.
  out.push_back(make("silu", {f32("a", {3, 257}, -100.0, 100.0)}, "range=+-100"));
}

void add_silu_mul(std::vector<Case>& out) {
  for (const Shape& s : kRowShapes) out.push_back(make("silu_mul", {f32("gate", s), f32("up", s)}));
  out.push_back(
      make("silu_mul", {f32("gate", {2, 129}, -30.0, 30.0), f32("up", {2, 129})}, "range=+-30"));
}

void add_softmax(std::vector<Case>& out) {
  for (const Shape& s : std::vector<Shape>{{1, 1}, {7}, {3, 33}, {4, 127}, {2, 3, 17}})
    out.push_back(make("softmax", {f32("a", s)}));
  // Wide rows: a vocabulary-sized row and a tail past a multiple of 8.
  out.push_back(make("softmax", {f32("a", {2, 4099})}, "wide"));
  out.push_back(make("softmax", {f32("a", {1, 32000})}, "wide"));
  // exp(100) overflows f32: only a max-subtracted softmax gets this right.
  out.push_back(make("softmax", {f32("a", {3, 1000}, -100.0, 100.0)}, "range=+-100"));
}

void add_rms_norm(std::vector<Case>& out) {
  struct Shp {
    Shape x;
    float eps;
    double lo, hi;
    const char* tag;
  };
  const Shp shapes[] = {
      {{1, 1}, 1e-5f, -1, 1, ""},
      {{7}, 1e-6f, -1, 1, ""},
      {{3, 33}, 1e-5f, -1, 1, ""},
      {{4, 127}, 1e-6f, -1, 1, ""},
      {{2, 4096}, 1e-5f, -1, 1, ""},
      {{2, 3, 64}, 1e-5f, -1, 1, ""},
      {{3, 33}, 0.0f, -1, 1, ""},
      {{3, 33}, 1e-2f, -1, 1, ""},
      // Tiny activations: mean(x^2) ~ 3e-7 is below eps, so where eps goes matters.
      {{4, 65}, 1e-5f, -1e-3, 1e-3, "tiny-x"},
  };
  for (const Shp& s : shapes) {
    Case c = make("rms_norm", {f32("x", s.x, s.lo, s.hi), weight("w", {s.x.back()})},
                  fmt::format("eps={}{}{}", s.eps, *s.tag ? " " : "", s.tag));
    c.attrs.f[0] = s.eps;
    out.push_back(c);
  }
}

void add_matmul(std::vector<Case>& out) {
  struct Mm {
    Shape x;
    int64_t n;
  };
  const Mm shapes[] = {
      {{1, 1}, 1},       {{1, 7}, 5},      {{3, 33}, 17},
      {{7, 127}, 33},    {{2, 3, 37}, 11},  // leading dims, k not a multiple of 8
      {{2, 3, 64}, 16},  {{5, 255}, 129},  {{1, 4096}, 64},
      {{16, 1000}, 100}, {{1, 4099}, 7},   {{33, 129}, 65},
  };
  for (const Mm& m : shapes) {
    Case c = make("matmul", {f32("x", m.x), weight("w", {m.n, m.x.back()})});
    c.threshold = kDotThreshold;
    out.push_back(c);
  }
}

void add_embed(std::vector<Case>& out) {
  struct Em {
    int64_t v, d, s;
  };
  for (const Em& e : {Em{1, 1, 1}, Em{10, 7, 5}, Em{100, 33, 9}, Em{50, 128, 1}, Em{7, 4099, 20}})
    out.push_back(
        make("embed", {weight("table", {e.v, e.d}), i32("ids", {e.s}, Fill::RandomInt, 0, e.v)}));
  // ops.def: an id outside [0, v) is a run-time error, never a wild read.
  for (int32_t bad : {10, -1}) {
    InputSpec ids = i32("ids", {3}, Fill::RandomInt, 0, 10);
    ids.fixed = {0, bad, 3};
    Case c = make("embed", {weight("table", {10, 7}), ids}, fmt::format("id={} -> error", bad));
    c.expect_error = true;
    out.push_back(c);
  }
}

void add_rope(std::vector<Case>& out) {
  struct Rp {
    Shape x;
    int mode;
    int64_t rot;  // iattr[1]; 0 = all of d
    float base;
    bool factors;  // third input freq_factors [r/2]
    int64_t pos_lo, pos_hi;
    bool sequence;  // positions lo, lo+1, ... instead of random
  };
  const Rp shapes[] = {
      {{5, 4, 64}, 0, 0, 10000.0f, false, 0, 512, false},
      {{5, 4, 64}, 1, 0, 10000.0f, false, 0, 512, false},
      {{3, 2, 64}, 0, 32, 10000.0f, false, 0, 512, false},
      {{3, 2, 64}, 1, 32, 10000.0f, false, 0, 512, false},
      {{4, 2, 64}, 0, 0, 500000.0f, true, 0, 512, false},
      {{4, 2, 64}, 1, 0, 500000.0f, true, 0, 512, false},
      {{4, 3, 48}, 1, 16, 10000.0f, true, 0, 512, false},
      {{4, 3, 48}, 0, 16, 10000.0f, true, 0, 512, false},
      {{7, 3, 128}, 1, 0, 1000000.0f, false, 17, 0, true},
      {{7, 3, 128}, 0, 0, 1000000.0f, false, 17, 0, true},
      {{1, 8, 64}, 0, 0, 10000.0f, false, 300, 0, true},  // one decode step
      {{1, 1, 2}, 1, 0, 10000.0f, false, 0, 64, false},
      {{2, 5, 6}, 0, 2, 10000.0f, false, 0, 64, false},
  };
  for (const Rp& r : shapes) {
    int64_t rdims = r.rot == 0 ? r.x[2] : r.rot;
    std::vector<InputSpec> in = {f32("x", r.x)};
    if (r.sequence)
      in.push_back(i32("pos", {r.x[0]}, Fill::Sequence, r.pos_lo, 0));
    else
      in.push_back(i32("pos", {r.x[0]}, Fill::RandomInt, r.pos_lo, r.pos_hi));
    // Llama-3-style factors are >= 1 (they slow the low frequencies down).
    if (r.factors) in.push_back(weight("ff", {rdims / 2}, 1.0, 8.0));
    std::string tag = fmt::format("mode={} r={} base={:g}", r.mode, r.rot, r.base);
    if (r.sequence) tag += fmt::format(" pos={}..", r.pos_lo);
    Case c = make("rope", in, tag);
    c.attrs.i[0] = r.mode;
    c.attrs.i[1] = r.rot;
    c.attrs.f[0] = r.base;
    out.push_back(c);
  }
  // Long context: angles up to 16k rad. Computing them in f32 (pos * f32(base^(-2i/r))), as GPU
  // kernels do, costs NMSE ~5e-9 here (simulated), inside the default 1e-7 with no loosening;
  // angles kept in f16 or positions squeezed through a narrow type do not pass.
  for (int mode : {0, 1}) {
    Case c = make("rope", {f32("x", {4, 4, 64}), i32("pos", {4}, Fill::RandomInt, 8192, 16384)},
                  fmt::format("mode={} r=0 base=10000 pos=8k..16k", mode));
    c.attrs.i[0] = mode;
    c.attrs.f[0] = 10000.0f;
    out.push_back(c);
  }
}

void add_attention(std::vector<Case>& out) {
  struct At {
    int64_t s, t, hq, hkv, d;
    bool causal;
    int64_t past, kv_len;  // kv_len 0 = t
    float scale;           // 0 = 1/sqrt(d)
  };
  const At shapes[] = {
      {1, 1, 1, 1, 8, false, 0, 0, 0},       {4, 4, 4, 4, 16, true, 0, 0, 0},
      {5, 5, 8, 2, 64, true, 0, 0, 0},        // GQA prefill
      {3, 7, 8, 2, 64, false, 0, 0, 0},       // GQA, non-causal, t > s
      {3, 16, 8, 2, 64, true, 5, 8, 0},       // past offset, kv_len < t (cache tail unused)
      {1, 32, 8, 2, 64, true, 20, 21, 0},     // one decode step into a cache
      {2, 10, 4, 2, 32, false, 0, 6, 0},      // non-causal with kv_len < t
      {4, 4, 4, 4, 16, false, 0, 0, 0.5f},    // explicit scale
      {3, 9, 6, 3, 80, true, 6, 0, 1.0f},     // d = 80, scale 1, past fills the cache
      {1, 300, 8, 2, 64, true, 299, 0, 0},    // long decode
      {33, 33, 4, 1, 32, true, 0, 0, 0},      // MQA prefill, odd length
      {2, 12, 8, 8, 128, true, 4, 5, 0.05f},  // row 1: kv_len cuts before causal does
  };
  for (const At& a : shapes) {
    float scale = a.scale != 0 ? a.scale : float(1.0 / std::sqrt(double(a.d)));
    InputSpec k = f32("k", {a.t, a.hkv, a.d});
    InputSpec v = f32("v", {a.t, a.hkv, a.d});
    if (a.kv_len != 0) k.junk_from = v.junk_from = a.kv_len;
    std::string tag = fmt::format("{} p={} kv_len={} scale={:g}", a.causal ? "causal" : "full",
                                  a.past, a.kv_len, scale);
    Case c = make("attention", {f32("q", {a.s, a.hq, a.d}), k, v}, tag);
    c.attrs.f[0] = scale;
    c.attrs.i[0] = a.causal ? 1 : 0;
    c.attrs.i[1] = a.past;
    c.attrs.i[2] = a.kv_len;
    c.threshold = kDotThreshold;
    out.push_back(c);
  }
}

void add_reshape(std::vector<Case>& out) {
  struct Rs {
    Shape in, to;
  };
  for (const Rs& r : {Rs{{6, 4}, {24}}, Rs{{2, 3, 4}, {6, 4}}, Rs{{7}, {7, 1}}, Rs{{1, 127}, {127}},
                      Rs{{2, 33}, {3, 22}}, Rs{{4, 8, 16}, {4, 2, 4, 16}}})
    for (Wrap w : {Wrap::ScaleBefore, Wrap::ScaleAfter}) {
      Case c = make("reshape", {f32("a", r.in)},
                    fmt::format("-> {} {}", shape_of(r.to),
                                w == Wrap::ScaleBefore ? "(scale first)" : "(scale after)"));
      c.out_hint = r.to;
      c.wrap = w;
      out.push_back(c);
    }
}

void add_argmax(std::vector<Case>& out) {
  for (const Shape& s : std::vector<Shape>{
           {1, 1}, {7}, {3, 7}, {4, 33}, {2, 127}, {2, 4099}, {1, 32000}, {2, 3, 17}}) {
    InputSpec a = f32("a", s);
    a.fill = Fill::Distinct;
    Case c = make("argmax", {a});
    c.exact = true;
    out.push_back(c);
  }
  InputSpec a = f32("a", {4, 33});
  a.fill = Fill::DistinctTie;
  Case c = make("argmax", {a}, "exact tie -> first");
  c.exact = true;
  out.push_back(c);
}

// splitmix64: tiny, and the same stream on every platform (unlike <random> distributions).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }
};

uint64_t hash_str(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

void fill_distinct(HostTensor& t, Rng& rng, bool tie) {
  int64_t n = t.shape.back();
  int64_t rows = t.elems() / n;
  std::vector<int64_t> perm(n);
  for (int64_t r = 0; r < rows; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t k = n - 1; k > 0; --k) std::swap(perm[k], perm[rng.below(k + 1)]);
    float* row = t.f.data() + r * n;
    // Levels -1 + 2k/n: neighbours differ by 2/n, far above f32 rounding for n <= 1e6.
    for (int64_t k = 0; k < n; ++k) row[k] = float(-1.0 + 2.0 * double(perm[k]) / double(n));
    if (tie && n > 1) {
      int64_t first = std::max_element(row, row + n) - row;
      if (first == n - 1) {  // keep room after the max for its copy
        std::swap(row[first], row[0]);
        first = 0;
      }
      row[first + 1 + rng.below(n - first - 1)] = row[first];
    }
  }
}

}  // namespace

std::vector<Case> make_cases() {
  std::vector<Case> out;
  add_binary(out, "add");
  add_binary(out, "mul");
  add_scale(out);
  add_silu(out);
  add_silu_mul(out);
  add_softmax(out);
  add_rms_norm(out);
  add_matmul(out);
  add_embed(out);
  add_rope(out);
  add_attention(out);
  add_reshape(out);
  add_argmax(out);
  return out;
}

std::vector<HostTensor> make_inputs(const Case& c, uint64_t seed) {
  Rng rng{seed ^ hash_str(c.op + '/' + c.name)};
  std::vector<HostTensor> out;
  for (const InputSpec& s : c.inputs) {
    HostTensor t;
    t.dtype = s.dtype;
    t.shape = s.shape;
    int64_t n = t.elems();
    if (s.dtype == RLX_I32) {
      t.i.resize(n);
      for (int64_t k = 0; k < n; ++k) {
        if (!s.fixed.empty())
          t.i[k] = s.fixed[k % s.fixed.size()];
        else if (s.fill == Fill::Sequence)
          t.i[k] = int32_t(int64_t(s.lo) + k);
        else
          t.i[k] = int32_t(int64_t(s.lo) + rng.below(int64_t(s.hi) - int64_t(s.lo)));
      }
    } else {
      t.f.resize(n);
      if (s.fill == Fill::Distinct || s.fill == Fill::DistinctTie) {
        fill_distinct(t, rng, s.fill == Fill::DistinctTie);
      } else {
        for (int64_t k = 0; k < n; ++k) t.f[k] = float(s.lo + (s.hi - s.lo) * rng.unit());
        // A zero tensor would hide a kernel that never reads its input.
        if (std::all_of(t.f.begin(), t.f.end(), [](float v) { return v == 0.0f; })) t.f[0] = 0.5f;
      }
      if (s.junk_from >= 0) {
        int64_t row = n / s.shape[0];
        // +-30: if these leak into attention they dominate the softmax and the output.
        for (int64_t k = s.junk_from * row; k < n; ++k) t.f[k] = float(60.0 * rng.unit() - 30.0);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace rlx::conformance
