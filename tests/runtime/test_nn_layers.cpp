// nn layers and init: PyTorch's initial distributions, seeded reproducibility, each layer's
// forward against a float64 reference, and the libtorch-style training loop end to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_nn_layers {

using namespace ember;

namespace {

struct Moments {
  double mean = 0.0;
  double variance = 0.0;
  double max_abs = 0.0;
};

Moments moments_of(const Tensor& tensor) {
  const std::vector<double> values = tensor.to(kFloat64).to_vector<double>();
  Moments result;
  for (double value : values) result.mean += value / values.size();
  for (double value : values) {
    result.variance += (value - result.mean) * (value - result.mean) / values.size();
    result.max_abs = std::max(result.max_abs, std::abs(value));
  }
  return result;
}

std::vector<double> values_of(const Tensor& tensor) { return tensor.to(kFloat64).to_vector<double>(); }

}  // namespace

TEST_CASE("Linear's default init is U(-1/sqrt(in), 1/sqrt(in)) for weight and bias") {
  Generator generator(1234);
  nn::Linear layer(400, 300, {.generator = &generator});
  const double bound = 1.0 / std::sqrt(400.0);
  const Moments weight = moments_of(layer->weight);
  CHECK(weight.max_abs <= bound);
  CHECK(weight.max_abs > 0.999 * bound);  // 120000 draws reach the edges
  CHECK(std::abs(weight.mean) < 1e-3);    // the standard error of the mean is 8e-5
  CHECK(weight.variance == doctest::Approx(bound * bound / 3.0).epsilon(0.02));
  const Moments bias = moments_of(layer->bias);
  CHECK(bias.max_abs <= bound);
  CHECK(bias.variance == doctest::Approx(bound * bound / 3.0).epsilon(0.2));
  CHECK(layer->weight.sizes() == Dims{300, 400});
  CHECK(layer->bias.sizes() == Dims{300});
}

TEST_CASE("initialisation is reproducible from a seeded generator") {
  Generator first(99);
  Generator second(99);
  Generator other(100);
  nn::Linear a(6, 5, {.generator = &first});
  nn::Linear b(6, 5, {.generator = &second});
  nn::Linear c(6, 5, {.generator = &other});
  CHECK(values_of(a->weight) == values_of(b->weight));
  CHECK(values_of(a->bias) == values_of(b->bias));
  CHECK(values_of(a->weight) != values_of(c->weight));
  // The default generator, reseeded, repeats itself too.
  manual_seed(7);
  nn::Linear d(6, 5);
  manual_seed(7);
  nn::Linear e(6, 5);
  CHECK(values_of(d->weight) == values_of(e->weight));
}

TEST_CASE("init functions follow torch.nn.init's formulas") {
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::ReLU) == doctest::Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::Tanh) == doctest::Approx(5.0 / 3.0));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::LeakyReLU, 0.2) == doctest::Approx(std::sqrt(2.0 / 1.04)));
  Tensor conv = empty({8, 4, 3, 3});
  CHECK(nn::init::calculate_fan_in_and_fan_out(conv) == std::pair<int64_t, int64_t>{36, 72});

  Generator generator(5);
  Tensor weight = empty({200, 300});
  nn::init::xavier_uniform_(weight, 1.0, &generator);
  const double xavier_bound = std::sqrt(6.0 / 500.0);
  CHECK(moments_of(weight).max_abs <= xavier_bound);
  CHECK(moments_of(weight).max_abs > 0.99 * xavier_bound);

  nn::init::kaiming_normal_(weight, 0.0, nn::init::FanMode::FanOut, nn::init::Nonlinearity::ReLU, &generator);
  CHECK(std::sqrt(moments_of(weight).variance) == doctest::Approx(std::sqrt(2.0 / 200.0)).epsilon(0.02));

  nn::init::normal_(weight, 3.0, 0.5, &generator);
  CHECK(moments_of(weight).mean == doctest::Approx(3.0).epsilon(0.005));
  nn::init::constant_(weight, 0.25);
  CHECK(moments_of(weight).max_abs == 0.25);

  CHECK_THROWS_WITH_AS(nn::init::xavier_uniform_(empty({5})), doctest::Contains("at least 2 dims, got shape [5]"), Error);
  Tensor integers = zeros({2, 2}, {.dtype = kInt64});
  CHECK_THROWS_WITH_AS(nn::init::uniform_(integers), doctest::Contains("uniform_: expected a floating-point tensor"), Error);
}

