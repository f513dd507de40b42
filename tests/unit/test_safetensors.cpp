// safetensors: single files, sharded Hugging Face directories, config.json flattening, and the
// broken files the reader must refuse with a message naming the file and the tensor.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "file_util.h"
#include "rlx/error.h"
#include "rlx/safetensors.h"
#include "rlx/weights.h"

namespace fs = std::filesystem;
using Catch::Contains;
using rlx::MetaType;

namespace {

using rlx::test::poke;
using rlx::test::read_bytes;
using rlx::test::write_bytes;
struct TempDir : rlx::test::TempDir {
  TempDir() : rlx::test::TempDir("rlx-st") {}
};

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

// A safetensors file: header length, the JSON (space-padded to 8 bytes, as the Python writer
// does), then `data_bytes` bytes of a known pattern.
std::vector<uint8_t> safetensors_bytes(std::string json, size_t data_bytes) {
  while ((8 + json.size()) % 8) json += ' ';
  uint64_t n = json.size();
  std::vector<uint8_t> b(8 + n + data_bytes);
  std::memcpy(b.data(), &n, 8);
  std::memcpy(b.data() + 8, json.data(), n);
  for (size_t i = 0; i < data_bytes; ++i) b[8 + n + i] = static_cast<uint8_t>(i * 13 + 5);
  return b;
}

fs::path write_st(const fs::path& p, const std::string& json, size_t data_bytes) {
  write_bytes(p, safetensors_bytes(json, data_bytes));
  return p;
}

std::string open_error(const fs::path& p) {
  try {
    rlx::WeightFile::open(p);
  } catch (const rlx::Error& e) {
    return e.what();
  }
  FAIL("opened " << p << " without an error");
  return "";
}

// One tensor; everything else about the file is right.
std::string one_tensor_error(const TempDir& d, const std::string& entry, size_t data_bytes) {
  fs::path p = write_st(d.path / "bad.safetensors", "{\"w\":" + entry + "}", data_bytes);
  return open_error(p);
}

const char* kConfig = R"({
  "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
  "rope_theta": 500000.0, "tie_word_embeddings": false, "eos_token_id": [128001, 128009],
  "rope_scaling": {"factor": 8.0, "rope_type": "llama3", "nested": {"deep": 1}},
  "quantization_config": null, "mixed_numbers": [1, 2.5], "mixed_kinds": [1, "a", null],
  "layer_types": ["full", "sliding"], "empty": [], "big": 18446744073709551615,
  "text_config": {"vocab_size": 32}
})";

const char* kHeader = R"({
  "__metadata__": {"format": "pt"},
  "model.embed_tokens.weight": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [0, 16]},
  "model.norm.weight": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]},
  "lm_head.weight": {"dtype": "F16", "shape": [4, 2], "data_offsets": [24, 40]}
})";

}  // namespace

TEST_CASE("safetensors: a Hugging Face directory with one file and config.json", "[safetensors]") {
  TempDir d;
  write_text(d.path / "config.json", kConfig);
  fs::path st = write_st(d.path / "model.safetensors", kHeader, 40);
  auto bytes = read_bytes(st);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);

  auto f = rlx::WeightFile::open(d.path);
  CHECK(f->format() == "safetensors");
  CHECK(f->gguf_version() == 0);
  CHECK(f->path() == d.path);
  CHECK(f->mapped_bytes() == bytes.size());
  REQUIRE(f->tensors().size() == 3);

  const rlx::TensorEntry* e = f->find("model.embed_tokens.weight");
  REQUIRE(e);
  CHECK(e->dtype == RLX_BF16);
  CHECK(e->shape == rlx::Shape{4, 2});
  CHECK(e->nbytes == 16);
  CHECK(e->file == st.string());
  CHECK(e->file_offset == 8 + header_len);
  CHECK(std::memcmp(e->data, bytes.data() + e->file_offset, 16) == 0);
  const rlx::TensorEntry* h = f->find("lm_head.weight");
  REQUIRE(h);
  CHECK(h->dtype == RLX_F16);
  CHECK(h->file_offset == 8 + header_len + 24);
  CHECK(h->data == e->data + 24);
  CHECK(f->find("model.norm.weight")->dtype == RLX_F32);

  CHECK(*f->meta("model_type")->as_string() == "llama");
  CHECK(f->meta("hidden_size")->as_int() == 64);
  CHECK(f->meta("rope_theta")->as_float() == 500000.0);
  CHECK(f->meta("rope_theta")->is_float());
  CHECK(f->meta("tie_word_embeddings")->as_bool() == false);
  CHECK(f->meta("rope_scaling.factor")->as_float() == 8.0);
  CHECK(*f->meta("rope_scaling.rope_type")->as_string() == "llama3");
  CHECK(f->meta("rope_scaling.nested.deep")->as_int() == 1);
  CHECK(f->meta("text_config.vocab_size")->as_int() == 32);
  CHECK(f->meta("quantization_config") == nullptr);  // null means unset
  CHECK(f->meta("big")->as_uint() == 18446744073709551615ull);
  const auto* eos = f->meta("eos_token_id")->as_array();
  REQUIRE(eos);
  REQUIRE(eos->size() == 2);
  CHECK((*eos)[1].as_int() == 128009);
  CHECK(f->meta("mixed_numbers")->array_type() == MetaType::F64);
  CHECK((*f->meta("mixed_numbers")->as_array())[1].as_float() == 2.5);
  CHECK(f->meta("mixed_kinds")->array_type() == MetaType::String);
  CHECK(*(*f->meta("mixed_kinds")->as_array())[2].as_string() == "null");
  CHECK(f->meta("layer_types")->describe() == "array<string>[2]");
  CHECK(f->meta("empty")->as_array()->empty());
  CHECK(*f->meta("safetensors.format")->as_string() == "pt");

  // The file itself (config.json next to it is still read), and an empty directory.
  auto single = rlx::WeightFile::open(st);
  CHECK(single->path() == st);
  CHECK(single->tensors().size() == 3);
  CHECK(single->meta("hidden_size") != nullptr);
  fs::create_directory(d.path / "empty");
  CHECK_THAT(open_error(d.path / "empty"),
             Contains((d.path / "empty").string()) && Contains("model.safetensors"));
}

