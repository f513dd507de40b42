// A persistent pool of worker threads owned by one open device. parallel_for(n, fn) splits
// [0, n) into chunks that the workers and the calling thread take from a shared counter (so
// uneven rows, like causal attention, balance themselves) and returns when every chunk is done.
//
// Hand-off is lock-free: a job is published by bumping an atomic generation, chunks are claimed
// with fetch_add, and the caller spins until the workers are done. Idle workers spin for
// kSpin before sleeping on a condition variable, so back-to-back kernels (a decode step is
// ~200 of them) start in well under a microsecond instead of a futex wake-up (~10-50 us).
// Calls from several host threads are serialized.
#pragma once

#include <atomic>
#include <chrono>
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

  static constexpr std::chrono::microseconds kSpin{2000};
  std::atomic<uint64_t> generation_{0};  // bumped per job; workers start when it changes
  std::atomic<int> busy_{0};             // workers still inside the current job
  std::atomic<int64_t> next_{0};         // next unclaimed item
  std::atomic<bool> failed_{false};      // a chunk threw: stop handing out chunks
  std::atomic<bool> stop_{false};

  std::mutex mu_;  // for sleeping workers and error_
  std::condition_variable wake_;
  int sleeping_ = 0;  // under mu_
  std::exception_ptr error_;

  // The current job: written before generation_ is bumped (release), read after (acquire).
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
};

}  // namespace rlx::cpu
