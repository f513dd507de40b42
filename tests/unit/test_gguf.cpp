// GGUF: writer -> reader round trips, and every kind of broken file the reader must refuse with
// a message naming the file and the key or tensor (never a crash, never a giant allocation).
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "file_util.h"
#include "rlx/error.h"
#include "rlx/gguf.h"
#include "rlx/weights.h"

namespace fs = std::filesystem;
using Catch::Contains;
using rlx::MetaType;
using rlx::MetaValue;

namespace {

using rlx::test::poke;
using rlx::test::read_bytes;
using rlx::test::write_bytes;
struct TempDir : rlx::test::TempDir {
  TempDir() : rlx::test::TempDir("rlx-gguf") {}
};

// Hand-built GGUF bytes, for files the writer would never produce.
struct Gguf {
  std::vector<uint8_t> b;
  template <typename T>
  Gguf& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Gguf& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Gguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
  }
  Gguf& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put(v); }
  Gguf& kv_str(const std::string& k, const std::string& v) {
    return str(k).put<uint32_t>(8).str(v);
  }
  Gguf& info(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) put<int64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Gguf& pad(size_t align = 32) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
  Gguf& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

// The message of the rlx::Error that opening `p` throws (anything else fails the test).
std::string open_error(const fs::path& p, const rlx::OpenLimits& limits = {}) {
  try {
    rlx::WeightFile::open(p, limits);
  } catch (const rlx::Error& e) {
    return e.what();
  }
  FAIL("opened " << p << " without an error");
  return "";
}

std::string open_error(const TempDir& d, const Gguf& g, const rlx::OpenLimits& limits = {}) {
  fs::path p = d.path / "bad.gguf";
  write_bytes(p, g.b);
  return open_error(p, limits);
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// Metadata of every type, arrays of every type (nested and empty included).
std::vector<std::pair<std::string, MetaValue>> every_value() {
  std::vector<std::pair<std::string, MetaValue>> kv = {
      {"general.architecture", MetaValue::string("llama")},
      {"t.u8", MetaValue::u8(250)},
      {"t.i8", MetaValue::i8(-7)},
      {"t.u16", MetaValue::u16(65000)},
      {"t.i16", MetaValue::i16(-30000)},
      {"t.u32", MetaValue::u32(4000000000u)},
      {"t.i32", MetaValue::i32(-2000000000)},
      {"t.f32", MetaValue::f32(0.1f)},
      {"t.bool", MetaValue::boolean(true)},
      {"t.string", MetaValue::string("héllo\nworld")},
      {"t.empty_string", MetaValue::string("")},
      {"t.u64", MetaValue::u64(18000000000000000000ull)},
      {"t.i64", MetaValue::i64(-9000000000000000000ll)},
      {"t.f64", MetaValue::f64(1e-300)},
      {"t.arr_u8", MetaValue::array(MetaType::U8, {MetaValue::u8(1), MetaValue::u8(2)})},
      {"t.arr_i32", MetaValue::array(MetaType::I32, {MetaValue::i32(-1), MetaValue::i32(3)})},
      {"t.arr_f32", MetaValue::array(MetaType::F32, {MetaValue::f32(1.5f)})},
      {"t.arr_bool", MetaValue::array(MetaType::Bool, {MetaValue::boolean(false)})},
      {"t.arr_u64", MetaValue::array(MetaType::U64, {MetaValue::u64(1ull << 63)})},
      {"t.arr_f64", MetaValue::array(MetaType::F64, {MetaValue::f64(-2.25)})},
      {"t.arr_string",
       MetaValue::array(MetaType::String, {MetaValue::string("a"), MetaValue::string(""),
                                           MetaValue::string("<|eot|>")})},
      {"t.arr_empty", MetaValue::array(MetaType::I16, {})},
      {"t.arr_nested",
       MetaValue::array(MetaType::Array,
                        {MetaValue::array(MetaType::I8, {MetaValue::i8(1), MetaValue::i8(-1)}),
                         MetaValue::array(MetaType::String, {MetaValue::string("x")})})},
  };
  for (uint32_t t : {1u, 2u, 3u, 4u, 11u})
    kv.emplace_back("t.arr_int_" + std::to_string(t),
                    MetaValue::array(static_cast<MetaType>(t), {}));
  return kv;
}

struct TestTensor {
  std::string name;
  rlx::DType dtype;
  rlx::Shape shape;
  std::vector<uint8_t> data;
};

std::vector<TestTensor> several_tensors() {
  std::vector<TestTensor> t = {
      {"tok_embd.weight", RLX_F32, {3, 5}, {}},
      {"blk.0.attn_norm.weight", RLX_F16, {7}, {}},
      {"blk.0.attn_q.weight", RLX_Q4_0, {2, 64}, {}},
      {"blk.0.ffn_up.weight", RLX_Q8_0, {3, 32}, {}},
      {"blk.0.ffn_down.weight", RLX_Q4_K, {2, 256}, {}},
      {"blk.0.ffn_gate.weight", RLX_Q6_K, {1, 256}, {}},
      {"output.weight", RLX_BF16, {2, 3, 4}, {}},
      {"rope_freqs", RLX_I32, {1, 1, 1, 3}, {}},
  };
  uint8_t seed = 1;
  for (auto& x : t) {
    int64_t elems = 1;
    for (int64_t d : x.shape) elems *= d;
    x.data = pattern(rlx::dtype_bytes(x.dtype, elems), seed++);
  }
  return t;
}

fs::path write_valid(const TempDir& d, uint32_t alignment = 32, const char* name = "ok.gguf") {
  static const auto tensors = several_tensors();
  rlx::GgufWriter w;
  for (auto& [k, v] : every_value()) w.set(k, v);
  for (const auto& t : tensors)
    w.add_tensor(t.name, t.dtype, t.shape, t.data.data(), t.data.size());
  fs::path p = d.path / name;
  w.write(p, alignment);
  return p;
}

}  // namespace

