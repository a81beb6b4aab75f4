// nonzero, masked_select, unique, unique_consecutive, bincount, histc, searchsorted and bucketize
// (runtime/functional_select.h) against plain loops over the values: every dtype PyTorch takes (and
// the refusals of the others), NaN, size-0, 0-d and non-contiguous inputs, masked_select's gradient
// by finite differences, each error message, and the host read each op reports to the modes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "host_read_recorder.h"
#include "runtime/dispatch.h"
#include "runtime/ember.h"

namespace test_select_ops {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr DType kAllDTypes[] = {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64, kInt32, kBool};

TensorOptions on(DType dtype) { return dtype_options(dtype); }

// Small whole numbers in [-2, 2] (many zeros and ties, exact in every dtype); floating dtypes also
// get a NaN at every seventh element and -0.0 at every eleventh. Bool keeps zero / nonzero.
Tensor test_tensor(const Dims& sizes, uint32_t seed, DType dtype) {
  std::vector<double> values = small_values(sizes.product(), seed);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::round(values[i] * 2.4);
    if (is_floating(dtype) && i % 7 == 3) values[i] = NAN;
    if (is_floating(dtype) && i % 11 == 5) values[i] = -0.0;
  }
  return from_vector<double>(values, sizes, on(kFloat64)).to(dtype);
}

std::vector<int64_t> int64s(const Tensor& tensor) { return tensor.to(kInt64).contiguous().to_vector<int64_t>(); }

// The row-major coordinates of flat position `flat` in `sizes`.
std::vector<int64_t> coordinates(int64_t flat, const Dims& sizes) {
  std::vector<int64_t> result(static_cast<size_t>(sizes.size()));
  for (int d = sizes.size() - 1; d >= 0; --d) {
    result[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return result;
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void check_values(const Tensor& actual, const std::vector<double>& expected) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i << ": got " << values[i] << ", expected " << expected[i]);
    CHECK(same_value(values[i], expected[i]));
  }
}

}  // namespace

TEST_CASE("nonzero lists the coordinates of nonzero elements (NaN counts, -0.0 does not) in row-major order") {
  for (DType dtype : kAllDTypes) {
    const Tensor base = test_tensor({4, 3, 5}, 11, dtype);
    const std::vector<Tensor> inputs = {base,
                                        base.transpose(0, 2),
                                        base.slice(2, 0, 5, 2),
                                        test_tensor({9}, 12, dtype),
                                        test_tensor({0, 3}, 13, dtype),
                                        test_tensor({2, 0, 4}, 14, dtype)};
    for (const Tensor& input : inputs) {
      INFO(dtype_name(dtype) << " shape " << input.sizes().str());
      const std::vector<double> values = values_of(input);
      std::vector<int64_t> expected;
      int64_t rows = 0;
      for (int64_t i = 0; i < input.numel(); ++i) {
        if (values[i] == 0.0) continue;  // NaN != 0: kept
        const std::vector<int64_t> at = coordinates(i, input.sizes());
        expected.insert(expected.end(), at.begin(), at.end());
        ++rows;
      }
      const Tensor result = nonzero(input);
      CHECK(result.dtype() == kInt64);
      CHECK(result.sizes() == Dims{rows, input.dim()});
      CHECK(int64s(result) == expected);
      CHECK(int64s(argwhere(input)) == expected);
      CHECK(int64s(input.nonzero()) == expected);
      CHECK(int64s(input.argwhere()) == expected);
      const std::vector<Tensor> columns = nonzero_as_tuple(input);
      REQUIRE(static_cast<int>(columns.size()) == input.dim());
      for (int d = 0; d < input.dim(); ++d) {
        REQUIRE(columns[d].sizes() == Dims{rows});
        for (int64_t row = 0; row < rows; ++row) CHECK(int64s(columns[d])[row] == expected[row * input.dim() + d]);
      }
    }
  }
}

