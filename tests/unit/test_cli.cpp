// The rlx binary itself: `rlx devices` (text and JSON), --version, --help, bad flags.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tiny_model.h"

namespace {

struct Result {
  int code;
  std::string out;
};

// Runs `rlx <args>` through the shell with `env` ("NAME=value ...") set; stdout and stderr.
Result run(const std::string& args, const std::string& env = "") {
  std::string cmd = "RLX_PLUGIN_PATH= RLX_LOG_LEVEL= " + env + " " + RLX_TEST_RLX_BIN + " " +
                    args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

TEST_CASE("rlx devices lists the cpu backend and its chosen variant", "[cli]") {
  Result r = run("devices");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("plugins:") && Catch::Contains("cpu") &&
                        Catch::Contains("variant") && Catch::Contains("cpu:0"));
}

TEST_CASE("rlx devices lists rejected plugins with reasons", "[cli]") {
  Result r = run(std::string("devices --plugin-dir ") + RLX_TEST_FAKE_PLUGIN_DIR);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("rejected:") &&
                        Catch::Contains("librlx-backend-wrongabi.so: built for plugin ABI 99.0") &&
                        Catch::Contains("librlx-backend-nosym.so") &&
                        Catch::Contains("other variants (not chosen)"));
  Result j = run(std::string("devices --json --plugin-dir ") + RLX_TEST_FAKE_PLUGIN_DIR);
  REQUIRE(j.code == 0);
  CHECK_THAT(j.out, Catch::Contains("\"rejected\":[{") && Catch::Contains("\"name\":\"cpu\"") &&
                        Catch::Contains("\"devices\":[{"));
}

TEST_CASE("a plugin that crashes in-process is named before rlx goes down", "[cli]") {
  // Isolated probing (the default outside rlx's own plugin dir) skips it and goes on...
  const std::string args = std::string("devices --plugin-dir ") + RLX_TEST_CRASH_PLUGIN_DIR;
  Result r = run(args, "RLX_PLUGIN_PROBE_TIMEOUT=2");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("librlx-backend-crashinit.so") && Catch::Contains("survivor"));
  // ... in-process, the crash takes rlx down but names the file first.
  r = run(args, "RLX_PLUGIN_PROBE=inprocess");
  CHECK(r.code != 0);
  CHECK_THAT(r.out, Catch::Contains("rlx: plugin ") &&
                        Catch::Contains("librlx-backend-crashload.so crashed while being loaded"));
}

TEST_CASE("rlx --version, --help and bad input", "[cli]") {
  CHECK_THAT(run("--version").out, Catch::Contains("plugin ABI 1."));
  Result h = run("--help");
  CHECK(h.code == 0);
  CHECK_THAT(h.out, Catch::Contains("devices"));
  Result bad = run("devices --no-such-flag");
  CHECK(bad.code != 0);
  CHECK_THAT(bad.out, Catch::Contains("no-such-flag"));
  Result unknown = run("frobnicate");
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.out, Catch::Contains("unknown command 'frobnicate'"));
  Result level = run("devices --log-level loud");
  CHECK(level.code != 0);
  CHECK_THAT(level.out, Catch::Contains("unknown log level 'loud'"));
}

TEST_CASE("rlx run and rlx info fail cleanly on bad files and flags", "[cli]") {
  std::string dir = "/tmp/rlx-test-cli";
  std::system(("mkdir -p " + dir).c_str());
  Result missing = run("run --weights " + dir + "/nope.gguf --prompt-ids 1");
  CHECK(missing.code == 1);
  CHECK_THAT(missing.out, Catch::Contains("nope.gguf"));

  // A GGUF header cut short.
  std::string cut = dir + "/cut.gguf";
  FILE* f = std::fopen(cut.c_str(), "wb");
  REQUIRE(f);
  std::fwrite("GGUF\x03\x00\x00\x00\x01", 1, 9, f);
  std::fclose(f);
  for (const char* cmd : {"run --prompt-ids 1 --weights ", "info "}) {
    Result r = run(cmd + cut);
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::Contains("cut.gguf"));
  }
  Result no_ids = run("run --weights " + cut);
  CHECK(no_ids.code == 1);
  CHECK_THAT(no_ids.out, Catch::Contains("--prompt-ids"));
  Result bad_ids = run("run --weights " + cut + " --prompt-ids 1,x");
  CHECK(bad_ids.code == 1);
  CHECK_THAT(bad_ids.out, Catch::Contains("'x'"));
}

TEST_CASE("rlx run reads the profile next to the weights and refuses a bad one", "[cli]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "rlx-test-cli-profile";
  fs::create_directories(dir);
  rlx::test::write_tiny_model({}, dir / "m.gguf");
  { std::ofstream(dir / "m.rlx.toml") << "[decode]\ncache = \"exact\"\n"; }
  Result ok = run("run --weights " + (dir / "m.gguf").string() + " --print-profile --top-k 3");
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("cache = \"exact\"") && Catch::Contains("m.rlx.toml:2") &&
                         Catch::Contains("flag --top-k"));
  { std::ofstream(dir / "m.rlx.toml") << "[decode]\ncach = \"exact\"\n"; }
  Result bad = run("run --weights " + (dir / "m.gguf").string() + " --prompt-ids 1");
  CHECK(bad.code == 1);
  CHECK_THAT(bad.out,
             Catch::Contains("m.rlx.toml:2") && Catch::Contains("did you mean 'decode.cache'"));
  fs::remove(dir / "m.rlx.toml");
}
