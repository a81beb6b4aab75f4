// Inputs at the edges of int64 and of the dtypes, found by probing the API under ASan/UBSan: each
// must give PyTorch's result or a clear ember::Error, never a wrapped size, undefined behaviour or
// a silently wrong value.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_hostile_inputs {

using namespace ember;
using ember::testing::error_of;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Tensor longs(const std::vector<int64_t>& values) {
  return from_vector(values, Dims{static_cast<int64_t>(values.size())}, {.dtype = kInt64, .device = kCPU});
}
Tensor floats(const std::vector<float>& values) {
  return from_vector(values, Dims{static_cast<int64_t>(values.size())}, {.dtype = kFloat32, .device = kCPU});
}
// Two's-complement arithmetic, as the reference for ember's wrapping integer ops.
int64_t wrapped(uint64_t bits) { return static_cast<int64_t>(bits); }

}  // namespace

TEST_CASE("hostile inputs: element and byte counts past int64 are errors, not wrapped allocations") {
  const TensorOptions on_cpu{.device = kCPU};
  CHECK_THROWS_WITH_AS(zeros({int64_t{1} << 62}, on_cpu), doctest::Contains("needs more bytes than an int64"), Error);
  CHECK_THROWS_WITH_AS(zeros({int64_t{1} << 40, int64_t{1} << 40}, on_cpu),
                       doctest::Contains("more elements than an int64 can count"), Error);
  CHECK_THROWS_WITH_AS(linspace(0, 1, int64_t{1} << 62, on_cpu), doctest::Contains("more bytes than an int64"), Error);
  float one = 1.0f;
  CHECK_THROWS_AS(from_blob(&one, {int64_t{1} << 62, 4}, kFloat32), Error);
  CHECK_THROWS_WITH_AS(zeros({1}, on_cpu).expand({int64_t{1} << 40, int64_t{1} << 40}),
                       doctest::Contains("expand: target shape"), Error);
  // Expanded pieces need no memory; four of 2^62 rows wrapped to an empty result.
  const Tensor huge = zeros({1}, on_cpu).expand({int64_t{1} << 62});
  for (const int pieces : {2, 4})
    CHECK_THROWS_WITH_AS(cat(std::vector<Tensor>(pieces, huge), 0),
                         doctest::Contains("cat: the sizes along dim 0 add up to more than an int64 can count"), Error);
  // A 0 dim makes any shape empty, however large the others.
  CHECK(zeros({0}, on_cpu).view({int64_t{1} << 62, 8, 0}).numel() == 0);
  // Empty, but its strides would pass int64 (they were computed with a signed overflow).
  CHECK_THROWS_WITH_AS(zeros({0, int64_t{1} << 62, int64_t{1} << 62}, on_cpu),
                       doctest::Contains("has strides past what an int64 can hold"), Error);
}

TEST_CASE("hostile inputs: views with sizes or steps at int64's edges") {
  const Tensor x = arange(0, 10, 1, {.dtype = kFloat32, .device = kCPU});
  const Tensor every = x.slice(0, 1, 10, kMax);  // a step past the end keeps one element
  REQUIRE(every.numel() == 1);
  CHECK(every.item() == 1.0);
  CHECK_THROWS_WITH_AS(x.narrow(0, 5, kMax), doctest::Contains("narrow: start 5 and length"), Error);
  CHECK_THROWS_WITH_AS(x.narrow(0, -1, kMax), doctest::Contains("narrow: start -1 and length"), Error);
  CHECK_THROWS_WITH_AS(zeros({1}, {.device = kCPU}).expand({-2}), doctest::Contains("expand: size -2"), Error);
  CHECK_THROWS_WITH_AS(one_hot(longs({kMax})), doctest::Contains("one_hot: class index 9223372036854775807 is too large"),
                       Error);
  // correction near int64's limits: the divisor is computed without overflowing.
  const double spread = var(floats({1, 2, 3}), {}, kMin).item();
  CHECK(spread >= 0.0);
  CHECK(spread < 1e-15);
}

