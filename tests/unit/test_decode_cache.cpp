// Decode machinery: the bucket ladder compiles O(log N) Programs and gives the same tokens as
// exact shapes; prompts run in chunks under a seq cap; compiled Programs survive prefill();
// the soft memory budget evicts the highest buckets first.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "rlx/generator.h"
#include "rlx/model.h"
#include "rlx/session.h"
#include "tiny_model.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  PluginHost host;
  std::unique_ptr<Model> model;
  std::shared_ptr<Device> dev;
  Fixture()
      : host([] {
          PluginHostOptions o;
          o.plugin_dirs = {RLX_TEST_PLUGIN_DIR};
          o.use_env = false;
          o.use_install_dir = false;
          return o;
        }()) {
    fs::path dir = fs::temp_directory_path() / "rlx-test-decode";
    fs::create_directories(dir);
    test::TinyModel tm;
    tm.ctx = 256;
    test::write_tiny_model(tm, dir / "llama.gguf");
    model = Model::load(host, dir / "llama.gguf");
    dev = host.open_device("cpu");
  }
};

SampleOpts greedy() {
  SampleOpts o;
  o.greedy = true;
  return o;
}

std::vector<int32_t> run(Fixture& f, GeneratorOptions o, std::vector<int32_t> prompt, int n,
                         GeneratorStats* stats = nullptr) {
  Generator g(f.dev, *f.model, o);
  g.prefill(prompt);
  auto out = g.generate_cached(n, greedy());
  if (stats) *stats = g.stats();
  return out;
}

}  // namespace

TEST_CASE("the bucket ladder", "[decode]") {
  CHECK(decode_bucket(0).hi == 1);
  CHECK(decode_bucket(1).lo == 1);
  CHECK(decode_bucket(1).hi == 2);
  CHECK(decode_bucket(2).hi == 3);
  CHECK(decode_bucket(3).lo == 3);
  CHECK(decode_bucket(4).hi == 5);
  CHECK(decode_bucket(5).lo == 5);
  CHECK(decode_bucket(8).hi == 9);
  CHECK(decode_bucket(9).hi == 17);
  for (int64_t past = 1; past < 5000; ++past) {
    DecodeBucket b = decode_bucket(past);
    REQUIRE(b.lo <= past);
    REQUIRE(past < b.hi);
    REQUIRE(b.hi <= 2 * (past + 1));  // padding waste stays under 2x
    REQUIRE(decode_bucket(b.lo).hi == b.hi);
  }
}

TEST_CASE("buckets compile O(log N) programs and match exact shapes", "[decode]") {
  Fixture f;
  std::vector<int32_t> prompt = {1, 2, 3};
  GeneratorOptions exact, buckets, dynamic;
  exact.decode_cache = DecodeCache::exact;
  exact.decode_capacity = 100;
  buckets.decode_cache = DecodeCache::buckets;
  dynamic.decode_cache = DecodeCache::dynamic;
  GeneratorStats se, sb, sd;
  auto te = run(f, exact, prompt, 40, &se);
  auto tb = run(f, buckets, prompt, 40, &sb);
  auto td = run(f, dynamic, prompt, 40, &sd);
  CHECK(tb == te);
  CHECK(td == te);
  // The first token comes from the prompt's logits; 39 decodes at past 3..41.
  CHECK(se.decode_compiles == 39);
  CHECK(sb.decode_compiles == 5);  // rows 5, 9, 17, 33, 65
  CHECK(sd.decode_compiles == 1);
  CHECK(sb.prefill_compiles == 1);
}

TEST_CASE("a prompt longer than the seq cap runs in chunks", "[decode]") {
  Fixture f;
  std::vector<int32_t> prompt = {5, 4, 3, 2, 1, 9, 8};
  GeneratorOptions whole, chunked;
  chunked.prefill_seq_cap = 3;
  Generator a(f.dev, *f.model, whole), b(f.dev, *f.model, chunked);
  auto la = a.prefill_get_last_logits(prompt);
  auto lb = b.prefill_get_last_logits(prompt);
  double num = 0, den = 0;
  for (size_t i = 0; i < la.size(); ++i) {
    num += (la[i] - lb[i]) * double(la[i] - lb[i]);
    den += double(la[i]) * la[i];
  }
  CHECK(std::sqrt(num / den) < 1e-5);
  CHECK(b.stats().prefill_compiles == 1);  // chunks of 3 share one Program; the last (1) decodes
  CHECK(b.past() == 7);
}

