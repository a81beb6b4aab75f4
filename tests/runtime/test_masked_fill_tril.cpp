// masked_fill and tril/triu (runtime/functional_mask.cpp): values against hand-computed tensors,
// broadcasting both ways out of place and only the mask's way in place, dtypes, gradients by
// central differences, and errors naming the function, the values and the caller's line.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_masked_fill_tril {

using namespace ember;
using ember::testing::error_of;
using ember::testing::gradcheck_leaves;
using ember::testing::leaf;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

Tensor doubles(const std::vector<double>& values, const Dims& sizes) {
  return from_vector<double>(values, sizes);
}
Tensor flags(const std::vector<bool>& values, const Dims& sizes) { return from_vector<bool>(values, sizes); }

void check_refusal(const std::string& message, std::string_view expected, int line,
                   std::source_location caller = std::source_location::current()) {
  INFO(message);
  CHECK(message.find(expected) != std::string::npos);
  CHECK(names_line(message, line, caller));
}

// tril/triu by their definition, one float64 element at a time: (i, j) of each matrix is kept
// where j - i <= diagonal (lower) or >= diagonal.
std::vector<double> reference_triangle(const Tensor& a, int64_t diagonal, bool lower) {
  std::vector<double> values = values_of(a);
  const int64_t rows = a.size(-2), cols = a.size(-1);
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t i = static_cast<int64_t>(k) / cols % rows, j = static_cast<int64_t>(k) % cols;
    const bool kept = lower ? j - i <= diagonal : j - i >= diagonal;
    if (!kept) values[k] = 0.0;
  }
  return values;
}

}  // namespace

