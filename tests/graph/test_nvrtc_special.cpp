// The special functors (kernels/special_functors.h) under NVRTC: generated kernels that call them
// compile to an sm_90 cubin for every floating type, with the standard-library shim's functions
// (kernels/nvrtc_std.h) covering everything their double math calls. No GPU needed.
#ifdef EMBER_HAS_CUDA
#include <doctest/doctest.h>

#include "graph/cuda/nvrtc_program.h"
#include "runtime/ember.h"
#include "scoped_cache_dir.h"

namespace test_nvrtc_special {

using namespace ember;
using namespace ember::graph::cuda;
using ember::graph_test::ScopedCacheDir;

TEST_CASE("nvrtc: the special functors compile for float, double, bfloat16 and float16") {
  ScopedCacheDir scoped;
  const std::string source = cuda_prelude() + R"(
template <typename Storage, typename Compute>
__device__ void special(Storage* out) {
  using namespace ember::fn;
  const Compute x = static_cast<Compute>(out[0]);
  const Compute sum = Lgamma{}(x) + Digamma{}(x) + Polygamma{3}(x) + Erfinv{}(x) + I0{}(x) + I0e{}(x) + I1{}(x) +
                      I1e{}(x) + Ndtri{}(x) + LogNdtr{}(x) + Erfcx{}(x);
  out[0] = static_cast<Storage>(sum);
}
extern "C" __global__ void special_f32(float* out) { special<float, float>(out); }
extern "C" __global__ void special_f64(double* out) { special<double, double>(out); }
extern "C" __global__ void special_bf16(ember::BFloat16* out) { special<ember::BFloat16, float>(out); }
extern "C" __global__ void special_f16(ember::Float16* out) { special<ember::Float16, float>(out); }
)";
  const CudaBinary binary = compile_cuda(source);
  CHECK(binary.sm == 90);
  for (const char* kernel : {"special_f32", "special_f64", "special_bf16", "special_f16"}) {
    CAPTURE(kernel);
    CHECK(binary.ptx.find(std::string(".entry ") + kernel) != std::string::npos);
  }
}
#endif

}  // namespace test_nvrtc_special
