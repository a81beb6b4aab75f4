// The cuBLASLt GEMMs on a GPU: each fused epilogue against the CPU composition linear -> relu /
// gelu for float32 (TF32 off and on), bfloat16 and float16, transposed and misaligned operands
// read in place, NaN through the ReLU epilogue, and the plan cache. The wrapper's host side (TF32
// switch, library loading, operand layouts): test_cuda_gemm_library.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "skip_case.h"

#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_relu_probe.h"
#include "runtime/cuda/cuda_context.h"
#include "tf32_scope.h"

namespace test_cuda_gemm {

using namespace ember;

namespace {

const Device kGpu{DeviceType::CUDA, 0};

// Deterministic values in [-1, 1) as a CPU tensor of `dtype` (rounded once, so the float64
// reference sees exactly the values the GPU multiplies).
Tensor values(const Dims& sizes, DType dtype, uint32_t seed) {
  std::vector<float> data(static_cast<size_t>(sizes.product()));
  uint32_t state = seed;
  for (float& value : data) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return from_vector(data, sizes, {.dtype = kFloat32, .device = kCPU}).to(dtype);
}

// Every element of `got` (any device, any dtype) within atol + rtol * |want| of the float64 `want`.
void check_close(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& what) {
  REQUIRE(got.sizes() == want.sizes());
  const std::vector<double> g = got.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> w = want.to(kFloat64).contiguous().to_vector<double>();
  size_t worst = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double excess = std::abs(g[i] - w[i]) - (atol + rtol * std::abs(w[i]));
    if (std::isnan(excess)) {  // an unwritten (NaN-poisoned) element is the worst, and stays so
      worst_excess = std::numeric_limits<double>::infinity();
      worst = i;
      break;
    }
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  INFO(what << ": element " << worst << " is " << g[worst] << ", expected " << w[worst]);
  CHECK(worst_excess <= 0.0);
}

struct Tolerance {
  double atol, rtol;
};

// The wrapper with `epilogue` on x [m, k] . W^T (+ bias) against the float64 CPU composition.
// cuBLASLt's GELU epilogue is the tanh approximation, so the reference is gelu(tanh = true).
void check_epilogues(DType dtype, Tolerance tolerance, const std::string& label) {
  const int64_t m = 37, n = 48, k = 64;
  const Tensor x = values({m, k}, dtype, 11);
  const Tensor weight = values({n, k}, dtype, 22);
  const Tensor bias = values({n}, dtype, 33);
  const Tensor x_gpu = x.to(kGpu), weight_gpu = weight.to(kGpu), bias_gpu = bias.to(kGpu);
  const Tensor plain = linear(x.to(kFloat64), weight.to(kFloat64));
  const Tensor biased = linear(x.to(kFloat64), weight.to(kFloat64), bias.to(kFloat64));
  struct Expected {
    cuda::Epilogue epilogue;
    Tensor want;
    const char* name;
  };
  const std::vector<Expected> cases = {
      {cuda::Epilogue::None, plain, "none"},
      {cuda::Epilogue::Bias, biased, "bias"},
      {cuda::Epilogue::Relu, relu(plain), "relu"},
      {cuda::Epilogue::BiasRelu, relu(biased), "bias+relu"},
      {cuda::Epilogue::Gelu, gelu(plain, true), "gelu(tanh)"},
      {cuda::Epilogue::BiasGelu, gelu(biased, true), "bias+gelu(tanh)"},
  };
  for (const Expected& expected : cases) {
    INFO(label << " " << expected.name);  // also names the case when gemm() refuses or throws
    Tensor out = full({m, n}, std::nan(""), {.dtype = dtype, .device = kGpu});
    cuda::GemmProblem problem;
    problem.dtype = dtype;
    problem.m = m;
    problem.n = n;
    problem.k = k;
    problem.a = {x_gpu.raw_data_ptr(), k, false, 0};
    problem.b = {weight_gpu.raw_data_ptr(), k, true, 0};  // W [n, k] read as W^T
    problem.out = out.raw_data_ptr();
    problem.out_leading = n;
    problem.epilogue = expected.epilogue;
    problem.bias = bias_gpu.raw_data_ptr();
    problem.stream = cuda::current_stream(kGpu).handle;
    CHECK(cuda::gemm(problem));
    // The epilogue's tanh may be the GPU's fast approximation (relative error ~2^-11), which
    // exceeds float32's GEMM tolerance near |x| ~ 3 but not 2e-3.
    const bool gelu_epilogue =
        expected.epilogue == cuda::Epilogue::Gelu || expected.epilogue == cuda::Epilogue::BiasGelu;
    const double atol = gelu_epilogue ? std::max(tolerance.atol, 2e-3) : tolerance.atol;
    check_close(out, expected.want, atol, tolerance.rtol, label + " " + expected.name);
  }
}

}  // namespace

TEST_CASE("cuda gemm: fused epilogues match linear then relu / gelu(tanh) on the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  {
    const Tf32Scope scope(false);
    check_epilogues(kFloat32, {1e-4, 1e-4}, "float32");
    check_epilogues(kBFloat16, {2e-2, 1e-2}, "bfloat16");
    check_epilogues(kFloat16, {5e-3, 2e-3}, "float16");
  }
  const Tf32Scope scope(true);  // TF32 rounds inputs to 10 mantissa bits: looser, still close
  check_epilogues(kFloat32, {2e-2, 1e-2}, "float32 with TF32");
}

