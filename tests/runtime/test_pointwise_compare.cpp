// Comparisons (bool results in the promoted dtype) and where(condition, a, b) against references
// computed here, with broadcasting, promotion, non-contiguous inputs and the errors.
#include "pointwise_test_util.h"

namespace test_pointwise_compare {

using namespace pointwise_test;

namespace {

struct CompareCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> function;
  std::function<bool(double, double)> reference;
};

// Values on a coarse grid so that ties (a == b) are common after broadcasting.
Tensor grid_tensor(const Dims& sizes, DType dtype, uint32_t seed) {
  std::vector<double> values = random_values(sizes.product(), -3, 3, seed, 0.5);
  for (double& value : values) value = std::round(value);
  return tensor_from(values, sizes, dtype);
}

void check_compare(const CompareCase& c, const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor output = c.function(a, b);
  CHECK_MESSAGE(output.dtype() == kBool, what);
  const Dims sizes = broadcast_shapes(a.sizes(), b.sizes(), "test");
  REQUIRE_MESSAGE(output.sizes() == sizes, what);
  const std::vector<double> a_values = values_of(a);
  const std::vector<double> b_values = values_of(b);
  const std::vector<bool> actual = output.to_vector<bool>();
  int mismatches = 0;
  for (int64_t i = 0; i < sizes.product(); ++i) {
    const bool expected = c.reference(a_values[broadcast_source(i, sizes, a.sizes())],
                                      b_values[broadcast_source(i, sizes, b.sizes())]);
    if (actual[i] != expected) ++mismatches;
  }
  CHECK_MESSAGE(mismatches == 0, what);
}

}  // namespace

TEST_CASE("comparisons broadcast, promote and return bool") {
  const std::vector<CompareCase> cases{
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double a, double b) { return a == b; }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double a, double b) { return a != b; }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double a, double b) { return a < b; }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double a, double b) { return a <= b; }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double a, double b) { return a > b; }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double a, double b) { return a >= b; }},
      {"operator <", [](const Tensor& a, const Tensor& b) { return a < b; }, [](double a, double b) { return a < b; }},
  };
  auto next_seed = [counter = uint32_t{900}]() mutable { return ++counter; };
  for (const CompareCase& c : cases) {
    for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64}) {
      const std::string what = std::string(c.name) + " " + std::string(dtype_name(dtype));
      check_compare(c, grid_tensor({4, 5}, dtype, next_seed()), grid_tensor({4, 5}, dtype, next_seed()), what);
      check_compare(c, grid_tensor({3, 1, 5}, dtype, next_seed()), grid_tensor({4, 5}, dtype, next_seed()),
                    what + " broadcast");
      check_compare(c, grid_tensor({5, 4}, dtype, next_seed()).t(), grid_tensor({5}, dtype, next_seed()),
                    what + " transposed");
      check_compare(c, grid_tensor({}, dtype, next_seed()), grid_tensor({3}, dtype, next_seed()), what + " 0-d");
      check_compare(c, grid_tensor({0, 5}, dtype, next_seed()), grid_tensor({5}, dtype, next_seed()), what + " size-0");
    }
    // Mixed dtypes compare in the promoted type: int 2 vs float 2.5, bf16 vs f32.
    check_compare(c, from_vector<int32_t>({1, 2, 3}), from_vector<float>({2.5f}), std::string(c.name) + " int float");
    check_compare(c, random_tensor({6}, kBFloat16, -2, 2, next_seed()),
                  random_tensor({6}, kFloat32, -2, 2, next_seed()),
                  std::string(c.name) + " bf16 f32");
    check_compare(c, from_vector<bool>({true, false}), from_vector<int64_t>({1, 1}), std::string(c.name) + " bool int");
    check_compare(c, grid_tensor({100003}, kFloat32, next_seed()), grid_tensor({100003}, kFloat32, next_seed()),
                  std::string(c.name) + " large");
  }
}

