// Attrs storage and printing.
#include "runtime/ops/attrs.h"

namespace ember {

Attrs& Attrs::set(const char* name, AttrValue value) {
  for (int i = 0; i < count_; ++i) {
    if (std::strcmp(names_[i], name) == 0) {
      values_[i] = std::move(value);
      return *this;
    }
  }
  internal_assert(count_ < kCapacity, "too many op attributes");
  names_[count_] = name;
  values_[count_] = std::move(value);
  ++count_;
  return *this;
}

std::string Attrs::str() const {
  std::string text;
  for (int i = 0; i < count_; ++i) {
    if (i > 0) text += ", ";
    text += names_[i];
    text += '=';
    text += std::visit([](const auto& value) { return fmt::format("{}", value); }, values_[i]);
  }
  return text;
}

}  // namespace ember
