#include "report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compare.h"

namespace rlx::conformance {

// Two backends that are each within t of the float64 reference can be up to
// (sqrt(t) + sqrt(t))^2 = 4t apart, so the cross-backend check allows 4x the threshold.
constexpr double kCpuSlack = 4.0;

Row evaluate(const Prepared& p, const RunResult& run, const RunResult* cpu,
             const std::string& backend) {
  const Case& c = *p.c;
  Row row{c.op, c.name, backend, {}, {}, c.threshold, c.exact, Outcome::Fail, {}};
  if (!p.error.empty()) {
    row.notes.push_back(p.error);
    return row;
  }
  if (run.status == RunResult::Status::Unsupported) {
    row.outcome = Outcome::Unsupported;
    return row;
  }
  if (run.status == RunResult::Status::Broken) {
    row.notes.push_back(run.broken);
    return row;
  }
  for (const std::string& d : run.damage) row.notes.push_back(d);

  if (c.expect_error) {
    // The spec demands a clean run-time error here (ref.error says why); no output to judge.
    if (run.run_error.empty())
      row.notes.push_back(fmt::format("the run succeeded but must fail: {}", p.ref.error));
    row.outcome = row.notes.empty() ? Outcome::Pass : Outcome::Fail;
    return row;
  }
  if (!run.run_error.empty()) {
    row.notes.push_back("run: " + run.run_error);
    return row;
  }
  Verdict vs_ref = judge(run.out, p.ref.values, c.threshold, c.exact);
  row.nmse_ref = vs_ref.nmse;
  if (!vs_ref.pass) row.notes.push_back("vs reference: " + vs_ref.why);
  if (cpu && cpu->status == RunResult::Status::Ran && cpu->run_error.empty()) {
    Verdict vs_cpu = judge(run.out, cpu->out, c.threshold * kCpuSlack, c.exact);
    row.nmse_cpu = vs_cpu.nmse;
    if (!vs_cpu.pass) row.notes.push_back("vs cpu: " + vs_cpu.why);
  }
  row.outcome = row.notes.empty() ? Outcome::Pass : Outcome::Fail;
  return row;
}

Row harness_failure(std::string op, std::string what) {
  Row row;
  row.op = std::move(op);
  row.case_name = "-";
  row.backend = "-";
  row.notes.push_back(std::move(what));
  return row;
}

namespace {

std::string metric(const std::optional<double>& v) {
  return v ? fmt::format("{:.2e}", *v) : std::string("-");
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "PASS";
    case Outcome::Fail: return "FAIL";
    case Outcome::Unsupported: return "UNSUPPORTED";
  }
  return "?";
}

}  // namespace

void print_table(const std::vector<Row>& rows) {
  size_t w_op = 2, w_case = 4, w_be = 7;
  for (const Row& r : rows) {
    w_op = std::max(w_op, r.op.size());
    w_case = std::max(w_case, r.case_name.size());
    w_be = std::max(w_be, r.backend.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>9}  {:>9}  {:>9}  {}\n", "op", w_op, "case", w_case,
             "backend", w_be, "nmse_ref", "nmse_cpu", "threshold", "result");
  for (const Row& r : rows) {
    std::string thr = r.exact           ? std::string("exact")
                      : r.threshold > 0 ? fmt::format("{:.0e}", r.threshold)
                                        : std::string("-");
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {:>9}  {:>9}  {:>9}  {}\n", r.op, w_op, r.case_name, w_case,
               r.backend, w_be, metric(r.nmse_ref), metric(r.nmse_cpu), thr,
               outcome_name(r.outcome));
    for (const std::string& n : r.notes)
      fmt::print("    ^ {} / {} / {}: {}\n", r.op, r.case_name, r.backend, n);
  }
}

void print_unsupported(const std::vector<Row>& rows, const std::vector<std::string>& backends) {
  for (const std::string& be : backends) {
    std::map<std::string, int> ops;  // op -> unsupported cases
    std::map<std::string, int> total;
    for (const Row& r : rows) {
      if (r.backend != be) continue;
      ++total[r.op];
      if (r.outcome == Outcome::Unsupported) ++ops[r.op];
    }
    if (ops.empty()) {
      fmt::print("unsupported on {}: none\n", be);
      continue;
    }
    std::vector<std::string> parts;
    for (const auto& [op, n] : ops)
      parts.push_back(fmt::format("{} ({}/{} cases)", op, n, total[op]));
    fmt::print("unsupported on {}: {}\n", be, fmt::join(parts, ", "));
  }
}

int print_summary(const std::vector<Row>& rows) {
  int pass = 0, fail = 0, unsupported = 0;
  for (const Row& r : rows) {
    if (r.outcome == Outcome::Pass) ++pass;
    if (r.outcome == Outcome::Fail) ++fail;
    if (r.outcome == Outcome::Unsupported) ++unsupported;
  }
  fmt::print("conformance: {} passed, {} failed, {} unsupported\n", pass, fail, unsupported);
  return (fail > 0 || pass + fail == 0) ? 1 : 0;
}

}  // namespace rlx::conformance
