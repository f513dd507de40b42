// Keeping a bad plugin from taking rlx down while it is loaded and probed (plugin_host.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace rlx {

struct ChildProbeFailure {
  size_t index;        // the probe that was running
  std::string reason;  // "crashed (Segmentation fault, signal 11) ...", "hung ..."
};

// Forks, and in the child runs probe(i) for i = from .. n-1 in order, then _exit(0); the child
// tells the parent each i before it starts it. Returns the probe the child was in when it died
// (a signal, an exit status other than 0, or no new probe started for `timeout_s`: then it is
// killed), nullopt when the child got through them all. The child's log is silenced.
std::optional<ChildProbeFailure> run_probes_in_child(size_t from, size_t n,
                                                     const std::function<void(size_t)>& probe,
                                                     int timeout_s);

// While alive, a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) first prints
// "rlx: plugin <file> crashed while <doing>..." to stderr, then the process dies of it as
// before. For plugins loaded in-process, so that a crash at least names its file.
class CrashNote {
 public:
  CrashNote(const std::string& file, const char* doing);
  ~CrashNote();
  CrashNote(const CrashNote&) = delete;
  CrashNote& operator=(const CrashNote&) = delete;
};

}  // namespace rlx
