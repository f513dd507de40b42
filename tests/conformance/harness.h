// Running one case on one device: a one-node graph, planned by the core, compiled by the
// backend, with every bound buffer surrounded by sentinel guards and read back whole.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cases.h"
#include "reference.h"
#include "rlx/arena.h"
#include "rlx/backend.h"

namespace rlx::conformance {

// A case made concrete: inputs generated, reference computed, graph built and planned. Built
// once and shared by every backend, so all of them see identical bytes.
struct Prepared {
  const Case* c = nullptr;
  std::vector<HostTensor> inputs;
  Reference ref;
  std::unique_ptr<PlannedGraph> planned;  // heap: desc() points into it, so it must not move
  std::vector<uint32_t> input_slots;      // slot of inputs[k]
  uint32_t out_slot = 0;
  TensorInfo out_info;
  std::string error;  // the case could not be built (core shape inference, planning); FAIL
};

Prepared prepare(const Case& c, uint64_t seed);

struct RunResult {
  enum class Status { Ran, Unsupported, Broken };
  Status status = Status::Broken;
  std::vector<double> out;          // the output payload, as doubles
  std::string run_error;            // Program::run threw (expected for expect_error cases)
  std::string broken;               // alloc / upload / compile / read-back failed
  std::vector<std::string> damage;  // guard bytes or inputs that changed
};

RunResult run_case(Device& dev, const Prepared& p);

}  // namespace rlx::conformance