TEST_CASE("gguf round trip: metadata of every type and tensors of several dtypes", "[gguf]") {
  TempDir d;
  auto tensors = several_tensors();
  fs::path p = write_valid(d);

  auto f = rlx::WeightFile::open(p);
  CHECK(f->format() == "gguf");
  CHECK(f->gguf_version() == 3);
  CHECK(f->path() == p);
  CHECK(f->mapped_bytes() == fs::file_size(p));
  CHECK(f->meta("general.alignment") == nullptr);  // 32 is the default: not written

  auto values = every_value();
  CHECK(f->metadata().size() == values.size());
  for (const auto& [k, v] : values) {
    INFO(k);
    const MetaValue* got = f->meta(k);
    REQUIRE(got != nullptr);
    CHECK(got->describe(100) == v.describe(100));
    CHECK(*got == v);
  }
  CHECK(f->meta("nope") == nullptr);

  REQUIRE(f->tensors().size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const rlx::TensorEntry& e = f->tensors()[i];
    INFO(e.name);
    CHECK(e.name == tensors[i].name);
    CHECK(e.dtype == tensors[i].dtype);
    CHECK(e.shape == tensors[i].shape);
    CHECK(e.nbytes == tensors[i].data.size());
    CHECK(e.file == p.string());
    CHECK(e.file_offset % 32 == 0);
    CHECK(reinterpret_cast<uintptr_t>(e.data) % 32 == 0);  // mmap is page-aligned
    CHECK(std::memcmp(e.data, tensors[i].data.data(), e.nbytes) == 0);
    CHECK(f->find(e.name) == &e);
  }
  CHECK(f->find("missing.weight") == nullptr);
}

