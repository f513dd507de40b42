// Plugin host: discovery order, header checks, every kind of broken plugin, variant choice and
// explicit unload. The broken plugins are real shared objects built by tests/plugins.
#include <dlfcn.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "rlx/error.h"
#include "rlx/graph.h"
#include "rlx/log.h"
#include "rlx/plugin_host.h"

using namespace rlx;
namespace fs = std::filesystem;

namespace {

PluginHostOptions only(const fs::path& dir) {
  PluginHostOptions o;
  o.plugin_dirs = {dir};
  o.use_env = false;
  o.use_install_dir = false;
  return o;
}

const RejectedPlugin* rejected_file(const PluginHost& h, const std::string& filename) {
  for (const auto& r : h.rejected())
    if (r.path.filename() == filename) return &r;
  return nullptr;
}

std::map<std::string, PluginRecord> by_name(const PluginHost& h) {
  std::map<std::string, PluginRecord> m;
  for (auto& p : h.plugins()) m[p.name] = p;
  return m;
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

}  // namespace

TEST_CASE("each broken plugin is rejected with one warning and the rest still load", "[host]") {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(512);
  log().sinks().push_back(sink);
  const auto level = log().level();
  log().set_level(spdlog::level::info);  // the no-device line is at info
  PluginHost host(only(RLX_TEST_FAKE_PLUGIN_DIR));
  log().set_level(level);
  log().sinks().pop_back();

  auto loaded = by_name(host);
  CHECK(loaded.count("good") == 1);
  CHECK(loaded.count("dupe") == 1);
  REQUIRE(loaded.count("multi") == 1);
  CHECK(loaded["multi"].variant == "high");  // score 9 beats score 5
  CHECK(loaded["multi"].score == 9);

  const std::map<std::string, std::string> expect = {
      {"librlx-backend-notelf.so", "cannot load"},
      {"librlx-backend-nosym.so", "no rlx_plugin_query symbol"},
      {"librlx-backend-wrongabi.so", "built for plugin ABI 99.0"},
      {"librlx-backend-smallhdr.so", "struct_size 8"},
      {"librlx-backend-scorezero.so", "score 0"},
      {"librlx-backend-probefail.so", "simulated driver failure"},
      {"librlx-backend-dupe_b.so", "duplicate plugin 'dupe'"},
      {"librlx-backend-missingdep.so", "librlx_test_missing_dep.so"},
  };
  auto warnings = sink->last_formatted();
  for (const auto& [file, reason] : expect) {
    INFO(file);
    const RejectedPlugin* r = rejected_file(host, file);
    REQUIRE(r != nullptr);
    CHECK_THAT(r->reason, Catch::Contains(reason));
    CHECK_FALSE(r->superseded);
    // A backend without a device (the probe's RLX_ERR_NO_DEVICE) is normal on machines without
    // that hardware: logged once at info, not as a warning.
    const std::string level = file == "librlx-backend-probefail.so" ? "[info]" : "[warning]";
    int n = 0;
    for (const auto& w : warnings)
      if (w.find(level) != std::string::npos && w.find(file) != std::string::npos) ++n;
    CHECK(n == 1);
  }
  // The OS loader's own words, not Boost's "Bad file descriptor".
  CHECK_THAT(rejected_file(host, "librlx-backend-missingdep.so")->reason,
             Catch::Contains("cannot open shared object file"));
  CHECK_THAT(rejected_file(host, "librlx-backend-notelf.so")->reason,
             Catch::Contains("ELF") || Catch::Contains("too short"));

  // The losing variant is listed, but as superseded and without a warning.
  const RejectedPlugin* low = rejected_file(host, "librlx-backend-multi-low.so");
  REQUIRE(low != nullptr);
  CHECK(low->superseded);
  for (const auto& w : warnings)
    if (w.find("[warning]") != std::string::npos) CHECK(w.find("multi-low") == std::string::npos);

  // Opening a rejected or unknown backend explains itself.
  CHECK_THROWS_WITH(host.open_device("probefail"),
                    Catch::Contains("not loaded") && Catch::Contains("simulated driver failure"));
  CHECK_THROWS_WITH(host.open_device("nope"),
                    Catch::Contains("no backend named 'nope'") && Catch::Contains("good"));
  CHECK_THROWS_WITH(host.open_device_spec("good:x"), Catch::Contains("NAME:INDEX"));
  CHECK_THROWS_WITH(host.open_device("good", 3), Catch::Contains("1 device(s)"));
}

TEST_CASE("a plugin's own ops live in the registry while it is loaded", "[host][ops]") {
  auto host = std::make_unique<PluginHost>(only(RLX_TEST_FAKE_PLUGIN_DIR));
  const OpDef* twice = OpRegistry::global().find("good.twice");
  REQUIRE(twice != nullptr);
  CHECK(twice->id >= RLX_OP_CUSTOM_BASE);
  CHECK(twice->owner == "good");
  uint32_t id = twice->id;

  GraphBuilder b;
  TensorId x = b.input("x", RLX_F32, {2, 3});
  TensorId y = b.op("good.twice", {x});
  CHECK(b.info(y).shape == Shape{2, 3});
  TensorId ids = b.input("ids", RLX_I32, {2});
  CHECK_THROWS_WITH(b.op("good.twice", {ids}),
                    Catch::Contains("twice takes f32 only") && Catch::Contains("good.twice"));

  host->unload("good");  // its inference code is unmapped: the op must go with it
  CHECK(OpRegistry::global().find("good.twice") == nullptr);
  CHECK_THROWS_WITH(OpRegistry::global().get(id), Catch::Contains("unloaded"));
  host.reset();
  // Loading it again registers it afresh.
  PluginHost again(only(RLX_TEST_FAKE_PLUGIN_DIR));
  CHECK(OpRegistry::global().find("good.twice") != nullptr);
}

TEST_CASE("search order: --plugin-dir, then RLX_PLUGIN_PATH, then the install dir", "[host]") {
  ::setenv("RLX_PLUGIN_PATH", "/tmp/rlx-a::/tmp/rlx-b:", 1);
  PluginHostOptions o;
  o.plugin_dirs = {"/tmp/rlx-first"};
  PluginHost host(o);
  ::unsetenv("RLX_PLUGIN_PATH");
  const auto& sp = host.search_path();
  REQUIRE(sp.size() == 4);  // empty entries are skipped: never the current directory
  CHECK(sp[0] == "/tmp/rlx-first");
  CHECK(sp[1] == "/tmp/rlx-a");
  CHECK(sp[2] == "/tmp/rlx-b");
  CHECK(sp[3] == PluginHost::install_plugin_dir());
}

TEST_CASE("the current directory is never searched", "[host]") {
  fs::path old = fs::current_path();
  fs::current_path(RLX_TEST_FAKE_PLUGIN_DIR);
  PluginHostOptions o;
  o.use_env = false;
  o.use_install_dir = false;
  PluginHost host(o);
  fs::current_path(old);
  CHECK(host.plugins().empty());
  CHECK(host.rejected().empty());
}

TEST_CASE("plugins that crash or hang while loading are rejected and the host survives",
          "[host]") {
  // Outside rlx's own plugin directory, so probed in a child process first (Probe::Auto).
  PluginHostOptions o = only(RLX_TEST_CRASH_PLUGIN_DIR);
  o.probe_timeout_s = 2;
  PluginHost host(o);
  auto loaded = by_name(host);
  CHECK(loaded.size() == 1);
  CHECK(loaded.count("survivor") == 1);
  REQUIRE(host.devices().size() == 1);
  CHECK(host.devices()[0].backend == "survivor");
  auto crashed = Catch::Contains("crashed (");
  const RejectedPlugin* r = rejected_file(host, "librlx-backend-crashinit.so");
  REQUIRE(r != nullptr);
  CHECK_THAT(r->reason, crashed && Catch::Contains("signal 11") && Catch::Contains("rlx skipped it"));
  r = rejected_file(host, "librlx-backend-crashload.so");
  REQUIRE(r != nullptr);
  CHECK_THAT(r->reason, crashed && Catch::Contains("signal 6"));
  r = rejected_file(host, "librlx-backend-hang.so");
  REQUIRE(r != nullptr);
  CHECK_THAT(r->reason, Catch::Contains("hung: no progress for 2 s"));
}

TEST_CASE("RLX_PLUGIN_PATH: relative entries are skipped, bad probe settings are errors",
          "[host]") {
  ::setenv("RLX_PLUGIN_PATH", ".:plugins:/tmp/rlx-abs", 1);
  {
    PluginHostOptions o;
    o.use_install_dir = false;
    PluginHost host(o);
    REQUIRE(host.search_path().size() == 1);
    CHECK(host.search_path()[0] == "/tmp/rlx-abs");
  }
  ::unsetenv("RLX_PLUGIN_PATH");
  ::setenv("RLX_PLUGIN_PROBE", "sometimes", 1);
  CHECK_THROWS_WITH(PluginHost(), Catch::Contains("RLX_PLUGIN_PROBE='sometimes'"));
  ::unsetenv("RLX_PLUGIN_PROBE");
  ::setenv("RLX_PLUGIN_PROBE_TIMEOUT", "0", 1);
  CHECK_THROWS_WITH(PluginHost(), Catch::Contains("RLX_PLUGIN_PROBE_TIMEOUT='0'"));
  ::unsetenv("RLX_PLUGIN_PROBE_TIMEOUT");
}

TEST_CASE("a world-writable plugin directory is warned about", "[host]") {
  fs::path dir = fs::temp_directory_path() / ("rlx-ww-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // 0777
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
  log().sinks().push_back(sink);
  { PluginHost host(only(dir)); }
  log().sinks().pop_back();
  fs::remove_all(dir);
  int n = 0;
  for (const auto& w : sink->last_formatted())
    if (w.find(dir.string()) != std::string::npos && w.find("writable by every user") != std::string::npos)
      ++n;
  CHECK(n == 1);
}

TEST_CASE("plugin file names", "[host]") {
  CHECK(PluginHost::is_plugin_filename("librlx-backend-cpu.so"));
  CHECK(PluginHost::is_plugin_filename("librlx-backend-cpu-avx512.so"));
  CHECK(PluginHost::is_plugin_filename("librlx-model-llama32.so"));
  CHECK_FALSE(PluginHost::is_plugin_filename("librlx-backend-.so"));
  CHECK_FALSE(PluginHost::is_plugin_filename("librlx_core.a"));
  CHECK_FALSE(PluginHost::is_plugin_filename("librlx-frontend-cpu.so"));
  CHECK_FALSE(PluginHost::is_plugin_filename("librlx-backend-cpu.so.bak"));
}

TEST_CASE("the cpu backend picks its best variant and unloads cleanly", "[host][cpu]") {
  fs::path dir = RLX_TEST_PLUGIN_DIR;
  auto host = std::make_unique<PluginHost>(only(dir));
  auto plugins = by_name(*host);
  REQUIRE(plugins.count("cpu") == 1);
  const PluginRecord cpu = plugins["cpu"];
  for (const auto& r : host->rejected())
    if (r.name == "cpu") {
      CHECK(r.superseded);  // the other builds lost on score, nothing is broken
    }
  REQUIRE(host->devices().size() >= 1);

  int before = thread_count();
  {
    auto dev = host->open_device("cpu", 0, 4);
    CHECK(thread_count() > before);  // the pool is running

    // A tiny real program: y = silu(x @ w^T).
    GraphBuilder b;
    TensorId x = b.input("x", RLX_F32, {1, 2});
    TensorId w = b.weight("w", RLX_F32, {2, 2});
    b.output(b.op("silu", {b.matmul(x, w)}), "y");
    PlannedGraph p = plan_graph(b.finish());
    Program prog = dev->compile(p);
    float xs[2] = {1.0f, 2.0f}, ws[4] = {1.0f, 0.0f, 0.0f, -1.0f}, ys[2] = {};
    Buffer bx = dev->alloc(sizeof xs), bw = dev->alloc(sizeof ws), by = dev->alloc(sizeof ys);
    bx.write(0, xs, sizeof xs);
    bw.write(0, ws, sizeof ws);
    rlx_binding binds[3] = {{bx.handle(), 0}, {bw.handle(), 0}, {by.handle(), 0}};
    prog.run(binds);
    by.read(0, ys, sizeof ys);
    CHECK(ys[0] == Approx(1.0 / (1.0 + std::exp(-1.0))));
    CHECK(ys[1] == Approx(-2.0 / (1.0 + std::exp(2.0))));

    CHECK_THROWS_WITH(host->unload("cpu"), Catch::Contains("still in use"));
  }
  host->unload("cpu");
  CHECK(thread_count() == before);
  CHECK_FALSE(host->has_backend("cpu"));
  // The library is really unmapped, not just forgotten.
  CHECK(dlopen(cpu.path.c_str(), RTLD_NOW | RTLD_NOLOAD) == nullptr);
  CHECK_THROWS_WITH(host->unload("cpu"), Catch::Contains("not loaded"));
}
