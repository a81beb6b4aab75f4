// nn::ModuleDict (ordered keys, replacement in place, update, pop, errors, printing) and the tree
// utilities around the containers: apply's order, named_children with a module under two names,
// parameters() order of a model mixing the containers, as PyTorch gives them; and the registry
// helpers under ModuleDict (OrderedDict::erase, Module::replace_module / unregister_module).
#include <doctest/doctest.h>

#include "runtime/ember.h"

namespace test_nn_module_dict {

using namespace ember;

namespace {

using Names = std::vector<std::string>;

// class Mixed(nn.Module): embed = nn.Embedding(5, 4); blocks = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(),
// nn.Linear(4, 4)]); heads = nn.ModuleDict({'a': nn.Linear(4, 2), 'b': nn.Linear(4, 3, bias=False)});
// norm = nn.LayerNorm(4)
struct MixedImpl : nn::Module {
  MixedImpl() : Module("Mixed") {
    register_module("embed", nn::Embedding(5, 4));
    register_module("blocks", nn::ModuleList(nn::Linear(4, 4), nn::ReLU(), nn::Linear(4, 4)));
    register_module("heads", nn::ModuleDict({{"a", nn::Linear(4, 2)}, {"b", nn::Linear(4, 3, {.bias = false})}}));
    register_module("norm", nn::LayerNorm(Dims{4}));
  }
};

}  // namespace

TEST_CASE("ModuleDict keeps insertion order: insert replaces in place, update and pop") {
  nn::ModuleDict heads({{"class", nn::Linear(4, 3)}, {"box", nn::Linear(4, 2)}});
  CHECK(heads->keys() == Names{"class", "box"});
  CHECK(heads->contains("box"));
  CHECK_FALSE(heads->contains("Box"));
  CHECK(heads->at<nn::LinearImpl>("box")->out_features() == 2);
  CHECK((*heads)["class"]->name() == "Linear");
  CHECK(heads->named_parameters().keys() == Names{"class.weight", "class.bias", "box.weight", "box.bias"});

  // torch: heads['class'] = nn.Tanh() keeps the key's place; a new key goes last.
  heads->insert("class", nn::Tanh());
  heads->insert("act", nn::ReLU());
  CHECK(heads->keys() == Names{"class", "box", "act"});
  CHECK(heads->named_children().keys() == Names{"class", "box", "act"});
  CHECK((*heads)["class"]->name() == "Tanh");
  CHECK(heads->named_parameters().keys() == Names{"box.weight", "box.bias"});

  heads->update({{"box", nn::Identity()}, {"extra", nn::Linear(1, 1)}});
  CHECK(heads->keys() == Names{"class", "box", "act", "extra"});
  CHECK((*heads)["box"]->name() == "Identity");
  nn::ModuleDict more({{"z", nn::Sigmoid()}});
  heads->update(*more);
  CHECK(heads->size() == 5);
  CHECK((*heads)["z"].get() == (*more)["z"].get());

  const std::shared_ptr<nn::Module> act = heads->pop("act");
  CHECK(act->name() == "ReLU");
  CHECK(heads->keys() == Names{"class", "box", "extra", "z"});
  CHECK(heads->named_children().keys() == heads->keys());
  std::vector<std::string> seen;
  for (const auto& [key, module] : *heads) seen.push_back(key + ":" + module->name());
  CHECK(seen == Names{"class:Tanh", "box:Identity", "extra:Linear", "z:Sigmoid"});
  CHECK(heads->values().size() == 4);
  CHECK(heads->items()[2].first == "extra");
  heads->clear();
  CHECK(heads->empty());
  CHECK(heads->named_children().empty());
}

TEST_CASE("ModuleDict errors name the key and leave the dict unchanged") {
  nn::ModuleDict heads({{"class", nn::Linear(4, 3)}, {"box", nn::Linear(4, 2)}});
  CHECK_THROWS_WITH_AS((*heads)["nope"],
                       doctest::Contains("ModuleDict: no module under key 'nope' (keys: [\"class\", \"box\"])"), Error);
  CHECK_THROWS_WITH_AS(heads->pop("nope"), doctest::Contains("no module under key 'nope'"), Error);
  CHECK_THROWS_WITH_AS(heads->at<nn::ReLUImpl>("box"),
                       doctest::Contains("ModuleDict: module 'box' is a Linear, not the requested type"), Error);
  CHECK_THROWS_WITH_AS(heads->insert("a.b", nn::ReLU()), doctest::Contains("name 'a.b' must not contain '.'"), Error);
  CHECK_THROWS_WITH_AS(heads->insert("", nn::ReLU()), doctest::Contains("name must not be empty"), Error);
  CHECK_THROWS_WITH_AS(heads->insert("box", nn::ReLU{nullptr}), doctest::Contains("got an empty module"), Error);
  CHECK_THROWS_WITH_AS(heads->insert("new", nn::ReLU{nullptr}), doctest::Contains("got an empty module"), Error);
  CHECK(heads->keys() == Names{"class", "box"});
  CHECK((*heads)["box"]->name() == "Linear");
}

TEST_CASE("ModuleDict prints as any torch module does") {
  CHECK(nn::ModuleDict()->str() == "ModuleDict()");
  nn::ModuleDict heads({{"class", nn::Linear(4, 3)}, {"act", nn::ReLU()}});
  CHECK(heads->str() ==
        "ModuleDict(\n"
        "  (class): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (act): ReLU()\n"
        ")");
}

TEST_CASE("parameters, state dicts and modules of a model mixing the containers follow PyTorch's order") {
  auto mixed = std::make_shared<MixedImpl>();
  const Names parameters{"embed.weight",   "blocks.0.weight", "blocks.0.bias", "blocks.2.weight", "blocks.2.bias",
                         "heads.a.weight", "heads.a.bias",    "heads.b.weight", "norm.weight",    "norm.bias"};
  CHECK(mixed->named_parameters().keys() == parameters);
  CHECK(mixed->state_dict().keys() == parameters);
  CHECK(mixed->named_modules().keys() == Names{"", "embed", "blocks", "blocks.0", "blocks.1", "blocks.2", "heads",
                                               "heads.a", "heads.b", "norm"});
  // A state dict moves between two such models through the containers.
  auto other = std::make_shared<MixedImpl>();
  other->load_state_dict(mixed->state_dict());
  for (const auto& [key, tensor] : mixed->state_dict())
    CHECK(other->state_dict()[key].to_vector<float>() == tensor.to_vector<float>());
}

TEST_CASE("apply visits children before their parent, as torch's Module.apply") {
  // torch: net.apply(lambda m: seen.append(type(m).__name__)) on
  // Sequential(Linear(2, 2), Sequential(ReLU(), Tanh()), Sigmoid())
  auto model = nn::Sequential(nn::Linear(2, 2), nn::Sequential(nn::ReLU(), nn::Tanh()), nn::Sigmoid());
  std::vector<std::string> seen;
  nn::Module& returned = model->apply([&](nn::Module& module) { seen.push_back(module.name()); });
  CHECK(&returned == model.get());
  CHECK(seen == Names{"Linear", "ReLU", "Tanh", "Sequential", "Sigmoid", "Sequential"});

  // The usual use: initialise every Linear of a tree.
  model->apply([](nn::Module& module) {
    if (auto* linear = module.as<nn::Linear>()) {
      NoGradGuard no_grad;
      linear->weight.fill_(0.5);
    }
  });
  CHECK(model->at<nn::LinearImpl>(0)->weight.to_vector<float>() == std::vector<float>(4, 0.5f));
}

TEST_CASE("a module under two names: once in named_children, children and apply, twice in state_dict") {
  // torch: l = nn.Linear(2, 2); s = nn.Sequential(l, l): list(s.named_children()) == [('0', l)],
  // s.state_dict() has 0.weight, 0.bias, 1.weight, 1.bias, and print(s) shows both.
  auto shared = nn::Linear(2, 2);
  nn::Sequential twice(shared, shared);
  CHECK(twice->named_children().keys() == Names{"0"});
  CHECK(twice->children().size() == 1);
  CHECK(twice->state_dict().keys() == Names{"0.weight", "0.bias", "1.weight", "1.bias"});
  CHECK(twice->named_parameters().keys() == Names{"0.weight", "0.bias"});
  CHECK(twice->str() ==
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=2, bias=True)\n"
        "  (1): Linear(in_features=2, out_features=2, bias=True)\n"
        ")");
  int visits = 0;
  twice->apply([&](nn::Module& module) { visits += module.as<nn::LinearImpl>() != nullptr; });
  CHECK(visits == 1);
  // Under two parents it is each parent's child: apply reaches it once per parent, named_modules once.
  auto outer = nn::Sequential(nn::Sequential(shared), nn::Sequential(shared));
  visits = 0;
  outer->apply([&](nn::Module& module) { visits += module.as<nn::LinearImpl>() != nullptr; });
  CHECK(visits == 2);
  CHECK(outer->named_modules().keys() == Names{"", "0", "0.0", "1"});
  // A ModuleDict keeps both keys of a shared module in its own entries.
  nn::ModuleDict aliases({{"x", shared}, {"y", shared}});
  CHECK(aliases->keys() == Names{"x", "y"});
  CHECK(aliases->named_children().keys() == Names{"x"});
}