TEST_CASE("nonzero of a 0-d tensor is [1, 0] or [0, 0], and its tuple form one column, as PyTorch") {
  for (DType dtype : kAllDTypes) {
    INFO(dtype_name(dtype));
    const Tensor nonzero_scalar = scalar_tensor(1.0, on(dtype)), zero_scalar = scalar_tensor(0.0, on(dtype));
    CHECK(nonzero(nonzero_scalar).sizes() == Dims{1, 0});
    CHECK(nonzero(zero_scalar).sizes() == Dims{0, 0});
    const std::vector<Tensor> kept = nonzero_as_tuple(nonzero_scalar), dropped = nonzero_as_tuple(zero_scalar);
    REQUIRE(kept.size() == 1);
    REQUIRE(dropped.size() == 1);
    CHECK(int64s(kept[0]) == std::vector<int64_t>{0});
    CHECK(dropped[0].sizes() == Dims{0});
  }
  CHECK(nonzero(scalar_tensor(NAN, on(kFloat32))).sizes() == Dims{1, 0});
}

TEST_CASE("masked_select takes a's elements where the broadcast mask is true, for every dtype") {
  const Tensor mask = test_tensor({5, 4}, 21, kBool);
  for (DType dtype : kAllDTypes) {
    const Tensor base = test_tensor({4, 5, 3}, 22, dtype);
    // a [3, 1, 4] against mask [5, 4]: both broadcast to [3, 5, 4]; a is a transposed, sliced view.
    const Tensor a = base.transpose(0, 2).slice(1, 0, 5, 5);
    REQUIRE(a.sizes() == Dims{3, 1, 4});
    INFO(dtype_name(dtype));
    const std::vector<double> a_values = values_of(a), mask_values = values_of(mask);
    std::vector<double> expected;
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 5; ++j) {
        for (int64_t k = 0; k < 4; ++k) {
          if (mask_values[j * 4 + k] != 0.0) expected.push_back(a_values[i * 4 + k]);
        }
      }
    }
    const Tensor result = masked_select(a, mask);
    CHECK(result.dtype() == dtype);
    CHECK(result.sizes() == Dims{static_cast<int64_t>(expected.size())});
    check_values(result, expected);
    check_values(a.masked_select(mask), expected);
    CHECK(masked_select(a, zeros({0, 4}, on(kBool))).sizes() == Dims{0});
    check_values(masked_select(scalar_tensor(3.0, on(dtype)), mask.transpose(0, 1)),
                 std::vector<double>(static_cast<size_t>(std::count(mask_values.begin(), mask_values.end(), 1.0)),
                                     dtype == kBool ? 1.0 : 3.0));
  }
}

TEST_CASE("masked_select's gradient matches finite differences, summing over broadcast copies") {
  const Tensor mask = test_tensor({2, 5, 4}, 31, kBool);
  gradcheck_leaves([&](const std::vector<Tensor>& t) { return masked_select(t[0], mask); }, {leaf({5, 1}, 32)});
  gradcheck_leaves([&](const std::vector<Tensor>& t) { return masked_select(t[0].t(), mask.select(0, 1)); },
            {leaf({4, 5}, 33)});
  // Elements the mask never selects get a zero gradient, as PyTorch's.
  const Tensor a = leaf({3}, 34);
  masked_select(a, from_vector<bool>({true, false, true}, {3})).sum().backward();
  CHECK(values_of(a.grad()) == std::vector<double>{1.0, 0.0, 1.0});
}

TEST_CASE("masked_select refuses a non-bool mask, unbroadcastable shapes and two devices, naming the call") {
  const Tensor a = test_tensor({3, 4}, 41, kFloat32);
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { masked_select(a, ones({3, 4}, on(kInt64))); });
  CHECK(message.find("masked_select: expected a bool mask, got int64 (input float32 [3, 4], mask [3, 4])") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { masked_select(a, ones({5}, on(kBool))); }).find("masked_select") != std::string::npos);
}

namespace {

// PyTorch's unique order: ascending, NaN after every number.
bool unique_before(double a, double b) { return std::isnan(a) ? false : (std::isnan(b) ? true : a < b); }

struct UniqueReference {
  std::vector<double> values;
  std::vector<int64_t> inverse, counts;
};

// Groups equal elements (sorted first unless `consecutive`); each NaN is its own group.
UniqueReference unique_reference(const std::vector<double>& input, bool consecutive) {
  std::vector<size_t> order(input.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!consecutive) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return unique_before(input[a], input[b]); });
  }
  UniqueReference result;
  result.inverse.resize(input.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const double value = input[order[i]];
    if (i == 0 || !(value == result.values.back())) {
      result.values.push_back(value);
      result.counts.push_back(0);
    }
    result.inverse[order[i]] = static_cast<int64_t>(result.values.size()) - 1;
    ++result.counts.back();
  }
  return result;
}

}  // namespace

