// digits_mlp.cpp with its training step compiled: forward, backward and the Adam update become
// one graph with fused generated kernels, captured on the second call and replayed after. The
// loader's last batch of each epoch is smaller (1,437 training images in batches of 32), so the
// batch dim turns dynamic: that size is captured once more (the one recompile), with kernels that
// read the batch size at run time. At the end, explain() says what the compile stage did.
#include <cstdio>

#include "examples/digits.h"
#include "graph/compile.h"
#include "runtime/ember.h"

int main(int argc, char** argv) try {
  ember::manual_seed(0);
  const digits::Split data = digits::load(argc > 1 ? argv[1] : digits::default_path());
  digits::Mlp mlp;
  // fullgraph: a host read inside the step (loss.item()) would be an error, not a silent slowdown;
  // digits::train reads the returned loss after each compiled call.
  auto train_step =
      ember::compile([&](const ember::Tensor& x, const ember::Tensor& y) { return mlp.step(x, y); }, {.fullgraph = true});
  digits::train(data, train_step);
  std::printf("test accuracy %.2f%% (%lld test images)\n", digits::test_accuracy(mlp.model, data) * 100.0,
              static_cast<long long>(data.x_test.size(0)));
  std::printf("%s", train_step.state().explain().c_str());
  return 0;
} catch (const std::exception& error) {
  // A missing or malformed data file is the user's to fix: the message, not an abort.
  std::fprintf(stderr, "compiled_digits_mlp: %s\n", error.what());
  return 1;
}
