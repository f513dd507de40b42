// Profiles: lookup order, [device.<name>] overrides, env and flags on top, provenance, and an
// error with file:line (and a did-you-mean) for every kind of bad profile.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "file_util.h"
#include "rlx/error.h"
#include "rlx/profile.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// An injected environment: only these variables exist.
struct Env {
  std::map<std::string, std::string> vars;
  EnvGetter getter() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

const EnvGetter kNoEnv = [](const char*) -> const char* { return nullptr; };

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// Loads `text` as a profile file for `device` (no env), returning the profile.
Profile load_text(const fs::path& file, const std::string& text,
                  const std::string& device = "cpu") {
  write_text(file, text);
  ProfileLookup q;
  q.explicit_path = file;
  q.device = device;
  q.getenv = kNoEnv;
  return load_profile(q);
}

fs::path source_dir() {
#ifdef RLX_TEST_SOURCE_DIR
  fs::path d = RLX_TEST_SOURCE_DIR;
#else
  fs::path d = fs::path(__FILE__).parent_path().parent_path().parent_path();
#endif
  // Either the repository root or its tests/ folder.
  if (!fs::exists(d / "configs") && fs::exists(d.parent_path() / "configs")) d = d.parent_path();
  return d;
}

}  // namespace

TEST_CASE("a default profile has the documented values and says 'default'", "[profile]") {
  Profile p;
  CHECK(p.prefill.cache == PrefillCache::lru);
  CHECK(p.prefill.capacity == 4);
  CHECK(p.decode.cache == DecodeCache::buckets);
  CHECK(p.decode.capacity == 8);
  CHECK(p.decode.lm_head == LmHead::host);
  CHECK(p.memory.soft_fraction == 0.8);
  CHECK(p.sampling.seed == -1);
  CHECK(p.threads.count == 0);
  CHECK(p.source("decode.cache") == "default");
  CHECK(profile_keys().size() == 25);
  CHECK_THROWS_WITH(p.source("decode.cach"), Catch::Contains("did you mean 'decode.cache'?"));
}

TEST_CASE("lookup order: --profile, <stem>.rlx.toml, <family>.rlx.toml, configs dir", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path models = dir.path / "models";
  const fs::path configs = dir.path / "configs";
  const fs::path weights = models / "llama-1b.Q4_K.gguf";
  write_text(weights, "");
  ProfileLookup q;
  q.weights = weights;
  q.family = "llama32";
  q.configs_dir = configs;
  q.getenv = kNoEnv;

  // Nothing anywhere: the defaults, and where it looked.
  Profile p = load_profile(q);
  CHECK(p.file.empty());
  REQUIRE(p.searched.size() == 3);
  CHECK(p.searched[0] == models / "llama-1b.Q4_K.rlx.toml");
  CHECK(p.searched[1] == models / "llama32.rlx.toml");
  CHECK(p.searched[2] == configs / "llama32.rlx.toml");
  CHECK(p.sampling.top_k == 40);

  write_text(configs / "llama32.rlx.toml", "[sampling]\ntop_k = 1\n");
  p = load_profile(q);
  CHECK(p.file == configs / "llama32.rlx.toml");
  CHECK(p.sampling.top_k == 1);

  write_text(models / "llama32.rlx.toml", "[sampling]\ntop_k = 2\n");
  p = load_profile(q);
  CHECK(p.file == models / "llama32.rlx.toml");
  CHECK(p.sampling.top_k == 2);

  write_text(models / "llama-1b.Q4_K.rlx.toml", "[sampling]\ntop_k = 3\n");
  p = load_profile(q);
  CHECK(p.file == models / "llama-1b.Q4_K.rlx.toml");
  CHECK(p.sampling.top_k == 3);
  CHECK(p.source("sampling.top_k") == (models / "llama-1b.Q4_K.rlx.toml").string() + ":2");

  // Only one file is used: keys it does not set keep their defaults, not the next file's.
  write_text(models / "llama-1b.Q4_K.rlx.toml", "[sampling]\ntop_p = 0.5\n");
  p = load_profile(q);
  CHECK(p.sampling.top_k == 40);
  CHECK(p.sampling.top_p == 0.5f);

  // A broken file is an error, not a reason to fall back to the next one.
  write_text(models / "llama-1b.Q4_K.rlx.toml", "[sampling]\ntop_k = \"many\"\n");
  CHECK(error_of([&] { load_profile(q); }) ==
        (models / "llama-1b.Q4_K.rlx.toml").string() +
            ":2: sampling.top_k must be an integer, got string");

  write_text(dir.path / "mine.toml", "[sampling]\ntop_k = 4\n");
  q.explicit_path = dir.path / "mine.toml";
  p = load_profile(q);
  CHECK(p.file == dir.path / "mine.toml");
  CHECK(p.sampling.top_k == 4);

  q.explicit_path = dir.path / "missing.toml";
  CHECK(error_of([&] { load_profile(q); }) ==
        "--profile " + (dir.path / "missing.toml").string() + ": no such file");
}

