// Binary pointwise ops (tensor-tensor with broadcasting and promotion) and host-scalar ops against
// float64 references computed here, plus PyTorch's integer and bool dtype rules and the errors.
#include "pointwise_test_util.h"

namespace test_pointwise_binary {

using namespace pointwise_test;

namespace {

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> function;
  std::function<double(double, double)> reference;
  double low;  // both inputs are drawn from [low, high]
  double high;
};

std::vector<BinaryCase> binary_cases() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }, -3, 3},
      {"add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, -2.5); },
       [](double a, double b) { return a - 2.5 * b; }, -3, 3},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }, -3, 3},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [](double a, double b) { return a * b; }, -3, 3},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
       [](double a, double b) { return a / b; }, -3, 3},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }, -3, 3},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }, -3, 3},
      {"pow", [](const Tensor& a, const Tensor& b) { return ember::pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, 0.1, 3},
  };
}

// Compares function(a, b) with the reference on the broadcast values of a and b.
void check_binary(const BinaryCase& test_case, const Tensor& a, const Tensor& b, DType expected_dtype,
                  const std::string& what) {
  const Tensor output = test_case.function(a, b);
  CHECK_MESSAGE(output.dtype() == expected_dtype, what);
  const Dims sizes = broadcast_shapes(a.sizes(), b.sizes(), "test");
  REQUIRE_MESSAGE(output.sizes() == sizes, what);
  const std::vector<double> a_values = values_of(a);
  const std::vector<double> b_values = values_of(b);
  std::vector<double> expected(sizes.product());
  for (int64_t i = 0; i < sizes.product(); ++i)
    expected[i] = test_case.reference(a_values[broadcast_source(i, sizes, a.sizes())],
                                      b_values[broadcast_source(i, sizes, b.sizes())]);
  check_close(values_of(output), expected, tolerance_for(expected_dtype), what);
}

}  // namespace

TEST_CASE("binary ops broadcast and match float64 references in every float dtype") {
  auto next_seed = [counter = uint32_t{100}]() mutable { return ++counter; };
  for (const BinaryCase& c : binary_cases()) {
    auto input = [&](const Dims& sizes, DType dtype) {
      return random_tensor(sizes, dtype, c.low, c.high, next_seed());
    };
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
      const std::string what = std::string(c.name) + " " + std::string(dtype_name(dtype));
      check_binary(c, input({4, 6}, dtype), input({4, 6}, dtype), dtype, what + " same shape");
      check_binary(c, input({3, 1, 4}, dtype), input({5, 4}, dtype), dtype, what + " broadcast");
      check_binary(c, input({5, 4}, dtype), input({3, 1, 1}, dtype), dtype, what + " broadcast other");
      check_binary(c, input({6, 5}, dtype).t(), input({6, 5}, dtype).t(), dtype, what + " transposed");
      check_binary(c, input({5, 6}, dtype), input({6, 5}, dtype).t(), dtype, what + " one transposed");
      check_binary(c, input({4}, dtype).expand({3, 4}), input({3, 4}, dtype), dtype, what + " expanded");
      check_binary(c, input({}, dtype), input({3}, dtype), dtype, what + " 0-d with 1-d");
      check_binary(c, input({}, dtype), input({}, dtype), dtype, what + " 0-d");
      check_binary(c, input({0, 4}, dtype), input({4}, dtype), dtype, what + " size-0");
    }
    check_binary(c, input({100003}, kFloat32), input({100003}, kFloat32), kFloat32, std::string(c.name) + " large");
    check_binary(c, input({300, 400}, kFloat32), input({400}, kFloat32), kFloat32,
                 std::string(c.name) + " large broadcast");
    // Mixed dtypes promote like PyTorch: f32 + f64 -> f64, bf16 + f16 -> f32.
    check_binary(c, input({2, 3}, kFloat32), input({3}, kFloat64), kFloat64, std::string(c.name) + " f32 f64");
    check_binary(c, input({2, 3}, kBFloat16), input({2, 3}, kFloat16), kFloat32, std::string(c.name) + " bf16 f16");
  }
}

