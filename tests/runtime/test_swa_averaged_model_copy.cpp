// AveragedModel's copy of the model (no shared memory, the model's dtypes and training flags, no
// random draws), its forward, its state dict ("n_averaged" and "module.*", as PyTorch's) and its
// refusals, each of which leaves the averages as they were.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "swa_test_util.h"

namespace test_swa_averaged_model_copy {

using namespace ember;
using ember::testing::check_all_close;
using ember::testing::error_of;
using ember::testing::flat_values;
using ember::testing::make_swa_net;
using ember::testing::move_swa_net;

TEST_CASE("AveragedModel's copy has the model's values and flags, shares no memory and draws nothing") {
  nn::Sequential model = make_swa_net();
  move_swa_net(model, 1, 2);
  model->eval();
  model->at<nn::BatchNorm1dImpl>(1)->train();
  model->at<nn::LinearImpl>(2)->bias.requires_grad_(false);
  const GeneratorState before = default_generator().get_state();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); });
  CHECK(default_generator().get_state() == before);

  CHECK(flat_values(swa.module()->parameters()) == flat_values(model->parameters()));
  CHECK(flat_values(swa.module()->buffers()) == flat_values(model->buffers()));
  CHECK_FALSE(swa.module()->is_training());
  CHECK(swa.module()->at<nn::BatchNorm1dImpl>(1)->is_training());
  CHECK_FALSE(swa.module()->at<nn::LinearImpl>(0)->is_training());
  CHECK_FALSE(swa.module()->at<nn::LinearImpl>(2)->bias.requires_grad());
  CHECK(swa.module()->at<nn::LinearImpl>(2)->weight.requires_grad());
  CHECK(swa.n_averaged().item_int64() == 0);

  // Writing the model's tensors leaves the copy's alone.
  const std::vector<double> copied = flat_values(swa.module()->parameters());
  move_swa_net(model, 2, 1);
  CHECK(flat_values(swa.module()->parameters()) == copied);
  CHECK(flat_values(model->parameters()) != copied);
}

TEST_CASE("AveragedModel's copy takes the model's dtype even when the factory builds another") {
  nn::Sequential model = make_swa_net(kFloat32);
  model->to(kFloat64);
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(kFloat32); });
  for (const Tensor& parameter : swa.module()->parameters()) CHECK(parameter.dtype() == kFloat64);
  CHECK(flat_values(swa.module()->parameters()) == flat_values(model->parameters()));
}

TEST_CASE("AveragedModel's forward is the averaged copy's") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); });
  move_swa_net(model, 10, 1);
  swa.update_parameters(model);
  move_swa_net(model, 11, 1);
  swa.update_parameters(model);
  swa.eval();
  model->eval();
  const Tensor x = randn({6, 3}, {.dtype = kFloat64});
  const std::vector<double> averaged = flat_values({swa.forward(x)});
  CHECK(averaged == flat_values({swa.module()->forward(x)}));
  CHECK(averaged != flat_values({model(x)}));
}

TEST_CASE("AveragedModel's state dict holds n_averaged and the averages, and resumes the average") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); });
  std::vector<double> sum;
  auto add_snapshot = [&] {
    const std::vector<double> snapshot = flat_values(model->parameters());
    sum.resize(snapshot.size(), 0.0);
    for (size_t i = 0; i < snapshot.size(); ++i) sum[i] += snapshot[i];
  };
  for (int update = 0; update < 3; ++update) {
    move_swa_net(model, 20 + update, 1);
    add_snapshot();
    swa.update_parameters(model);
  }
  const nn::StateDict state = swa.state_dict();
  const std::vector<std::string> keys = state.keys();
  REQUIRE(keys.size() == 1 + 4 + 5);  // n_averaged, two Linears' weight and bias, BatchNorm's 2 + 3
  CHECK(keys[0] == "n_averaged");
  CHECK(keys[1] == "module.0.weight");
  CHECK(keys[3] == "module.1.weight");
  CHECK(keys[5] == "module.1.running_mean");
  CHECK(keys[7] == "module.1.num_batches_tracked");
  CHECK(state.at("n_averaged").dtype() == kInt64);
  CHECK(state.at("n_averaged").item_int64() == 3);

  nn::Sequential other = make_swa_net();
  optim::AveragedModel<nn::Sequential> resumed(other, [] { return make_swa_net(); });
  resumed.load_state_dict(state);
  CHECK(resumed.n_averaged().item_int64() == 3);
  move_swa_net(model, 30, 1);
  add_snapshot();
  resumed.update_parameters(model);
  std::vector<double> mean = sum;
  for (double& value : mean) value /= 4.0;
  check_all_close(flat_values(resumed.module()->parameters()), mean, 1e-13);
}

