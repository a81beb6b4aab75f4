// Autograd through views whose base changes in place afterwards (the view must follow the base's
// new history, as in PyTorch), through in-place updates of views (the base must follow the view's
// update: CopySlices), values overwritten in place (a gradient of zeros), and the updates ember
// refuses rather than differentiate wrongly. Gradients are checked against hand-derived values
// and central differences.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/ember.h"
#include "runtime/finite_difference.h"

namespace test_autograd_views {

using namespace ember;

namespace {

const TensorOptions kDouble{.dtype = kFloat64, .device = kCPU};

std::vector<double> grad_of(const Tensor& leaf) {
  REQUIRE(leaf.grad().defined());
  return testing::values_of(leaf.grad());
}

}  // namespace

TEST_CASE("a view taken before its base changes in place carries the update's gradient") {
  // t = 1.5 a; v = t^T (or a slice, or a view of a view); t += 2 mean(b); loss = sum(v^T)
  // d loss / d b_i = 2 * (elements of the view) / 3, d loss / d a = 1.5 on the viewed elements.
  struct Case {
    const char* name;
    Tensor (*make_view)(const Tensor&);
    int viewed;  // elements of t the view sees
  };
  const Case cases[] = {
      {"transpose", [](const Tensor& t) { return t.t(); }, 6},
      {"slice", [](const Tensor& t) { return t.slice(0, 1, 2); }, 3},
      {"view of a view", [](const Tensor& t) { return t.t().slice(0, 0, 2); }, 4},
      {"reshape", [](const Tensor& t) { return t.reshape({6}); }, 6},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor a = ones({2, 3}, kDouble).requires_grad_();
    Tensor b = ones({3}, kDouble).requires_grad_();
    Tensor t = mul(a, 1.5);
    const Tensor view = c.make_view(t);
    t.add_(mean(b), 2.0);
    CHECK(testing::values_of(view)[0] == 3.5);  // the values were always shared
    sum(view).backward();
    for (double g : grad_of(b)) CHECK(g == doctest::Approx(2.0 * c.viewed / 3.0));
    double total = 0;
    for (double g : grad_of(a)) total += g;
    CHECK(total == doctest::Approx(1.5 * c.viewed));
  }
}

TEST_CASE("a view of a tensor that gains a history in place then requires grad") {
  // PyTorch: t = zeros(3); v = t[:2]; t.add_(b) makes v require grad through b.
  Tensor b = from_vector<double>({1, 2, 3}, {3}, kDouble).requires_grad_();
  Tensor t = zeros({3}, kDouble);
  const Tensor view = t.slice(0, 0, 2);
  CHECK(!view.requires_grad());
  t.add_(b);
  REQUIRE(view.requires_grad());
  sum(mul(view, view)).backward();  // d/db = 2 b on the first two elements, 0 on the third
  CHECK(grad_of(b) == std::vector<double>{2, 4, 0});
}

TEST_CASE("the history is remade once per update, and a view made without grad mode is left alone") {
  Tensor a = ones({2, 2}, kDouble).requires_grad_();
  Tensor t = mul(a, 1.0);
  const Tensor view = t.t();
  const auto first = view.grad_fn();
  CHECK(view.grad_fn() == first);  // no update, no remake
  t.mul_(3.0);
  const auto remade = view.grad_fn();
  CHECK(remade != first);
  CHECK(view.grad_fn() == remade);
  Tensor untracked;
  {
    NoGradGuard no_grad;
    untracked = t.t();
  }
  Tensor detached = t.t();
  // Like PyTorch: a view cannot leave its base's history in place (it would be remade from it).
  CHECK_THROWS_WITH_AS(detached.detach_(), doctest::Contains("detach_: cannot detach a view (shape [2, 2]) in place"),
                       Error);
  CHECK(detached.requires_grad());
  t.mul_(2.0);
  CHECK(!untracked.requires_grad());  // like PyTorch: made without grad mode, it stays outside autograd
  sum(view).backward();
  for (double g : grad_of(a)) CHECK(g == doctest::Approx(6.0));
}

TEST_CASE("an optimizer's in-place update of a leaf does not disturb gradients through its views") {
  Tensor w = from_vector<double>({1, 2, 3, 4}, {2, 2}, kDouble).requires_grad_();
  const Tensor w_t = w.t();
  {
    NoGradGuard no_grad;
    w.add_(ones({2, 2}, kDouble), -0.5);  // what SGD does
  }
  sum(mul(w_t, w_t)).backward();  // d/dw = 2 w (after the update)
  CHECK(grad_of(w) == std::vector<double>{1, 3, 5, 7});
}

TEST_CASE("gradients through views of an updated base equal central differences") {
  const std::vector<Tensor> inputs{testing::leaf({3, 4}, 1), testing::leaf({4}, 2), testing::leaf({3, 4}, 3)};
  testing::gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        Tensor t = mul(tanh(in[0]), 2.0);  // not tanh's own output, which its backward saves
        const Tensor columns = t.t();
        const Tensor row = t.slice(0, 1, 2);
        t.mul_(in[2]);      // a pointwise update with a second input
        t.add_(in[1]);      // and a broadcast one
        return add(mul(columns.t(), sigmoid(row)), exp(row));
      },
      inputs);
}