TEST_CASE("gguf values convert and describe themselves", "[gguf]") {
  CHECK(MetaValue::u32(2048).describe() == "u32 2048");
  CHECK(MetaValue::u32(2048).as_int() == 2048);
  CHECK(MetaValue::u32(2048).as_float() == 2048.0);
  CHECK(MetaValue::u32(2048).is_int());
  CHECK(!MetaValue::u32(2048).is_float());
  CHECK(MetaValue::f32(0.5f).describe() == "f32 0.5");
  CHECK(!MetaValue::f32(0.5f).as_int());
  CHECK(MetaValue::boolean(true).as_int() == 1);
  CHECK(MetaValue::u64(~0ull).as_int() == std::nullopt);
  CHECK(MetaValue::u64(~0ull).describe() == "u64 18446744073709551615");
  CHECK(MetaValue::string("llama").describe() == "string \"llama\"");
  CHECK(MetaValue::string("x").as_string() != nullptr);
  CHECK(MetaValue::u8(1).as_string() == nullptr);
  CHECK(MetaValue::u8(1).as_array() == nullptr);
  std::vector<MetaValue> toks(1000, MetaValue::string("t"));
  auto arr = MetaValue::array(MetaType::String, toks);
  CHECK(arr.describe() == "array<string>[1000]");
  CHECK(arr.describe(2) == "array<string>[1000] [\"t\", \"t\", ...]");
  CHECK(arr.as_array()->size() == 1000);
  CHECK_THROWS_AS(MetaValue::array(MetaType::U8, {MetaValue::i8(1)}), rlx::Error);
}

TEST_CASE("gguf writer honours the alignment and refuses bad input", "[gguf]") {
  TempDir d;
  fs::path p = write_valid(d, 64);
  auto f = rlx::WeightFile::open(p);
  REQUIRE(f->meta("general.alignment") != nullptr);
  CHECK(*f->meta("general.alignment") == MetaValue::u32(64));
  for (const auto& t : f->tensors()) CHECK(t.file_offset % 64 == 0);

  rlx::GgufWriter w;
  float x[4] = {};
  CHECK_THROWS_AS(w.write(d.path / "a.gguf", 3), rlx::Error);
  w.add_tensor("x", RLX_F32, {4}, x, sizeof(x));
  CHECK_THROWS_WITH(w.add_tensor("x", RLX_F32, {4}, x, sizeof(x)), Contains("'x'"));
  CHECK_THROWS_WITH(w.add_tensor("y", RLX_F32, {4}, x, 8), Contains("'y'"));
  CHECK_THROWS_WITH(w.add_tensor("q", RLX_Q4_0, {16}, x, 9), Contains("'q'"));
  CHECK_THROWS_WITH(w.add_tensor("z", RLX_F32, {1, 1, 1, 1, 4}, x, 16), Contains("'z'"));
  CHECK_THROWS_WITH(w.add_tensor("n", RLX_F32, {0}, x, 0), Contains("'n'"));
  w.set("general.alignment", MetaValue::u32(32));
  CHECK_THROWS_WITH(w.write(d.path / "b.gguf", 64), Contains("general.alignment"));
}

TEST_CASE("gguf writer is atomic: a failed write leaves the old file and no temp files", "[gguf]") {
  TempDir d;
  fs::path p = write_valid(d);
  auto before = read_bytes(p);

  rlx::GgufWriter bad;
  bad.set("general.alignment", MetaValue::u32(32));
  CHECK_THROWS_AS(bad.write(p, 64), rlx::Error);
  CHECK(read_bytes(p) == before);
  CHECK_THROWS_AS(bad.write(d.path / "no-such-dir" / "x.gguf"), rlx::Error);
  CHECK(!fs::exists(d.path / "no-such-dir"));
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) {
    (void)e;
    ++n;
  }
  CHECK(n == 1);

  // A successful write replaces the file in one step.
  rlx::GgufWriter small;
  small.set("general.architecture", MetaValue::string("qwen3"));
  small.write(p);
  auto f = rlx::WeightFile::open(p);
  CHECK(*f->meta("general.architecture")->as_string() == "qwen3");
  CHECK(f->tensors().empty());
}