TEST_CASE("hostile inputs: integer arithmetic wraps around like PyTorch's") {
  CHECK(add(longs({kMax}), longs({1})).item<int64_t>() == kMin);
  CHECK(sub(longs({kMin}), longs({1})).item<int64_t>() == kMax);
  CHECK(mul(longs({kMax}), longs({3})).item<int64_t>() == wrapped(static_cast<uint64_t>(kMax) * 3u));
  CHECK(add(longs({kMax}), longs({2}), 3.0).item<int64_t>() == wrapped(static_cast<uint64_t>(kMax) + 6u));
  CHECK(mul(longs({3}), 9e18).item<int64_t>() == wrapped(uint64_t{3} * 9000000000000000000u));
  CHECK(add(longs({kMax}), 1.0).item<int64_t>() == kMin);
  CHECK(rsub(longs({kMin}), 0.0).item<int64_t>() == kMin);
  CHECK(sum(longs({kMax, 1})).item<int64_t>() == kMin);
}

TEST_CASE("hostile inputs: alpha on integer tensors must be an integer of their range") {
  const Tensor a = longs({4});
  CHECK_THROWS_WITH_AS(sub(a, longs({1}), 0.5), doctest::Contains("sub: alpha must be an integer"), Error);
  CHECK_THROWS_WITH_AS(add(a, longs({1}), 1e300), doctest::Contains("add: alpha must be an integer"), Error);
  CHECK_THROWS_WITH_AS(add(a, longs({1}), NAN), doctest::Contains("alpha must be an integer"), Error);
  Tensor target = longs({1});
  CHECK_THROWS_WITH_AS(target.add_(longs({1}), 2.5), doctest::Contains("add_: alpha must be an integer"), Error);
  CHECK(target.item<int64_t>() == 1);  // nothing written
  CHECK(add(a, longs({1}), 2.0).item<int64_t>() == 6);
  CHECK(add(floats({4}), floats({1}), 0.5).item() == 4.5);  // floats take any alpha
  // bool is integral for alpha too, as PyTorch's alpha check.
  const Tensor mask = from_vector<bool>({true, false});
  CHECK_THROWS_WITH_AS(add(mask, mask, 0.5),
                       doctest::Contains("add: alpha must be an integer for bool tensors, got 0.5"), Error);
  CHECK_THROWS_WITH_AS(add(mask, mask, NAN), doctest::Contains("alpha must be an integer for bool tensors"), Error);
  Tensor flags = mask.clone();
  CHECK_THROWS_WITH_AS(flags.add_(mask, 0.5), doctest::Contains("add_: alpha must be an integer"), Error);
  CHECK(add(mask, mask, 2.0).dtype() == kBool);
}

TEST_CASE("hostile inputs: subtracting an integer dtype's lowest value wraps as PyTorch's") {
  // a - min has no negation to add in range; modulo 2^bits it equals a + min.
  CHECK(sub(from_vector<int32_t>({1, 2}), -2147483648.0).to_vector<int32_t>() ==
        std::vector<int32_t>{-2147483647, -2147483646});
  CHECK(sub(longs({1, kMin}), -9223372036854775808.0).to_vector<int64_t>() == std::vector<int64_t>{kMin + 1, 0});
  CHECK(sub(from_vector<int32_t>({1}), -2147483647.0).item<int32_t>() == -2147483648);
  CHECK_THROWS_WITH_AS(sub(from_vector<int32_t>({1}), -2147483649.0), doctest::Contains("out of range for a int32"),
                       Error);
}

TEST_CASE("hostile inputs: item<int64_t>() is exact past 2^53 and refuses what no int64 holds") {
  const int64_t big = (int64_t{1} << 53) + 1;
  CHECK(longs({big}).item<int64_t>() == big);
  CHECK(longs({kMax}).item<int64_t>() == kMax);
  CHECK(floats({-2.75f}).item<int64_t>() == -2);
  CHECK_THROWS_WITH_AS(floats({NAN}).item<int64_t>(), doctest::Contains("does not fit an integer"), Error);
  CHECK_THROWS_AS(floats({1e30f}).item<int64_t>(), Error);
}

TEST_CASE("hostile inputs: foreach optimizers refuse an expanded parameter, as the per-parameter path does") {
  for (const bool foreach : {true, false}) {
    INFO("foreach ", foreach);
    Tensor base = ones({1}, {.device = kCPU});
    Tensor param = base.expand({3});
    param.set_grad(ones({3}, {.device = kCPU}));
    optim::SGD sgd({param}, {.lr = 0.1, .foreach = foreach});
    CHECK_THROWS_WITH_AS(sgd.step(), doctest::Contains("several of its elements share one address"), Error);
    CHECK(base.item() == 1.0);
  }
}