TEST_CASE("integer binary ops follow PyTorch: true division, integer pow, exact extrema") {
  const Tensor a = from_vector<int32_t>({7, -7, 9, 2});
  const Tensor b = from_vector<int32_t>({2, 2, -4, 3});
  CHECK(div(a, b).dtype() == kFloat32);
  CHECK(div(a, b).to_vector<float>() == std::vector<float>{3.5f, -3.5f, -2.25f, 2.f / 3.f});
  CHECK(ember::pow(from_vector<int64_t>({2, 3, -2, 5}), from_vector<int64_t>({3, 0, 2, 1})).to_vector<int64_t>() ==
        std::vector<int64_t>{8, 1, 4, 5});
  // torch.pow(torch.tensor([1, -1, 2, 0]), torch.tensor([-1, -1, -1, -1])) -> [1, -1, 0, 0]
  CHECK(ember::pow(from_vector<int64_t>({1, -1, 2, 0}), from_vector<int64_t>({-1, -1, -1, -1})).to_vector<int64_t>() ==
        std::vector<int64_t>{1, -1, 0, 0});
  CHECK(maximum(a, b).to_vector<int32_t>() == std::vector<int32_t>{7, 2, 9, 3});
  CHECK(minimum(a, b).dtype() == kInt32);
  CHECK(minimum(a, b).to_vector<int32_t>() == std::vector<int32_t>{2, -7, -4, 2});
  // int32 with float32 promotes to float32; bool maximum stays bool.
  CHECK(mul(a, from_vector<float>({0.5f})).dtype() == kFloat32);
  CHECK(maximum(from_vector<bool>({true, false}), from_vector<bool>({false, false})).to_vector<bool>() ==
        std::vector<bool>{true, false});
}

TEST_CASE("maximum and minimum propagate NaN") {
  const Tensor a = from_vector<float>({std::nanf(""), 1.f, 2.f});
  const Tensor b = from_vector<float>({1.f, std::nanf(""), 3.f});
  const std::vector<double> expected_max{NAN, NAN, 3.0};
  check_close(values_of(maximum(a, b)), expected_max, {0, 0}, "maximum");
  check_close(values_of(minimum(a, b)), {NAN, NAN, 2.0}, {0, 0}, "minimum");
}

TEST_CASE("binary op errors name the op and both shapes") {
  CHECK_THROWS_WITH_AS(maximum(ones({2, 3}), ones({4})),
                       doctest::Contains("maximum: shapes [2, 3] and [4] cannot be broadcast"), Error);
  CHECK_THROWS_WITH_AS(ember::pow(ones({2}), ones({3})), doctest::Contains("pow: shapes [2] and [3]"), Error);
  const Tensor mask = from_vector<bool>({true, false});
  CHECK_THROWS_WITH_AS(sub(mask, mask), doctest::Contains("sub: subtraction with a bool tensor is not supported"),
                       Error);
  CHECK_THROWS_WITH_AS(sub(from_vector<int64_t>({1, 2}), mask), doctest::Contains("dtypes int64 and bool"), Error);
  CHECK_THROWS_WITH_AS(ember::pow(mask, mask), doctest::Contains("pow: bool tensors are not supported"), Error);
}

struct ScalarCase {
  const char* name;
  std::function<Tensor(const Tensor&)> function;
  std::function<double(double)> reference;
  double low;
  double high;
};

