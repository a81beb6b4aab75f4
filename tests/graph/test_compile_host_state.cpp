// ember::compile where fn's result depends on more than its inputs' sizes and types: an input's
// layout (reshape() and contiguous() copy or alias by it), a tensor from outside fn read on the
// host, the random generators reseeded inside fn, and a GradScaler whose scale tensor fn makes.
// Each compiled call must return and leave behind what the same eager call would, or refuse.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "graph/capture.h"
#include "graph/compile.h"
#include "runtime/amp/grad_scaler.h"
#include "runtime/ember.h"
#include "runtime/random/generator.h"

namespace test_compile_host_state {

using namespace ember;

namespace {

std::vector<float> values(const Tensor& tensor) { return tensor.contiguous().to_vector<float>(); }

}  // namespace

TEST_CASE("compile: an input's contiguity is guarded, since reshape() views or copies by it") {
  // Captured with a contiguous input (reshape is a view), called with a transposed one of the same
  // shape: eager copies; a replay of the captured view would refuse the strides.
  auto flat = [](const Tensor& x) { return x.reshape({-1}) * 2.0; };
  auto compiled_flat = ember::compile(flat);
  for (int call = 0; call < 2; ++call) compiled_flat(ones({2, 3}));
  const Tensor transposed = arange(6, {.dtype = kFloat32}).view({3, 2}).t();
  CHECK(values(compiled_flat(transposed)) == values(flat(transposed)));
  REQUIRE(compiled_flat.state().recompile_reasons().size() == 1);
  CHECK(compiled_flat.state().recompile_reasons()[0].find("input 0 is not contiguous") != std::string::npos);

  // Captured with a transposed input (reshape copies), called with a contiguous one: eager writes
  // through the view into the caller's tensor, which a replay of the copy would leave alone.
  auto doubled_in_place = [](const Tensor& x) {
    Tensor flat_view = x.reshape({-1});
    flat_view.mul_(2.0);
    return flat_view.sum();
  };
  auto compiled = ember::compile(doubled_in_place);
  for (int call = 0; call < 2; ++call) compiled(ones({3, 2}).t());
  Tensor eager_input = ones({2, 3});
  Tensor compiled_input = ones({2, 3});
  doubled_in_place(eager_input);
  compiled(compiled_input);
  CHECK(values(compiled_input) == values(eager_input));
  CHECK(values(compiled_input) == std::vector<float>(6, 2.0f));
}

TEST_CASE("compile: contiguous() on an input that turns non-contiguous copies instead of writing through") {
  auto scale_copy = [](const Tensor& x) {
    Tensor dense = x.contiguous();
    dense.mul_(3.0);
    return dense;
  };
  auto compiled = ember::compile(scale_copy);
  for (int call = 0; call < 2; ++call) compiled(ones({2, 3}));
  Tensor eager_base = ones({3, 2});
  Tensor compiled_base = ones({3, 2});
  const Tensor eager_result = scale_copy(eager_base.t());
  const Tensor compiled_result = compiled(compiled_base.t());
  CHECK(values(compiled_result) == values(eager_result));
  CHECK(values(compiled_base) == std::vector<float>(6, 1.0f));  // eager leaves the caller's tensor alone
}

TEST_CASE("compile: item() of a tensor from outside fn is a graph break, not a constant") {
  Tensor temperature = full({}, 2.0);
  const Tensor x = ones({3});
  auto scaled = [&](const Tensor& v) { return v * temperature.item(); };
  auto compiled = ember::compile(scaled);
  for (int call = 0; call < 4; ++call) {
    CHECK(compiled(x).sum().item() == doctest::Approx(scaled(x).sum().item()));
    temperature.fill_(temperature.item() + 1.0);
  }
  CHECK_FALSE(compiled.state().graph_breaks().empty());

  auto refusing = ember::compile(scaled, {.fullgraph = true});
  refusing(x);  // the warm-up call runs eagerly
  CHECK_THROWS_WITH_AS(refusing(x), doctest::Contains("made outside the compiled function"), graph::GraphBreak);
}

TEST_CASE("compile: printing inside fullgraph names the call site of str()") {
  auto printing = ember::compile([](const Tensor& v) {
    const Tensor doubled = v * 2.0;
    (void)doubled.str();
    return doubled;
  }, {.fullgraph = true});
  printing(ones({2}));
  CHECK_THROWS_WITH_AS(printing(ones({2})), doctest::Contains("test_compile_host_state.cpp"), graph::GraphBreak);
}

TEST_CASE("compile: manual_seed inside fn is replayed before the random ops after it") {
  auto noisy = [](const Tensor& x) {
    manual_seed(42);
    return x + randn({4});
  };
  const Tensor x = zeros({4});
  const std::vector<float> eager = values(noisy(x));
  auto compiled = ember::compile(noisy, {.fullgraph = true});
  for (int call = 0; call < 4; ++call) CHECK(values(compiled(x)) == eager);
  CHECK(compiled.state().replays() == 2);
  // And the generator stands where an eager call leaves it.
  const std::vector<float> next_eager = values(randn({2}));
  compiled(x);
  CHECK(values(randn({2})) == next_eager);
}

TEST_CASE("compile: reseeding one generator inside fn is a graph break") {
  auto reseeding = [](const Tensor& x) {
    default_generator(kCPU).manual_seed(7);
    return x + randn({2});
  };
  auto compiled = ember::compile(reseeding, {.fullgraph = true});
  compiled(zeros({2}));
  CHECK_THROWS_WITH_AS(compiled(zeros({2})), doctest::Contains("Generator::manual_seed(7)"), graph::GraphBreak);
}

TEST_CASE("compile: a GradScaler's scale made by the first captured call follows update()") {
  amp::GradScaler scaler({.init_scale = 1024.0});
  const Tensor x = ones({4});
  auto scaled = ember::compile([&](const Tensor& v) { return scaler.scale(v.sum()); }, {.warmup_calls = 0});
  for (int call = 0; call < 3; ++call) {
    CHECK(scaled(x).item() == doctest::Approx(scaler.get_scale() * 4.0));
    scaler.update(scaler.get_scale() / 2);
  }
  CHECK(scaled.state().replays() == 2);
}

}  // namespace test_compile_host_state
