// Tensor::str(): PyTorch's layout (four decimals, nested rows aligned, long dims summarized,
// dtype named unless it is a default one, requires_grad or the grad_fn), and non-finite values
// printed as PyTorch prints them.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

using namespace ember;

TEST_CASE("str: values, layout, dtype and autograd state as PyTorch prints them") {
  const TensorOptions cpu{.device = kCPU};
  CHECK(from_vector(std::vector<float>{1.f, -NAN, NAN, INFINITY, -INFINITY}, {5}, cpu).str() ==
        "tensor([1.0000, nan, nan, inf, -inf])");
  CHECK(from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, cpu).str() ==
        "tensor([[1, 2, 3],\n        [4, 5, 6]])");
  CHECK(from_vector(std::vector<bool>{true, false}, {2}, cpu).str() == "tensor([True, False])");
  CHECK(ones({2}, {.dtype = kFloat64, .device = kCPU}).requires_grad_().str() ==
        "tensor([1.0000, 1.0000], dtype=float64, requires_grad=True)");
  CHECK(arange(0, 2000, 1, {.dtype = kInt32, .device = kCPU}).str() ==
        "tensor([0, 1, 2, ..., 1997, 1998, 1999], dtype=int32)");
  CHECK(mul(ones({1}, cpu).requires_grad_(), 2.0).str() == "tensor([2.0000], grad_fn=<mul_scalar_backward>)");
  CHECK(scalar_tensor(2.5, cpu).str() == "tensor(2.5000)");
  CHECK(Tensor().str() == "tensor(undefined)");
}