TEST_CASE("an in-place update through a view reaches the base's gradient (CopySlices)") {
  // t = 0; t[0] += b: t now depends on b, and sum(t * t) = sum(b * b) has gradient 2 b.
  Tensor b = from_vector<double>({1, 2, 3}, {3}, kDouble).requires_grad_();
  Tensor t = zeros({2, 3}, kDouble);
  Tensor row = t.slice(0, 0, 1);
  row.add_(b);
  REQUIRE(t.requires_grad());
  sum(mul(t, t)).backward();
  CHECK(grad_of(b) == std::vector<double>{2, 4, 6});
}

TEST_CASE("in-place updates through views of views equal central differences") {
  const std::vector<Tensor> inputs{testing::leaf({3, 4}, 4), testing::leaf({2, 3}, 5), testing::leaf({3}, 6)};
  testing::gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        Tensor t = mul(in[0], 2.0);
        const Tensor columns = t.t();
        columns.slice(0, 1, 3).mul_(in[1]);  // through a view of a view: the base's old values scale
        t.select(1, 0).add_(in[2]);          // and a second update through another view
        return add(mul(t, sigmoid(columns.t())), tanh(t));
      },
      inputs);
}

TEST_CASE("a tensor built piecewise by copy_ and fill_ through views has the gradient of its pieces") {
  const std::vector<Tensor> inputs{testing::leaf({2, 3}, 7), testing::leaf({2, 3}, 8)};
  testing::gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        Tensor out = zeros({4, 3}, kDouble);
        out.slice(0, 0, 2).copy_(in[0]);
        out.slice(0, 2, 4).copy_(mul(in[1], 2.0));
        out.select(1, 1).fill_(0.5);  // overwrites a column of both pieces: no gradient there
        return mul(out, exp(out));
      },
      inputs);
}

TEST_CASE("copy_ of a tensor that requires grad into a view of an integer tensor gives the base no history") {
  // As a whole-tensor copy_ into an integer tensor does: no gradient reaches integers, so a
  // float tensor made from the base later must not lead back through the truncation.
  const Tensor source = from_vector<float>({1.5f, 2.5f}, Dims{2}, {.requires_grad = true});
  for (DType dtype : {kInt64, kInt32, kBool}) {
    INFO(dtype);
    Tensor whole = zeros({2}, {.dtype = dtype});
    whole.copy_(source);
    Tensor base = zeros({4}, {.dtype = dtype});
    base.slice(0, 0, 2).copy_(source);
    CHECK_FALSE(whole.requires_grad());
    CHECK_FALSE(base.requires_grad());
    CHECK(base.grad_fn() == nullptr);
    CHECK_THROWS_WITH_AS(base.to(kFloat32).sum().backward(), doctest::Contains("does not require grad"), Error);
  }
}

