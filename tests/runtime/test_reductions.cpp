// Reductions (sum, mean, amax, amin, var, argmax, argmin) against float64 references written with
// plain loops, on contiguous, permuted and sliced inputs; size-0/size-1 dims; errors; gradients.
#include <doctest/doctest.h>

#include <limits>

#include "numeric_check.h"

namespace test_reductions {

using namespace ember;
using namespace ember::testing;

namespace {

enum class Kind { Sum, Mean, Max, Min, Var };

// Groups each element under its output position (row-major over the kept dims) and reduces.
std::vector<double> reference(const Tensor& input, std::vector<int> dims, Kind kind, int64_t correction = 1) {
  const Dims& sizes = input.sizes();
  if (dims.empty())
    for (int d = 0; d < sizes.size(); ++d) dims.push_back(d);
  auto reduced = [&](int d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
  int64_t outputs = 1;
  for (int d = 0; d < sizes.size(); ++d)
    if (!reduced(d)) outputs *= sizes[d];
  std::vector<std::vector<double>> groups(outputs);
  const std::vector<double> values = values_of(input);
  for (int64_t flat = 0; flat < sizes.product(); ++flat) {
    const std::vector<int64_t> index = unravel(flat, sizes);
    int64_t out = 0;
    for (int d = 0; d < sizes.size(); ++d)
      if (!reduced(d)) out = out * sizes[d] + index[d];
    groups[out].push_back(values[flat]);
  }
  std::vector<double> result;
  for (const std::vector<double>& group : groups) {
    double sum = 0, best = kind == Kind::Max ? -INFINITY : INFINITY;
    for (double value : group) {
      sum += value;
      best = kind == Kind::Max ? std::max(best, value) : std::min(best, value);
    }
    const double mean = sum / static_cast<double>(group.size());
    double squares = 0;
    for (double value : group) squares += (value - mean) * (value - mean);
    switch (kind) {
      case Kind::Sum: result.push_back(sum); break;
      case Kind::Mean: result.push_back(mean); break;
      case Kind::Max: case Kind::Min: result.push_back(best); break;
      case Kind::Var: result.push_back(squares / std::max<double>(0, static_cast<double>(group.size()) - correction)); break;
    }
  }
  return result;
}

// The same logical [3, 4, 5] values in three memory layouts.
std::vector<Tensor> layouts(DType dtype) {
  const Tensor contiguous = random_tensor({3, 4, 5}, 7, dtype);
  const Tensor permuted = random_tensor({5, 3, 4}, 8, dtype).permute({1, 2, 0});
  const Tensor sliced = random_tensor({3, 8, 5}, 9, dtype).slice(1, 0, 8, 2);
  return {contiguous, permuted, sliced};
}

const std::vector<std::vector<int>> kDimSets = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1}};

Dims to_dims(const std::vector<int>& dims) {
  Dims result;
  for (int dim : dims) result.push_back(dim);
  return result;
}

}  // namespace

TEST_CASE("sum, mean, amax, amin and var match float64 loops on every layout and dim set") {
  for (DType dtype : {kFloat32, kFloat64}) {
    const double tolerance = dtype == kFloat32 ? 1e-6 : 1e-12;
    for (const Tensor& x : layouts(dtype)) {
      for (const std::vector<int>& dims : kDimSets) {
        for (bool keepdim : {false, true}) {
          INFO("dtype " << dtype_name(dtype) << " strides " << x.strides().str() << " dims " << to_dims(dims).str()
                        << " keepdim " << keepdim);
          const Tensor total = sum(x, to_dims(dims), keepdim);
          CHECK(total.dtype() == dtype);
          check_close(total, reference(x, dims, Kind::Sum), tolerance);
          check_close(mean(x, to_dims(dims), keepdim), reference(x, dims, Kind::Mean), tolerance);
          check_close(amax(x, to_dims(dims), keepdim), reference(x, dims, Kind::Max), 0.0);
          check_close(amin(x, to_dims(dims), keepdim), reference(x, dims, Kind::Min), 0.0);
          check_close(var(x, to_dims(dims), 1, keepdim), reference(x, dims, Kind::Var, 1), tolerance);
          check_close(var(x, to_dims(dims), 0, keepdim), reference(x, dims, Kind::Var, 0), tolerance);
          const Dims expected_shape = keepdim ? Dims{dims.empty() || std::count(dims.begin(), dims.end(), 0) ? 1 : 3,
                                                     dims.empty() || std::count(dims.begin(), dims.end(), 1) ? 1 : 4,
                                                     dims.empty() || std::count(dims.begin(), dims.end(), 2) ? 1 : 5}
                                              : total.sizes();
          CHECK(total.sizes() == expected_shape);
        }
      }
    }
  }
}

