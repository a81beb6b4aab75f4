// Errors of the LR schedulers' constructors, step() and load_state_dict() name the scheduler and
// the user's line; an error inside a LambdaLR's lambda names the lambda's own line.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_scheduler_call_sites {

using namespace ember;
using ember::testing::check_messages_name_lines;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("scheduler constructor errors name the caller's line") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  const int line = __LINE__ + 1;
  const std::vector<std::string> messages{error_of([&] { optim::StepLR(optimizer, 0); }),
                                          error_of([&] { optim::StepLR(optimizer, 2, -0.5); }),
                                          error_of([&] { optim::CosineAnnealingLR(optimizer, 0); }),
                                          error_of([&] { optim::CosineAnnealingLR(optimizer, 3, -0.1); }),
                                          error_of([&] { optim::LinearLR(optimizer, 0.0); }),
                                          error_of([&] { optim::LambdaLR(optimizer, optim::LambdaLR::Lambda()); }),
                                          error_of([&] { optim::LambdaLR(optimizer, [](int64_t) { return -1.0; }); })};
  const std::vector<std::string> expected{"StepLR: step_size must be positive, got 0",
                                          "StepLR: gamma must be non-negative, got -0.5",
                                          "CosineAnnealingLR: T_max must be positive, got 0",
                                          "CosineAnnealingLR: eta_min must be finite and non-negative, got -0.1",
                                          "LinearLR: start_factor must be in (0, 1], got 0",
                                          "LambdaLR: a lambda is empty",
                                          "LambdaLR: epoch 0 gives parameter group 0 the learning rate -0.1"};
  check_messages_name_lines(messages, expected, line);
}

TEST_CASE("scheduler load_state_dict errors name the scheduler and the caller's line") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  optim::CosineAnnealingLR scheduler(optimizer, 4);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { scheduler.load_state_dict({{"last_epoch", 1.0}}); });
  CHECK(message.find("CosineAnnealingLR.load_state_dict: expected 4 entries (last_epoch, step_count and base_lrs / "
                     "last_lr for 1 groups), got 1") != std::string::npos);
  CHECK(names_line(message, line));

  OrderedDict<double> bad = scheduler.state_dict();
  bad["last_lr.0"] = -1.0;
  line = __LINE__ + 1;
  message = error_of([&] { scheduler.load_state_dict(bad); });
  CHECK(message.find("CosineAnnealingLR.load_state_dict: 'last_lr.0' must be a finite non-negative learning rate, "
                     "got -1") != std::string::npos);
  CHECK(names_line(message, line));
  CHECK(scheduler.get_last_lr() == std::vector<double>{0.1});
}

TEST_CASE("an error inside a LambdaLR's lambda names the lambda's line, not step's") {
  Tensor param = zeros({1}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  Tensor w = ones({2, 3});
  int lambda_line = 0;
  optim::LambdaLR scheduler(optimizer, [&](int64_t epoch) {
    if (epoch == 0) return 1.0;
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

}  // namespace test_scheduler_call_sites
