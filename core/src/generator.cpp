#include "rlx/generator.h"

#include <algorithm>
#include <chrono>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx {

// A forward graph compiled for one sequence length, with its bindings ready to run.
struct Generator::Compiled {
  int64_t seq = 0;
  PlannedGraph plan;
  Program prog;
  Buffer ids, pos, out;  // per-program input/output buffers
  std::vector<rlx_binding> binds;
};

Generator::Generator(std::shared_ptr<Device> dev, const Model& model, GeneratorOptions opts)
    : dev_(std::move(dev)), model_(model), opts_(opts), weights_(dev_, model) {
  const rlx_model_config& c = model.config();
  capacity_ = opts.max_seq > 0 ? opts.max_seq : std::min<int64_t>(c.max_seq, 4096);
  if (capacity_ <= 0) fail("max_seq must be > 0");
  const uint64_t bytes = static_cast<uint64_t>(capacity_ * c.n_kv_heads * c.head_dim) * 4;
  for (int64_t l = 0; l < c.n_layers; ++l) {
    k_cache_.push_back(dev_->alloc(bytes));
    v_cache_.push_back(dev_->alloc(bytes));
  }
  logits_.resize(static_cast<size_t>(c.vocab_size));
  log().info("generator: {} cache rows, KV cache {:.1f} MiB on {}", capacity_,
             2.0 * bytes * c.n_layers / (1 << 20), dev_->backend());
}

Generator::~Generator() = default;

Generator::Compiled& Generator::program(int64_t seq) {
  for (auto it = programs_.begin(); it != programs_.end(); ++it)
    if ((*it)->seq == seq) {
      programs_.splice(programs_.begin(), programs_, it);  // most recently used first
      return *programs_.front();
    }
  auto c = std::make_unique<Compiled>();
  c->seq = seq;
  c->plan = model_.forward(seq, capacity_, RLX_LOGITS_LAST);
  for (uint32_t n = 0; n < c->plan.nodes.size(); ++n)
    if (!dev_->supports(c->plan, n))
      fail("{} cannot run node {} ('{}', op {}); no fallback backend yet", dev_->backend(), n,
           c->plan.graph.nodes[n].name, c->plan.nodes[n].op_name);
  c->prog = dev_->compile(c->plan);
  ++stats_.compiles;

  const Graph& g = c->plan.graph;
  c->ids = dev_->alloc(seq * 4);
  c->pos = dev_->alloc(seq * 4);
  c->out = dev_->alloc(logits_.size() * 4);
  c->binds.resize(g.slots.size());
  for (size_t s = 0; s < g.slots.size(); ++s) {
    const Tensor& t = g.tensors[g.slots[s]];
    const Buffer* b = nullptr;
    if (t.name == "ids")
      b = &c->ids;
    else if (t.name == "pos")
      b = &c->pos;
    else if (t.name == "logits")
      b = &c->out;
    else if (t.name.rfind("k_cache.", 0) == 0)
      b = &k_cache_.at(std::stoul(t.name.substr(8)));
    else if (t.name.rfind("v_cache.", 0) == 0)
      b = &v_cache_.at(std::stoul(t.name.substr(8)));
    else if (t.kind == TensorKind::Weight)
      b = &weights_.get(t.name);
    else
      fail("{}: the forward graph has an unexpected slot '{}'", model_.family(), t.name);
    c->binds[s] = rlx_binding{b->handle(), 0};
  }
  log().debug("compiled {} forward for seq {}: arena {} bytes", model_.family(), seq,
              c->plan.arena_bytes);
  programs_.push_front(std::move(c));
  while (programs_.size() > std::max<size_t>(opts_.prefill_programs, 2)) programs_.pop_back();
  return *programs_.front();
}

