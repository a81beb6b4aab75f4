// Optimizer state dicts: the documented keys, a save/load round trip that continues bit for bit,
// and load errors that name the key and leave the optimizer unchanged.
#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_optim_state {

using namespace ember;

namespace {

Tensor parameter(std::vector<float> values, Dims sizes) { return from_vector<float>(values, sizes).requires_grad_(); }

// Gradients that change with the step, so that every state buffer evolves.
void set_grads(const std::vector<Tensor>& params, int step) {
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<float> grad(params[p].numel());
    for (size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(0.7f * i + 1.3f * step + 0.5f * p);
    Tensor(params[p]).set_grad(from_vector<float>(grad, params[p].sizes()));
  }
}

}  // namespace

TEST_CASE("Adam's state dict has the documented keys") {
  Tensor w = parameter({1, 2, 3, 4}, {2, 2});
  Tensor b = parameter({5, 6}, {2});
  optim::Adam optimizer({w, b}, {.lr = 0.01, .betas = {0.8, 0.9}, .amsgrad = true});
  set_grads({w, b}, 0);
  optimizer.step();
  const optim::OptimizerState state = optimizer.state_dict();
  CHECK(state.scalars.keys() ==
        std::vector<std::string>{"param_groups.0.lr", "param_groups.0.beta1", "param_groups.0.beta2",
                                 "param_groups.0.eps", "param_groups.0.weight_decay", "param_groups.0.amsgrad",
                                 "param_groups.0.maximize", "param_groups.0.num_params", "state.0.step",
                                 "state.1.step"});
  CHECK(state.scalars["param_groups.0.beta1"] == 0.8);
  CHECK(state.scalars["param_groups.0.amsgrad"] == 1.0);
  CHECK(state.scalars["param_groups.0.num_params"] == 2.0);
  CHECK(state.scalars["state.1.step"] == 1.0);
  CHECK(state.tensors.keys() == std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq",
                                                         "state.0.max_exp_avg_sq", "state.1.exp_avg",
                                                         "state.1.exp_avg_sq", "state.1.max_exp_avg_sq"});
  CHECK(state.tensors["state.0.exp_avg"].sizes() == Dims{2, 2});
  // exp_avg after one step is (1 - beta1) * grad.
  const std::vector<float> exp_avg = state.tensors["state.1.exp_avg"].to_vector<float>();
  CHECK(exp_avg[0] == doctest::Approx(0.2 * std::sin(0.5)).epsilon(1e-6));
}

TEST_CASE("SGD's state dict holds momentum buffers only when momentum is used") {
  Tensor w = parameter({1, 2}, {2});
  optim::SGD plain({w}, {.lr = 0.1});
  set_grads({w}, 0);
  plain.step();
  CHECK(plain.state_dict().tensors.empty());
  optim::SGD with_momentum({w}, {.lr = 0.1, .momentum = 0.9});
  with_momentum.step();
  CHECK(with_momentum.state_dict().tensors.keys() == std::vector<std::string>{"state.0.momentum_buffer"});
}

