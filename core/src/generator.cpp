#include "rlx/generator.h"

#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <cstdint>
#include <random>

#include "rlx/error.h"
#include "rlx/log.h"
#include "rlx/split_program.h"

namespace rlx {

// A forward graph compiled for `seq` new tokens over `rows` KV-cache rows, with its bindings.
struct Generator::Compiled {
  int64_t seq = 0;
  int64_t rows = 0;
  rlx_logits_mode mode = RLX_LOGITS_LAST;
  uint64_t resident_bytes = 0;  // arena + per-program buffers, for the memory budget
  PlannedGraph plan;
  SplitProgram prog;  // one Program, unless the device lacks a kernel
  Buffer ids, pos, out;  // per-program inputs and output (logits, or the hidden row)
  Buffer hidden_in;      // RLX_LOGITS_HEAD programs: their input
  std::vector<rlx_binding> binds;
};

GeneratorOptions& GeneratorOptions::with_compile_profiles(const PrefillProfile& prefill,
                                                          const DecodeProfile& decode) {
  // Refuse what is not implemented rather than ignore it.
  if (prefill.precision != Precision::f32 || decode.precision != Precision::f32)
    fail("compile precision {}/{}: only f32 compute is implemented so far",
         to_string(prefill.precision), to_string(decode.precision));
  prefill_capacity = prefill.cache == PrefillCache::none ? 1 : prefill.capacity;
  prefill_dynamic = prefill.cache == PrefillCache::dynamic;
  prefill_seq_cap = prefill.seq_cap;
  decode_cache = decode.cache;
  decode_capacity = static_cast<size_t>(decode.capacity);
  decode_max_past = decode.max_past;
  host_lm_head = decode.lm_head == LmHead::host;
  resident_kv = decode.resident_kv;
  return *this;
}

GeneratorOptions GeneratorOptions::from_profile(const Profile& p) {
  for (auto [key, precision] : {std::pair{"prefill.precision", p.prefill.precision},
                                std::pair{"decode.precision", p.decode.precision}})
    if (precision != Precision::f32)
      fail("{} = \"{}\" (from {}): only f32 compute is implemented so far", key,
           to_string(precision), p.source(key));
  GeneratorOptions o;
  o.with_compile_profiles(p.prefill, p.decode);
  o.max_seq = p.memory.max_seq;
  o.keep_decode_programs = p.memory.keep_decode_graphs;
  o.soft_budget_bytes = p.memory.soft_budget_bytes;
  o.soft_fraction = p.memory.soft_fraction;
  o.bucket_resident_bytes = p.memory.bucket_resident_bytes;
  return o;
}

PrefillProfile Generator::prefill_profile() const {
  PrefillProfile p;
  p.cache = opts_.prefill_dynamic ? PrefillCache::dynamic : PrefillCache::lru;
  p.capacity = static_cast<int32_t>(opts_.prefill_capacity);
  p.seq_cap = opts_.prefill_seq_cap;
  return p;
}

DecodeProfile Generator::decode_profile() const {
  DecodeProfile d;
  d.cache = opts_.decode_cache;
  d.capacity = static_cast<int32_t>(opts_.decode_capacity);
  d.max_past = opts_.decode_max_past;
  d.lm_head = head_device_ ? LmHead::host : LmHead::graph;
  d.resident_kv = opts_.resident_kv;
  return d;
}

SampleOpts sample_opts(const SamplingProfile& s) {
  SampleOpts o;
  o.temperature = s.temperature;
  o.top_k = s.top_k;
  o.top_p = s.top_p;
  o.min_p = s.min_p;
  o.repetition_penalty = s.repeat_penalty;
  o.penalty_window = s.repeat_last_n;
  o.seed = s.seed >= 0 ? static_cast<uint64_t>(s.seed) : std::random_device{}();
  return o;
}

DecodeBucket decode_bucket(int64_t past) {
  if (past <= 0) return {0, 1};
  if (past == 1) return {1, 2};
  int64_t top = 1;  // smallest power of two >= past
  while (top < past) top *= 2;
  return {top / 2 + 1, top + 1};
}

namespace {
uint64_t physical_ram() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}
}  // namespace