TEST_CASE("gguf v2 reads, and shapes are the reversed ne", "[gguf]") {
  TempDir d;
  Gguf g;
  g.header(2, 2, 2).kv_str("general.architecture", "llama").kv_u32("llama.block_count", 1);
  g.info("w", {4, 2}, 0, 0).info("b", {2}, 1, 32).pad();
  auto w = pattern(32, 3);
  g.b.insert(g.b.end(), w.begin(), w.end());
  g.zeros(4);
  fs::path p = d.path / "v2.gguf";
  write_bytes(p, g.b);
  auto f = rlx::WeightFile::open(p);
  CHECK(f->gguf_version() == 2);
  CHECK(f->meta("llama.block_count")->as_int() == 1);
  REQUIRE(f->find("w"));
  CHECK(f->find("w")->shape == rlx::Shape{2, 4});
  CHECK(f->find("w")->dtype == RLX_F32);
  CHECK(std::memcmp(f->find("w")->data, w.data(), 32) == 0);
  CHECK(f->find("b")->shape == rlx::Shape{2});
  CHECK(f->find("b")->dtype == RLX_F16);
}

TEST_CASE("gguf: ggml type ids map to rlx dtypes", "[gguf]") {
  CHECK(rlx::dtype_from_ggml(0) == RLX_F32);
  CHECK(rlx::dtype_from_ggml(1) == RLX_F16);
  CHECK(rlx::dtype_from_ggml(2) == RLX_Q4_0);
  CHECK(rlx::dtype_from_ggml(3) == RLX_Q4_1);
  CHECK(rlx::dtype_from_ggml(6) == RLX_Q5_0);
  CHECK(rlx::dtype_from_ggml(7) == RLX_Q5_1);
  CHECK(rlx::dtype_from_ggml(8) == RLX_Q8_0);
  CHECK(rlx::dtype_from_ggml(10) == RLX_Q2_K);
  CHECK(rlx::dtype_from_ggml(14) == RLX_Q6_K);
  CHECK(rlx::dtype_from_ggml(15) == RLX_Q8_K);
  CHECK(rlx::dtype_from_ggml(30) == RLX_BF16);
  CHECK(!rlx::dtype_from_ggml(9));   // q8_1
  CHECK(!rlx::dtype_from_ggml(16));  // iq2_xxs
  CHECK(!rlx::dtype_from_ggml(4));   // removed
  CHECK(!rlx::dtype_from_ggml(1000));
  for (rlx::DType t :
       {RLX_F32, RLX_F16, RLX_BF16, RLX_I8, RLX_I32, RLX_Q4_0, RLX_Q4_1, RLX_Q5_0, RLX_Q5_1,
        RLX_Q8_0, RLX_Q2_K, RLX_Q3_K, RLX_Q4_K, RLX_Q5_K, RLX_Q6_K, RLX_Q8_K})
    CHECK(rlx::dtype_from_ggml(rlx::ggml_type_of(t)) == t);
}

TEST_CASE("gguf truncated at every offset: always an rlx::Error naming the file", "[gguf]") {
  TempDir d;
  fs::path good = write_valid(d);
  auto bytes = read_bytes(good);
  REQUIRE(bytes.size() > 500);
  fs::path p = d.path / "cut.gguf";
  write_bytes(p, bytes);
  for (size_t n = bytes.size(); n-- > 0;) {  // shrinking in place: no rewrite per step
    fs::resize_file(p, n);
    INFO("truncated to " << n << " of " << bytes.size() << " bytes");
    CHECK_THAT(open_error(p), Contains(p.string()));
  }
}

TEST_CASE("gguf with corrupted bytes: opens or throws rlx::Error, never crashes", "[gguf]") {
  TempDir d;
  auto bytes = read_bytes(write_valid(d));
  fs::path p = d.path / "flip.gguf";
  write_bytes(p, bytes);
  std::mt19937 rng(1234);
  for (int i = 0; i < 400; ++i) {
    size_t at = rng() % std::min<size_t>(bytes.size(), 1500);  // the header and infos
    size_t at2 = rng() % bytes.size();
    poke(p, at, bytes[at] ^ static_cast<uint8_t>(1u << (rng() % 8)));
    if (i % 4 == 0 && at2 != at) poke(p, at2, static_cast<uint8_t>(rng()));
    try {
      auto f = rlx::WeightFile::open(p);
      for (const auto& t : f->tensors()) CHECK(t.file_offset + t.nbytes <= f->mapped_bytes());
    } catch (const rlx::Error& e) {
      CHECK_THAT(std::string(e.what()), Contains(p.string()));
    }
    poke(p, at, bytes[at]);
    poke(p, at2, bytes[at2]);
  }
}

