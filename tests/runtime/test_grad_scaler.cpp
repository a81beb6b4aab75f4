// amp::GradScaler against PyTorch's documented behaviour (torch.cuda.amp.GradScaler needs CUDA,
// so the update rule of torch._amp_update_scale_ is restated below as a reference): scaling,
// unscaling, skipped steps on inf/nan, growth and backoff, state round trips, misuse errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "error_of.h"
#include "numeric_check.h"

namespace test_grad_scaler {

using namespace ember;
using namespace ember::testing;

namespace {

// PyTorch's _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu), one step.
struct ReferenceScaler {
  float scale;
  int64_t tracker = 0;
  void update(bool found_inf, double growth, double backoff, int64_t interval) {
    if (found_inf) {
      scale = static_cast<float>(scale * backoff);
      tracker = 0;
    } else if (tracker + 1 == interval) {
      const float grown = static_cast<float>(scale * growth);
      if (std::isfinite(grown)) scale = grown;
      tracker = 0;
    } else {
      ++tracker;
    }
  }
};

// One parameter [4] whose loss sum(p * c) has gradient c.
struct Problem {
  Tensor param = from_vector<float>({0.5f, -1.5f, 2.0f, 0.25f}).requires_grad_();
  Tensor coefficients = from_vector<float>({0.75f, -0.5f, 1.25f, 2.0f});
  optim::SGD optimizer{{param}, {.lr = 0.1}};

  // Forward, scaled backward; `poison` replaces one gradient element afterwards.
  void backward(amp::GradScaler& scaler, double poison = 0.0) {
    optimizer.zero_grad();
    scaler.scale(sum(mul(param, coefficients))).backward();
    if (poison != 0.0) {
      NoGradGuard no_grad;
      param.grad().slice(0, 1, 2).fill_(poison);
    }
  }
};

std::vector<double> values(const Tensor& tensor) { return values_of(tensor); }

}  // namespace

TEST_CASE("GradScaler: PyTorch's defaults, and scale() multiplies in float32 or wider") {
  amp::GradScaler scaler;
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.get_growth_factor() == 2.0);
  CHECK(scaler.get_backoff_factor() == 0.5);
  CHECK(scaler.get_growth_interval() == 2000);
  CHECK(scaler.get_growth_tracker() == 0);
  CHECK(scaler.is_enabled());

  const Tensor loss32 = scalar_tensor(1.5);
  CHECK(scaler.scale(loss32).item() == 98304.0);
  const Tensor half_loss = from_vector<float>({2.0f, -0.5f}).to(kFloat16);
  const Tensor scaled_half = scaler.scale(half_loss);
  CHECK(scaled_half.dtype() == kFloat32);  // 131072 would overflow float16
  CHECK(values(scaled_half) == std::vector<double>{131072.0, -32768.0});
  CHECK(scaler.scale(half_loss.to(kBFloat16)).dtype() == kFloat32);
  CHECK(scaler.scale(scalar_tensor(0.25, {.dtype = kFloat64})).dtype() == kFloat64);

  Tensor leaf = scalar_tensor(3.0).requires_grad_();
  scaler.scale(mul(leaf, leaf)).backward();
  CHECK(leaf.grad().item() == 6.0 * 65536.0);
}

TEST_CASE("GradScaler: a clean step unscales the gradients exactly and steps the optimizer") {
  Problem problem;
  amp::GradScaler scaler;
  problem.backward(scaler);
  CHECK(values(problem.param.grad()) == std::vector<double>{0.75 * 65536, -0.5 * 65536, 1.25 * 65536, 2.0 * 65536});
  CHECK(scaler.step(problem.optimizer));
  CHECK(values(problem.param.grad()) == values(problem.coefficients));
  check_close(values(problem.param), {0.5 - 0.075, -1.5 + 0.05, 2.0 - 0.125, 0.25 - 0.2}, 1e-7);
  scaler.update();
  CHECK(scaler.get_scale() == 65536.0);
  CHECK(scaler.get_growth_tracker() == 1);
}

