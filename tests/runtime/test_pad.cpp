// pad (runtime/functional_pad.cpp) against a loop that reads each output element's source the
// way PyTorch's modes define it: constant (with cropping), reflect, replicate and circular, over
// 1-3 padded dims, any dtype, finite-difference gradients (which sum into the copied sources), and
// the errors.
#include <doctest/doctest.h>

#include <algorithm>

#include "error_of.h"
#include "numeric_check.h"

namespace test_pad {

using namespace ember;
using namespace ember::testing;

namespace {

// The padded tensor's values by walking its index space: each padded dim maps an output position
// to a source position (or to the fill value for constant mode outside the input).
std::vector<double> pad_reference(const Tensor& a, const std::vector<int64_t>& pad, PadMode mode, double value) {
  const std::vector<double> input = values_of(a);
  const Dims in = a.sizes();
  Dims out = in;
  const int padded = static_cast<int>(pad.size() / 2);
  for (int k = 0; k < padded; ++k) out[in.size() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
  int64_t count = 1;
  for (int64_t size : out) count *= size;
  std::vector<double> result;
  for (int64_t flat = 0; flat < count; ++flat) {
    std::vector<int64_t> index = unravel(flat, out);
    bool inside = true;
    for (int k = 0; k < padded; ++k) {
      const int dim = in.size() - 1 - k;
      const int64_t n = in[dim];
      int64_t i = index[dim] - pad[2 * k];
      if (mode == PadMode::Reflect) i = i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
      if (mode == PadMode::Replicate) i = std::clamp<int64_t>(i, 0, n - 1);
      if (mode == PadMode::Circular) i = ((i % n) + n) % n;
      inside = inside && i >= 0 && i < n;
      index[dim] = i;
    }
    int64_t source = 0;
    for (int d = 0; d < in.size(); ++d) source = source * in[d] + (inside ? index[d] : 0);
    result.push_back(inside ? input[source] : value);
  }
  return result;
}

}  // namespace

TEST_CASE("pad: constant mode pads, crops with negative pads and fills with the value, any dtype") {
  const Tensor a = random_tensor({2, 3, 4}, 301);
  for (const std::vector<int64_t>& pad :
       std::vector<std::vector<int64_t>>{{1, 2}, {0, 0, 2, 1}, {-1, 2, 1, -2}, {1, 1, 1, 1, 1, 1}, {-2, -1}}) {
    INFO("pad ", fmt::format("{}", fmt::join(pad, ", ")));
    check_close(ember::pad(a, pad), pad_reference(a, pad, PadMode::Constant, 0.0), 0.0);
    check_close(ember::pad(a, pad, PadMode::Constant, 2.5), pad_reference(a, pad, PadMode::Constant, 2.5), 0.0);
  }
  const Tensor integers = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  const Tensor padded = ember::pad(integers, {1, 0}, PadMode::Constant, 7.0);
  CHECK(padded.dtype() == kInt64);
  CHECK(padded.to_vector<int64_t>() == std::vector<int64_t>{7, 1, 2, 7, 3, 4});
  gradcheck(
      [](const std::vector<Tensor>& t) {
        return ember::pad(t[0], {2, -1, 1, 1}, PadMode::Constant, 3.0);
      },
      {random_tensor({2, 3, 4}, 302)});
}

TEST_CASE("pad: reflect, replicate and circular modes over one, two and three dims") {
  struct Shape {
    Dims sizes;
    std::vector<int64_t> pad;
  };
  const std::vector<Shape> shapes{{{2, 5}, {2, 3}},
                                  {{1, 2, 5}, {4, 1}},
                                  {{2, 3, 4}, {1, 2, 2, 0}},
                                  {{1, 2, 3, 4}, {3, 0, 1, 2}},
                                  {{2, 3, 3, 4}, {1, 1, 2, 2, 1, 0}}};
  for (const PadMode mode : {PadMode::Reflect, PadMode::Replicate, PadMode::Circular})
    for (const Shape& shape : shapes) {
      INFO("mode ", static_cast<int>(mode), " shape ", shape.sizes);
      const Tensor a = random_tensor(shape.sizes, 311);
      check_close(ember::pad(a, shape.pad, mode), pad_reference(a, shape.pad, mode, 0.0), 0.0);
    }
  // Circular mode may wrap a whole dim's length; integer tensors pad too.
  const Tensor a = from_vector<int64_t>({1, 2, 3}, {1, 3});
  CHECK(ember::pad(a, {3, 1}, PadMode::Circular).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 1, 2, 3, 1});
  CHECK(ember::pad(a, {2, 2}, PadMode::Reflect).to_vector<int64_t>() == std::vector<int64_t>{3, 2, 1, 2, 3, 2, 1});
  CHECK(ember::pad(a, {2, 1}, PadMode::Replicate).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 2, 3, 3});
  for (const PadMode mode : {PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    INFO("mode ", static_cast<int>(mode));
    gradcheck(
        [mode](const std::vector<Tensor>& t) {
          return ember::pad(t[0], {2, 1, 1, 2}, mode);
        },
        {random_tensor({1, 3, 4}, 312)});
  }
}

TEST_CASE("pad refuses bad padding by name") {
  const Tensor a = random_tensor({2, 3, 4}, 321);
  CHECK_THROWS_WITH_AS(ember::pad(a, {1, 2, 3}), doctest::Contains("pad: the padding length must be divisible by 2"),
                       Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {1, 1, 1, 1, 1, 1, 1, 1}),
                       doctest::Contains("at most twice the input's number of dims, but got padding length 8"), Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {-3, -2}), doctest::Contains("resulted in a negative output size"), Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {4, 0}, PadMode::Reflect),
                       doctest::Contains("reflect mode needs padding below the size of dimension 2 (4)"), Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {5, 0}, PadMode::Circular),
                       doctest::Contains("circular mode needs padding at most the size of dimension 2"), Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {-1, 0}, PadMode::Replicate),
                       doctest::Contains("replicate mode takes non-negative padding"), Error);
  CHECK_THROWS_WITH_AS(ember::pad(random_tensor({4}, 322), {1, 1}, PadMode::Reflect),
                       doctest::Contains("reflect mode pads the last 1, 2 or 3 dims of a tensor with one or two more"),
                       Error);
  CHECK_THROWS_WITH_AS(ember::pad(a, {1, 1}, PadMode::Reflect, 1.0),
                       doctest::Contains("a padding value applies to constant mode only"), Error);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { ember::pad(a, {1}); });
  CHECK(names_line(message, line));
}

}  // namespace test_pad