TEST_CASE("gguf bad headers name the file and what is wrong", "[gguf]") {
  TempDir d;
  fs::path p = d.path / "bad.gguf";

  CHECK_THAT(open_error(d.path / "missing.gguf"), Contains("missing.gguf"));
  write_bytes(p, {});
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("truncated"));
  write_bytes(p, {'G', 'G', 'M', 'L', 3, 0, 0, 0});
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("not a GGUF file"));

  Gguf v1;
  v1.header(0, 0, 1);
  CHECK_THAT(open_error(d, v1), Contains(p.string()) && Contains("version 1"));
  Gguf v4;
  v4.header(0, 0, 4);
  CHECK_THAT(open_error(d, v4), Contains("version 4"));
  Gguf be;
  be.header(0, 0, 0x03000000);
  CHECK_THAT(open_error(d, be), Contains("big-endian"));

  Gguf many_tensors;
  many_tensors.header(1ull << 40, 0);
  CHECK_THAT(open_error(d, many_tensors), Contains(p.string()) && Contains("tensors"));
  Gguf many_kv;
  many_kv.header(0, 1ull << 62);
  CHECK_THAT(open_error(d, many_kv), Contains(p.string()) && Contains("metadata"));
  Gguf kv_too_many_for_file;  // under the limit, but cannot fit in the bytes that follow
  kv_too_many_for_file.header(0, 1000).kv_u32("a", 1);
  CHECK_THAT(open_error(d, kv_too_many_for_file), Contains("1000 metadata entries"));
  Gguf infos_too_many_for_file;
  infos_too_many_for_file.header(100, 0).zeros(64);
  CHECK_THAT(open_error(d, infos_too_many_for_file), Contains("100 tensors"));
}

