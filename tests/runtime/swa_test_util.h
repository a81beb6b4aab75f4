// Shared by the AveragedModel tests: a small network with a BatchNorm (so it has buffers, one of
// them int64), its factory, and float64 snapshots of its tensors for hand-computed averages.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/optim/swa_utils.h"

namespace ember::testing {

inline nn::Sequential make_swa_net(DType dtype = kFloat64) {
  return nn::Sequential(nn::Linear(3, 4, {.dtype = dtype}),
                        nn::BatchNorm1d(nn::BatchNormOptions{.num_features = 4, .dtype = dtype}),
                        nn::Linear(4, 2, {.dtype = dtype}));
}

// Gives every parameter new values from seed `seed` (a "training step" whose result is known) and
// runs `batches` training forwards, which move the BatchNorm's running statistics and count.
inline void move_swa_net(nn::Sequential& net, uint64_t seed, int batches) {
  manual_seed(seed);
  {
    NoGradGuard no_grad;
    for (Tensor& parameter : net->parameters())
      parameter.copy_(randn(parameter.sizes(), {.dtype = parameter.dtype()}) * 0.7 + 0.2);
  }
  const DType dtype = net->parameters()[0].dtype();
  for (int b = 0; b < batches; ++b) net(randn({5, 3}, {.dtype = dtype}) * 2.0 + 1.0);
}

// Every value of `tensors`, in float64, one after another.
inline std::vector<double> flat_values(const std::vector<Tensor>& tensors) {
  std::vector<double> values;
  for (const Tensor& tensor : tensors) {
    const std::vector<double> part = tensor.detach().to(kFloat64).flatten().to_vector<double>();
    values.insert(values.end(), part.begin(), part.end());
  }
  return values;
}

// |actual - expected| <= tolerance * (1 + |expected|) for every element (numeric_check.h's
// check_close scales by max(1, |expected|)).
inline void check_all_close(const std::vector<double>& actual, const std::vector<double>& expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(actual[i] - expected[i]) <= tolerance * (1.0 + std::fabs(expected[i])));
  }
}

}  // namespace ember::testing