TEST_CASE("scalar ops match float64 references and keep floating dtypes") {
  std::vector<ScalarCase> cases{
      {"add", [](const Tensor& a) { return add(a, 1.25); }, [](double x) { return x + 1.25; }, -3, 3},
      {"sub", [](const Tensor& a) { return sub(a, 1.25); }, [](double x) { return x - 1.25; }, -3, 3},
      {"mul", [](const Tensor& a) { return mul(a, -0.75); }, [](double x) { return x * -0.75; }, -3, 3},
      {"div", [](const Tensor& a) { return div(a, 0.3); }, [](double x) { return x / 0.3; }, -3, 3},
      {"rsub", [](const Tensor& a) { return rsub(a, 2.5); }, [](double x) { return 2.5 - x; }, -3, 3},
      {"rdiv", [](const Tensor& a) { return rdiv(a, 2.5); }, [](double x) { return 2.5 / x; }, -3, 3},
      {"operator -", [](const Tensor& a) { return 2.0 - a; }, [](double x) { return 2.0 - x; }, -3, 3},
      {"operator /", [](const Tensor& a) { return 2.0 / a; }, [](double x) { return 2.0 / x; }, -3, 3},
  };
  for (double exponent : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 1.7}) {
    cases.push_back({"pow", [exponent](const Tensor& a) { return ember::pow(a, exponent); },
                     [exponent](double x) { return std::pow(x, exponent); }, 0.1, 3});
  }
  auto next_seed = [counter = uint32_t{500}]() mutable { return ++counter; };
  for (const ScalarCase& c : cases) {
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
      const std::string what = std::string(c.name) + " " + std::string(dtype_name(dtype));
      for (const Tensor& input : {random_tensor({3, 5}, dtype, c.low, c.high, next_seed()),
                                  random_tensor({5, 3}, dtype, c.low, c.high, next_seed()).t(),
                                  random_tensor({}, dtype, c.low, c.high, next_seed())}) {
        const Tensor output = c.function(input);
        CHECK_MESSAGE(output.dtype() == dtype, what);
        std::vector<double> expected = values_of(input);
        for (double& value : expected) value = c.reference(value);
        check_close(values_of(output), expected, tolerance_for(dtype), what);
      }
      CHECK_MESSAGE(c.function(zeros({0, 2}, {.dtype = dtype})).sizes() == Dims({0, 2}), what);
    }
  }
}

TEST_CASE("scalar ops promote integer and bool tensors like PyTorch") {
  const Tensor ints = from_vector<int32_t>({3, -2, 5});
  const Tensor mask = from_vector<bool>({true, false, true});
  CHECK(mul(ints, 2.0).dtype() == kInt32);
  CHECK(mul(ints, 2.0).to_vector<int32_t>() == std::vector<int32_t>{6, -4, 10});
  CHECK(mul(ints, 0.5).dtype() == kFloat32);  // int tensor * 0.5 -> float32
  CHECK(mul(ints, 0.5).to_vector<float>() == std::vector<float>{1.5f, -1.f, 2.5f});
  CHECK(add(ints, 0.5).to_vector<float>() == std::vector<float>{3.5f, -1.5f, 5.5f});
  CHECK(div(ints, 2.0).to_vector<float>() == std::vector<float>{1.5f, -1.f, 2.5f});  // true division
  CHECK(rdiv(ints, 3.0).to_vector<float>() == std::vector<float>{1.f, -1.5f, 0.6f});
  CHECK(rsub(ints, 10.0).to_vector<int32_t>() == std::vector<int32_t>{7, 12, 5});
  CHECK(ember::pow(ints, 2.0).to_vector<int32_t>() == std::vector<int32_t>{9, 4, 25});
  CHECK(ember::pow(ints, 0.5).dtype() == kFloat32);
  CHECK(add(mask, 1.0).dtype() == kInt64);  // torch: bool + 1 -> int64
  CHECK(add(mask, 1.0).to_vector<int64_t>() == std::vector<int64_t>{2, 1, 2});
  CHECK(mul(mask, 0.5).to_vector<float>() == std::vector<float>{0.5f, 0.f, 0.5f});
  CHECK(mul(from_vector<float>({1.f}, {1}, {.dtype = kBFloat16}), 0.5).dtype() == kBFloat16);
  CHECK(add(ints, std::numeric_limits<double>::infinity()).dtype() == kFloat32);

  CHECK_THROWS_WITH_AS(ember::pow(ints, -1.0),
                       doctest::Contains("pow_scalar: integers to negative integer powers are not allowed"), Error);
  CHECK_THROWS_WITH_AS(add(ints, 1e10),
                       doctest::Contains("add_scalar: scalar 10000000000 is out of range for a int32 result"),
                       Error);
  CHECK_THROWS_WITH_AS(rsub(mask, 1.0), doctest::Contains("rsub_scalar: subtraction with a bool tensor"), Error);

  // The methods with a number are the same ops, as libtorch's t.mul(2.0).
  CHECK(ints.mul(2.0).to_vector<int32_t>() == std::vector<int32_t>{6, -4, 10});
  CHECK(ints.add(0.5).to_vector<float>() == std::vector<float>{3.5f, -1.5f, 5.5f});
  CHECK(ints.sub(1).to_vector<int32_t>() == std::vector<int32_t>{2, -3, 4});
  CHECK(ints.div(2.0).to_vector<float>() == std::vector<float>{1.5f, -1.f, 2.5f});
  CHECK_THROWS_WITH_AS(mask.sub(1.0), doctest::Contains("sub: subtraction with a bool tensor"), Error);
}