std::span<float> Generator::run(std::span<const int32_t> ids, int64_t start) {
  const auto n = static_cast<int64_t>(ids.size());
  if (n == 0) fail("nothing to run: the token list is empty");
  if (start + n > capacity_)
    fail("context full: {} tokens do not fit the {}-row KV cache; raise --max-seq", start + n,
         capacity_);
  const int64_t vocab = model_.config().vocab_size;
  for (int32_t id : ids)
    if (id < 0 || id >= vocab) fail("token id {} is outside the vocabulary [0, {})", id, vocab);
  auto t0 = std::chrono::steady_clock::now();
  Compiled& c = program(n);
  std::vector<int32_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(start + i);
  c.ids.write(0, ids.data(), n * 4);
  c.pos.write(0, pos.data(), n * 4);
  c.prog.run(c.binds);
  c.out.read(0, logits_.data(), logits_.size() * 4);
  logits_fresh_ = true;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (n == 1) {
    ++stats_.decode_tokens;
    stats_.decode_seconds += secs;
  } else {
    stats_.prompt_tokens += n;
    stats_.prompt_seconds += secs;
  }
  return logits_;
}

int32_t Generator::pick(std::span<float> logits, const SampleOpts& opts) {
  if (!seeded_ || sampler_.seed() != opts.seed) {
    sampler_.reseed(opts.seed);
    seeded_ = true;
  }
  if (adjust_) adjust_(logits, tokens_);
  logits_fresh_ = false;  // penalties and temperature were applied in place
  return sampler_.sample(logits, tokens_, opts);
}

void Generator::prefill(std::span<const int32_t> ids) {
  tokens_.assign(ids.begin(), ids.end());
  past_ = 0;  // rows past the current position are never read, so no clearing is needed
  seeded_ = false;
  logits_fresh_ = false;
}

int32_t Generator::step(const SampleOpts& opts) {
  if (tokens_.empty()) fail("step: no history; call prefill first");
  std::span<float> logits = run(tokens_, 0);
  past_ = static_cast<int64_t>(tokens_.size());
  int32_t t = pick(logits, opts);
  tokens_.push_back(t);
  return t;
}

std::vector<int32_t> Generator::generate(int n, const SampleOpts& opts) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(step(opts));
  return out;
}

int32_t Generator::step_cached(const SampleOpts& opts) {
  if (tokens_.empty()) fail("step_cached: no history; call prefill first");
  const auto n = static_cast<int64_t>(tokens_.size());
  // Run whatever the cache lacks: the whole prompt on the first call, one token afterwards.
  // Right after prefill_get_last_logits the cache is complete and its logits are still fresh.
  std::span<float> logits = logits_;
  if (!(past_ == n && logits_fresh_)) {
    if (past_ >= n) past_ = 0;  // the cache does not match the history: refill it
    logits = run(std::span<const int32_t>(tokens_).subspan(static_cast<size_t>(past_)), past_);
    past_ = n;
  }
  int32_t t = pick(logits, opts);
  tokens_.push_back(t);
  return t;  // now past() == tokens().size() - 1
}

std::vector<int32_t> Generator::generate_cached(int n, const SampleOpts& opts) {
  return generate_cached_with(n, opts, nullptr);
}

std::vector<int32_t> Generator::generate_cached_with(int n, const SampleOpts& opts,
                                                     const std::function<bool(int32_t)>& on_token) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(step_cached(opts));
    if (on_token && !on_token(out.back())) break;
  }
  return out;
}

std::vector<float> Generator::prefill_get_last_logits(std::span<const int32_t> context) {
  prefill(context);
  std::span<float> logits = run(tokens_, 0);
  past_ = static_cast<int64_t>(tokens_.size());
  return std::vector<float>(logits.begin(), logits.end());
}

std::vector<float> Generator::decode_get_logits(int32_t input) {
  if (past_ != static_cast<int64_t>(tokens_.size()))
    fail(
        "decode_get_logits: the cache holds {} positions but the history has {} tokens; call "
        "prefill_get_last_logits first",
        past_, tokens_.size());
  int32_t one[1] = {input};
  std::span<float> logits = run(one, past_);
  tokens_.push_back(input);
  ++past_;
  return std::vector<float>(logits.begin(), logits.end());
}

}  // namespace rlx
