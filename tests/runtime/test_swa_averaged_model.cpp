// AveragedModel's averages against float64 averages of the model's snapshots computed here: SWA
// (the running equal-weight mean), EMA by avg_fn and by multi_avg_fn, buffers copied or averaged
// (the int64 num_batches_tracked truncated as PyTorch's copy_ does), float32, and no autograd history.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "swa_test_util.h"

namespace test_swa_averaged_model {

using namespace ember;
using ember::testing::check_all_close;
using ember::testing::flat_values;
using ember::testing::make_swa_net;
using ember::testing::move_swa_net;

TEST_CASE("AveragedModel's default is the mean of every update's parameters, buffers copied") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); });
  std::vector<double> sum;
  for (int update = 1; update <= 5; ++update) {
    CAPTURE(update);
    move_swa_net(model, 100 + update, update);
    const std::vector<double> snapshot = flat_values(model->parameters());
    sum.resize(snapshot.size(), 0.0);
    for (size_t i = 0; i < snapshot.size(); ++i) sum[i] += snapshot[i];
    swa.update_parameters(model);
    std::vector<double> mean = sum;
    for (double& value : mean) value /= update;
    check_all_close(flat_values(swa.module()->parameters()), mean, 1e-13);
    CHECK(swa.n_averaged().dtype() == kInt64);
    CHECK(swa.n_averaged().item_int64() == update);
    // Without use_buffers the buffers follow the model's exactly, the count included.
    CHECK(flat_values(swa.module()->buffers()) == flat_values(model->buffers()));
  }
}

TEST_CASE("AveragedModel with EMA avg_fn or multi_avg_fn follows decay * avg + (1 - decay) * p") {
  for (bool multi : {false, true}) {
    CAPTURE(multi);
    const double decay = 0.8;
    nn::Sequential model = make_swa_net();
    optim::AveragedModelOptions options;
    if (multi)
      options.multi_avg_fn = optim::get_ema_multi_avg_fn(decay);
    else
      options.avg_fn = optim::get_ema_avg_fn(decay);
    optim::AveragedModel<nn::Sequential> ema(
        model, [] { return make_swa_net(); }, options);
    std::vector<double> expected;
    for (int update = 0; update < 6; ++update) {
      move_swa_net(model, 200 + update, 1);
      const std::vector<double> snapshot = flat_values(model->parameters());
      if (update == 0)
        expected = snapshot;  // the first update copies
      else
        for (size_t i = 0; i < snapshot.size(); ++i) expected[i] = decay * expected[i] + (1.0 - decay) * snapshot[i];
      ema.update_parameters(model);
      check_all_close(flat_values(ema.module()->parameters()), expected, 1e-13);
    }
    CHECK(ema.n_averaged().item_int64() == 6);
  }
}

TEST_CASE("AveragedModel with use_buffers averages the running statistics and the batch count") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); }, {.use_buffers = true});
  const auto batch_norm = model->at<nn::BatchNorm1dImpl>(1);
  const auto averaged_norm = swa.module()->at<nn::BatchNorm1dImpl>(1);
  std::vector<double> mean_sum(4, 0.0), var_sum(4, 0.0);
  // PyTorch's CPU path: avg + (p - avg) / (n + 1) in float, copied back into the int64 count
  // (truncated): counts 1, 3, 4, 8 average to 1, 2, 2 (2.67), 3 (3.5).
  const std::vector<int> batches{1, 2, 1, 4};
  const std::vector<int64_t> expected_count{1, 2, 2, 3};
  for (size_t update = 0; update < batches.size(); ++update) {
    CAPTURE(update);
    move_swa_net(model, 300 + update, batches[update]);
    const std::vector<double> running_mean = flat_values({batch_norm->running_mean});
    const std::vector<double> running_var = flat_values({batch_norm->running_var});
    for (size_t c = 0; c < 4; ++c) {
      mean_sum[c] += running_mean[c];
      var_sum[c] += running_var[c];
    }
    swa.update_parameters(model);
    std::vector<double> mean_average = mean_sum, var_average = var_sum;
    for (size_t c = 0; c < 4; ++c) {
      mean_average[c] /= static_cast<double>(update + 1);
      var_average[c] /= static_cast<double>(update + 1);
    }
    check_all_close(flat_values({averaged_norm->running_mean}), mean_average, 1e-13);
    check_all_close(flat_values({averaged_norm->running_var}), var_average, 1e-13);
    CHECK(averaged_norm->num_batches_tracked.dtype() == kInt64);
    CHECK(averaged_norm->num_batches_tracked.item_int64() == expected_count[update]);
  }
}