TEST_CASE("in-place ops refuse results their target cannot hold") {
  Tensor ints = from_vector<int32_t>({1, 2});
  CHECK_THROWS_WITH_AS(ints.add_(from_vector<float>({0.5f, 0.5f})),
                       doctest::Contains("add_: the result type float32 cannot be stored in the in-place target "
                                         "of type int32"),
                       Error);
  CHECK_THROWS_WITH_AS(ints.mul_(0.5), doctest::Contains("mul_scalar_: the result type float32"), Error);
  CHECK(ints.to_vector<int32_t>() == std::vector<int32_t>{1, 2});  // left unchanged
  ints.mul_(3.0);
  CHECK(ints.to_vector<int32_t>() == std::vector<int32_t>{3, 6});
  Tensor floats = from_vector<float>({1.f, 2.f});
  floats.add_(from_vector<int32_t>({1, 1}));
  CHECK(floats.to_vector<float>() == std::vector<float>{2.f, 3.f});
}

TEST_CASE("strided, broadcast and in-place operands spanning many staging chunks") {
  // Runs much longer than the strided path's 256-element staging chunk, long enough to be split
  // across threads mid-run, with a stride-0 operand, a transposed operand and a strided output.
  const std::vector<double> x_values = random_values(100003, -2, 2, 4242);
  const Tensor x = tensor_from(x_values, {100003}, kFloat32);
  const Tensor scale = scalar_tensor(-1.5);
  std::vector<double> expected(x_values.size());
  const std::vector<double> x_rounded = values_of(x);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = x_rounded[i] * -1.5;
  check_close(values_of(mul(x, scale)), expected, tolerance_for(kFloat32), "0-d broadcast");
  check_close(values_of(mul(scale, x)), expected, tolerance_for(kFloat32), "0-d broadcast first");

  const Tensor wide = random_tensor({300, 1000}, kFloat64, -2, 2, 4243);
  const Tensor column = random_tensor({1000, 1}, kFloat64, -2, 2, 4244);
  const Tensor sum_of = add(wide.t(), column);  // inner stride 1000 elements, column stride 0
  const std::vector<double> wide_values = values_of(wide);
  const std::vector<double> column_values = values_of(column);
  std::vector<double> sum_expected(300 * 1000);
  for (int i = 0; i < 1000; ++i)
    for (int j = 0; j < 300; ++j) sum_expected[i * 300 + j] = wide_values[j * 1000 + i] + column_values[i];
  check_close(values_of(sum_of), sum_expected, tolerance_for(kFloat64), "transposed plus column");

  // In place through a transposed view: the output itself is strided.
  Tensor target = wide.clone();
  Tensor target_view = target.t();
  target_view.add_(column);
  std::vector<double> in_place_expected(wide_values);
  for (int j = 0; j < 300; ++j)
    for (int i = 0; i < 1000; ++i) in_place_expected[j * 1000 + i] += column_values[i];
  check_close(values_of(target), in_place_expected, tolerance_for(kFloat64), "add_ into a transposed view");
  Tensor filled = zeros({600, 500});
  filled.t().fill_(2.5);
  check_close(values_of(filled), std::vector<double>(300000, 2.5), {0, 0}, "fill_ through a transposed view");
}

