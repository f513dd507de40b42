// A planned graph run on a device that lacks some of its ops. The nodes the device supports run
// there and the rest on a fallback device (the cpu backend), in segments of consecutive nodes;
// each segment is its own planned graph and Program. A value that crosses a segment boundary
// is copied between the two devices only when the side that reads it does not hold its latest
// version; views (reshape, slice) are re-made on the reading side instead of copied. When the
// device supports every node this is just the device's Program, with no copies at all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rlx/arena.h"
#include "rlx/backend.h"

namespace rlx {

class SplitProgram {
 public:
  // The fallback device's buffer for a graph weight (the model's WeightStore on that device).
  using WeightLookup = std::function<const Buffer&(const std::string& name)>;
  // Whether node n runs on the primary device; default: the primary backend's supports().
  using Placement = std::function<bool(uint32_t node)>;

  SplitProgram();
  // Throws when a node runs nowhere: not on `primary`, and `fallback` is null or refuses it too.
  SplitProgram(const PlannedGraph& plan, std::shared_ptr<Device> primary,
               std::shared_ptr<Device> fallback, WeightLookup fallback_weight,
               Placement on_primary = {});
  ~SplitProgram();
  SplitProgram(SplitProgram&&) noexcept;
  SplitProgram& operator=(SplitProgram&&) noexcept;

  // `bindings`: one per slot of the planned graph, buffers on the primary device.
  void run(std::span<const rlx_binding> bindings);

  size_t segments() const;           // 1 when the primary device runs everything
  size_t fallback_nodes() const { return fallback_nodes_; }
  uint64_t mirror_bytes() const { return mirror_bytes_; }  // buffers the split added

 private:
  struct Value;
  struct Segment;
  void build(const PlannedGraph& plan, const std::vector<bool>& on_primary);
  rlx_binding home(const Value& v, int side, std::span<const rlx_binding> bindings) const;
  void copy(Value& v, int to, std::span<const rlx_binding> bindings);

  std::shared_ptr<Device> dev_[2];  // [0] primary, [1] fallback
  WeightLookup fallback_weight_;
  uint32_t n_slots_ = 0;
  std::vector<Value> values_;
  std::vector<Segment> segments_;
  size_t fallback_nodes_ = 0;
  uint64_t mirror_bytes_ = 0;
  std::vector<uint8_t> staging_;
};

}  // namespace rlx
