#include "thread_pool.h"

#include <algorithm>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RLX_CPU_RELAX() _mm_pause()
#else
#define RLX_CPU_RELAX() std::this_thread::yield()
#endif

namespace rlx::cpu {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  try {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    // Could not start them all: stop the ones that did start before reporting.
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
  std::lock_guard run_lk(run_mu_);
  // ~4 chunks per thread balances uneven rows without making the counter hot.
  int64_t chunks = std::min<int64_t>(n, int64_t{n_threads_} * 4);
  fn_ = fn;
  ctx_ = ctx;
  n_ = n;
  chunk_ = std::max<int64_t>(std::max<int64_t>(grain, 1), (n + chunks - 1) / chunks);
  next_.store(0, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  busy_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  bool wake;
  {
    // Under mu_, so that a worker about to sleep either sees the new generation or is woken.
    std::lock_guard lk(mu_);
    generation_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;
  }
  if (wake) wake_.notify_all();
  work();
  while (busy_.load(std::memory_order_acquire) != 0) RLX_CPU_RELAX();
  std::exception_ptr err;
  {
    std::lock_guard lk(mu_);
    err = std::exchange(error_, nullptr);
  }
  if (err) std::rethrow_exception(err);
}

void ThreadPool::work() {
  for (;;) {
    if (failed_.load(std::memory_order_relaxed)) return;
    const int64_t b = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (b >= n_) return;
    try {
      fn_(ctx_, b, std::min(n_, b + chunk_));
    } catch (...) {
      std::lock_guard lk(mu_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    // Spin a while for the next job (kernels come back to back), then sleep.
    auto until = std::chrono::steady_clock::now() + kSpin;
    int polls = 0;
    while (generation_.load(std::memory_order_acquire) == seen && !stop_.load()) {
      RLX_CPU_RELAX();
      if (++polls % 64 == 0 && std::chrono::steady_clock::now() > until) {
        std::unique_lock lk(mu_);
        ++sleeping_;
        wake_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
        --sleeping_;
        break;
      }
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    work();
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace rlx::cpu
