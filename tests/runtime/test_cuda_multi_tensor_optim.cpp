// The CUDA multi-tensor optimizer steps against the per-parameter CUDA steps: bit-identical (the
// same functors), across several launches (more parameters than one table holds), with empty,
// non-contiguous and multi-chunk parameters; and a foreach optimizer's steady state allocates
// nothing on the device. Without a GPU each case says so and stops.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "runtime/ember.h"
#include "cuda_test_util.h"
#include "runtime/optim/multi_tensor_steps.h"

namespace test_cuda_multi_tensor_optim {

using namespace ember;

namespace {

using cuda_test::kCuda0;

// 100 parameters: mostly small, some empty, every 10th non-contiguous, one over several chunks.
std::vector<Tensor> make_list(DType dtype, uint64_t seed, bool positive = false) {
  manual_seed(seed);
  std::vector<Tensor> tensors;
  for (int i = 0; i < 100; ++i) {
    const TensorOptions options{.dtype = dtype, .device = kCPU};
    Tensor value;
    if (i == 7) value = randn({0, 3}, options);
    else if (i == 50) value = randn({40000}, options);
    else if (i % 10 == 3) value = randn({5, 3 + i % 4}, options);
    else value = randn({1 + (i * 37) % 300}, options);
    if (positive) value = value * value + 0.1;
    value = value.to(kCuda0);
    // Transposed on the device: a copy to the device packs, so a CPU transpose would arrive contiguous.
    if (i % 10 == 3) value = value.transpose(0, 1);
    tensors.push_back(value);
  }
  return tensors;
}

std::vector<Tensor> clones(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& tensor : tensors) out.push_back(tensor.clone());
  return out;
}

void check_identical(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("tensor " << i);
    const Tensor a = actual[i].to(kCPU).contiguous(), b = expected[i].to(kCPU).contiguous();
    REQUIRE(a.sizes() == b.sizes());
    CHECK(std::memcmp(a.raw_data_ptr(), b.raw_data_ptr(), a.nbytes()) == 0);
  }
}

}  // namespace

TEST_CASE("cuda _multi_adam_step_ equals adam_step_ per parameter, bit for bit, over several launches") {
  if (!ember::testing::cuda_or_skip()) return;
  NoGradGuard no_grad;
  for (DType dtype : {kFloat32, kBFloat16})
    for (bool amsgrad : {false, true}) {
      INFO(dtype_name(dtype) << " amsgrad " << amsgrad);
      const optim::AdamStepArgs args{.lr = 0.01, .weight_decay = 0.05, .step = 4, .amsgrad = amsgrad,
                                     .decoupled = !amsgrad};
      std::vector<Tensor> params = make_list(dtype, 1), grads = make_list(dtype, 2), avgs = make_list(dtype, 3);
      std::vector<Tensor> sqs = make_list(dtype, 4, true), maxes = amsgrad ? make_list(dtype, 5, true) : std::vector<Tensor>{};
      std::vector<Tensor> single_params = clones(params), single_avgs = clones(avgs), single_sqs = clones(sqs);
      std::vector<Tensor> single_maxes = clones(maxes);
      REQUIRE(!params[3].is_contiguous());  // the per-parameter fallback inside the batched call runs
      optim::multi_adam_step_(params, grads, avgs, sqs, maxes, args);
      for (size_t i = 0; i < params.size(); ++i)
        optim::adam_step_(single_params[i], grads[i], single_avgs[i], single_sqs[i],
                          amsgrad ? single_maxes[i] : Tensor(), args);
      check_identical(params, single_params);
      check_identical(avgs, single_avgs);
      check_identical(sqs, single_sqs);
      check_identical(maxes, single_maxes);
    }
}

TEST_CASE("cuda _multi_sgd_step_ equals sgd_step_ per parameter, bit for bit, with and without momentum") {
  if (!ember::testing::cuda_or_skip()) return;
  NoGradGuard no_grad;
  for (double momentum : {0.0, 0.9})
    for (bool first_step : {false, true}) {
      INFO("momentum " << momentum << " first " << first_step);
      const optim::SgdStepArgs args{.lr = 0.05, .momentum = momentum, .weight_decay = 0.01,
                                    .nesterov = momentum != 0.0, .first_step = first_step && momentum != 0.0};
      std::vector<Tensor> params = make_list(kFloat32, 6), grads = make_list(kFloat32, 7);
      std::vector<Tensor> buffers = momentum != 0.0 ? make_list(kFloat32, 8) : std::vector<Tensor>{};
      std::vector<Tensor> single_params = clones(params), single_buffers = clones(buffers);
      optim::multi_sgd_step_(params, grads, buffers, args);
      for (size_t i = 0; i < params.size(); ++i)
        optim::sgd_step_(single_params[i], grads[i], momentum != 0.0 ? single_buffers[i] : Tensor(), args);
      check_identical(params, single_params);
      check_identical(buffers, single_buffers);
    }
}

TEST_CASE("cuda foreach AdamW steps allocate no device memory in the steady state") {
  if (!ember::testing::cuda_or_skip()) return;
  std::vector<Tensor> params = make_list(kFloat32, 9);
  for (Tensor& param : params) param = param.contiguous().detach().requires_grad_();
  optim::AdamW optimizer(params, {.lr = 0.01});
  const std::vector<Tensor> grads = make_list(kFloat32, 10);
  for (size_t i = 0; i < params.size(); ++i) params[i].set_grad(grads[i].contiguous());
  optimizer.step();  // creates the state
  optimizer.step();
  synchronize(kCuda0);
  const int64_t before = memory_stats(kCuda0).num_backend_allocations;
  for (int step = 0; step < 5; ++step) optimizer.step();
  synchronize(kCuda0);
  CHECK(memory_stats(kCuda0).num_backend_allocations == before);
}

}  // namespace test_cuda_multi_tensor_optim
