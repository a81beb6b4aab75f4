// The loss modules (nn::CrossEntropyLoss, ...) and nn::Softmax / nn::LogSoftmax: each gives exactly
// what its function gives with the same options, holds its tensor options as buffers that move
// with to() and are saved in state_dict(), prints as PyTorch prints it, and reports errors at the
// caller's line.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "error_of.h"
#include "finite_difference.h"
#include "runtime/ember.h"

namespace test_nn_loss_modules {

using namespace ember;
using ember::testing::error_of;
using ember::testing::names_line;
using ember::testing::small_tensor;
using ember::testing::values_of;

namespace {

// The classes of logits()' 5 rows.
Tensor classes() { return from_vector<int64_t>({0, 2, 1, 2, 0}); }

Tensor logits(DType dtype = kFloat32) { return small_tensor({5, 3}, 11, dtype); }
Tensor class_weight(DType dtype = kFloat32) { return from_vector<double>({0.5, 2.0, 1.5}, {3}, {.dtype = dtype}); }
// Values strictly inside (0, 1), for binary_cross_entropy.
Tensor probabilities(uint32_t seed) { return sigmoid(small_tensor({4, 3}, seed, kFloat32)); }

bool same_values(const Tensor& actual, const Tensor& expected) {
  return actual.sizes() == expected.sizes() && actual.dtype() == expected.dtype() &&
         values_of(actual) == values_of(expected);
}

}  // namespace

TEST_CASE("loss modules give exactly their functions' results with the same options") {
  const Tensor x = logits();
  const Tensor w = class_weight();
  const CrossEntropyOptions smoothing{.reduction = Reduction::Sum, .ignore_index = 1, .label_smoothing = 0.1,
                                      .weight = w};
  CHECK(same_values(nn::CrossEntropyLoss()(x, classes()), cross_entropy(x, classes())));
  CHECK(same_values(nn::CrossEntropyLoss(smoothing)(x, classes()), cross_entropy(x, classes(), smoothing)));

  const Tensor log_probs = log_softmax(x, 1);
  CHECK(same_values(nn::NLLLoss()(log_probs, classes()), nll_loss(log_probs, classes())));
  CHECK(same_values(nn::NLLLoss({.weight = w, .ignore_index = 0, .reduction = Reduction::None})(log_probs, classes()),
                    nll_loss(log_probs, classes(), w, Reduction::None, 0)));

  const Tensor a = small_tensor({4, 3}, 21, kFloat32);
  const Tensor b = small_tensor({4, 3}, 22, kFloat32);
  CHECK(same_values(nn::MSELoss()(a, b), mse_loss(a, b)));
  CHECK(same_values(nn::MSELoss({.reduction = Reduction::Sum})(a, b), mse_loss(a, b, Reduction::Sum)));
  CHECK(same_values(nn::L1Loss({.reduction = Reduction::None})(a, b), l1_loss(a, b, Reduction::None)));
  CHECK(same_values(nn::SmoothL1Loss({.beta = 0.5})(a, b), smooth_l1_loss(a, b, Reduction::Mean, 0.5)));
  CHECK(same_values(nn::HuberLoss({.reduction = Reduction::Sum, .delta = 0.3})(a, b),
                    huber_loss(a, b, Reduction::Sum, 0.3)));

  const Tensor p = probabilities(23);
  const Tensor y = probabilities(24);
  const Tensor row_weight = small_tensor({3}, 25, kFloat32).abs();
  CHECK(same_values(nn::BCELoss()(p, y), binary_cross_entropy(p, y)));
  CHECK(same_values(nn::BCELoss({.weight = row_weight, .reduction = Reduction::Sum})(p, y),
                    binary_cross_entropy(p, y, row_weight, Reduction::Sum)));
  const Tensor pos_weight = small_tensor({3}, 26, kFloat32).abs();
  CHECK(same_values(nn::BCEWithLogitsLoss()(a, y), binary_cross_entropy_with_logits(a, y)));
  CHECK(same_values(
      nn::BCEWithLogitsLoss({.weight = row_weight, .reduction = Reduction::None, .pos_weight = pos_weight})(a, y),
      binary_cross_entropy_with_logits(a, y, row_weight, Reduction::None, pos_weight)));

  const Tensor log_q = log_softmax(a, 1);
  const Tensor log_p = log_softmax(b, 1);
  CHECK(same_values(nn::KLDivLoss()(log_q, exp(log_p)), kl_div(log_q, exp(log_p))));
  CHECK(same_values(nn::KLDivLoss({.reduction = Reduction::BatchMean, .log_target = true})(log_q, log_p),
                    kl_div(log_q, log_p, Reduction::BatchMean, true)));
}

TEST_CASE("loss modules pass gradients as their functions do") {
  const Tensor x = logits().requires_grad_();
  const Tensor y = logits().detach().requires_grad_();
  nn::CrossEntropyLoss({.label_smoothing = 0.2, .weight = class_weight()})(x, classes()).backward();
  cross_entropy(y, classes(), {.label_smoothing = 0.2, .weight = class_weight()}).backward();
  CHECK(same_values(x.grad(), y.grad()));
}

TEST_CASE("a loss's weight and pos_weight that require grad receive the loss's gradient, as in PyTorch") {
  // PyTorch's buffer is the caller's tensor, so a learned class weight gets its gradient; a
  // detached copy would drop it silently.
  const Tensor x = logits();
  const Tensor module_weight = class_weight().requires_grad_();
  const Tensor function_weight = class_weight().requires_grad_();
  nn::CrossEntropyLoss criterion({.label_smoothing = 0.2, .weight = module_weight});
  criterion(x, classes()).backward();
  cross_entropy(x, classes(), {.label_smoothing = 0.2, .weight = function_weight}).backward();
  REQUIRE(module_weight.grad().defined());
  CHECK(same_values(module_weight.grad(), function_weight.grad()));

  const Tensor a = small_tensor({4, 3}, 43, kFloat32);
  const Tensor y = probabilities(44);
  const Tensor module_pos = full({3}, 2.0).requires_grad_();
  const Tensor function_pos = full({3}, 2.0).requires_grad_();
  nn::BCEWithLogitsLoss({.pos_weight = module_pos})(a, y).backward();
  binary_cross_entropy_with_logits(a, y, {}, Reduction::Mean, function_pos).backward();
  REQUIRE(module_pos.grad().defined());
  CHECK(same_values(module_pos.grad(), function_pos.grad()));
}

TEST_CASE("nn::Softmax and nn::LogSoftmax are softmax and log_softmax along their dim") {
  const Tensor x = small_tensor({2, 3, 4}, 31, kFloat32);
  CHECK(same_values(nn::Softmax(1)(x), softmax(x, 1)));
  CHECK(same_values(nn::Softmax(nn::SoftmaxOptions{.dim = -1})(x), softmax(x, -1)));
  CHECK(same_values(nn::LogSoftmax(0)(x), log_softmax(x, 0)));
  CHECK(same_values(nn::LogSoftmax(nn::LogSoftmaxOptions{.dim = 2})(x), log_softmax(x, 2)));
  CHECK(nn::Softmax(1)->options().dim == 1);
  CHECK(nn::LogSoftmax(-1)->options().dim == -1);
  // In a Sequential, as a classifier's last layer.
  nn::Sequential head(nn::Linear(4, 3), nn::LogSoftmax(1));
  CHECK(head->forward(small_tensor({2, 4}, 32, kFloat32)).sizes() == Dims{2, 3});
}

TEST_CASE("loss modules and softmax modules print as PyTorch prints them") {
  CHECK(nn::CrossEntropyLoss()->str() == "CrossEntropyLoss()");
  CHECK(nn::CrossEntropyLoss({.weight = class_weight()})->str() == "CrossEntropyLoss()");
  CHECK(nn::NLLLoss()->str() == "NLLLoss()");
  CHECK(nn::MSELoss()->str() == "MSELoss()");
  CHECK(nn::L1Loss()->str() == "L1Loss()");
  CHECK(nn::SmoothL1Loss({.beta = 0.5})->str() == "SmoothL1Loss()");
  CHECK(nn::HuberLoss()->str() == "HuberLoss()");
  CHECK(nn::BCELoss()->str() == "BCELoss()");
  CHECK(nn::BCEWithLogitsLoss()->str() == "BCEWithLogitsLoss()");
  CHECK(nn::KLDivLoss()->str() == "KLDivLoss()");
  CHECK(nn::Softmax(1)->str() == "Softmax(dim=1)");
  CHECK(nn::LogSoftmax(-1)->str() == "LogSoftmax(dim=-1)");
}

TEST_CASE("a loss's class weight and pos_weight are buffers: listed, saved, loaded and moved by to()") {
  const Tensor w = class_weight();
  nn::CrossEntropyLoss weighted({.weight = w});
  CHECK(weighted->named_buffers().keys() == std::vector<std::string>{"weight"});
  CHECK(weighted->state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(weighted->parameters().empty());
  CHECK(weighted->weight.is_same(weighted->options().weight));
  CHECK(nn::CrossEntropyLoss()->buffers().empty());
  CHECK(nn::MSELoss()->state_dict().keys().empty());
  CHECK(nn::NLLLoss({.weight = w})->state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(nn::BCELoss({.weight = w})->state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(nn::BCEWithLogitsLoss({.weight = w, .pos_weight = w})->state_dict().keys() ==
        std::vector<std::string>{"weight", "pos_weight"});
  CHECK(nn::BCEWithLogitsLoss({.pos_weight = w})->named_buffers().keys() == std::vector<std::string>{"pos_weight"});

  // to(dtype) converts the module's buffer, and the forward uses it; the caller's tensor stays
  // as it was (PyTorch's module.to() replaces the module's tensor, not the caller's).
  weighted->to(kFloat64);
  CHECK(weighted->weight.dtype() == kFloat64);
  CHECK(weighted->options().weight.dtype() == kFloat64);
  CHECK(w.dtype() == kFloat32);
  const Tensor x = logits(kFloat64);
  CHECK(same_values(weighted(x, classes()), cross_entropy(x, classes(), {.weight = class_weight(kFloat64)})));

  // load_state_dict writes the buffer the forward reads.
  nn::BCEWithLogitsLoss target({.weight = ones({3}), .pos_weight = ones({3})});
  nn::BCEWithLogitsLoss source({.weight = class_weight(), .pos_weight = full({3}, 3.0)});
  target->load_state_dict(source->state_dict());
  const Tensor a = small_tensor({4, 3}, 41, kFloat32);
  const Tensor y = probabilities(42);
  CHECK(same_values(target(a, y), binary_cross_entropy_with_logits(a, y, class_weight(), Reduction::Mean,
                                                                   full({3}, 3.0))));
}

TEST_CASE("a loss registered in a model is part of the model's state and moves with it") {
  struct ClassifierImpl : nn::Module {
    nn::Linear head{nullptr};
    nn::CrossEntropyLoss criterion{nullptr};
    ClassifierImpl() : Module("Classifier") {
      head = register_module("head", nn::Linear(4, 3));
      criterion = register_module("criterion", nn::CrossEntropyLoss({.weight = class_weight()}));
    }
  };
  ClassifierImpl model;
  CHECK(model.state_dict().keys() ==
        std::vector<std::string>{"head.weight", "head.bias", "criterion.weight"});
  CHECK(model.named_buffers().keys() == std::vector<std::string>{"criterion.weight"});
  model.to(kFloat64);
  CHECK(model.criterion->weight.dtype() == kFloat64);
  const Tensor loss = model.criterion(model.head(small_tensor({5, 4}, 51)), classes());
  CHECK(loss.dtype() == kFloat64);
  CHECK(model.str() ==
        "Classifier(\n  (head): Linear(in_features=4, out_features=3, bias=True)\n  (criterion): CrossEntropyLoss()\n)");
}

TEST_CASE("loss and softmax modules' errors are their functions', at the caller's line") {
  const Tensor a = small_tensor({4, 3}, 61, kFloat32);
  int line = __LINE__ + 1;
  std::string message = error_of([&] { nn::MSELoss()(a, small_tensor({4, 2}, 62, kFloat32)); });
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::CrossEntropyLoss({.weight = ones({4})})(logits(), classes()); });
  CHECK(message.find("cross_entropy") != std::string::npos);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::SmoothL1Loss({.beta = -1.0})(a, a); });
  CHECK(message.find("smooth_l1_loss") != std::string::npos);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::L1Loss({.reduction = Reduction::BatchMean})(a, a); });
  CHECK(message.find("BatchMean is kl_div's only") != std::string::npos);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::Softmax(2)(a); });
  CHECK(message.find("softmax") != std::string::npos);
  CHECK(names_line(message, line));
  line = __LINE__ + 1;
  message = error_of([&] { nn::LogSoftmax(-3)(a); });
  CHECK(names_line(message, line));
}

}  // namespace test_nn_loss_modules