TEST_CASE("lookup for a Hugging Face directory: rlx.toml inside it first", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path hf = dir.path / "Llama-3.2-1B";
  fs::create_directories(hf);
  ProfileLookup q;
  q.weights = hf.string() + "/";  // a trailing slash names the same directory
  q.family = "llama32";
  q.getenv = kNoEnv;
  auto c = profile_candidates(q);
  REQUIRE(c.size() == 3);
  CHECK(c[0] == hf / "rlx.toml");
  CHECK(c[1] == dir.path / "Llama-3.2-1B.rlx.toml");
  CHECK(c[2] == hf / "llama32.rlx.toml");

  write_text(hf / "llama32.rlx.toml", "[threads]\ncount = 1\n");
  CHECK(load_profile(q).threads.count == 1);
  write_text(dir.path / "Llama-3.2-1B.rlx.toml", "[threads]\ncount = 2\n");
  CHECK(load_profile(q).threads.count == 2);
  write_text(hf / "rlx.toml", "[threads]\ncount = 3\n");
  CHECK(load_profile(q).threads.count == 3);
}

TEST_CASE("weights named after their family are looked up once", "[profile]") {
  ProfileLookup q;
  q.weights = "/m/llama32.gguf";
  q.family = "llama32";
  auto c = profile_candidates(q);
  REQUIRE(c.size() == 1);
  CHECK(c[0] == fs::path("/m/llama32.rlx.toml"));
}

TEST_CASE("[device.<name>] overrides apply to that backend only", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path f = dir.path / "p.rlx.toml";
  const std::string text =
      "[decode]\n"                // 1
      "cache = \"exact\"\n"       // 2
      "capacity = 3\n"            // 3
      "\n"                        // 4
      "[device.vulkan.decode]\n"  // 5
      "cache = \"buckets\"\n"     // 6
      "\n"                        // 7
      "[device.\"vulkan:1\"]\n"   // 8
      "decode.capacity = 5\n"     // 9
      "memory.max_seq = 512\n";   // 10
  Profile cpu = load_text(f, text, "cpu");
  CHECK(cpu.decode.cache == DecodeCache::exact);
  CHECK(cpu.decode.capacity == 3);
  CHECK(cpu.memory.max_seq == 0);
  CHECK(cpu.device == "cpu");

  Profile vk = load_text(f, text, "vulkan");
  CHECK(vk.decode.cache == DecodeCache::buckets);
  CHECK(vk.source("decode.cache") == f.string() + ":6");
  CHECK(vk.decode.capacity == 3);
  CHECK(vk.source("decode.capacity") == f.string() + ":3");

  // "vulkan:1" takes [device.vulkan] and then [device."vulkan:1"].
  Profile vk1 = load_text(f, text, "vulkan:1");
  CHECK(vk1.decode.cache == DecodeCache::buckets);
  CHECK(vk1.decode.capacity == 5);
  CHECK(vk1.source("decode.capacity") == f.string() + ":9");
  CHECK(vk1.memory.max_seq == 512);

  // A mistake in another device's section is still an error.
  CHECK(error_of([&] { load_text(f, "[device.cuda.decode]\ncach = \"exact\"\n", "cpu"); }) ==
        f.string() +
            ":2: unknown key 'device.cuda.decode.cach' (did you mean 'device.cuda.decode.cache'?)");
  CHECK(error_of([&] { load_text(f, "[device.cuda]\ncapacity = 2\n", "cpu"); }) ==
        f.string() +
            ":2: unknown key 'device.cuda.capacity' (did you mean 'device.cuda.prefill.capacity' "
            "or 'device.cuda.decode.capacity'?)");
  CHECK(error_of([&] { load_text(f, "[device]\ncuda = 1\n", "cpu"); }) ==
        f.string() + ":2: device.cuda must be a table ([device.cuda.decode]), got integer");
}

