// Judging a backend's output: NMSE against a reference, exact match for integer outputs, and the
// sentinel bytes around every bound buffer. Kept apart from the harness so the self-test can
// feed it known-bad data without a device.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rlx::conformance {

// sum((out - ref)^2) / sum(ref^2); 0 when both are all zero, +inf when only ref is.
double nmse(std::span<const double> out, std::span<const double> ref);

struct Verdict {
  bool pass = false;
  double nmse = 0.0;
  std::string why;  // empty on a pass
};

// NaN/Inf in `out` always fails. `exact`: every element must be equal (argmax indices);
// otherwise nmse(out, ref) <= threshold.
Verdict judge(std::span<const double> out, std::span<const double> ref, double threshold,
              bool exact);

// Guard bytes placed before and after every buffer the harness binds.
inline constexpr uint64_t kGuardBytes = 256;
// The byte expected at position `pos` of a guarded buffer: varies with position so that a
// shifted copy of the guard is caught too.
uint8_t sentinel_byte(uint64_t pos);
// A buffer of kGuardBytes + payload + kGuardBytes: guards from sentinel_byte, payload copied.
std::vector<uint8_t> guarded(const void* payload, uint64_t bytes);
// Empty if both guards of `buf` (payload `bytes` long) are intact, else one line saying which
// guard changed, how many bytes and the first offset relative to the payload.
std::string check_guards(std::span<const uint8_t> buf, uint64_t bytes);

// Feeds the judge known-good and known-bad results; returns the failures (empty = healthy).
std::vector<std::string> self_test();

}  // namespace rlx::conformance
