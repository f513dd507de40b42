#include "bpe.h"

#include <algorithm>
#include <queue>

namespace rlx {
namespace {

uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

}  // namespace

void BpeModel::reserve_merges(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap *= 2;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{kEmpty, 0, -1});
  shift_ = 64 - static_cast<uint32_t>(__builtin_ctzll(cap));
  count_ = 0;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t i = (s.key * 0x9E3779B97F4A7C15ull) >> shift_;
    while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
    ++count_;
  }
}

const BpeModel::Slot* BpeModel::find(int32_t a, int32_t b) const {
  if (slots_.empty()) return nullptr;
  uint64_t key = pair_key(a, b);
  size_t mask = slots_.size() - 1;
  for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key == key) return &s;
    if (s.key == kEmpty) return nullptr;
  }
}

bool BpeModel::add_merge(int32_t a, int32_t b, int32_t merged) {
  if (find(a, b)) return false;
  if ((count_ + 1) * 2 > slots_.size()) reserve_merges(std::max<size_t>(count_ + 1, 8) * 2);
  uint64_t key = pair_key(a, b);
  size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;
  while (slots_[i].key != kEmpty) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = Slot{key, static_cast<uint32_t>(count_), merged};
  ++count_;
  return true;
}

void BpeModel::merge(std::string_view piece, std::vector<int32_t>& out) const {
  // Symbols as a doubly linked list over positions; a dead symbol has len 0.
  // Bytes without a token are dropped first, so their neighbours can merge (as HF does).
  std::vector<int32_t> id;
  id.reserve(piece.size());
  for (char ch : piece)
    if (int32_t t = byte_ids_[static_cast<uint8_t>(ch)]; t >= 0) id.push_back(t);
  const int n = static_cast<int>(id.size());
  if (n == 0) return;
  std::vector<int> prev(n), next(n), len(n, 1);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Cand {
    uint32_t rank;
    int left, right;
    int32_t a, b;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::vector<Cand> storage;
  storage.reserve(n);
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap(std::greater<Cand>(),
                                                                        std::move(storage));
  auto consider = [&](int l) {
    int r = next[l];
    if (l < 0 || r < 0) return;
    if (const Slot* s = find(id[l], id[r])) heap.push(Cand{s->rank, l, r, id[l], id[r]});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    // Stale when either side has merged since the candidate was pushed.
    if (len[c.left] == 0 || next[c.left] != c.right || id[c.left] != c.a || id[c.right] != c.b)
      continue;
    id[c.left] = find(c.a, c.b)->merged;
    len[c.left] += len[c.right];
    len[c.right] = 0;
    next[c.left] = next[c.right];
    if (next[c.left] >= 0) prev[next[c.left]] = c.left;
    if (prev[c.left] >= 0) consider(prev[c.left]);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(id[i]);
}

void BpeModel::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (piece.size() == 1) {
    int32_t id = byte_ids_[static_cast<uint8_t>(piece[0])];
    if (id >= 0) out.push_back(id);
    return;
  }
  std::string key(piece);
  if (whole_) {
    auto it = whole_->find(key);
    if (it != whole_->end()) {
      out.push_back(it->second);
      return;
    }
  }
  bool cacheable = piece.size() <= kCachePieceBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out.size();
  merge(piece, out);
  if (cacheable) {
    std::vector<int32_t> ids(out.begin() + static_cast<std::ptrdiff_t>(start), out.end());
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kCacheEntries) cache_.clear();
    cache_.emplace(std::move(key), std::move(ids));
  }
}

}  // namespace rlx
