// nn::Module and ModuleHolder edges: model(args...) for any forward signature, printing with both
// extra_repr and children, and load_state_dict refusing what copy_ would refuse before copying.
#include <doctest/doctest.h>

#include "runtime/ember.h"

namespace test_nn_module_edges {

using namespace ember;

namespace {

// User modules with libtorch's usual forward signatures, none taking a location.
struct ByReferenceImpl : nn::Module {
  ByReferenceImpl() : Module("ByReference") {}
  Tensor forward(const Tensor& x) { return mul(x, 2.0); }
};
struct ByReference : nn::ModuleHolder<ByReferenceImpl> {
  ByReference() : ModuleHolder(std::make_shared<ByReferenceImpl>()) {}
};
struct ByValueImpl : nn::Module {
  ByValueImpl() : Module("ByValue") {}
  Tensor forward(Tensor x) { return add(x, 1.0); }
};
struct ByValue : nn::ModuleHolder<ByValueImpl> {
  ByValue() : ModuleHolder(std::make_shared<ByValueImpl>()) {}
};
struct TwoInputsImpl : nn::Module {
  TwoInputsImpl() : Module("TwoInputs") {}
  std::pair<Tensor, double> forward(const Tensor& a, const Tensor& b) { return {sub(a, b), 0.5}; }
};
struct TwoInputs : nn::ModuleHolder<TwoInputsImpl> {
  TwoInputs() : ModuleHolder(std::make_shared<TwoInputsImpl>()) {}
};

}  // namespace

TEST_CASE("model(args...) forwards any arguments, as libtorch's ModuleHolder does") {
  const Tensor x = from_vector<float>({1.5f, -2.0f});
  const Tensor y = from_vector<float>({0.25f, 4.0f});
  ByReference twice;
  ByValue plus_one;
  TwoInputs difference;
  CHECK(twice(x).to_vector<float>() == std::vector<float>{3.0f, -4.0f});
  CHECK(twice(from_vector<float>({7.0f})).to_vector<float>() == std::vector<float>{14.0f});  // an rvalue
  const ByReference& constant = twice;
  CHECK(constant(x).to_vector<float>() == std::vector<float>{3.0f, -4.0f});
  CHECK(plus_one(x).to_vector<float>() == std::vector<float>{2.5f, -1.0f});
  const auto [result, extra] = difference(x, y);
  CHECK(result.to_vector<float>() == std::vector<float>{1.25f, -6.0f});
  CHECK(extra == 0.5);
  // Built-in modules still take the caller's location (test_nn_call_sites.cpp checks the line).
  nn::Linear linear(2, 1);
  nn::init::ones_(linear->weight);
  nn::init::zeros_(linear->bias);
  CHECK(linear(x).to_vector<float>() == std::vector<float>{-0.5f});
}


TEST_CASE("a module with extra_repr and children prints like PyTorch, multi-line extra_repr indented") {
  struct BlockImpl : nn::Module {
    std::string extra = "scale=2";
    BlockImpl() : Module("Block") { register_module("fc", nn::Linear(2, 3)); }
    std::string extra_repr() const override { return extra; }
  };
  struct OuterImpl : nn::Module {
    explicit OuterImpl(std::shared_ptr<BlockImpl> block) : Module("Outer") {
      register_module("block", std::move(block));
    }
    std::string extra_repr() const override { return "first=1\nsecond=2"; }
  };
  auto block = std::make_shared<BlockImpl>();
  // torch: "Block(\n  scale=2\n  (fc): Linear(in_features=2, out_features=3, bias=True)\n)"
  CHECK(block->str() ==
        "Block(\n"
        "  scale=2\n"
        "  (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        ")");
  auto outer = std::make_shared<OuterImpl>(block);
  block->extra = "a=1\nb=2";
  CHECK(outer->str() ==
        "Outer(\n"
        "  first=1\n"
        "  second=2\n"
        "  (block): Block(\n"
        "    a=1\n"
        "    b=2\n"
        "    (fc): Linear(in_features=2, out_features=3, bias=True)\n"
        "  )\n"
        ")");
  // A multi-line extra_repr without children is split over lines too; one line stays inline.
  struct LinesImpl : nn::Module {
    LinesImpl() : Module("Lines") {}
    std::string extra_repr() const override { return "x=1\ny=2"; }
  };
  CHECK(LinesImpl().str() == "Lines(\n  x=1\n  y=2\n)");
  CHECK(nn::Linear(1, 1)->str() == "Linear(in_features=1, out_features=1, bias=True)");
}

TEST_CASE("load_state_dict refuses what copy_ would refuse before it copies anything") {
  struct TwoImpl : nn::Module {
    Tensor a, b;
    explicit TwoImpl(Tensor b_value) : Module("Two") {
      a = register_parameter("a", zeros({2, 2}));
      b = register_parameter("b", std::move(b_value), false);
    }
  };
  // A transposed alias of its own target passes the shape check; copy_ would refuse it.
  TwoImpl two(from_vector<float>({1, 2, 3, 4}, {2, 2}));
  nn::StateDict aliasing;
  aliasing.insert("a", ones({2, 2}));
  aliasing.insert("b", two.b.detach().t());
  CHECK_THROWS_WITH_AS(two.load_state_dict(aliasing),
                       doctest::Contains("Two: load_state_dict: entry 'b' (shape [2, 2], strides [1, 2]) partly "
                                         "overlaps the module's tensor (strides [2, 1]); clone() it first"),
                       Error);
  CHECK(two.a.to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(two.b.to_vector<float>() == std::vector<float>{1, 2, 3, 4});

  // A buffer that is an expanded tensor cannot be written in place.
  TwoImpl expanded(from_vector<float>({5, 6}, {1, 2}).expand({2, 2}));
  nn::StateDict values;
  values.insert("a", ones({2, 2}));
  values.insert("b", full({2, 2}, 7.0));
  CHECK_THROWS_WITH_AS(expanded.load_state_dict(values),
                       doctest::Contains("Two: load_state_dict: the module's 'b' (shape [2, 2], strides [0, 1]) is "
                                         "expanded"),
                       Error);
  CHECK(expanded.a.to_vector<float>() == std::vector<float>(4, 0.0f));

  // The same memory in the same layout (a detached handle) is a well-defined copy onto itself.
  nn::StateDict itself;
  itself.insert("a", full({2, 2}, 3.0));
  itself.insert("b", two.b.detach());
  two.load_state_dict(itself);
  CHECK(two.a.to_vector<float>() == std::vector<float>(4, 3.0f));
  CHECK(two.b.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
}

}  // namespace test_nn_module_edges
