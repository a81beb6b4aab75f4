// nn::Module trees: naming and recursion, train/eval, to(), zero_grad, strict state dicts,
// holders and Sequential, printing.
#include <doctest/doctest.h>

#include "error_of.h"
#include "runtime/ember.h"

namespace test_nn {

using namespace ember;

namespace {

// A small tree: fc1, block (a Sequential of Linear, ReLU, Dropout), fc2, and a buffer.
struct NetImpl : nn::Module {
  nn::Linear fc1{nullptr};
  nn::Sequential block{nullptr};
  nn::Linear fc2{nullptr};
  Tensor running;

  NetImpl() : Module("Net") {
    running = register_buffer("running", from_vector<float>({1.0f, 2.0f, 3.0f}));
    fc1 = register_module("fc1", nn::Linear(4, 8));
    block = register_module("block", nn::Sequential(nn::Linear(8, 8), nn::ReLU(), nn::Dropout(0.1)));
    fc2 = register_module("fc2", nn::Linear(8, 2, {.bias = false}));
  }
  Tensor forward(const Tensor& input, Where where = Where::current()) {
    CallSiteScope site(where);
    return fc2->forward(block->forward(fc1->forward(input)));
  }
};

class Net : public nn::ModuleHolder<NetImpl> {
 public:
  Net() : ModuleHolder(std::make_shared<NetImpl>()) {}
};

// A module that shares one tensor between two names (tied weights).
struct TiedImpl : nn::Module {
  TiedImpl() : Module("Tied") {
    Tensor shared = ones({2, 2});
    register_parameter("encoder", shared);
    register_parameter("decoder", shared);
  }
};

}  // namespace

TEST_CASE("parameters, buffers and modules are named recursively in PyTorch's order") {
  Net net;
  CHECK(net->named_parameters().keys() == std::vector<std::string>{"fc1.weight", "fc1.bias", "block.0.weight",
                                                                   "block.0.bias", "fc2.weight"});
  CHECK(net->named_parameters(false).empty());
  CHECK(net->named_buffers().keys() == std::vector<std::string>{"running"});
  CHECK(net->named_modules().keys() ==
        std::vector<std::string>{"", "fc1", "block", "block.0", "block.1", "block.2", "fc2"});
  CHECK(net->named_children().keys() == std::vector<std::string>{"fc1", "block", "fc2"});
  CHECK(net->state_dict().keys() == std::vector<std::string>{"running", "fc1.weight", "fc1.bias", "block.0.weight",
                                                             "block.0.bias", "fc2.weight"});
  // The tensors are the modules' own: the handles alias.
  CHECK(net->named_parameters()["fc1.weight"].is_same(net->fc1->weight));
  CHECK(net->block->at<nn::LinearImpl>(0)->in_features() == 8);
  for (const Tensor& parameter : net->parameters()) {
    CHECK(parameter.requires_grad());
    CHECK(parameter.is_leaf());
  }
}

TEST_CASE("a tensor registered twice is one parameter but two state dict entries") {
  auto tied = std::make_shared<TiedImpl>();
  CHECK(tied->parameters().size() == 1);
  CHECK(tied->named_parameters().keys() == std::vector<std::string>{"encoder"});
  CHECK(tied->state_dict().keys() == std::vector<std::string>{"encoder", "decoder"});
}

TEST_CASE("a module registered under two names is listed once by named_modules, as in PyTorch") {
  // torch: list(nn.Sequential(l, l).named_modules()) == [('', seq), ('0', l)]
  // (remove_duplicate=True), the same rule named_parameters follows for a tied tensor.
  auto shared = nn::Linear(2, 2);
  nn::Sequential twice(shared, shared);
  CHECK(twice->named_modules().keys() == std::vector<std::string>{"", "0"});
  CHECK(twice->named_modules()["0"].get() == shared.ptr().get());
  CHECK(twice->modules().size() == 2);
  CHECK(twice->modules(false).size() == 1);
  CHECK(twice->parameters().size() == 2);
  // A shared subtree is not walked again either: its descendants keep their first names.
  auto inner = nn::Sequential(nn::Linear(2, 2), nn::ReLU());
  nn::Sequential outer(inner, nn::Tanh(), inner);
  CHECK(outer->named_modules().keys() == std::vector<std::string>{"", "0", "0.0", "0.1", "1"});
}

TEST_CASE("registration errors name the module and the name") {
  struct Bad : nn::Module {
    Bad() : Module("Bad") {}
    void add(const std::string& name) { register_parameter(name, ones({1})); }
    void add_buffer(const std::string& name) { register_buffer(name, ones({1})); }
  };
  Bad bad;
  bad.add("weight");
  CHECK(bad.modules().size() == 1);  // a module on the stack still lists itself
  CHECK_THROWS_WITH_AS(bad.add("weight"), doctest::Contains("Bad: cannot register parameter 'weight'"), Error);
  CHECK_THROWS_WITH_AS(bad.add_buffer("weight"), doctest::Contains("name is already taken"), Error);
  CHECK_THROWS_WITH_AS(bad.add("a.b"), doctest::Contains("must not contain '.'"), Error);
  nn::Linear empty{nullptr};
  CHECK(empty.is_empty());
  CHECK_THROWS_WITH_AS(empty->forward(ones({1})), doctest::Contains("empty module holder"), Error);
}

TEST_CASE("train and eval reach every descendant") {
  Net net;
  CHECK(net->is_training());
  net->eval();
  for (const auto& module : net->modules()) CHECK_FALSE(module->is_training());
  net->train();
  for (const auto& module : net->modules()) CHECK(module->is_training());
}

TEST_CASE("zero_grad clears the gradients of the whole tree") {
  Net net;
  for (Tensor& parameter : net->parameters()) parameter.set_grad(ones_like(parameter));
  net->zero_grad(false);
  CHECK(net->fc1->weight.grad().to_vector<float>() == std::vector<float>(32, 0.0f));
  net->zero_grad();
  for (const Tensor& parameter : net->parameters()) CHECK_FALSE(parameter.grad().defined());
}

TEST_CASE("to(dtype) converts in place, so handles held elsewhere see it") {
  Net net;
  const Tensor weight = net->fc1->weight;  // e.g. held by an optimizer
  const std::vector<float> before = weight.to_vector<float>();
  net->to(kFloat64);
  CHECK(weight.dtype() == kFloat64);
  CHECK(net->running.dtype() == kFloat64);
  CHECK(weight.requires_grad());
  const std::vector<double> after = weight.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) CHECK(after[i] == static_cast<double>(before[i]));
  net->to(kCPU);  // already there: nothing changes
  CHECK(weight.device() == kCPU);
  CHECK_THROWS_WITH_AS(net->to(kInt64), doctest::Contains("converts floating-point tensors"), Error);
}

