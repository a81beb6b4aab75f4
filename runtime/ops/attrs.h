// Attrs: an op call's non-tensor arguments (alpha, dims, keepdim, eps, ...), by name, stored
// inline so that a dispatched call allocates nothing for them. The compile stage reads and
// prints them generically, which is why they are named values rather than a struct per op.
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <variant>

#include "runtime/device.h"
#include "runtime/dims.h"
#include "runtime/dtype.h"

namespace ember {

using AttrValue = std::variant<double, int64_t, bool, Dims, DType, Device>;

class Attrs {
 public:
  // The most any op has: adam_step_'s lr, beta1, beta2, eps, weight_decay, step, amsgrad,
  // decoupled and maximize.
  static constexpr int kCapacity = 9;

  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const char*, AttrValue>> items) {
    for (const auto& [name, value] : items) set(name, value);
  }
  // Copy the slots in use only: every recorded call copies its attrs (autograd nodes, deferred
  // calls of compiled segments), and most ops fill one or two of the nine.
  Attrs(const Attrs& other) { copy_from(other); }
  Attrs& operator=(const Attrs& other) {
    if (this != &other) copy_from(other);
    return *this;
  }

  // `name` must be a string literal: only the pointer is kept.
  Attrs& set(const char* name, AttrValue value);
  bool has(const char* name) const { return find(name) != nullptr; }

  template <typename T>
  const T& get(const char* name) const {
    const AttrValue* value = find(name);
    internal_assert(value != nullptr && std::holds_alternative<T>(*value),
                    "op attribute missing or of the wrong type");
    return std::get<T>(*value);
  }
  template <typename T>
  T get_or(const char* name, T fallback) const {
    const AttrValue* value = find(name);
    return value != nullptr ? std::get<T>(*value) : fallback;
  }

  int size() const { return count_; }
  const char* name(int i) const { return names_[i]; }
  const AttrValue& value(int i) const { return values_[i]; }
  std::string str() const;  // "alpha=1, dims=[0]"

 private:
  // Slots past count_ keep what they held: nothing reads them.
  void copy_from(const Attrs& other) {
    const auto count = static_cast<size_t>(other.count_);
    std::copy_n(other.names_.begin(), count, names_.begin());
    std::copy_n(other.values_.begin(), count, values_.begin());
    count_ = other.count_;
  }
  // Pointers first: the linker merges equal string literals within a shared library, so a name
  // set and read in one library is the same pointer, and the attrs before it cost no strcmp (an
  // optimizer kernel reading its 8 attrs made ~28 strcmp calls per tensor that way).
  const AttrValue* find(const char* name) const {
    for (int i = 0; i < count_; ++i)
      if (names_[i] == name) return &values_[i];
    for (int i = 0; i < count_; ++i)
      if (std::strcmp(names_[i], name) == 0) return &values_[i];
    return nullptr;
  }

  std::array<const char*, kCapacity> names_{};
  std::array<AttrValue, kCapacity> values_{};
  int count_ = 0;
};

}  // namespace ember