TEST_CASE("env overrides the file; named variables and the family's lm_head switch", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path f = dir.path / "llama32.rlx.toml";
  write_text(f,
             "[decode]\ncache = \"buckets\"\n[prefill]\nseq_cap = 64\n[memory]\n"
             "soft_fraction = 0.5\n");
  Env env;
  env.vars = {{"RLX_DECODE_CACHE", "exact"},
              {"RLX_PREFILL_SEQ_CAP", "256"},
              {"RLX_THREADS_COUNT", "2"},
              {"RLX_SAMPLING_TEMPERATURE", "0"},
              {"RLX_SOFT_MEMORY_FRACTION", "0.25"},
              {"RLX_SOFT_MEMORY_BUDGET_BYTES", "1000000"},
              {"RLX_DECODE_BUCKET_RESIDENT_BYTES", "4096"},
              {"RLX_KEEP_DECODE_GRAPHS", "0"},
              {"RLX_RESIDENT_KV", "0"},
              {"RLX_LLAMA32_GRAPH_LM_HEAD", "1"},
              {"RLX_MEMORY_MAX_SEQ", ""}};  // empty = unset
  ProfileLookup q;
  q.explicit_path = f;
  q.family = "llama32";
  q.getenv = env.getter();
  Profile p = load_profile(q);
  CHECK(p.decode.cache == DecodeCache::exact);
  CHECK(p.source("decode.cache") == "env RLX_DECODE_CACHE");
  CHECK(p.prefill.seq_cap == 256);
  CHECK(p.threads.count == 2);
  CHECK(p.sampling.temperature == 0.0f);
  CHECK(p.memory.soft_fraction == 0.25);
  CHECK(p.source("memory.soft_fraction") == "env RLX_SOFT_MEMORY_FRACTION");
  CHECK(p.memory.soft_budget_bytes == 1000000);
  CHECK(p.memory.bucket_resident_bytes == 4096);
  CHECK_FALSE(p.memory.keep_decode_graphs);
  CHECK_FALSE(p.decode.resident_kv);
  CHECK(p.source("decode.resident_kv") == "env RLX_RESIDENT_KV");
  CHECK(p.decode.lm_head == LmHead::graph);
  CHECK(p.source("decode.lm_head") == "env RLX_LLAMA32_GRAPH_LM_HEAD");
  CHECK(p.memory.max_seq == 0);
  CHECK(p.source("memory.max_seq") == "default");

  // Another family's switch does nothing here.
  q.family = "qwen3";
  CHECK(load_profile(q).decode.lm_head == LmHead::host);
  q.family = "llama32";

  // The RLX_<SECTION>_<KEY> name wins over the named alias.
  env.vars["RLX_MEMORY_SOFT_FRACTION"] = "0.75";
  p = load_profile(q);
  CHECK(p.memory.soft_fraction == 0.75);
  CHECK(p.source("memory.soft_fraction") == "env RLX_MEMORY_SOFT_FRACTION");
}

TEST_CASE("a malformed env value names the variable, the value and the type", "[profile]") {
  Profile p;
  auto env_error = [&](std::string var, std::string value, std::string_view family = "") {
    Env env;
    env.vars[var] = value;
    return error_of([&] { apply_profile_env(p, family, env.getter()); });
  };
  CHECK(env_error("RLX_DECODE_CAPACITY", "abc") ==
        "RLX_DECODE_CAPACITY='abc': decode.capacity must be an integer");
  CHECK(env_error("RLX_DECODE_CAPACITY", "-3") ==
        "RLX_DECODE_CAPACITY='-3': decode.capacity must be >= 1, got -3");
  CHECK(env_error("RLX_SOFT_MEMORY_FRACTION", "lots") ==
        "RLX_SOFT_MEMORY_FRACTION='lots': memory.soft_fraction must be a number");
  CHECK(env_error("RLX_SOFT_MEMORY_FRACTION", "1.5") ==
        "RLX_SOFT_MEMORY_FRACTION='1.5': memory.soft_fraction must be in (0, 1], got 1.5");
  CHECK(env_error("RLX_KEEP_DECODE_GRAPHS", "maybe") ==
        "RLX_KEEP_DECODE_GRAPHS='maybe': memory.keep_decode_graphs must be a boolean "
        "(1/0, true/false, yes/no, on/off)");
  CHECK(env_error("RLX_DECODE_CACHE", "bucket") ==
        "RLX_DECODE_CACHE='bucket': decode.cache must be one of \"buckets\", \"dynamic\", "
        "\"exact\", got \"bucket\" (did you mean \"buckets\"?)");
  CHECK(env_error("RLX_LLAMA32_GRAPH_LM_HEAD", "yes", "llama32") ==
        "RLX_LLAMA32_GRAPH_LM_HEAD='yes': expected 0 or 1 (1 = decode.lm_head \"graph\")");
}