TEST_CASE("GradScaler: an inf or nan gradient skips the step and backs the scale off") {
  for (double poison : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN()}) {
    INFO("poison ", poison);
    Problem problem;
    amp::GradScaler scaler;
    problem.backward(scaler);
    scaler.update(1024.0);  // any iteration state is dropped; the scale tensor follows
    problem.backward(scaler, poison);
    const std::vector<double> before = values(problem.param);
    CHECK_FALSE(scaler.step(problem.optimizer));
    CHECK(values(problem.param) == before);
    scaler.update();
    CHECK(scaler.get_scale() == 512.0);
    CHECK(scaler.get_growth_tracker() == 0);
  }
  // A genuine overflow: finite values whose scaled gradient exceeds float32.
  Tensor param = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  amp::GradScaler scaler;
  scaler.scale(sum(mul(param, 1e35))).backward();
  CHECK_FALSE(scaler.step(optimizer));
  scaler.update();
  CHECK(scaler.get_scale() == 32768.0);
}

TEST_CASE("GradScaler: growth after growth_interval clean steps and backoff follow PyTorch's rule") {
  const double growth = 2.0, backoff = 0.25;
  const int64_t interval = 3;
  Problem problem;
  amp::GradScaler scaler({.init_scale = 16.0, .growth_factor = growth, .backoff_factor = backoff,
                          .growth_interval = interval});
  ReferenceScaler reference{16.0f};
  const bool pattern[] = {false, false, false, false, true, false, false, false, false,
                          false, false, true,  true,  false, false, false, false};
  std::vector<double> scales;
  int stepped = 0;
  for (bool inf : pattern) {
    problem.backward(scaler, inf ? std::numeric_limits<double>::infinity() : 0.0);
    stepped += scaler.step(problem.optimizer) ? 1 : 0;
    scaler.update();
    reference.update(inf, growth, backoff, interval);
    CHECK(scaler.get_scale() == reference.scale);
    CHECK(scaler.get_growth_tracker() == reference.tracker);
    scales.push_back(scaler.get_scale());
  }
  CHECK(stepped == 14);
  // The sequence worked by hand: x2 on every third clean step in a row, /4 on an inf.
  CHECK(scales == std::vector<double>{16, 16, 32, 32, 8, 8, 8, 16, 16, 16, 32, 8, 2, 2, 2, 4, 4});
}

