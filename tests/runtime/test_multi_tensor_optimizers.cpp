// SGD, Adam and AdamW with foreach on (multi-tensor steps) equal the same optimizers with it off
// (one fused step per parameter), bit for bit on the CPU, over several steps with mixed dtypes,
// sizes (an empty parameter included), non-contiguous gradients and a parameter that misses its
// gradient on one step (so its Adam step count falls behind and it lands in its own batch).
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "host_read_recorder.h"
#include "runtime/dispatch.h"
#include "runtime/ember.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace test_multi_tensor_optimizers {

using namespace ember;

namespace {

std::vector<Tensor> make_params() {
  manual_seed(11);
  std::vector<Tensor> params = {randn({5, 3}), randn({0}), randn({7}, {.dtype = kFloat64}), randn({4}),
                                randn({2, 2}, {.dtype = kFloat64})};
  for (Tensor& param : params) param.requires_grad_();
  return params;
}

// The gradients of step `step`: parameter 0's is a transposed view; parameter 3 has none on step 1.
void set_grads(std::vector<Tensor>& params, int step) {
  manual_seed(100 + static_cast<uint64_t>(step));
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor& param = params[i];
    if (i == 3 && step == 1) {
      param.set_grad(Tensor());
      continue;
    }
    Tensor grad = i == 0 ? randn({3, 5}, {.dtype = param.dtype()}).transpose(0, 1)
                         : randn(param.sizes(), {.dtype = param.dtype()});
    param.set_grad(grad);
  }
}

void check_identical(const Tensor& actual, const Tensor& expected) {
  REQUIRE(actual.defined() == expected.defined());
  if (!actual.defined()) return;
  const Tensor a = actual.contiguous(), b = expected.contiguous();
  REQUIRE(a.sizes() == b.sizes());
  CHECK(std::memcmp(a.raw_data_ptr(), b.raw_data_ptr(), a.nbytes()) == 0);
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, bool foreach)>;

// Runs four steps with foreach on and off from the same start; returns both parameter sets.
std::pair<std::vector<Tensor>, std::vector<Tensor>> run_both(const MakeOptimizer& make,
                                                              std::unique_ptr<optim::Optimizer>* batched_out = nullptr,
                                                              std::unique_ptr<optim::Optimizer>* each_out = nullptr) {
  std::vector<Tensor> batched = make_params(), each = make_params();
  std::unique_ptr<optim::Optimizer> batched_optimizer = make(batched, true), each_optimizer = make(each, false);
  for (int step = 0; step < 4; ++step) {
    set_grads(batched, step);
    set_grads(each, step);
    batched_optimizer->step();
    each_optimizer->step();
  }
  if (batched_out) *batched_out = std::move(batched_optimizer);
  if (each_out) *each_out = std::move(each_optimizer);
  return {batched, each};
}

}  // namespace

TEST_CASE("SGD with foreach equals SGD without, bit for bit, for momentum, dampening, Nesterov and decay") {
  const optim::SGDOptions variants[] = {{.lr = 0.1},
                                        {.lr = 0.1, .weight_decay = 0.01},
                                        {.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.02},
                                        {.lr = 0.05, .momentum = 0.8, .nesterov = true}};
  for (const optim::SGDOptions& options : variants) {
    INFO("momentum " << options.momentum << " nesterov " << options.nesterov);
    auto [batched, each] = run_both([&](std::vector<Tensor> params, bool foreach) {
      optim::SGDOptions chosen = options;
      chosen.foreach = foreach;
      return std::make_unique<optim::SGD>(std::move(params), chosen);
    });
    for (size_t i = 0; i < batched.size(); ++i) check_identical(batched[i], each[i]);
    CHECK(batched[0].sub(make_params()[0]).abs().sum().item() > 0.0);  // the steps moved it
  }
}

TEST_CASE("Adam and AdamW with foreach equal them without, bit for bit, state and step counts included") {
  for (bool amsgrad : {false, true})
    for (bool decoupled : {false, true}) {
      INFO("amsgrad " << amsgrad << " decoupled " << decoupled);
      std::unique_ptr<optim::Optimizer> batched_optimizer, each_optimizer;
      auto [batched, each] = run_both(
          [&](std::vector<Tensor> params, bool foreach) -> std::unique_ptr<optim::Optimizer> {
            if (decoupled)
              return std::make_unique<optim::AdamW>(
                  std::move(params), optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1, .amsgrad = amsgrad,
                                                         .foreach = foreach});
            return std::make_unique<optim::Adam>(
                std::move(params), optim::AdamOptions{.lr = 0.01, .weight_decay = 0.02, .amsgrad = amsgrad,
                                                      .foreach = foreach});
          },
          &batched_optimizer, &each_optimizer);
      for (size_t i = 0; i < batched.size(); ++i) check_identical(batched[i], each[i]);
      // The state dicts (moments, step counts) match too.
      const optim::OptimizerState batched_state = batched_optimizer->state_dict();
      const optim::OptimizerState each_state = each_optimizer->state_dict();
      REQUIRE(batched_state.tensors.size() == each_state.tensors.size());
      for (const auto& [key, tensor] : batched_state.tensors) {
        INFO(key);
        REQUIRE(each_state.tensors.contains(key));
        check_identical(tensor, each_state.tensors.at(key));
      }
      REQUIRE(batched_state.scalars.size() == each_state.scalars.size());
      for (const auto& [key, value] : batched_state.scalars) {
        INFO(key);
        REQUIRE(each_state.scalars.contains(key));
        CHECK(value == each_state.scalars.at(key));
      }
    }
}

TEST_CASE("under a dispatch mode (compile's capture) optimizers use the per-parameter steps") {
  std::vector<Tensor> params = make_params();
  optim::Adam adam(params, {.lr = 0.01});
  set_grads(params, 0);
  ember::testing::OpNameRecorder mode;
  {
    DispatchModeGuard guard(mode);
    adam.step();
  }
  int single = 0;
  for (const std::string& name : mode.names) {
    CHECK(name != "_multi_adam_step_");
    single += name == "adam_step_";
  }
  CHECK(single == 5);  // every parameter with a gradient, the empty one included
  // Called directly under a mode, a multi-tensor step fails clearly and changes nothing.
  const std::vector<float> before = params[3].to_vector<float>();
  NoGradGuard no_grad;
  DispatchModeGuard guard(mode);
  const Tensor grad = ones({4});
  const Tensor exp_avg = zeros({4}), exp_avg_sq = zeros({4});
  CHECK_THROWS_WITH_AS(
      optim::multi_adam_step_({&params[3], 1}, {&grad, 1}, {&exp_avg, 1}, {&exp_avg_sq, 1}, {}, {.lr = 0.1}),
      doctest::Contains("_multi_adam_step_: cannot run under a dispatch mode"), Error);
  CHECK(params[3].to_vector<float>() == before);
}

}  // namespace test_multi_tensor_optimizers
