// values_of: a tensor's elements as doubles, shared by the helper headers of the runtime tests
// (numeric_check.h, finite_difference.h). One definition, so that both headers can meet in one
// batch of test files (cmake/EmberTestBatches.cmake).
#pragma once

#include <vector>

#include "runtime/ember.h"

namespace ember::testing {

// The elements of any tensor (any dtype, any strides) as doubles in row-major logical order,
// read without recording autograd history.
inline std::vector<double> values_of(const Tensor& tensor) {
  NoGradGuard no_grad;
  return tensor.to(kFloat64).contiguous().to_vector<double>();
}

}  // namespace ember::testing
