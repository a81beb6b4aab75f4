// The guards on how a compiled function's arguments relate to each other and to the tensors fn
// reads itself: an argument that was a state tensor or another argument at the capture must be so
// again, one that was separate must be separate, every overlap counts (not only the first), and a
// non-contiguous argument keeps its strides. Each call is checked against float64 references and
// against eager on copies, results and writes into the arguments both.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"

namespace test_compile_alias_guards {

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& tensor) {
  return to_dtype(tensor, kFloat64).contiguous().to_vector<double>();
}

// Every element of `actual` within `tolerance` of `expected`, relative to max(1, |expected|): an
// elementwise float result rounds once, a float sum of 20 elements a few times more.
void check_values(const Tensor& actual, const std::vector<double>& expected, double tolerance = 1e-6) {
  const std::vector<double> got = values_of(actual);
  REQUIRE(got.size() == expected.size());
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == doctest::Approx(expected[k]).epsilon(tolerance));
}

}  // namespace

TEST_CASE("compile: an argument that is a tensor fn also reads itself is guarded to stay that tensor") {
  NoGradGuard no_grad;
  // Calls 0-1 (warm-up, capture) pass w itself, or a detach()ed alias of it; 2-4 other tensors;
  // 5 w again. The capture reads w and the argument as one graph value: only the argument's
  // identity tells whether that graph still computes fn.
  for (const bool detached : {false, true}) {
    INFO("detached ", detached);
    manual_seed(11);
    const Tensor w = randn({4});
    const std::vector<double> w_values = values_of(w);
    auto fn = [&](const Tensor& x) { return sub(x, mul(w, 2.0)); };
    auto compiled = ember::compile(fn, {.fullgraph = true});
    for (int call = 0; call < 6; ++call) {
      INFO("call ", call);
      manual_seed(20 + static_cast<uint64_t>(call));
      const bool pass_w = call < 2 || call == 5;
      const Tensor x = pass_w ? (detached ? w.detach() : w) : randn({4});
      const std::vector<double> x_values = values_of(x);
      std::vector<double> expected;
      for (size_t k = 0; k < 4; ++k) expected.push_back(x_values[k] - 2.0 * w_values[k]);
      const Tensor result = compiled(x);
      check_values(result, expected);
      CHECK(graph_test::max_relative_error(result, fn(x)) <= 1e-6);
    }
    // Call 2 found the capture's graph reading w through its argument and captured the separate case.
    CHECK(compiled.state().captures() == 2);
  }
}

TEST_CASE("compile: a later argument that is another tensor than the captured one, fn not reading it, replays") {
  NoGradGuard no_grad;
  manual_seed(12);
  const Tensor w = randn({4});
  std::vector<Tensor> batches;  // alive throughout: each call's argument outlives the call
  for (int k = 0; k < 4; ++k) batches.push_back(randn({4}));
  auto fn = [&](const Tensor& x) { return add(mul(x, 2.0), w); };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  for (int call = 0; call < 6; ++call) {
    INFO("call ", call);
    const Tensor& x = batches[static_cast<size_t>(call % 4)];
    const std::vector<double> x_values = values_of(x), w_values = values_of(w);
    std::vector<double> expected;
    for (size_t k = 0; k < 4; ++k) expected.push_back(2.0 * x_values[k] + w_values[k]);
    check_values(compiled(x), expected);
  }
  // Call 2 ran fn once more to learn that the captured argument is not read otherwise; one graph.
  CHECK(compiled.state().captures() == 1);
  CHECK(compiled.state().replays() == 3);
}

TEST_CASE("compile: the same tensor passed twice is not the same variant as two overlapping tensors") {
  NoGradGuard no_grad;
  auto fn = [](const Tensor& a, const Tensor& b) { return sub(a, mul(b, 2.0)); };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  for (int call = 0; call < 5; ++call) {
    INFO("call ", call);
    manual_seed(30 + static_cast<uint64_t>(call));
    const Tensor base = randn({8});
    const Tensor a = base.slice(0, 0, 4);
    const Tensor b = call < 2 || call == 4 ? a : base.slice(0, 1, 5);  // 0-1, 4: (a, a); 2-3: overlapping
    const std::vector<double> a_values = values_of(a), b_values = values_of(b);
    std::vector<double> expected;
    for (size_t k = 0; k < 4; ++k) expected.push_back(a_values[k] - 2.0 * b_values[k]);
    check_values(compiled(a, b), expected);
  }
  CHECK(compiled.state().captures() == 2);
  CHECK(compiled.state().replays() == 2);
  REQUIRE(compiled.state().recompile_reasons().size() == 1);
  CHECK(compiled.state().recompile_reasons()[0] ==
        "input 1 shares memory with input 0, the graph was captured with input 0 (the same tensor)");
}

