// A map that holds at most `capacity` entries and, when full, drops the least recently used one.
// For caches keyed by problem shape (cuBLASLt GEMM plans): with dynamic shapes every new batch
// size is a new key, and an unbounded cache would grow for as long as the process runs.
// Not thread-safe: the owner keeps one per thread or guards it with its own lock.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

#include "runtime/error.h"

namespace ember {

template <class Key, class Value, class Hash = std::hash<Key>>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {
    check(capacity > 0, "LruCache: the capacity must be positive");
  }

  // The entry of `key`, now the most recently used; nullptr when there is none. The pointer stays
  // valid until the entry is dropped: capacity later insertions of other keys at the earliest.
  Value* find(const Key& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, found->second);  // moves the node, not the value
    return &found->second->second;
  }

  // Stores `value` as the entry of `key` (replacing one there), the most recently used, and
  // drops the least recently used entry when that would exceed the capacity.
  Value& insert(const Key& key, Value value) {
    if (Value* existing = find(key)) {
      *existing = std::move(value);
      return *existing;
    }
    if (entries_.size() == capacity_) {
      index_.erase(entries_.back().first);
      entries_.pop_back();
    }
    entries_.emplace_front(key, std::move(value));
    index_.emplace(key, entries_.begin());
    return entries_.front().second;
  }

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  using Entries = std::list<std::pair<Key, Value>>;
  size_t capacity_;
  Entries entries_;  // the most recently used first
  std::unordered_map<Key, typename Entries::iterator, Hash> index_;
};

}  // namespace ember