TEST_CASE("OrderedDict::erase keeps the order of the rest, and Module's replace and unregister check the name") {
  OrderedDict<int> numbers{{"a", 1}, {"b", 2}, {"c", 3}};
  numbers.erase("b");
  CHECK(numbers.keys() == Names{"a", "c"});
  CHECK(numbers.at("c") == 3);
  numbers.insert("b", 4);
  CHECK(numbers.keys() == Names{"a", "c", "b"});
  CHECK_THROWS_WITH_AS(numbers.erase("z"), doctest::Contains("OrderedDict: no key 'z' among 3 entries"), Error);

  struct Holder : nn::Module {
    Holder() : Module("Holder") { register_module("x", nn::ReLU()); }
    void replace(const std::string& name, std::shared_ptr<nn::Module> module) { replace_module(name, module); }
    std::shared_ptr<nn::Module> remove(const std::string& name) { return unregister_module(name); }
  };
  Holder holder;
  CHECK_THROWS_WITH_AS(holder.replace("y", nn::Tanh().ptr()),
                       doctest::Contains("Holder: replace_module: no submodule 'y' to replace"), Error);
  CHECK_THROWS_WITH_AS(holder.replace("x", nullptr),
                       doctest::Contains("Holder: replace_module('x') got an empty module"), Error);
  CHECK_THROWS_WITH_AS(holder.remove("y"), doctest::Contains("Holder: unregister_module: no submodule 'y'"), Error);
  holder.replace("x", nn::Tanh().ptr());
  CHECK(holder.named_children()["x"]->name() == "Tanh");
  CHECK(holder.remove("x")->name() == "Tanh");
  CHECK(holder.named_children().empty());
}

}  // namespace test_nn_module_dict
