// Profiles: a model's tuning file (`rlx.toml`) that sits next to its weights. Defaults, then one
// file (with its [device.<name>] overrides), then RLX_* environment variables, then CLI flags.
// Every key remembers where its value came from, so `rlx run --print-profile` can say why.
// The schema, lookup order and variables are documented in docs/PROFILES.md.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlx {

// How prefill Programs are kept: an LRU keyed by prompt length, only the latest one, or an LRU
// of power-of-two lengths that shorter prompts are padded into ("dynamic").
enum class PrefillCache { lru, none, dynamic };
// How decode Programs are kept: a power-of-two ladder over past_seq, one Program for every
// position, or one per exact past length (LRU).
enum class DecodeCache { buckets, dynamic, exact };
// Where the next token is picked: greedy argmax on the host, or an lm_head+argmax in the graph.
enum class LmHead { host, graph };
// Compute precision of a Program. Only f32 runs today; a backend may refuse the others.
enum class Precision { f32, f16, bf16 };

std::string_view to_string(PrefillCache v);
std::string_view to_string(DecodeCache v);
std::string_view to_string(LmHead v);
std::string_view to_string(Precision v);

struct PrefillProfile {
  PrefillCache cache = PrefillCache::lru;
  int32_t capacity = 4;  // Programs kept by the LRU
  int64_t seq_cap = 0;   // longest prompt one Program runs; longer ones run in chunks (0 = no cap)
  bool fusion = true;
  Precision precision = Precision::f32;
};

struct DecodeProfile {
  DecodeCache cache = DecodeCache::buckets;
  int32_t capacity = 8;  // Programs kept for `exact`
  int64_t max_past = 0;  // top of the bucket ladder (0 = the KV cache size)
  LmHead lm_head = LmHead::host;
  bool resident_kv = true;  // the KV cache stays on the device across steps
  bool fusion = true;
  Precision precision = Precision::f32;
};

struct MemoryProfile {
  int64_t max_seq = 0;                 // KV cache rows (0 = min(model context, 4096))
  double soft_fraction = 0.8;          // of physical RAM, in (0, 1]
  uint64_t soft_budget_bytes = 0;      // 0 = use soft_fraction
  uint64_t bucket_resident_bytes = 0;  // estimated bytes per kept decode Program (0 = measure)
  bool keep_decode_graphs = true;      // keep compiled decode Programs across utterances
};

struct SamplingProfile {
  float temperature = 0.8f;  // 0 = greedy
  int32_t top_k = 40;        // 0 = off
  float top_p = 0.95f;       // 1 = off
  float min_p = 0.05f;       // 0 = off
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  int64_t seed = -1;  // -1 = random
};

struct ThreadsProfile {
  uint32_t count = 0;  // 0 = all cores
};

struct Profile {
  PrefillProfile prefill;
  DecodeProfile decode;
  MemoryProfile memory;
  SamplingProfile sampling;
  ThreadsProfile threads;

  std::filesystem::path file;                   // the profile file applied; empty = none found
  std::vector<std::filesystem::path> searched;  // where load_profile looked, in order
  std::string device;                           // whose [device.<name>] section was applied

  // "decode.cache" -> "/models/llama32.rlx.toml:12" | "env RLX_DECODE_CACHE" | "flag --x".
  // A key missing here has its default.
  std::map<std::string, std::string, std::less<>> provenance;

  // Where `key` ("section.name") got its value: "default" when nothing set it. Throws
  // rlx::Error for a key the schema does not have.
  const std::string& source(std::string_view key) const;
};

using EnvGetter = std::function<const char*(const char*)>;

struct ProfileLookup {
  std::filesystem::path explicit_path;  // --profile PATH: must exist
  std::filesystem::path weights;        // a weights file or a Hugging Face directory
  std::string family;                   // "llama32", "qwen3"
  std::filesystem::path configs_dir;    // installed share/rlx/configs (may be empty)
  std::string device = "cpu";           // "cpu", "cuda:0": [device.cuda] applies to the latter
  EnvGetter getenv = [](const char* name) -> const char* { return std::getenv(name); };
};

// The files load_profile would try, in order (the first that exists wins):
//   --profile PATH (alone; it must exist)
//   weights dir D:   D/rlx.toml, D/../<D name>.rlx.toml, D/<family>.rlx.toml
//   weights file W:  <W stem>.rlx.toml next to W, <family>.rlx.toml next to W
//   then <configs dir>/<family>.rlx.toml
std::vector<std::filesystem::path> profile_candidates(const ProfileLookup& q);

// Defaults, then the first candidate file (and its [device.<name>] section), then RLX_* env.
// Every problem (syntax, unknown key, wrong type, out of range, bad env value) throws
// rlx::Error naming the file and line or the variable; nothing is silently ignored.
Profile load_profile(const ProfileLookup& q);

// Applies one profile file to `p`: its sections, then [device.<backend>] and
// [device."<backend>:<index>"] for `device`. Every device section is validated, used or not.
void apply_profile_file(Profile& p, const std::filesystem::path& file, std::string_view device);

// Applies RLX_<SECTION>_<KEY> and the named aliases (docs/PROFILES.md); empty values are unset.
void apply_profile_env(Profile& p, std::string_view family, const EnvGetter& getenv);

// Sets one key ("decode.cache") from text, parsed and checked by the key's type as a file value
// would be. Errors start with `label` (e.g. "RLX_DECODE_CACHE='bucket'"); `provenance` is
// recorded for the key. set_from_flag and apply_profile_env are built on it.
void set_from_text(Profile& p, std::string_view key, std::string_view text, std::string_view label,
                   std::string provenance);

// Applies one CLI flag last: `key` is "sampling.temperature", `value` is parsed and checked as
// a file or env value would be; the provenance becomes "flag <flag_name>".
void set_from_flag(Profile& p, std::string_view key, std::string_view value,
                   std::string_view flag_name);

// Every key = value and where it came from, as a TOML document (for --print-profile).
std::string describe(const Profile& p);

// Every key of the schema as "section.name", in schema order.
std::vector<std::string> profile_keys();

}  // namespace rlx
