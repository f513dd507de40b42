// rlx: the command-line front end. `rlx <command> [flags]`; every command has --help.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "commands.h"
#include "rlx/error.h"
#include "rlx/log.h"
#include "rlx/plugin_abi.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Command kCommands[] = {
    {"devices", "list plugins, devices and rejected plugin files", rlx::cli::cmd_devices},
    {"run", "generate tokens from a model (.gguf file or HF directory)", rlx::cli::cmd_run},
    {"bench", "prompt and generation speed, llama-bench compatible JSON", rlx::cli::cmd_bench},
    {"check", "run one transformer block on a device and compare with cpu", rlx::cli::cmd_check},
    {"info", "show a weight file's format, metadata and tensors", rlx::cli::cmd_info},
    {"chat", "talk to a model, one user turn per line (chat template, streaming text)",
     rlx::cli::cmd_chat},
    {"tokenize", "text -> token ids (JSON), or ids -> text with --decode", rlx::cli::cmd_tokenize},
};

void print_usage() {
  std::printf(
      "rlx %s: LLM inference runtime with pluggable backends\n\n"
      "usage: rlx <command> [flags]     (rlx <command> --help for its flags)\n\ncommands:\n",
      RLX_VERSION);
  for (const Command& c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf(
      "\nglobal:\n  --help       this text\n  --version    print the version and plugin ABI\n"
      "\nenvironment:\n  RLX_PLUGIN_PATH   colon-separated absolute plugin directories (after "
      "--plugin-dir; never the current directory)\n"
      "  RLX_PLUGIN_PROBE  auto (default: plugins outside rlx's own dir are probed in a child "
      "process first), isolated, inprocess\n"
      "  RLX_LOG_LEVEL     trace, debug, info, warn (default), error, off\n");
}

}  // namespace

int main(int argc, char** argv) {
  rlx::init_log_from_env();
  if (argc < 2) {
    print_usage();
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    print_usage();
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("rlx %s (plugin ABI %d.%d)\n", RLX_VERSION, RLX_ABI_MAJOR, RLX_ABI_MINOR);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (cmd != c.name) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      rlx::log().error("{}", e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "rlx: unknown command '%s'; run `rlx --help` for the list\n", argv[1]);
  return 2;
}
