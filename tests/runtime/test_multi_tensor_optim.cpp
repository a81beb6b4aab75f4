// The multi-tensor optimizer steps (_multi_sgd_step_, _multi_adam_step_) on the CPU are
// bit-identical to the per-parameter steps (sgd_step_, adam_step_) for every option combination,
// mixed sizes (empty and non-contiguous tensors included) and dtypes; SGD, Adam and AdamW with
// foreach on equal the same optimizers with it off; bad calls are rejected before any update.
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <string>

#include "runtime/ember.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace test_multi_tensor_optim {

using namespace ember;

namespace {

// Sizes with an empty tensor, a 0-d one, a ragged row and one large enough for the parallel path.
const std::vector<Dims> kSizes = {{7}, {0}, {}, {33, 5}, {3, 0, 2}, {70000}, {4, 6}};

// A deterministic non-zero tensor: shape `sizes`, dtype `dtype`, values depending on `salt`; the
// {4, 6} one is made non-contiguous (a transposed view).
Tensor make(const Dims& sizes, DType dtype, double salt, bool positive = false) {
  manual_seed(static_cast<uint64_t>(salt * 1000.0) + sizes.size() * 7 + 1);
  if (sizes == Dims{4, 6}) {
    Tensor base = randn({6, 4}, {.dtype = dtype});
    if (positive) base = base * base + 0.1;
    return base.transpose(0, 1);
  }
  Tensor value = randn(sizes, {.dtype = dtype});
  return positive ? value * value + 0.1 : value;
}

std::vector<Tensor> clones(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& tensor : tensors) out.push_back(tensor.defined() ? tensor.clone() : Tensor());
  return out;
}

// Same dtype, shape and bytes (NaN payloads included): bit-identical.
void check_identical(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("tensor " << i);
    REQUIRE(actual[i].defined() == expected[i].defined());
    if (!actual[i].defined()) continue;
    const Tensor a = actual[i].contiguous();
    const Tensor b = expected[i].contiguous();
    REQUIRE(a.sizes() == b.sizes());
    REQUIRE(a.dtype() == b.dtype());
    CHECK(std::memcmp(a.raw_data_ptr(), b.raw_data_ptr(), a.nbytes()) == 0);
  }
}

struct AdamLists {
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_sqs;
};

AdamLists adam_lists(DType dtype, bool amsgrad) {
  AdamLists lists;
  for (size_t i = 0; i < kSizes.size(); ++i) {
    const double salt = static_cast<double>(i);
    lists.params.push_back(make(kSizes[i], dtype, salt));
    lists.grads.push_back(make(kSizes[i], dtype, salt + 0.1));
    lists.exp_avgs.push_back(make(kSizes[i], dtype, salt + 0.2));
    lists.exp_avg_sqs.push_back(make(kSizes[i], dtype, salt + 0.3, /*positive=*/true));
    if (amsgrad) lists.max_sqs.push_back(make(kSizes[i], dtype, salt + 0.4, /*positive=*/true));
  }
  return lists;
}

}  // namespace

TEST_CASE("_multi_adam_step_ on the CPU is bit-identical to adam_step_ per parameter") {
  NoGradGuard no_grad;
  for (DType dtype : {kFloat32, kFloat64, kBFloat16})
    for (bool amsgrad : {false, true})
      for (bool decoupled : {false, true})
        for (double weight_decay : {0.0, 0.05}) {
          INFO(dtype_name(dtype) << " amsgrad " << amsgrad << " decoupled " << decoupled << " wd " << weight_decay);
          const optim::AdamStepArgs args{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6,
                                         .weight_decay = weight_decay, .step = 3, .amsgrad = amsgrad,
                                         .decoupled = decoupled};
          AdamLists multi = adam_lists(dtype, amsgrad);
          AdamLists single{clones(multi.params), multi.grads, clones(multi.exp_avgs), clones(multi.exp_avg_sqs),
                           clones(multi.max_sqs)};
          optim::multi_adam_step_(multi.params, multi.grads, multi.exp_avgs, multi.exp_avg_sqs, multi.max_sqs, args);
          for (size_t i = 0; i < single.params.size(); ++i)
            optim::adam_step_(single.params[i], single.grads[i], single.exp_avgs[i], single.exp_avg_sqs[i],
                              amsgrad ? single.max_sqs[i] : Tensor(), args);
          check_identical(multi.params, single.params);
          check_identical(multi.exp_avgs, single.exp_avgs);
          check_identical(multi.exp_avg_sqs, single.exp_avg_sqs);
          check_identical(multi.max_sqs, single.max_sqs);
          // The update did something: the first parameter moved.
          CHECK(multi.params[0].sub(make(kSizes[0], dtype, 0.0)).abs().sum().item() > 0.0);
        }
}

