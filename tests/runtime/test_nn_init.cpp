// nn::init edges, against PyTorch's rules: uniform_ refuses bounds whose draws would not be finite
// values of the dtype, draws lie in [low, high) (never high, in any dtype) and stay uniform, and
// initialising a zero-element tensor is a no-op; constant_, zeros_ and ones_ fill an expanded
// tensor, as fill_ does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/ember.h"

namespace test_nn_init {

using namespace ember;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> values_of(const Tensor& tensor) { return tensor.to(kFloat64).to_vector<double>(); }

// Fills `tensor` with 0.125 and checks that uniform_(low, high) is refused with `message`, the
// tensor untouched.
void check_refused(DType dtype, double low, double high, const char* message) {
  CAPTURE(dtype_name(dtype));
  CAPTURE(low);
  CAPTURE(high);
  Tensor tensor = full({5}, 0.125, {.dtype = dtype});
  CHECK_THROWS_WITH_AS(nn::init::uniform_(tensor, low, high), doctest::Contains(message), Error);
  CHECK(values_of(tensor) == std::vector<double>(5, 0.125));
}

}  // namespace

TEST_CASE("uniform_ refuses infinite bounds and ranges wider than the dtype's largest value") {
  // torch: "from is out of bounds for float", "uniform_ expects to-from <= numeric_limits::max()".
  check_refused(kFloat32, -kInf, 0.0, "nn::init::uniform_: low (-inf) and high (0) must be finite values of float32");
  check_refused(kFloat32, 0.0, kInf, "nn::init::uniform_: low (0) and high (inf) must be finite values of float32");
  check_refused(kFloat64, std::nan(""), 1.0, "must be finite values of float64");
  check_refused(kFloat16, 0.0, 70000.0, "high (70000) must be finite values of float16 (at most 65504 in magnitude)");
  check_refused(kFloat64, -1e308, 1e308,
                "nn::init::uniform_: high - low (inf) exceeds the largest float64 (1.7976931348623157e+308)");
  check_refused(kFloat32, -3e38, 3e38, "high - low (6e+38) exceeds the largest float32 (3.4028234663852886e+38)");
  check_refused(kFloat16, -40000.0, 40000.0, "high - low (80000) exceeds the largest float16 (65504)");
  check_refused(kBFloat16, 2.0, 1.0, "nn::init::uniform_: low (2) must not exceed high (1)");

  // The widest allowed ranges give finite values inside them.
  Tensor half = empty({4096}, {.dtype = kFloat16});
  nn::init::uniform_(half, -30000.0, 30000.0);
  for (double value : values_of(half)) CHECK((value >= -30000.0 && value < 30000.0));
  Tensor wide = empty({4096}, {.dtype = kFloat64});
  nn::init::uniform_(wide, -8e307, 8e307);
  for (double value : values_of(wide)) CHECK((value >= -8e307 && value < 8e307));
  // low == high fills low, as torch does.
  Tensor constant = empty({3});
  nn::init::uniform_(constant, 0.75, 0.75);
  CHECK(values_of(constant) == std::vector<double>(3, 0.75));
}