TEST_CASE("unique and unique_consecutive match sorted and in-order grouping for every dtype, each NaN distinct") {
  for (DType dtype : kAllDTypes) {
    const Tensor base = test_tensor({5, 6}, 51, dtype);
    for (const Tensor& input : {base, base.t(), base.slice(1, 1, 6, 2), test_tensor({0, 2}, 52, dtype)}) {
      INFO(dtype_name(dtype) << " shape " << input.sizes().str());
      for (bool consecutive : {false, true}) {
        const UniqueReference expected = unique_reference(values_of(input), consecutive);
        const auto [values, inverse, counts] =
            consecutive ? unique_consecutive(input, true, true) : unique(input, true, true, true);
        CHECK(values.dtype() == dtype);
        CHECK(values.sizes() == Dims{static_cast<int64_t>(expected.values.size())});
        check_values(values, expected.values);
        CHECK(inverse.sizes() == input.sizes());
        CHECK(int64s(inverse) == expected.inverse);
        CHECK(int64s(counts) == expected.counts);
      }
      // Not asked for: empty int64 tensors, as libtorch's _unique2.
      const auto [values, inverse, counts] = input.unique();
      CHECK(inverse.sizes() == Dims{0});
      CHECK(counts.sizes() == Dims{0});
      CHECK(inverse.dtype() == kInt64);
      check_values(values, unique_reference(values_of(input), false).values);
      check_values(std::get<0>(input.unique_consecutive()), unique_reference(values_of(input), true).values);
    }
  }
  const auto [values, inverse, counts] = unique(scalar_tensor(2.0), true, true, true);
  CHECK(values.sizes() == Dims{1});
  CHECK(inverse.sizes() == Dims{});
  CHECK(int64s(counts) == std::vector<int64_t>{1});
}

namespace {

// The slices of `input` along `dim` as rows of doubles, in row-major order of the other dims.
std::vector<std::vector<double>> slices_along(const Tensor& input, int dim) {
  const std::vector<double> values = values_of(input);
  std::vector<std::vector<double>> slices(static_cast<size_t>(input.size(dim)));
  for (int64_t i = 0; i < input.numel(); ++i) slices[coordinates(i, input.sizes())[dim]].push_back(values[i]);
  return slices;
}

}  // namespace

TEST_CASE("unique and unique_consecutive with a dim keep distinct slices, lexicographically sorted or in order") {
  for (DType dtype : kAllDTypes) {
    // Values 0 or 1 in 3-D: slices repeat often along every dim. No NaN (its slice order is unspecified).
    std::vector<double> bits = small_values(4 * 3 * 2, 61);
    for (double& bit : bits) bit = bit > 0 ? 1.0 : 0.0;
    const Tensor input = from_vector<double>(bits, {4, 3, 2}, on(kFloat64)).to(dtype).transpose(0, 1);  // [3, 4, 2]
    for (int64_t dim : {0, 1, 2, -1}) {
      for (bool consecutive : {false, true}) {
        const int wrapped = static_cast<int>(dim < 0 ? dim + 3 : dim);
        INFO(dtype_name(dtype) << " dim " << dim << " consecutive " << consecutive);
        const std::vector<std::vector<double>> slices = slices_along(input, wrapped);
        std::vector<size_t> order(slices.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        if (!consecutive)
          std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return slices[a] < slices[b]; });
        std::vector<std::vector<double>> kept;
        std::vector<int64_t> inverse(slices.size()), counts;
        for (size_t i = 0; i < order.size(); ++i) {
          if (i == 0 || slices[order[i]] != kept.back()) {
            kept.push_back(slices[order[i]]);
            counts.push_back(0);
          }
          inverse[order[i]] = static_cast<int64_t>(kept.size()) - 1;
          ++counts.back();
        }
        const auto [values, inverse_indices, count] =
            consecutive ? unique_consecutive(input, true, true, dim) : unique(input, true, true, true, dim);
        Dims expected_shape = input.sizes();
        expected_shape[wrapped] = static_cast<int64_t>(kept.size());
        REQUIRE(values.sizes() == expected_shape);
        CHECK(slices_along(values, wrapped) == kept);
        CHECK(int64s(inverse_indices) == inverse);
        CHECK(int64s(count) == counts);
      }
    }
  }
  // A size-0 dim alone: the input's empty shape back, empty inverse and counts.
  const auto [values, inverse, counts] = unique(zeros({2, 0, 3}), true, true, true, 1);
  CHECK(values.sizes() == Dims{2, 0, 3});
  CHECK(inverse.sizes() == Dims{0});
  CHECK(counts.sizes() == Dims{0});
}

