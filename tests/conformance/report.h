// Turning run results into verdicts and printing them: the table, the unsupported ops per
// backend, and the one summary line scripts grep for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness.h"

namespace rlx::conformance {

enum class Outcome { Pass, Fail, Unsupported };

struct Row {
  std::string op, case_name, backend;
  std::optional<double> nmse_ref, nmse_cpu;
  double threshold = 0;
  bool exact = false;
  Outcome outcome = Outcome::Fail;
  std::vector<std::string> notes;  // why it failed
  int case_index = -1;             // position in the case list; -1 for harness problems
};

// `cpu`: the cpu backend's result for the same case, or nullptr when there is none to compare
// with (no cpu backend loaded, cpu did not support it, or this is the cpu backend itself).
Row evaluate(const Prepared& p, const RunResult& run, const RunResult* cpu,
             const std::string& backend);

// A row for a problem that is not one backend's (e.g. an op without cases).
Row harness_failure(std::string op, std::string what);

void print_table(const std::vector<Row>& rows);
void print_unsupported(const std::vector<Row>& rows, const std::vector<std::string>& backends);
// "conformance: N passed, M failed, K unsupported"; returns the process exit code.
int print_summary(const std::vector<Row>& rows);

}  // namespace rlx::conformance