TEST_CASE("hostile inputs: a NaN clamp bound gives NaN, an out-of-range dim is refused on 0-d and empty inputs") {
  const Tensor low = clamp(floats({1, 5}), NAN, std::nullopt);
  for (float value : low.to_vector<float>()) CHECK(std::isnan(value));
  const Tensor high = clamp(longs({1, 5}), std::nullopt, NAN);
  CHECK(high.dtype() == kFloat32);
  for (float value : high.to_vector<float>()) CHECK(std::isnan(value));
  CHECK(clamp(floats({1, 5}), 2.0, 4.0).to_vector<float>() == std::vector<float>{2, 4});
  CHECK_THROWS_WITH_AS(index_select(scalar_tensor(5, {.device = kCPU}), 3, longs({0})),
                       doctest::Contains("index_select: dim 3 is out of range"), Error);
  CHECK_THROWS_WITH_AS(cat({zeros({0}, {.device = kCPU}), zeros({0}, {.device = kCPU})}, 7),
                       doctest::Contains("cat: dim 7 is out of range"), Error);
}

TEST_CASE("hostile inputs: size, stride, select and narrow of a 0-d tensor are errors, not reads past its dims") {
  const Tensor scalar = scalar_tensor(1, {.device = kCPU});
  CHECK_THROWS_WITH_AS(scalar.size(0), doctest::Contains("size: dim 0 of a 0-d tensor"), Error);
  CHECK_THROWS_WITH_AS(scalar.stride(-1), doctest::Contains("stride: dim -1 of a 0-d tensor"), Error);
  CHECK_THROWS_WITH_AS(scalar.select(0, 0), doctest::Contains("select: cannot be applied to a 0-d tensor"), Error);
  CHECK_THROWS_WITH_AS(scalar.narrow(0, 0, 1), doctest::Contains("narrow: cannot be applied to a 0-d tensor"), Error);
  CHECK(scalar.sum(Dims{0}).item() == 1.0);  // reductions still take dim 0 of a 0-d tensor, as PyTorch's do
}

