// The CUDA target of code generation: NVRTC compiles programs built on the shared functors to an
// sm_90 cubin and PTX (no GPU needed), reports errors with NVRTC's log, reuses the disk cache, and
// (with a GPU) the loaded kernels compute what a float64 reference does.
#ifdef EMBER_HAS_CUDA
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "graph/cuda/cuda_program_cache.h"
#include "graph/cuda/embedded_headers.h"
#include "graph/cuda/nvrtc_program.h"
#include "graph/kernel_cache.h"
#include "kernels/half_types.h"
#include "runtime/cuda/kernel_library.h"
#include "runtime/ember.h"
#include "scoped_cache_dir.h"
#include "skip_case.h"

namespace test_nvrtc {

using namespace ember;
using namespace ember::graph::cuda;
using ember::graph_test::ScopedCacheDir;

namespace {

// out = clamp(where(a > 0, gelu_tanh(a) * sigmoid(b), exp(relu(b)) + a), -3, 3): eight functors,
// one kernel per storage type; 16-bit types compute in float like every ember kernel.
const char* const kFusedBody = R"(
template <typename Storage, typename Compute>
__device__ void fused(const Storage* a, const Storage* b, Storage* out, long n) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const Compute x = static_cast<Compute>(a[i]), y = static_cast<Compute>(b[i]);
  const Compute left = ember::fn::Mul{}(ember::fn::GeluTanh{}(x), ember::fn::Sigmoid{}(y));
  const Compute right = ember::fn::Add{1.0}(ember::fn::Exp{}(ember::fn::Relu{}(y)), x);
  const Compute chosen = ember::fn::Where{}(x > Compute(0), left, right);
  out[i] = Storage(ember::fn::Clamp{-3.0, 3.0}(chosen));
}
extern "C" __global__ void fused_f32(const float* a, const float* b, float* out, long n) {
  fused<float, float>(a, b, out, n);
}
extern "C" __global__ void fused_f64(const double* a, const double* b, double* out, long n) {
  fused<double, double>(a, b, out, n);
}
extern "C" __global__ void fused_bf16(const ember::BFloat16* a, const ember::BFloat16* b,
                                      ember::BFloat16* out, long n) {
  fused<ember::BFloat16, float>(a, b, out, n);
}
extern "C" __global__ void fused_f16(const ember::Float16* a, const ember::Float16* b,
                                     ember::Float16* out, long n) {
  fused<ember::Float16, float>(a, b, out, n);
}
)";

std::string fused_program() { return cuda_prelude() + kFusedBody; }

// The same expression in double, written from the textbook formulas, not from the functors.
double reference(double x, double y) {
  const double gelu = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  const double sigmoid = 1.0 / (1.0 + std::exp(-y));
  const double chosen = x > 0 ? gelu * sigmoid : std::exp(std::max(y, 0.0)) + x;
  return std::min(std::max(chosen, -3.0), 3.0);
}

}  // namespace

TEST_CASE("nvrtc: functor kernels for float, double, bf16 and fp16 compile to an sm_90 cubin and PTX") {
  ScopedCacheDir scoped;
  CudaBinary binary = compile_cuda(fused_program());
  CHECK_FALSE(binary.from_cache);
  CHECK(binary.sm == 90);
  REQUIRE(binary.cubin.size() > 64);
  CHECK(cubin_sm(binary.cubin) == 90);  // also checks the ELF magic and EM_CUDA
  CHECK(binary.ptx.find(".target sm_90") != std::string::npos);
  for (const char* kernel : {"fused_f32", "fused_f64", "fused_bf16", "fused_f16"}) {
    CAPTURE(kernel);
    CHECK(binary.ptx.find(std::string(".entry ") + kernel) != std::string::npos);
    CHECK(binary.cubin.find(kernel) != std::string::npos);  // the ELF's symbol table
  }
  // Another target is another program: an sm_80 cubin, compute_80-level PTX.
  CudaBinary ampere = compile_cuda(fused_program(), CudaTarget{.sm = 80});
  CHECK(cubin_sm(ampere.cubin) == 80);
  CHECK(ampere.ptx.find(".target sm_80") != std::string::npos);

  CHECK_THROWS_WITH_AS(cubin_sm(binary.ptx), doctest::Contains("not a 64-bit ELF"), Error);
  CHECK_THROWS_WITH_AS(compile_cuda(fused_program(), CudaTarget{.sm = 9}),
                       doctest::Contains("target sm 9"), Error);
}

