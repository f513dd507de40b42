// A persistent pool of worker threads owned by one open device. parallel_for(n, fn) splits
// [0, n) into chunks that the workers and the calling thread take from a shared counter (so
// uneven rows, like causal attention, balance themselves) and returns when every chunk is done.
//
// Wake-up is a condition variable: ~10-50 us per call, fine for reference kernels; a spinning
// hand-off is the later speed work. Calls from several host threads are serialized.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace rlx::cpu {

class ThreadPool {
 public:
  // n_threads counts the caller: a pool of 1 starts no thread and runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();  // stops and joins every worker
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(begin, end) over disjoint ranges covering [0, n), each at least `grain` items
  // (except the last), from up to size() threads. Rethrows the first exception fn threw once
  // every thread has stopped touching the job.
  template <class F>
  void parallel_for(int64_t n, F&& fn, int64_t grain = 1) {
    using Fn = std::remove_reference_t<F>;
    if (n <= 0) return;
    if (n_threads_ == 1 || n <= grain) {
      fn(int64_t{0}, n);
      return;
    }
    run(
        n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

  void run(int64_t n, int64_t grain, RangeFn fn, void* ctx);
  void work();  // take chunks of the current job until none are left
  void worker_loop();

  int n_threads_;
  std::vector<std::thread> workers_;

  std::mutex run_mu_;  // one job at a time

  std::mutex mu_;  // guards everything below
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped per job; workers wake when it changes
  int busy_ = 0;             // workers still inside the current job
  bool stop_ = false;

  // The current job. Written under mu_ before generation_ is bumped.
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  int64_t next_ = 0;  // next unclaimed item, under mu_ (chunks are coarse, so the lock is cheap)
  std::exception_ptr error_;
};

}  // namespace rlx::cpu
