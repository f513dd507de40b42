#include "interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace rlx::cli {
namespace {

std::atomic<bool> g_requested{false};
struct sigaction g_previous {};

void on_sigint(int) {
  g_requested.store(true);
  constexpr char kMsg[] = "\n[Ctrl-C: stopping; press it again to quit at once]\n";
  (void)!write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
  std::signal(SIGINT, SIG_DFL);  // async-signal-safe; the next Ctrl-C is not caught
}

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a read blocked on the terminal returns (chat ends there)
  sigaction(SIGINT, &sa, nullptr);
}

}  // namespace

static_assert(std::atomic<bool>::is_always_lock_free, "the handler stores to it");

StopOnInterrupt::StopOnInterrupt() {
  g_requested.store(false);
  sigaction(SIGINT, nullptr, &g_previous);
  install();
}

StopOnInterrupt::~StopOnInterrupt() { sigaction(SIGINT, &g_previous, nullptr); }

bool StopOnInterrupt::requested() const { return g_requested.load(); }

void StopOnInterrupt::rearm() {
  g_requested.store(false);
  install();
}

}  // namespace rlx::cli