TEST_CASE("decode programs survive a new utterance unless told otherwise", "[decode]") {
  Fixture f;
  for (bool keep : {true, false}) {
    INFO("keep " << keep);
    GeneratorOptions o;
    o.keep_decode_programs = keep;
    Generator g(f.dev, *f.model, o);
    std::vector<int32_t> first = {1, 2, 3}, second = {4, 5, 6};
    g.prefill(first);
    auto t1 = g.generate_cached(10, greedy());
    uint64_t after_first = g.stats().decode_compiles;
    g.prefill(second);
    auto t2 = g.generate_cached(10, greedy());
    uint64_t second_compiles = g.stats().decode_compiles - after_first;
    CHECK(second_compiles == (keep ? 0u : after_first));
    // Same tokens as a fresh generator: nothing of the first utterance leaks into the second.
    Generator fresh(f.dev, *f.model, o);
    fresh.prefill(second);
    CHECK(fresh.generate_cached(10, greedy()) == t2);
  }
}

TEST_CASE("the soft budget evicts the highest buckets first", "[decode]") {
  Fixture f;
  std::vector<int32_t> prompt = {1, 2, 3};
  GeneratorOptions roomy;
  roomy.soft_budget_bytes = 1ull << 40;
  roomy.bucket_resident_bytes = 1 << 20;  // count each decode Program as 1 MiB
  Generator a(f.dev, *f.model, roomy);
  a.prefill(prompt);
  auto ta = a.generate_cached(30, greedy());
  CHECK(a.stats().decode_evictions == 0);
  CHECK(a.decode_rows() == std::vector<int64_t>{5, 9, 17, 33});

  // Room for everything else plus two and a half decode Programs.
  Generator probe(f.dev, *f.model, roomy);
  probe.prefill(prompt);
  probe.generate_cached(1, greedy());  // weights, KV cache and the prefill Program, no decode
  GeneratorOptions tight = roomy;
  tight.soft_budget_bytes = probe.resident_estimate() + (5ull << 19);
  Generator b(f.dev, *f.model, tight);
  b.prefill(prompt);
  auto tb = b.generate_cached(30, greedy());
  CHECK(tb == ta);  // eviction changes what is kept, never the tokens
  CHECK(b.stats().decode_evictions == 2);
  CHECK(b.decode_rows() == std::vector<int64_t>{5, 33});  // 9 went for 17, 17 went for 33
}

TEST_CASE("host-greedy lm_head: same tokens as in the graph, adjusted before the argmax",
          "[decode]") {
  Fixture f;
  std::vector<int32_t> prompt = {2, 7, 1, 8};
  GeneratorOptions host, graph;
  host.host_lm_head = true;
  graph.host_lm_head = false;
  Generator h(f.dev, *f.model, host), g(f.dev, *f.model, graph);
  CHECK(h.host_lm_head());
  CHECK_FALSE(g.host_lm_head());
  h.prefill(prompt);
  g.prefill(prompt);
  auto th = h.generate_cached(12, greedy());
  auto tg = g.generate_cached(12, greedy());
  CHECK(th == tg);
  CHECK(h.stats().host_head_tokens == 11);  // every decode step; the first token is the prompt's
  CHECK(g.stats().host_head_tokens == 0);

  // Ban the token the host path picked at its third step: the adjusted run must avoid it, so
  // the adjustment reached the host argmax.
  const int32_t banned = th[2];
  Generator adj(f.dev, *f.model, host);
  int calls = 0;
  adj.set_logit_adjust([&](std::span<float> logits, std::span<const int32_t>) {
    ++calls;
    logits[banned] = -INFINITY;
  });
  adj.prefill(prompt);
  auto ta = adj.generate_cached(12, greedy());
  CHECK(calls == 12);
  CHECK(adj.stats().host_head_tokens == 11);
  CHECK(std::find(ta.begin(), ta.end(), banned) == ta.end());
  // Up to the banned token's first appearance nothing changes.
  size_t first = std::find(th.begin(), th.end(), banned) - th.begin();
  CHECK(std::vector<int32_t>(ta.begin(), ta.begin() + first) ==
        std::vector<int32_t>(th.begin(), th.begin() + first));
}