TEST_CASE("rank-5 strided operands with short runs, split across threads mid-run") {
  // The strided loop finds a chunk's first run by division and steps an odometer over the outer
  // dims after that: carries through several dims, and chunks (kParallelGrain = 32768 elements)
  // starting inside a run of 9. The reference reads x's contiguous values by index arithmetic.
  const Dims sizes = {12, 10, 9, 7, 13};  // x, contiguous: strides {8190, 819, 91, 13, 1}
  const Tensor x = random_tensor(sizes, kFloat64, -2, 2, 4245);
  const Tensor view = permute(x, {4, 0, 3, 1, 2});  // [13, 12, 7, 10, 9], inner stride 91
  const Tensor bias = random_tensor({13, 1, 7, 1, 1}, kFloat64, -2, 2, 4246);
  const std::vector<double> x_values = x.to_vector<double>();
  const std::vector<double> bias_values = bias.to_vector<double>();
  std::vector<double> expected;
  for (int64_t a = 0; a < 13; ++a)
    for (int64_t b = 0; b < 12; ++b)
      for (int64_t c = 0; c < 7; ++c)
        for (int64_t d = 0; d < 10; ++d)
          for (int64_t e = 0; e < 9; ++e)
            expected.push_back(x_values[b * 8190 + d * 819 + e * 91 + c * 13 + a] + bias_values[a * 7 + c]);
  const int threads = get_num_threads();
  for (const int count : {1, 2, 3}) {
    set_num_threads(count);
    const Tensor sum = add(view, bias);  // contiguous output, strided and broadcast inputs
    CHECK(sum.sizes() == Dims{13, 12, 7, 10, 9});
    check_close(sum.to_vector<double>(), expected, {0, 0}, fmt::format("add on {} threads", count));
    Tensor target = zeros({9, 10, 7, 12, 13}, {.dtype = kFloat64});  // written through a strided view
    permute(target, {4, 3, 2, 1, 0}).copy_(sum);
    const std::vector<double> written = target.to_vector<double>();  // [e][d][c][b][a]
    std::vector<double> transposed(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const int64_t flat = static_cast<int64_t>(i);  // (a, b, c, d, e) in [13, 12, 7, 10, 9]
      const int64_t e = flat % 9, d = flat / 9 % 10, c = flat / 90 % 7, b = flat / 630 % 12, a = flat / 7560;
      transposed[e * 10920 + d * 1092 + c * 156 + b * 13 + a] = expected[i];
    }
    check_close(written, transposed, {0, 0}, fmt::format("copy_ into a strided view on {} threads", count));
  }
  set_num_threads(threads);
}