TEST_CASE("GradScaler: growth that would overflow float32 keeps the scale and restarts the count") {
  const double largest_power = std::ldexp(1.0, 127);
  amp::GradScaler scaler({.init_scale = largest_power, .growth_interval = 1});
  // A loss small enough that its scaled gradient (1e-6 * 2^127) stays finite.
  Tensor param = from_vector<float>({1.0f}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  scaler.scale(sum(mul(param, 1e-6))).backward();
  CHECK(scaler.step(optimizer));
  scaler.update();
  CHECK(scaler.get_scale() == largest_power);
  CHECK(scaler.get_growth_tracker() == 0);
}

TEST_CASE("GradScaler: unscale_ before step lets the user clip unscaled gradients") {
  Problem problem;
  amp::GradScaler scaler;
  problem.backward(scaler);
  scaler.unscale_(problem.optimizer);
  CHECK(values(problem.param.grad()) == values(problem.coefficients));
  nn::utils::clip_grad_norm_({problem.param}, 1.0);
  const std::vector<double> clipped = values(problem.param.grad());
  CHECK(scaler.step(problem.optimizer));
  CHECK(values(problem.param.grad()) == clipped);  // not unscaled twice
  scaler.update();
}

TEST_CASE("GradScaler: misuse is a clear error") {
  Problem problem;
  amp::GradScaler scaler;
  problem.optimizer.zero_grad();
  sum(mul(problem.param, problem.coefficients)).backward();
  CHECK_THROWS_WITH_AS(scaler.unscale_(problem.optimizer), doctest::Contains("scale() was never called"), Error);
  CHECK_THROWS_WITH_AS(scaler.update(), doctest::Contains("GradScaler::update: no inf/nan checks were recorded"),
                       Error);
  problem.backward(scaler);
  scaler.unscale_(problem.optimizer);
  CHECK_THROWS_WITH_AS(scaler.unscale_(problem.optimizer),
                       doctest::Contains("unscale_: already called on this optimizer since the last update()"), Error);
  scaler.step(problem.optimizer);
  CHECK_THROWS_WITH_AS(scaler.step(problem.optimizer),
                       doctest::Contains("step: already called on this optimizer since the last update()"), Error);
  CHECK_THROWS_WITH_AS(scaler.unscale_(problem.optimizer), doctest::Contains("called after step()"), Error);
  scaler.update();

  problem.optimizer.zero_grad();
  CHECK_THROWS_WITH_AS(scaler.step(problem.optimizer),
                       doctest::Contains("no inf/nan checks were recorded for this optimizer"), Error);
  scaler.update(8.0);

  Tensor half = from_vector<float>({1.0f}).to(kFloat16).requires_grad_();
  optim::SGD half_optimizer({half}, {.lr = 0.1});
  scaler.scale(sum(half)).backward();
  CHECK_THROWS_WITH_AS(scaler.step(half_optimizer), doctest::Contains("parameter 0 (shape [1]) has a float16 gradient"),
                       Error);

  CHECK_THROWS_WITH_AS(scaler.update(0.0),
                       doctest::Contains("GradScaler::update: new_scale must be positive and finite, got 0"), Error);
  CHECK_THROWS_WITH_AS(amp::GradScaler({.growth_factor = 1.0}),
                       doctest::Contains("growth_factor must be > 1 and finite, got 1"), Error);
  CHECK_THROWS_WITH_AS(amp::GradScaler({.backoff_factor = 1.5}),
                       doctest::Contains("backoff_factor must be in (0, 1), got 1.5"), Error);
  CHECK_THROWS_WITH_AS(amp::GradScaler({.growth_interval = 0}),
                       doctest::Contains("growth_interval must be at least 1, got 0"), Error);
  CHECK_THROWS_WITH_AS(amp::GradScaler({.init_scale = -1.0}), doctest::Contains("got -1"), Error);
}

TEST_CASE("GradScaler: state_dict round trip continues identically, bad states change nothing") {
  Problem problem;
  amp::GradScaler scaler({.init_scale = 256.0, .growth_interval = 4});
  for (bool inf : {false, true, false, false}) {
    problem.backward(scaler, inf ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    scaler.step(problem.optimizer);
    scaler.update();
  }
  const OrderedDict<double> state = scaler.state_dict();
  CHECK(state.keys() == std::vector<std::string>{"scale", "growth_factor", "backoff_factor", "growth_interval",
                                                 "_growth_tracker"});
  CHECK(state.values() == std::vector<double>{128.0, 2.0, 0.5, 4.0, 2.0});

  amp::GradScaler restored;
  restored.load_state_dict(state);
  CHECK(restored.state_dict().values() == state.values());
  for (int step = 0; step < 3; ++step) {
    for (amp::GradScaler* each : {&scaler, &restored}) {
      problem.backward(*each);
      each->step(problem.optimizer);
      each->update();
    }
    CHECK(restored.get_scale() == scaler.get_scale());
    CHECK(restored.get_growth_tracker() == scaler.get_growth_tracker());
  }
  CHECK(scaler.get_scale() == 256.0);  // grew once after four clean steps in a row

  amp::GradScaler target;
  CHECK_THROWS_WITH_AS(target.load_state_dict({}), doctest::Contains("the state is empty"), Error);
  OrderedDict<double> missing;
  for (const auto& [key, value] : state)
    if (key != "_growth_tracker") missing.insert(key, value);
  CHECK_THROWS_WITH_AS(target.load_state_dict(missing), doctest::Contains("missing key '_growth_tracker'"), Error);
  OrderedDict<double> bad = state;
  bad.insert_or_assign("growth_interval", 2.5);
  CHECK_THROWS_WITH_AS(target.load_state_dict(bad), doctest::Contains("'growth_interval' must be a whole number"),
                       Error);
  bad = state;
  bad.insert_or_assign("backoff_factor", 2.0);
  CHECK_THROWS_AS(target.load_state_dict(bad), Error);
  CHECK(target.get_scale() == 65536.0);
  CHECK(target.get_growth_interval() == 2000);
}

TEST_CASE("GradScaler: a disabled scaler passes everything through") {
  Problem problem;
  amp::GradScaler scaler({.enabled = false});
  Tensor loss = sum(mul(problem.param, problem.coefficients));
  CHECK(scaler.scale(loss).is_same(loss));
  loss.backward();
  CHECK(scaler.step(problem.optimizer));
  check_close(values(problem.param), {0.5 - 0.075, -1.5 + 0.05, 2.0 - 0.125, 0.25 - 0.2}, 1e-7);
  scaler.update();
  CHECK(scaler.get_scale() == 1.0);
  CHECK(scaler.state_dict().empty());
  scaler.load_state_dict({});
  CHECK_FALSE(scaler.is_enabled());
}

TEST_CASE("GradScaler: an unscale_ that refuses a float16 gradient unscales none, so a retried step is right") {
  // PyTorch checks every gradient before unscaling any: a float32 gradient unscaled before the
  // error would be unscaled again by the retry (a step of 0.25 * grad instead of grad).
  Tensor a = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  Tensor h = from_vector<float>({1.0f}, {1}, {.dtype = kFloat16}).requires_grad_();
  optim::SGD optimizer({a, h}, {.lr = 1.0});
  amp::GradScaler scaler({.init_scale = 4.0});
  scaler.scale(sum(a)).backward();  // a.grad = 4 * [1, 1]
  h.set_grad(from_vector<float>({1.0f}, {1}, {.dtype = kFloat16}));
  CHECK_THROWS_WITH_AS(scaler.step(optimizer), doctest::Contains("parameter 1 (shape [1]) has a float16 gradient"),
                       Error);
  CHECK(a.grad().to_vector<float>() == std::vector<float>{4.0f, 4.0f});
  CHECK(a.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
  h.set_grad({});
  CHECK(scaler.step(optimizer));
  CHECK(a.grad().to_vector<float>() == std::vector<float>{1.0f, 1.0f});
  CHECK(a.to_vector<float>() == std::vector<float>{0.0f, 1.0f});  // 1 - 1 * 1, 2 - 1 * 1
}

// The scale is a float32 number and unscale_ multiplies by its float32 inverse: a double that is
// positive and finite but leaves that range (1e39 is inf as float32, 1e-50 is 0, and the inverse
// of 1e-39 is inf) would skip every step or turn the parameters into NaN, so it is refused where
// it is set, naming the value and the caller's line, and the scaler keeps its state.
TEST_CASE("GradScaler: a scale that float32 or its float32 inverse cannot hold is refused where it is set") {
  using ember::testing::names_line;
  int line = __LINE__ + 1;
  std::string message = error_of([] { amp::GradScaler scaler({.init_scale = 1e39}); });
  CHECK(message.find("GradScaler: init_scale 1e+39 is inf as float32") != std::string::npos);
  CHECK(names_line(message, line));
  message = error_of([] { amp::GradScaler scaler({.init_scale = 1e-39}); });
  CHECK(message.find("GradScaler: init_scale 1e-39 has the inverse inf as float32") != std::string::npos);

  amp::GradScaler scaler({.init_scale = 256.0});
  line = __LINE__ + 1;
  message = error_of([&] { scaler.update(1e-50); });
  CHECK(message.find("GradScaler::update: new_scale 1e-50 is 0 as float32") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(scaler.get_scale() == 256.0);

  OrderedDict<double> state = scaler.state_dict();
  state.insert_or_assign("scale", 1e-46);
  state.insert_or_assign("growth_factor", 4.0);
  line = __LINE__ + 1;
  message = error_of([&] { scaler.load_state_dict(state); });
  CHECK(message.find("GradScaler::load_state_dict: 'scale' 1e-46 is 0 as float32") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(scaler.get_scale() == 256.0);
  CHECK(scaler.get_growth_factor() == 2.0);

  // The ends of the range are accepted: float32's largest value, and 2^-126, whose inverse 2^126
  // float32 holds.
  const double largest = std::numeric_limits<float>::max();
  CHECK(amp::GradScaler({.init_scale = largest}).get_scale() == largest);
  scaler.update(0x1p-126);
  CHECK(scaler.get_scale() == 0x1p-126);
}

}  // namespace test_grad_scaler
