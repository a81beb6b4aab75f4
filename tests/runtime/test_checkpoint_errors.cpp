// utils::checkpoint's refusals (an input changed in place before backward, a function that runs
// other ops when recomputed, a second backward without retain_graph, bad segments), nesting, and
// checkpoint_sequential against the plain Sequential.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_checkpoint_errors {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;

TEST_CASE("checkpoint: an input modified in place before backward is an error naming it, not a wrong gradient") {
  const Tensor leaf = full({4}, 0.5, {.dtype = kFloat64}).requires_grad_();
  Tensor x = mul(leaf, 1.0);
  const Tensor y = utils::checkpoint([](const Tensor& in) { return exp(in); }, x);
  x.mul_(2.0);
  const std::string message = error_of([&] { y.sum().backward(); });
  CHECK(message.find("checkpoint: input 0 (shape [4]) was modified by an in-place operation") != std::string::npos);
  CHECK(message.find("version 1 now, 0 then") != std::string::npos);
}

TEST_CASE("checkpoint: a function that saves other tensors when recomputed is an error naming both counts") {
  const Tensor x = full({3}, 0.25, {.dtype = kFloat64}).requires_grad_();
  int calls = 0;
  const auto branching = [&](const Tensor& in) {
    ++calls;
    return calls == 1 ? tanh(in) : tanh(tanh(in));
  };
  const Tensor y = utils::checkpoint(branching, x);
  const std::string message = error_of([&] { y.sum().backward(); });
  CHECK(message.find("recomputing the function saved 2 tensors for backward, its forward 1") != std::string::npos);

  // Same count, another shape: the determinism check names the tensor and both shapes.
  calls = 0;
  const Tensor wide = ones({2, 3}, {.dtype = kFloat64}).requires_grad_();
  const auto reshaping = [&](const Tensor& in) {
    ++calls;
    return exp(calls == 1 ? in : in.t()).sum();
  };
  const Tensor z = utils::checkpoint(reshaping, wide);
  const std::string shaped = error_of([&] { z.backward(); });
  CHECK(shaped.find("tensor 0 saved for backward was [2, 3] float64 on cpu in the forward and is [3, 2]") !=
        std::string::npos);
}

TEST_CASE("checkpoint: a second backward without retain_graph is refused as without checkpoint") {
  const Tensor x = full({2}, 0.5, {.dtype = kFloat64}).requires_grad_();
  const Tensor y = utils::checkpoint([](const Tensor& in) { return tanh(in); }, x).sum();
  y.backward();
  const std::string message = error_of([&] { y.backward(); });
  CHECK(message.find("backward through the graph a second time") != std::string::npos);
}

TEST_CASE("checkpoint: nested checkpoints give the plain gradients, each region recomputed once") {
  manual_seed(12);
  const Tensor x = randn({7}, {.dtype = kFloat64}).requires_grad_();
  int inner_calls = 0, outer_calls = 0;
  const auto inner = [&](const Tensor& in) {
    ++inner_calls;
    return sin(mul(in, in));
  };
  const auto outer = [&](const Tensor& in) {
    ++outer_calls;
    return exp(utils::checkpoint(inner, tanh(in)));
  };
  const auto plain = [&](const Tensor& in) { return exp(sin(mul(tanh(in), tanh(in)))); };
  plain(x).sum().backward();
  const std::vector<double> expected = x.grad().to_vector<double>();
  Tensor(x).set_grad(Tensor());
  utils::checkpoint(outer, x).sum().backward();
  CHECK(x.grad().to_vector<double>() == expected);
  CHECK(outer_calls == 2);
  CHECK(inner_calls == 3);  // the forward, the outer recomputation's run, and its own recomputation
}

TEST_CASE("checkpoint_sequential: the gradients of the plain Sequential, and PyTorch's segment checks") {
  manual_seed(13);
  nn::Sequential model(nn::Linear(6, 12, {.dtype = kFloat64}), nn::Tanh(), nn::Linear(12, 12, {.dtype = kFloat64}),
                       nn::GELU(), nn::Linear(12, 3, {.dtype = kFloat64}));
  const Tensor x = randn({4, 6}, {.dtype = kFloat64}).requires_grad_();
  const auto gradients = [&](int64_t segments) {
    model->zero_grad();
    Tensor(x).set_grad(Tensor());
    const Tensor y = segments == 0 ? model->forward(x) : utils::checkpoint_sequential(model, segments, x);
    mul(y, y).sum().backward();
    std::vector<std::vector<double>> grads{x.grad().to_vector<double>()};
    for (const Tensor& p : model->parameters()) grads.push_back(p.grad().to_vector<double>());
    return grads;
  };
  const auto plain = gradients(0);
  for (int64_t segments : {1, 2, 3, 5}) {
    INFO("segments ", segments);
    CHECK(gradients(segments) == plain);
  }
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { utils::checkpoint_sequential(model, 6, x); });
  CHECK(message.find("checkpoint_sequential: segments must be between 1 and the number of modules (5), got 6") !=
        std::string::npos);
  CHECK(names_line(message, line));
  CHECK(error_of([&] { utils::checkpoint_sequential(model, 0, x); }).find("got 0") != std::string::npos);
}

}  // namespace test_checkpoint_errors