TEST_CASE("compile: an argument overlapping two others is guarded on both overlaps") {
  NoGradGuard no_grad;
  // Reads c, doubles a or b in place, reads c again: the second sum sees the write where the
  // written argument overlaps c. Calls 0-1 (warm-up, capture): c = base[1:3] overlaps a =
  // base[0:2], b is apart; later calls: b = base[2:4] overlaps c too, a new variant whose graph
  // must not merge the two sums whichever of c's two sharers is written.
  for (const int written : {0, 1}) {
    INFO("written ", written == 0 ? "a" : "b");
    auto fn = [written](const Tensor& a, const Tensor& b, const Tensor& c) {
      const Tensor before = sum(c);
      Tensor(written == 0 ? a : b).mul_(2.0);
      const Tensor after = sum(c);
      return std::make_tuple(mul(before, 1.5), mul(after, 1.5), sum(a));
    };
    auto compiled = ember::compile(fn, {.fullgraph = true});
    for (int call = 0; call < 5; ++call) {
      INFO("call ", call);
      manual_seed(50 + static_cast<uint64_t>(call));
      const Tensor base = randn({6}), other = randn({2});
      const Tensor eager_base = base.clone(), eager_other = other.clone();
      const bool apart = call < 2;
      const std::vector<double> v = values_of(base);
      auto args = [&](const Tensor& on_base, const Tensor& on_other) {
        return std::make_tuple(on_base.slice(0, 0, 2), apart ? on_other.slice(0, 0, 2) : on_base.slice(0, 2, 4),
                               on_base.slice(0, 1, 3));
      };
      const auto [a, b, c] = args(base, other);
      const auto [before, after, sum_a] = compiled(a, b, c);
      const double c_after = written == 0 ? 2.0 * v[1] + v[2] : (apart ? v[1] + v[2] : v[1] + 2.0 * v[2]);
      check_values(before, {1.5 * (v[1] + v[2])}, 1e-5);
      check_values(after, {1.5 * c_after}, 1e-5);
      check_values(sum_a, {(written == 0 ? 2.0 : 1.0) * (v[0] + v[1])}, 1e-5);
      const auto [ea, eb, ec] = args(eager_base, eager_other);
      const auto [eager_before, eager_after, eager_sum_a] = fn(ea, eb, ec);
      CHECK(graph_test::max_relative_error(after, eager_after) <= 1e-6);
      CHECK(graph_test::max_relative_error(base, eager_base) == 0);
      CHECK(graph_test::max_relative_error(other, eager_other) == 0);
    }
    CHECK(compiled.state().captures() == 2);
    REQUIRE(compiled.state().recompile_reasons().size() == 1);
    CHECK(compiled.state().recompile_reasons()[0] ==
          "input 2 shares memory with input 0 and input 1, the graph was captured with input 0");
  }
}

TEST_CASE("compile: a non-contiguous argument is guarded on its strides") {
  NoGradGuard no_grad;
  // x.t() is contiguous for x = b.t(), so reshape() aliases x and the write reaches it; for a
  // strided slice reshape() copies and x is left alone. Both layouts are non-contiguous.
  auto fn = [](const Tensor& x) {
    Tensor flat = x.t().reshape({20});
    flat.mul_(2.0);
    return sum(flat);
  };
  for (const bool transposed_first : {false, true}) {
    INFO("transposed first ", transposed_first);
    auto compiled = ember::compile(fn, {.fullgraph = true});
    for (int call = 0; call < 4; ++call) {
      INFO("call ", call);
      const bool transposed = (call < 2) == transposed_first;
      manual_seed(60 + static_cast<uint64_t>(call));
      const Tensor base = transposed ? randn({4, 5}) : randn({5, 8});
      const Tensor eager_base = base.clone();
      auto view = [&](const Tensor& b) { return transposed ? b.t() : b.slice(1, 0, 8, 2); };
      const Tensor x = view(base);
      const std::vector<double> before = values_of(x);
      double total = 0;
      for (double value : before) total += value;
      check_values(compiled(x), {2.0 * total}, 1e-5);
      std::vector<double> expected_x = before;
      if (transposed)
        for (double& value : expected_x) value *= 2.0;
      check_values(x, expected_x);
      (void)fn(view(eager_base));
      CHECK(graph_test::max_relative_error(base, eager_base) == 0);
    }
    CHECK(compiled.state().captures() == 2);
  }
}

TEST_CASE("compile: an expanded argument is refused by an in-place update, as eager refuses it") {
  NoGradGuard no_grad;
  auto fn = [](const Tensor& x) {
    Tensor(x).mul_(2.0);
    return sum(x);
  };
  auto compiled = ember::compile(fn, {.fullgraph = true});
  for (int call = 0; call < 2; ++call) {  // warm-up and capture with a strided [4, 5] slice
    manual_seed(70 + static_cast<uint64_t>(call));
    const Tensor base = randn({4, 10});
    const std::vector<double> values = values_of(base.slice(1, 0, 10, 2));
    double total = 0;
    for (double value : values) total += 2.0 * value;
    check_values(compiled(base.slice(1, 0, 10, 2)), {total}, 1e-5);
  }
  manual_seed(72);
  const Tensor row = randn({1, 5});
  const std::vector<double> row_values = values_of(row);
  std::string eager_error;
  try {
    (void)fn(row.clone().expand({4, 5}));
  } catch (const Error& error) {
    eager_error = error.what();
  }
  REQUIRE(eager_error.find("share one address") != std::string::npos);
  CHECK_THROWS_WITH_AS(compiled(row.expand({4, 5})), doctest::Contains("share one address"), Error);
  check_values(row, row_values);  // untouched, as eager leaves it
}

}  // namespace test_compile_alias_guards