TEST_CASE("a host-side KV cache gives the same tokens as the resident one", "[decode]") {
  Fixture f;
  std::vector<int32_t> prompt = {3, 3, 9};
  GeneratorOptions resident, plain;
  plain.resident_kv = false;
  for (bool host_head : {true, false}) {
    resident.host_lm_head = plain.host_lm_head = host_head;
    Generator a(f.dev, *f.model, resident), b(f.dev, *f.model, plain);
    a.prefill(prompt);
    b.prefill(prompt);
    CHECK(a.generate_cached(10, greedy()) == b.generate_cached(10, greedy()));
  }
}

TEST_CASE("a session opens weights with the profile beside them", "[decode][profile]") {
  PluginHostOptions ho;
  ho.plugin_dirs = {RLX_TEST_PLUGIN_DIR};
  ho.use_env = false;
  ho.use_install_dir = false;
  PluginHost host(ho);
  fs::path dir = fs::temp_directory_path() / "rlx-test-session";
  fs::create_directories(dir);
  test::write_tiny_model({}, dir / "tiny.gguf");
  {
    std::ofstream(dir / "tiny.rlx.toml")
        << "[decode]\ncache = \"exact\"\ncapacity = 3\n[prefill]\nseq_cap = 2\n"
           "[sampling]\ntemperature = 0\nseed = 5\n";
  }
  Session s = Session::open(host, dir / "tiny.gguf");
  CHECK(s.profile.file == dir / "tiny.rlx.toml");
  CHECK(s.generator->decode_profile().cache == DecodeCache::exact);
  CHECK(s.generator->decode_profile().capacity == 3);
  CHECK(s.generator->prefill_profile().seq_cap == 2);
  CHECK(s.sampling.seed == 5);
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  s.generator->prefill(prompt);
  auto out = s.generator->generate_cached(6, s.sampling);
  CHECK(out.size() == 6);
  // exact: one per past length. The prompt's last chunk (5 = 2 + 2 + 1 under seq_cap 2) is one
  // token at past 4; then 5 greedy decodes at past 5..9.
  CHECK(s.generator->stats().decode_compiles == 6);
  fs::remove(dir / "tiny.rlx.toml");
}

TEST_CASE("dynamic prefill pads prompts into power-of-two Programs", "[decode]") {
  Fixture f;
  GeneratorOptions exact, dynamic;
  dynamic.with_dynamic_prefill_cache(8);
  for (int n : {2, 3, 5, 7, 8, 13}) {
    INFO("prompt length " << n);
    std::vector<int32_t> prompt;
    for (int i = 0; i < n; ++i) prompt.push_back((i * 7 + 3) % 90);
    Generator a(f.dev, *f.model, exact), b(f.dev, *f.model, dynamic);
    auto la = a.prefill_get_last_logits(prompt);
    auto lb = b.prefill_get_last_logits(prompt);
    double num = 0, den = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      num += (la[i] - lb[i]) * double(la[i] - lb[i]);
      den += double(la[i]) * la[i];
    }
    CHECK(std::sqrt(num / den) < 1e-5);
    // The padded rows stored nothing: decoding continues exactly as without padding.
    CHECK(a.generate_cached(4, greedy()) == b.generate_cached(4, greedy()));
  }
  // Lengths 3..8 and 13 share the Programs for 4, 8 and 16 rows.
  Generator g(f.dev, *f.model, dynamic);
  for (int n : {3, 4, 5, 6, 7, 8, 13}) {
    std::vector<int32_t> prompt(n, 1);
    g.prefill_get_last_logits(prompt);
  }
  CHECK(g.stats().prefill_compiles == 3);
  CHECK(g.prefill_profile().cache == PrefillCache::dynamic);
}
