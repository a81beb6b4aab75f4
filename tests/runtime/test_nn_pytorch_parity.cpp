// Behaviours of the nn module system and initialisers checked against what PyTorch 2.x does for
// the same calls (torch/nn/init.py, torch/nn/modules/module.py), with independent references.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "runtime/ember.h"

namespace test_nn_pytorch_parity {

using namespace ember;

TEST_CASE("nn::init xavier computes the fans before it looks at the element count, as torch.nn.init's") {
  // torch's xavier_uniform_/xavier_normal_ have no zero-element shortcut (kaiming_* have one): a
  // 1-D tensor has no fans even when empty, and a fan sum of 0 cannot give a bound.
  CHECK_THROWS_WITH_AS(nn::init::xavier_uniform_(empty({0})),
                       doctest::Contains("nn::init::xavier_uniform_: fan in and fan out need a tensor with at least 2 "
                                         "dims, got shape [0]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::init::xavier_normal_(empty({0})),
                       doctest::Contains("nn::init::xavier_normal_: fan in and fan out need a tensor with at least 2 "
                                         "dims, got shape [0]"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::init::xavier_uniform_(empty({0, 0})),
                       doctest::Contains("nn::init::xavier_uniform_: fan_in + fan_out is 0 for shape [0, 0]"), Error);
  CHECK_THROWS_WITH_AS(nn::init::xavier_normal_(empty({0, 0, 3})),
                       doctest::Contains("nn::init::xavier_normal_: fan_in + fan_out is 0 for shape [0, 0, 3]"), Error);
  // Fans that exist and do not sum to 0: the fill of no elements is a no-op.
  for (const Dims& shape : {Dims{0, 4}, Dims{4, 0}, Dims{4, 0, 3}}) {
    CAPTURE(shape);
    Tensor tensor = empty(shape);
    CHECK(nn::init::xavier_uniform_(tensor).is_same(tensor));
    CHECK(nn::init::xavier_normal_(tensor).is_same(tensor));
  }
  // kaiming_* return before the fans: the 1-D empty tensor stays a no-op there.
  Tensor flat = empty({0});
  CHECK(nn::init::kaiming_uniform_(flat).is_same(flat));
  CHECK(nn::init::kaiming_normal_(flat).is_same(flat));
}

TEST_CASE("state_dict entries are detached aliases of the module's tensors, as torch's state_dict") {
  // torch: destination[prefix + name] = param.detach() (keep_vars=False): the entry does not
  // require grad, shares the parameter's memory, and can be written in place.
  nn::Linear linear(3, 2);
  const std::vector<float> before = linear->weight.to_vector<float>();
  nn::StateDict state = linear->state_dict();
  CHECK(!state["weight"].requires_grad());
  CHECK(!state["bias"].requires_grad());
  CHECK(linear->weight.requires_grad());
  state["weight"].mul_(2.0);
  const std::vector<float> after = linear->weight.to_vector<float>();
  REQUIRE(after.size() == before.size());
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == static_cast<float>(2.0 * before[i]));
  // Loading a module's own state dict into it changes nothing.
  linear->load_state_dict(linear->state_dict());
  CHECK(linear->weight.to_vector<float>() == after);
  CHECK(linear->weight.requires_grad());
  CHECK(linear->weight.is_leaf());
}

TEST_CASE("load_state_dict reports every problem at once, in the form of torch's RuntimeError") {
  // torch's load_state_dict gathers the missing keys, the unexpected keys (both only when strict)
  // and every size mismatch, then raises one error listing them, each line after "\n\t".
  nn::Sequential net(nn::Linear(2, 3), nn::Linear(3, 4));
  nn::StateDict state;
  state.insert("0.weight", zeros({3, 2}));
  state.insert("1.weight", zeros({3, 4}));  // transposed
  state.insert("1.bias", zeros({5}));
  state.insert("2.weight", zeros({1}));
  state.insert("extra", zeros({1}));
  const std::vector<float> before = net->parameters()[0].to_vector<float>();
  CHECK_THROWS_WITH_AS(net->load_state_dict(state),
                       doctest::Contains("Error(s) in loading state_dict for Sequential:\n"
                                         "\tMissing key(s) in state_dict: \"0.bias\". \n"
                                         "\tUnexpected key(s) in state_dict: \"2.weight\", \"extra\". \n"
                                         "\tsize mismatch for 1.weight: copying a param with shape [3, 4] from "
                                         "checkpoint, the shape in current model is [4, 3].\n"
                                         "\tsize mismatch for 1.bias: copying a param with shape [5] from checkpoint, "
                                         "the shape in current model is [4]."),
                       Error);
  // Not strict: the keys are not reported, the size mismatches still are (torch raises for them too).
  CHECK_THROWS_WITH_AS(net->load_state_dict(state, /*strict=*/false),
                       doctest::Contains("Error(s) in loading state_dict for Sequential:\n"
                                         "\tsize mismatch for 1.weight: copying a param with shape [3, 4] from "
                                         "checkpoint, the shape in current model is [4, 3].\n"
                                         "\tsize mismatch for 1.bias:"),
                       Error);
  nn::StateDict only_missing = net->state_dict();
  only_missing.erase("1.bias");
  CHECK_THROWS_WITH_AS(net->load_state_dict(only_missing),
                       doctest::Contains("Error(s) in loading state_dict for Sequential:\n"
                                         "\tMissing key(s) in state_dict: \"1.bias\". "),
                       Error);
  // ember loads nothing when it raises (torch may have copied some entries by then).
  CHECK(net->parameters()[0].to_vector<float>() == before);
}

TEST_CASE("Dropout prints as torch's default Dropout, inplace=False included") {
  // torch.nn.Dropout.extra_repr: f"p={self.p}, inplace={self.inplace}", the field always present.
  // ember's Dropout never works in place, which is torch's inplace=False.
  CHECK(nn::Dropout()->str() == "Dropout(p=0.5, inplace=False)");
  CHECK(nn::Dropout(0.0)->str() == "Dropout(p=0.0, inplace=False)");
}

TEST_CASE("a transformer layer takes dim_feedforward 0, as torch's does, and its feed-forward block adds nothing") {
  // torch builds Linear(d_model, 0) and Linear(0, d_model): kaiming_uniform_ leaves their empty
  // weights alone and linear2's bias bound 1/sqrt(fan_in) is 0 for fan_in 0, so the block is zero.
  nn::TransformerEncoderLayer layer(4, 2, {.dim_feedforward = 0, .dtype = kFloat64});
  layer->eval();
  CHECK(layer->linear1->weight.sizes() == Dims{0, 4});
  CHECK(layer->linear2->weight.sizes() == Dims{4, 0});
  for (const double b : layer->linear2->bias.to_vector<double>()) CHECK(b == 0.0);
  const Tensor src = randn({3, 2, 4}, {.dtype = kFloat64});
  const Tensor attended = std::get<0>(layer->self_attn->forward(src, src, src));
  const Tensor expected = layer->norm2(layer->norm1(add(src, attended)));
  const std::vector<double> got = layer(src).to_vector<double>(), want = expected.to_vector<double>();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  // A negative size is refused (torch's Linear refuses the negative dimension).
  CHECK_THROWS_WITH_AS(nn::TransformerDecoderLayer(4, 2, {.dim_feedforward = -1}),
                       doctest::Contains("TransformerDecoderLayer: dim_feedforward must be non-negative, got -1"), Error);
}

TEST_CASE("F.embedding with max_norm refuses a bad padding_idx before it renorms the weight, as torch's") {
  // torch.nn.functional.embedding asserts padding_idx against weight.size(0) first, then renorms.
  Tensor weight = full({3, 2}, 4.0);  // every row's norm is 4 * sqrt(2), above max_norm
  const Tensor indices = from_vector<int64_t>({0, 2});
  CHECK_THROWS_WITH_AS(nn::functional::embedding(weight, indices, {.padding_idx = 3, .max_norm = 1.0}),
                       doctest::Contains("padding_idx must be within num_embeddings 3 (from -3 to 2), got 3"), Error);
  for (const float value : weight.to_vector<float>()) CHECK(value == 4.0f);
  // A valid one: the rows looked up are scaled to max_norm / (norm + 1e-7), the other row stays.
  const Tensor rows = nn::functional::embedding(weight, indices, {.padding_idx = -1, .max_norm = 1.0});
  const double scale = 1.0 / (4.0 * std::sqrt(2.0) + 1e-7);
  const std::vector<float> table = weight.to_vector<float>();
  for (const int row : {0, 2})
    for (int col = 0; col < 2; ++col) CHECK(table[row * 2 + col] == doctest::Approx(4.0 * scale).epsilon(1e-6));
  CHECK(table[2] == 4.0f);
  CHECK(table[3] == 4.0f);
  CHECK(rows.sizes() == Dims{2, 2});
}

namespace {

// A module with a 0-d buffer, as BatchNorm's num_batches_tracked.
struct CounterImpl : nn::Module {
  Tensor steps;
  CounterImpl() : Module("Counter") { steps = register_buffer("steps", scalar_tensor(0.0)); }
};

}  // namespace

TEST_CASE("load_state_dict takes a 1-D entry for a 0-d tensor, its element 0, as torch's does") {
  // torch's _load_from_state_dict: "Backward compatibility: loading 1-dim tensor from 0.3.*":
  // when the module's tensor is 0-d and the entry 1-D, the entry's element 0 is loaded.
  CounterImpl counter;
  nn::StateDict state;
  state.insert("steps", from_vector<float>({7.0f, 9.0f}));
  counter.load_state_dict(state);
  CHECK(counter.steps.dim() == 0);
  CHECK(counter.steps.item<float>() == 7.0f);
  // An empty 1-D entry has no element 0 (torch raises an IndexError): a size mismatch here.
  nn::StateDict empty_entry;
  empty_entry.insert("steps", empty({0}));
  CHECK_THROWS_WITH_AS(counter.load_state_dict(empty_entry),
                       doctest::Contains("size mismatch for steps: copying a param with shape [0] from checkpoint, the "
                                         "shape in current model is []."),
                       Error);
  CHECK(counter.steps.item<float>() == 7.0f);
}

namespace {

struct ExpandedImpl : nn::Module {
  Tensor table;
  ExpandedImpl() : Module("Expanded") { table = register_buffer("table", from_vector<float>({3.0f}).expand({4})); }
};

}  // namespace

TEST_CASE("load_state_dict of a module's own state dict writes nothing, an expanded buffer included") {
  // torch's copy_ returns early when source and target view the same data (same storage, offset,
  // sizes, strides and dtype), before it would refuse an expanded target.
  ExpandedImpl module;
  module.load_state_dict(module.state_dict());
  CHECK(module.table.to_vector<float>() == std::vector<float>(4, 3.0f));
  // Another tensor with those values is a real write into the expanded buffer: refused.
  nn::StateDict other;
  other.insert("table", full({4}, 3.0));
  CHECK_THROWS_WITH_AS(module.load_state_dict(other), doctest::Contains("is expanded"), Error);
}

}  // namespace test_nn_pytorch_parity
