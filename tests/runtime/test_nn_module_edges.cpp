// nn::ModuleHolder: model(args...) for any forward signature, as libtorch's holder.
#include <doctest/doctest.h>

#include "runtime/ember.h"

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
