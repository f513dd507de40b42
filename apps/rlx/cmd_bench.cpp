// `rlx bench`: prompt processing (pp) and generation (tg) speed, measured the way llama-bench
// does: one warm-up, then --reps timed runs, each from an empty KV cache; pp is one batch of
// random ids (BOS first when the model has one), tg is single-token decodes from position 0.
// Load time, tokenization and sampling are excluded. JSON records are llama-bench compatible.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "commands.h"
#include "common.h"
#include "rlx/error.h"
#include "rlx/generator.h"
#include "rlx/log.h"
#include "rlx/model.h"

namespace rlx::cli {
namespace {

struct Record {
  std::string test;  // "pp512", "tg128"
  int64_t n_prompt = 0, n_gen = 0;
  std::vector<double> samples_ts;
  double avg() const {
    return std::accumulate(samples_ts.begin(), samples_ts.end(), 0.0) / samples_ts.size();
  }
  double stddev() const {
    if (samples_ts.size() < 2) return 0.0;
    double m = avg(), ss = 0;
    for (double s : samples_ts) ss += (s - m) * (s - m);
    return std::sqrt(ss / (samples_ts.size() - 1));
  }
};

}  // namespace

int cmd_bench(int argc, char** argv) {
  cxxopts::Options opts("rlx bench", "Prompt-processing and generation speed (llama-bench style).");
  add_common_flags(opts);
  auto add = opts.add_options();
  add("weights", "a .gguf file or a Hugging Face model directory", cxxopts::value<std::string>(),
      "PATH");
  add("device", "NAME or NAME:INDEX", cxxopts::value<std::string>()->default_value("cpu"));
  add("threads", "backend threads (0 = all cores)", cxxopts::value<uint32_t>()->default_value("0"));
  add("pp", "prompt tokens per pp run (0 = skip)", cxxopts::value<int64_t>()->default_value("512"));
  add("tg", "tokens per tg run (0 = skip)", cxxopts::value<int64_t>()->default_value("128"));
  add("reps", "timed repetitions", cxxopts::value<int>()->default_value("5"));
  add("output", "md or json", cxxopts::value<std::string>()->default_value("md"));
  add("packed", "keep quantized weights packed (default: on for GGUF >= 256 MB)");
  add("no-packed", "convert every weight to f32 at load");
  cxxopts::ParseResult r;
  if (!parse_flags(opts, argc, argv, r)) return 0;
  PluginHost host(apply_common_flags(r));
  if (!r.count("weights")) fail("rlx bench: --weights is required");
  const int64_t pp = r["pp"].as<int64_t>(), tg = r["tg"].as<int64_t>();
  const int reps = r["reps"].as<int>();
  const std::string output = r["output"].as<std::string>();
  if (pp < 0 || tg < 0 || (pp == 0 && tg == 0)) fail("--pp and --tg must be >= 0, not both 0");
  if (reps < 1) fail("--reps must be >= 1");
  if (output != "md" && output != "json") fail("--output '{}': use md or json", output);
  if (r.count("packed") && r.count("no-packed")) fail("--packed and --no-packed conflict");

  ModelOptions mopts;
  if (r.count("packed")) mopts.packed = true;
  if (r.count("no-packed")) mopts.packed = false;
  const std::string weights = r["weights"].as<std::string>();
  auto model = Model::load(host, weights, mopts);
  const uint32_t threads = r["threads"].as<uint32_t>();
  auto dev = host.open_device_spec(r["device"].as<std::string>(), threads);
  GeneratorOptions gopts;
  gopts.max_seq = std::max<int64_t>({pp, tg, 1});
  gopts.host_device = host.host_device_for(*dev, threads);
  Generator gen(dev, *model, gopts);
  const rlx_model_config& c = model->config();

  using Clock = std::chrono::steady_clock;
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> any_id(0, static_cast<int32_t>(c.vocab_size - 1));
  std::vector<Record> records;

  if (pp > 0) {
    Record rec{fmt::format("pp{}", pp), pp, 0, {}};
    std::vector<int32_t> ids(static_cast<size_t>(pp));
    for (int rep = -1; rep < reps; ++rep) {  // rep -1 is the warm-up (compiles)
      for (auto& id : ids) id = any_id(rng);
      if (c.bos_id >= 0) ids[0] = static_cast<int32_t>(c.bos_id);
      auto t0 = Clock::now();
      gen.prefill_get_last_logits(ids);
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (rep >= 0) rec.samples_ts.push_back(pp / s);
    }
    records.push_back(rec);
  }
  if (tg > 0) {
    Record rec{fmt::format("tg{}", tg), 0, tg, {}};
    for (int rep = -1; rep < reps; ++rep) {
      gen.prefill({});  // empty history and KV cache: decode from position 0
      auto t0 = Clock::now();
      for (int64_t i = 0; i < tg; ++i) gen.decode_get_logits(any_id(rng));
      double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (rep >= 0) rec.samples_ts.push_back(tg / s);
    }
    records.push_back(rec);
  }

  uint64_t n_params = 0, bytes = 0;
  for (const TensorEntry& t : model->file().tensors()) {
    n_params += static_cast<uint64_t>(t.elems());
    bytes += t.nbytes;
  }
  const std::string backend = dev->backend();
  if (output == "json") {
    std::string out = "[";
    for (size_t i = 0; i < records.size(); ++i) {
      const Record& rec = records[i];
      out += fmt::format(
          R"({}{{"model_filename":"{}","test":"{}","n_prompt":{},"n_gen":{},"avg_ts":{:.4f},)"
          R"("stddev_ts":{:.4f},"samples_ts":[{:.4f}],"model_size":{},"n_params":{},)"
          R"("backend":"{}","n_threads":{},"packed":{}}})",
          i ? ",\n " : "", json_escape(weights), rec.test, rec.n_prompt, rec.n_gen, rec.avg(),
          rec.stddev(), fmt::join(rec.samples_ts, ","), bytes, n_params, json_escape(backend),
          threads, model->packed() ? "true" : "false");
    }
    std::printf("%s]\n", out.c_str());
  } else {
    std::printf("| model | size | params | backend | threads | test | t/s |\n");
    std::printf("| --- | ---: | ---: | --- | ---: | --- | ---: |\n");
    for (const Record& rec : records)
      std::printf("| %s | %s | %.2f M | %s | %u | %s | %.2f ± %.2f |\n",
                  model->file().path().filename().string().c_str(), human_bytes(bytes).c_str(),
                  n_params / 1e6, backend.c_str(), threads, rec.test.c_str(), rec.avg(),
                  rec.stddev());
  }
  return 0;
}

}  // namespace rlx::cli
