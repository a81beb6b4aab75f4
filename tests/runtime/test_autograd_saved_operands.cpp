// A product saves each operand only for the other's gradient (OpDef::saved_for_other_inputs), as
// PyTorch's mm saves mat2 only when self requires grad: an operand no gradient reads may be
// updated in place before backward(), while one a gradient reads still gives the version error.
#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "runtime/ember.h"

namespace test_autograd_saved_operands {

using namespace ember;

namespace {

struct Product {
  const char* name;
  Dims a_sizes;
  Dims b_sizes;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
};

}  // namespace

TEST_CASE("autograd: a product's operand updated in place after the call, read by no gradient, is fine") {
  const Product products[] = {
      {"mm", {2, 4}, {4, 3}, [](const Tensor& a, const Tensor& b) { return mm(a, b); }},
      {"bmm", {2, 2, 4}, {2, 4, 3}, [](const Tensor& a, const Tensor& b) { return bmm(a, b); }},
      {"matmul", {5, 2, 4}, {4, 3}, [](const Tensor& a, const Tensor& b) { return matmul(a, b); }},
      {"matmul", {4}, {4, 3}, [](const Tensor& a, const Tensor& b) { return matmul(a, b); }},
      {"matmul", {2, 4}, {4}, [](const Tensor& a, const Tensor& b) { return matmul(a, b); }},
  };
  for (const Product& product : products) {
    INFO(product.name, " ", product.a_sizes.str(), " @ ", product.b_sizes.str());
    manual_seed(9);
    const Tensor a = randn(product.a_sizes, {.dtype = kFloat64});
    const Tensor b = randn(product.b_sizes, {.dtype = kFloat64});
    // Only b requires grad: its gradient reads a, never b, so b may change before backward().
    Tensor weight = b.clone().requires_grad_();
    const Tensor out = product.run(a, weight);
    {
      const NoGradGuard update;
      weight.mul_(2.0);
    }
    const Tensor seed = randn(out.sizes(), {.dtype = kFloat64});
    out.backward(seed);
    REQUIRE(weight.grad().defined());
    // The gradient of b for the product's value at the call: the same product with a fresh b.
    const Tensor reference = b.clone().requires_grad_();
    product.run(a, reference).backward(seed);
    CHECK(weight.grad().to_vector<double>() == reference.grad().to_vector<double>());

    // The other way round the operand is read: the update is still refused, naming the op.
    const Tensor input = a.clone().requires_grad_();
    Tensor matrix = b.clone();
    const Tensor out_a = product.run(input, matrix);
    matrix.mul_(2.0);
    std::string message;
    try {
      out_a.backward(seed);
    } catch (const Error& error) {
      message = error.what();
    }
    CHECK(message.find(std::string("input 1 of ") + product.name) != std::string::npos);
    CHECK(message.find("modified by an in-place operation") != std::string::npos);
  }
}

}  // namespace test_autograd_saved_operands