TEST_CASE("safetensors: sharded checkpoints through model.safetensors.index.json",
          "[safetensors]") {
  TempDir d;
  write_text(d.path / "config.json", R"({"model_type": "qwen3", "num_hidden_layers": 2})");
  write_st(d.path / "model-00001-of-00002.safetensors",
           R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
               "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
           12);
  write_st(d.path / "model-00002-of-00002.safetensors",
           R"({"c": {"dtype": "BF16", "shape": [3, 1], "data_offsets": [0, 6]}})", 6);
  write_text(d.path / "model.safetensors.index.json", R"({"metadata": {"total_size": 18},
      "weight_map": {"a": "model-00001-of-00002.safetensors",
                     "b": "model-00001-of-00002.safetensors",
                     "c": "model-00002-of-00002.safetensors"}})");

  for (const fs::path& p : {d.path, d.path / "model.safetensors.index.json"}) {
    auto f = rlx::WeightFile::open(p);
    CHECK(f->tensors().size() == 3);
    CHECK(f->find("a")->file == (d.path / "model-00001-of-00002.safetensors").string());
    CHECK(f->find("c")->file == (d.path / "model-00002-of-00002.safetensors").string());
    CHECK(f->find("c")->shape == rlx::Shape{3, 1});
    CHECK(f->meta("num_hidden_layers")->as_int() == 2);
    CHECK(f->mapped_bytes() == fs::file_size(d.path / "model-00001-of-00002.safetensors") +
                                   fs::file_size(d.path / "model-00002-of-00002.safetensors"));
  }

  auto idx = d.path / "model.safetensors.index.json";
  write_text(idx, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                     "z": "model-00002-of-00002.safetensors"}})");
  CHECK_THAT(open_error(d.path), Contains(idx.string()) && Contains("'z'"));
  write_text(idx, R"({"weight_map": {"a": "model-00009-of-00009.safetensors"}})");
  CHECK_THAT(open_error(d.path),
             Contains("model-00009-of-00009.safetensors") && Contains("missing"));
  write_text(idx, R"({"weight_map": {"a": "../../etc/passwd"}})");
  CHECK_THAT(open_error(d.path), Contains("'a'") && Contains("file name"));
  write_text(idx, R"({"weights": {}})");
  CHECK_THAT(open_error(d.path), Contains(idx.string()) && Contains("weight_map"));
  write_text(idx, R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                                     "c": "model-00002-of-00002.safetensors"}})");
  write_st(d.path / "model-00002-of-00002.safetensors",
           R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
               "c": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
           8);
  CHECK_THAT(open_error(d.path), Contains("'a'") && Contains("another shard"));
  write_text(d.path / "config.json", "{\"model_type\": ");
  CHECK_THAT(open_error(d.path / "model-00001-of-00002.safetensors"),
             Contains("config.json") && Contains("JSON"));
}

