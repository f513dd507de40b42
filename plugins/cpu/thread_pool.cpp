#include "thread_pool.h"

#include <algorithm>

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
  int64_t chunk = std::max<int64_t>(std::max<int64_t>(grain, 1), (n + chunks - 1) / chunks);
  {
    std::lock_guard lk(mu_);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    chunk_ = chunk;
    next_ = 0;
    error_ = nullptr;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  work();
  std::exception_ptr err;
  {
    std::unique_lock lk(mu_);
    done_.wait(lk, [this] { return busy_ == 0; });
    err = error_;
    error_ = nullptr;
    fn_ = nullptr;
    ctx_ = nullptr;
  }
  if (err) std::rethrow_exception(err);
}

void ThreadPool::work() {
  for (;;) {
    RangeFn fn;
    void* ctx;
    int64_t b, e;
    {
      std::lock_guard lk(mu_);
      if (next_ >= n_ || error_) return;
      b = next_;
      e = std::min(n_, b + chunk_);
      next_ = e;
      fn = fn_;
      ctx = ctx_;
    }
    try {
      fn(ctx, b, e);
    } catch (...) {
      std::lock_guard lk(mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      wake_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    work();
    {
      std::lock_guard lk(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

}  // namespace rlx::cpu
