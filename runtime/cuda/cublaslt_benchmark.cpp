// benchmark_raw_gemm: times cuBLASLt itself on the GEMM ember's mm runs for contiguous operands,
// with the same plan (descriptors, heuristic's best algorithm, 32 MiB workspace) but called
// directly in a loop: the baseline the ember-vs-cuBLAS benchmark compares against.
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "kernels/half_types.h"
#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cublaslt_library.h"
#include "runtime/cuda/cublaslt_plan.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda_settings.h"
#include "runtime/tensor.h"

namespace ember::cuda {

namespace {

// Small pseudo-random values in [-1, 1) in `dtype` (a fixed LCG: the timing, not the values,
// matters, but all-equal inputs would let the GPU run cooler and faster than real data).
std::vector<unsigned char> random_bytes(int64_t count, DType dtype) {
  std::vector<unsigned char> bytes(static_cast<size_t>(count) * element_size(dtype));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float value = static_cast<float>(state >> 40) / static_cast<float>(1 << 23) - 1.0f;
    unsigned char* target = bytes.data() + i * element_size(dtype);
    if (dtype == kFloat64) {
      const double wide = value;
      std::memcpy(target, &wide, sizeof wide);
    } else if (dtype == kBFloat16) {
      const BFloat16 narrow(value);
      std::memcpy(target, &narrow.bits, sizeof narrow.bits);
    } else if (dtype == kFloat16) {
      const Float16 narrow(value);
      std::memcpy(target, &narrow.bits, sizeof narrow.bits);
    } else {
      std::memcpy(target, &value, sizeof value);
    }
  }
  return bytes;
}

Tensor random_device_tensor(const Dims& sizes, DType dtype, Device device, cudaStream_t stream) {
  Tensor tensor = make_tensor(sizes, dtype, device);
  const std::vector<unsigned char> bytes = random_bytes(tensor.numel(), dtype);
  cuda_check(cudaMemcpyAsync(tensor.raw_data_ptr(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream));
  cuda_check(cudaStreamSynchronize(stream));  // `bytes` dies at return
  return tensor;
}

}  // namespace

double benchmark_raw_gemm(int64_t m, int64_t n, int64_t k, DType dtype, int iterations) {
  check(m > 0 && n > 0 && k > 0 && iterations > 0,
        "benchmark_raw_gemm: sizes and iterations must be positive (m {}, n {}, k {}, iterations {})", m, n, k,
        iterations);
  const Device device(DeviceType::CUDA, 0);
  DeviceGuard guard(device);
  const Stream stream = current_stream(device);
  const auto cuda_stream = static_cast<cudaStream_t>(stream.handle);
  const Tensor a = random_device_tensor({m, k}, dtype, device, cuda_stream);
  const Tensor b = random_device_tensor({k, n}, dtype, device, cuda_stream);
  const Tensor out = make_tensor({m, n}, dtype, device);

  GemmProblem problem;  // exactly what mm builds for contiguous operands
  problem.dtype = dtype;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.a = GemmMatrix{a.raw_data_ptr(), k, false, 0};
  problem.b = GemmMatrix{b.raw_data_ptr(), n, false, 0};
  problem.out = out.raw_data_ptr();
  problem.out_leading = n;
  problem.stream = stream.handle;
  detail::Plan plan;
  detail::build_plan(detail::key_of(problem, get_allow_tf32()), nullptr, plan);
  check(plan.found, "benchmark_raw_gemm: cuBLASLt has no algorithm for {} m {} n {} k {}", dtype, m, n, k);
  void* workspace = detail::workspace_for(0, stream.handle);
  const cublasLtHandle_t handle = detail::handle_for(0);
  const double alpha_double = 1.0, beta_double = 0.0;
  const float alpha_float = 1.0f, beta_float = 0.0f;
  const void* alpha = plan.double_scale ? static_cast<const void*>(&alpha_double) : &alpha_float;
  const void* beta = plan.double_scale ? static_cast<const void*>(&beta_double) : &beta_float;
  auto run_once = [&] {
    cublas_check(cublaslt().Matmul(handle, plan.operation, alpha, problem.b.data, plan.a_layout, problem.a.data,
                                   plan.b_layout, beta, problem.out, plan.out_layout, problem.out, plan.out_layout,
                                   &plan.algorithm, workspace, plan.workspace_bytes, cuda_stream));
  };
  const int warmup = iterations < 3 ? iterations : 3;  // clocks up, kernels loaded
  for (int i = 0; i < warmup; ++i) run_once();
  Event start(true), stop(true);
  start.record(stream);
  for (int i = 0; i < iterations; ++i) run_once();
  stop.record(stream);
  stop.synchronize();  // the host reads the time
  return static_cast<double>(start.elapsed_milliseconds(stop)) * 1e-3 / iterations;
}

}  // namespace ember::cuda
