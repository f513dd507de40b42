// Byte-level BPE over token ids. A piece starts as one symbol per byte; the adjacent pair with
// the lowest merge rank is merged (leftmost first among equals) until no pair has a rank.
// Ranks live in an open-addressing table keyed by the pair of ids (a << 32 | b), so the merge
// loop never builds strings; a binary heap over (rank, position) with a linked list of symbols
// keeps long pieces O(n log n). Results are cached per piece (bounded, cleared when full).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace rlx {

class BpeModel {
 public:
  // The token standing for each single byte (-1: that byte cannot be encoded and is dropped,
  // as HF does without an unk token).
  void set_byte_ids(const std::array<int32_t, 256>& ids) { byte_ids_ = ids; }
  // Adds `a b -> merged` with the next rank; false if the pair already has one (the first
  // rank is kept).
  bool add_merge(int32_t a, int32_t b, int32_t merged);
  void reserve_merges(size_t n);
  // ignore_merges (Llama 3): a piece that is itself a token is emitted whole; `vocab` maps
  // token bytes to ids and must outlive the model.
  void set_ignore_merges(const std::unordered_map<std::string, int32_t>* vocab) { whole_ = vocab; }
  size_t merges() const { return count_; }

  // Appends the ids of one pre-token piece (raw bytes).
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

 private:
  struct Slot {
    uint64_t key;
    uint32_t rank;
    int32_t merged;
  };
  static constexpr uint64_t kEmpty = ~0ull;
  const Slot* find(int32_t a, int32_t b) const;
  void grow();
  void merge(std::string_view piece, std::vector<int32_t>& out) const;

  std::array<int32_t, 256> byte_ids_{};
  std::vector<Slot> slots_;
  uint32_t shift_ = 64;
  size_t count_ = 0;
  const std::unordered_map<std::string, int32_t>* whole_ = nullptr;

  static constexpr size_t kCacheEntries = 1 << 16;
  static constexpr size_t kCachePieceBytes = 64;  // longer pieces are rare and not cached
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace rlx
