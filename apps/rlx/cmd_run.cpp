// `rlx run`: load a model, run a prompt (text with --prompt, or token ids with --prompt-ids),
// stream what it generates (text, or ids), and end with a timing line. Every sampling flag
// reaches the sampler (tests check each one changes output).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>

#include "commands.h"
#include "common.h"
#include "interrupt.h"
#include "rlx/error.h"
#include "rlx/generator.h"
#include "rlx/log.h"
#include "rlx/model.h"
#include "rlx/profile.h"
#include "text.h"

namespace rlx::cli {
namespace {

// Writes raw little-endian float32 to `path` atomically (temp file + rename).
void write_logits(const std::string& path, std::span<const float> logits) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail("--logits-out: cannot write '{}'", tmp);
    f.write(reinterpret_cast<const char*>(logits.data()),
            static_cast<std::streamsize>(logits.size() * sizeof(float)));
    if (!f) fail("--logits-out: writing '{}' failed", tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("--logits-out: cannot rename '{}' to '{}'", tmp, path);
  }
}

}  // namespace

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("rlx run", "Generate tokens from a model.");
  add_common_flags(opts);
  auto add = opts.add_options();
  add("weights", "a .gguf file or a Hugging Face model directory", cxxopts::value<std::string>(),
      "PATH");
  add("device", "NAME or NAME:INDEX", cxxopts::value<std::string>()->default_value("cpu"));
  add("prompt", "prompt text, tokenized with the model's tokenizer (BOS added when it uses one); "
      "the output is text",
      cxxopts::value<std::string>(), "TEXT");
  add("tokenizer", "a tokenizer.json to use instead of the model's own",
      cxxopts::value<std::string>(), "PATH");
  add("prompt-ids",
      "comma-separated prompt token ids; several utterances separated by ';' run one after the "
      "other on the same generator (compiled programs are reused)",
      cxxopts::value<std::string>(), "IDS");
  add("max-tokens", "tokens to generate", cxxopts::value<int>()->default_value("16"));
  // No defaults here: unset flags leave the profile's values (rlx.toml, env) in place.
  for (const ProfileFlag& f : kProfileFlags)
    add(f.flag, std::string(f.help) + " [" + f.key + "]", cxxopts::value<std::string>());
  add("profile", "the rlx.toml to use (default: found next to the weights, then configs/)",
      cxxopts::value<std::string>(), "PATH");
  add("print-profile", "print the effective profile and where each value came from, then exit");
  add("packed", "keep quantized weights packed (default: on for GGUF >= 256 MB)");
  add("no-packed", "convert every weight to f32 at load");
  add("ignore-eos", "do not stop at the end-of-sequence token");
  add("no-kv-cache", "recompute the whole history every step (slow; for testing)");
  add("logits-out", "write the last prompt position's logits (raw f32 LE)",
      cxxopts::value<std::string>(), "FILE");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  PluginHost host(apply_common_flags(r));
  if (!r.count("weights")) fail("rlx run: --weights is required (a .gguf file or an HF directory)");
  if (!r.count("prompt-ids") && !r.count("prompt") && !r.count("print-profile"))
    fail("rlx run: give --prompt TEXT or --prompt-ids IDS (e.g. --prompt-ids 1,42)");
  if (r.count("prompt-ids") && r.count("prompt"))
    fail("rlx run: --prompt and --prompt-ids conflict: give one");
  if (r.count("packed") && r.count("no-packed")) fail("rlx run: --packed and --no-packed conflict");

  // Flags are checked before the (possibly slow) model load.
  std::vector<std::vector<int32_t>> prompts;
  if (r.count("prompt-ids")) {
    std::string all = r["prompt-ids"].as<std::string>();
    for (size_t i = 0; i <= all.size();) {
      size_t j = std::min(all.find(';', i), all.size());
      prompts.push_back(parse_ids(all.substr(i, j - i)));
      i = j + 1;
    }
  }
  const int max_tokens = r["max-tokens"].as<int>();
  if (max_tokens < 0) fail("--max-tokens must be >= 0");
  ModelOptions mopts;
  if (r.count("packed")) mopts.packed = true;
  if (r.count("no-packed")) mopts.packed = false;
  const std::string weights = r["weights"].as<std::string>();
  auto model = Model::load(host, weights, mopts);
  // Text mode: the prompt is tokenized, the output decoded as it streams.
  std::optional<Tokenizer> tok;
  if (r.count("prompt")) {
    tok = load_tokenizer(weights, &model->file(),
                         r.count("tokenizer") ? r["tokenizer"].as<std::string>() : "");
    EncodeOptions eo;
    eo.add_bos = true;
    prompts.push_back(tok->encode(r["prompt"].as<std::string>(), eo));
    if (prompts.back().empty()) fail("rlx run: --prompt is empty");
  }

  // Profile: rlx.toml (next to the weights, else configs/), then RLX_* env, then flags.
  const std::string device = r["device"].as<std::string>();
  ProfileLookup lookup;
  if (r.count("profile")) lookup.explicit_path = r["profile"].as<std::string>();
  lookup.weights = weights;
  lookup.family = model->family();
  lookup.configs_dir = installed_configs_dir();
  lookup.device = device;
  Profile profile = load_profile(lookup);
  for (const ProfileFlag& f : kProfileFlags)
    if (r.count(f.flag))
      set_from_flag(profile, f.key, r[f.flag].as<std::string>(), std::string("--") + f.flag);
  if (r.count("print-profile")) {
    std::fputs(describe(profile).c_str(), stdout);
    return 0;
  }

  auto dev = host.open_device_spec(device, profile.threads.count);
  GeneratorOptions gopts = GeneratorOptions::from_profile(profile);
  // Host-greedy on another device: only the hidden row comes back, the lm_head runs on cpu
  // (as does any op the device has no kernel for).
  gopts.host_device = host.host_device_for(*dev, profile.threads.count);
  Generator gen(dev, *model, gopts);
  SampleOpts so = sample_opts(profile.sampling);
  if (profile.sampling.seed < 0) log().info("seed {}", so.seed);
  const bool stop_at_eos = !r.count("ignore-eos");
  const int64_t eos = model->config().eos_id;
  auto is_stop = [&](int32_t id) {
    if (tok) return std::find(tok->stop_ids().begin(), tok->stop_ids().end(), id) !=
                    tok->stop_ids().end();
    return id == eos;
  };

  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  StopOnInterrupt interrupt;
  bool interrupted = false;
  for (size_t u = 0; u < prompts.size() && !interrupted; ++u) {
    const std::vector<int32_t>& prompt = prompts[u];
    if (static_cast<int64_t>(prompt.size()) > gen.max_seq())
      fail("rlx run: the prompt{} is {} tokens but the KV cache holds {} (--max-seq / "
           "memory.max_seq); raise --max-seq to at least {}",
           prompts.size() > 1 ? fmt::format(" of utterance {}", u + 1) : "", prompt.size(),
           gen.max_seq(), prompt.size() + static_cast<size_t>(std::max(max_tokens, 0)));
    // Time to first token includes whatever this utterance has to compile (and, the first
    // time, upload): what a user waits for.
    auto t0 = Clock::now();
    std::vector<float> first = gen.prefill_get_last_logits(prompt);
    double prompt_ms = ms_since(t0);
    if (u == 0 && r.count("logits-out")) write_logits(r["logits-out"].as<std::string>(), first);

    int generated = 0;
    double first_token_ms = prompt_ms;
    std::optional<TokenDecoder> text;
    if (tok) text.emplace(*tok);
    auto emit = [&](int32_t id) {
      if (generated == 0) first_token_ms = ms_since(t0);
      ++generated;
      const bool stop = stop_at_eos && is_stop(id);
      if (text) {
        const std::string piece = stop ? text->flush() : text->push(id);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
      } else {
        std::printf("%s%d", generated > 1 ? " " : "", id);
      }
      std::fflush(stdout);
      return !stop;
    };
    auto t1 = Clock::now();
    bool context_full = false;
    for (int i = 0; i < max_tokens; ++i) {
      if (interrupt.requested()) break;
      if ((context_full = gen.context_full())) break;
      // step_cached: the first token samples `first`, the prefill's logits.
      const int32_t id = r.count("no-kv-cache") ? gen.step(so) : gen.step_cached(so);
      if (!emit(id)) break;
    }
    interrupted = interrupt.requested();
    double gen_ms = ms_since(t1);
    if (text) {
      const std::string rest = text->flush();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
    }
    std::string which = prompts.size() > 1 ? fmt::format(" utterance {}:", u + 1) : "";
    std::printf(
        "%stiming:%s first token after %.1f ms; prompt %zu tokens in %.1f ms (%.1f t/s), "
        "generated %d tokens in %.1f ms (%.1f t/s)\n",
        generated ? "\n" : "", which.c_str(), first_token_ms, prompt.size(), prompt_ms,
        prompt.size() * 1e3 / std::max(prompt_ms, 1e-6), generated, gen_ms,
        generated * 1e3 / std::max(gen_ms, 1e-6));
    if (context_full)
      log().warn("stopped after {} tokens: the context is full ({} tokens in the {}-row KV "
                 "cache); raise --max-seq (memory.max_seq) for longer generations",
                 generated, gen.tokens().size() - 1, gen.max_seq());
  }
  const GeneratorStats& st = gen.stats();
  log().info("compiled {} programs ({} prefill, {} decode), {} evicted", st.compiles,
             st.prefill_compiles, st.decode_compiles, st.decode_evictions);
  return interrupted ? 130 : 0;  // 128 + SIGINT, as a shell reports a Ctrl-C'd command
}

}  // namespace rlx::cli