TEST_CASE("safetensors: bad headers name the file", "[safetensors]") {
  TempDir d;
  fs::path p = d.path / "bad.safetensors";
  write_bytes(p, {1, 2, 3});
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("truncated"));
  std::vector<uint8_t> b(16, 0);
  b[0] = 200;  // 200-byte header in a 16-byte file
  write_bytes(p, b);
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("runs past the end"));
  b.assign(16, 0xff);
  write_bytes(p, b);
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("header length"));
  write_st(p, "{\"w\": {\"dtype\": ", 0);
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("invalid"));
  write_st(p, "[1, 2]", 0);
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("not an object"));
  write_st(p, R"({"__metadata__": [1]})", 0);
  CHECK_THAT(open_error(p), Contains("__metadata__"));
}

TEST_CASE("safetensors: a header nested too deep is refused before parsing", "[safetensors]") {
  // ~100k levels used to overflow the stack in json::dump (found beside tests/fuzz).
  TempDir d;
  fs::path p = d.path / "deep.safetensors";
  const size_t depth = 100000;
  write_st(p,
           R"({"w": {"dtype": "F32", "data_offsets": [0, 0], "shape": [)" +
               std::string(depth, '[') + std::string(depth, ']') + "]}}",
           0);
  CHECK_THAT(open_error(p), Contains(p.string()) && Contains("deeper than 256 levels"));
  // Brackets inside strings do not count.
  write_st(p,
           R"({"__metadata__": {"k": ")" + std::string(1000, '[') +
               R"(\"["}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
           4);
  CHECK(rlx::open_safetensors(p)->find("w") != nullptr);
}

TEST_CASE("safetensors: bad tensor entries name the tensor", "[safetensors]") {
  TempDir d;
  auto p = (d.path / "bad.safetensors").string();
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "I64", "shape": [2], "data_offsets": [0, 16]})", 16),
             Contains(p) && Contains("'w'") && Contains("I64"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "U8", "shape": [2], "data_offsets": [0, 2]})", 2),
             Contains("'w'") && Contains("U8"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})", 4),
             Contains(p) && Contains("'w'") && Contains("outside"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 4]})", 8),
             Contains("'w'") && Contains("outside"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]})", 8),
             Contains("'w'") && Contains("needs 12"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})", 8),
             Contains("'w'") && Contains("shape"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]})", 8),
             Contains("'w'") && Contains("shape"));
  CHECK_THAT(
      one_tensor_error(
          d, R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]})", 8),
      Contains("'w'") && Contains("overflows"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [2], "data_offsets": [0]})", 8),
             Contains("'w'") && Contains("data_offsets"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": "F32", "shape": [2]})", 8),
             Contains("'w'") && Contains("data_offsets"));
  CHECK_THAT(one_tensor_error(d, R"([1, 2])", 8), Contains("'w'"));
  CHECK_THAT(one_tensor_error(d, R"({"dtype": 5, "shape": [2], "data_offsets": [0, 8]})", 8),
             Contains("'w'") && Contains("dtype"));

  fs::path f = d.path / "two.safetensors";
  write_st(f,
           R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
               "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
           16);
  CHECK_THAT(open_error(f),
             Contains(f.string()) && Contains("'a'") && Contains("'b'") && Contains("overlap"));
  write_st(f,
           R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
               "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
           8);
  CHECK_THAT(open_error(f), Contains("'a'") && Contains("twice"));
}

TEST_CASE("safetensors truncated at every offset: always an rlx::Error", "[safetensors]") {
  TempDir d;
  auto bytes = safetensors_bytes(kHeader, 40);
  fs::path p = d.path / "cut.safetensors";
  write_bytes(p, bytes);
  for (size_t n = bytes.size(); n-- > 0;) {  // shrinking in place: no rewrite per step
    fs::resize_file(p, n);
    INFO("truncated to " << n << " of " << bytes.size() << " bytes");
    CHECK_THAT(open_error(p), Contains(p.string()));
  }
}

TEST_CASE("safetensors with corrupted bytes: opens or throws rlx::Error", "[safetensors]") {
  TempDir d;
  auto bytes = safetensors_bytes(kHeader, 40);
  fs::path p = d.path / "flip.safetensors";
  write_bytes(p, bytes);
  std::mt19937 rng(99);
  for (int i = 0; i < 400; ++i) {
    size_t at = rng() % bytes.size();
    poke(p, at, static_cast<uint8_t>(rng()));
    try {
      auto f = rlx::WeightFile::open(p);
      for (const auto& t : f->tensors()) CHECK(t.file_offset + t.nbytes <= f->mapped_bytes());
    } catch (const rlx::Error& e) {
      CHECK_THAT(std::string(e.what()), Contains(p.string()));
    }
    poke(p, at, bytes[at]);
  }
}
