// Errors raised inside an optimizer or a gradient-clipping function name the user's line that
// called it, not a line inside ember; an error raised by the user's own loss closure names the
// closure's line.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_optim_call_sites {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

namespace {


Tensor parameter_with_grad(const Dims& sizes) {
  Tensor param = randn(sizes);
  param.requires_grad_();
  param.set_grad(ones(sizes));
  return param;
}

}  // namespace

TEST_CASE("an optimizer's constructor, add_param_group and load_state_dict errors name the caller's line") {
  Tensor w = parameter_with_grad({2, 2});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { optim::Adam bad({w}, {.lr = -1.0}); });
  CHECK(message.find("Adam: learning rate must be non-negative, got -1") != std::string::npos);
  CHECK(names_line(message, line));

  optim::SGD sgd({w}, {.lr = 0.1});
  line = __LINE__ + 1;
  message = error_of([&] { sgd.add_param_group({w}); });
  CHECK(message.find("appears twice") != std::string::npos);
  CHECK(names_line(message, line));

  optim::OptimizerState unexpected = sgd.state_dict();
  unexpected.scalars.insert("state.0.bogus", 1.0);
  line = __LINE__ + 1;
  message = error_of([&] { sgd.load_state_dict(unexpected); });
  CHECK(message.find("bogus") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("an optimizer step's error names the line that called step") {
  // An expanded parameter: a step would write several elements through one address.
  Tensor expanded = randn({1}).expand({3}).detach();
  expanded.requires_grad_();
  expanded.set_grad(ones({3}));
  const Tensor before = expanded.clone();
  optim::Adam adam({expanded}, {.lr = 0.1});
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { adam.step(); });
  CHECK(message.find("share one address") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(expanded.to_vector<float>() == before.to_vector<float>());  // nothing was written
}

TEST_CASE("an error inside an optimizer's loss closure names the closure's line, not step's") {
  Tensor w = parameter_with_grad({2, 3});
  optim::SGD sgd({w}, {.lr = 0.1});
  int closure_line = 0;
  const int step_line = __LINE__ + 2;
  const std::string message = error_of([&] {
    sgd.step([&] {
      closure_line = __LINE__ + 1;
      return matmul(w, w);  // [2, 3] @ [2, 3]: a shape error
    });
  });
  CHECK(message.find("[2, 3]") != std::string::npos);
  CHECK(names_line(message, closure_line));
  CHECK_FALSE(names_line(message, step_line));
}

TEST_CASE("gradient clipping errors name the caller's line") {
  Tensor w = parameter_with_grad({3});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { (void)optim::clip_grad_norm_({w}, -1.0); });
  CHECK(message.find("clip_grad_norm_: max_norm must be non-negative, got -1") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { optim::clip_grad_value_({w}, -2.0); });
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { (void)optim::get_total_norm({w.grad()}, std::nan("")); });
  CHECK(message.find("norm_type must be a number") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { optim::clip_grads_with_norm_({w}, 1.0, ones({2})); });
  CHECK(message.find("total_norm must hold one value") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("an optimizer's learning-rate calls name the caller's line") {
  Tensor w = parameter_with_grad({2});
  optim::Adam adam({w}, {.lr = 0.1});
  int line = __LINE__ + 1;
  std::string message = error_of([&] { adam.set_lr(0, -1.0); });
  CHECK(message.find("Adam: learning rate must be non-negative, got -1") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { (void)adam.get_lr(5); });
  CHECK(message.find("Adam: parameter group 5 does not exist (1 groups)") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { (void)adam.initial_lr(2); });
  CHECK(message.find("Adam: parameter group 2 does not exist (1 groups)") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { adam.set_initial_lr(0, INFINITY); });
  CHECK(message.find("Adam: initial_lr must be finite and non-negative, got inf") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(adam.get_lr(0) == 0.1);
  CHECK_FALSE(adam.initial_lr(0).has_value());
}

}  // namespace test_optim_call_sites