TEST_CASE("AveragedModel averages float32 models in float32 and records no autograd history") {
  nn::Sequential model = make_swa_net(kFloat32);
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(kFloat32); });
  std::vector<double> sum;
  for (int update = 1; update <= 3; ++update) {
    move_swa_net(model, 400 + update, 1);
    const std::vector<double> snapshot = flat_values(model->parameters());
    sum.resize(snapshot.size(), 0.0);
    for (size_t i = 0; i < snapshot.size(); ++i) sum[i] += snapshot[i] / 3.0;
    swa.update_parameters(model);
  }
  check_all_close(flat_values(swa.module()->parameters()), sum, 1e-6);
  for (const Tensor& parameter : swa.module()->parameters()) {
    CHECK(parameter.dtype() == kFloat32);
    CHECK(parameter.is_leaf());
    CHECK(parameter.grad_fn() == nullptr);
    CHECK(parameter.requires_grad());  // copied from the model's, as PyTorch's deepcopy
  }
  // The averaged copy still trains like any module: its parameters get gradients.
  swa.forward(randn({5, 3})).sum().backward();
  CHECK(swa.module()->parameters()[0].grad().defined());
}

TEST_CASE("AveragedModel's SWA multi_avg_fn lerps by PyTorch's float32 weight 1 / (n + 1)") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); },
                                           {.multi_avg_fn = optim::get_swa_multi_avg_fn()});
  move_swa_net(model, 500, 1);
  swa.update_parameters(model);
  move_swa_net(model, 501, 1);
  swa.update_parameters(model);
  const std::vector<double> before = flat_values(swa.module()->parameters());
  move_swa_net(model, 502, 1);
  const std::vector<double> snapshot = flat_values(model->parameters());
  swa.update_parameters(model);
  // 1 / 3 of an int64 tensor is a float32 tensor, read as a double weight by _foreach_lerp_.
  const double weight = static_cast<double>(1.0f / 3.0f);
  std::vector<double> expected(snapshot.size());
  for (size_t i = 0; i < snapshot.size(); ++i) expected[i] = before[i] + weight * (snapshot[i] - before[i]);
  check_all_close(flat_values(swa.module()->parameters()), expected, 1e-14);
}

TEST_CASE("AveragedModel calls multi_avg_fn once per dtype, with the count on the averages' device") {
  nn::Sequential model(nn::Linear(3, 4, {.dtype = kFloat64}), nn::Linear(4, 2, {.dtype = kFloat32}),
                       nn::Linear(2, 2, {.dtype = kFloat64}));
  auto make = [] {
    return nn::Sequential(nn::Linear(3, 4, {.dtype = kFloat64}), nn::Linear(4, 2, {.dtype = kFloat32}),
                          nn::Linear(2, 2, {.dtype = kFloat64}));
  };
  std::vector<std::string> calls;
  auto record = [&](const std::vector<Tensor>& averaged, const std::vector<Tensor>& current, const Tensor& count) {
    REQUIRE(averaged.size() == current.size());
    calls.push_back(fmt::format("{} x{} n={}", averaged[0].dtype(), averaged.size(), count.item_int64()));
  };
  optim::AveragedModel<nn::Sequential> swa(model, make, {.multi_avg_fn = record});
  swa.update_parameters(model);  // the first update copies without calling it
  CHECK(calls.empty());
  swa.update_parameters(model);
  CHECK(calls == std::vector<std::string>{"float64 x4 n=1", "float32 x2 n=1"});
}

}  // namespace test_swa_averaged_model