TEST_CASE("gguf bad metadata names the key", "[gguf]") {
  TempDir d;
  auto p = (d.path / "bad.gguf").string();

  Gguf long_key;  // a key longer than the file
  long_key.header(0, 1).put<uint64_t>(1ull << 40).zeros(16);
  CHECK_THAT(open_error(d, long_key), Contains(p) && Contains("metadata entry #0"));

  Gguf long_value;
  long_value.header(0, 1).str("general.name").put<uint32_t>(8).put<uint64_t>(5000).zeros(10);
  CHECK_THAT(open_error(d, long_value),
             Contains(p) && Contains("'general.name'") && Contains("truncated"));

  rlx::OpenLimits small;
  small.max_string = 4;
  Gguf over_limit;
  over_limit.header(0, 1).kv_str("name", "longer than four");
  CHECK_THAT(open_error(d, over_limit, small), Contains("'name'") && Contains("limit"));

  Gguf unknown_type;
  unknown_type.header(0, 1).str("odd.key").put<uint32_t>(13).zeros(8);
  CHECK_THAT(open_error(d, unknown_type),
             Contains(p) && Contains("'odd.key'") && Contains("unknown value type 13"));

  Gguf bad_bool;
  bad_bool.header(0, 1).str("flag").put<uint32_t>(7).put<uint8_t>(2);
  CHECK_THAT(open_error(d, bad_bool), Contains("'flag'") && Contains("bool"));

  Gguf huge_array;
  huge_array.header(0, 1).str("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8);
  huge_array.put<uint64_t>(1ull << 31).zeros(64);
  CHECK_THAT(open_error(d, huge_array),
             Contains(p) && Contains("'tokenizer.ggml.tokens'") && Contains("array"));

  rlx::OpenLimits tiny_arrays;
  tiny_arrays.max_array = 2;
  Gguf over_array_limit;
  over_array_limit.header(0, 1).str("a").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(3);
  over_array_limit.zeros(3);
  CHECK_THAT(open_error(d, over_array_limit, tiny_arrays), Contains("'a'") && Contains("limit"));

  Gguf bad_elem;
  bad_elem.header(0, 1).str("a").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(1).zeros(8);
  CHECK_THAT(open_error(d, bad_elem), Contains("'a'") && Contains("77"));

  Gguf deep;  // arrays of arrays of ... of nothing
  deep.header(0, 1).str("deep").put<uint32_t>(9);
  for (int i = 0; i < 20; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(0).put<uint64_t>(0);
  CHECK_THAT(open_error(d, deep), Contains("'deep'") && Contains("nested"));

  Gguf dup;
  dup.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
  CHECK_THAT(open_error(d, dup), Contains("'k'") && Contains("twice"));

  Gguf bad_align;
  bad_align.header(1, 1).kv_u32("general.alignment", 24).info("w", {8}, 0, 0).pad().zeros(32);
  CHECK_THAT(open_error(d, bad_align), Contains(p) && Contains("general.alignment"));
}

TEST_CASE("gguf bad tensor infos name the tensor", "[gguf]") {
  TempDir d;
  auto p = (d.path / "bad.gguf").string();
  auto one = [](const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t off,
                size_t data) {
    Gguf g;
    g.header(1, 0).info(name, std::move(ne), type, off).pad().zeros(data);
    return g;
  };

  CHECK_THAT(open_error(d, one("blk.0.attn_q.weight", {8}, 99, 0, 32)),
             Contains(p) && Contains("'blk.0.attn_q.weight'") && Contains("ggml type 99"));
  CHECK_THAT(open_error(d, one("w.iq", {256}, 16, 0, 256)),
             Contains("'w.iq'") && Contains("iq2_xxs"));
  CHECK_THAT(open_error(d, one("five", {1, 1, 1, 1, 1}, 0, 0, 32)),
             Contains("'five'") && Contains("5 dimensions"));
  CHECK_THAT(open_error(d, one("zero", {4, 0}, 0, 0, 32)),
             Contains("'zero'") && Contains("ne[1] is 0"));
  CHECK_THAT(open_error(d, one("neg", {-4}, 0, 0, 32)), Contains("'neg'") && Contains("-4"));
  CHECK_THAT(open_error(d, one("big", {1ll << 32, 1ll << 32}, 0, 0, 32)),
             Contains("'big'") && Contains("overflow"));
  CHECK_THAT(open_error(d, one("bigbytes", {1ll << 62}, 0, 0, 32)),
             Contains("'bigbytes'") && Contains("overflow"));
  CHECK_THAT(open_error(d, one("rows", {16, 2}, 2, 0, 64)),
             Contains("'rows'") && Contains("whole number of q4_0 blocks"));
  CHECK_THAT(open_error(d, one("past", {64}, 0, 0, 100)),
             Contains(p) && Contains("'past'") && Contains("past the end"));
  CHECK_THAT(open_error(d, one("far", {8}, 0, 1ull << 60, 32)),
             Contains("'far'") && Contains("past the end"));
  CHECK_THAT(open_error(d, one("odd", {4}, 0, 4, 64)),
             Contains("'odd'") && Contains("not a multiple of the alignment 32"));

  Gguf long_name;
  long_name.header(1, 0).put<uint64_t>(1ull << 50).zeros(64);
  CHECK_THAT(open_error(d, long_name), Contains(p) && Contains("tensor info #0"));

  Gguf dup;
  dup.header(2, 0).info("w", {8}, 0, 0).info("w", {8}, 0, 32).pad().zeros(64);
  CHECK_THAT(open_error(d, dup), Contains("'w'") && Contains("twice"));

  Gguf overlap;
  overlap.header(2, 0).info("a", {16}, 0, 0).info("b", {8}, 0, 32).pad().zeros(96);
  CHECK_THAT(open_error(d, overlap),
             Contains(p) && Contains("'a'") && Contains("'b'") && Contains("overlap"));
}

TEST_CASE("weight files of unknown kind are refused", "[gguf]") {
  TempDir d;
  fs::path p = d.path / "model.bin";
  write_bytes(p, {1, 2, 3, 4, 5, 6, 7, 8});
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("neither"));
  fs::path g = d.path / "model.gguf";
  write_bytes(g, {'P', 'K', 3, 4, 5, 6, 7, 8});
  CHECK_THAT(open_error(g), Contains("not a GGUF file"));
}