TEST_CASE("nvrtc: the activations with attributes, the math functors and the rounding ops compile for every type") {
  ScopedCacheDir scoped;
  // The rounding functors also take integers (they pass them through), as fmod and remainder do;
  // the others are floating.
  const std::string source = cuda_prelude() + R"(
template <typename T>
__device__ T floating(T x, T g) {
  using namespace ember::fn;
  return LeakyRelu{0.2}(x) + Elu{0.5}(x) + Softplus{1.5, 20.0}(x) + LeakyReluBackward{0.2}(g, x) +
         EluBackward{0.5}(g, x) + SoftplusBackward{1.5, 20.0}(g, x) + Expm1{}(x) + Erf{}(x) + Sin{}(x) + Cos{}(x);
}
template <typename T>
__device__ T rounding(T x) {
  using namespace ember::fn;
  return Floor{}(x) + Ceil{}(x) + Round{}(x) + Trunc{}(x);
}
template <typename T>
__device__ T modulo(T x, T y) {
  using namespace ember::fn;
  return Fmod{}(x, y) + Remainder{}(x, y);
}
template <typename T>
__device__ T library_math(T x, T y) {
  using namespace ember::fn;
  return Tan{}(x) + Asin{}(x) + Acos{}(x) + Atan{}(x) + Sinh{}(x) + Cosh{}(x) + Asinh{}(x) + Acosh{}(x) +
         Atanh{}(x) + Log2{}(x) + Log10{}(x) + Exp2{}(x) + Erfc{}(x) + Atan2{}(x, y) + modulo(x, y);
}
extern "C" __global__ void all_f32(float* out) {
  out[0] = floating(out[0], out[1]) + rounding(out[1]) + library_math(out[2], out[3]);
}
extern "C" __global__ void all_f64(double* out) {
  out[0] = floating(out[0], out[1]) + rounding(out[1]) + library_math(out[2], out[3]);
}
extern "C" __global__ void all_i64(long* out) { out[0] = rounding(out[1]) + modulo(out[2], out[3]); }
extern "C" __global__ void all_i32(int* out) { out[0] = rounding(out[1]) + modulo(out[2], out[3]); }
)";
  const CudaBinary binary = compile_cuda(source);
  for (const char* kernel : {"all_f32", "all_f64", "all_i64", "all_i32"}) {
    CAPTURE(kernel);
    CHECK(binary.ptx.find(std::string(".entry ") + kernel) != std::string::npos);
  }
}

