// Generator on real tiny models (written by tiny_model.cpp) on the cpu backend: the cached and
// uncached paths agree, the KV-cache invariants hold, the logit adjustment runs before argmax,
// and broken models fail with messages that name what is wrong.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "rlx/error.h"
#include "rlx/generator.h"
#include "rlx/model.h"
#include "tiny_model.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

PluginHost& host() { return test::tree_plugins(); }

fs::path temp_model(const std::string& name, const test::TinyModel& m) {
  fs::path dir = fs::temp_directory_path() / "rlx-test-generator";
  fs::create_directories(dir);
  fs::path p = dir / name;
  test::write_tiny_model(m, p);
  return p;
}

double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * double(a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

SampleOpts greedy() {
  SampleOpts o;
  o.greedy = true;
  return o;
}

}  // namespace

TEST_CASE("step and step_cached give the same greedy tokens", "[generator]") {
  for (const char* arch : {"llama", "qwen3"}) {
    INFO(arch);
    test::TinyModel tm;
    tm.arch = arch;
    tm.tied = std::string(arch) == "qwen3";
    auto model = Model::load(host(), temp_model(std::string(arch) + ".gguf", tm));
    CHECK(model->family() == (std::string(arch) == "llama" ? "llama32" : "qwen3"));
    auto dev = host().open_device("cpu");
    Generator a(dev, *model), b(dev, *model);
    std::vector<int32_t> prompt = {1, 5, 9, 2};
    a.prefill(prompt);
    b.prefill(prompt);
    auto plain = a.generate(8, greedy());
    auto cached = b.generate_cached(8, greedy());
    CHECK(plain == cached);
    CHECK(b.past() == static_cast<int64_t>(b.tokens().size()) - 1);
    CHECK(b.tokens().size() == prompt.size() + 8);
  }
}

TEST_CASE("decoding one token equals prefilling the longer context", "[generator]") {
  auto model = Model::load(host(), temp_model("llama.gguf", {}));
  auto dev = host().open_device("cpu");
  Generator g(dev, *model);
  std::vector<int32_t> ctx = {3, 1, 4, 1, 5};
  g.prefill_get_last_logits(ctx);
  CHECK(g.past() == 5);
  std::vector<float> decoded = g.decode_get_logits(9);
  CHECK(g.past() == static_cast<int64_t>(g.tokens().size()));
  ctx.push_back(9);
  Generator fresh(dev, *model);
  std::vector<float> full = fresh.prefill_get_last_logits(ctx);
  REQUIRE(decoded.size() == full.size());
  CHECK(rel_rms(decoded, full) < 1e-5);

  // The invariant is checked, not assumed.
  g.prefill(ctx);
  CHECK_THROWS_WITH(g.decode_get_logits(1), Catch::Contains("prefill_get_last_logits"));
}

TEST_CASE("continuing a conversation reuses the cached prefix and matches a fresh prefill",
          "[generator]") {
  auto model = Model::load(host(), temp_model("llama.gguf", {}));
  auto dev = host().open_device("cpu");
  Generator g(dev, *model);
  std::vector<int32_t> turn1 = {3, 1, 4, 1, 5};
  g.prefill_get_last_logits(turn1);
  g.generate_cached(3, greedy());  // the reply: history 8 tokens, cache 7 rows
  const uint64_t before = g.stats().prompt_tokens + g.stats().decode_tokens;

  // The next turn: the history so far, then new tokens.
  std::vector<int32_t> turn2 = g.tokens();
  for (int32_t t : {9, 2, 6}) turn2.push_back(t);
  std::vector<float> cont = g.continue_get_last_logits(turn2);
  CHECK(g.past() == static_cast<int64_t>(turn2.size()));
  // Only the reply's last token and the 3 new ones ran.
  CHECK(g.stats().prompt_tokens + g.stats().decode_tokens - before == 4);
  Generator fresh(dev, *model);
  std::vector<float> full = fresh.prefill_get_last_logits(turn2);
  CHECK(rel_rms(cont, full) < 1e-5);

  // A history that diverges early (an edited earlier turn) keeps only the shared rows.
  std::vector<int32_t> edited = {3, 1, 7, 7};
  std::vector<float> e = g.continue_get_last_logits(edited);
  CHECK(rel_rms(e, fresh.prefill_get_last_logits(edited)) < 1e-5);
  CHECK(g.tokens() == edited);
}

