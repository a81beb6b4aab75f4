// An einsum equation checked against its operands (runtime/einsum_parse.cpp): the labels of every
// operand's dims and of the output, with "..." already expanded. Read by runtime/einsum.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor.h"

namespace ember::detail {

// Labels 0-25 are A-Z and 26-51 a-z: ascending label order is the implicit output's order
// (PyTorch's). The dims that "..." covers get labels from kFirstEllipsisLabel on, one per dim of
// the widest ellipsis; a narrower one takes the last of them (NumPy's right-aligned broadcasting).
inline constexpr int kLetterLabels = 52;
inline constexpr int kFirstEllipsisLabel = kLetterLabels;

struct EinsumEquation {
  std::vector<std::vector<int>> operand_labels;  // one label per dim; a repeat is a diagonal
  std::vector<int> output_labels;                // distinct, in the result's dim order
};

// Parses `equation` and checks it against the operands' dims and sizes; every error names einsum,
// the equation and the operand at fault.
EinsumEquation parse_einsum(std::string_view equation, const std::vector<Tensor>& operands);

}  // namespace ember::detail
