// What the compiled-segment tests share (test_compile_segments*.cpp).
#pragma once

#include <vector>

#include "graph_test_util.h"
#include "runtime/ember.h"

namespace ember::segment_test {

// A step that reads the gradient norm on the host and clips by it only when it is large: the
// branch taken depends on the data, so the second segment has two variants.
inline Tensor clipping_step(graph_test::SeedMlp& mlp, const Tensor& x, const Tensor& y, double max_norm, int* clipped) {
  mlp.optimizer->zero_grad();
  Tensor loss = nn::functional::cross_entropy(mlp.model->forward(x), y);
  loss.backward();
  std::vector<Tensor> grads;
  for (const Tensor& parameter : mlp.model->parameters()) grads.push_back(parameter.grad());
  const double norm = nn::utils::get_total_norm(grads).item();
  if (norm > max_norm) {
    ++*clipped;
    NoGradGuard no_grad;
    for (Tensor& grad : grads) grad.mul_(max_norm / norm);
  }
  mlp.optimizer->step();
  return loss;
}

}  // namespace ember::segment_test
