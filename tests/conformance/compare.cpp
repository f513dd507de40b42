#include "compare.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace rlx::conformance {

double nmse(std::span<const double> out, std::span<const double> ref) {
  double num = 0, den = 0;
  for (size_t k = 0; k < out.size() && k < ref.size(); ++k) {
    double e = out[k] - ref[k];
    num += e * e;
    den += ref[k] * ref[k];
  }
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return num / den;
}

Verdict judge(std::span<const double> out, std::span<const double> ref, double threshold,
              bool exact) {
  Verdict v;
  if (out.size() != ref.size()) {
    v.nmse = std::numeric_limits<double>::infinity();
    v.why = fmt::format("{} output elements, expected {}", out.size(), ref.size());
    return v;
  }
  int64_t bad = 0, first_bad = -1;
  for (size_t k = 0; k < out.size(); ++k)
    if (!std::isfinite(out[k]) && bad++ == 0) first_bad = int64_t(k);
  v.nmse = nmse(out, ref);
  if (bad > 0) {
    v.nmse = std::numeric_limits<double>::quiet_NaN();
    v.why = fmt::format("{} non-finite output values, first at element {} ({})", bad, first_bad,
                        out[first_bad]);
    return v;
  }
  if (exact) {
    int64_t wrong = 0;
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k] != ref[k] && wrong++ == 0) first_bad = int64_t(k);
    if (wrong > 0) {
      v.why = fmt::format("{} of {} values differ, first at element {}: got {}, expected {}", wrong,
                          out.size(), first_bad, out[first_bad], ref[first_bad]);
      return v;
    }
    v.pass = true;
    return v;
  }
  // Point at the worst element: usually enough to tell a mask or tail bug from rounding.
  size_t worst = 0;
  for (size_t k = 1; k < out.size(); ++k)
    if (std::abs(out[k] - ref[k]) > std::abs(out[worst] - ref[worst])) worst = k;
  double worst_err = std::abs(out[worst] - ref[worst]);
  double ref_sq = 0;
  for (double r : ref) ref_sq += r * r;
  double ref_rms = ref.empty() ? 0.0 : std::sqrt(ref_sq / double(ref.size()));
  if (!(v.nmse <= threshold)) {
    v.why = fmt::format("nmse {:.3g} > {:.3g}; worst element {}: got {:.9g}, expected {:.9g}",
                        v.nmse, threshold, worst, out[worst], ref[worst]);
    return v;
  }
  // NMSE averages over the tensor, so one bad element in a large output hides in it. No single
  // element may be off by more than the threshold allows for a one-element tensor:
  // err / rms(ref) <= sqrt(threshold). Honest f32 rounding sits orders of magnitude below.
  if (worst_err > std::sqrt(threshold) * ref_rms) {
    v.why = fmt::format(
        "element {} is off by {:.3g} ({:.3g} x rms(ref), limit {:.3g}): got "
        "{:.9g}, expected {:.9g}",
        worst, worst_err, worst_err / ref_rms, std::sqrt(threshold), out[worst], ref[worst]);
    return v;
  }
  v.pass = true;
  return v;
}

uint8_t sentinel_byte(uint64_t pos) { return uint8_t(((pos * 131u) + 0x3Du) ^ 0xA5u); }

std::vector<uint8_t> guarded(const void* payload, uint64_t bytes) {
  std::vector<uint8_t> buf(kGuardBytes * 2 + bytes);
  for (uint64_t k = 0; k < buf.size(); ++k) buf[k] = sentinel_byte(k);
  if (bytes) std::memcpy(buf.data() + kGuardBytes, payload, bytes);
  return buf;
}