TEST_CASE("masked_fill: the value where the mask is true, with a scalar or a 0-d tensor") {
  const Tensor a = doubles({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor mask = flags({true, false, true, false, false, true}, {2, 3});
  CHECK(values_of(masked_fill(a, mask, -1.5)) == std::vector<double>{-1.5, 2, -1.5, 4, 5, -1.5});
  CHECK(values_of(a.masked_fill(mask, scalar_tensor(9.0, {.dtype = kFloat64}))) ==
        std::vector<double>{9, 2, 9, 4, 5, 9});
  CHECK(values_of(a) == std::vector<double>{1, 2, 3, 4, 5, 6});  // out of place
  // The mask broadcasts to the tensor, and out of place the tensor to the mask too (PyTorch's
  // masked_fill expands both).
  CHECK(values_of(masked_fill(a, flags({false, true, false}, {3}), 0.0)) == std::vector<double>{1, 0, 3, 4, 0, 6});
  const Tensor widened = masked_fill(doubles({1, 2, 3}, {3}), mask, 0.0);
  CHECK(widened.sizes() == Dims{2, 3});
  CHECK(values_of(widened) == std::vector<double>{0, 2, 0, 1, 2, 0});
  const Tensor column = masked_fill(doubles({1, 2}, {2, 1}), flags({true, false, false}, {3}), 7.0);
  CHECK(column.sizes() == Dims{2, 3});
  CHECK(values_of(column) == std::vector<double>{7, 1, 1, 7, 2, 2});
  CHECK(masked_fill(zeros({0, 3}), flags({true, true, false}, {3}), 1.0).sizes() == Dims{0, 3});
}

TEST_CASE("masked_fill: the result keeps the tensor's dtype, the value converted as PyTorch converts it") {
  const Tensor integers = from_vector<int64_t>({10, 20, 30}, {3});
  const Tensor mask = flags({true, false, true}, {3});
  Tensor filled = masked_fill(integers, mask, 2.7);
  CHECK(filled.dtype() == kInt64);
  CHECK(filled.to_vector<int64_t>() == std::vector<int64_t>{2, 20, 2});
  CHECK(masked_fill(integers, mask, -2.7).to_vector<int64_t>() == std::vector<int64_t>{-2, 20, -2});
  CHECK(masked_fill(integers, mask, scalar_tensor(3.9, {.dtype = kFloat64})).to_vector<int64_t>() ==
        std::vector<int64_t>{3, 20, 3});
  const Tensor booleans = flags({false, true, false}, {3});
  CHECK(masked_fill(booleans, mask, 1.0).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(masked_fill(booleans, mask, 0.0).to_vector<bool>() == std::vector<bool>{false, true, false});
  const Tensor halves = masked_fill(ones({3}, {.dtype = kFloat32}), mask, scalar_tensor(0.25, {.dtype = kFloat64}));
  CHECK(halves.dtype() == kFloat32);
  CHECK(halves.to_vector<float>() == std::vector<float>{0.25f, 1.0f, 0.25f});
  const Tensor with_nan = masked_fill(ones({3}), mask, std::numeric_limits<double>::quiet_NaN());
  CHECK(std::isnan(with_nan.to_vector<float>()[0]));
  CHECK(with_nan.to_vector<float>()[1] == 1.0f);
}

TEST_CASE("masked_fill_: in place, the mask broadcasting to the tensor, a view writing through to its base") {
  Tensor a = doubles({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor& same = a.masked_fill_(flags({false, true, true}, {3}), -1.0);
  CHECK(&same == &a);
  CHECK(values_of(a) == std::vector<double>{1, -1, -1, 4, -1, -1});
  Tensor row = a.select(0, 1);
  masked_fill_(row, flags({true, false, false}, {3}), scalar_tensor(8.0, {.dtype = kFloat64}));
  CHECK(values_of(a) == std::vector<double>{1, -1, -1, 8, -1, -1});
  Tensor integers = from_vector<int32_t>({1, 2, 3}, {3});
  integers.masked_fill_(flags({true, false, false}, {3}), 5.0);
  CHECK(integers.to_vector<int32_t>() == std::vector<int32_t>{5, 2, 3});
}

TEST_CASE("masked_fill, masked_fill_: gradients reach the tensor (zero where filled) and a 0-d value") {
  const Tensor mask = flags({true, false, false, true, true, false}, {2, 3});
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return masked_fill(in[0].exp(), mask, 2.0); },
                   {leaf({2, 3}, 1)});
  gradcheck_leaves([&](const std::vector<Tensor>& in) { return masked_fill(in[0], flags({false, true, true}, {3}), in[1]); },
            {leaf({4, 3}, 2), leaf({}, 3)});
  gradcheck_leaves([&](const std::vector<Tensor>& in) {  // broadcast: the tensor gets the sum over the mask's rows
    return masked_fill(in[0], mask, in[1]);
  }, {leaf({3}, 4), leaf({}, 5)});
  gradcheck_leaves([&](const std::vector<Tensor>& in) {
    Tensor copy = in[0].mul(1.0);
    copy.masked_fill_(mask, in[1]);
    return copy.mul(copy);
  }, {leaf({2, 3}, 6), leaf({}, 7)});
  const Tensor x = leaf({2, 3}, 8);
  masked_fill(x, mask, 4.0).sum().backward();
  CHECK(values_of(x.grad()) == std::vector<double>{0, 1, 1, 0, 0, 1});
}

TEST_CASE("masked_fill, masked_fill_: errors name the function, the values and the caller's line") {
  const Tensor a = zeros({2, 3});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { masked_fill(a, ones({2, 3}, {.dtype = kInt64}), 1.0); });
  check_refusal(message, "masked_fill: expected a bool mask, got int64 (mask shape [2, 3])", line);
  line = __LINE__ + 1;
  message = error_of([&] { a.masked_fill(ones({2}, {.dtype = kBool}), 1.0); });
  check_refusal(message, "masked_fill: shapes [2, 3] and [2] cannot be broadcast", line);
  line = __LINE__ + 1;
  message = error_of([&] { masked_fill(a, ones({3}, {.dtype = kBool}), ones({1})); });
  check_refusal(message, "masked_fill: expects a 0-d value tensor, got shape [1]", line);
  line = __LINE__ + 1;
  message = error_of([&] { masked_fill(a.to(kFloat16), ones({3}, {.dtype = kBool}), -1e9); });
  check_refusal(message, "masked_fill: value -1000000000 cannot be stored in a float16 tensor without overflow", line);
  line = __LINE__ + 1;
  message = error_of([&] { masked_fill(a.to(kInt32), ones({3}, {.dtype = kBool}), 1e10); });
  check_refusal(message, "masked_fill: value 10000000000 cannot be stored in an int32 tensor", line);
  Tensor row = zeros({3});
  line = __LINE__ + 1;
  message = error_of([&] { row.masked_fill_(ones({2, 3}, {.dtype = kBool}), 1.0); });
  check_refusal(message, "masked_fill_: mask of shape [2, 3] does not broadcast to the tensor's shape [3]", line);
  line = __LINE__ + 1;
  message = error_of([&] { row.masked_fill_(ones({3}, {.dtype = kFloat32}), 1.0); });
  check_refusal(message, "masked_fill_: expected a bool mask, got float32", line);
  Tensor parameter = leaf({3}, 9);
  line = __LINE__ + 1;
  message = error_of([&] { parameter.masked_fill_(ones({3}, {.dtype = kBool}), 1.0); });
  check_refusal(message, "masked_fill_: a leaf tensor that requires grad (shape [3]) is used in an in-place", line);
  {
    NoGradGuard no_grad;
    parameter.masked_fill_(flags({false, true, false}, {3}), 1.0);
  }
  CHECK(values_of(parameter)[1] == 1.0);
}

TEST_CASE("tril, triu: the triangles of a matrix, for diagonals below, on and above the main one") {
  const Tensor m = doubles({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4});
  CHECK(values_of(tril(m)) == std::vector<double>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  CHECK(values_of(m.tril(-1)) == std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
  CHECK(values_of(tril(m, 2)) == std::vector<double>{1, 2, 3, 0, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(values_of(triu(m)) == std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  CHECK(values_of(m.triu(1)) == std::vector<double>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
  CHECK(values_of(triu(m, -1)) == std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  for (int64_t diagonal = -5; diagonal <= 6; ++diagonal) {
    INFO("diagonal ", diagonal);
    CHECK(values_of(tril(m, diagonal)) == reference_triangle(m, diagonal, true));
    CHECK(values_of(triu(m, diagonal)) == reference_triangle(m, diagonal, false));
  }
  // Past the matrix: everything or nothing, also at the int64 extremes.
  CHECK(values_of(tril(m, std::numeric_limits<int64_t>::max())) == values_of(m));
  CHECK(values_of(tril(m, std::numeric_limits<int64_t>::min())) == std::vector<double>(12, 0.0));
  CHECK(values_of(triu(m, std::numeric_limits<int64_t>::min())) == values_of(m));
  CHECK(values_of(triu(m, std::numeric_limits<int64_t>::max())) == std::vector<double>(12, 0.0));
}

TEST_CASE("tril, triu: batched over the leading dims, strided inputs, empty matrices, any dtype") {
  const Tensor batch = small_tensor({2, 3, 4, 5}, 11);
  const Tensor transposed = batch.transpose(-1, -2);  // [2, 3, 5, 4], not contiguous
  for (int64_t diagonal : {-2, 0, 3}) {
    CHECK(values_of(tril(batch, diagonal)) == reference_triangle(batch, diagonal, true));
    CHECK(values_of(triu(transposed, diagonal)) == reference_triangle(transposed, diagonal, false));
  }
  CHECK(tril(zeros({0, 3})).sizes() == Dims{0, 3});
  CHECK(triu(zeros({2, 3, 0})).sizes() == Dims{2, 3, 0});
  CHECK(tril(zeros({4, 0, 2}), -1).sizes() == Dims{4, 0, 2});
  const Tensor integers = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  CHECK(tril(integers).dtype() == kInt64);
  CHECK(tril(integers).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 3, 4});
  const Tensor truths = ones({2, 3}, {.dtype = kBool});
  CHECK(triu(truths, 1).dtype() == kBool);
  CHECK(triu(truths, 1).to_vector<bool>() == std::vector<bool>{false, true, true, false, false, true});
  // Cut elements are 0 whatever they held, NaN included.
  const Tensor nans = full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  const std::vector<float> lower = tril(nans).to_vector<float>();
  CHECK(lower[1] == 0.0f);
  CHECK(std::isnan(lower[2]));
}

TEST_CASE("tril_, triu_: in place, on tensors and views") {
  Tensor m = doubles({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor& same = m.tril_();
  CHECK(&same == &m);
  CHECK(values_of(m) == std::vector<double>{1, 0, 0, 4, 5, 0, 7, 8, 9});
  Tensor stacked = doubles({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Tensor bottom = stacked.slice(0, 2, 4);  // rows [5, 6], [7, 8]
  triu_(bottom, 1);
  CHECK(values_of(stacked) == std::vector<double>{1, 2, 3, 4, 0, 6, 0, 0});
}

TEST_CASE("tril, triu, tril_, triu_: the gradient is the same triangle of the output's gradient") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return tril(in[0], 1).mul(in[0]); }, {leaf({2, 3, 4}, 12)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return triu(in[0].t(), -1).exp(); }, {leaf({4, 3}, 13)});
  gradcheck_leaves([](const std::vector<Tensor>& in) {
    Tensor copy = in[0].mul(2.0);
    copy.triu_(0);
    copy.tril_(1);  // a band: the main diagonal and the one above it
    return copy.mul(copy);
  }, {leaf({4, 4}, 14)});
  const Tensor x = leaf({2, 3}, 15);
  tril(x).sum().backward();
  CHECK(values_of(x.grad()) == std::vector<double>{1, 0, 0, 1, 1, 0});
}

TEST_CASE("tril, triu: errors name the function, the values and the caller's line") {
  int line = __LINE__ + 1;
  std::string message = error_of([] { tril(zeros({3})); });
  check_refusal(message, "tril: expects a tensor with at least 2 dims, got shape [3]", line);
  line = __LINE__ + 1;
  message = error_of([] { triu(scalar_tensor(1.0), 1); });
  check_refusal(message, "triu: expects a tensor with at least 2 dims, got shape []", line);
  Tensor vector = zeros({4});
  line = __LINE__ + 1;
  message = error_of([&] { vector.tril_(); });
  check_refusal(message, "tril_: expects a tensor with at least 2 dims, got shape [4]", line);
  Tensor parameter = leaf({2, 2}, 16);
  line = __LINE__ + 1;
  message = error_of([&] { triu_(parameter); });
  check_refusal(message, "triu_: a leaf tensor that requires grad (shape [2, 2]) is used in an in-place", line);
}

}  // namespace test_masked_fill_tril
