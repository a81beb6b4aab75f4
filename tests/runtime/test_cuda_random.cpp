// CUDA random ops against the CPU: dropout masks and values, rand and randint are bit-identical
// for the same (seed, offset), randn agrees to the last bits (CUDA's double log/cos may differ
// from glibc's by an ulp). Also in-place ops writing through a view's strides, which the
// conformance suite checks only on contiguous copies. Without a GPU each case says so and skips.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "runtime/ember.h"
#include "runtime/ops/registry.h"
#include "skip_case.h"

namespace test_cuda_random {

using namespace ember;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

// A factory op at an explicit stream position on `device`.
Tensor random_op(const char* name, const Dims& sizes, DType dtype, Device device, int64_t offset,
                 Attrs extra = {}) {
  Attrs attrs{{"sizes", sizes}, {"dtype", dtype}, {"device", device}, {"seed", int64_t{918273645}},
              {"offset", offset}};
  for (const char* key : {"low", "high"})
    if (extra.has(key)) attrs.set(key, extra.get<int64_t>(key));
  return dispatch_one(lookup_op(name), {}, attrs);
}

TensorList dropout_op(const Tensor& input, double p, int64_t seed, int64_t offset) {
  const std::array<Tensor, 1> inputs{input};
  const Attrs attrs{{"p", p}, {"seed", seed}, {"offset", offset}};
  return dispatch(OpCall{lookup_op("dropout"), inputs, attrs});
}

// True when both tensors hold the same bytes (the CUDA one is copied to the host first).
bool same_bytes(const Tensor& cpu, const Tensor& cuda) {
  const Tensor host = cuda.to(kCPU).contiguous();
  const Tensor expected = cpu.contiguous();
  return host.sizes() == expected.sizes() && host.dtype() == expected.dtype() &&
         std::memcmp(host.raw_data_ptr(), expected.raw_data_ptr(), expected.nbytes()) == 0;
}

}  // namespace

TEST_CASE("cuda pointwise, in-place, factory and random ops have CUDA kernels") {
#ifdef EMBER_HAS_CUDA
  for (const std::string name :
       {"abs", "clamp", "div_scalar", "eq", "ne", "lt", "le", "gt", "ge", "exp", "log", "log1p", "neg", "reciprocal",
        "rsqrt", "sign", "sqrt", "gelu", "gelu_backward", "relu", "relu_backward", "sigmoid", "sigmoid_backward",
        "silu", "silu_backward", "tanh", "tanh_backward", "maximum", "minimum", "pow", "pow_scalar", "rdiv_scalar",
        "rsub_scalar", "leaky_relu", "leaky_relu_backward", "elu", "elu_backward", "softplus", "softplus_backward",
        "expm1", "erf", "sin", "cos", "floor", "ceil", "round", "trunc", "where", "add_", "mul_", "mul_scalar_",
        "copy_", "fill_", "zero_", "arange", "linspace", "rand", "randn", "randint", "dropout", "tan", "asin",
        "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erfc", "atan2", "fmod",
        "remainder", "hardtanh", "hardtanh_backward", "hardswish", "hardswish_backward", "hardsigmoid",
        "hardsigmoid_backward", "mish", "mish_backward", "log_sigmoid", "log_sigmoid_backward"}) {
    CAPTURE(name);
    CHECK(static_cast<bool>(registry().get(name).kernel_for(kCuda0)));
  }
#else
  ember::testing::skip_case("CUDA unavailable: this build has no CUDA backend");
#endif
}

TEST_CASE("cuda dropout masks and values are bit-identical to the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor base = randn({37, 53}, {.device = kCPU});  // the default device is CUDA here
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    for (int64_t offset : {int64_t{0}, int64_t{8}, int64_t{6}}) {  // 6: the first Philox block is shared
      for (bool transposed : {false, true}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(offset);
        CAPTURE(transposed);
        const Tensor cpu_input = transposed ? base.to(dtype).transpose(0, 1) : base.to(dtype);
        const Tensor cuda_input = transposed ? base.to(dtype).to(kCuda0).transpose(0, 1) : base.to(dtype).to(kCuda0);
        const TensorList expected = dropout_op(cpu_input, 0.3, 4242, offset);
        const TensorList actual = dropout_op(cuda_input, 0.3, 4242, offset);
        CHECK(same_bytes(expected[1], actual[1]));
        CHECK(same_bytes(expected[0], actual[0]));
      }
    }
  }
  // p = 1 drops everything without 0 * inf.
  const TensorList all = dropout_op(base.to(kCuda0), 1.0, 7, 0);
  CHECK(all[0].to(kCPU).abs().sum().item<double>() == 0.0);
}

TEST_CASE("cuda dropout and relu_backward keep NaN as PyTorch does, bit-identical to the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values;
  for (int i = 0; i < 64; ++i) values.push_back(i % 4 == 0 ? nan : i % 4 == 1 ? inf : i % 4 == 2 ? -inf : i - 30.0);
  const Tensor base = from_vector<double>(values, {64}, {.device = kCPU});
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    CAPTURE(dtype_name(dtype));
    const Tensor input = base.to(dtype);
    for (double p : {0.5, 1.0}) {
      CAPTURE(p);
      const TensorList expected = dropout_op(input, p, 99, 0);
      const TensorList actual = dropout_op(input.to(kCuda0), p, 99, 0);
      CHECK(same_bytes(expected[0], actual[0]));
      // x * mask * scale: every NaN or infinite input is NaN or inf in the output, never 0.
      const std::vector<double> out = expected[0].to(kFloat64).to_vector<double>();
      for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) CHECK((std::isnan(out[i]) || std::isinf(out[i])));
    }
    // threshold_backward: the gradient passes where relu's output is NaN.
    const Tensor grad = full({64}, 3.0, {.dtype = dtype, .device = kCPU});
    const Tensor output = relu(input);
    const Tensor expected = dispatch_one(lookup_op("relu_backward"), {grad, output});
    const Tensor actual = dispatch_one(lookup_op("relu_backward"), {grad.to(kCuda0), output.to(kCuda0)});
    CHECK(same_bytes(expected, actual));
    CHECK(expected.to(kFloat64).to_vector<double>()[0] == 3.0);
  }
}