TEST_CASE("cuda gemm: TF32 changes float32 results only when allowed") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor a = values({128, 512}, kFloat32, 5).to(kGpu);
  const Tensor b = values({512, 256}, kFloat32, 6).to(kGpu);
  const Tensor want = mm(a.to(kCPU).to(kFloat64), b.to(kCPU).to(kFloat64));
  Tensor exact, rounded;
  {
    const Tf32Scope scope(false);
    exact = mm(a, b);
  }
  {
    const Tf32Scope scope(true);
    rounded = mm(a, b);
  }
  check_close(exact, want, 1e-4, 1e-4, "float32 without TF32");
  check_close(rounded, want, 5e-2, 1e-2, "float32 with TF32");
  const double difference = (exact.to(kCPU) - rounded.to(kCPU)).abs().max().item();
  MESSAGE("largest |fp32 - tf32| difference: " << difference);
  CHECK(difference > 0.0);  // TF32 tensor cores really ran
}

TEST_CASE("cuda gemm: transposed operands are read in place and match the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  for (const DType dtype : {kFloat32, kBFloat16, kFloat64}) {
    const Tolerance tolerance = dtype == kBFloat16 ? Tolerance{2e-2, 1e-2} : Tolerance{1e-4, 1e-4};
    const Tensor stored_a = values({40, 24}, dtype, 7);  // a = stored_a^T: [24, 40]
    const Tensor stored_b = values({56, 40}, dtype, 8);  // b = stored_b^T: [40, 56]
    const Tensor want = mm(stored_a.to(kFloat64).t(), stored_b.to(kFloat64).t());
    const Tensor got = mm(stored_a.to(kGpu).t(), stored_b.to(kGpu).t());
    const std::string name(dtype_name(dtype));
    check_close(got, want, tolerance.atol, tolerance.rtol, "mm of transposes " + name);
    // linear with a weight that is itself a transposed view: W^T is then a plain row-major read.
    const Tensor weight_storage = values({40, 16}, dtype, 9);  // weight = storage^T: [16, 40]
    const Tensor bias = values({16}, dtype, 10);
    const Tensor x = values({3, 5, 40}, dtype, 12);
    const Tensor linear_want = linear(x.to(kFloat64), weight_storage.to(kFloat64).t(), bias.to(kFloat64));
    const Tensor linear_got = linear(x.to(kGpu), weight_storage.to(kGpu).t(), bias.to(kGpu));
    check_close(linear_got, linear_want, tolerance.atol, tolerance.rtol, "linear with transposed weight " + name);
  }
}

TEST_CASE("cuda gemm: a repeated shape reuses its cached plan") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor x = values({64, 32}, kFloat32, 1).to(kGpu);
  const Tensor weight = values({48, 32}, kFloat32, 2).to(kGpu);
  const Tensor bias = values({48}, kFloat32, 3).to(kGpu);
  const Tensor first = linear(x, weight, bias);
  const int64_t plans = cuda::cached_plan_count();
  const Tensor second = linear(x, weight, bias);
  CHECK(cuda::cached_plan_count() == plans);
  check_close(second, first.to(kCPU), 0.0, 0.0, "second call");
  CHECK(cuda::benchmark_raw_gemm(256, 256, 256, kFloat32, 2) > 0.0);
}

TEST_CASE("cuda gemm: the plan cache stays bounded over more shapes than it holds, and results stay right") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor weight_cpu = values({8, 4}, kFloat32, 2);
  const Tensor weight = weight_cpu.to(kGpu);
  const int64_t rows_count = cuda::kCachedPlansPerThread + 8;  // a new shape per row count (dynamic batch)
  for (int64_t rows = 1; rows <= rows_count; ++rows) (void)mm(values({rows, 4}, kFloat32, 1).to(kGpu), weight.t());
  CHECK(cuda::cached_plan_count() == cuda::kCachedPlansPerThread);
  // The first shapes' plans were dropped: they are rebuilt and give the same product as the CPU.
  const Tensor x = values({1, 4}, kFloat32, 1);
  check_close(mm(x.to(kGpu), weight.t()), mm(x.to(kFloat64), weight_cpu.to(kFloat64).t()), 1e-6, 1e-6,
              "rebuilt plan");
  CHECK(cuda::cached_plan_count() == cuda::kCachedPlansPerThread);
}

