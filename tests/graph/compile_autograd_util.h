// What the compiled-autograd tests share (test_compile_autograd*.cpp): a small MLP from a fixed
// seed, batches by call number, and the checks that compiled and eager training agree.
#pragma once

#include <doctest/doctest.h>

#include "fusion_test_util.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/sgd.h"

namespace ember::compile_autograd_test {

inline nn::Sequential mlp(bool dropout = false) {
  manual_seed(61);
  nn::Sequential layers(nn::Linear(6, 12), nn::ReLU(), nn::Linear(12, 4));
  if (dropout) layers->push_back(nn::Dropout(0.3));
  return layers;
}

inline Tensor batch(int call, Dims sizes = {5, 6}) {
  manual_seed(1300 + static_cast<uint64_t>(call));
  return randn(sizes);
}

// The two models' parameters and .grad tensors agree: the same ones set, values within `tolerance`.
inline void check_grads(nn::Sequential& compiled, nn::Sequential& eager, double tolerance = 1e-5) {
  const std::vector<Tensor> a = compiled->parameters(), e = eager->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter ", i);
    REQUIRE(a[i].grad().defined() == e[i].grad().defined());
    if (e[i].grad().defined()) CHECK(graph_test::max_relative_error(a[i].grad(), e[i].grad()) <= tolerance);
    CHECK(graph_test::max_relative_error(a[i], e[i]) <= tolerance);
  }
}

// The caller's side of a training step around a (compiled or eager) forward: a loss with an
// eager term on the parameters too, backward, an SGD step, and the loss.
template <typename Forward>
Tensor train(Forward& forward, nn::Sequential& model, optim::SGD& optimizer, const Tensor& x, const Tensor& target) {
  optimizer.zero_grad();
  const Tensor out = forward(x);
  const Tensor weight = model->parameters()[0];
  Tensor loss = add(mse_loss(out, target), mul(sum(mul(weight, weight)), 1e-3));
  loss.backward();
  optimizer.step();
  return loss.detach();
}

}  // namespace ember::compile_autograd_test