TEST_CASE("the logit adjustment is applied before the argmax", "[generator]") {
  auto model = Model::load(host(), temp_model("llama.gguf", {}));
  auto dev = host().open_device("cpu");
  Generator g(dev, *model);
  std::vector<int32_t> prompt = {7, 7, 3};
  g.prefill(prompt);
  int32_t natural = g.step_cached(greedy());

  Generator banned(dev, *model);
  int calls = 0;
  banned.set_logit_adjust([&](std::span<float> logits, std::span<const int32_t> history) {
    ++calls;
    CHECK(history.size() >= prompt.size());
    logits[natural] = -INFINITY;
  });
  banned.prefill(prompt);
  int32_t other = banned.step_cached(greedy());
  CHECK(calls == 1);
  CHECK(other != natural);
}

TEST_CASE("packed and f32 weights give the same logits", "[generator]") {
  test::TinyModel tm;
  tm.matrix_dtype = RLX_Q8_0;
  tm.dim = 64;
  tm.ffn = 128;
  fs::path p = temp_model("llama-q8_0.gguf", tm);
  ModelOptions packed, unpacked;
  packed.packed = true;
  unpacked.packed = false;
  auto mp = Model::load(host(), p, packed);
  auto mu = Model::load(host(), p, unpacked);
  CHECK(mp->packed());
  CHECK_FALSE(mu->packed());
  // Exact with f32 activations (read when a device opens); the default int8-activation kernels
  // (x86) land within the rounding of x to 8 bits.
  for (const char* act : {"f32", "q8"}) {
    INFO(act);
    ::setenv("RLX_CPU_QUANT_ACT", act, 1);
    auto dev = host().open_device("cpu");
    ::unsetenv("RLX_CPU_QUANT_ACT");
    Generator gp(dev, *mp), gu(dev, *mu);
    std::vector<int32_t> ctx = {1, 2, 3, 4};
    auto lp = gp.prefill_get_last_logits(ctx);
    auto lu = gu.prefill_get_last_logits(ctx);
    CHECK(rel_rms(lp, lu) < (std::string(act) == "f32" ? 1e-5 : 5e-2));
    CHECK(gp.weights().zero_copy_bytes() > 0);  // packed matrices used straight from the mmap
  }
}

TEST_CASE("a full context and bad token ids are errors, not crashes", "[generator]") {
  auto model = Model::load(host(), temp_model("llama.gguf", {}));
  auto dev = host().open_device("cpu");
  GeneratorOptions o;
  o.max_seq = 4;
  Generator g(dev, *model, o);
  std::vector<int32_t> five = {1, 2, 3, 4, 5};
  CHECK_THROWS_WITH(g.prefill_get_last_logits(five), Catch::Contains("--max-seq"));
  std::vector<int32_t> bad = {1, 1000};
  CHECK_THROWS_WITH(g.prefill_get_last_logits(bad), Catch::Contains("token id 1000"));
}

TEST_CASE("broken models name the tensor or key that is wrong", "[generator][bad]") {
  test::TinyModel missing;
  missing.rename = [](const std::string& n) { return n == "blk.1.ffn_up.weight" ? "" : n; };
  CHECK_THROWS_WITH(Model::load(host(), temp_model("missing.gguf", missing)),
                    Catch::Contains("blk.1.ffn_up.weight") && Catch::Contains("missing.gguf"));

  test::TinyModel arch;
  arch.arch = "mamba";
  CHECK_THROWS_WITH(Model::load(host(), temp_model("mamba.gguf", arch)),
                    Catch::Contains("'mamba'") && Catch::Contains("llama"));

  // Tensors whose shape disagrees with the metadata.
  test::TinyModel shape;
  shape.meta_ffn = 100;
  CHECK_THROWS_WITH(Model::load(host(), temp_model("ffn.gguf", shape)),
                    Catch::Contains("blk.0.ffn_gate.weight") && Catch::Contains("[96, 64]") &&
                        Catch::Contains("[100, 64]"));

  test::TinyModel wrong_heads;
  wrong_heads.heads = 3;  // 64 / 3 is not whole: the metadata cannot describe the q rows
  wrong_heads.head_dim = 16;
  fs::path p2 = temp_model("heads.gguf", wrong_heads);
  CHECK_THROWS_WITH(Model::load(host(), p2), Catch::Contains("multiple of"));
}
