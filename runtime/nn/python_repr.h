// Values written the way Python's repr() writes them, for modules' extra_repr: a module prints as
// torch's __repr__ does ("bias=True", "LayerNorm((3,), eps=1e-05, ...)", "p=1.0").
#pragma once

#include <fmt/format.h>

#include <string>

#include "runtime/dims.h"

namespace ember::nn {

inline std::string python_bool(bool value) { return value ? "True" : "False"; }

// fmt's shortest round-trip form is Python's, except that Python keeps ".0" on a whole number.
inline std::string python_float(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // 'n': inf and nan stay as they are
  return text;
}

// A tuple of ints: "()", "(3,)", "(2, 3)".
inline std::string python_tuple(const Dims& sizes) {
  if (sizes.size() == 1) return fmt::format("({},)", sizes[0]);
  std::string text = "(";
  for (int i = 0; i < sizes.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
  return text + ")";
}

// Two more spaces before every line but the first: PyTorch's _addindent, which nests a child's
// text under its parent's "(name): ".
inline std::string indent_later_lines(std::string text) {
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) text.insert(at + 1, "  ");
  return text;
}

}  // namespace ember::nn