TEST_CASE("uniform_ never returns high in float16, bfloat16 or float32, and stays uniform") {
  struct Case {
    DType dtype;
    double low, high;
  };
  const int64_t count = int64_t{1} << 20;
  // The narrow float32 range holds 8 values, 1 + k 2^-23: a finer draw rounds up to high 1/16 of the time.
  const double narrow_high = 1.0 + std::ldexp(1.0, -20);
  for (const Case& c : {Case{kFloat16, -1.0, 1.0}, Case{kBFloat16, 0.0, 1.0}, Case{kFloat32, 0.0, 1.0},
                        Case{kFloat32, 1.0, narrow_high}, Case{kBFloat16, -0.3, 0.3}}) {
    CAPTURE(dtype_name(c.dtype));
    CAPTURE(c.low);
    CAPTURE(c.high);
    Generator generator(2024);
    Tensor tensor = empty({count}, {.dtype = c.dtype});
    nn::init::uniform_(tensor, c.low, c.high, &generator);
    const std::vector<double> values = values_of(tensor);
    int64_t at_or_above_high = 0;
    int64_t below_low = 0;
    std::vector<int64_t> bins(16, 0);
    double mean = 0.0, square = 0.0;
    const double width = c.high - c.low;
    for (double value : values) {
      at_or_above_high += value >= c.high ? 1 : 0;
      below_low += value < c.low - width * 1e-2 ? 1 : 0;  // low itself may round down by half an ulp
      const double unit = (value - c.low) / width;
      bins[static_cast<size_t>(std::clamp(unit * 16.0, 0.0, 15.0))] += 1;
      mean += unit / count;
      square += unit * unit / count;
    }
    CHECK(at_or_above_high == 0);
    CHECK(below_low == 0);
    if (c.high == narrow_high) {
      CHECK(*std::max_element(values.begin(), values.end()) == 1.0 + 7 * std::ldexp(1.0, -23));
      continue;  // 8 values: the bins below are for continuous-looking ranges
    }
    // U(0, 1) after rescaling: mean 1/2, variance 1/12, 1/16 in each bin (5 standard errors).
    CHECK(std::abs(mean - 0.5) < 5 * std::sqrt(1.0 / 12.0 / count) + 1.0 / 256);
    CHECK(std::abs(square - mean * mean - 1.0 / 12.0) < 0.002);
    // The draws sit on a grid of 256 or more values; rounding into the dtype moves at most one of
    // them across each bin edge.
    for (int64_t in_bin : bins) CHECK(std::abs(in_bin - count / 16.0) < 5 * std::sqrt(count / 16.0) + count / 128.0);
  }
}

TEST_CASE("initialising a zero-element tensor is a no-op, as torch.nn.init's is") {
  const std::vector<Dims> shapes{{4, 0, 3}, {4, 0}, {0, 4}, {0, 0}, {0}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    CAPTURE(i);
    Tensor tensor = empty(shapes[i]);
    CHECK(nn::init::uniform_(tensor, -1.0, 1.0).is_same(tensor));
    CHECK(nn::init::normal_(tensor).is_same(tensor));
    CHECK(nn::init::constant_(tensor, 2.0).is_same(tensor));
    // torch's kaiming_* return before computing the fans; one-dimensional tensors have none.
    CHECK(nn::init::kaiming_uniform_(tensor).is_same(tensor));
    CHECK(nn::init::kaiming_normal_(tensor, 0.0, nn::init::FanMode::FanOut).is_same(tensor));
    // xavier_* compute them first (test_nn_pytorch_parity.cpp): a no-op where the fans sum above 0.
    if (tensor.dim() >= 2 && shapes[i][0] + shapes[i][1] > 0) {
      CHECK(nn::init::xavier_uniform_(tensor).is_same(tensor));
      CHECK(nn::init::xavier_normal_(tensor).is_same(tensor));
    }
    CHECK(tensor.numel() == 0);
  }
  // A tensor with elements still needs two dims for its fans.
  CHECK_THROWS_WITH_AS(nn::init::kaiming_uniform_(empty({3})),
                       doctest::Contains("nn::init::kaiming_uniform_: fan in and fan out need a tensor with at least 2 "
                                         "dims, got shape [3]"),
                       Error);
}

TEST_CASE("constant_, zeros_ and ones_ fill an expanded tensor, as torch.nn.init's fill_ does") {
  Tensor row = arange(0.0, 3.0, 1.0, {.dtype = kFloat32}).view({1, 3});
  const Tensor expanded = row.expand({4, 3});
  CHECK(nn::init::constant_(expanded, 2.5).is_same(expanded));
  CHECK(values_of(row) == std::vector<double>{2.5, 2.5, 2.5});
  nn::init::zeros_(expanded);
  CHECK(values_of(row) == std::vector<double>{0, 0, 0});
  nn::init::ones_(expanded);
  CHECK(values_of(expanded) == std::vector<double>(12, 1.0));
  // The random initialisers would draw one value per repeat: still refused, naming the function.
  CHECK_THROWS_WITH_AS(nn::init::uniform_(expanded), doctest::Contains("nn::init::uniform_: the tensor (shape [4, 3], "
                                                                       "strides [0, 1]) is expanded"), Error);
  CHECK(values_of(row) == std::vector<double>{1, 1, 1});
}

}  // namespace test_nn_init