Generator::Generator(std::shared_ptr<Device> dev, const Model& model, GeneratorOptions opts)
    : dev_(std::move(dev)), model_(model), opts_(opts), weights_(dev_, model) {
  const rlx_model_config& c = model.config();
  capacity_ = opts.max_seq > 0 ? opts.max_seq : std::min<int64_t>(c.max_seq, 4096);
  if (capacity_ <= 0) fail("max_seq must be > 0");
  if (opts.prefill_seq_cap < 0) fail("prefill seq cap must be >= 0");
  if (c.max_seq > 0 && capacity_ > c.max_seq)
    log().warn("max_seq {} is beyond the model's context length {}: positions past it were "
               "never trained",
               capacity_, c.max_seq);
  // capacity_ x kv_heads x head_dim x 4 bytes per layer and K/V, without overflowing.
  const uint64_t row_bytes = static_cast<uint64_t>(c.n_kv_heads) * c.head_dim * 4;
  if (row_bytes == 0 || static_cast<uint64_t>(capacity_) > (UINT64_MAX / 4) / row_bytes / 2 /
                                                               std::max<int64_t>(c.n_layers, 1))
    fail("max_seq {}: the KV cache size overflows; lower --max-seq (memory.max_seq)", capacity_);
  const uint64_t bytes = static_cast<uint64_t>(capacity_) * row_bytes;
  try {
    for (int64_t l = 0; l < c.n_layers; ++l) {
      k_cache_.push_back(dev_->alloc(bytes));
      v_cache_.push_back(dev_->alloc(bytes));
    }
  } catch (const Error& e) {
    fail("the KV cache for {} rows ({:.2f} GiB: {} layers x K and V x {} bytes) does not fit; "
         "lower --max-seq (memory.max_seq): {}",
         capacity_, 2.0 * static_cast<double>(bytes) * c.n_layers / (1ull << 30), c.n_layers,
         bytes, e.what());
  }
  fixed_bytes_ = 2 * bytes * static_cast<uint64_t>(c.n_layers);
  if (!opts.resident_kv) {
    host_k_.assign(c.n_layers, std::vector<float>(bytes / 4));
    host_v_.assign(c.n_layers, std::vector<float>(bytes / 4));
    fixed_bytes_ *= 2;
  }
  if (opts.host_lm_head) {
    // The argmax (after the logit adjustment) is on the host either way; the lm_head matmul runs
    // where it is fastest: on a GPU itself (its logits row comes back), else on the host's cpu.
    head_device_ = dev_->is_gpu() || dev_->backend() == "cpu" ? dev_ : opts.host_device;
    if (!head_device_)
      log().info("no host device given: the lm_head stays in the graph on {}", dev_->backend());
  }
  logits_.resize(static_cast<size_t>(c.vocab_size));
  log().info("generator: {} cache rows, KV cache {:.1f} MiB on {}", capacity_,
             fixed_bytes_ / double(1 << 20), dev_->backend());
}

Generator::~Generator() = default;

WeightStore& Generator::host_weights() {
  if (!opts_.host_device || opts_.host_device == dev_) return weights_;  // the device is the host
  if (!host_weights_) host_weights_ = std::make_unique<WeightStore>(opts_.host_device, model_);
  return *host_weights_;
}

