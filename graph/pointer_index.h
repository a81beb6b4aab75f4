// PointerIndex: numbers pointers 0, 1, 2, ... in the order first seen, in an open-addressing table
// that clear() empties without freeing. Segment mode looks up every tensor of every deferred op
// call (graph/segments.h); std::unordered_map's heap node per insert made that cost more than the
// kernels it saved.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace ember::graph {

class PointerIndex {
 public:
  // The number of `key`, numbering it next when it is new (`*inserted` says which).
  int find_or_insert(const void* key, bool* inserted = nullptr) {
    if (2 * (count_ + 1) > static_cast<int>(slots_.size())) grow();
    Slot& slot = slots_[probe(key)];
    const bool fresh = slot.key == nullptr;
    if (fresh) slot = {key, count_++};
    if (inserted != nullptr) *inserted = fresh;
    return slot.number;
  }
  // The number of `key`, or -1.
  int find(const void* key) const {
    if (slots_.empty()) return -1;
    const Slot& slot = slots_[probe(key)];
    return slot.key == nullptr ? -1 : slot.number;
  }
  int size() const { return count_; }
  void clear() {
    if (count_ == 0) return;
    for (Slot& slot : slots_) slot = {};
    count_ = 0;
  }

 private:
  struct Slot {
    const void* key = nullptr;
    int number = -1;
  };
  // The slot holding `key`, or the empty one where it would go (the table is never full).
  size_t probe(const void* key) const {
    const size_t mask = slots_.size() - 1;
    size_t at = (std::bit_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull >> 20 & mask;
    while (slots_[at].key != nullptr && slots_[at].key != key) at = (at + 1) & mask;
    return at;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    for (const Slot& slot : old)
      if (slot.key != nullptr) slots_[probe(slot.key)] = slot;
  }

  std::vector<Slot> slots_;
  int count_ = 0;
};

}  // namespace ember::graph