TEST_CASE("flags apply last, with the same checks", "[profile]") {
  Env env;
  env.vars = {{"RLX_SAMPLING_TEMPERATURE", "0.1"}};
  ProfileLookup q;
  q.getenv = env.getter();
  Profile p = load_profile(q);
  CHECK(p.sampling.temperature == 0.1f);
  set_from_flag(p, "sampling.temperature", "0.3", "--temperature");
  CHECK(p.sampling.temperature == 0.3f);
  CHECK(p.source("sampling.temperature") == "flag --temperature");
  set_from_flag(p, "sampling.seed", "7", "seed");
  CHECK(p.sampling.seed == 7);
  CHECK(p.source("sampling.seed") == "flag --seed");
  set_from_flag(p, "decode.cache", "dynamic", "--decode-cache");
  CHECK(p.decode.cache == DecodeCache::dynamic);

  CHECK(error_of([&] { set_from_flag(p, "sampling.top_k", "-1", "--top-k"); }) ==
        "--top-k '-1': sampling.top_k must be >= 0, got -1");
  CHECK(error_of([&] { set_from_flag(p, "sampling.top_p", "x", "--top-p"); }) ==
        "--top-p 'x': sampling.top_p must be a number");
  CHECK(error_of([&] { set_from_flag(p, "sampling.temprature", "1", "--temperature"); }) ==
        "--temperature '1': unknown profile key 'sampling.temprature' (did you mean "
        "'sampling.temperature'?)");
}

TEST_CASE("every value type is read from a file with its line as provenance", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path f = dir.path / "all.rlx.toml";
  Profile p = load_text(f,
                        "[prefill]\n"                          // 1
                        "cache = \"none\"\n"                   // 2
                        "precision = \"bf16\"\n"               // 3
                        "[decode]\n"                           // 4
                        "fusion = false\n"                     // 5
                        "max_past = 1024\n"                    // 6
                        "[memory]\n"                           // 7
                        "soft_fraction = 1\n"                  // 8: an integer is a fine number
                        "soft_budget_bytes = 8_000_000_000\n"  // 9
                        "[sampling]\n"                         // 10
                        "repeat_penalty = 1.1\n"               // 11
                        "seed = 42\n");                        // 12
  CHECK(p.prefill.cache == PrefillCache::none);
  CHECK(p.prefill.precision == Precision::bf16);
  CHECK_FALSE(p.decode.fusion);
  CHECK(p.decode.max_past == 1024);
  CHECK(p.memory.soft_fraction == 1.0);
  CHECK(p.memory.soft_budget_bytes == 8000000000ull);
  CHECK(p.sampling.repeat_penalty == 1.1f);
  CHECK(p.sampling.seed == 42);
  CHECK(p.source("prefill.cache") == f.string() + ":2");
  CHECK(p.source("memory.soft_budget_bytes") == f.string() + ":9");
  CHECK(p.source("sampling.seed") == f.string() + ":12");
  CHECK(p.source("sampling.top_k") == "default");
}

