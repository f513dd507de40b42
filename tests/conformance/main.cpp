// rlx-conformance: every op in ops.def, on every loaded backend (and with --all-variants every
// build of every backend), against a float64 reference and against the cpu backend. Modelled
// on ggml's test-backend-ops. Exit code 1 on any failure or when nothing ran.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cxxopts.hpp>
#include <exception>
#include <set>

#include "compare.h"
#include "harness.h"
#include "report.h"
#include "rlx/plugin_host.h"
#include "targets.h"

namespace rlx::conformance {
namespace {

struct Options {
  std::vector<std::string> plugin_dirs, backends, ops;
  bool all_variants = false, verbose = false, self_test_only = false;
  uint64_t seed = 42;
};

Options parse(int argc, char** argv) {
  cxxopts::Options o("rlx-conformance",
                     "Runs every op on every loaded backend against a float64 reference.");
  // clang-format off
  o.add_options()
      ("plugin-dir", "also search DIR for plugins (repeatable)",
       cxxopts::value<std::vector<std::string>>(), "DIR")
      ("backend", "test only backend NAME or build NAME-VARIANT (repeatable; default: all)",
       cxxopts::value<std::vector<std::string>>(), "NAME")
      ("op", "test only op NAME (repeatable)", cxxopts::value<std::vector<std::string>>(), "NAME")
      ("all-variants", "also test every other build file of each backend, one at a time")
      ("seed", "seed for the random inputs", cxxopts::value<uint64_t>()->default_value("42"))
      ("self-test", "only check that the comparison catches known-bad results")
      ("verbose", "log each case as it runs")
      ("h,help", "print this help");
  // clang-format on
  auto r = o.parse(argc, argv);
  if (r.count("help")) {
    fmt::print("{}\n", o.help());
    std::exit(0);
  }
  Options opt;
  if (r.count("plugin-dir")) opt.plugin_dirs = r["plugin-dir"].as<std::vector<std::string>>();
  if (r.count("backend")) opt.backends = r["backend"].as<std::vector<std::string>>();
  if (r.count("op")) opt.ops = r["op"].as<std::vector<std::string>>();
  opt.all_variants = r.count("all-variants") > 0;
  opt.verbose = r.count("verbose") > 0;
  opt.self_test_only = r.count("self-test") > 0;
  opt.seed = r["seed"].as<uint64_t>();
  return opt;
}

// Runs every case on one device; `cpu` (may be null) holds the cpu backend's results by case.
void run_backend(Device& dev, const std::string& label, const std::vector<Prepared>& cases,
                 const std::vector<RunResult>* cpu, std::vector<Row>& rows, bool verbose) {
  for (size_t k = 0; k < cases.size(); ++k) {
    const Prepared& p = cases[k];
    if (!p.error.empty()) continue;  // already reported once
    if (verbose) spdlog::info("{}: {} / {}", label, p.c->op, p.c->name);
    RunResult run = run_case(dev, p);
    rows.push_back(evaluate(p, run, cpu ? &(*cpu)[k] : nullptr, label));
    rows.back().case_index = int(k);
  }
}

std::vector<RunResult> run_all(Device& dev, const std::string& label,
                               const std::vector<Prepared>& cases, bool verbose) {
  std::vector<RunResult> out;
  for (const Prepared& p : cases) {
    if (verbose && p.error.empty()) spdlog::info("{}: {} / {}", label, p.c->op, p.c->name);
    out.push_back(p.error.empty() ? run_case(dev, p) : RunResult{});
  }
  return out;
}

// Opens device 0 of `p`; a backend that lists a device but cannot open it is a failure, not a
// reason to stop testing the others.
std::shared_ptr<Device> open_or_fail(PluginHost& host, const PluginRecord& p,
                                     const std::string& label, std::vector<Row>& rows) {
  try {
    return host.open_device(p.name);
  } catch (const std::exception& e) {
    Row r = harness_failure("-", fmt::format("cannot open device 0: {}", e.what()));
    r.backend = label;
    rows.push_back(r);
    return nullptr;
  }
}

bool has_device(const PluginHost& host, const std::string& name) {
  for (const DeviceRecord& d : host.devices())
    if (d.backend == name) return true;
  return false;
}

void describe_device(const PluginHost& host, const PluginRecord& p) {
  for (const DeviceRecord& d : host.devices())
    if (d.backend == p.name && d.index == 0) {
      fmt::print("backend {} ({}): {} [{}]\n", backend_label(p), p.path.filename().string(),
                 d.info.name, d.info.capabilities);
      return;
    }
}

int run(const Options& opt) {
  std::vector<std::string> st = self_test();
  for (const std::string& f : st) fmt::print("self-test FAILED: {}\n", f);
  if (!st.empty()) return 1;
  fmt::print("self-test: the comparison rejects known-bad results\n");
  if (opt.self_test_only) return 0;

  // Cases, filtered by --op. Every built-in op must have cases, so a new op in ops.def cannot
  // ship untested.
  std::vector<Case> all = make_cases();
  std::vector<Row> rows;
  std::set<std::string> known;
  for (const Case& c : all) known.insert(c.op);
  for (uint32_t id = 0; id < RLX_OP_BUILTIN_COUNT; ++id) {
    const std::string& name = OpRegistry::global().get(id).name;
    if (!known.count(name)) rows.push_back(harness_failure(name, "op has no conformance cases"));
  }
  for (const std::string& op : opt.ops)
    if (!known.count(op)) {
      fmt::print(stderr, "rlx-conformance: unknown --op '{}'; ops: {}\n", op,
                 fmt::join(known, ", "));
      return 2;
    }
  std::vector<Case> cases;
  for (const Case& c : all)
    if (opt.ops.empty() || std::find(opt.ops.begin(), opt.ops.end(), c.op) != opt.ops.end())
      cases.push_back(c);
  std::vector<Prepared> prepared;
  for (const Case& c : cases) {
    prepared.push_back(prepare(c, opt.seed));
    // A case the core cannot build is one failure, not one per backend.
    if (!prepared.back().error.empty()) {
      Row r = harness_failure(c.op, prepared.back().error);
      r.case_name = c.name;
      r.case_index = int(prepared.size() - 1);
      rows.push_back(r);
    }
  }

  PluginHostOptions host_opts;
  for (const std::string& d : opt.plugin_dirs) host_opts.plugin_dirs.emplace_back(d);
  PluginHost host(host_opts);
  for (const RejectedPlugin& r : host.rejected())
    fmt::print("plugin host turned down {}: {}\n", r.path.string(), r.reason);

  std::vector<PluginRecord> backends;
  for (const PluginRecord& p : host.plugins())
    if (p.kind == RLX_PLUGIN_BACKEND) backends.push_back(p);
  if (backends.empty()) {
    std::vector<std::string> dirs;
    for (const auto& d : host.search_path()) dirs.push_back(d.string());
    fmt::print("no backend plugins found; searched: {}\n", fmt::join(dirs, ", "));
  }

  std::vector<std::string> tested;
  std::set<std::string> matched;
  auto note_match = [&](const PluginRecord& p) {
    for (const std::string& w : opt.backends)
      if (w == p.name || w == backend_label(p)) matched.insert(w);
  };

  // The cpu backend runs first: its outputs are the second opinion for every other build.
  std::vector<RunResult> cpu_runs;
  bool have_cpu = false;
  {
    std::shared_ptr<Device> cpu_dev;
    for (const PluginRecord& p : backends)
      if (p.name == "cpu" && has_device(host, "cpu")) {
        if ((cpu_dev = open_or_fail(host, p, backend_label(p), rows))) {
          cpu_runs = run_all(*cpu_dev, backend_label(p), prepared, opt.verbose);
          have_cpu = true;
        }
      }
    for (const PluginRecord& p : backends) {
      if (!selected(opt.backends, p)) continue;
      note_match(p);
      std::string label = backend_label(p);
      if (!has_device(host, p.name)) {
        fmt::print("backend {}: no device here, skipped\n", label);
        continue;
      }
      describe_device(host, p);
      tested.push_back(label);
      if (p.name == "cpu") {
        for (size_t k = 0; k < cpu_runs.size(); ++k)
          if (prepared[k].error.empty()) {
            rows.push_back(evaluate(prepared[k], cpu_runs[k], nullptr, label));
            rows.back().case_index = int(k);
          }
        continue;
      }
      if (std::shared_ptr<Device> dev = open_or_fail(host, p, label, rows))
        run_backend(*dev, label, prepared, have_cpu ? &cpu_runs : nullptr, rows, opt.verbose);
    }
  }

  if (opt.all_variants) {
    for (const std::filesystem::path& file : unloaded_backend_files(host)) {
      std::unique_ptr<IsolatedHost> iso;
      try {
        iso = std::make_unique<IsolatedHost>(file);
      } catch (const std::exception& e) {
        rows.push_back(harness_failure(
            "-", fmt::format("loading {} on its own: {}", file.string(), e.what())));
        continue;
      }
      PluginHost& h = iso->host();
      if (h.plugins().empty()) {
        for (const RejectedPlugin& r : h.rejected())
          fmt::print("variant {}: skipped ({})\n", file.filename().string(), r.reason);
        continue;
      }
      const PluginRecord p = h.plugins().front();
      if (p.kind != RLX_PLUGIN_BACKEND || !selected(opt.backends, p)) continue;
      note_match(p);
      std::string label = backend_label(p);
      if (std::find(tested.begin(), tested.end(), label) != tested.end())
        label += " (" + file.parent_path().filename().string() + ")";
      if (!has_device(h, p.name)) {
        fmt::print("variant {}: no device here, skipped\n", label);
        continue;
      }
      describe_device(h, p);
      tested.push_back(label);
      if (std::shared_ptr<Device> dev = open_or_fail(h, p, label, rows))
        run_backend(*dev, label, prepared, have_cpu ? &cpu_runs : nullptr, rows, opt.verbose);
    }
  }
  for (const std::string& w : opt.backends)
    if (!matched.count(w))
      rows.push_back(harness_failure("-", fmt::format("--backend {} is not loaded", w)));

  // One block per case, its backends side by side; problems outside any case first.
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.case_index < b.case_index; });
  fmt::print("\n");
  print_table(rows);
  fmt::print("\n");
  print_unsupported(rows, tested);
  return print_summary(rows);
}

}  // namespace
}  // namespace rlx::conformance

int main(int argc, char** argv) {
  try {
    auto opt = rlx::conformance::parse(argc, argv);
    spdlog::set_level(opt.verbose ? spdlog::level::info : spdlog::level::warn);
    return rlx::conformance::run(opt);
  } catch (const cxxopts::exceptions::exception& e) {
    fmt::print(stderr, "rlx-conformance: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "rlx-conformance: {}\n", e.what());
    fmt::print("conformance: 0 passed, 1 failed, 0 unsupported\n");
    return 1;
  }
}
