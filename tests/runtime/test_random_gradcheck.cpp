// Autograd on random programs against central differences, in float64. The compile tests hold
// compiled steps to eager's results, so a gradient eager gets wrong would pass there; here the
// same generator's programs (tests/random_program.h: views, in-place updates of intermediates and
// of a view's base, broadcasting, reductions, GEMMs on transposed views, softmax, layer_norm, cat,
// slices) are differentiated by autograd with respect to the input and every parameter and
// compared with the derivative of the function itself.
#include <doctest/doctest.h>

#include <random>

#include "random_program.h"
#include "runtime/ember.h"
#include "runtime/finite_difference.h"

namespace test_random_gradcheck {

using namespace ember;

TEST_CASE("random programs: autograd gradients equal central differences (float64)") {
  constexpr int kPrograms = 40;
  std::mt19937 rng(20261203);
  for (int index = 0; index < kPrograms; ++index) {
    const testing::Program program = testing::random_program(rng, 14, testing::differentiable);
    INFO("program ", index, ":\n", program.describe());
    const std::vector<Tensor> inputs{testing::leaf({4, 6}, 10 + index), testing::leaf({6}, 20 + index),
                                     testing::leaf({4, 6}, 30 + index), testing::leaf({6, 6}, 40 + index)};
    testing::gradcheck_leaves(
        [&](const std::vector<Tensor>& in) {
          // W scaled down as the compile tests' W is, so GEMM chains stay in a moderate range.
          return testing::program_loss(program, in[0], in[1], in[2], mul(in[3], 0.4));
        },
        inputs, 1e-5);
  }
}

}  // namespace test_random_gradcheck
