// Buffers that are not persistent (register_buffer(..., persistent = false)): PyTorch's caches
// that a module can recompute. They belong to the module (buffers(), to()) but not to its state.
#include <doctest/doctest.h>

#include "runtime/ember.h"

namespace test_nn_buffers {

using namespace ember;

namespace {

// A saved running statistic and a recomputable table next to a parameter.
struct CachedImpl : nn::Module {
  Tensor weight, running, table;
  CachedImpl() : Module("Cached") {
    weight = register_parameter("weight", from_vector<float>({1.0f, 2.0f}));
    running = register_buffer("running", from_vector<float>({3.0f}));
    table = register_buffer("table", from_vector<float>({4.0f, 5.0f, 6.0f}), /*persistent=*/false);
  }
};

// The same module as the child "inner" of another.
struct OuterImpl : nn::Module {
  OuterImpl() : Module("Outer") { register_module("inner", std::make_shared<CachedImpl>()); }
};

}  // namespace

TEST_CASE("a non-persistent buffer is a buffer of the module but not part of its state dict") {
  OuterImpl root;
  CHECK(root.named_buffers().keys() == std::vector<std::string>{"inner.running", "inner.table"});
  CHECK(root.state_dict().keys() == std::vector<std::string>{"inner.weight", "inner.running"});

  root.to(DType::Float64);  // moved and converted with the module, as every buffer
  for (const Tensor& buffer : root.buffers()) CHECK(buffer.dtype() == DType::Float64);
}

TEST_CASE("load_state_dict neither expects nor accepts a non-persistent buffer") {
  CachedImpl source;
  CachedImpl target;
  {
    NoGradGuard no_grad;
    source.weight.fill_(7.0);
    source.running.fill_(8.0);
    source.table.fill_(9.0);
  }
  target.load_state_dict(source.state_dict());  // strict, and no "table" in it
  CHECK(target.weight.to_vector<float>() == std::vector<float>{7.0f, 7.0f});
  CHECK(target.running.to_vector<float>() == std::vector<float>{8.0f});
  CHECK(target.table.to_vector<float>() == std::vector<float>{4.0f, 5.0f, 6.0f});

  // A state dict that carries it (saved from a module where it was persistent) has an unexpected key.
  nn::StateDict with_table = source.state_dict();
  with_table.insert("table", source.table);
  CHECK_THROWS_WITH_AS(target.load_state_dict(with_table), doctest::Contains("Unexpected key(s) in state_dict: \"table\". "), Error);
  CHECK(target.table.to_vector<float>() == std::vector<float>{4.0f, 5.0f, 6.0f});
  target.load_state_dict(with_table, /*strict=*/false);
  CHECK(target.table.to_vector<float>() == std::vector<float>{4.0f, 5.0f, 6.0f});
}

TEST_CASE("the name of a non-persistent buffer is taken like any other") {
  struct Clash : nn::Module {
    Clash() : Module("Clash") {
      register_buffer("cache", zeros({1}), false);
      register_buffer("cache", zeros({1}));
    }
  };
  CHECK_THROWS_WITH_AS(Clash(), doctest::Contains("cannot register buffer 'cache': the name is already taken"), Error);
}

}  // namespace test_nn_buffers