TEST_CASE("reductions accept negative dims and shape outputs like PyTorch") {
  const Tensor x = random_tensor({2, 3, 4}, 11);
  CHECK(sum(x, {-1}).sizes() == Dims{2, 3});
  CHECK(sum(x, {-1, 0}, true).sizes() == Dims{1, 3, 1});
  CHECK(sum(x).sizes() == Dims{});
  CHECK(sum(x, {}, true).sizes() == Dims{1, 1, 1});
  check_close(sum(x, {-3}), values_of(sum(x, {0})), 0.0);
  const Tensor scalar = scalar_tensor(2.5, {.dtype = kFloat64});
  CHECK(sum(scalar).item() == 2.5);
  CHECK(sum(scalar, {0}).item() == 2.5);
  CHECK(amax(scalar, {-1}, true).sizes() == Dims{});
}

TEST_CASE("rows, column blocks and long chunked rows reduce correctly") {
  // [37, 600] covers more than one 256-wide column block; dim 1 is the contiguous-row path.
  const Tensor wide = random_tensor({37, 600}, 12, kFloat32);
  check_close(sum(wide, {0}), reference(wide, {0}, Kind::Sum), 1e-6);
  check_close(amax(wide, {0}), reference(wide, {0}, Kind::Max), 0.0);
  check_close(mean(wide, {1}), reference(wide, {1}, Kind::Mean), 1e-6);
  check_close(sum(wide.t(), {1}), reference(wide, {0}, Kind::Sum), 1e-6);  // transposed: columns again
  // 150000 elements exceed one chunk (65536) of the contiguous path.
  const Tensor long_row = random_tensor({2, 150000}, 13, kFloat32);
  check_close(sum(long_row, {1}), reference(long_row, {1}, Kind::Sum), 1e-6);
  check_close(sum(long_row), reference(long_row, {}, Kind::Sum), 1e-6);
  check_close(amin(long_row), reference(long_row, {}, Kind::Min), 0.0);
}

TEST_CASE("reduction results do not depend on the thread count") {
  const Tensor big = random_tensor({4, 200000}, 14, kFloat32);
  const int threads = get_num_threads();
  auto run = [&] {
    std::vector<std::vector<float>> results;
    for (const Dims& dims : {Dims{}, Dims{0}, Dims{1}})
      for (const Tensor& result : {sum(big, dims), mean(big, dims), var(big, dims)})
        results.push_back(result.to_vector<float>());
    return results;
  };
  set_num_threads(1);
  const auto single = run();
  set_num_threads(4);
  const auto several = run();
  set_num_threads(threads);
  CHECK(single == several);
}

TEST_CASE("integer and bool sums give int64, mean and var of integers are errors") {
  const Tensor ints = from_vector<int32_t>({1, -2, 3, 40, 5, 6}, {2, 3}, {.dtype = kInt32});
  const Tensor total = sum(ints, {1});
  CHECK(total.dtype() == kInt64);
  CHECK(total.to_vector<int64_t>() == std::vector<int64_t>{2, 51});
  CHECK(sum(from_vector<bool>({true, false, true, true})).to_vector<int64_t>() == std::vector<int64_t>{3});
  CHECK(amax(ints, {0}).to_vector<int32_t>() == std::vector<int32_t>{40, 5, 6});
  CHECK(amin(ints).to_vector<int32_t>() == std::vector<int32_t>{-2});
  CHECK_THROWS_WITH_AS(mean(ints), doctest::Contains("mean: expected a floating-point input, got int32"), Error);
  CHECK_THROWS_WITH_AS(var(ints), doctest::Contains("var: expected a floating-point input, got int32"), Error);
}