TEST_CASE("Embedding starts N(0, 1)") {
  Generator generator(11);
  nn::Embedding table(200, 50, {.generator = &generator});
  const Moments weight = moments_of(table->weight);
  CHECK(std::abs(weight.mean) < 0.05);
  CHECK(weight.variance == doctest::Approx(1.0).epsilon(0.05));
  CHECK(table->named_parameters().keys() == std::vector<std::string>{"weight"});
}

TEST_CASE("LayerNorm starts with weight 1 and bias 0") {
  nn::LayerNorm norm(Dims{2, 3});
  CHECK(values_of(norm->weight) == std::vector<double>(6, 1.0));
  CHECK(values_of(norm->bias) == std::vector<double>(6, 0.0));
  nn::LayerNorm plain(4, {.elementwise_affine = false});
  CHECK(plain->parameters().empty());
}

TEST_CASE("Linear forward computes x W^T + b") {
  Generator generator(3);
  nn::Linear layer(3, 2, {.generator = &generator});
  const Tensor input = from_vector<float>({1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.0f}, {2, 3});
  const std::vector<double> x = values_of(input);
  const std::vector<double> w = values_of(layer->weight);
  const std::vector<double> b = values_of(layer->bias);
  const std::vector<double> y = values_of(layer->forward(input));
  REQUIRE(y.size() == 4);
  for (int row = 0; row < 2; ++row)
    for (int out = 0; out < 2; ++out) {
      double expected = b[out];
      for (int k = 0; k < 3; ++k) expected += x[row * 3 + k] * w[out * 3 + k];
      CHECK(y[row * 2 + out] == doctest::Approx(expected).epsilon(1e-6));
    }
  // An error inside a module names the caller's line in this file.
  CHECK_THROWS_WITH_AS(layer->forward(ones({2, 4})), doctest::Contains("test_nn_layers.cpp"), Error);
}

TEST_CASE("activation modules compute their functions") {
  const std::vector<float> inputs{-2.0f, -0.5f, 0.0f, 0.75f, 3.0f};
  const Tensor x = from_vector<float>(inputs);
  const std::vector<double> relu = values_of(nn::ReLU()(x));
  const std::vector<double> gelu = values_of(nn::GELU()(x));
  const std::vector<double> silu = values_of(nn::SiLU()(x));
  const std::vector<double> tanh = values_of(nn::Tanh()(x));
  const std::vector<double> sigmoid = values_of(nn::Sigmoid()(x));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const double v = inputs[i];
    const double logistic = 1.0 / (1.0 + std::exp(-v));
    CHECK(relu[i] == std::max(v, 0.0));
    CHECK(gelu[i] == doctest::Approx(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)))).epsilon(1e-6));
    CHECK(silu[i] == doctest::Approx(v * logistic).epsilon(1e-6));
    CHECK(tanh[i] == doctest::Approx(std::tanh(v)).epsilon(1e-6));
    CHECK(sigmoid[i] == doctest::Approx(logistic).epsilon(1e-6));
  }
}

TEST_CASE("Dropout drops and rescales in training and is the identity in eval") {
  nn::Dropout dropout(0.5);
  const Tensor x = full({1000}, 2.0);
  const std::vector<double> trained = values_of(dropout(x));
  const auto kept = std::count(trained.begin(), trained.end(), 4.0);
  CHECK(std::count(trained.begin(), trained.end(), 0.0) + kept == 1000);
  CHECK(kept > 400);
  CHECK(kept < 600);
  dropout->eval();
  CHECK(dropout(x).is_same(x));
  CHECK_THROWS_WITH_AS(nn::Dropout(1.5), doctest::Contains("Dropout: probability must be in [0, 1], got 1.5"), Error);
}

