// OrderedDict: string keys in insertion order with hashed lookup. Holds a module's parameters,
// buffers and children, and is the type of state dicts (name -> Tensor, PyTorch's key order).
#pragma once

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/error.h"

namespace ember {

template <typename Value>
class OrderedDict {
 public:
  using Item = std::pair<const std::string, Value>;  // keys are fixed once inserted

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& item : items) insert(item.first, item.second);
  }
  OrderedDict(const OrderedDict&) = default;
  OrderedDict(OrderedDict&&) noexcept = default;
  OrderedDict& operator=(OrderedDict&&) noexcept = default;
  // Keys are const, so elements cannot be assigned: copy-assignment rebuilds the storage instead.
  OrderedDict& operator=(const OrderedDict& other) {
    if (this != &other) *this = OrderedDict(other);
    return *this;
  }

  // Adds a new key; a key that is already present is an error naming it.
  Value& insert(std::string key, Value value) {
    check(!contains(key), "OrderedDict: key '{}' is already present", key);
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  // Adds the key, or replaces its value keeping its position.
  Value& insert_or_assign(std::string key, Value value) {
    if (Value* existing = find(key)) return *existing = std::move(value);
    return insert(std::move(key), std::move(value));
  }

  // Removes `key` (a missing key is an error naming it); the entries after it keep their order.
  void erase(const std::string& key) {
    auto found = index_.find(key);
    check(found != index_.end(), "OrderedDict: no key '{}' among {} entries", key, items_.size());
    const size_t position = found->second;
    index_.erase(found);
    // Item's key is const, so the vector cannot shift its elements by assignment: rebuild the tail.
    std::vector<Item> tail;
    for (size_t i = position + 1; i < items_.size(); ++i) tail.push_back(std::move(items_[i]));
    while (items_.size() > position) items_.pop_back();
    for (Item& item : tail) {
      index_[item.first] = items_.size();
      items_.push_back(std::move(item));
    }
  }

  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  Value* find(const std::string& key) {
    auto found = index_.find(key);
    return found == index_.end() ? nullptr : &items_[found->second].second;
  }
  const Value* find(const std::string& key) const {
    auto found = index_.find(key);
    return found == index_.end() ? nullptr : &items_[found->second].second;
  }
  // The value of `key`; a missing key is an error naming it.
  Value& at(const std::string& key) {
    Value* value = find(key);
    check(value != nullptr, "OrderedDict: no key '{}' among {} entries", key, items_.size());
    return *value;
  }
  const Value& at(const std::string& key) const { return const_cast<OrderedDict*>(this)->at(key); }
  Value& operator[](const std::string& key) { return at(key); }
  const Value& operator[](const std::string& key) const { return at(key); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() {
    items_.clear();
    index_.clear();
  }

  const std::vector<Item>& items() const { return items_; }
  std::vector<std::string> keys() const {
    std::vector<std::string> result;
    result.reserve(items_.size());
    for (const Item& item : items_) result.push_back(item.first);
    return result;
  }
  std::vector<Value> values() const {
    std::vector<Value> result;
    result.reserve(items_.size());
    for (const Item& item : items_) result.push_back(item.second);
    return result;
  }

  // Values may be changed in place through iteration.
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace ember