std::unique_ptr<Generator::Compiled> Generator::compile(const std::shared_ptr<Device>& dev_ptr,
                                                        WeightStore& weights, int64_t seq,
                                                        int64_t rows, rlx_logits_mode mode) {
  Device& dev = *dev_ptr;
  auto c = std::make_unique<Compiled>();
  c->seq = seq;
  c->rows = rows;
  c->mode = mode;
  c->plan = model_.forward(seq, rows, mode);
  std::shared_ptr<Device> fallback = dev_ptr == opts_.host_device ? nullptr : opts_.host_device;
  c->prog = SplitProgram(c->plan, dev_ptr, fallback,
                         [this](const std::string& name) -> const Buffer& {
                           return host_weights().get(name);
                         });
  if (c->prog.fallback_nodes())
    log().info("{} forward (seq {}): {} of {} nodes run on {} in {} segments", model_.family(), seq,
               c->prog.fallback_nodes(), c->plan.nodes.size(), fallback->backend(),
               c->prog.segments());
  ++stats_.compiles;

  const Graph& g = c->plan.graph;
  const uint64_t out_bytes =
      (mode == RLX_LOGITS_NONE ? model_.config().dim : model_.config().vocab_size) * 4;
  c->out = dev.alloc(out_bytes);
  if (mode == RLX_LOGITS_HEAD) {
    c->hidden_in = dev.alloc(seq * model_.config().dim * 4);
  } else {
    c->ids = dev.alloc(seq * 4);
    c->pos = dev.alloc(seq * 4);
  }
  c->resident_bytes = c->plan.arena_bytes + 8 * seq + out_bytes + c->prog.mirror_bytes();
  c->binds.resize(g.slots.size());
  for (size_t s = 0; s < g.slots.size(); ++s) {
    const Tensor& t = g.tensors[g.slots[s]];
    const Buffer* b = nullptr;
    if (t.name == "ids")
      b = &c->ids;
    else if (t.name == "pos")
      b = &c->pos;
    else if (t.name == "hidden" && t.kind == TensorKind::Input)
      b = &c->hidden_in;
    else if (t.name == "logits" || t.name == "hidden")
      b = &c->out;
    else if (t.name.rfind("k_cache.", 0) == 0)  // a prefix of the cache buffer: rows <= capacity
      b = &k_cache_.at(std::stoul(t.name.substr(8)));
    else if (t.name.rfind("v_cache.", 0) == 0)
      b = &v_cache_.at(std::stoul(t.name.substr(8)));
    else if (t.kind == TensorKind::Weight)
      b = &weights.get(t.name);  // one copy per device, shared by every Program
    else
      fail("{}: the forward graph has an unexpected slot '{}'", model_.family(), t.name);
    c->binds[s] = rlx_binding{b->handle(), 0};
  }
  log().debug("compiled {} forward: seq {}, {} cache rows, mode {}, arena {} bytes",
              model_.family(), seq, rows, static_cast<int>(mode), c->plan.arena_bytes);
  return c;
}

Generator::Compiled& Generator::prefill_program(int64_t seq) {
  for (auto it = prefill_.begin(); it != prefill_.end(); ++it)
    if ((*it)->seq == seq) {
      prefill_.splice(prefill_.begin(), prefill_, it);  // most recently used first
      return *prefill_.front();
    }
  prefill_.push_front(compile(dev_, weights_, seq, capacity_, RLX_LOGITS_LAST));
  ++stats_.prefill_compiles;
  while (prefill_.size() > std::max<size_t>(opts_.prefill_capacity, 1)) prefill_.pop_back();
  return *prefill_.front();
}

Generator::Compiled& Generator::decode_program(int64_t past, rlx_logits_mode mode) {
  int64_t rows = capacity_;
  switch (opts_.decode_cache) {
    case DecodeCache::dynamic: break;
    case DecodeCache::exact: rows = past + 1; break;
    case DecodeCache::buckets: {
      int64_t top =
          opts_.decode_max_past > 0 ? std::min(opts_.decode_max_past, capacity_) : capacity_;
      rows = past + 1 > top ? capacity_ : std::min(decode_bucket(past).hi, top);
      break;
    }
  }
  rows = std::min(rows, capacity_);
  for (auto it = decode_.begin(); it != decode_.end(); ++it)
    if ((*it)->rows == rows && (*it)->mode == mode) {
      decode_.splice(decode_.begin(), decode_, it);
      return *decode_.front();
    }
  auto c = compile(dev_, weights_, 1, rows, mode);
  ++stats_.decode_compiles;
  uint64_t bytes = opts_.bucket_resident_bytes ? opts_.bucket_resident_bytes : c->resident_bytes;
  make_room_for_decode(bytes, rows);
  decode_.push_front(std::move(c));
  if (opts_.decode_cache == DecodeCache::exact)
    while (decode_.size() > std::max<size_t>(opts_.decode_capacity, 1)) decode_.pop_back();
  return *decode_.front();
}

