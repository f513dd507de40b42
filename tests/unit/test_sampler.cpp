// Sampler: each option changes what is drawn, and a seed reproduces a run.
#include <catch2/catch.hpp>
#include <map>

#include "rlx/sampler.h"

using namespace rlx;

namespace {

std::vector<float> ramp(int n) {
  std::vector<float> l(n);
  for (int i = 0; i < n; ++i) l[i] = 0.1f * static_cast<float>(i % 17) - 0.05f * (i % 5);
  return l;
}

std::map<int32_t, int> histogram(const SampleOpts& o, int draws = 2000) {
  Sampler s(o.seed);
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) {
    auto l = ramp(64);
    ++h[s.sample(l, {}, o)];
  }
  return h;
}

}  // namespace

TEST_CASE("greedy and temperature 0 take the argmax", "[sampler]") {
  auto l = ramp(64);
  int32_t best = Sampler::argmax(l);
  SampleOpts o;
  o.greedy = true;
  Sampler s;
  CHECK(s.sample(l, {}, o) == best);
  o.greedy = false;
  o.temperature = 0.0f;
  l = ramp(64);
  CHECK(s.sample(l, {}, o) == best);
}

TEST_CASE("the same seed gives the same draws; another seed does not", "[sampler]") {
  SampleOpts o;
  o.temperature = 1.5f;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  auto draw = [&](uint64_t seed) {
    Sampler s(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 50; ++i) {
      auto l = ramp(64);
      out.push_back(s.sample(l, {}, o));
    }
    return out;
  };
  CHECK(draw(7) == draw(7));
  CHECK(draw(7) != draw(8));
}

TEST_CASE("top-k, top-p and min-p each narrow the candidates", "[sampler]") {
  SampleOpts open;
  open.temperature = 1.0f;
  open.top_k = 0;
  open.top_p = 1.0f;
  open.min_p = 0.0f;
  size_t all = histogram(open).size();
  CHECK(all > 20);

  SampleOpts k = open;
  k.top_k = 3;
  CHECK(histogram(k).size() <= 3);
  k.top_k = 1;
  auto one = histogram(k);
  REQUIRE(one.size() == 1);
  auto l = ramp(64);
  CHECK(one.begin()->first == Sampler::argmax(l));

  SampleOpts p = open;
  p.top_p = 0.3f;
  size_t with_p = histogram(p).size();
  CHECK(with_p < all);

  SampleOpts m = open;
  m.min_p = 0.5f;
  size_t with_min_p = histogram(m).size();
  CHECK(with_min_p < all);

  SampleOpts hot = open, cold = open;
  hot.temperature = 5.0f;
  cold.temperature = 0.2f;
  CHECK(histogram(cold).size() < histogram(hot).size());
}

TEST_CASE("the repetition penalty steers away from recent tokens", "[sampler]") {
  std::vector<float> l = {1.0f, 3.0f, 2.9f, -1.0f};
  SampleOpts o;
  o.greedy = true;
  o.repetition_penalty = 1.5f;
  std::vector<int32_t> history = {1};
  Sampler s;
  auto a = l;
  CHECK(s.sample(a, history, o) == 2);  // 3.0 / 1.5 = 2.0 < 2.9
  o.penalty_window = 0;                 // a window of nothing penalizes nothing
  auto b = l;
  CHECK(s.sample(b, history, o) == 1);
  // Negative logits are multiplied (pushed further down), not divided.
  o.penalty_window = 64;
  auto c = l;
  s.sample(c, std::vector<int32_t>{3}, o);
  CHECK(c[3] == Approx(-1.5f));
}