// Views starting one element into a buffer (2 bytes off a 16-byte boundary for 16-bit types):
// cuBLASLt may have no algorithm for such a start, so ember copies them (gemm_cuda_ops.cpp).
TEST_CASE("cuda gemm: operands starting off a 16-byte boundary match the float64 product") {
  if (!ember::testing::cuda_or_skip()) return;
  for (const DType dtype : {kBFloat16, kFloat16, kFloat32}) {
    INFO(dtype_name(dtype));
    const Tensor a_buffer = values({1 + 65 * 40}, dtype, 21);
    const Tensor b_buffer = values({1 + 40 * 24}, dtype, 22);
    const Tensor bias_buffer = values({1 + 24}, dtype, 23);
    const Tensor a = a_buffer.narrow(0, 1, 65 * 40).view({65, 40});
    const Tensor b = b_buffer.narrow(0, 1, 40 * 24).view({40, 24});
    const Tensor bias = bias_buffer.narrow(0, 1, 24);
    const Tensor want = matmul(a.to(kFloat64), b.to(kFloat64));
    const Tensor a_gpu = a_buffer.to(kGpu).narrow(0, 1, 65 * 40).view({65, 40});
    const Tensor b_gpu = b_buffer.to(kGpu).narrow(0, 1, 40 * 24).view({40, 24});
    const Tensor bias_gpu = bias_buffer.to(kGpu).narrow(0, 1, 24);
    const double rtol = dtype == kFloat32 ? 1e-5 : 1e-2;
    check_close(matmul(a_gpu, b_gpu), want, rtol, rtol, "matmul");
    // linear reads its weight [out, in] transposed: b^T as the weight, with the bias.
    const Tensor weight_gpu = b_gpu.t();
    check_close(linear(a_gpu, weight_gpu, bias_gpu), add(want, bias.to(kFloat64)), rtol, rtol, "linear");
    // A batch of such views: [2, 65, 40] @ [40, 24].
    const Tensor batch_buffer = values({1 + 2 * 65 * 40}, dtype, 24);
    const Tensor batch = batch_buffer.narrow(0, 1, 2 * 65 * 40).view({2, 65, 40});
    const Tensor batch_gpu = batch_buffer.to(kGpu).narrow(0, 1, 2 * 65 * 40).view({2, 65, 40});
    check_close(matmul(batch_gpu, b_gpu), matmul(batch.to(kFloat64), b.to(kFloat64)), rtol, rtol, "batched matmul");
  }
}

TEST_CASE("cuda gemm: a NaN reaches the output through the fused ReLU, as through relu on the CPU") {
  // torch.relu and ember's fn::Relu pass NaN through; an epilogue built on max(x, 0) would turn it
  // into 0 and hide an overflow from the loss. The compile stage fuses linear -> relu into this op.
  if (!ember::testing::cuda_or_skip()) return;
  struct Shape {
    int64_t rows, in, out;
  };
  // A small product and one that cuBLASLt's larger kernel families take.
  for (const Shape shape : {Shape{4, 64, 32}, Shape{512, 1024, 1024}}) {
    for (const DType dtype : {kFloat32, kBFloat16}) {
      INFO(shape.rows, "x", shape.in, " -> ", shape.out, " ", dtype_name(dtype));
      Tensor x = values({shape.rows, shape.in}, dtype, 11);
      x.select(0, 2).select(0, 5).fill_(std::nan(""));
      const Tensor weight = values({shape.out, shape.in}, dtype, 12);
      const Tensor bias = values({shape.out}, dtype, 13);
      const Tensor cpu = linear(x, weight, bias, Activation::Relu).to(kFloat32);
      const Tensor gpu = linear(x.to(kGpu), weight.to(kGpu), bias.to(kGpu), Activation::Relu).to(kCPU).to(kFloat32);
      const std::vector<float> expected = cpu.to_vector<float>(), actual = gpu.to_vector<float>();
      int64_t nan_expected = 0, nan_matched = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        if (!std::isnan(expected[i])) continue;
        ++nan_expected;
        nan_matched += std::isnan(actual[i]) ? 1 : 0;
      }
      CHECK(nan_expected == shape.out);  // row 2, every column
      CHECK(nan_matched == nan_expected);
    }
  }
  // Either way NaN survives; which way it went is worth knowing (linear fuses only a NaN-keeping
  // epilogue, runtime/cuda/cublaslt_relu_probe.h).
  const bool fused = cuda::relu_epilogue_keeps_nan(kFloat32, 0, cuda::current_stream(kGpu).handle);
  MESSAGE("cuBLASLt's ReLU epilogue " << (fused ? "keeps NaN: linear fuses it" : "drops NaN: linear runs relu after"));
}

TEST_CASE("cuda gemm: integer operands are refused with PyTorch's reason, on the CPU they multiply") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor a = ones({2, 3}, {.dtype = kInt64}), b = ones({3, 2}, {.dtype = kInt64});
  CHECK(mm(a, b).to_vector<int64_t>() == std::vector<int64_t>{3, 3, 3, 3});
  CHECK_THROWS_WITH_AS(mm(a.to(kGpu), b.to(kGpu)),
                       doctest::Contains("mm: integer operands (int64) are multiplied on the CPU only, as in PyTorch"),
                       Error);
}

#endif  // EMBER_HAS_CUDA

}  // namespace test_cuda_gemm
