// Ctrl-C during generation. While a StopOnInterrupt is alive, the first SIGINT only sets a flag:
// the command stops after the token in flight, prints what it has and its timing line. The
// handler then restores the default action, so a second Ctrl-C ends the process at once.
#pragma once

namespace rlx::cli {

class StopOnInterrupt {
 public:
  StopOnInterrupt();   // installs the handler (clears an earlier request)
  ~StopOnInterrupt();  // restores the previous SIGINT action
  StopOnInterrupt(const StopOnInterrupt&) = delete;
  StopOnInterrupt& operator=(const StopOnInterrupt&) = delete;

  bool requested() const;  // Ctrl-C was pressed since construction or rearm()
  void rearm();            // clear the request and catch the next Ctrl-C again (chat: per turn)
};

}  // namespace rlx::cli