TEST_CASE("nvrtc: the standard-library shim agrees with the host's <limits> and <type_traits>") {
  ScopedCacheDir scoped;
  // Each value is printed from the host's std and asserted inside the NVRTC program.
  std::string source = cuda_prelude() + fmt::format(R"(
static_assert(std::numeric_limits<int>::max() == {});
static_assert(std::numeric_limits<int>::lowest() == {} - 1);
static_assert(std::numeric_limits<long>::max() == {}L);
static_assert(std::numeric_limits<unsigned char>::max() == {});
static_assert(std::numeric_limits<short>::min() == {});
static_assert(std::numeric_limits<bool>::max() == true);
static_assert(__builtin_bit_cast(unsigned, std::numeric_limits<float>::infinity()) == {}u);
static_assert(__builtin_bit_cast(unsigned, std::numeric_limits<float>::quiet_NaN()) == {}u);
static_assert(__builtin_bit_cast(unsigned long, std::numeric_limits<double>::infinity()) == {}ul);
static_assert(__builtin_bit_cast(unsigned, std::numeric_limits<float>::max()) == {}u);
static_assert(__builtin_bit_cast(unsigned, std::numeric_limits<float>::lowest()) == {}u);
static_assert(__builtin_bit_cast(unsigned long, std::numeric_limits<double>::min()) == {}ul);
static_assert(std::is_same_v<std::make_unsigned_t<long>, unsigned long>);
static_assert(std::is_same_v<std::int64_t, long> && sizeof(std::uint16_t) == 2);
static_assert(std::is_floating_point_v<const double> && !std::is_floating_point_v<int>);
static_assert(std::is_integral_v<bool> && !std::is_integral_v<float>);
extern "C" __global__ void probe(float* out) {{ out[0] = std::isnan(out[0]) ? 1.0f : 0.0f; }}
)",
      std::numeric_limits<int>::max(), std::numeric_limits<int>::lowest() + 1,
      std::numeric_limits<long>::max(), +std::numeric_limits<unsigned char>::max(),
      std::numeric_limits<short>::min(),
      std::bit_cast<unsigned>(std::numeric_limits<float>::infinity()),
      std::bit_cast<unsigned>(std::numeric_limits<float>::quiet_NaN()),
      std::bit_cast<unsigned long>(std::numeric_limits<double>::infinity()),
      std::bit_cast<unsigned>(std::numeric_limits<float>::max()),
      std::bit_cast<unsigned>(std::numeric_limits<float>::lowest()),
      std::bit_cast<unsigned long>(std::numeric_limits<double>::min()));
  CHECK(cubin_sm(compile_cuda(source).cubin) == 90);
}

TEST_CASE("nvrtc: a program that does not compile gives an ember::Error with NVRTC's log") {
  ScopedCacheDir scoped;
  const uint64_t before = nvrtc_compile_count();
  std::string broken = cuda_prelude() +
                       "extern \"C\" __global__ void broken(float* out) { out[0] = 1.0f }\n";
  try {
    compile_cuda(broken, {}, "fused_broken.cu");
    FAIL("compile_cuda accepted a syntax error");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK(message.find("NVRTC: cannot compile fused_broken.cu for sm_90") != std::string::npos);
    CHECK(message.find("fused_broken.cu(4): error: expected a \";\"") != std::string::npos);
    CHECK(message.find("   4 | extern \"C\" __global__ void broken") != std::string::npos);
  }
  CHECK(nvrtc_compile_count() == before + 1);
  // Nothing was published for the failed program, so the next attempt compiles again.
  CHECK(std::filesystem::is_empty(scoped.path() / "cuda"));
  CHECK_THROWS_AS(compile_cuda(broken), Error);
  CHECK(nvrtc_compile_count() == before + 2);
}

TEST_CASE("nvrtc: the second compile of a program is a disk-cache hit and does not run NVRTC") {
  ScopedCacheDir scoped;
  const uint64_t before = nvrtc_compile_count();
  CudaBinary first = compile_cuda(fused_program());
  CHECK(nvrtc_compile_count() == before + 1);
  CudaBinary second = compile_cuda(fused_program());
  CHECK(nvrtc_compile_count() == before + 1);
  CHECK(second.from_cache);
  CHECK(second.cubin == first.cubin);
  CHECK(second.ptx == first.ptx);
  // Every part of the key matters: other flags or other source text compile anew.
  compile_cuda(fused_program(), CudaTarget{.sm = 90, .extra_flags = {"-lineinfo"}});
  CHECK(nvrtc_compile_count() == before + 2);
  compile_cuda(fused_program() + "// a comment is a different program\n");
  CHECK(nvrtc_compile_count() == before + 3);
  CHECK(std::distance(std::filesystem::directory_iterator(scoped.path() / "cuda"), {}) == 6);
  // A cubin whose PTX was pruned is a miss, never half a binary.
  for (const auto& item : std::filesystem::directory_iterator(scoped.path() / "cuda")) {
    if (item.path().extension() == ".ptx") std::filesystem::remove(item.path());
  }
  CudaBinary again = compile_cuda(fused_program());
  CHECK_FALSE(again.from_cache);
  CHECK(nvrtc_compile_count() == before + 4);
  CHECK(again.ptx == first.ptx);
}