TEST_CASE("AveragedModel refuses a factory that does not build a new model of the architecture") {
  nn::Sequential model = make_swa_net();
  const std::string itself = error_of([&] { optim::AveragedModel<nn::Sequential>(model, [&] { return model; }); });
  CHECK(itself.find("AveragedModel: make_copy returned the model itself") != std::string::npos);
  CHECK(itself.find("test_swa_averaged_model_copy.cpp") != std::string::npos);

  const std::string other = error_of([&] {
    optim::AveragedModel<nn::Sequential>(model, [] { return nn::Sequential(nn::Linear(3, 4, {.dtype = kFloat64})); });
  });
  CHECK_MESSAGE(other.find("make_copy built a module whose parameters are [0.weight, 0.bias], but the model's are "
                           "[0.weight, 0.bias, 1.weight, 1.bias, 2.weight, 2.bias]") != std::string::npos,
                other);

  const std::string shared = error_of([&] {
    optim::AveragedModel<nn::Sequential>(model, [&] {
      return nn::Sequential(nn::Linear(3, 4, {.dtype = kFloat64}), nn::BatchNorm1d(model->at<nn::BatchNorm1dImpl>(1)),
                            nn::Linear(4, 2, {.dtype = kFloat64}));
    });
  });
  CHECK_MESSAGE(shared.find("'1.weight' shares memory with the model's '1.weight'") != std::string::npos, shared);

  optim::AveragedModelOptions both{.avg_fn = optim::get_ema_avg_fn(), .multi_avg_fn = optim::get_ema_multi_avg_fn()};
  const std::string two = error_of([&] {
    optim::AveragedModel<nn::Sequential>(
        model, [] { return make_swa_net(); }, both);
  });
  CHECK(two.find("AveragedModel: give only one of avg_fn and multi_avg_fn") != std::string::npos);
}

TEST_CASE("AveragedModel.update_parameters refuses another architecture before changing anything") {
  nn::Sequential model = make_swa_net();
  optim::AveragedModel<nn::Sequential> swa(model, [] { return make_swa_net(); });
  swa.update_parameters(model);
  const std::vector<double> averages = flat_values(swa.module()->parameters());
  nn::Sequential wider(nn::Linear(3, 5, {.dtype = kFloat64}),
                       nn::BatchNorm1d(nn::BatchNormOptions{.num_features = 5, .dtype = kFloat64}),
                       nn::Linear(5, 2, {.dtype = kFloat64}));
  const std::string message = error_of([&] { swa.update_parameters(wider); });
  CHECK_MESSAGE(message.find("AveragedModel.update_parameters: parameter 0 ('0.weight') has shape [5, 3] in the "
                             "model but [4, 3] in the averaged copy") != std::string::npos,
                message);
  CHECK(message.find("test_swa_averaged_model_copy.cpp") != std::string::npos);
  const std::string fewer = error_of([&] { swa.update_parameters(nn::Linear(3, 4, {.dtype = kFloat64})); });
  CHECK(fewer.find("the model has 2 parameters, the averaged copy 6") != std::string::npos);
  CHECK(swa.n_averaged().item_int64() == 1);
  CHECK(flat_values(swa.module()->parameters()) == averages);
}

}  // namespace test_swa_averaged_model_copy