TEST_CASE("load_state_dict copies values into the existing tensors") {
  Net source;
  Net target;
  const Tensor target_weight = target->fc1->weight;
  target->load_state_dict(source->state_dict());
  CHECK(target->fc1->weight.is_same(target_weight));
  CHECK(target_weight.to_vector<float>() == source->fc1->weight.to_vector<float>());
  CHECK(target->block->at<nn::LinearImpl>(0)->bias.to_vector<float>() ==
        source->block->at<nn::LinearImpl>(0)->bias.to_vector<float>());
  // A copy, not an alias.
  CHECK_FALSE(target_weight.is_same(source->fc1->weight));
}

TEST_CASE("strict load_state_dict errors name the keys and leave the module unchanged") {
  Net net;
  const std::vector<float> original = net->fc1->weight.to_vector<float>();
  Net other;  // different random values
  REQUIRE(other->fc1->weight.to_vector<float>() != original);

  nn::StateDict missing;
  for (const auto& [key, tensor] : other->state_dict())
    if (key != "block.0.bias") missing.insert(key, tensor);
  CHECK_THROWS_WITH_AS(net->load_state_dict(missing), doctest::Contains("Missing key(s) in state_dict: \"block.0.bias\". "), Error);

  nn::StateDict unexpected = other->state_dict();
  unexpected.insert("fc3.weight", ones({1}));
  CHECK_THROWS_WITH_AS(net->load_state_dict(unexpected), doctest::Contains("Unexpected key(s) in state_dict: \"fc3.weight\". "), Error);

  nn::StateDict wrong_shape;
  for (const auto& [key, tensor] : other->state_dict()) wrong_shape.insert(key, key == "fc2.weight" ? ones({8, 2}) : tensor);
  CHECK_THROWS_WITH_AS(net->load_state_dict(wrong_shape),
                       doctest::Contains("size mismatch for fc2.weight: copying a param with shape [8, 2] from checkpoint, the shape in "
                                         "current model is [2, 8]."),
                       Error);

  // fc1.weight came before each failing entry, yet nothing was copied.
  CHECK(net->fc1->weight.to_vector<float>() == original);

  // Not strict: missing and unexpected keys are skipped, the rest loads, and both lists come back
  // (PyTorch's missing_keys / unexpected_keys), unquoted, in the module's and the dict's order.
  const nn::IncompatibleKeys skipped = net->load_state_dict(missing, false);
  CHECK(net->fc1->weight.to_vector<float>() == other->fc1->weight.to_vector<float>());
  CHECK(skipped.missing_keys == std::vector<std::string>{"block.0.bias"});
  CHECK(skipped.unexpected_keys.empty());
  missing.insert("fc3.weight", ones({1}));
  missing.insert("extra", ones({1}));
  const nn::IncompatibleKeys both = net->load_state_dict(missing, false);
  CHECK(both.missing_keys == std::vector<std::string>{"block.0.bias"});
  CHECK(both.unexpected_keys == std::vector<std::string>{"fc3.weight", "extra"});
  const nn::IncompatibleKeys none = net->load_state_dict(other->state_dict());
  CHECK(none.missing_keys.empty());
  CHECK(none.unexpected_keys.empty());
}

