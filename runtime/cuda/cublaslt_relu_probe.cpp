// cuBLASLt documents its ReLU epilogue as max(x, 0) and says nothing of NaN. A max built on fmax
// returns 0 for a NaN, where ember's relu (and PyTorch's) passes it through: a fused linear + ReLU
// would then hide an overflow that the unfused ops show, and the compiled step (which fuses
// linear -> relu) would differ from eager. So the fusion is kept only where a probe shows the
// epilogue keeping NaN; elsewhere linear runs the GEMM with its bias and then the relu kernel.
#include "runtime/cuda/cublaslt_relu_probe.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda_settings.h"
#include "runtime/tensor.h"

namespace ember::cuda {

namespace {

// Products every cuBLASLt algorithm takes (4^3) and one its larger kernel families serve (256^3):
// the verdict must hold for the kernels real layers get, not only the smallest.
constexpr int64_t kSides[] = {4, 256};
constexpr int kProbedDTypes = 4;  // float32, float64, bfloat16, float16: the GEMM dtypes
enum Verdict : int { kUnknown = 0, kKeepsNan = 1, kDropsNan = 2 };
// Per device, dtype and TF32 switch (float32 GEMMs take other kernels with TF32 on).
std::array<std::array<std::array<std::atomic<int>, 2>, kProbedDTypes>, kMaxDevices> verdicts{};

// The bytes of `count` quiet NaNs of `dtype`.
std::vector<unsigned char> nans(DType dtype, int64_t count) {
  const size_t size = element_size(dtype);
  std::vector<unsigned char> bytes(size * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    unsigned char* at = bytes.data() + size * static_cast<size_t>(i);
    if (dtype == kFloat32) {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(at, &nan, sizeof(nan));
    } else if (dtype == kFloat64) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(at, &nan, sizeof(nan));
    } else {
      const uint16_t nan = dtype == kBFloat16 ? 0x7fc0 : 0x7e00;
      std::memcpy(at, &nan, sizeof(nan));
    }
  }
  return bytes;
}

bool is_nan(DType dtype, const unsigned char* at) {
  if (dtype == kFloat32) {
    float value;
    std::memcpy(&value, at, sizeof(value));
    return std::isnan(value);
  }
  if (dtype == kFloat64) {
    double value;
    std::memcpy(&value, at, sizeof(value));
    return std::isnan(value);
  }
  uint16_t bits;
  std::memcpy(&bits, at, sizeof(bits));
  return (bits & 0x7fff) > (dtype == kBFloat16 ? 0x7f80 : 0x7c00);
}

// Whether every output of `epilogue` over a side^3 product of NaNs (with a zero bias) is NaN.
// False also when cuBLASLt has no fused algorithm for it (linear then composes the ReLU anyway).
bool keeps_nan(DType dtype, int device, void* stream, int64_t side, Epilogue epilogue) {
  const Device where{DeviceType::CUDA, device};
  const int64_t count = side * side;
  const std::vector<unsigned char> host = nans(dtype, count);
  const Tensor operand = make_tensor({side, side}, dtype, where);
  const Tensor bias = make_tensor({side}, dtype, where);
  const Tensor out = make_tensor({side, side}, dtype, where);
  const auto cuda_stream = static_cast<cudaStream_t>(stream);
  cuda_check(cudaMemcpyAsync(operand.raw_data_ptr(), host.data(), host.size(), cudaMemcpyHostToDevice, cuda_stream));
  cuda_check(cudaMemsetAsync(bias.raw_data_ptr(), 0, static_cast<size_t>(side) * element_size(dtype), cuda_stream));
  GemmProblem problem;
  problem.dtype = dtype;
  problem.m = problem.n = problem.k = side;
  problem.a = {.data = operand.raw_data_ptr(), .leading = side};
  problem.b = {.data = operand.raw_data_ptr(), .leading = side, .transposed = true};  // as linear's weight
  problem.out = out.raw_data_ptr();
  problem.out_leading = side;
  problem.epilogue = epilogue;
  problem.bias = epilogue == Epilogue::BiasRelu ? bias.raw_data_ptr() : nullptr;
  problem.device = device;
  problem.stream = stream;
  std::vector<unsigned char> result(host.size());
  const bool fused = gemm(problem);
  // The copy back waits for the memcpy above as well, so `host` outlives its use either way.
  cuda_check(cudaMemcpyAsync(result.data(), out.raw_data_ptr(), result.size(), cudaMemcpyDeviceToHost, cuda_stream));
  cuda_check(cudaStreamSynchronize(cuda_stream));
  if (!fused) return false;
  for (int64_t i = 0; i < count; ++i)
    if (!is_nan(dtype, result.data() + static_cast<size_t>(i) * element_size(dtype))) return false;
  return true;
}

bool probe(DType dtype, int device, void* stream) {
  const DeviceGuard guard(Device{DeviceType::CUDA, device});
  for (const int64_t side : kSides)
    for (const Epilogue epilogue : {Epilogue::Relu, Epilogue::BiasRelu})
      if (!keeps_nan(dtype, device, stream, side, epilogue)) return false;
  return true;
}

}  // namespace

bool relu_epilogue_keeps_nan(DType dtype, int device, void* stream) {
  const int index = static_cast<int>(dtype);
  if (index < 0 || index >= kProbedDTypes || device < 0 || device >= kMaxDevices) return false;
  std::atomic<int>& verdict =
      verdicts[static_cast<size_t>(device)][static_cast<size_t>(index)][get_allow_tf32() ? 1 : 0];
  const int known = verdict.load(std::memory_order_acquire);
  if (known != kUnknown) return known == kKeepsNan;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture));
  if (capture != cudaStreamCaptureStatusNone) return false;
  // Two threads may both probe: they reach the same verdict.
  const bool keeps = probe(dtype, device, stream);
  verdict.store(keeps ? kKeepsNan : kDropsNan, std::memory_order_release);
  return keeps;
}

}  // namespace ember::cuda
