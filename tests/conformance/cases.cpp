#include "cases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "rlx/dtype.h"
#include "rlx/quant.h"

namespace rlx::conformance {

int64_t HostTensor::elems() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

uint64_t HostTensor::bytes() const { return dtype_bytes(dtype, elems()); }
const void* HostTensor::data() const {
  if (dtype == RLX_I32) return i.data();
  return dtype == RLX_F32 ? static_cast<const void*>(f.data()) : packed.data();
}
void* HostTensor::data() {
  if (dtype == RLX_I32) return i.data();
  return dtype == RLX_F32 ? static_cast<void*>(f.data()) : packed.data();
}

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

// A weight stored as `dtype` (f16, bf16, a block type): make_inputs quantizes uniform values
// with rlx/quant.h and the reference reads the dequantized ones.
InputSpec packed(std::string name, DType dtype, Shape shape) {
  InputSpec s = weight(std::move(name), std::move(shape));
  s.dtype = dtype;
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

// "a[3,33] b[33]" plus an optional tag; a packed weight shows its dtype: "w:q4_k[7,256]".
std::string describe(const std::vector<InputSpec>& in, const std::string& tag) {
  std::string out;
  for (const InputSpec& s : in) {
    if (!out.empty()) out += ' ';
    out += s.name;
    if (s.dtype != RLX_F32 && s.dtype != RLX_I32) out += fmt::format(":{}", dtype_name(s.dtype));
    out += shape_of(s.shape);
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

// Every weight dtype but f32: f16, bf16 and the 11 GGUF block types.
const DType kPackedDtypes[] = {RLX_F16,  RLX_BF16, RLX_Q4_0, RLX_Q4_1, RLX_Q5_0, RLX_Q5_1, RLX_Q8_0,
                               RLX_Q2_K, RLX_Q3_K, RLX_Q4_K, RLX_Q5_K, RLX_Q6_K, RLX_Q8_K};

// The reference multiplies by the exact dequantized weights, so a packed matmul gets the f32
// budget: only the accumulation order differs.
void add_matmul_packed(std::vector<Case>& out) {
  struct Mm {
    Shape x;
    int64_t n;
  };
  for (DType dt : kPackedDtypes) {
    const int64_t blk = dtype_block_elems(dt) > 1 ? dtype_block_elems(dt) : 32;
    std::vector<Mm> shapes = {{{1, 256}, 7},   // decode: one x row
                              {{5, 512}, 33},  // two row blocks of 256, w rows past two tiles of 16
                              {{70, 256}, 18},      // more than one 64-row block of x
                              {{2, 3, 256}, 16}};   // leading dims
    if (blk == 32) {
      shapes.push_back({{3, 96}, 5});   // 3 blocks per row
      shapes.push_back({{1, 224}, 9});  // 7 blocks: a 4-block decode step and 3 left over
    }
    for (const Mm& m : shapes) {
      Case c = make("matmul", {f32("x", m.x), packed("w", dt, {m.n, m.x.back()})});
      c.threshold = kDotThreshold;
      out.push_back(c);
    }
  }
}

void add_embed_packed(std::vector<Case>& out) {
  struct Em {
    int64_t v, d, s;
  };
  for (DType dt : kPackedDtypes) {
    std::vector<Em> shapes = {{10, 256, 5}, {7, 512, 20}};
    if (dtype_block_elems(dt) <= 32) shapes.push_back({50, 64, 9});
    for (const Em& e : shapes)
      out.push_back(make(
          "embed", {packed("table", dt, {e.v, e.d}), i32("ids", {e.s}, Fill::RandomInt, 0, e.v)}));
  }
  InputSpec ids = i32("ids", {3}, Fill::RandomInt, 0, 10);
  ids.fixed = {0, 10, 3};
  Case c = make("embed", {packed("table", RLX_Q4_K, {10, 256}), ids}, "id=10 -> error");
  c.expect_error = true;
  out.push_back(c);
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

// "5,6,7", or "256..262" for a longer run.
std::string positions(const std::vector<int32_t>& pos) {
  if (pos.size() <= 4) return fmt::format("{}", fmt::join(pos, ","));
  return fmt::format("{}..{}", pos.front(), pos.back());
}

// Attention over a KV cache by position (4th input): query i sees keys j <= pos[i], j < t. The
// attributes are set to values that would change the result, to check they are ignored.
void add_attention_pos(std::vector<Case>& out) {
  struct Ap {
    int64_t t, hq, hkv, d;
    std::vector<int32_t> pos;
    const char* tag;
  };
  const Ap shapes[] = {
      {16, 4, 4, 32, {5, 6, 7}, "chunk at 5"},
      {64, 8, 2, 64, {40}, "decode at 40"},
      {10, 4, 2, 16, {2, 9, 0, 5}, "unordered"},
      {8, 8, 2, 64, {7, 3}, "last row, gqa"},
      {6, 2, 1, 8, {100}, "pos past t"},
      {300, 8, 2, 64, {256, 257, 258, 259, 260, 261, 262}, "long cache"},
  };
  for (const Ap& a : shapes) {
    const int64_t s = int64_t(a.pos.size());
    int64_t hi = *std::max_element(a.pos.begin(), a.pos.end());
    InputSpec k = f32("k", {a.t, a.hkv, a.d});
    InputSpec v = f32("v", {a.t, a.hkv, a.d});
    if (hi + 1 < a.t) k.junk_from = v.junk_from = hi + 1;  // never visible to any row
    InputSpec pos = i32("pos", {s}, Fill::RandomInt, 0, 1);
    pos.fixed = a.pos;
    Case c = make("attention", {f32("q", {s, a.hq, a.d}), k, v, pos},
                  fmt::format("pos={} {}", positions(a.pos), a.tag));
    c.attrs.f[0] = float(1.0 / std::sqrt(double(a.d)));
    c.attrs.i[0] = 1;  // causal, past 99, kv_len 1: all ignored with positions
    c.attrs.i[1] = 99;
    c.attrs.i[2] = 1;
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

// kv_store: the updated cache is read back twice, through a scale node (the graph output) and
// as the cache buffer itself, which must hold exactly the new rows at their positions and the
// old bytes everywhere else.
void add_kv_store(std::vector<Case>& out) {
  struct Kv {
    int64_t t, h, d;
    std::vector<int32_t> pos;
    const char* tag;
  };
  const Kv shapes[] = {
      {8, 2, 16, {5, 0, 7}, "scattered"},
      {33, 4, 64, {32}, "decode, last row"},
      {16, 1, 128, {}, "prefill"},
      {20, 3, 8, {11, 12, 13, 14}, "chunk at 11"},
      {20, 3, 8, {-1, -1, 5, 6}, "two padding rows first"},
  };
  for (const Kv& k : shapes) {
    std::vector<int32_t> pos = k.pos;
    if (pos.empty())
      for (int32_t i = 0; i < k.t; ++i) pos.push_back(i);
    InputSpec p = i32("pos", {int64_t(pos.size())}, Fill::RandomInt, 0, 1);
    p.fixed = pos;
    Case c = make(
        "kv_store", {f32("cache", {k.t, k.h, k.d}), f32("x", {int64_t(pos.size()), k.h, k.d}), p},
        k.pos.empty() ? std::string(k.tag) : fmt::format("pos={} {}", fmt::join(pos, ","), k.tag));
    c.wrap = Wrap::ScaleAfter;
    c.exact = true;  // a copy and a scale by -2: bit for bit
    out.push_back(c);
  }
  // ops.def: a position at or past t is a run-time error; the cache must stay untouched.
  for (int32_t bad : {8, 100}) {
    InputSpec p = i32("pos", {2}, Fill::RandomInt, 0, 1);
    p.fixed = {3, bad};
    Case c = make("kv_store", {f32("cache", {8, 2, 16}), f32("x", {2, 2, 16}), p},
                  fmt::format("pos=3,{} -> error", bad));
    c.wrap = Wrap::ScaleAfter;
    c.expect_error = true;
    out.push_back(c);
  }
  // Store-then-attend, as a model's layer does it: the attention must see the new rows.
  struct Step {
    int64_t t, hq, hkv, d;
    std::vector<int32_t> pos;
    const char* tag;
  };
  const Step steps[] = {
      {12, 4, 2, 32, {0, 1, 2, 3, 4}, "prefill into an empty cache"},
      {32, 8, 2, 64, {17}, "decode at 17"},
      {16, 4, 4, 16, {5, 6, 7}, "chunk at 5"},
  };
  for (const Step& st : steps) {
    const int64_t s = int64_t(st.pos.size());
    const int64_t hi = *std::max_element(st.pos.begin(), st.pos.end());
    InputSpec kc = f32("k_cache", {st.t, st.hkv, st.d}), vc = f32("v_cache", {st.t, st.hkv, st.d});
    kc.junk_from = vc.junk_from = hi + 1;
    InputSpec p = i32("pos", {s}, Fill::RandomInt, 0, 1);
    p.fixed = st.pos;
    Case c = make("kv_store",
                  {kc, f32("k", {s, st.hkv, st.d}), p, vc, f32("v", {s, st.hkv, st.d}),
                   f32("q", {s, st.hq, st.d})},
                  fmt::format("-> attention, {}", st.tag));
    c.wrap = Wrap::IntoAttention;
    c.attrs.f[0] = float(1.0 / std::sqrt(double(st.d)));
    c.threshold = kDotThreshold;
    out.push_back(c);
  }
}

// slice: a view at a byte offset, read through a scale node.
void add_slice(std::vector<Case>& out) {
  struct Sl {
    Shape x;
    int64_t start, count;
  };
  for (const Sl& sl : {Sl{{10, 7}, 3, 4}, Sl{{5, 2, 3}, 0, 1}, Sl{{4, 33}, 3, 1},
                       Sl{{6, 128}, 0, 6}, Sl{{9, 4, 16}, 2, 5}, Sl{{4099}, 4000, 99}}) {
    Case c = make("slice", {f32("x", sl.x)},
                  fmt::format("rows [{}, {})", sl.start, sl.start + sl.count));
    c.attrs.i[0] = sl.start;
    c.attrs.i[1] = sl.count;
    c.wrap = Wrap::ScaleAfter;
    c.exact = true;
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
  add_matmul_packed(out);
  add_embed(out);
  add_embed_packed(out);
  add_rope(out);
  add_attention(out);
  add_attention_pos(out);
  add_reshape(out);
  add_argmax(out);
  add_kv_store(out);
  add_slice(out);
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
      if (s.dtype != RLX_F32) {
        // A packed weight: quantize, and keep the dequantized values for the reference.
        t.packed.resize(size_t(dtype_bytes(s.dtype, n)));
        if (!quant::quantize_row(s.dtype, t.f.data(), t.packed.data(), n) ||
            !quant::dequantize_row(s.dtype, t.packed.data(), t.f.data(), n))
          throw std::runtime_error(
              fmt::format("cannot pack {} as {}", s.name, dtype_name(s.dtype)));
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace rlx::conformance