TEST_CASE("a module prints like PyTorch") {
  auto model = nn::Sequential(nn::Linear(3, 4), nn::GELU(nn::GELUOptions{.tanh_approximation = true}), nn::Dropout(0.25));
  CHECK(model->str() ==
        "Sequential(\n"
        "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
        "  (1): GELU(approximate='tanh')\n"
        "  (2): Dropout(p=0.25, inplace=False)\n"
        ")");
}

TEST_CASE("modules print bools, shapes and floats as Python's repr does") {
  // torch: repr(nn.Linear(3, 4, bias=False)), repr(nn.LayerNorm(3)), repr(nn.LayerNorm((2, 3),
  // eps=0.5, elementwise_affine=False)), repr(nn.Dropout(1.0)), repr(nn.Embedding(10, 3)).
  CHECK(nn::Linear(3, 4, {.bias = false})->str() == "Linear(in_features=3, out_features=4, bias=False)");
  CHECK(nn::LayerNorm(Dims{3})->str() == "LayerNorm((3,), eps=1e-05, elementwise_affine=True)");
  CHECK(nn::LayerNorm(Dims{2, 3}, {.eps = 0.5, .elementwise_affine = false})->str() ==
        "LayerNorm((2, 3), eps=0.5, elementwise_affine=False)");
  CHECK(nn::LayerNorm(Dims{3}, {.eps = 0.0})->str() == "LayerNorm((3,), eps=0.0, elementwise_affine=True)");
  // PyTorch's Dropout also prints ", inplace=False"; ember's has no in-place form (ARCHITECTURE.md).
  CHECK(nn::Dropout(1.0)->str() == "Dropout(p=1.0, inplace=False)");
  CHECK(nn::Dropout(0.2)->str() == "Dropout(p=0.2, inplace=False)");
  CHECK(nn::Embedding(10, 3)->str() == "Embedding(10, 3)");
}

TEST_CASE("Sequential names children by position and checks indices") {
  auto model = nn::Sequential(nn::Linear(100, 256), nn::ReLU(), nn::Linear(256, 10));
  CHECK(model->size() == 3);
  CHECK(model->named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(model->parameters().size() == 4);
  CHECK((*model)[1]->name() == "ReLU");
  CHECK_THROWS_WITH_AS((*model)[3], doctest::Contains("Sequential: index 3 out of range for 3 modules"), Error);
  CHECK_THROWS_WITH_AS(model->at<nn::LinearImpl>(1), doctest::Contains("module 1 is a ReLU"), Error);
  model->push_back("head", nn::Tanh());
  CHECK(model->named_children().keys() == std::vector<std::string>{"0", "1", "2", "head"});
  // Copying the holder shares the module.
  nn::Sequential alias = model;
  CHECK(alias.ptr() == model.ptr());
}

TEST_CASE("Sequential, ModuleList and ModuleDict take Python's indices and name the caller's line") {
  auto model = nn::Sequential(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  // torch: model[-1] is model[2], model[-3] model[0]
  CHECK((*model)[-1] == (*model)[2]);
  CHECK(model->at<nn::LinearImpl>(-3)->weight.sizes() == Dims{3, 2});
  CHECK(model->ptr(-2)->name() == "ReLU");
  int line = __LINE__ + 1;
  std::string message = testing::error_of([&] { (void)(*model)[-4]; });
  CHECK(message.starts_with("Sequential: index -4 out of range for 3 modules"));
  CHECK(testing::names_line(message, line));
  line = __LINE__ + 1;
  message = testing::error_of([&] { (void)model->at<nn::LinearImpl>(-2); });
  CHECK(message.starts_with("Sequential: module -2 is a ReLU, not the requested type"));
  CHECK(testing::names_line(message, line));

  auto layers = nn::ModuleList(nn::Linear(2, 2));
  line = __LINE__ + 1;
  message = testing::error_of([&] { (void)(*layers)[1]; });
  CHECK(message.starts_with("ModuleList: index 1 is out of range for 1 modules"));
  CHECK(testing::names_line(message, line));  // was module_list.h's line

  auto heads = nn::ModuleDict({{"a", nn::Linear(2, 2)}});
  const std::string key = "b";
  line = __LINE__ + 1;
  message = testing::error_of([&] { (void)(*heads)["b"]; });
  CHECK(message.starts_with("ModuleDict: no module under key 'b' (keys: [\"a\"])"));
  CHECK(testing::names_line(message, line));
  line = __LINE__ + 1;
  message = testing::error_of([&] { (void)(*heads)[key]; });
  CHECK(testing::names_line(message, line));
  CHECK((*heads)[std::string("a")] == heads->ptr("a"));
}

}  // namespace test_nn
