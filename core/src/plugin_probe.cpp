#include "plugin_probe.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "rlx/error.h"
#include "rlx/log.h"

namespace rlx {

std::optional<ChildProbeFailure> run_probes_in_child(size_t from, size_t n,
                                                     const std::function<void(size_t)>& probe,
                                                     int timeout_s) {
  if (from >= n) return std::nullopt;
  int fds[2];
  if (pipe(fds) != 0) fail("plugin probe: pipe() failed: {}", std::strerror(errno));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    fail("plugin probe: fork() failed: {}", std::strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    log().set_level(spdlog::level::off);  // the parent reports what happened
    // Die of a crash plainly: not in a handler the parent installed (a test framework's, a
    // sanitizer's) that would report it as the parent's own.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) signal(sig, SIG_DFL);
    for (size_t i = from; i < n; ++i) {
      const uint64_t idx = i;
      if (write(fds[1], &idx, sizeof idx) != sizeof idx) _exit(3);
      try {
        probe(i);
      } catch (...) {
        // An error is a rejection the parent will find again; only crashes matter here.
      }
    }
    _exit(0);
  }
  close(fds[1]);
  size_t current = from;
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, timeout_s * 1000);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    uint64_t idx = 0;
    const ssize_t got = read(fds[0], &idx, sizeof idx);
    if (got < 0 && errno == EINTR) continue;
    if (got != sizeof idx) break;  // EOF: the child is gone
    current = static_cast<size_t>(idx);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::nullopt;
  std::string why;
  if (timed_out)
    why = fmt::format("hung: no progress for {} s while loading it and probing its devices "
                      "(RLX_PLUGIN_PROBE_TIMEOUT)",
                      timeout_s);
  else if (WIFSIGNALED(status))
    why = fmt::format("crashed ({}, signal {}) while loading it and probing its devices",
                      strsignal(WTERMSIG(status)), WTERMSIG(status));
  else
    why = fmt::format("ended the process (exit status {}) while loading it and probing its devices",
                      WEXITSTATUS(status));
  return ChildProbeFailure{current, why + " in a separate process; rlx skipped it"};
}

// ---- CrashNote ----

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
char g_note[1024];
size_t g_note_len = 0;
struct sigaction g_previous[std::size(kFatalSignals)];

void on_fatal(int sig) {
  (void)!write(STDERR_FILENO, g_note, g_note_len);
  char num[16];
  size_t len = 0;
  for (int v = sig; v > 0 && len < sizeof num; v /= 10) num[len++] = static_cast<char>('0' + v % 10);
  char line[32] = " (signal ";
  size_t at = std::strlen(line);
  while (len) line[at++] = num[--len];
  line[at++] = ')';
  line[at++] = '\n';
  (void)!write(STDERR_FILENO, line, at);
  // Back to the handler from before (a sanitizer's, or the default): the signal is blocked
  // while this runs, so it arrives again as soon as this returns.
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    if (kFatalSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  raise(sig);
}

}  // namespace

CrashNote::CrashNote(const std::string& file, const char* doing) {
  const int n = std::snprintf(g_note, sizeof g_note,
                              "\nrlx: plugin %s crashed while %s; move it out of the plugin "
                              "path, or run with RLX_PLUGIN_PROBE=isolated to have rlx skip "
                              "plugins that crash",
                              file.c_str(), doing);
  g_note_len = n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof g_note - 1);
  struct sigaction sa {};
  sa.sa_handler = on_fatal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    sigaction(kFatalSignals[i], &sa, &g_previous[i]);
}

CrashNote::~CrashNote() {
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    sigaction(kFatalSignals[i], &g_previous[i], nullptr);
}

}  // namespace rlx