TEST_CASE("16-bit reductions keep their dtype and accumulate in wide precision") {
  const Tensor x = random_tensor({64, 33}, 15, kBFloat16);
  const Tensor total = sum(x, {0});
  CHECK(total.dtype() == kBFloat16);
  check_close(total, reference(x, {0}, Kind::Sum), 1e-2);
  check_close(amax(x.to(kFloat16), {1}), reference(x, {1}, Kind::Max), 1e-3);
}

TEST_CASE("size-0 dims: empty sums are 0, empty means NaN, empty maxima are errors") {
  const Tensor empty = zeros({0, 3}, {.dtype = kFloat64});
  CHECK(sum(empty, {0}).to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(sum(empty).item() == 0.0);
  for (double value : mean(empty, {0}).to_vector<double>()) CHECK(std::isnan(value));
  CHECK(sum(empty, {1}).sizes() == Dims{0});
  CHECK(amax(empty, {1}).sizes() == Dims{0});
  CHECK(argmax(empty, 1).sizes() == Dims{0});
  CHECK_THROWS_WITH_AS(amax(empty, {0}), doctest::Contains("amax: cannot reduce over dim 0 of size 0"), Error);
  CHECK_THROWS_WITH_AS(amin(empty), doctest::Contains("amin: cannot reduce over dim 0 of size 0 (input shape [0, 3])"),
                       Error);
  CHECK_THROWS_WITH_AS(argmax(empty), doctest::Contains("argmax: cannot reduce over dim 0 of size 0"), Error);
  CHECK(std::isnan(var(empty).item()));
}

TEST_CASE("reductions reject repeated and out-of-range dims") {
  const Tensor x = random_tensor({2, 3}, 16);
  CHECK_THROWS_WITH_AS(sum(x, {1, -1}), doctest::Contains("sum: dim 1 appears more than once in dims [1, -1]"), Error);
  CHECK_THROWS_WITH_AS(mean(x, {2}), doctest::Contains("mean: dim 2 is out of range for a tensor of rank 2"), Error);
  CHECK_THROWS_WITH_AS(argmax(x, 5), doctest::Contains("argmax: dim 5 is out of range"), Error);
}

TEST_CASE("var with a correction of N or more gives inf or NaN like PyTorch") {
  const Tensor x = from_vector<double>({1.0, 3.0}, {2}, {.dtype = kFloat64});
  CHECK(var(x).item() == doctest::Approx(2.0));
  CHECK(var(x, {}, 0).item() == doctest::Approx(1.0));
  CHECK(std::isinf(var(x, {}, 2).item()));
  CHECK(std::isnan(var(from_vector<double>({4.0}, {1}, {.dtype = kFloat64})).item()));
}

TEST_CASE("argmax and argmin: first index on ties, NaN counts as the extreme, any layout") {
  const Tensor ties = from_vector<float>({1, 5, 5, 2, -1, -1, 0, 7}, {2, 4});
  CHECK(argmax(ties, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 3});
  CHECK(argmin(ties, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  CHECK(argmax(ties, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1});
  CHECK(argmax(ties).to_vector<int64_t>() == std::vector<int64_t>{7});
  CHECK(argmin(ties).to_vector<int64_t>() == std::vector<int64_t>{4});
  CHECK(argmax(ties, 1, true).sizes() == Dims{2, 1});
  CHECK(argmax(ties, {}, true).sizes() == Dims{1, 1});
  CHECK(argmax(ties.t(), 0).to_vector<int64_t>() == std::vector<int64_t>{1, 3});  // transposed input
  CHECK(argmax(ties.t()).to_vector<int64_t>() == std::vector<int64_t>{7});         // flattened logically: [4, 2]
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(argmax(from_vector<float>({1, nan, 3, nan})).item() == 1);
  CHECK(argmin(from_vector<float>({1, 0, nan})).item() == 2);
  CHECK(argmax(from_vector<int64_t>({3, 9, 9, -4})).item() == 1);
  CHECK(std::isnan(amax(from_vector<float>({1, nan, 3})).item()));
  for (const Tensor& x : layouts(kFloat64)) {  // distinct random values: compare with a loop
    const std::vector<double> values = values_of(x);
    const Tensor along = argmax(x, 1);
    const std::vector<int64_t> got = along.to_vector<int64_t>();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t k = 0; k < 5; ++k) {
        int64_t best = 0;
        for (int64_t j = 1; j < 4; ++j)
          if (values[(i * 4 + j) * 5 + k] > values[(i * 4 + best) * 5 + k]) best = j;
        CHECK(got[i * 5 + k] == best);
      }
  }
}

TEST_CASE("gradients of sum, mean, var, amax and amin match finite differences") {
  for (const std::vector<int>& dims : kDimSets) {
    for (bool keepdim : {false, true}) {
      INFO("dims " << to_dims(dims).str() << " keepdim " << keepdim);
      const Dims reduce = to_dims(dims);
      const std::vector<Tensor> inputs{random_tensor({3, 4, 2}, 17)};
      gradcheck([&](const std::vector<Tensor>& x) { return sum(x[0], reduce, keepdim); }, inputs);
      gradcheck([&](const std::vector<Tensor>& x) { return mean(x[0].permute({2, 0, 1}), reduce, keepdim); }, inputs);
      gradcheck([&](const std::vector<Tensor>& x) { return var(x[0], reduce, 1, keepdim); }, inputs);
      gradcheck([&](const std::vector<Tensor>& x) { return var(x[0].slice(1, 0, 4, 2), reduce, 0, keepdim); }, inputs);
      gradcheck([&](const std::vector<Tensor>& x) { return amax(x[0], reduce, keepdim); }, inputs);
      gradcheck([&](const std::vector<Tensor>& x) { return amin(x[0].permute({1, 2, 0}), reduce, keepdim); }, inputs);
    }
  }
}

TEST_CASE("reduction gradients handle 0-d inputs and non-contiguous incoming gradients") {
  const std::vector<Tensor> scalar{scalar_tensor(1.5, {.dtype = kFloat64})};
  gradcheck([](const std::vector<Tensor>& x) { return amax(x[0]); }, scalar);
  gradcheck([](const std::vector<Tensor>& x) { return mean(x[0], {0}, true); }, scalar);
  // The transpose hands sum's backward a non-contiguous gradient to unsqueeze and expand.
  const std::vector<Tensor> cube{random_tensor({2, 3, 4}, 18)};
  gradcheck([](const std::vector<Tensor>& x) { return sum(x[0], {1}).t(); }, cube);
  gradcheck([](const std::vector<Tensor>& x) { return amin(x[0], {0, 2}).unsqueeze(1).expand({3, 2}); }, cube);
}

TEST_CASE("amax and amin share the gradient evenly among tied maxima") {
  const Tensor x = from_vector<double>({3, 1, 3, 2, 2, 2}, {2, 3}, {.dtype = kFloat64}).requires_grad_();
  amax(x, {1}).sum().backward();
  check_close(x.grad(), {0.5, 0, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-15);
  const Tensor y = from_vector<double>({3, 1, 1, 2}, {4}, {.dtype = kFloat64}).requires_grad_();
  mul(amin(y), scalar_tensor(4.0, {.dtype = kFloat64})).backward();
  check_close(y.grad(), {0, 2, 2, 0}, 1e-15);
}

}  // namespace test_reductions