TEST_CASE("unique with a dim refuses other size-0 dims and bad dims, naming the call") {
  int line = __LINE__ + 1;
  std::string message = error_of([] { unique(zeros({0, 0, 3}), true, false, false, 1); });
  CHECK(message.find("unique: dim 1 of shape [0, 0, 3] has size 0 and so do others") == 0);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([] { unique_consecutive(zeros({2, 0}), false, false, 0); });
  CHECK(message.find("unique_consecutive: shape [2, 0] has a size-0 dim other than dim 0") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([] {
          unique(zeros({2, 3}), true, false, false, 2);
        }).find("unique: dim 2 is out of range for a tensor of rank 2") == 0);
  CHECK(error_of([] {
          unique(scalar_tensor(1.0), true, false, false, 0);
        }).find("unique: dim 0 of a 0-d tensor, which has no slices to compare") == 0);
}

TEST_CASE("bincount counts int32 and int64 values, sums float32 weights in float32 and others in float64") {
  const std::vector<int64_t> raw = {3, 0, 5, 3, 3, 1, 0, 7, 5, 2};
  for (DType dtype : {kInt64, kInt32}) {
    // A strided view: every other element of a longer tensor.
    std::vector<int64_t> doubled;
    for (const int64_t value : raw) doubled.insert(doubled.end(), {value, 100});
    const Tensor input = from_vector<int64_t>(doubled, {20}).to(dtype).slice(0, 0, 20, 2);
    for (int64_t minlength : {0, 3, 8, 12}) {
      INFO(dtype_name(dtype) << " minlength " << minlength);
      std::vector<int64_t> expected(static_cast<size_t>(std::max<int64_t>(8, minlength)), 0);
      for (const int64_t value : raw) ++expected[value];
      const Tensor counts = bincount(input, {}, minlength);
      CHECK(counts.dtype() == kInt64);
      CHECK(counts.to_vector<int64_t>() == expected);
      CHECK(input.bincount({}, minlength).to_vector<int64_t>() == expected);
      for (DType weight_dtype : kAllDTypes) {
        INFO("weights " << dtype_name(weight_dtype));
        const Tensor weights = test_tensor({10}, 71, weight_dtype);
        const std::vector<double> weight_values = values_of(weights);
        std::vector<double> sums(expected.size(), 0.0);
        for (size_t i = 0; i < raw.size(); ++i) {
          if (!std::isnan(weight_values[i])) sums[raw[i]] += weight_values[i];
        }
        for (size_t i = 0; i < raw.size(); ++i) {
          if (std::isnan(weight_values[i])) sums[raw[i]] = NAN;
        }
        const Tensor weighted = bincount(input, weights, minlength);
        CHECK(weighted.dtype() == (weight_dtype == kFloat32 ? kFloat32 : kFloat64));
        check_values(weighted, sums);  // small whole numbers: exact in float32 too
      }
    }
  }
  // An empty input gives int64 zeros of length minlength, with weights too (PyTorch returns early).
  const Tensor empty_input = zeros({0}, on(kInt64));
  CHECK(bincount(empty_input, {}, 4).to_vector<int64_t>() == std::vector<int64_t>(4, 0));
  CHECK(bincount(empty_input, ones({0}, on(kFloat64)), 2).dtype() == kInt64);
  CHECK(bincount(empty_input).sizes() == Dims{0});
}

