// norm and std of bfloat16 / float16 tensors (composites, runtime/functional_reductions.cpp):
// PyTorch's kernels accumulate 16-bit inputs in float32 and round the result once, so a float16
// norm or std stays finite where the squares (or the variance) would not fit float16.
#include <doctest/doctest.h>

#include <cmath>

#include "numeric_check.h"

namespace test_reductions_16bit {

using namespace ember;
using namespace ember::testing;

namespace {

// A float64 reference value rounded to `dtype` the way a float32 result is stored.
double rounded_to(double value, DType dtype) {
  return full({}, static_cast<double>(static_cast<float>(value)), {.dtype = dtype}).item();
}

}  // namespace

TEST_CASE("norm of float16 values whose squares overflow float16 is finite, as in PyTorch") {
  // torch.full((4,), 300., dtype=torch.float16).norm() is 600; 300^2 = 90000 > 65504.
  const Tensor x = full({4}, 300.0, {.dtype = kFloat16});
  const Tensor two = norm(x);
  CHECK(two.dtype() == kFloat16);
  CHECK(two.item() == 600.0);
  // p = 3: 300^3 overflows too; (4 * 300^3)^(1/3) = 476.22..., stored as 476.25.
  CHECK(norm(x, 3.0).item() == rounded_to(300.0 * std::cbrt(4.0), kFloat16));
  // Along a dim, keepdim, and p = 1 / inf (no squares) keep their values.
  const Tensor rows = full({2, 3}, 200.0, {.dtype = kFloat16});
  const Tensor per_row = norm(rows, 2.0, {1}, true);
  CHECK(per_row.sizes() == Dims{2, 1});
  CHECK(values_of(per_row) == std::vector<double>(2, rounded_to(200.0 * std::sqrt(3.0), kFloat16)));
  CHECK(norm(x, 1.0).item() == 1200.0);
  CHECK(norm(x, INFINITY).item() == 300.0);
}

TEST_CASE("norm of bfloat16 values rounds once from float32, and its gradient stays 16-bit") {
  const Tensor values = random_tensor({5, 7}, 31, kFloat32);
  for (DType dtype : {kBFloat16, kFloat16}) {
    INFO("dtype ", dtype);
    const Tensor x = values.to(dtype).requires_grad_();
    for (double p : {2.0, 3.0, 0.5}) {
      INFO("p ", p);
      const Tensor result = norm(x, p, {1});
      CHECK(result.dtype() == dtype);
      CHECK(values_of(result) == values_of(norm(x.detach().to(kFloat32), p, {1}).to(dtype)));
    }
    sum(norm(x)).backward();
    CHECK(x.grad().dtype() == dtype);
    const Tensor x32 = x.detach().to(kFloat32).requires_grad_();
    norm(x32).backward();
    CHECK(values_of(x.grad()) == values_of(x32.grad().to(dtype)));
  }
}

TEST_CASE("std of float16 values whose variance overflows float16 is finite, as in PyTorch") {
  // torch.tensor([0., 600.], dtype=torch.float16).std(): the variance 180000 is past 65504, the
  // standard deviation 424.26 is not.
  const Tensor x = from_vector<float>({0.0f, 600.0f}).to(kFloat16);
  const Tensor deviation = ember::std(x);
  CHECK(deviation.dtype() == kFloat16);
  CHECK(deviation.item() == rounded_to(std::sqrt(180000.0), kFloat16));
  for (DType dtype : {kBFloat16, kFloat16}) {
    INFO("dtype ", dtype);
    const Tensor y = random_tensor({4, 9}, 32, kFloat32).to(dtype);
    CHECK(values_of(ember::std(y, {1}, 0, true)) == values_of(ember::std(y.to(kFloat32), {1}, 0, true).to(dtype)));
  }
}

}  // namespace test_reductions_16bit
