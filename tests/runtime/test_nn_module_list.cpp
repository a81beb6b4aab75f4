// nn::ModuleList: positional names through a model's state dict, insert/extend, indexing and its
// errors, and torch's folded printing. Expected values are what PyTorch gives for the same structure.
#include <doctest/doctest.h>

#include <sstream>

#include "runtime/ember.h"

namespace test_nn_module_list {

using namespace ember;

namespace {

using Names = std::vector<std::string>;

// class Stack(nn.Module): layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)]); head = nn.Linear(4, 2)
struct StackImpl : nn::Module {
  nn::ModuleList layers{nullptr};
  nn::Linear head{nullptr};

  StackImpl() : Module("Stack") {
    layers = register_module("layers", nn::ModuleList());
    for (int i = 0; i < 3; ++i) layers->push_back(nn::Linear(4, 4));
    head = register_module("head", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& input) {
    Tensor x = input;
    for (const auto& layer : *layers) x = tanh(layer->as<nn::Linear>()->forward(x));
    return head(x);
  }
};

std::vector<std::string> type_names(const nn::ModuleListImpl& list) {
  std::vector<std::string> names;
  for (const std::shared_ptr<nn::Module>& module : list) names.push_back(module->name());
  return names;
}

}  // namespace

TEST_CASE("ModuleList names its modules by position, inside a model's names too") {
  auto stack = std::make_shared<StackImpl>();
  CHECK(stack->layers->size() == 3);
  CHECK(stack->layers->named_children().keys() == Names{"0", "1", "2"});
  CHECK(stack->state_dict().keys() == Names{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                                            "layers.2.weight", "layers.2.bias", "head.weight", "head.bias"});
  CHECK(stack->named_modules().keys() == Names{"", "layers", "layers.0", "layers.1", "layers.2", "head"});
  CHECK(stack->parameters().size() == 8);
  CHECK(stack->parameters()[2].is_same(stack->layers->at<nn::LinearImpl>(1)->weight));
  CHECK(stack->forward(ones({5, 4})).sizes() == Dims{5, 2});
  // torch: print(Stack()): three equal entries fold into one line.
  CHECK(stack->str() ==
        "Stack(\n"
        "  (layers): ModuleList(\n"
        "    (0-2): 3 x Linear(in_features=4, out_features=4, bias=True)\n"
        "  )\n"
        "  (head): Linear(in_features=4, out_features=2, bias=True)\n"
        ")");
}

TEST_CASE("ModuleList indexing: negative from the end, typed access, iteration, errors") {
  nn::ModuleList layers(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  CHECK(type_names(*layers) == Names{"Linear", "ReLU", "Linear"});
  CHECK((*layers)[-1].get() == layers->ptr(2).get());
  CHECK(layers->at<nn::LinearImpl>(-3)->out_features() == 3);
  CHECK((*layers)[1]->as<nn::ReLU>() != nullptr);
  CHECK((*layers)[1]->as<nn::LinearImpl>() == nullptr);
  CHECK_FALSE(layers->empty());
  CHECK(nn::ModuleList()->is_empty());
  CHECK_THROWS_WITH_AS((*layers)[3], doctest::Contains("ModuleList: index 3 is out of range for 3 modules"), Error);
  CHECK_THROWS_WITH_AS((*layers)[-4], doctest::Contains("ModuleList: index -4 is out of range for 3 modules"), Error);
  CHECK_THROWS_WITH_AS(layers->at<nn::LinearImpl>(1),
                       doctest::Contains("ModuleList: module 1 is a ReLU, not the requested type"), Error);
  // An empty holder is refused before the list changes.
  CHECK_THROWS_WITH_AS(layers->push_back(nn::Linear{nullptr}), doctest::Contains("got an empty module"), Error);
  CHECK(layers->size() == 3);
  // Copying the holder shares the list.
  nn::ModuleList alias = layers;
  CHECK(alias.ptr() == layers.ptr());
}

TEST_CASE("ModuleList insert renames the modules after it, and extend appends, sharing modules") {
  auto first = nn::Linear(2, 2);
  auto last = nn::Linear(2, 1);
  nn::ModuleList layers(first, nn::ReLU(), last);
  // torch: layers.insert(1, nn.Tanh()); layers.insert(0, nn.Linear(1, 2)). A negative position
  // counts from the end as Python's list.insert does (torch's ModuleList.insert raises KeyError).
  layers->insert(1, nn::Tanh());
  layers->insert(-1, nn::Sigmoid());
  layers->insert(0, nn::Linear(1, 2));
  CHECK(type_names(*layers) == Names{"Linear", "Linear", "Tanh", "ReLU", "Sigmoid", "Linear"});
  CHECK(layers->named_children().keys() == Names{"0", "1", "2", "3", "4", "5"});
  CHECK(layers->named_parameters().keys() == Names{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"});
  CHECK(layers->named_parameters()["1.weight"].is_same(first->weight));
  CHECK(layers->named_parameters()["5.weight"].is_same(last->weight));
  layers->insert(6, nn::Tanh());  // at the end, as append
  CHECK((*layers)[6]->name() == "Tanh");
  CHECK_THROWS_WITH_AS(layers->insert(8, nn::Tanh()),
                       doctest::Contains("ModuleList: insert position 8 is out of range for 7 modules (from -7 to 7)"),
                       Error);
  CHECK_THROWS_WITH_AS(layers->insert(-8, nn::Tanh()), doctest::Contains("insert position -8"), Error);
  CHECK_THROWS_WITH_AS(layers->insert(0, nn::Tanh{nullptr}), doctest::Contains("insert(0) got an empty module"),
                       Error);
  CHECK(layers->size() == 7);

  nn::ModuleList more;
  more->append(nn::GELU());
  more->extend(std::vector<nn::ModulePointer>{nn::SiLU(), first});
  more->extend(*layers);  // another list: its modules are shared, not copied
  CHECK(more->size() == 10);
  CHECK(more->ptr(2).get() == first.ptr().get());
  CHECK(more->ptr(4).get() == first.ptr().get());
  more->extend(*more);  // with itself: each module once more
  CHECK(more->size() == 20);
  CHECK(more->ptr(19).get() == more->ptr(9).get());
  // A module registered twice is one set of parameters (PyTorch dedups them the same way).
  CHECK(more->parameters().size() == 6);
}

TEST_CASE("ModuleList prints as torch's ModuleList: runs of equal entries fold") {
  // torch: repr(nn.ModuleList()) and repr(nn.ModuleList([Linear(2, 2), Linear(2, 2), ReLU(), Linear(2, 2)]))
  CHECK(nn::ModuleList()->str() == "ModuleList()");
  nn::ModuleList layers(nn::Linear(2, 2), nn::Linear(2, 2), nn::ReLU(), nn::Linear(2, 2));
  CHECK(layers->str() ==
        "ModuleList(\n"
        "  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n"
        "  (2): ReLU()\n"
        "  (3): Linear(in_features=2, out_features=2, bias=True)\n"
        ")");
  // Multi-line entries are indented under their "(i-j): n x " line.
  nn::ModuleList blocks(nn::Sequential(nn::Linear(1, 1), nn::ReLU()), nn::Sequential(nn::Linear(1, 1), nn::ReLU()));
  CHECK(blocks->str() ==
        "ModuleList(\n"
        "  (0-1): 2 x Sequential(\n"
        "    (0): Linear(in_features=1, out_features=1, bias=True)\n"
        "    (1): ReLU()\n"
        "  )\n"
        ")");
  std::ostringstream printed;
  printed << layers;
  CHECK(printed.str() == layers->str());
}

TEST_CASE("train, eval and to(dtype) reach the modules inside a ModuleList") {
  auto stack = std::make_shared<StackImpl>();
  stack->layers->push_back(nn::Dropout(0.5));
  stack->eval();
  for (const auto& module : stack->modules()) CHECK_FALSE(module->is_training());
  stack->train();
  CHECK((*stack->layers)[3]->is_training());
  stack->to(kFloat64);
  for (const Tensor& parameter : stack->parameters()) CHECK(parameter.dtype() == kFloat64);
  CHECK(stack->layers->at<nn::LinearImpl>(0)->weight.dtype() == kFloat64);
}

}  // namespace test_nn_module_list