TEST_CASE("bad profiles fail with file:line and what to do", "[profile]") {
  test::TempDir dir("rlx-profile");
  const fs::path f = dir.path / "bad.rlx.toml";
  const std::string at = f.string() + ":";
  auto bad = [&](const std::string& text) { return error_of([&] { load_text(f, text); }); };

  SECTION("syntax error: file:line:col and toml++'s message") {
    std::string e = bad("[decode]\ncache = \n");
    CHECK(e.starts_with(at + "2:9: "));
    CHECK(e.find("expected") != std::string::npos);
    e = bad("[decode]\ncache = \"exact\"\ncache = \"exact\"\n");
    CHECK(e.starts_with(at + "3:"));
  }
  SECTION("unknown key, with and without a near miss") {
    CHECK(bad("[decode]\ncapacity = 2\ncach = \"exact\"\n") ==
          at + "3: unknown key 'decode.cach' (did you mean 'decode.cache'?)");
    CHECK(bad("[threads]\nnumber = 2\n") ==
          at + "2: unknown key 'threads.number' (keys of [threads]: count)");
    CHECK(bad("temprature = 0.5\n") ==
          at + "1: unknown key 'temprature' (did you mean 'sampling.temperature'?)");
  }
  SECTION("unknown section") {
    CHECK(bad("\n[decdoe]\ncache = \"exact\"\n") ==
          at + "2: unknown section 'decdoe' (did you mean 'decode'?)");
    CHECK(bad("[device.cpu.sampler]\ntop_k = 1\n") ==
          at + "1: unknown section 'device.cpu.sampler' (did you mean 'device.cpu.sampling'?)");
    CHECK(bad("[graph]\nx = 1\n") ==
          at + "1: unknown section 'graph' (sections: prefill, decode, memory, sampling, threads, "
               "device)");
  }
  SECTION("enum value, with did-you-mean") {
    CHECK(bad("[decode]\ncache = \"bucket\"\n") ==
          at + "2: decode.cache must be one of \"buckets\", \"dynamic\", \"exact\", got \"bucket\" "
               "(did you mean \"buckets\"?)");
    CHECK(bad("[prefill]\nprecision = \"int8\"\n") ==
          at + "2: prefill.precision must be one of \"f32\", \"f16\", \"bf16\", got \"int8\"");
  }
  SECTION("wrong type") {
    CHECK(bad("[decode]\ncapacity = \"8\"\n") ==
          at + "2: decode.capacity must be an integer, got string");
    CHECK(bad("[decode]\ncapacity = 8.0\n") ==
          at + "2: decode.capacity must be an integer, got float");
    CHECK(bad("[decode]\ncache = 1\n") ==
          at + "2: decode.cache must be one of \"buckets\", \"dynamic\", \"exact\", got integer");
    CHECK(bad("[decode]\nresident_kv = \"yes\"\n") ==
          at + "2: decode.resident_kv must be a boolean (true or false), got string");
    CHECK(bad("[sampling]\ntop_p = [0.9]\n") ==
          at + "2: sampling.top_p must be a number, got array");
    CHECK(bad("decode = 3\n") == at + "1: decode must be a table ([decode]), got integer");
  }
  SECTION("out of range") {
    CHECK(bad("[prefill]\ncapacity = -1\n") == at + "2: prefill.capacity must be >= 1, got -1");
    CHECK(bad("[memory]\nsoft_fraction = 0.0\n") ==
          at + "2: memory.soft_fraction must be in (0, 1], got 0");
    CHECK(bad("[memory]\nsoft_fraction = 1.5\n") ==
          at + "2: memory.soft_fraction must be in (0, 1], got 1.5");
    CHECK(bad("[sampling]\nseed = -2\n") == at + "2: sampling.seed must be >= -1, got -2");
    CHECK(bad("[sampling]\nrepeat_penalty = 0\n") ==
          at + "2: sampling.repeat_penalty must be > 0, got 0");
    CHECK(bad("[sampling]\ntemperature = nan\n") ==
          at + "2: sampling.temperature must be a finite number, got nan");
    CHECK(bad("[decode]\ncapacity = 3000000000\n") ==
          at + "2: decode.capacity must be <= 2147483647, got 3000000000");
  }
}

TEST_CASE("the shipped configs load cleanly and spell out every default", "[profile]") {
  for (const char* family : {"llama32", "qwen3"}) {
    INFO(family);
    ProfileLookup q;
    q.family = family;
    q.configs_dir = source_dir() / "configs";
    q.getenv = kNoEnv;
    Profile p = load_profile(q);
    REQUIRE(p.file == q.configs_dir / (std::string(family) + ".rlx.toml"));
    // The same values as a default profile, and every key written in the file.
    Profile d;
    d.file = p.file;
    d.device = p.device;
    d.searched = p.searched;
    d.provenance = p.provenance;
    CHECK(describe(p) == describe(d));
    for (const std::string& key : profile_keys()) {
      INFO(key);
      CHECK(p.source(key).starts_with(p.file.string() + ":"));
    }
  }
}

TEST_CASE("describe shows every key, its value and where it came from", "[profile]") {
  Profile p;
  set_from_flag(p, "decode.cache", "exact", "--decode-cache");
  p.device = "cpu";
  std::string d = describe(p);
  CHECK(d.starts_with("# profile: none found; device cpu\n"));
  CHECK(d.find("[decode]\ncache = \"exact\"") != std::string::npos);
  CHECK(d.find("# flag --decode-cache") != std::string::npos);
  CHECK(d.find("soft_fraction = 0.8") != std::string::npos);
  CHECK(d.find("repeat_penalty = 1.0") != std::string::npos);
  for (const std::string& key : profile_keys())
    CHECK(d.find(key.substr(key.find('.') + 1) + " = ") != std::string::npos);

  // What describe prints is itself a profile that loads back to the same values.
  test::TempDir dir("rlx-profile");
  Profile back = load_text(dir.path / "back.rlx.toml", d);
  CHECK(back.decode.cache == DecodeCache::exact);
  CHECK(back.memory.soft_fraction == 0.8);
  CHECK(back.sampling.temperature == 0.8f);
}