uint64_t Generator::budget_bytes() const {
  if (opts_.soft_budget_bytes) return opts_.soft_budget_bytes;
  return static_cast<uint64_t>(opts_.soft_fraction * static_cast<double>(physical_ram()));
}

// Evicts the decode Programs with the most cache rows (the highest buckets) until one more of
// `bytes` fits the soft budget next to the weights, the KV cache and the prefill Programs.
uint64_t Generator::resident_estimate() const {
  uint64_t u = fixed_bytes_ + weights_.uploaded_bytes() + weights_.zero_copy_bytes();
  for (const auto& p : prefill_) u += p->resident_bytes;
  for (const auto& p : decode_)
    u += opts_.bucket_resident_bytes ? opts_.bucket_resident_bytes : p->resident_bytes;
  return u;
}

void Generator::make_room_for_decode(uint64_t bytes, int64_t keep_rows) {
  const uint64_t budget = budget_bytes();
  while (!decode_.empty() && resident_estimate() + bytes > budget) {
    auto highest = std::max_element(decode_.begin(), decode_.end(),
                                    [](const auto& a, const auto& b) { return a->rows < b->rows; });
    if ((*highest)->rows == keep_rows) break;
    log().info("memory budget {} MiB: evicting the decode program for {} cache rows", budget >> 20,
               (*highest)->rows);
    decode_.erase(highest);
    ++stats_.decode_evictions;
  }
}

std::vector<int64_t> Generator::decode_rows() const {
  std::vector<int64_t> rows;
  for (const auto& p : decode_) rows.push_back(p->rows);
  std::sort(rows.begin(), rows.end());
  return rows;
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
  // Prompts longer than the seq cap run as consecutive chunks; the cache carries the rest.
  const int64_t cap = opts_.prefill_seq_cap > 0 ? opts_.prefill_seq_cap : n;
  for (int64_t done = 0; done < n;) {
    const int64_t len = std::min(cap, n - done);
    // Dynamic prefill: `pad` padding rows in front (id 0, position -1) fill the chunk up to the
    // next power of two, whose last row is then the real last token.
    int64_t rows = len;
    if (opts_.prefill_dynamic && len > 1) {
      int64_t p2 = 2;
      while (p2 < len) p2 *= 2;
      const int64_t limit = opts_.prefill_seq_cap > 0 ? opts_.prefill_seq_cap : capacity_;
      if (p2 <= std::min(limit, capacity_)) rows = p2;
    }
    const int64_t pad = rows - len;
    auto t0 = std::chrono::steady_clock::now();
    Compiled& c = rows == 1 ? decode_program(start + done, RLX_LOGITS_LAST) : prefill_program(rows);
    std::vector<int32_t> in(static_cast<size_t>(rows), 0), pos(static_cast<size_t>(rows), -1);
    for (int64_t i = 0; i < len; ++i) {
      in[pad + i] = ids[done + i];
      pos[pad + i] = static_cast<int32_t>(start + done + i);
    }
    c.ids.write(0, in.data(), rows * 4);
    c.pos.write(0, pos.data(), rows * 4);
    kv_upload(start + done);
    c.prog.run(c.binds);
    kv_download(start + done, start + done + len);
    if (done + len == n) c.out.read(0, logits_.data(), logits_.size() * 4);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (n == 1) {
      ++stats_.decode_tokens;
      stats_.decode_seconds += secs;
    } else {
      stats_.prompt_tokens += len;
      stats_.prompt_seconds += secs;
    }
    done += len;
  }
  logits_fresh_ = true;
  return logits_;
}