TEST_CASE("_multi_sgd_step_ on the CPU is bit-identical to sgd_step_ per parameter") {
  NoGradGuard no_grad;
  struct Variant {
    double momentum, dampening, weight_decay;
    bool nesterov, first_step;
  };
  const Variant variants[] = {{0.0, 0.0, 0.0, false, false}, {0.0, 0.0, 0.1, false, false},
                              {0.9, 0.0, 0.0, false, true},  {0.9, 0.1, 0.01, false, false},
                              {0.9, 0.0, 0.01, true, false}, {0.5, 0.0, 0.0, true, true}};
  for (DType dtype : {kFloat32, kFloat64, kFloat16})
    for (const Variant& variant : variants) {
      INFO(dtype_name(dtype) << " momentum " << variant.momentum << " nesterov " << variant.nesterov << " first "
                             << variant.first_step);
      const optim::SgdStepArgs args{.lr = 0.05, .momentum = variant.momentum, .dampening = variant.dampening,
                                    .weight_decay = variant.weight_decay, .nesterov = variant.nesterov,
                                    .first_step = variant.first_step};
      std::vector<Tensor> params, grads, buffers;
      for (size_t i = 0; i < kSizes.size(); ++i) {
        params.push_back(make(kSizes[i], dtype, static_cast<double>(i)));
        grads.push_back(make(kSizes[i], dtype, static_cast<double>(i) + 0.5));
        if (variant.momentum != 0.0) buffers.push_back(make(kSizes[i], dtype, static_cast<double>(i) + 0.7));
      }
      std::vector<Tensor> single_params = clones(params), single_buffers = clones(buffers);
      optim::multi_sgd_step_(params, grads, buffers, args);
      for (size_t i = 0; i < params.size(); ++i)
        optim::sgd_step_(single_params[i], grads[i], variant.momentum != 0.0 ? single_buffers[i] : Tensor(), args);
      check_identical(params, single_params);
      check_identical(buffers, single_buffers);
    }
}

TEST_CASE("multi-tensor steps bump the versions of what they write and reject bad calls unchanged") {
  const Tensor param = from_vector<float>({1.0f, -2.0f}, {2});
  const Tensor grad = from_vector<float>({0.5f, 0.25f}, {2});
  const Tensor other = from_vector<double>({3.0, 4.0}, {2}, {.dtype = kFloat64});
  const Tensor exp_avg = zeros({2}), exp_avg_sq = zeros({2});
  const uint64_t before = param.impl()->storage->version();
  {
    NoGradGuard no_grad;
    optim::multi_adam_step_({&param, 1}, {&grad, 1}, {&exp_avg, 1}, {&exp_avg_sq, 1}, {}, {.lr = 0.1, .step = 1});
  }
  CHECK(param.impl()->storage->version() == before + 1);
  CHECK(exp_avg.impl()->storage->version() > 0);
  const std::vector<float> after = param.to_vector<float>();
  NoGradGuard no_grad;
  const std::vector<Tensor> mixed_params = {param, other}, mixed_grads = {grad, other.clone()};
  const std::vector<Tensor> mixed_buffers = {zeros({2}), zeros({2}, {.dtype = kFloat64})};
  CHECK_THROWS_WITH_AS(optim::multi_sgd_step_(mixed_params, mixed_grads, {}, {.lr = 0.1}),
                       doctest::Contains("_multi_sgd_step_: every parameter must share one device and dtype; "
                                         "parameter 1 is float64"),
                       Error);
  CHECK(param.to_vector<float>() == after);  // parameter 0 was not updated either
  CHECK_THROWS_WITH_AS(optim::multi_sgd_step_(mixed_params, {&grad, 1}, {}, {.lr = 0.1}),
                       doctest::Contains("_multi_sgd_step_: 2 parameters but 1 gradients"), Error);
  const Tensor wrong_shape = zeros({3});
  CHECK_THROWS_WITH_AS(optim::multi_sgd_step_({&param, 1}, {&wrong_shape, 1}, {}, {.lr = 0.1}),
                       doctest::Contains("sgd_step_: input 1 has shape [3]"), Error);
  CHECK_THROWS_WITH_AS(optim::multi_sgd_step_({&param, 1}, {&grad, 1}, {}, {.lr = 0.1, .momentum = 0.9}),
                       doctest::Contains("momentum 0.9 needs a momentum buffer"), Error);
  CHECK(param.to_vector<float>() == after);
}

TEST_CASE("multi-tensor steps refuse a parameter that requires grad while grad mode is on") {
  const Tensor param = from_vector<float>({1.0f, 2.0f}, {2}).requires_grad_();
  const Tensor grad = from_vector<float>({0.5f, 0.5f}, {2});
  CHECK_THROWS_WITH_AS(optim::multi_sgd_step_({&param, 1}, {&grad, 1}, {}, {.lr = 0.1}),
                       doctest::Contains("requires grad and is updated in place; wrap the step in NoGradGuard"), Error);
}

}  // namespace test_multi_tensor_optim
