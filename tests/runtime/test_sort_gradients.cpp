// The gradients of sort, topk and kthvalue (finite differences on inputs without ties, and where
// the gradient lands), and every error they raise, naming the function and the caller's line.
#include <doctest/doctest.h>

#include "composite_loss_checks.h"
#include "error_of.h"

namespace test_sort_gradients {

using namespace ember;
using namespace ember::testing;

TEST_CASE("the gradients of sort, topk and kthvalue match finite differences") {
  for (int64_t dim : {0, 1, -1}) {
    for (bool flag : {false, true}) {
      INFO("dim " << dim << " descending / largest / keepdim " << flag);
      gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(sort(t[0], dim, flag)); },
                {random_tensor({4, 5}, 91)});
      gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(sort(t[0].t(), dim, flag)); },
                {random_tensor({4, 5}, 92)});
      gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(topk(t[0], 2, dim, flag)); },
                {random_tensor({3, 4}, 93)});
      gradcheck([&](const std::vector<Tensor>& t) { return std::get<0>(kthvalue(t[0], 2, dim, flag)); },
                {random_tensor({3, 4}, 94)});
    }
  }
  gradcheck([](const std::vector<Tensor>& t) { return std::get<0>(sort(t[0])); }, {random_tensor({}, 95)});
  gradcheck([](const std::vector<Tensor>& t) { return std::get<0>(topk(t[0], 1)); }, {random_tensor({}, 96)});
}

TEST_CASE("the gradient of topk reaches the selected elements only, and indices carry none") {
  const Tensor x = from_vector<double>({3, -1, 5, 2, 0.5, 4}, {2, 3}).requires_grad_();
  const auto [values, indices] = topk(x, 2, 1);
  CHECK(values.requires_grad());
  CHECK_FALSE(indices.requires_grad());
  mul(values, from_vector<double>({1, 2, 3, 4}, {2, 2})).sum().backward();
  check_exactly(x.grad(), {2, 0, 1, 4, 0, 3});
  // Ties: the gradient follows the index returned, the first of equal values.
  const Tensor tied = from_vector<double>({1, 7, 7, 7}).requires_grad_();
  std::get<0>(sort(tied, 0, true)).select(0, 0).backward();
  check_exactly(tied.grad(), {0, 1, 0, 0});
}

TEST_CASE("sort and topk compose with create_graph: the second derivative through the scatter") {
  const Tensor x = random_tensor({5}, 97).requires_grad_();
  const Tensor y = std::get<0>(topk(x, 3));
  const Tensor cube = mul(mul(y, y), y).sum();
  const Tensor grad = autograd::grad({cube}, {x}, {}, std::nullopt, true)[0];
  grad.sum().backward();
  // d/dx sum over the top 3 of 3 x^2 = 6 x there, 0 elsewhere.
  const std::vector<double> input = values_of(x);
  const std::vector<double> top = values_of(std::get<0>(topk(x.detach(), 3)));
  std::vector<double> expected(input.size(), 0.0);
  for (size_t i = 0; i < input.size(); ++i)
    if (input[i] >= top.back()) expected[i] = 6 * input[i];
  check_close(x.grad(), expected, 1e-12);
}

TEST_CASE("sort, argsort, topk and kthvalue errors name the function, the values and the caller's line") {
  const Tensor x = zeros({2, 4});
  struct Expected {
    int line;  // the line of the call, which the message must name
    std::function<void()> call;
    const char* message;
  };
  const std::vector<Expected> cases = {
      {__LINE__, [&] { sort(x, 2); }, "sort: dim 2 is out of range for a tensor of rank 2"},
      {__LINE__, [&] { x.sort(-3); }, "sort: dim -3 is out of range for a tensor of rank 2"},
      {__LINE__, [&] { argsort(x, 5); }, "argsort: dim 5 is out of range for a tensor of rank 2"},
      {__LINE__, [&] { topk(x, 5, 1); },
       "topk: selected index k out of range: k = 5, but dim 1 has 4 elements (input shape [2, 4])"},
      {__LINE__, [&] { topk(x, -1); }, "topk: selected index k out of range: k = -1, but dim -1 has 4 elements"},
      {__LINE__, [&] { topk(x, 3, 0); }, "topk: selected index k out of range: k = 3, but dim 0 has 2 elements"},
      {__LINE__, [&] { topk(scalar_tensor(1.0), 2); },
       "topk: selected index k out of range: k = 2, but dim -1 has 1 elements"},
      {__LINE__, [&] { topk(x, 1, 2); }, "topk: dim 2 is out of range for a tensor of rank 2"},
      {__LINE__, [&] { topk(ones({3}, {.dtype = kBool}), 1); },
       "topk: bool tensors are not supported (input shape [3]), as PyTorch's topk is not implemented for 'Bool'"},
      {__LINE__, [&] { x.topk(3, 0, false); }, "topk: selected index k out of range: k = 3, but dim 0 has 2"},
      {__LINE__, [&] { kthvalue(x, 0, 1); },
       "kthvalue: selected number k out of range for dimension 1: k = 0, but the dim has 4 elements"},
      {__LINE__, [&] { x.kthvalue(3, 0); },
       "kthvalue: selected number k out of range for dimension 0: k = 3, but the dim has 2 elements"},
      {__LINE__, [&] { kthvalue(zeros({2, 0}), 1); },
       "kthvalue: selected number k out of range for dimension -1: k = 1, but the dim has 0 elements"},
      {__LINE__, [&] { kthvalue(x, 1, -3); }, "kthvalue: dim -3 is out of range for a tensor of rank 2"},
      {__LINE__, [&] { kthvalue(ones({3}, {.dtype = kBool}), 1); }, "kthvalue: bool tensors are not supported"},
  };
  for (const Expected& expected : cases) {
    INFO("expected: " << expected.message);
    const std::string message = error_of(expected.call);
    CHECK(message.find(expected.message) != std::string::npos);
    CHECK(names_line(message, expected.line));
  }
}

}  // namespace test_sort_gradients
