// Errors of every GradScaler call name the user's line, and so do those of the optimizer step that
// GradScaler::step runs.
#include <doctest/doctest.h>

#include <string>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_grad_scaler_call_sites {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("GradScaler's misuse errors name the caller's line") {
  Tensor w = zeros({2}).requires_grad_();
  w.set_grad(ones({2}));
  optim::SGD sgd({w}, {.lr = 0.1});
  amp::GradScaler scaler;
  int line = __LINE__ + 1;
  std::string message = error_of([&] { scaler.unscale_(sgd); });
  CHECK(message.find("GradScaler::unscale_: scale() was never called") != std::string::npos);
  CHECK(names_line(message, line));

  line = __LINE__ + 1;
  message = error_of([&] { (void)scaler.scale(Tensor()); });
  CHECK(message.find("GradScaler::scale: the outputs are an undefined tensor") != std::string::npos);
  CHECK(names_line(message, line));

  (void)scaler.scale(ones({}));
  scaler.unscale_(sgd);
  line = __LINE__ + 1;
  message = error_of([&] { scaler.unscale_(sgd); });
  CHECK(message.find("GradScaler::unscale_: already called on this optimizer") != std::string::npos);
  CHECK(names_line(message, line));

  CHECK(scaler.step(sgd));
  line = __LINE__ + 1;
  message = error_of([&] { scaler.step(sgd); });
  CHECK(message.find("GradScaler::step: already called on this optimizer") != std::string::npos);
  CHECK(names_line(message, line));

  scaler.update();
  line = __LINE__ + 1;
  message = error_of([&] { scaler.update(); });
  CHECK(message.find("GradScaler::update: no inf/nan checks were recorded") != std::string::npos);
  CHECK(names_line(message, line));
}

TEST_CASE("GradScaler's setters name the caller's line") {
  amp::GradScaler scaler;
  const int line = __LINE__ + 1;
  const std::vector<std::string> messages{error_of([&] { scaler.set_growth_factor(0.5); }),
                                          error_of([&] { scaler.set_backoff_factor(2.0); }),
                                          error_of([&] { scaler.set_growth_interval(0); })};
  const std::vector<std::string> expected{"GradScaler: growth_factor must be > 1 and finite, got 0.5",
                                          "GradScaler: backoff_factor must be in (0, 1), got 2",
                                          "GradScaler: growth_interval must be at least 1, got 0"};
  for (size_t i = 0; i < messages.size(); ++i) {
    INFO(messages[i]);
    CHECK(messages[i].find(expected[i]) != std::string::npos);
    CHECK(names_line(messages[i], line + static_cast<int>(i)));
  }
  CHECK(scaler.get_growth_factor() == 2.0);
  CHECK(scaler.get_backoff_factor() == 0.5);
  CHECK(scaler.get_growth_interval() == 2000);
}

TEST_CASE("an optimizer error inside GradScaler::step names the line that called step") {
  // An expanded parameter: the optimizer refuses to write several elements through one address.
  Tensor expanded = randn({1}).expand({3}).detach();
  expanded.requires_grad_();
  expanded.set_grad(ones({3}));
  optim::Adam adam({expanded}, {.lr = 0.1});
  amp::GradScaler scaler;
  (void)scaler.scale(ones({}));
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { scaler.step(adam); });
  CHECK(message.find("share one address") != std::string::npos);
  CHECK(names_line(message, line));
}

}  // namespace test_grad_scaler_call_sites