TEST_CASE("transposed inputs staged tile by tile: two of them, a bool mask, an update in place") {
  // Inputs read across their columns are copied into a tile buffer first (pointwise_loop.h's
  // for_each_tile); several staged inputs at once, a bool one, and an output that is the same
  // transposed memory as its input must each read their own tile. References from plain loops.
  const int threads = get_num_threads();
  for (const int count : {1, 2}) {
    set_num_threads(count);
    for (const Dims& sizes : {Dims{130, 70}, Dims{64, 64}, Dims{3, 200}}) {
      const int64_t rows = sizes[0], columns = sizes[1];
      INFO(fmt::format("{} on {} threads", sizes, count));
      const Tensor a = random_tensor({columns, rows}, kFloat64, -2, 2, 51);
      const Tensor b = random_tensor({columns, rows}, kFloat64, -2, 2, 52);
      const Tensor c = random_tensor({columns, rows}, kFloat64, -2, 2, 53);
      const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), cv = c.to_vector<double>();
      std::vector<double> sum(av.size()), picked(av.size()), updated_values(av.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t col = 0; col < columns; ++col) {
          const size_t out = static_cast<size_t>(r * columns + col), in = static_cast<size_t>(col * rows + r);
          sum[out] = av[in] + bv[in];
          picked[out] = cv[in] > 0 ? av[in] : bv[in];
          updated_values[in] = av[in] + 0.5 * bv[in];  // in place: a's own layout
        }
      check_close(add(a.t(), b.t()).to_vector<double>(), sum, {0, 0}, "add of two transposes");
      const Tensor mask = gt(c.t(), zeros_like(c.t()));
      check_close(where(mask, a.t(), b.t()).to_vector<double>(), picked, {0, 0}, "where, transposed mask");
      Tensor updated = a.clone();
      updated.t().add_(b.t(), 0.5);
      check_close(updated.to_vector<double>(), updated_values, {0, 0}, "add_ through a transpose");
    }
  }
  set_num_threads(threads);
}

TEST_CASE("operands transposed in their last two dims go tile by tile: edges, short dims, threads") {
  // The strided loop walks such operands in 64 x 64 tiles of the last two dims. These shapes leave
  // partial tiles at both edges, a dim shorter than a tile (runs then go down the columns), several
  // planes, and chunks of 8 tiles on 1 to 3 threads. References index x's contiguous values.
  for (const Dims& sizes : {Dims{3, 130, 70}, Dims{5, 2, 300}, Dims{2, 700, 3}, Dims{1, 200, 200}}) {
    const int64_t planes = sizes[0], rows = sizes[1], columns = sizes[2];
    const Tensor x = random_tensor(sizes, kFloat64, -2, 2, 4247);
    const Tensor y = random_tensor({planes, columns, rows}, kFloat64, -2, 2, 4248);
    const std::vector<double> x_values = x.to_vector<double>(), y_values = y.to_vector<double>();
    std::vector<double> transposed(x_values.size()), sum(x_values.size());
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t c = 0; c < columns; ++c)
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t at = (p * columns + c) * rows + r;  // in [planes, columns, rows]
          transposed[at] = x_values[(p * rows + r) * columns + c];
          sum[at] = transposed[at] + y_values[at];
        }
    std::vector<double> y_written(y_values.size());  // y copied into x's layout through a transpose
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t c = 0; c < columns; ++c)
        for (int64_t r = 0; r < rows; ++r)
          y_written[(p * rows + r) * columns + c] = y_values[(p * columns + c) * rows + r];
    const int threads = get_num_threads();
    for (const int count : {1, 2, 3}) {
      set_num_threads(count);
      const std::string where = fmt::format("{} on {} threads", sizes, count);
      const Tensor view = x.transpose(1, 2);
      check_close(add(view, y).to_vector<double>(), sum, {0, 0}, "add " + where);
      check_close(view.contiguous().to_vector<double>(), transposed, {0, 0}, "contiguous " + where);
      std::vector<double> rounded = transposed;  // float64 -> float32 conversion through the transpose
      for (double& value : rounded) value = static_cast<float>(value);
      check_close(view.to(kFloat32).to(kFloat64).to_vector<double>(), rounded, {0, 0}, "to float32 " + where);
      Tensor target = zeros(sizes, {.dtype = kFloat64});
      target.transpose(1, 2).copy_(y);  // a transposed output
      check_close(target.to_vector<double>(), y_written, {0, 0}, "copy_ into a transpose " + where);
    }
    set_num_threads(threads);
  }
}

}  // namespace test_pointwise_binary
