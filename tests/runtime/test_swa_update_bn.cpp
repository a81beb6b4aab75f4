// update_bn against float64 statistics computed here from the data: each BatchNorm's running_mean
// and running_var become the mean over the batches of its input's batch mean and unbiased batch
// variance (PyTorch's cumulative average weighs batches equally), whatever they were before; the
// momenta and the training flag come back, also when a forward throws.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "error_of.h"
#include "runtime/data/dataloader.h"
#include "runtime/data/tensor_dataset.h"
#include "swa_test_util.h"

namespace test_swa_update_bn {

using namespace ember;
using ember::testing::check_all_close;
using ember::testing::error_of;
using ember::testing::flat_values;

namespace {

using Rows = std::vector<std::vector<double>>;

Rows rows_of(const Tensor& tensor) {
  const std::vector<double> values = flat_values({tensor});
  const size_t width = static_cast<size_t>(tensor.size(1));
  Rows rows(values.size() / width);
  for (size_t r = 0; r < rows.size(); ++r) rows[r].assign(values.begin() + r * width, values.begin() + (r + 1) * width);
  return rows;
}

// Per column: the mean and the biased (correction 0) or unbiased (1) variance of `rows`.
void column_stats(const Rows& rows, size_t c, int correction, double& mean, double& var) {
  mean = 0.0;
  for (const auto& row : rows) mean += row[c] / static_cast<double>(rows.size());
  var = 0.0;
  for (const auto& row : rows) var += (row[c] - mean) * (row[c] - mean);
  var /= static_cast<double>(rows.size() - correction);
}

// Sequential(BatchNorm1d(3), Linear(3, 4), BatchNorm1d(4)) with random affine parameters.
nn::Sequential make_model() {
  nn::Sequential model(
      nn::BatchNorm1d(nn::BatchNormOptions{.num_features = 3, .momentum = 0.3, .dtype = kFloat64}),
      nn::Linear(3, 4, {.dtype = kFloat64}),
      nn::BatchNorm1d(nn::BatchNormOptions{.num_features = 4, .momentum = std::nullopt, .dtype = kFloat64}));
  NoGradGuard no_grad;
  for (Tensor& parameter : model->parameters()) parameter.copy_(randn(parameter.sizes(), {.dtype = kFloat64}) + 0.5);
  return model;
}

// The statistics update_bn should leave in BatchNorm `which` (0 or 2), from the batches by hand:
// the first BatchNorm sees the data; the second the Linear of the first's training output.
void expected_stats(const nn::Sequential& model, const std::vector<Tensor>& batches, int which,
                    std::vector<double>& mean, std::vector<double>& var) {
  const auto first = model->at<nn::BatchNorm1dImpl>(0);
  const auto linear = model->at<nn::LinearImpl>(1);
  const std::vector<double> gamma = flat_values({first->weight}), beta = flat_values({first->bias});
  const Rows weight = rows_of(linear->weight);
  const std::vector<double> bias = flat_values({linear->bias});
  const size_t channels = which == 0 ? 3 : 4;
  mean.assign(channels, 0.0);
  var.assign(channels, 0.0);
  for (const Tensor& batch : batches) {
    Rows input = rows_of(batch);
    if (which == 2) {
      Rows normalised = input;
      for (size_t c = 0; c < 3; ++c) {
        double m, v;
        column_stats(input, c, 0, m, v);
        for (auto& row : normalised) row[c] = (row[c] - m) / std::sqrt(v + 1e-5) * gamma[c] + beta[c];
      }
      for (size_t r = 0; r < input.size(); ++r) {
        input[r].assign(4, 0.0);
        for (size_t o = 0; o < 4; ++o) {
          input[r][o] = bias[o];
          for (size_t i = 0; i < 3; ++i) input[r][o] += weight[o][i] * normalised[r][i];
        }
      }
    }
    for (size_t c = 0; c < channels; ++c) {
      double m, v;
      column_stats(input, c, 1, m, v);
      mean[c] += m / static_cast<double>(batches.size());
      var[c] += v / static_cast<double>(batches.size());
    }
  }
}

std::vector<Tensor> make_batches() {
  // Unequal sizes: the last batch weighs as much as the others, as in PyTorch.
  return {randn({5, 3}, {.dtype = kFloat64}) * 2.0 + 1.0, randn({5, 3}, {.dtype = kFloat64}) - 0.5,
          randn({3, 3}, {.dtype = kFloat64}) * 0.5 + 2.0};
}

void check_recomputed(const nn::Sequential& model, const std::vector<Tensor>& batches) {
  for (int which : {0, 2}) {
    CAPTURE(which);
    std::vector<double> mean, var;
    expected_stats(model, batches, which, mean, var);
    const auto norm = model->at<nn::BatchNorm1dImpl>(which);
    check_all_close(flat_values({norm->running_mean}), mean, 1e-12);
    check_all_close(flat_values({norm->running_var}), var, 1e-12);
    CHECK(norm->num_batches_tracked.item_int64() == static_cast<int64_t>(batches.size()));
  }
}

}  // namespace

TEST_CASE("update_bn recomputes every BatchNorm's statistics and restores momenta and eval mode") {
  manual_seed(7);
  nn::Sequential model = make_model();
  const std::vector<Tensor> batches = make_batches();
  for (const Tensor& batch : batches) model(batch * 3.0);  // statistics of other data, to be replaced
  model->eval();
  optim::update_bn(batches, model);
  check_recomputed(model, batches);
  CHECK(model->at<nn::BatchNorm1dImpl>(0)->options().momentum == 0.3);
  CHECK_FALSE(model->at<nn::BatchNorm1dImpl>(2)->options().momentum.has_value());
  for (const auto& module : model->modules()) CHECK_FALSE(module->is_training());
  CHECK(grad_mode_enabled());
  for (const Tensor& parameter : model->parameters()) CHECK_FALSE(parameter.grad().defined());
}

TEST_CASE("update_bn reads batches of a DataLoader and pairs, and runs an AveragedModel") {
  manual_seed(8);
  nn::Sequential model = make_model();
  const std::vector<Tensor> batches = make_batches();
  const Tensor data = cat({batches[0], batches[1], batches[2]}, 0);
  data::DataLoader loader(data::TensorDataset(data, zeros({13})), {.batch_size = 5});
  optim::update_bn(loader, model);
  check_recomputed(model, batches);
  CHECK(model->is_training());

  std::vector<std::pair<Tensor, Tensor>> pairs;
  for (const Tensor& batch : batches) pairs.emplace_back(batch, Tensor{});
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_model(); });
  optim::update_bn(pairs, swa);
  check_recomputed(swa.module(), batches);
}

TEST_CASE("update_bn leaves a model without BatchNorm alone and restores state when a forward throws") {
  nn::Linear linear(3, 2, {.dtype = kFloat64});
  // Not read: a forward on an undefined tensor would throw.
  optim::update_bn(std::vector<Tensor>{Tensor{}}, linear);

  manual_seed(9);
  nn::Sequential model = make_model();
  model->eval();
  const std::vector<Tensor> bad{randn({4, 3}, {.dtype = kFloat64}), randn({4, 5}, {.dtype = kFloat64})};
  const std::string message = error_of([&] { optim::update_bn(bad, model); });
  CHECK_MESSAGE(message.find("BatchNorm1d: expected input with 3 channels") != std::string::npos, message);
  CHECK(message.find("test_swa_update_bn.cpp") != std::string::npos);
  CHECK(model->at<nn::BatchNorm1dImpl>(0)->options().momentum == 0.3);
  CHECK_FALSE(model->is_training());
  CHECK(grad_mode_enabled());
}

}  // namespace test_swa_update_bn