TEST_CASE("an optimizer and scheduler restored from state dicts continue identically") {
  // Two copies of the same parameters; the first trains 3 steps, the second is restored from its
  // state after 3 steps, then both train 3 more.
  auto make_params = [] { return std::vector<Tensor>{parameter({0.5f, -1.0f, 2.0f, 0.1f}, {2, 2}), parameter({0.3f, -0.2f}, {2})}; };
  std::vector<Tensor> original = make_params();
  optim::AdamW optimizer(original, {.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
  optim::CosineAnnealingLR scheduler(optimizer, 5, 0.001);
  for (int step = 0; step < 3; ++step) {
    set_grads(original, step);
    optimizer.step();
    scheduler.step();
  }

  std::vector<Tensor> restored = make_params();
  {
    NoGradGuard no_grad;
    for (size_t i = 0; i < restored.size(); ++i) restored[i].copy_(original[i]);
  }
  optim::AdamW optimizer_copy(restored, {.lr = 0.05, .weight_decay = 0.1, .amsgrad = true});
  optim::CosineAnnealingLR scheduler_copy(optimizer_copy, 5, 0.001);
  optimizer_copy.load_state_dict(optimizer.state_dict());
  scheduler_copy.load_state_dict(scheduler.state_dict());
  CHECK(optimizer_copy.get_lr(0) == optimizer.get_lr(0));
  // The restored buffers are copies, not aliases of the source's.
  CHECK_FALSE(optimizer_copy.state(restored[0])->exp_avg.is_same(optimizer.state(original[0])->exp_avg));

  for (int step = 3; step < 6; ++step) {
    set_grads(original, step);
    set_grads(restored, step);
    optimizer.step();
    optimizer_copy.step();
    scheduler.step();
    scheduler_copy.step();
  }
  CHECK(scheduler_copy.get_last_lr() == scheduler.get_last_lr());
  for (size_t i = 0; i < original.size(); ++i) CHECK(restored[i].to_vector<float>() == original[i].to_vector<float>());
}

TEST_CASE("optimizer load_state_dict errors name the key and change nothing") {
  Tensor w = parameter({1, 2, 3, 4}, {2, 2});
  Tensor b = parameter({5, 6}, {2});
  optim::Adam source({w, b}, {.lr = 0.01});
  set_grads({w, b}, 0);
  source.step();
  const optim::OptimizerState good = source.state_dict();

  Tensor w2 = parameter({1, 2, 3, 4}, {2, 2});
  Tensor b2 = parameter({5, 6}, {2});
  optim::Adam target({w2, b2}, {.lr = 0.5});

  optim::OptimizerState unexpected = good;
  unexpected.scalars.insert("state.0.bogus", 1.0);
  CHECK_THROWS_WITH_AS(target.load_state_dict(unexpected), doctest::Contains("unexpected key 'state.0.bogus'"), Error);

  optim::OptimizerState wrong_shape;
  wrong_shape.scalars = good.scalars;
  for (const auto& [key, tensor] : good.tensors)
    wrong_shape.tensors.insert(key, key == "state.1.exp_avg" ? zeros({3}) : tensor);
  CHECK_THROWS_WITH_AS(target.load_state_dict(wrong_shape),
                       doctest::Contains("size mismatch for 'state.1.exp_avg': the state has shape [3], the parameter [2]"),
                       Error);

  optim::OptimizerState missing;
  missing.scalars = good.scalars;
  for (const auto& [key, tensor] : good.tensors)
    if (key != "state.0.exp_avg_sq") missing.tensors.insert(key, tensor);
  CHECK_THROWS_WITH_AS(target.load_state_dict(missing), doctest::Contains("missing key 'state.0.exp_avg_sq'"), Error);

  optim::Adam one_group({w2}, {.lr = 0.5});
  one_group.add_param_group({b2});
  CHECK_THROWS_WITH_AS(one_group.load_state_dict(good), doctest::Contains("the state has 1 parameter groups, the optimizer 2"),
                       Error);

  optim::SGD other_kind({w2, b2}, {.lr = 0.5});
  CHECK_THROWS_WITH_AS(other_kind.load_state_dict(good), doctest::Contains("missing key 'param_groups.0.momentum'"), Error);

  // Nothing was loaded by any failed attempt.
  CHECK(target.get_lr(0) == 0.5);
  CHECK(target.state(w2) == nullptr);
  target.load_state_dict(good);
  CHECK(target.get_lr(0) == 0.01);
  REQUIRE(target.state(w2) != nullptr);
  CHECK(target.state(w2)->step == 1);
}

TEST_CASE("a step that fails leaves the optimizer's state as it was") {
  // A gradient that partly overlaps its parameter is refused before anything is written. The
  // state a first step makes (SGD's momentum buffer, uninitialised until that step fills it;
  // Adam's moments and step count) must not stay behind: the next step would take it for the
  // momentum so far. After the failure the optimizer steps exactly as one that never failed.
  for (const bool foreach : {false, true}) {
    INFO("foreach ", foreach);
    Tensor base = full({4}, 1.0);
    Tensor p = base.narrow(0, 0, 3).detach().requires_grad_();
    Tensor fresh = full({3}, 1.0).requires_grad_();
    optim::SGD sgd({p}, {.lr = 0.1, .momentum = 0.9, .foreach = foreach});
    optim::SGD reference({fresh}, {.lr = 0.1, .momentum = 0.9, .foreach = foreach});
    p.set_grad(base.narrow(0, 1, 3));
    { Tensor junk = full({3}, 12345.0); }  // freed memory an uninitialised buffer would get
    CHECK_THROWS_WITH_AS(sgd.step(), doctest::Contains("sgd_step_: input 1 (shape [3], strides [1]) partly overlaps"),
                         Error);
    CHECK(sgd.state(p) == nullptr);
    CHECK(sgd.state_dict().tensors.empty());
    CHECK(p.to_vector<float>() == std::vector<float>{1.0f, 1.0f, 1.0f});
    for (int step = 0; step < 3; ++step) {
      INFO("step ", step);
      p.set_grad(full({3}, 1.0 + step));
      fresh.set_grad(full({3}, 1.0 + step));
      sgd.step();
      reference.step();
      CHECK(p.to_vector<float>() == fresh.to_vector<float>());
    }
    // Buffers 1, 0.9 * 1 + 2, 0.9 * 2.9 + 3: PyTorch's first momentum step takes the gradient whole.
    CHECK(p.to_vector<float>()[0] == doctest::Approx(1.0 - 0.1 * 1.0 - 0.1 * 2.9 - 0.1 * 5.61).epsilon(1e-6));

    Tensor adam_base = full({4}, 1.0);
    Tensor q = adam_base.narrow(0, 0, 3).detach().requires_grad_();
    optim::Adam adam({q}, {.lr = 0.1, .foreach = foreach});
    q.set_grad(adam_base.narrow(0, 1, 3));
    CHECK_THROWS_AS(adam.step(), Error);
    CHECK(adam.state(q) == nullptr);
    CHECK(adam.state_dict().scalars.find("state.0.step") == nullptr);
  }
}

TEST_CASE("optimizer load_state_dict checks every group's options before applying any") {
  Tensor p = zeros({2}).requires_grad_(), q = zeros({2}).requires_grad_();
  optim::SGD optimizer({p}, {.lr = 0.1, .momentum = 0.9});
  optimizer.add_param_group({q}, optim::SGDOptions{.lr = 0.2, .momentum = 0.5});
  const optim::OptimizerState good = optimizer.state_dict();
  // Each with a valid group 0 that differs from the optimizer's, and a broken later entry.
  const std::vector<std::tuple<const char*, double, const char*>> cases = {
      {"param_groups.1.momentum", 0.0,
       "SGD: load_state_dict: param_groups.1: Nesterov momentum needs momentum > 0 and dampening 0, got momentum 0"},
      {"param_groups.1.momentum", -0.5,
       "SGD: load_state_dict: param_groups.1: momentum must be non-negative, got -0.5"},
      {"param_groups.1.lr", NAN, "SGD: load_state_dict: param_groups.1: learning rate must be non-negative, got nan"},
      {"param_groups.1.dampening", INFINITY,
       "SGD: load_state_dict: param_groups.1: dampening must be finite, got inf"},
      {"param_groups.1.nesterov", 0.5, "SGD: load_state_dict: 'param_groups.1.nesterov' must be 0 or 1, got 0.5"},
      {"param_groups.1.nesterov", NAN, "SGD: load_state_dict: 'param_groups.1.nesterov' must be 0 or 1, got nan"},
  };
  for (const auto& [key, value, message] : cases) {
    INFO(key, " = ", value);
    optim::OptimizerState bad = good;
    bad.scalars["param_groups.0.lr"] = 0.777;
    bad.scalars["param_groups.1.nesterov"] = 1.0;
    bad.scalars[key] = value;
    const std::string error = testing::error_of([&] { optimizer.load_state_dict(bad); });
    CHECK(error.find(message) != std::string::npos);
    CHECK(error.find("test_optim_state.cpp") != std::string::npos);  // the caller's line
    CHECK(optimizer.get_lr(0) == 0.1);
    CHECK(optimizer.param_groups()[0].options.momentum == 0.9);
    CHECK(optimizer.param_groups()[1].options.momentum == 0.5);
    CHECK_FALSE(optimizer.param_groups()[1].options.nesterov);
  }
  optim::OptimizerState flipped = good;
  flipped.scalars["param_groups.1.nesterov"] = 1.0;
  optimizer.load_state_dict(flipped);
  CHECK(optimizer.param_groups()[1].options.nesterov);
}

TEST_CASE("Adam load_state_dict takes a step count only as a whole number from 0 to 2^53") {
  // A NaN or 1e300 cast to int64 is undefined behaviour, 2.5 would be truncated silently, and a
  // negative count makes the bias corrections meaningless.
  Tensor p = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::Adam optimizer({p}, {.lr = 0.1});
  p.set_grad(from_vector<float>({1.0f, 1.0f}));
  optimizer.step();
  const optim::OptimizerState good = optimizer.state_dict();
  for (const double step : {double(NAN), 1e300, 2.5, -3.0, double(INFINITY)}) {
    INFO("step ", step);
    optim::OptimizerState bad = good;
    bad.scalars["state.0.step"] = step;
    bad.scalars["param_groups.0.lr"] = 0.5;
    const std::string expected =
        fmt::format("Adam: load_state_dict: 'state.0.step' must be a whole number from 0 to 2^53, got {}", step);
    CHECK_THROWS_WITH_AS(optimizer.load_state_dict(bad), doctest::Contains(expected.c_str()), Error);
    CHECK(optimizer.state(p)->step == 1);
    CHECK(optimizer.get_lr(0) == 0.1);
  }
  optim::OptimizerState amsgrad = good;
  amsgrad.scalars["param_groups.0.amsgrad"] = 2.0;
  CHECK_THROWS_WITH_AS(optimizer.load_state_dict(amsgrad),
                       doctest::Contains("Adam: load_state_dict: 'param_groups.0.amsgrad' must be 0 or 1, got 2"),
                       Error);
  optim::OptimizerState later = good;
  later.scalars["state.0.step"] = 7.0;
  optimizer.load_state_dict(later);
  CHECK(optimizer.state(p)->step == 7);
}

}  // namespace test_optim_state