TEST_CASE("nvrtc: the embedded kernels/*.h are the sources and the options keep precise math") {
  bool found_functors = false;
  bool found_unary = false;
  for (const EmbeddedHeader& header : embedded_headers()) {
    if (header.name == "kernels/functors.h") {
      found_functors = header.text.find("#include \"kernels/unary_functors.h\"") != std::string_view::npos;
    }
    if (header.name == "kernels/unary_functors.h") {
      found_unary = header.text.find("struct GeluTanh") != std::string_view::npos;
    }
  }
  CHECK(found_functors);
  CHECK(found_unary);
  std::vector<std::string> options = nvrtc_options({});
  CHECK(options.at(0) == "-arch=sm_90");
  for (const std::string& option : options) CHECK(option.find("fast") == std::string::npos);
  CHECK(nvrtc_version().find('.') != std::string::npos);
}

TEST_CASE("cuda nvrtc: loaded kernels compute the fused expression like a float64 reference") {
  if (!ember::testing::cuda_or_skip()) return;
  ScopedCacheDir scoped;
  const Device gpu(DeviceType::CUDA, 0);
  CudaBinary binary = compile_cuda(fused_program());
  cuda::KernelLibrary library(gpu, binary.cubin, binary.sm, binary.ptx);
  CHECK_THROWS_WITH_AS(library.kernel("fused"), doctest::Contains("'fused'"), Error);

  const long n = 517;  // not a multiple of the block size: the tail is bounds-checked
  std::vector<float> a(n), b(n);
  for (long i = 0; i < n; ++i) {
    a[i] = static_cast<float>(std::sin(0.37 * i) * 4.0);
    b[i] = static_cast<float>(std::cos(0.11 * i + 0.5) * 5.0);
  }
  struct Case {
    const char* kernel;
    DType dtype;
    double tolerance;  // relative, with the same amount absolute near 0
  };
  for (Case test : {Case{"fused_f32", kFloat32, 4e-6}, Case{"fused_f64", kFloat64, 1e-13},
                    Case{"fused_bf16", kBFloat16, 1.0 / 128}, Case{"fused_f16", kFloat16, 1.0 / 1024}}) {
    CAPTURE(test.kernel);
    Tensor left = from_vector<float>(a, {n}).to(test.dtype).to(gpu);
    Tensor right = from_vector<float>(b, {n}).to(test.dtype).to(gpu);
    Tensor out = empty({n}, TensorOptions{.dtype = test.dtype, .device = gpu});
    void* left_data = left.raw_data_ptr();
    void* right_data = right.raw_data_ptr();
    void* out_data = out.raw_data_ptr();
    long count = n;
    void* arguments[] = {&left_data, &right_data, &out_data, &count};
    library.launch(library.kernel(test.kernel), cuda::Dim3{(n + 127) / 128}, cuda::Dim3{128},
                   arguments, cuda::current_stream(gpu));
    // Inputs as the kernel saw them (rounded to the storage type), results as float64.
    std::vector<double> x = left.to(kCPU).to(kFloat64).to_vector<double>();
    std::vector<double> y = right.to(kCPU).to(kFloat64).to_vector<double>();
    std::vector<double> got = out.to(kCPU).to(kFloat64).to_vector<double>();
    int mismatches = 0;
    for (long i = 0; i < n; ++i) {
      const double expected = reference(x[i], y[i]);
      if (!(std::abs(got[i] - expected) <= test.tolerance * (1.0 + std::abs(expected)))) {
        if (++mismatches <= 5) MESSAGE(i << ": " << got[i] << " vs " << expected);
      }
    }
    CHECK(mismatches == 0);
  }
  MESSAGE("loaded the " << std::string(library.loaded_from_ptx() ? "PTX" : "cubin"));
  // The per-process map loads a program once per device.
  auto loaded = load_cuda_program(fused_program(), gpu);
  CHECK(loaded == load_cuda_program(fused_program(), gpu));
  CHECK(loaded->kernel("fused_f32") != nullptr);
}

#endif  // EMBER_HAS_CUDA

}  // namespace test_nvrtc
