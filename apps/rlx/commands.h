// The CLI's subcommands. Each parses its own flags and returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace rlx::cli {

// Flags every command takes: --plugin-dir (repeatable), --log-level, --verbose.
struct CommonFlags {
  std::vector<std::string> plugin_dirs;
  std::string log_level;
  bool verbose = false;
};

int cmd_devices(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);

}  // namespace rlx::cli
