// `--micro small_gemm`: the seed step's five products through the small GEMM kernel, with the
// layouts the step hands it, next to this core's multiply-add peak at the build's vector width:
// the floor the seed step's GEMM time is measured against.
#include <algorithm>
#include <chrono>

#include "kernels/cpu/simd_vector.h"
#include "kernels/cpu/small_gemm.h"
#include "tools/ember-bench/bench.h"

namespace ember::bench {

namespace {

using Clock = std::chrono::steady_clock;
namespace simd = cpu::simd;

// One product C = A B as the seed step issues it: A(i, p) = a[i * a_row + p * a_col], likewise B.
struct SeedProduct {
  const char* name;
  int64_t m, n, k;
  int64_t a_row, a_col, b_row, b_col;
  bool bias;
};

// The seed MLP (100 -> 256 -> 10, batch 32): linear computes x W^T, its backward dY W and dY^T x.
constexpr SeedProduct kSeedProducts[] = {
    {"layer 1 forward: x [32,100] W1^T", 32, 256, 100, 100, 1, 1, 100, true},
    {"layer 2 forward: h [32,256] W2^T", 32, 10, 256, 256, 1, 1, 256, true},
    {"layer 2 grad input: dY [32,10] W2", 32, 256, 10, 10, 1, 256, 1, false},
    {"layer 2 grad weight: dY^T h", 10, 256, 32, 1, 10, 256, 1, false},
    {"layer 1 grad weight: dZ^T x", 256, 100, 32, 1, 256, 100, 1, false},
};

// Vector registers of the ISA this file is compiled for: x86-64 has 16 (XMM, or YMM with AVX),
// AVX-512 and AArch64 have 32.
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int kVectorRegisters = 32;
#else
constexpr int kVectorRegisters = 16;
#endif
// Independent chains in flight: two FMA units of 4 cycles' latency need 8, and without FMA a
// multiply then an add (about 8 cycles per step, one step issued per cycle) need 8 as well. The chains and
// the two constants x and y must fit the register file: with 16 registers, 16 chains spilled to
// the stack, a load and a store around every step, and the "peak" fell below the products
// (fraction_of_peak 1.2-3.2 in an EMBER_NATIVE=OFF, SSE build). On the dev VM, per chain count:
// SSE 12: 54, 14: 58, 16: 31 GFLOP/s; AVX2+FMA 12: 120, 14: 120, 16: 73; AVX-512 14-24: ~232.
constexpr int kAccumulators = std::min(16, kVectorRegisters - 2);

// Multiply-adds per second on one core with nothing but registers: kAccumulators independent
// accumulators at the build's vector width. Each step is sum = sum * x + y, which no compiler can
// factor into fewer operations; with x < 1 the sums settle near y / (1 - x), far from overflow
// and from subnormals.
double fma_peak_gflop_per_s() {
  using simd::Vector;
  Vector<float> sums[kAccumulators];
  // Different starting values, or the compiler sees copies of one chain and keeps one.
#pragma GCC unroll 16
  for (int i = 0; i < kAccumulators; ++i) sums[i] = Vector<float>{} + static_cast<float>(i);
  const Vector<float> x = Vector<float>{} + 0.999f;
  const Vector<float> y = Vector<float>{} + 0.5f;
  constexpr int64_t kSteps = 10'000'000;
  double best = 0.0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Clock::time_point start = Clock::now();
    for (int64_t step = 0; step < kSteps; ++step) {
      // Unrolled before GCC decides where `sums` lives: it then keeps them all in registers.
#pragma GCC unroll 16
      for (int i = 0; i < kAccumulators; ++i) sums[i] = sums[i] * x + y;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, 2.0 * kAccumulators * simd::Lanes<float>::kCount * kSteps / seconds / 1e9);
  }
  // Keeps the sums alive. Lane 0 only: reading whole vectors through a lane-folding function
  // made GCC keep the array in memory, a load and a store around every multiply-add (half the
  // peak).
  float total = 0;
#pragma GCC unroll 16
  for (int i = 0; i < kAccumulators; ++i) total += sums[i][0];
  if (total == 0) best = 0;  // never true
  return best;
}

}  // namespace

nlohmann::json run_small_gemm_micro(const RunOptions& options) {
  const double peak = fma_peak_gflop_per_s();
  // Operands big enough for every product's layout (at most 256 x 100 elements each).
  constexpr int64_t kElements = 1 << 16;
  const std::vector<float> a = randn({kElements}, {.device = kCPU}).to_vector<float>();
  const std::vector<float> b = randn({kElements}, {.device = kCPU}).to_vector<float>();
  const std::vector<float> bias = randn({256}, {.device = kCPU}).to_vector<float>();
  std::vector<float> c(kElements);
  nlohmann::json products = nlohmann::json::array();
  double total_us = 0.0;
  double total_flop = 0.0;
  const int repeats = std::max(options.steps, 1) * 10;
  for (const SeedProduct& product : kSeedProducts) {
    auto run = [&] {
      cpu::small_gemm<float>({a.data(), product.a_row, product.a_col}, {b.data(), product.b_row, product.b_col},
                             c.data(), product.n, product.m, product.n, product.k,
                             product.bias ? bias.data() : nullptr);
    };
    for (int i = 0; i < 100; ++i) run();
    StepTimes times;
    for (int batch = 0; batch < 21; ++batch) {
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < repeats; ++i) run();
      times.step_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / repeats);
    }
    const double flop = 2.0 * product.m * product.n * product.k;
    const double us = times.median();
    total_us += us;
    total_flop += flop;
    products.push_back({{"product", product.name}, {"m", product.m}, {"n", product.n}, {"k", product.k},
                        {"us", us}, {"gflop_per_s", flop / us / 1e3}, {"fraction_of_peak", flop / us / 1e3 / peak}});
  }
  return {{"benchmark", "small_gemm"}, {"threads", 1}, {"vector_bytes", simd::kVectorBytes},
          {"fma_peak_gflop_per_s", peak}, {"fma_peak_accumulators", kAccumulators}, {"products", products},
          {"total_us", total_us}, {"total_gflop_per_s", total_flop / total_us / 1e3},
          {"total_fraction_of_peak", total_flop / total_us / 1e3 / peak}};
}

}  // namespace ember::bench