std::span<float> Generator::run_host_head(int32_t id, int64_t past) {
  if (past + 1 > capacity_)
    fail("context full: {} tokens do not fit the {}-row KV cache; raise --max-seq", past + 1,
         capacity_);
  if (id < 0 || id >= model_.config().vocab_size)
    fail("token id {} is outside the vocabulary [0, {})", id, model_.config().vocab_size);
  auto t0 = std::chrono::steady_clock::now();
  Compiled& body = decode_program(past, RLX_LOGITS_NONE);
  int32_t pos = static_cast<int32_t>(past);
  body.ids.write(0, &id, 4);
  body.pos.write(0, &pos, 4);
  kv_upload(past);
  body.prog.run(body.binds);
  kv_download(past, past + 1);
  hidden_.resize(static_cast<size_t>(model_.config().dim));
  body.out.read(0, hidden_.data(), hidden_.size() * 4);  // only the hidden row crosses over
  if (!head_) {
    head_ = compile(head_device_, head_device_ == dev_ ? weights_ : host_weights(), 1, 0,
                    RLX_LOGITS_HEAD);
    log().info("host-greedy: the lm_head runs on {} after {}'s hidden row", head_device_->backend(),
               dev_->backend());
  }
  head_->hidden_in.write(0, hidden_.data(), hidden_.size() * 4);
  head_->prog.run(head_->binds);
  head_->out.read(0, logits_.data(), logits_.size() * 4);
  logits_fresh_ = true;
  ++stats_.decode_tokens;
  ++stats_.host_head_tokens;
  stats_.decode_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return logits_;
}

void Generator::kv_upload(int64_t rows) {
  if (opts_.resident_kv || rows <= 0) return;
  const uint64_t row = static_cast<uint64_t>(model_.config().n_kv_heads * model_.config().head_dim);
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    k_cache_[l].write(0, host_k_[l].data(), rows * row * 4);
    v_cache_[l].write(0, host_v_[l].data(), rows * row * 4);
  }
}

void Generator::kv_download(int64_t from, int64_t to) {
  if (opts_.resident_kv || to <= from) return;
  const uint64_t row = static_cast<uint64_t>(model_.config().n_kv_heads * model_.config().head_dim);
  for (size_t l = 0; l < k_cache_.size(); ++l) {
    k_cache_[l].read(from * row * 4, host_k_[l].data() + from * row, (to - from) * row * 4);
    v_cache_[l].read(from * row * 4, host_v_[l].data() + from * row, (to - from) * row * 4);
  }
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
  // Only the KV contents are released: rows past the current position are never read, so
  // nothing is cleared, and compiled Programs stay for the next utterance.
  past_ = 0;
  if (!opts_.keep_decode_programs) decode_.clear();
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
    const bool greedy = opts.greedy || opts.temperature <= 0.0f;
    if (greedy && head_device_ && past_ == n - 1)
      logits = run_host_head(tokens_.back(), past_);  // host-greedy: hidden row, host lm_head
    else
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

std::vector<float> Generator::continue_get_last_logits(std::span<const int32_t> context) {
  if (context.empty()) fail("continue_get_last_logits: empty context");
  // Rows [0, keep) of the cache hold exactly these tokens at these positions; at least the last
  // token runs again, for its logits.
  size_t keep = 0;
  const size_t limit = std::min({static_cast<size_t>(past_), tokens_.size(), context.size() - 1});
  while (keep < limit && tokens_[keep] == context[keep]) ++keep;
  tokens_.assign(context.begin(), context.end());
  std::span<float> logits =
      run(std::span<const int32_t>(tokens_).subspan(keep), static_cast<int64_t>(keep));
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