TEST_CASE("hostile inputs: SGD's dampening must be finite") {
  Tensor param = ones({2}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(optim::SGD({param}, {.momentum = 0.9, .dampening = NAN}),
                       doctest::Contains("dampening must be finite"), Error);
}

TEST_CASE("hostile inputs: a value an integer tensor cannot hold is refused by full, fill_, arange and linspace") {
  const TensorOptions int64_cpu{.dtype = kInt64, .device = kCPU};
  const TensorOptions int32_cpu{.dtype = kInt32, .device = kCPU};
  CHECK_THROWS_WITH_AS(full({2}, NAN, int64_cpu), doctest::Contains("full: value nan cannot be stored in an int64"),
                       Error);
  CHECK_THROWS_AS(full({2}, 1e30, int32_cpu), Error);
  CHECK(full({2}, 2.75, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{2, 2});  // truncated, as PyTorch
  Tensor target = zeros({2}, int64_cpu);
  CHECK_THROWS_WITH_AS(target.fill_(NAN), doctest::Contains("fill_: value nan"), Error);
  CHECK(target.to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  CHECK_THROWS_WITH_AS(arange(0, 6e9, 2e9, int32_cpu), doctest::Contains("arange: value 4000000000 cannot be stored in an int32"), Error);
  CHECK_THROWS_WITH_AS(arange(0, 1e300, 1, {.device = kCPU}), doctest::Contains("more elements than an int64"), Error);
  CHECK_THROWS_WITH_AS(linspace(0, NAN, 3, int64_cpu), doctest::Contains("linspace: value nan"), Error);
  CHECK(arange(0, 6e9, 2e9, int64_cpu).to_vector<int64_t>() == std::vector<int64_t>{0, 2000000000, 4000000000});
}

TEST_CASE("hostile inputs: factory and reshape errors name the function called, not the op it dispatches") {
  const TensorOptions int32_cpu{.dtype = kInt32, .device = kCPU};
  CHECK_THROWS_WITH_AS(zeros({-1}), doctest::Contains("zeros: negative size in shape [-1]"), Error);
  CHECK_THROWS_WITH_AS(ones({2, -3}), doctest::Contains("ones: negative size in shape [2, -3]"), Error);
  CHECK_THROWS_WITH_AS(empty({-2}), doctest::Contains("empty: negative size"), Error);
  CHECK_THROWS_WITH_AS(scalar_tensor(1e20, int32_cpu),
                       doctest::Contains("scalar_tensor: value 1e+20 cannot be stored in an int32"), Error);
  CHECK_THROWS_WITH_AS(full_like(ones({2}, int32_cpu), 1e20),
                       doctest::Contains("full_like: value 1e+20 cannot be stored in an int32"), Error);
  CHECK_THROWS_WITH_AS(ones({2, 3}).reshape({-2, 3}), doctest::Contains("reshape: invalid size -2 in shape [-2, 3]"),
                       Error);
  CHECK_THROWS_WITH_AS(ones({2, 3}).reshape({4, -1}), doctest::Contains("reshape: shape [4, -1] is invalid"), Error);
  CHECK_THROWS_WITH_AS(ones({2, 3}).view({-1, -1}), doctest::Contains("view: only one dimension can be -1"), Error);
  // A shape whose element count overflows int64 is refused, not multiplied out.
  const int64_t huge = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(ones({2, 3}).reshape({huge, huge, 0, -1}), doctest::Contains("reshape: shape"), Error);
  CHECK_THROWS_WITH_AS(zeros({huge, huge}), doctest::Contains("more elements than an int64"), Error);
}

TEST_CASE("hostile inputs: set_num_threads refuses counts OpenMP cannot start, naming the call site") {
  const int before = get_num_threads();
  CHECK_THROWS_WITH_AS(set_num_threads(0), doctest::Contains("set_num_threads: expected 1 to 1024 threads, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(set_num_threads(100000), doctest::Contains("test_hostile_inputs.cpp"), Error);
  CHECK(get_num_threads() == before);
}

TEST_CASE("hostile inputs: a random factory refused for its shape draws nothing from the generator") {
  manual_seed(11);
  const std::vector<float> expected = randn({3}).to_vector<float>();
  manual_seed(11);
  const int64_t huge = int64_t{1} << 40;
  CHECK_THROWS_WITH_AS(randn({-1}), doctest::Contains("randn: negative size in shape [-1]"), Error);
  CHECK_THROWS_WITH_AS(rand({huge, huge}), doctest::Contains("rand: shape"), Error);
  CHECK_THROWS_WITH_AS(randint(0, 5, {2, -4}), doctest::Contains("randint: negative size"), Error);
  CHECK(randn({3}).to_vector<float>() == expected);
}

TEST_CASE("hostile inputs: set_grad refuses a gradient of another shape or dtype, retain_grad one without grad") {
  Tensor param = ones({3}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(param.set_grad(ones({5}, {.device = kCPU})),
                       doctest::Contains("set_grad: the gradient is [5] float32 on cpu but the tensor is [3] float32 "
                                         "on cpu"),
                       Error);
  // A float64 gradient on a float32 parameter would fail later, inside an optimizer step.
  const std::string error = error_of([&] { param.set_grad(ones({3}, {.dtype = kFloat64, .device = kCPU})); });
  CHECK(error.find("set_grad: the gradient is [3] float64 on cpu but the tensor is [3] float32 on cpu") !=
        std::string::npos);
  CHECK(error.find("test_hostile_inputs.cpp") != std::string::npos);  // the caller's line
  CHECK_FALSE(param.grad().defined());
  CHECK_THROWS_WITH_AS(param.retain_grad(),
                       doctest::Contains("retain_grad: the tensor (shape [3]) does not require grad"), Error);
}

TEST_CASE("hostile inputs: item<T> refuses a value T cannot hold instead of wrapping it") {
  const Tensor big = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max()}, {1}, {.device = kCPU});
  CHECK(big.item<int64_t>() == std::numeric_limits<int64_t>::max());
  CHECK_THROWS_WITH_AS(big.item<int32_t>(), doctest::Contains("does not fit a 32-bit signed integer"), Error);
  const Tensor three_hundred = full({1}, 300.0, {.dtype = kInt32, .device = kCPU});
  CHECK(three_hundred.item<int16_t>() == 300);
  CHECK_THROWS_WITH_AS(three_hundred.item<uint8_t>(),
                       doctest::Contains("int32 300 does not fit a 8-bit unsigned integer"), Error);
  CHECK_THROWS_WITH_AS(full({1}, -1.0, {.dtype = kInt64, .device = kCPU}).item<uint64_t>(),
                       doctest::Contains("does not fit a 64-bit unsigned integer"), Error);
  CHECK_THROWS_WITH_AS(full({1}, 3e9, {.dtype = kFloat64, .device = kCPU}).item<int>(),
                       doctest::Contains("does not fit a 32-bit signed integer"), Error);
  CHECK_THROWS_WITH_AS(full({1}, 1e300, {.dtype = kFloat64, .device = kCPU}).item<float>(),
                       doctest::Contains("item<float>: float64"), Error);
  CHECK(std::isinf(full({1}, INFINITY, {.dtype = kFloat64, .device = kCPU}).item<float>()));  // not finite: kept
}

TEST_CASE("hostile inputs: subtracting a number from a bool tensor is refused, as every other bool subtraction") {
  const Tensor mask = from_vector(std::vector<bool>{true, false}, {2}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(sub(mask, 1.0), doctest::Contains("sub: subtraction with a bool tensor is not supported"),
                       Error);
  const Tensor counts = from_vector(std::vector<int64_t>{1, 2}, {2}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(sub(counts, 1e30), doctest::Contains("sub: scalar 1e+30 is out of range for a int64 result"),
                       Error);
  CHECK(sub(counts, 1.0).to_vector<int64_t>() == std::vector<int64_t>{0, 1});
}

TEST_CASE("hostile inputs: unsqueeze and stack name the rank of the tensor they were given") {
  const Tensor matrix = ones({2, 3}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(matrix.unsqueeze(3),
                       doctest::Contains("unsqueeze: dim 3 is out of range for a new dim of a tensor of rank 2 "
                                         "(expected -3 to 2)"),
                       Error);
  CHECK(matrix.unsqueeze(-3).sizes() == Dims{1, 2, 3});
  const Tensor vector = ones({4}, {.device = kCPU});
  CHECK_THROWS_WITH_AS(stack({vector, vector}, 2),
                       doctest::Contains("stack: dim 2 is out of range for a new dim of a tensor of rank 1"), Error);
}

TEST_CASE("hostile inputs: a data_ptr of the wrong type and a hook changing a gradient's shape are user errors") {
  const Tensor values = floats({1, 2});
  CHECK_THROWS_WITH_AS(values.data_ptr<double>(),
                       doctest::Contains("data_ptr: the tensor's dtype is float32, the pointer asked for is to float64"),
                       Error);
  CHECK_THROWS_WITH_AS(values.data_ptr<double>(), doctest::Contains("test_hostile_inputs.cpp"), Error);
  for (const bool leaf : {true, false}) {
    INFO("hook on a ", leaf ? "leaf" : "non-leaf");
    Tensor x = ones({3}, {.device = kCPU}).requires_grad_();
    Tensor hooked = leaf ? x : mul(x, 2.0);
    hooked.register_hook([](const Tensor&) { return ones({5}, {.device = kCPU}); });
    CHECK_THROWS_WITH_AS(sum(mul(hooked, 3.0)).backward(),
                         doctest::Contains("register_hook: a hook returned a gradient [5] float32 on cpu for a "
                                           "gradient [3] float32 on cpu"),
                         Error);
    Tensor y = ones({2}, {.dtype = kFloat64, .device = kCPU}).requires_grad_();
    Tensor hooked_y = leaf ? y : mul(y, 2.0);
    hooked_y.register_hook([](const Tensor&) { return zeros({2}, {.dtype = kInt64, .device = kCPU}); });
    CHECK_THROWS_WITH_AS(sum(hooked_y).backward(),
                         doctest::Contains("a hook returned a gradient [2] int64 on cpu for a gradient [2] float64"),
                         Error);
  }
}

}  // namespace test_hostile_inputs