std::string check_guards(std::span<const uint8_t> buf, uint64_t bytes) {
  if (buf.size() != kGuardBytes * 2 + bytes)
    return fmt::format("buffer is {} bytes, expected {}", buf.size(), kGuardBytes * 2 + bytes);
  std::string out;
  auto scan = [&](uint64_t from, uint64_t to, const char* where) {
    int64_t changed = 0, first = 0;
    for (uint64_t k = from; k < to; ++k)
      if (buf[k] != sentinel_byte(k) && changed++ == 0) first = int64_t(k) - int64_t(kGuardBytes);
    if (changed == 0) return;
    if (!out.empty()) out += "; ";
    out += fmt::format("{} {} guard bytes changed {} (first at payload offset {:+})", where,
                       changed, where[0] == 'b' ? "before the data" : "after the data", first);
  };
  scan(0, kGuardBytes, "before:");
  scan(kGuardBytes + bytes, buf.size(), "after:");
  return out;
}

std::vector<std::string> self_test() {
  std::vector<std::string> fails;
  auto expect = [&](bool ok, std::string what) {
    if (!ok) fails.push_back(std::move(what));
  };
  std::vector<double> ref(257);
  for (size_t k = 0; k < ref.size(); ++k) ref[k] = std::sin(double(k) * 0.37) * 0.9;

  expect(judge(ref, ref, 1e-7, false).pass, "an exact copy of the reference was judged FAIL");
  std::vector<double> close = ref;
  for (double& x : close) x *= 1.0 + 1e-9;
  expect(judge(close, ref, 1e-7, false).pass, "a 1e-9 relative error was judged FAIL at 1e-7");

  // The deliberately wrong backend result: every value off by 1e-2 (NMSE ~ 2e-4).
  std::vector<double> wrong = ref;
  for (size_t k = 0; k < wrong.size(); ++k) wrong[k] += (k % 2 ? 1e-2 : -1e-2);
  expect(!judge(wrong, ref, 1e-7, false).pass, "a result off by 1e-2 was judged PASS at 1e-7");
  // At the loosest threshold in use (5e-4), a 10% error must still fail.
  for (double& x : wrong) x *= 1.1;
  expect(!judge(wrong, ref, 5e-4, false).pass, "a result off by 10% was judged PASS at 5e-4");

  std::vector<double> one_off = ref;
  one_off[100] += 1.0;
  expect(!judge(one_off, ref, 1e-7, false).pass, "one element off by 1.0 was judged PASS");

  // One element of a large tensor off by 1e-3: NMSE alone (~1e-11) would let it through.
  std::vector<double> big(8192), big_bad;
  for (size_t k = 0; k < big.size(); ++k) big[k] = std::cos(double(k) * 0.11);
  big_bad = big;
  big_bad[4097] += 1e-3;
  expect(!judge(big_bad, big, 1e-7, false).pass,
         "one element off by 1e-3 in 8192 was judged PASS at 1e-7");

  std::vector<double> nan = ref;
  nan[3] = std::numeric_limits<double>::quiet_NaN();
  expect(!judge(nan, ref, 1e30, false).pass, "a NaN in the output was judged PASS");
  std::vector<double> inf = ref;
  inf[7] = std::numeric_limits<double>::infinity();
  expect(!judge(inf, ref, 1e30, false).pass, "an Inf in the output was judged PASS");
  expect(!judge(std::span(ref).first(10), ref, 1e30, false).pass, "a short output was judged PASS");

  std::vector<double> idx = {3, 0, 7}, idx_bad = {3, 1, 7};
  expect(judge(idx, idx, 0, true).pass, "equal indices were judged FAIL");
  expect(!judge(idx_bad, idx, 1e30, true).pass, "a wrong index was judged PASS");

  float payload[5] = {1, 2, 3, 4, 5};
  std::vector<uint8_t> buf = guarded(payload, sizeof payload);
  expect(check_guards(buf, sizeof payload).empty(), "intact guards were reported as damaged");
  buf[kGuardBytes + sizeof payload] ^= 1;  // one byte past the end
  expect(!check_guards(buf, sizeof payload).empty(), "a write past the end went unnoticed");
  buf = guarded(payload, sizeof payload);
  buf[kGuardBytes - 1] ^= 0x80;  // one byte before the start
  expect(!check_guards(buf, sizeof payload).empty(), "a write before the start went unnoticed");
  return fails;
}

}  // namespace rlx::conformance