TEST_CASE("bincount refuses floating, bool, non-1-D and negative inputs, a negative minlength and bad weights") {
  const Tensor input = from_vector<int64_t>({1, 2, 2});
  int line = __LINE__ + 1;
  std::string message = error_of([] { bincount(ones({3}, on(kFloat32))); });
  CHECK(message.find("bincount: expected an int32 or int64 input, got float32 (shape [3])") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([] { bincount(ones({3}, on(kBool))); }).find("got bool") != std::string::npos);
  CHECK(error_of([] {
          bincount(ones({2, 2}, on(kInt64)));
        })
            .find("bincount: expected a 1-D input of non-negative "
                  "integers, got shape [2, 2]") == 0);
  CHECK(error_of([] {
          bincount(from_vector<int32_t>({1, -4, 2}));
        }).find("non-negative integers, got the value -4") != std::string::npos);
  CHECK(error_of([&] { bincount(input, {}, -1); }).find("bincount: minlength should be >= 0, got -1") == 0);
  line = __LINE__ + 1;
  message = error_of([&] { bincount(input, ones({2})); });
  CHECK(message.find("bincount: weights must be 1-D with the input's length 3, got shape [2]") == 0);
  CHECK(names_line(message, line));
}

TEST_CASE("histc bins floating values over [min, max], the top edge in the last bin, the rest and NaN ignored") {
  // Multiples of 1/8: every bin position (x - min) * bins / (max - min) is exact in every dtype.
  std::vector<double> values;
  for (int i = -24; i <= 24; ++i) values.push_back(i / 8.0);
  values.insert(values.end(), {NAN, 5.0, -3.5, 2.0, 2.0});
  std::vector<double> finite_values(values.begin(), values.end());
  finite_values.erase(
      std::remove_if(finite_values.begin(), finite_values.end(), [](double x) { return std::isnan(x); }),
      finite_values.end());
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16}) {
    for (auto [bins, low, high] :
         {std::tuple{8, -2.0, 2.0}, std::tuple{4, -1.0, 2.0}, std::tuple{6, -3.0, 0.0}, std::tuple{3, 0.0, 0.0}}) {
      INFO(dtype_name(dtype) << " bins " << bins << " range [" << low << ", " << high << "]");
      // min == max takes the data's range, [-3.5, 5] here; NaN would make it NaN (refused, below).
      const bool data_range = low == high;
      const std::vector<double>& data = data_range ? finite_values : values;
      const double left = data_range ? -3.5 : low, right = data_range ? 5.0 : high;
      std::vector<double> expected(static_cast<size_t>(bins), 0.0);
      for (const double x : data) {
        if (!(x >= left && x <= right)) continue;
        // The bin whose half-open interval [edge k, edge k + 1) holds x; the last also holds right.
        int64_t bin = 0;
        while (bin + 1 < bins && x >= left + (bin + 1) * (right - left) / bins) ++bin;
        expected[bin] += 1;
      }
      // Column 0 of an [n, 2] tensor: a strided input.
      const Tensor column = from_vector<double>(data, {static_cast<int64_t>(data.size()), 1}, on(kFloat64)).to(dtype);
      const Tensor input = cat({column, zeros({column.size(0), 1}, on(dtype))}, 1).select(1, 0);
      const Tensor result = histc(input, bins, low, high);
      CHECK(result.dtype() == dtype);
      check_values(result, expected);
    }
    // Equal data with min == max: [x - 1, x + 1]; an empty input: [-1, 1] and all zeros.
    check_values(histc(full({3}, 2.0, on(dtype)), 4, 0.0, 0.0), {0.0, 0.0, 3.0, 0.0});
    check_values(histc(zeros({0}, on(dtype)), 2, 0.0, 0.0), {0.0, 0.0});
    // min == max given: the data's range [7, 7], then widened to [6, 8].
    check_values(histc(full({2, 2}, 7.0, on(dtype)), 2, 1.0, 1.0), {0.0, 4.0});
  }
}

TEST_CASE("histc refuses integer inputs, bins < 1, a reversed or infinite range and NaN in a data range") {
  int line = __LINE__ + 1;
  std::string message = error_of([] { histc(ones({3}, on(kInt64)), 4); });
  CHECK(message.find("histc: expected a floating-point input, got int64 (shape [3])") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([] { histc(ones({3}, on(kBool)), 4); }).find("got bool") != std::string::npos);
  CHECK(error_of([] { histc(ones({3}), 0); }).find("histc: bins must be > 0, got 0") == 0);
  CHECK(error_of([] {
          histc(ones({3}), 4, 2.0, 1.0);
        }).find("histc: max must be larger than min, got min 2 and max 1") == 0);
  CHECK(error_of([] { histc(ones({3}), 4, 0.0, INFINITY); }).find("histc: the range [0, inf] is not finite") == 0);
  CHECK(error_of([] {
          histc(from_vector<float>({1.0f, NAN}), 4);
        }).find("histc: the range [nan, nan] is not finite") == 0);
}

