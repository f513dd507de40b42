#include "rlx/sampler.h"

#include <algorithm>
#include <cmath>

#include "rlx/error.h"

namespace rlx {

int32_t Sampler::argmax(std::span<const float> logits) {
  if (logits.empty()) fail("cannot sample from an empty logits vector");
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> history,
                        const SampleOpts& o) {
  const auto n = static_cast<int32_t>(logits.size());
  if (n == 0) fail("cannot sample from an empty logits vector");

  // Repetition penalty (CTRL paper / llama.cpp): divide positive logits, multiply negative ones.
  if (o.repetition_penalty != 1.0f && o.repetition_penalty > 0.0f) {
    size_t window = std::min<size_t>(history.size(), std::max(0, o.penalty_window));
    seen_.assign(static_cast<size_t>(n), 0);
    for (int32_t t : history.subspan(history.size() - window))
      if (t >= 0 && t < n && !seen_[t]) {
        seen_[t] = 1;
        float& l = logits[t];
        l = l > 0 ? l / o.repetition_penalty : l * o.repetition_penalty;
      }
  }
  if (o.greedy || o.temperature <= 0.0f) return argmax(logits);

  cand_.clear();
  for (int32_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i])) cand_.emplace_back(logits[i], i);
  if (cand_.empty()) fail("every logit is NaN: the model produced no usable distribution");
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = cand_.size();
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < keep) keep = o.top_k;
  std::partial_sort(cand_.begin(), cand_.begin() + keep, cand_.end(), by_logit);
  cand_.resize(keep);

  // Softmax with temperature over the survivors (sorted, largest first).
  float max_l = cand_[0].first;
  double sum = 0.0;
  for (auto& [l, id] : cand_) {
    l = std::exp((l - max_l) / o.temperature);
    sum += l;
  }
  for (auto& c : cand_) c.first = static_cast<float>(c.first / sum);

  // Top-p: the smallest prefix whose mass reaches p (always at least one token).
  if (o.top_p < 1.0f) {
    double acc = 0.0;
    size_t cut = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      acc += cand_[i].first;
      if (acc >= o.top_p) {
        cut = i + 1;
        break;
      }
    }
    cand_.resize(cut);
  }
  // Min-p: drop tokens below min_p times the most likely one's probability.
  if (o.min_p > 0.0f) {
    float floor = o.min_p * cand_[0].first;
    size_t cut = 1;
    while (cut < cand_.size() && cand_[cut].first >= floor) ++cut;
    cand_.resize(cut);
  }

  double total = 0.0;
  for (const auto& c : cand_) total += c.first;
  double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  for (const auto& c : cand_) {
    r -= c.first;
    if (r <= 0.0) return c.second;
  }
  return cand_.back().second;
}

}  // namespace rlx