TEST_CASE("comparisons treat NaN as unordered") {
  const Tensor a = from_vector<float>({std::nanf(""), 1.f});
  const Tensor b = from_vector<float>({std::nanf(""), std::nanf("")});
  CHECK(eq(a, b).to_vector<bool>() == std::vector<bool>{false, false});
  CHECK(ne(a, b).to_vector<bool>() == std::vector<bool>{true, true});
  CHECK(le(a, b).to_vector<bool>() == std::vector<bool>{false, false});
}

namespace {

void check_where(const Tensor& condition, const Tensor& a, const Tensor& b, DType expected_dtype,
                 const std::string& what) {
  const Tensor output = where(condition, a, b);
  CHECK_MESSAGE(output.dtype() == expected_dtype, what);
  const Dims sizes = broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "test"), b.sizes(), "test");
  REQUIRE_MESSAGE(output.sizes() == sizes, what);
  const std::vector<bool> c_values = condition.to_vector<bool>();
  const std::vector<double> a_values = values_of(a);
  const std::vector<double> b_values = values_of(b);
  std::vector<double> expected(sizes.product());
  for (int64_t i = 0; i < sizes.product(); ++i) {
    expected[i] = c_values[broadcast_source(i, sizes, condition.sizes())]
                      ? a_values[broadcast_source(i, sizes, a.sizes())]
                      : b_values[broadcast_source(i, sizes, b.sizes())];
  }
  check_close(values_of(output), expected, {0, 0}, what);  // a select is exact
}

Tensor random_mask(const Dims& sizes, uint32_t seed) {
  return gt(random_tensor(sizes, kFloat32, -1, 1, seed), zeros({}));
}

}  // namespace

TEST_CASE("where broadcasts all three inputs and promotes a with b") {
  auto next_seed = [counter = uint32_t{1500}]() mutable { return ++counter; };
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt32, kInt64}) {
    const std::string what = std::string(dtype_name(dtype));
    auto values = [&](const Dims& sizes) { return grid_tensor(sizes, dtype, next_seed()); };
    check_where(random_mask({4, 5}, next_seed()), values({4, 5}), values({4, 5}), dtype, what);
    check_where(random_mask({3, 1}, next_seed()), values({1, 4}), values({}), dtype, what + " broadcast");
    check_where(random_mask({5, 4}, next_seed()).t(), values({5, 4}).t(), values({4, 5}), dtype, what + " transposed");
    check_where(random_mask({0, 4}, next_seed()), values({4}), values({4}), dtype, what + " size-0");
    check_where(random_mask({}, next_seed()), values({}), values({}), dtype, what + " 0-d");
  }
  check_where(random_mask({100003}, next_seed()), random_tensor({100003}, kFloat32, -1, 1, next_seed()),
              random_tensor({100003}, kFloat32, -1, 1, next_seed()), kFloat32, "large");
  // torch.where(mask, int32 tensor, float32 tensor) -> float32; bf16 with f16 -> float32.
  check_where(random_mask({3}, next_seed()), from_vector<int32_t>({1, 2, 3}), from_vector<float>({0.5f}), kFloat32,
              "int with float");
  check_where(random_mask({2}, next_seed()), random_tensor({2}, kBFloat16, -1, 1, next_seed()),
              random_tensor({2}, kFloat16, -1, 1, next_seed()), kFloat32, "bf16 with f16");
  check_where(random_mask({4}, next_seed()), from_vector<bool>({true, true, false, false}),
              from_vector<bool>({false, true, false, true}), kBool, "bool");
}

TEST_CASE("where rejects a non-bool condition and unbroadcastable shapes") {
  CHECK_THROWS_WITH_AS(where(ones({2}), ones({2}), ones({2})),
                       doctest::Contains("where: expected a bool condition, got float32 (shape [2])"), Error);
  const Tensor mask = from_vector<bool>({true, false});
  CHECK_THROWS_WITH_AS(where(mask, ones({3}), ones({2})),
                       doctest::Contains("where: shapes [2] (condition), [3] and [2] cannot be broadcast"), Error);
}

}  // namespace test_pointwise_compare