namespace {

// The first index of `row` whose element is >= value (left) or > value (right), else its length: a
// linear scan, so a NaN value lands past the end.
int64_t insertion_point(const std::vector<double>& row, double value, bool right) {
  for (size_t i = 0; i < row.size(); ++i) {
    if (right ? row[i] > value : row[i] >= value) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(row.size());
}

}  // namespace

TEST_CASE("searchsorted and bucketize find insertion points like a linear scan, for every dtype PyTorch takes") {
  const std::vector<double> sequence = {-2, -1, -1, 0, 1, 1, 1, 2};
  for (DType dtype : {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64, kInt32}) {
    const Tensor boundaries = from_vector<double>(sequence, {8}, on(kFloat64)).to(dtype);
    // Values [3, 4] read through a transpose; floating ones include NaN.
    const Tensor values = test_tensor({4, 3}, 81, dtype).t();
    const std::vector<double> value_list = values_of(values);
    for (bool right : {false, true}) {
      INFO(dtype_name(dtype) << " right " << right);
      std::vector<int64_t> expected;
      for (const double value : value_list) expected.push_back(insertion_point(sequence, value, right));
      const Tensor result = searchsorted(boundaries, values, false, right);
      CHECK(result.dtype() == kInt64);
      CHECK(result.sizes() == values.sizes());
      CHECK(int64s(result) == expected);
      CHECK(int64s(searchsorted(boundaries, values, false, false, right ? "right" : "left")) == expected);
      const Tensor narrow = bucketize(values, boundaries, true, right);
      CHECK(narrow.dtype() == kInt32);
      CHECK(int64s(narrow) == expected);
      CHECK(searchsorted(boundaries, scalar_tensor(0.0, on(dtype)), false, right).sizes() == Dims{});
      CHECK(searchsorted(boundaries, zeros({0, 2}, on(dtype)), false, right).sizes() == Dims{0, 2});
    }
  }
}

TEST_CASE("searchsorted takes one row per leading index, a sorter, promoted dtypes and empty sequences") {
  // Rows of a [2, 3, 4] sequence; values [2, 3, 5] search the row with their leading indices.
  const std::vector<double> rows = {0, 1, 2, 3, 1, 1, 4, 9, -5, -3, -1, 0, 2, 4, 6, 8, 0, 0, 0, 0, 1, 2, 3, NAN};
  const Tensor sequence = from_vector<double>(rows, {2, 3, 4}, on(kFloat64));
  const Tensor values = test_tensor({2, 3, 5}, 91, kFloat64);
  const std::vector<double> value_list = values_of(values);
  // A sorter: the sequence stored in reverse along the last dim, with the order that restores it.
  const Tensor reversed = sequence.flip({2}).contiguous();
  const Tensor sorter = from_vector<int64_t>(std::vector<int64_t>(6 * 4), {2, 3, 4}) + arange(3, -1, -1, on(kInt64));
  for (bool right : {false, true}) {
    std::vector<int64_t> expected;
    for (int64_t i = 0; i < values.numel(); ++i) {
      const int64_t row = i / 5;
      const std::vector<double> row_values(rows.begin() + row * 4, rows.begin() + row * 4 + 4);
      // The last row ends in NaN, which sorts last: the binary search meets it only for values
      // above 3 or NaN, and goes right past it, to 4, as the scan does.
      expected.push_back(insertion_point(row_values, value_list[i], right));
    }
    INFO("right " << right);
    CHECK(int64s(searchsorted(sequence, values, false, right)) == expected);
    CHECK(int64s(searchsorted(reversed, values, false, right, std::nullopt, sorter)) == expected);
  }
  // int64 sequence and float values: compared as float64 (result_type), so 1.5 lands after 1.
  const Tensor integers = from_vector<int64_t>({0, 1, 2, 3});
  CHECK(int64s(searchsorted(integers, from_vector<double>({1.5, -0.5, 3.0}))) == std::vector<int64_t>{2, 0, 3});
  CHECK(int64s(bucketize(from_vector<float>({1.5f}), integers, false, true)) == std::vector<int64_t>{2});
  // bool values against an int sequence promote to int64 (true is 1).
  CHECK(int64s(searchsorted(integers, from_vector<bool>({true, false}))) == std::vector<int64_t>{1, 0});
  CHECK(int64s(searchsorted(zeros({0}), from_vector<float>({1.0f, NAN}))) == std::vector<int64_t>{0, 0});
}

TEST_CASE("searchsorted and bucketize refuse mismatched shapes, a bad side or sorter and bool, naming the call") {
  const Tensor sequence = from_vector<float>({0.f, 1.f, 2.f});
  const Tensor values = from_vector<float>({0.5f});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { searchsorted(sequence, values, false, false, "middle"); });
  CHECK(message.find("searchsorted: side must be 'left' or 'right', got 'middle'") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([&] {
          searchsorted(sequence, values, false, true, "left");
        }).find("searchsorted: side 'left' contradicts right = true") == 0);
  CHECK(error_of([&] {
          searchsorted(scalar_tensor(1.0), values);
        }).find("searchsorted: the sorted sequence must have at least one dim, got a 0-d tensor") == 0);
  CHECK(error_of([&] {
          searchsorted(ones({2, 3}), scalar_tensor(1.0));
        }).find("searchsorted: 0-d values need a 1-D sorted sequence, got a sorted sequence of shape [2, 3]") == 0);
  CHECK(error_of([&] {
          searchsorted(ones({2, 3}), ones({3, 5}));
        })
            .find("searchsorted: the sorted sequence must be 1-D or share all but the last dim with the values, got "
                  "shapes [2, 3] and [3, 5]") == 0);
  CHECK(error_of([&] { searchsorted(ones({2, 3}), ones({5})); }).find("shapes [2, 3] and [5]") != std::string::npos);
  CHECK(error_of([&] {
          searchsorted(sequence, values, false, false, std::nullopt, from_vector<int64_t>({0, 1}));
        }).find("searchsorted: the sorter must have the sorted sequence's shape [3], got [2]") == 0);
  CHECK(error_of([&] {
          searchsorted(sequence, values, false, false, std::nullopt, from_vector<int32_t>({0, 1, 2}));
        }).find("searchsorted: the sorter must be int64, got int32") == 0);
  CHECK(error_of([&] {
          searchsorted(sequence, values, false, false, std::nullopt, from_vector<int64_t>({0, 3, 1}));
        }).find("searchsorted: sorter index 3 is out of range [0, 3)") == 0);
  CHECK(error_of([&] {
          searchsorted(ones({3}, on(kBool)), ones({2}, on(kBool)));
        }).find("searchsorted: bool sequences and values are not supported (sorted sequence bool, values bool)") == 0);
  line = __LINE__ + 1;
  message = error_of([&] { bucketize(values, ones({2, 3})); });
  CHECK(message.find("bucketize: boundaries must be 1-D, got shape [2, 3]") == 0);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { bucketize(ones({2}, on(kBool)), ones({3}, on(kBool))); }).find("bucketize: bool") == 0);
}

