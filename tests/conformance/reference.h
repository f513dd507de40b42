// Float64 reference implementations of every op in ops.def: plain loops written from the spec
// comments there, sharing no code with any backend. Slow on purpose; correctness is the point.
#pragma once

#include <string>
#include <vector>

#include "cases.h"

namespace rlx::conformance {

struct Reference {
  Shape shape;          // expected output shape
  bool is_int = false;  // argmax: values are indices
  std::vector<double> values;
  std::string error;  // non-empty: the spec says this run must fail (and why)
  // Inputs an UPDATE op (kv_store) writes: input index -> its expected contents after the run
  // (compared exactly). Every other input, or all of them when the run fails, must be unchanged.
  std::vector<std::vector<double>> inputs_after;
};

// Computes case `c` on `inputs` (from make_inputs). Throws std::logic_error for an op it does
// not know, so a new op in ops.def cannot go untested silently.
Reference reference(const Case& c, const std::vector<HostTensor>& inputs);

}  // namespace rlx::conformance
