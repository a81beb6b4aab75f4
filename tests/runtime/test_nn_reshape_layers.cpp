// nn::Identity, nn::Flatten and nn::Unflatten: shapes, views where PyTorch returns views,
// gradients, PyTorch's repr, and errors naming the module and the input's shape.
#include <doctest/doctest.h>

#include "runtime/ember.h"

namespace test_nn_reshape_layers {

using namespace ember;

namespace {

Tensor counting(const Dims& sizes) {
  return arange(0, static_cast<double>(*sizes.checked_product()), 1, {.dtype = kFloat32}).reshape(sizes);
}

}  // namespace

TEST_CASE("Identity returns its input itself") {
  nn::Identity identity;
  const Tensor x = counting({2, 3});
  CHECK(identity(x).is_same(x));
  CHECK(identity->str() == "Identity()");
  auto model = nn::Sequential(nn::Linear(3, 3), nn::Identity());
  CHECK(model->forward(x).sizes() == Dims{2, 3});
}

TEST_CASE("Flatten merges start_dim..end_dim, as a view where the strides allow") {
  nn::Flatten flatten;
  CHECK(flatten->str() == "Flatten(start_dim=1, end_dim=-1)");
  CHECK(nn::Flatten({.start_dim = 0, .end_dim = 2})->str() == "Flatten(start_dim=0, end_dim=2)");
  const Tensor x = counting({2, 3, 4});
  const Tensor y = flatten(x);
  CHECK(y.sizes() == Dims{2, 12});
  CHECK(y.raw_data_ptr() == x.raw_data_ptr());  // a view, as torch's flatten of a contiguous input
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  CHECK(nn::Flatten({.start_dim = 0})(x).sizes() == Dims{24});
  CHECK(nn::Flatten({.start_dim = 1, .end_dim = 1})(x).sizes() == Dims{2, 3, 4});
  CHECK(nn::Flatten({.start_dim = -2})(x).sizes() == Dims{2, 12});
  // Dims that are not evenly spaced cannot merge in place: a copy, with the values a copy has.
  const Tensor transposed = x.transpose(0, 1);  // [3, 2, 4], strides [4, 12, 1]
  const Tensor merged = flatten(transposed);
  CHECK(merged.sizes() == Dims{3, 8});
  CHECK(merged.raw_data_ptr() != x.raw_data_ptr());
  CHECK(merged.to_vector<float>() == transposed.contiguous().to_vector<float>());
  // torch.flatten of a 0-d tensor over dims 0..-1 is a 1-element 1-D tensor.
  CHECK(nn::Flatten({.start_dim = 0})(scalar_tensor(3.0)).sizes() == Dims{1});
  // The gradient flows back in the input's shape.
  const Tensor leaf = counting({2, 3, 4}).requires_grad_();
  flatten(leaf).mul(2.0).sum().backward();
  CHECK(leaf.grad().sizes() == Dims{2, 3, 4});
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>(24, 2.0f));
}

TEST_CASE("Flatten errors name the module, the dims and the input's shape") {
  nn::Flatten flatten;
  // torch: nn.Flatten()(torch.ones(5)) and (torch.tensor(1.)): IndexError, dim 1 out of range [-1, 0].
  CHECK_THROWS_WITH_AS(flatten(ones({5})),
                       doctest::Contains("Flatten(start_dim=1, end_dim=-1): dim 1 is out of range for an input of "
                                         "shape [5] (dims from -1 to 0)"),
                       Error);
  CHECK_THROWS_WITH_AS(flatten(scalar_tensor(1.0)), doctest::Contains("dim 1 is out of range for an input of shape []"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Flatten({.start_dim = 0, .end_dim = -4})(ones({2, 3, 4})),
                       doctest::Contains("Flatten(start_dim=0, end_dim=-4): dim -4 is out of range"), Error);
  CHECK_THROWS_WITH_AS(nn::Flatten({.start_dim = 2, .end_dim = 1})(ones({2, 3, 4})),
                       doctest::Contains("Flatten(start_dim=2, end_dim=1): start_dim comes after end_dim for an "
                                         "input of shape [2, 3, 4]"),
                       Error);
}

TEST_CASE("Unflatten splits one dim into several, always as a view") {
  nn::Unflatten unflatten(1, {2, 5});
  CHECK(unflatten->str() == "Unflatten(dim=1, unflattened_size=(2, 5))");
  CHECK(nn::Unflatten(0, {6})->str() == "Unflatten(dim=0, unflattened_size=(6,))");
  const Tensor x = counting({3, 10});
  const Tensor y = unflatten(x);
  CHECK(y.sizes() == Dims{3, 2, 5});
  CHECK(y.raw_data_ptr() == x.raw_data_ptr());
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  CHECK(nn::Unflatten(-1, {-1, 2})(x).sizes() == Dims{3, 5, 2});
  CHECK(nn::Unflatten(0, {1, 3, 1})(x).sizes() == Dims{1, 3, 1, 10});
  CHECK(nn::Unflatten(1, {0, 5})(ones({2, 0})).sizes() == Dims{2, 0, 5});
  // A strided input splits in place too: the new dims take strides from the split one.
  const Tensor strided = counting({10, 3}).t();  // [3, 10], strides [1, 3]
  const Tensor split = unflatten(strided);
  CHECK(split.strides() == Dims{1, 15, 3});
  CHECK(split.to_vector<float>() == strided.contiguous().to_vector<float>());
  // Round trip with Flatten inside a Sequential, gradients included.
  auto model = nn::Sequential(nn::Unflatten(1, {2, 5}), nn::Flatten());
  const Tensor leaf = counting({3, 10}).requires_grad_();
  const Tensor out = model->forward(leaf);
  CHECK(out.sizes() == Dims{3, 10});
  out.sum().backward();
  CHECK(leaf.grad().to_vector<float>() == std::vector<float>(30, 1.0f));
}

TEST_CASE("Unflatten errors name the module, its sizes and the input") {
  // torch: nn.Unflatten(1, (3, 3))(torch.ones(3, 10)): "unflatten: Provided sizes [3, 3] don't
  // multiply up to the size of dim 1 (10) in the input tensor".
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, {3, 3})(ones({3, 10})),
                       doctest::Contains("Unflatten(dim=1, unflattened_size=[3, 3]): the sizes don't multiply up to "
                                         "the size of dim 1 (10) of the input, shape [3, 10]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, {-1, 3})(ones({3, 10})), doctest::Contains("don't multiply up"), Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, {-1, 0})(ones({3, 0})), doctest::Contains("don't multiply up"), Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(2, {1, 2})(ones({3, 2})),
                       doctest::Contains("dim 2 is out of range for an input of shape [3, 2] (dims from -2 to 1)"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(0, {1})(scalar_tensor(1.0)), doctest::Contains("the input is 0-d"), Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, Dims{}),
                       doctest::Contains("Unflatten(dim=1): unflattened_size must not be empty"), Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, {-1, -1}), doctest::Contains("only one size can be -1"), Error);
  CHECK_THROWS_WITH_AS(nn::Unflatten(1, {-2, 5}), doctest::Contains("invalid size -2 in unflattened_size [-2, 5]"),
                       Error);
}

}  // namespace test_nn_reshape_layers
