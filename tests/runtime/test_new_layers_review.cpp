// Review cases for the new math, activation and nn-layer composites where ember differed from
// PyTorch 2.x: each expected value is computed here, independently of ember.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_new_layers_review {

using namespace ember;
using namespace ember::testing;
namespace F = ember::nn::functional;

namespace {

// float -> bfloat16 -> float, round to nearest even (finite inputs).
float round_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  return std::bit_cast<float>(rounded);
}

float round_to(DType dtype, float value) {
  if (dtype == kBFloat16) return round_to_bfloat16(value);
  return static_cast<float>(static_cast<_Float16>(value));  // IEEE binary16, nearest even
}

// Values on a fine grid of [-4, 4], each exactly representable in bf16 and fp16.
std::vector<double> grid_values() {
  std::vector<double> values;
  for (int i = -256; i <= 256; ++i) values.push_back(i / 64.0);
  return values;
}

}  // namespace

// torch.nn.functional.softsign and tanhshrink are Python composites (input / (input.abs() + 1),
// input - input.tanh()), and so are libtorch's: on 16-bit inputs each op rounds its result to the
// input's dtype, (|x| + 1) and tanh(x) included. The native activations compute in float32 and
// round once; these two must not.
TEST_CASE("softsign and tanhshrink on bf16 and fp16 round each step as PyTorch's composites do") {
  for (const DType dtype : {kBFloat16, kFloat16}) {
    INFO("dtype ", dtype);
    const std::vector<double> inputs = grid_values();
    std::vector<double> softsign_expected, tanhshrink_expected;
    for (const double input : inputs) {
      const float x = static_cast<float>(input);
      const float denominator = round_to(dtype, std::abs(x) + 1.0f);
      softsign_expected.push_back(round_to(dtype, x / denominator));
      const float tanh_x = round_to(dtype, std::tanh(x));
      tanhshrink_expected.push_back(round_to(dtype, x - tanh_x));
    }
    const Tensor x = doubles(inputs).to(dtype);
    const Tensor softsign = F::softsign(x);
    const Tensor tanhshrink = F::tanhshrink(x);
    CHECK(softsign.dtype() == dtype);
    CHECK(tanhshrink.dtype() == dtype);
    CHECK(values_of(softsign) == softsign_expected);
    CHECK(values_of(tanhshrink) == tanhshrink_expected);
  }
  // One case by hand: 1 + 2^-7 in bf16. |x| + 1 = 2 + 2^-7 rounds (a tie) to 2, so PyTorch gives
  // x / 2 = 0.50390625; rounding once from float32 would give 0.5.
  CHECK(values_of(F::softsign(doubles({1.0078125}).to(kBFloat16))) == std::vector<double>{0.50390625});
}

// PyTorch's softsign and tanhshrink, being composites, take integer tensors: abs, + 1 and true
// division (or tanh and a promoting subtraction) give float32, the default dtype. Bool is refused
// there by abs and by bool subtraction.
TEST_CASE("softsign and tanhshrink take integer inputs and return float32, as PyTorch's composites") {
  const std::vector<int64_t> values = {-7, -3, 0, 1, 2, 100};
  for (const DType dtype : {kInt64, kInt32}) {
    INFO("dtype ", dtype);
    const Tensor x = from_vector<int64_t>(values).to(dtype);
    const Tensor softsign = F::softsign(x);
    const Tensor tanhshrink = F::tanhshrink(x);
    REQUIRE(softsign.dtype() == kFloat32);
    REQUIRE(tanhshrink.dtype() == kFloat32);
    const std::vector<double> softsign_values = values_of(softsign);
    const std::vector<double> tanhshrink_values = values_of(tanhshrink);
    for (size_t i = 0; i < values.size(); ++i) {
      const float value = static_cast<float>(values[i]);
      CHECK(softsign_values[i] == value / (std::abs(value) + 1.0f));
      const double expected = values[i] - std::tanh(static_cast<double>(values[i]));
      CHECK(std::abs(tanhshrink_values[i] - expected) <= 1e-6 * (1.0 + std::abs(expected)));
    }
  }
  const Tensor flags = from_vector<bool>({true, false});
  CHECK_THROWS_AS(F::softsign(flags), Error);
  CHECK_THROWS_AS(F::tanhshrink(flags), Error);
}

}  // namespace test_new_layers_review
