// Errors of the schedulers in lr_schedulers_more.h name the scheduler and the user's line (their
// constructors, step() and load_state_dict() open a CallSiteScope); an error inside a
// MultiplicativeLR's lambda names the lambda's own line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace test_scheduler_more_call_sites {

using namespace ember;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("constructor errors of the added schedulers name the caller's line") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  const int line = __LINE__ + 2;
  const std::vector<std::string> messages{
      error_of([&] { optim::ConstantLR(optimizer, 2.0); }),
      error_of([&] { optim::PolynomialLR(optimizer, -1); }),
      error_of([&] { optim::MultiplicativeLR(optimizer, std::vector<optim::MultiplicativeLR::Lambda>{}); }),
      error_of([&] { optim::CosineAnnealingWarmRestarts(optimizer, -3); }),
      error_of([&] { optim::OneCycleLR(optimizer, {1.0}, {}); }),
      error_of([&] { optim::ReduceLROnPlateau(optimizer, {.factor = 2.0}); })};
  const std::vector<std::string> expected{"ConstantLR: factor must be in [0, 1], got 2",
                                          "PolynomialLR: total_iters must be non-negative, got -1",
                                          "MultiplicativeLR: got 0 lambdas for 1 parameter groups",
                                          "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got -3",
                                          "OneCycleLR: give either total_steps or both epochs and steps_per_epoch",
                                          "ReduceLROnPlateau: factor must be in [0, 1), got 2"};
  check_messages_name_lines(messages, expected, line);
}

TEST_CASE("step and load_state_dict errors of the added schedulers name the caller's line") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::OneCycleLR cycle(optimizer, {1.0}, {.total_steps = 2});
  cycle.step();
  cycle.step();
  int line = __LINE__ + 1;
  std::string message = error_of([&] { cycle.step(); });
  CHECK(message.find("OneCycleLR.step: tried to step 3 times") != std::string::npos);
  CHECK(names_line(message, line));

  optim::ReduceLROnPlateau plateau(optimizer);
  line = __LINE__ + 1;
  message = error_of([&] { plateau.load_state_dict({{"best", 1.0}}); });
  CHECK(message.find("ReduceLROnPlateau.load_state_dict: expected 5 entries") != std::string::npos);
  CHECK(names_line(message, line));
  Tensor second = zeros({1}).requires_grad_();
  optimizer.add_param_group({second});
  line = __LINE__ + 1;
  message = error_of([&] { plateau.step(0.5); });
  CHECK(message.find("ReduceLROnPlateau.step: the optimizer has 2 parameter groups") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("an error inside a MultiplicativeLR's lambda names the lambda's line, not step's") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  Tensor w = ones({2, 3});
  int lambda_line = 0;
  optim::MultiplicativeLR scheduler(optimizer, [&](int64_t epoch) {
    lambda_line = __LINE__ + 1;
    return matmul(w, w).sum().item();  // [2, 3] @ [2, 3]: a shape error
  });
  const int step_line = __LINE__ + 1;
  const std::string message = error_of([&] { scheduler.step(); });
  CHECK(message.find("[2, 3]") != std::string::npos);
  CHECK(names_line(message, lambda_line));
  CHECK_FALSE(names_line(message, step_line));
  CHECK(scheduler.last_epoch() == 0);
}

}  // namespace test_scheduler_more_call_sites