TEST_CASE("each op reads its values through host_values, so the dispatcher's modes hear of the read") {
  const Tensor a = test_tensor({3, 4}, 101, kFloat32), mask = test_tensor({3, 4}, 102, kBool);
  const Tensor counts_input = from_vector<int64_t>({0, 2, 2});
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"nonzero", [&] { nonzero(a); }},
      {"nonzero", [&] { nonzero_as_tuple(a); }},
      {"masked_select", [&] { masked_select(a, mask); }},
      {"unique", [&] { unique(a); }},
      {"unique_consecutive", [&] { unique_consecutive(a, false, false, 1); }},
      {"bincount", [&] { bincount(counts_input); }},
      {"histc", [&] { histc(a, 4, -2.0, 2.0); }},
      {"searchsorted",
       [&] {
         searchsorted(from_vector<float>({0.f, 1.f}), a);
       }},
      {"bucketize",
       [&] {
         bucketize(a, from_vector<float>({0.f, 1.f}));
       }},
  };
  for (const auto& [what, call] : calls) {
    HostReadRecorder recorder;
    {
      DispatchModeGuard guard(recorder);
      call();
    }
    INFO(what);
    REQUIRE_FALSE(recorder.reads.empty());
    CHECK(recorder.reads.front() == what);
  }
}

}  // namespace test_select_ops
