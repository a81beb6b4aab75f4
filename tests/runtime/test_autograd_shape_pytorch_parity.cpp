// Shape inference and autograd calls checked against PyTorch's documented behaviour where ember's
// differed: reshape/view with a -1 next to a 0-sized dim (PyTorch's infer_size refuses it as
// ambiguous, whatever the input, rather than as a size mismatch).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "runtime/ember.h"

namespace test_autograd_shape_pytorch_parity {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.dtype = kFloat32, .device = kCPU};

}  // namespace

TEST_CASE("reshape with -1 beside a 0-sized dim of an empty tensor is refused as ambiguous") {
  // torch.zeros(0, 3).reshape(-1, 0) (and (0, -1)): any size fits the -1, so PyTorch refuses with
  // "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension
  // size -1 can be any value and is ambiguous".
  const Tensor empty = zeros({0, 3}, kOnCpu);
  CHECK_THROWS_WITH_AS(empty.reshape({-1, 0}),
                       doctest::Contains("reshape: cannot reshape a tensor of 0 elements (shape [0, 3]) into "
                                         "shape [-1, 0]: the -1 could be any size, so it is ambiguous"),
                       Error);
  CHECK_THROWS_WITH_AS(empty.reshape({0, -1}), doctest::Contains("into shape [0, -1]: the -1 could be any size"),
                       Error);
  // A -1 beside nonzero sizes of an empty tensor is 0, as in PyTorch; a 0-sized dim beside -1 for
  // a tensor with elements is a plain size mismatch there ("shape '[-1, 0]' is invalid for input
  // of size 6").
  CHECK(empty.reshape({-1, 5}).sizes() == Dims{0, 5});
  CHECK(empty.reshape({2, -1, 3}).sizes() == Dims{2, 0, 3});
  CHECK_THROWS_WITH_AS(zeros({6}, kOnCpu).reshape({-1, 0}),
                       doctest::Contains("reshape: shape [-1, 0] is invalid for input of shape [6] (6 elements)"), Error);
}

TEST_CASE("integer linspace steps between the ends converted to the dtype first") {
  // PyTorch's linspace kernel converts start and end to the result's dtype (toward zero for an
  // integer one) before computing the step, in double, between them; the first half counts up
  // from the start and the second down from the end. Worked by hand:
  //   linspace(0.5, 10.7, 4, int64): ends 0 and 10, step 10/3: 0, 3.33 -> 3, 10 - 3.33 -> 6, 10.
  //   linspace(-2.7, 3.9, 5, int64): ends -2 and 3, step 1.25: -2, -0.75 -> 0, 3 - 2.5 -> 0,
  //   3 - 1.25 -> 1, 3.
  const TensorOptions int64_cpu{.dtype = kInt64, .device = kCPU};
  CHECK(linspace(0.5, 10.7, 4, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{0, 3, 6, 10});
  CHECK(linspace(-2.7, 3.9, 5, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{-2, 0, 0, 1, 3});
  CHECK(linspace(-2.7, 3.9, 5, {.dtype = kInt32, .device = kCPU}).to_vector<int32_t>() ==
        std::vector<int32_t>{-2, 0, 0, 1, 3});
  CHECK(linspace(9.9, 3.2, 1, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{9});
  // Floating dtypes keep the ends as given.
  CHECK(linspace(0.5, 10.5, 3, {.dtype = kFloat64, .device = kCPU}).to_vector<double>() ==
        std::vector<double>{0.5, 5.5, 10.5});
}

TEST_CASE("bool linspace of two or more steps is refused, as PyTorch's kernel has no bool version") {
  // PyTorch fills one step with fill_(start) and dispatches two or more to a kernel compiled for
  // every dtype but bool ("linspace_cpu" not implemented for 'Bool').
  const TensorOptions bool_cpu{.dtype = kBool, .device = kCPU};
  CHECK_THROWS_WITH_AS(linspace(0, 1, 3, bool_cpu),
                       doctest::Contains("linspace: bool tensors are not supported (from 0 to 1 in 3 steps)"), Error);
  CHECK(linspace(1, 0, 1, bool_cpu).to_vector<bool>() == std::vector<bool>{true});
  CHECK(linspace(0, 1, 0, bool_cpu).numel() == 0);
}

}  // namespace test_autograd_shape_pytorch_parity