TEST_CASE("a module constructed with bad sizes names the user's line") {
  using ember::testing::error_of;
  // The holder forwards its caller's location to the Impl, whose checks run under it.
  const int line = __LINE__ + 1;
  const std::vector<std::string> messages{error_of([] { nn::Linear(-1, 3); }),
                                          error_of([] { nn::Embedding(3, -2); }),
                                          error_of([] { nn::LayerNorm(Dims{-2}); }),
                                          error_of([] { nn::LayerNorm(Dims{3}, {.eps = -1.0}); }),
                                          error_of([] { nn::Dropout(1.5); })};
  CHECK(messages[0].find("Linear: feature counts must be non-negative, got in_features=-1") != std::string::npos);
  CHECK(messages[1].find("Embedding: sizes must be non-negative, got num_embeddings=3 embedding_dim=-2") !=
        std::string::npos);
  CHECK(messages[2].find("LayerNorm: normalized_shape [-2] must have non-negative sizes") != std::string::npos);
  CHECK(messages[3].find("LayerNorm: eps must be non-negative, got -1") != std::string::npos);
  CHECK(messages[4].find("Dropout: probability must be in [0, 1], got 1.5") != std::string::npos);
  for (size_t i = 0; i < messages.size(); ++i) {
    INFO(messages[i]);
    CHECK(messages[i].find(fmt::format("test_nn_layers.cpp:{}", line + static_cast<int>(i))) != std::string::npos);
  }
}

TEST_CASE("LayerNorm and Embedding take eps 0 and zero sizes, as PyTorch does") {
  // torch.nn.LayerNorm(3, eps=0), LayerNorm(0), Embedding(0, 3) and Embedding(4, 0) all construct.
  nn::LayerNorm exact(Dims{3}, {.eps = 0.0, .dtype = kFloat64});
  const std::vector<double> y = values_of(exact(from_vector<double>({1.0, 2.0, 6.0})));
  const double deviation = std::sqrt(14.0 / 3.0);  // no eps added
  REQUIRE(y.size() == 3);
  CHECK(y[0] == doctest::Approx(-2.0 / deviation).epsilon(1e-14));
  CHECK(y[1] == doctest::Approx(-1.0 / deviation).epsilon(1e-14));
  CHECK(y[2] == doctest::Approx(3.0 / deviation).epsilon(1e-14));

  nn::LayerNorm empty_norm(Dims{0});
  CHECK(empty_norm->weight.sizes() == Dims{0});
  CHECK(empty_norm->bias.sizes() == Dims{0});
  const Tensor normalized = empty_norm(zeros({2, 0}));
  CHECK(normalized.sizes() == Dims{2, 0});

  nn::Embedding no_rows(0, 3);
  CHECK(no_rows->weight.sizes() == Dims{0, 3});
  CHECK(no_rows(from_vector<int64_t>({}, {0})).sizes() == Dims{0, 3});
  CHECK_THROWS_AS(no_rows(from_vector<int64_t>({0})), Error);  // every index is out of range
  nn::Embedding no_columns(4, 0);
  CHECK(no_columns->weight.sizes() == Dims{4, 0});
  CHECK(no_columns(from_vector<int64_t>({3, 1})).sizes() == Dims{2, 0});
}

TEST_CASE("LayerNorm and Embedding forwards") {
  nn::LayerNorm norm(3);
  const std::vector<double> y = values_of(norm(from_vector<float>({1.0f, 2.0f, 6.0f})));
  const double mean = 3.0;
  const double deviation = std::sqrt((4.0 + 1.0 + 9.0) / 3.0 + 1e-5);
  CHECK(y[0] == doctest::Approx(-2.0 / deviation).epsilon(1e-5));
  CHECK(y[2] == doctest::Approx((6.0 - mean) / deviation).epsilon(1e-5));

  nn::Embedding table(5, 2);
  const Tensor rows = table(from_vector<int64_t>({4, 0, 4}));
  const std::vector<double> weight = values_of(table->weight);
  CHECK(rows.sizes() == Dims{3, 2});
  CHECK(values_of(rows) == std::vector<double>{weight[8], weight[9], weight[0], weight[1], weight[8], weight[9]});
}

TEST_CASE("the libtorch-style training loop runs and learns") {
  manual_seed(42);
  auto model = ember::nn::Sequential(ember::nn::Linear(100, 256), ember::nn::ReLU(), ember::nn::Linear(256, 10));
  ember::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  const Tensor x = randn({32, 100});
  const Tensor y = randint(0, 10, {32});
  double first_loss = 0.0;
  double last_loss = 0.0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    auto loss = ember::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first_loss : last_loss) = loss.item();
  }
  CHECK(first_loss == doctest::Approx(std::log(10.0)).epsilon(0.1));  // near uniform at the start
  CHECK(last_loss < 0.5 * first_loss);                                 // it memorises 32 samples
}

}  // namespace test_nn_layers
