// Ownership of what an in-tree backend hands out as opaque handles, header-only: the objects of
// one kind on a device (buffers, programs) and the plugin-wide list of open devices. A handle is
// the object's address; a stale or foreign one is an error naming its kind, never a wild access.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "plugin_error.h"

namespace rlx::plugin {

// Thread-safe. `what` ("buffer", "program") is only used in messages.
template <class T>
class HandleMap {
 public:
  explicit HandleMap(const char* what) : what_(what) {}

  T* add(std::unique_ptr<T> p) {
    T* raw = p.get();
    std::lock_guard lk(mu_);
    map_.emplace(raw, std::move(p));
    return raw;
  }
  // Removes the object (null when unknown); the caller destroys it, outside the lock.
  std::unique_ptr<T> take(const void* h) {
    std::lock_guard lk(mu_);
    auto it = map_.find(h);
    if (it == map_.end()) return nullptr;
    std::unique_ptr<T> p = std::move(it->second);
    map_.erase(it);
    return p;
  }
  T& get(const void* h) const {
    std::lock_guard lk(mu_);
    auto it = map_.find(h);
    if (it == map_.end())
      fail(RLX_ERR_INVALID, h ? "unknown or freed " : "null ", what_, " handle");
    return *it->second;
  }
  void clear() {
    std::unordered_map<const void*, std::unique_ptr<T>> dead;
    std::lock_guard lk(mu_);
    dead.swap(map_);
  }

 private:
  const char* what_;
  mutable std::mutex mu_;
  std::unordered_map<const void*, std::unique_ptr<T>> map_;
};

// The open devices of a plugin. Declare it `constinit`: it has no exit-time destructor (the
// list lives on the heap until close_all(), which the plugin's shutdown calls), so the library
// unloads cleanly.
template <class D>
class DeviceList {
 public:
  constexpr DeviceList() = default;

  D* add(std::unique_ptr<D> d) {
    D* raw = d.get();
    std::lock_guard lk(mu_);
    if (!open_) open_ = new std::vector<std::unique_ptr<D>>();
    open_->push_back(std::move(d));
    return raw;
  }
  // Closes `d` (ignores a device not on the list); destroyed outside the lock.
  void close(const D* d) {
    std::unique_ptr<D> dead;
    std::lock_guard lk(mu_);
    if (!open_) return;
    auto it = std::find_if(open_->begin(), open_->end(), [&](const auto& p) { return p.get() == d; });
    if (it == open_->end()) return;
    dead = std::move(*it);
    open_->erase(it);
  }
  D& checked(const void* h) {
    std::lock_guard lk(mu_);
    if (open_)
      for (const auto& d : *open_)
        if (static_cast<const void*>(d.get()) == h) return *d;
    fail(RLX_ERR_INVALID, h ? "unknown or closed device handle" : "null device handle");
  }
  // Destroys every open device (outside the lock).
  void close_all() {
    std::vector<std::unique_ptr<D>>* open;
    {
      std::lock_guard lk(mu_);
      open = open_;
      open_ = nullptr;
    }
    delete open;
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<D>>* open_ = nullptr;
};

}  // namespace rlx::plugin
