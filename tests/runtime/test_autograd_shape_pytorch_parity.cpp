// Shape inference and autograd calls checked against PyTorch's documented behaviour where ember's
// differed: reshape/view with a -1 next to a 0-sized dim (PyTorch's infer_size refuses it as
// ambiguous, whatever the input, rather than as a size mismatch).
#include <doctest/doctest.h>

#include "runtime/ember.h"

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
