// arange and linspace round `start + i * step` as a product and then a sum, as PyTorch and NumPy
// do (and ember's CUDA kernels): a fused multiply-add rounds once and gives other last bits for
// steps that binary cannot hold exactly, such as 0.1.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"

using namespace ember;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

}  // namespace

TEST_CASE("arange and linspace in float64 give NumPy's values for a step of 0.1") {
  // Python: [0.1 + i * 0.1 for i in range(9)] (two roundings per element); with one rounding
  // element 5 would be 0.6000000000000001.
  const std::vector<double> arange_expected{0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7000000000000001, 0.8, 0.9};
  const TensorOptions float64_on_cpu{.dtype = kFloat64, .device = kCPU};
  CHECK(arange(0.1, 0.95, 0.1, float64_on_cpu).to_vector<double>() == arange_expected);
  // numpy.linspace(0, 1, 11): start + i * step below the middle, end - (n - 1 - i) * step above it.
  const std::vector<double> linspace_expected{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5,
                                              0.6, 0.7, 0.8, 0.9, 1.0};
  CHECK(linspace(0.0, 1.0, 11, float64_on_cpu).to_vector<double>() == linspace_expected);
}

TEST_CASE("cuda arange and linspace are bit-identical to the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (DType dtype : {kFloat64, kFloat32}) {
    CAPTURE(dtype_name(dtype));
    const Tensor cpu_range = arange(-3.7, 250.0, 0.1, TensorOptions{.dtype = dtype, .device = kCPU});
    const Tensor gpu_range = arange(-3.7, 250.0, 0.1, TensorOptions{.dtype = dtype, .device = kCuda0}).to(kCPU);
    CHECK(cpu_range.to(kFloat64).to_vector<double>() == gpu_range.to(kFloat64).to_vector<double>());
    const Tensor cpu_space = linspace(-1.3, 7.9, 1001, {.dtype = dtype, .device = kCPU});
    const Tensor gpu_space = linspace(-1.3, 7.9, 1001, {.dtype = dtype, .device = kCuda0}).to(kCPU);
    CHECK(cpu_space.to(kFloat64).to_vector<double>() == gpu_space.to(kFloat64).to_vector<double>());
  }
}
