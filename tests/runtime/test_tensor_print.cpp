// Tensor::str(): PyTorch's repr (nested rows aligned, long dims summarized, dtype named unless it
// is a default one, requires_grad or the grad_fn) with its number formatting: integer mode for
// whole-number floats, fixed with four decimals, scientific when the magnitudes call for it, and
// every value padded to one width. Expected strings are what PyTorch 2.x prints for the same
// tensors, with ember's dtype names (dtype=float64 where PyTorch says dtype=torch.float64).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

namespace test_tensor_print {

using namespace ember;

namespace {

const TensorOptions kOnCpu{.device = kCPU};

Tensor floats(std::vector<float> values) {
  const int64_t count = static_cast<int64_t>(values.size());
  return from_vector(values, {count}, kOnCpu);
}

}  // namespace

TEST_CASE("str: values, layout, dtype and autograd state as PyTorch prints them") {
  CHECK(floats({1.f, -NAN, NAN, INFINITY, -INFINITY}).str() == "tensor([1., nan, nan, inf, -inf])");
  CHECK(from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}, kOnCpu).str() ==
        "tensor([[1, 2, 3],\n        [4, 5, 6]])");
  CHECK(from_vector(std::vector<bool>{true, false}, {2}, kOnCpu).str() == "tensor([ True, False])");
  CHECK(ones({2}, {.dtype = kFloat64, .device = kCPU}).requires_grad_().str() ==
        "tensor([1., 1.], dtype=float64, requires_grad=True)");
  CHECK(arange(0, 2000, 1, {.dtype = kInt32, .device = kCPU}).str() ==
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999], dtype=int32)");
  CHECK(mul(ones({1}, kOnCpu).requires_grad_(), 2.0).str() == "tensor([2.], grad_fn=<mul_scalar_backward>)");
  CHECK(scalar_tensor(2.5, kOnCpu).str() == "tensor(2.5000)");
  CHECK(Tensor().str() == "tensor(undefined)");
}

TEST_CASE("str: floats print fixed, as whole numbers or in scientific notation by PyTorch's rules") {
  // Fixed, padded to the widest value.
  CHECK(floats({1.5f, -2.25f, 10.f}).str() == "tensor([ 1.5000, -2.2500, 10.0000])");
  // Whole numbers: "1." and the width of the longest; zeros alone too.
  CHECK(floats({1.f, -20.f, 300.f}).str() == "tensor([  1., -20., 300.])");
  CHECK(zeros({2}, kOnCpu).str() == "tensor([0., 0.])");
  CHECK(floats({0.f, -0.f, NAN}).str() == "tensor([0., -0., nan])");
  // Scientific: the smallest nonzero magnitude below 1e-4 (four decimals would show 0.0000)...
  CHECK(floats({1e-5f}).to(kBFloat16).str() == "tensor([1.0014e-05], dtype=bfloat16)");
  CHECK(floats({1e-5f, NAN, 0.f}).str() == "tensor([1.0000e-05,        nan, 0.0000e+00])");
  // ...the largest over 1000 times the smallest, or over 1e8, whole numbers included.
  CHECK(floats({1.f, 2000.5f}).str() == "tensor([1.0000e+00, 2.0005e+03])");
  CHECK(floats({1.f, 1e9f}).str() == "tensor([1.0000e+00, 1.0000e+09])");
  CHECK(floats({2.f, 1000.f}).str() == "tensor([   2., 1000.])");  // a ratio of 500 stays whole
  CHECK(scalar_tensor(-3e-7, kOnCpu).str() == "tensor(-3.0000e-07)");
  CHECK(floats({65504.f, 0.5f}).to(kFloat16).str() == "tensor([6.5504e+04, 5.0000e-01], dtype=float16)");
}

TEST_CASE("str: rows wrap at 80 columns, dims beyond two get blank lines, suffixes move to a new line") {
  CHECK(arange(0, 30, 1, kOnCpu).to(kFloat32).str() ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])");
  CHECK(arange(0, 8, 1, kOnCpu).view({2, 2, 2}).str() ==
        "tensor([[[0, 1],\n"
        "         [2, 3]],\n"
        "\n"
        "        [[4, 5],\n"
        "         [6, 7]]])");
  CHECK(full({8}, 1.5, {.dtype = kFloat64, .device = kCPU}).str() ==
        "tensor([1.5000, 1.5000, 1.5000, 1.5000, 1.5000, 1.5000, 1.5000, 1.5000],\n"
        "       dtype=float64)");
  // Summarized: the width comes from the printed corners only, "..." takes a row of its own.
  CHECK(arange(0, 1100, 1, kOnCpu).view({100, 11}).str() ==
        "tensor([[   0,    1,    2,  ...,    8,    9,   10],\n"
        "        [  11,   12,   13,  ...,   19,   20,   21],\n"
        "        [  22,   23,   24,  ...,   30,   31,   32],\n"
        "        ...,\n"
        "        [1067, 1068, 1069,  ..., 1075, 1076, 1077],\n"
        "        [1078, 1079, 1080,  ..., 1086, 1087, 1088],\n"
        "        [1089, 1090, 1091,  ..., 1097, 1098, 1099]])");
  // A transposed view prints its logical order.
  CHECK(floats({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}).view({2, 3}).t().str() ==
        "tensor([[1., 4.],\n        [2., 5.],\n        [3., 6.]])");
}

TEST_CASE("str: empty tensors name their shape unless 1-d and any dtype but float32") {
  CHECK(zeros({0}, kOnCpu).str() == "tensor([])");
  CHECK(zeros({0, 3}, kOnCpu).str() == "tensor([], size=(0, 3))");
  CHECK(zeros({0}, {.dtype = kInt64, .device = kCPU}).str() == "tensor([], dtype=int64)");
}

}  // namespace test_tensor_print