TEST_CASE("cuda rand and randint are bit-identical to the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (int64_t offset : {int64_t{0}, int64_t{6}, int64_t{1000}}) {
    CAPTURE(offset);
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
      CAPTURE(dtype_name(dtype));
      CHECK(same_bytes(random_op("rand", {123, 7}, dtype, kCPU, offset),
                       random_op("rand", {123, 7}, dtype, kCuda0, offset)));
    }
    for (DType dtype : {kInt64, kInt32, kFloat32, kFloat64}) {
      CAPTURE(dtype_name(dtype));
      const Attrs bounds{{"low", int64_t{-5}}, {"high", int64_t{1000}}};
      CHECK(same_bytes(random_op("randint", {123, 7}, dtype, kCPU, offset, bounds),
                       random_op("randint", {123, 7}, dtype, kCuda0, offset, bounds)));
    }
    // Ranges past 2^32 and the whole of int64: unsigned arithmetic on both devices, no double.
    for (const Attrs& bounds : {Attrs{{"low", std::numeric_limits<int64_t>::min()},
                                      {"high", std::numeric_limits<int64_t>::max()}},
                                Attrs{{"low", int64_t{1} << 60}, {"high", (int64_t{1} << 60) + 10}}}) {
      CHECK(same_bytes(random_op("randint", {123, 7}, kInt64, kCPU, offset, bounds),
                       random_op("randint", {123, 7}, kInt64, kCuda0, offset, bounds)));
    }
  }
}

TEST_CASE("cuda randn matches the CPU to within an ulp or so") {
  if (!ember::testing::cuda_or_skip()) return;
  for (int64_t offset : {int64_t{0}, int64_t{6}}) {
    const Tensor cpu64 = random_op("randn", {4001}, kFloat64, kCPU, offset);
    const Tensor cuda64 = random_op("randn", {4001}, kFloat64, kCuda0, offset).to(kCPU);
    const Tensor cpu32 = random_op("randn", {4001}, kFloat32, kCPU, offset);
    const Tensor cuda32 = random_op("randn", {4001}, kFloat32, kCuda0, offset).to(kCPU);
    const double* e64 = cpu64.data_ptr<double>();
    const double* a64 = cuda64.data_ptr<double>();
    const float* e32 = cpu32.data_ptr<float>();
    const float* a32 = cuda32.data_ptr<float>();
    int64_t worst64 = 0, worst32 = 0;  // index of the largest difference
    for (int64_t i = 0; i < 4001; ++i) {
      if (std::abs(e64[i] - a64[i]) > std::abs(e64[worst64] - a64[worst64])) worst64 = i;
      if (std::abs(e32[i] - a32[i]) > std::abs(e32[worst32] - a32[worst32])) worst32 = i;
    }
    CAPTURE(offset);
    // |z| <= ~6.7; cos and log are off by a few ulp of 1 at most: 1e-14 absolute is generous.
    CHECK(std::abs(e64[worst64] - a64[worst64]) <= 1e-14);
    // float32: the same double rounded to float, so at most one float ulp apart.
    CHECK(std::abs(e32[worst32] - a32[worst32]) <= std::abs(std::nextafter(e32[worst32], 1e9f) - e32[worst32]));
    CHECK(cuda64.mean().item<double>() == doctest::Approx(cpu64.mean().item<double>()).epsilon(1e-12));
  }
}

TEST_CASE("cuda in-place ops write through a view's strides") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor values = randn({6, 8}, {.device = kCPU});
  const Tensor other = randn({8}, {.device = kCPU});
  for (const char* op : {"add_", "mul_", "copy_", "fill_", "mul_scalar_"}) {
    CAPTURE(op);
    Tensor cpu_base = values.clone();
    Tensor cuda_base = values.to(kCuda0);
    // Every other column of the transpose: a non-contiguous view into the middle of the buffer.
    Tensor cpu_view = cpu_base.transpose(0, 1).slice(1, 1, 6, 2);
    Tensor cuda_view = cuda_base.transpose(0, 1).slice(1, 1, 6, 2);
    const Tensor cpu_other = other.reshape({8, 1});
    const Tensor cuda_other = cpu_other.to(kCuda0);
    const std::string name = op;
    if (name == "fill_" || name == "mul_scalar_") {
      const Attrs attrs{{"value", -1.25}};
      dispatch(OpCall{lookup_op(op), std::array<Tensor, 1>{cpu_view}, attrs});
      dispatch(OpCall{lookup_op(op), std::array<Tensor, 1>{cuda_view}, attrs});
    } else {
      const Attrs attrs = name == "add_" ? Attrs{{"alpha", 0.5}} : Attrs{};
      dispatch(OpCall{lookup_op(op), std::array<Tensor, 2>{cpu_view, cpu_other}, attrs});
      dispatch(OpCall{lookup_op(op), std::array<Tensor, 2>{cuda_view, cuda_other}, attrs});
    }
    // The whole buffer matches: the view's elements changed, the rest did not.
    CHECK(same_bytes(cpu_base, cuda_base));
  }
}

}  // namespace test_cuda_random
