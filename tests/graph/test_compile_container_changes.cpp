// ember::compile of steps that run the modules of nn::Sequential, ModuleList and ModuleDict when
// the container changes between calls: a module pushed, inserted or popped recompiles (torch.compile
// guards a module's _modules), so no call replays the model as it was; an unchanged container keeps
// replaying, with one guard per container however often the step reads it.
#include <doctest/doctest.h>

#include <string>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "runtime/nn/nn.h"

namespace test_compile_container_changes {

using namespace ember;

namespace {

Tensor input() {
  manual_seed(4100);
  return randn({4, 3});
}

// How many times `text` holds `part`.
int occurrences(const std::string& text, const std::string& part) {
  int count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

// The list's modules in order, each a Linear: what a model with a ModuleList of layers runs.
Tensor run_layers(const nn::ModuleList& layers, const Tensor& x) {
  Tensor h = x;
  for (const auto& layer : *layers) h = layer->as<nn::Linear>()->forward(h);
  return h;
}

}  // namespace

TEST_CASE("compile: a module pushed onto a Sequential between calls recompiles instead of replaying without it") {
  NoGradGuard no_grad;
  manual_seed(4101);
  auto model = nn::Sequential(nn::Linear(3, 3), nn::ReLU());
  auto forward = ember::compile([&](const Tensor& x) { return model->forward(x); }, {.fullgraph = true});
  const Tensor x = input();
  for (int call = 0; call < 3; ++call) forward(x);
  REQUIRE(forward.state().replays() == 1);
  model->push_back(nn::Linear(3, 3));
  const Tensor expected = model->forward(x);
  // Replayed, the old graph gave the ReLU's output: off by ~0.5 here.
  CHECK(graph_test::max_relative_error(forward(x), expected) <= 1e-5);
  REQUIRE(forward.state().recompile_reasons().size() == 1);
  CHECK(forward.state().recompile_reasons()[0] ==
        "the graph was captured with Sequential's 2 modules unchanged, which no longer holds");
  CHECK(graph_test::max_relative_error(forward(x), expected) <= 1e-5);  // the new variant replays
  CHECK(forward.state().captures_made() == 2);
  CHECK(forward.state().replays() == 2);
}

TEST_CASE("compile: inserting into a ModuleList a step loops over recompiles") {
  NoGradGuard no_grad;
  manual_seed(4102);
  auto layers = nn::ModuleList(nn::Linear(3, 3), nn::Linear(3, 3));
  auto forward = ember::compile([&](const Tensor& x) { return run_layers(layers, x); }, {.fullgraph = true});
  const Tensor x = input();
  for (int call = 0; call < 3; ++call) forward(x);
  layers->insert(1, nn::Linear(3, 3));
  CHECK(graph_test::max_relative_error(forward(x), run_layers(layers, x)) <= 1e-5);
  REQUIRE(forward.state().recompile_reasons().size() == 1);
  CHECK(forward.state().recompile_reasons()[0] ==
        "the graph was captured with ModuleList's 2 modules unchanged, which no longer holds");
}

TEST_CASE("compile: popping a ModuleDict entry the caller still holds recompiles") {
  NoGradGuard no_grad;
  manual_seed(4103);
  auto heads = nn::ModuleDict({{"a", nn::Linear(3, 3)}, {"b", nn::Linear(3, 3)}});
  const auto run = [&](const Tensor& x) {
    Tensor h = x;
    for (const auto& [key, head] : *heads) h = head->as<nn::Linear>()->forward(h);
    return h;
  };
  auto forward = ember::compile(run, {.fullgraph = true});
  const Tensor x = input();
  for (int call = 0; call < 3; ++call) forward(x);
  // Held here, "b"'s parameters stay referenced outside the graph: only the dict's guard sees the pop.
  const std::shared_ptr<nn::Module> popped = heads->pop("b");
  CHECK(graph_test::max_relative_error(forward(x), run(x)) <= 1e-5);
  REQUIRE(forward.state().recompile_reasons().size() == 1);
  CHECK(forward.state().recompile_reasons()[0] ==
        "the graph was captured with ModuleDict's 2 modules unchanged, which no longer holds");
}

TEST_CASE("compile: a container read once per layer is one guard, and unchanged it keeps replaying") {
  NoGradGuard no_grad;
  manual_seed(4104);
  auto layers = nn::ModuleList(nn::Linear(3, 3), nn::Linear(3, 3), nn::Linear(3, 3));
  const auto run = [&](const Tensor& x) {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i) h = layers->at<nn::LinearImpl>(static_cast<int64_t>(i))->forward(h);
    return h;
  };
  auto forward = ember::compile(run, {.fullgraph = true});
  const Tensor x = input();
  for (int call = 0; call < 4; ++call) CHECK(graph_test::max_relative_error(forward(x), run(x)) <= 1e-5);
  layers->eval();  // a mode change is not a change of the modules
  forward(x);
  CHECK(forward.state().captures_made() == 1);
  CHECK(forward.state().replays() == 3);
  CHECK(occurrences(forward.state().explain(), "host: ModuleList's 3 modules unchanged") == 1);
}

TEST_CASE("compile: a step looping over a module's children() recompiles when a child is added") {
  NoGradGuard no_grad;
  manual_seed(4105);
  auto model = nn::Sequential(nn::Linear(3, 3), nn::Linear(3, 3));
  const auto run = [&](const Tensor& x) {
    Tensor h = x;
    for (const auto& child : model->children()) h = child->as<nn::Linear>()->forward(h);
    return h;
  };
  auto forward = ember::compile(run, {.fullgraph = true});
  const Tensor x = input();
  for (int call = 0; call < 3; ++call) forward(x);
  model->push_back(nn::Linear(3, 3));
  CHECK(graph_test::max_relative_error(forward(x), run(x)) <= 1e-5);
  REQUIRE(forward.state().recompile_reasons().size() == 1);
  CHECK(forward.state().recompile_reasons()[0] ==
        "the graph was captured with Sequential's 2 modules unchanged, which no longer holds");
}

}  // namespace test_compile_container_changes