TEST_CASE("a value overwritten by fill_, zero_ or copy_ gets a gradient of zeros, not none, as in PyTorch") {
  // Its leaf then has a .grad (of zeros), which an optimizer steps with, rather than none.
  for (const char* how : {"fill_", "zero_", "copy_"}) {
    INFO(how);
    const Tensor s = from_vector(std::vector<double>{1, 2}, {2}, kDouble).requires_grad_();
    Tensor y = mul(s, s);
    if (std::string(how) == "fill_") y.fill_(3.0);
    if (std::string(how) == "zero_") y.zero_();
    if (std::string(how) == "copy_") y.copy_(ones({2}, kDouble));
    sum(y).backward();
    CHECK(grad_of(s) == std::vector<double>{0.0, 0.0});
  }
  // copy_ still sends the gradient on to its source.
  const Tensor source = from_vector(std::vector<double>{1, 2}, {2}, kDouble).requires_grad_();
  const Tensor old = from_vector(std::vector<double>{5, 6}, {2}, kDouble).requires_grad_();
  Tensor target = mul(old, 1.0);
  target.copy_(mul(source, 3.0));
  sum(target).backward();
  CHECK(grad_of(source) == std::vector<double>{3.0, 3.0});
  CHECK(grad_of(old) == std::vector<double>{0.0, 0.0});
}

TEST_CASE("in-place updates through views autograd cannot follow are refused, and change nothing") {
  Tensor b = ones({3}, kDouble).requires_grad_();
  Tensor t = zeros({2, 3}, kDouble);
  Tensor untracked;
  {
    NoGradGuard no_grad;
    untracked = t.slice(0, 0, 1);
  }
  std::string message;
  const int line = __LINE__ + 2;
  try {
    untracked.add_(b);
  } catch (const Error& error) {
    message = error.what();
  }
  CHECK(message.find("add_: in-place update of a view (shape [1, 3]) while recording gradients: it was made "
                     "without grad mode") != std::string::npos);
  CHECK(message.find("test_autograd_views.cpp:" + std::to_string(line)) != std::string::npos);
  CHECK(testing::values_of(t) == std::vector<double>(6, 0.0));
  CHECK(!t.requires_grad());

  Tensor w = ones({2, 3}, kDouble).requires_grad_();
  CHECK_THROWS_WITH_AS(w.slice(0, 0, 1).add_(b), doctest::Contains("it views a leaf tensor that requires grad"),
                       Error);
  CHECK(testing::values_of(w) == std::vector<double>(6, 1.0));
  // Without gradients to record (no_grad, or no input that requires grad) it is an ordinary write.
  untracked.add_(ones({3}, kDouble));
  {
    NoGradGuard no_grad;
    untracked.add_(b);
    w.slice(0, 1, 2).add_(b);
  }
  CHECK(testing::values_of(t) == std::vector<double>{2, 2, 2, 0, 0, 0});
  CHECK(testing::values_of(w) == std::vector<double>{1, 1, 1, 2, 2, 2});
}

TEST_CASE("an in-place update through a view of a trainable leaf that is itself a view is refused") {
  // A parameter that is a view of a flat buffer (flat.view(...).requires_grad_()): writing through
  // a view of it while recording would change a leaf that requires grad behind autograd's back
  // (PyTorch: "a view of a leaf Variable that requires grad is being used in an in-place operation").
  Tensor flat = zeros({4}, kDouble);
  Tensor parameter = flat.view({2, 2});
  parameter.requires_grad_();
  Tensor y = full({2}, 5.0, kDouble).requires_grad_();
  CHECK_THROWS_WITH_AS(parameter.select(0, 0).add_(y), doctest::Contains("it views a leaf tensor that requires grad"),
                       Error);
  CHECK_THROWS_WITH_AS(parameter.slice(0, 0, 2).mul_(2.0),
                       doctest::Contains("it views a leaf tensor that requires grad"), Error);
  CHECK(testing::values_of(flat) == std::vector<double>(4, 0.0));
  {
    NoGradGuard no_grad;  // an optimizer-style update stays allowed
    parameter.select(0, 1).add_(y);
  }
  CHECK(testing::values_of(flat) == std::vector<double>{0, 0, 5, 5});
}

TEST_CASE("a view whose base was detached in place sends no gradient into the base's old graph") {
  Tensor x = ones({2, 2}, kDouble).requires_grad_();
  Tensor other = ones({2, 2}, kDouble).requires_grad_();
  Tensor y = mul(x, 2.0);
  const Tensor view = y.t();
  y.detach_();
  y.add_(ones({2, 2}, kDouble));  // the view is stale: its history is remade from the detached base
  CHECK(!view.requires_grad());
  sum(add(mul(view, 3.0), other)).backward();
  CHECK_FALSE(x.grad().defined());  // was 6 per element, through the graph y was detached from
  for (double g : grad_of(other)) CHECK(g == 1.0);
}

}  // namespace test_autograd_views
