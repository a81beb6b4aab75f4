// The CPU optimizer steps round every element alike wherever it falls: in a loop's vectorized
// body, in its scalar tail, or alone. The thread count picks between the serial loop and OpenMP's
// own compiled copy of it, so any difference between compiled copies made 1 and 3 threads disagree
// (GCC 13 on the H200 machine's host: a conformance failure). Compared bit for bit with the same
// update applied to one element at a time, where the loop is always scalar.
#include <doctest/doctest.h>

#include <cstring>

#include "runtime/ember.h"
#include "runtime/optim/fused_steps.h"

namespace test_optim_rounding {

using namespace ember;

namespace {

// An odd length: two parallel chunks with a ragged tail, and vector loops with scalar remainders.
constexpr int64_t kCount = 40003;

Tensor values(uint64_t seed, bool positive = false) {
  manual_seed(seed);
  Tensor value = randn({kCount});
  return positive ? value * value * 0.01 + 1e-4 : value;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && std::memcmp(a.raw_data_ptr(), b.raw_data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("adam_step_ on the CPU: a long tensor's update equals the same update of each element alone") {
  NoGradGuard no_grad;
  for (const bool amsgrad : {false, true}) {
    for (const bool decoupled : {false, true}) {
      CAPTURE(amsgrad);
      CAPTURE(decoupled);
      const optim::AdamStepArgs args{
          .lr = 1e-3, .weight_decay = 0.01, .step = 2, .amsgrad = amsgrad, .decoupled = decoupled};
      Tensor param = values(1), grad = values(2), first = values(3), second = values(4, true);
      Tensor maximum = amsgrad ? values(5, true) : Tensor();
      Tensor param_1 = param.clone(), first_1 = first.clone(), second_1 = second.clone();
      Tensor maximum_1 = amsgrad ? maximum.clone() : Tensor();
      optim::adam_step_(param, grad, first, second, maximum, args);
      for (int64_t i = 0; i < kCount; ++i)
        optim::adam_step_(param_1.slice(0, i, i + 1), grad.slice(0, i, i + 1), first_1.slice(0, i, i + 1),
                          second_1.slice(0, i, i + 1), amsgrad ? maximum_1.slice(0, i, i + 1) : Tensor(), args);
      CHECK(same_bits(param, param_1));
      CHECK(same_bits(first, first_1));
      CHECK(same_bits(second, second_1));
      if (amsgrad) CHECK(same_bits(maximum, maximum_1));
    }
  }
}

TEST_CASE("sgd_step_ on the CPU: a long tensor's update equals the same update of each element alone") {
  NoGradGuard no_grad;
  for (const bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    const optim::SgdStepArgs args{.lr = 0.1, .momentum = 0.9, .dampening = nesterov ? 0.0 : 0.1,
                                  .weight_decay = 0.01, .nesterov = nesterov};
    Tensor param = values(6), grad = values(7), buffer = values(8);
    Tensor param_1 = param.clone(), buffer_1 = buffer.clone();
    optim::sgd_step_(param, grad, buffer, args);
    for (int64_t i = 0; i < kCount; ++i)
      optim::sgd_step_(param_1.slice(0, i, i + 1), grad.slice(0, i, i + 1), buffer_1.slice(0, i, i + 1), args);
    CHECK(same_bits(param, param_1));
    CHECK(same_bits(buffer, buffer_1));
  }
}

}  // namespace test_optim_rounding
