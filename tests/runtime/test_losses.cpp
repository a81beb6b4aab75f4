// softmax / log_softmax and the losses (cross_entropy, nll_loss, mse_loss): float64 loop
// references, values computed once with PyTorch 1.13, fused-vs-unfused equivalence, error
// messages and gradients by finite differences. cross_entropy over many rows and threads, and
// cross_entropy_with_backward, are test_cross_entropy_rows.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>

#include "loss_reference.h"
#include "numeric_check.h"

namespace test_losses {

using namespace ember;
using namespace ember::testing;

namespace {

// The logits of the PyTorch golden values below.
Tensor golden_logits() {
  return from_vector<double>({0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 0.25, -0.75, -2.0, 1.0,
                              -0.25, 1.75, 0.5, -1.5, 0.3, 2.5, -0.5, 1.25, 0.1, -1.0},
                             {4, 5}, {.dtype = kFloat64});
}

}  // namespace

TEST_CASE("softmax and log_softmax match loops along each dim, on transposed inputs too") {
  for (DType dtype : {kFloat32, kFloat64}) {
    const double tolerance = dtype == kFloat32 ? 1e-6 : 1e-13;
    for (const Tensor& x : {random_tensor({4, 7}, 200, dtype), random_tensor({7, 4}, 201, dtype).t()}) {
      for (int dim : {0, 1}) {
        INFO(dtype_name(dtype) << " strides " << x.strides().str() << " dim " << dim);
        check_close(softmax(x, dim), reference_softmax(x, dim, false), tolerance);
        check_close(log_softmax(x, dim), reference_softmax(x, dim, true), tolerance);
        check_close(softmax(x, dim - 2), reference_softmax(x, dim, false), tolerance);
      }
    }
  }
  // Stability: logits of 1000 would overflow exp without the max shift.
  const Tensor large = from_vector<float>({1000, 999, 998});
  check_close(softmax(large, 0), {0.66524096, 0.24472847, 0.09003057}, 1e-6);
  check_close(log_softmax(large, 0), {-0.40760596, -1.40760596, -2.40760596}, 1e-6);
  CHECK(softmax(scalar_tensor(3.0), 0).item() == 1.0);
  CHECK(softmax(random_tensor({3, 1}, 202), 1).to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK(softmax(zeros({0, 3}), 1).sizes() == Dims{0, 3});
  const Tensor three_d = random_tensor({2, 3, 4}, 203);
  const Tensor middle = softmax(three_d, 1);
  check_close(sum(middle, {1}), std::vector<double>(8, 1.0), 1e-14);
  CHECK_THROWS_WITH_AS(softmax(three_d, 3), doctest::Contains("softmax: dim 3 is out of range"), Error);
  CHECK_THROWS_WITH_AS(log_softmax(zeros({2}, {.dtype = kInt64}), 0),
                       doctest::Contains("log_softmax: expected a floating-point input, got int64"), Error);
}

TEST_CASE("gradients of softmax and log_softmax match finite differences") {
  for (int dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    gradcheck([dim](const std::vector<Tensor>& x) { return softmax(x[0], dim); }, {random_tensor({2, 3, 4}, 210)});
    gradcheck([dim](const std::vector<Tensor>& x) { return log_softmax(x[0].transpose(0, 2), dim); },
              {random_tensor({2, 3, 4}, 211)});
  }
}

TEST_CASE("cross_entropy with label smoothing and ignore_index matches PyTorch 1.13") {
  // logits = torch.tensor(<golden_logits>, dtype=torch.float64, requires_grad=True)
  // target = torch.tensor([1, -100, 4, 0])
  // loss = F.cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.2, reduction=r)
  // (loss * w).sum().backward()   # w = [1, 2, -1, 0.5] for 'none', 1 otherwise
  const Tensor target = targets({1, -100, 4, 0});
  struct Golden {
    Reduction reduction;
    std::vector<double> loss, grad;
  };
  const std::vector<Golden> goldens{
      {Reduction::Mean, {2.0723988314694393},
       {0.03228272694832482, -0.272073117320183, 0.19110366546285631, 0.04523884747747592, 0.003447877431525894, 0, 0,
        0, 0, 0, 0.013278377106319022, 0.18330208799375633, 0.043003658109502386, -0.005708950639718536,
        -0.23387517256985926, -0.05125193116695336, -0.0019446375913255967, 0.052204085659839465,
        0.007418223290106304, -0.006425740191666921}},
      {Reduction::Sum, {6.217196494408318},
       {0.09684818084497449, -0.8162193519605492, 0.5733109963885691, 0.13571654243242778, 0.010343632294577694, 0, 0,
        0, 0, 0, 0.03983513131895712, 0.5499062639812693, 0.12901097432850728, -0.017126851919155594,
        -0.7016255177095779, -0.15375579350085986, -0.005833912773976767, 0.15661225697951853,
        0.022254669870318954, -0.01927722057500075}},
      {Reduction::None, {3.4288831366420816, 0.0, 2.0057916293122977, 0.7825217284539379},
       {0.09684818084497449, -0.8162193519605492, 0.5733109963885691, 0.13571654243242778, 0.010343632294577694, 0, 0,
        0, 0, 0, -0.03983513131895712, -0.5499062639812693, -0.12901097432850728, 0.017126851919155594,
        0.7016255177095779, -0.07687789675042993, -0.0029169563869883837, 0.07830612848975926,
        0.011127334935159477, -0.009638610287500375}}};
  for (const Golden& golden : goldens) {
    INFO("reduction " << static_cast<int>(golden.reduction));
    const Tensor logits = golden_logits().requires_grad_();
    const Tensor loss = cross_entropy(logits, target, {.reduction = golden.reduction, .label_smoothing = 0.2});
    check_close(loss, golden.loss, 1e-13);
    const Tensor weights = golden.reduction == Reduction::None
                               ? from_vector<double>({1.0, 2.0, -1.0, 0.5}, {4}, {.dtype = kFloat64})
                               : scalar_tensor(1.0, {.dtype = kFloat64});
    mul(loss, weights).sum().backward();
    check_close(logits.grad(), golden.grad, 1e-13);
  }
  // A real class as ignore_index: F.cross_entropy(logits, [3, 3, 1, 2], ignore_index=3, label_smoothing=0.1)
  const Tensor logits = golden_logits().requires_grad_();
  const Tensor loss = cross_entropy(logits, targets({3, 3, 1, 2}), {.ignore_index = 3, .label_smoothing = 0.1});
  CHECK(loss.item() == doctest::Approx(1.1956566788831178).epsilon(1e-13));
  loss.backward();
  check_close(logits.grad(),
              {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.02991756565947855, -0.1650468680093654, 0.07450548716425362,
               0.0014365740404222015, 0.059187241145211074, 0.33312210324957003, 0.007083043613011613,
               -0.3616938715102408, 0.02112733493515947, 0.0003613897124996237},
              1e-13);
}

TEST_CASE("cross_entropy matches a loop reference on random float32 and transposed logits") {
  const std::vector<int64_t> labels{2, 0, 6, -100, 6, 1};
  for (const Tensor& logits : {random_tensor({6, 7}, 220, kFloat32), random_tensor({7, 6}, 221, kFloat32).t()}) {
    for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
      for (double smoothing : {0.0, 0.3}) {
        const CrossEntropyOptions options{.reduction = reduction, .label_smoothing = smoothing};
        check_close(cross_entropy(logits, targets(labels), options), reference_cross_entropy(logits, labels, options),
                    2e-6);
      }
    }
  }
  // One unbatched sample: logits [C] with a 0-d target.
  const Tensor single = random_tensor({5}, 222);
  const Tensor loss = cross_entropy(single, scalar_tensor(3.0, {.dtype = kInt64}));
  CHECK(loss.sizes() == Dims{});
  check_close(loss, reference_cross_entropy(single.view({1, 5}), {3}, {}), 1e-14);
  // Every target ignored: the mean divides by zero counted targets, like PyTorch.
  CHECK(std::isnan(cross_entropy(random_tensor({2, 3}, 223), targets({-100, -100})).item()));
}

TEST_CASE("the fused cross_entropy equals log_softmax followed by nll_loss, values and gradients") {
  const Tensor target = targets({4, 0, 2, 2, 1});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const Tensor fused_in = random_tensor({5, 6}, 230).requires_grad_();
    const Tensor split_in = fused_in.detach().clone().requires_grad_();
    const Tensor fused = cross_entropy(fused_in, target, {.reduction = reduction, .ignore_index = 2});
    const Tensor split = nll_loss(log_softmax(split_in, 1), target, reduction, 2);
    check_close(fused, values_of(split), 1e-14);
    const Tensor weights = random_tensor(fused.sizes(), 231);
    mul(fused, weights).sum().backward();
    mul(split, weights).sum().backward();
    check_close(fused_in.grad(), values_of(split_in.grad()), 1e-14);
  }
}

TEST_CASE("cross_entropy keeps its digits for logits far from zero, as log_softmax does") {
  // Equal logits give ln 2 at any magnitude; max + log(total) - z_t had none left near 1e17.
  const Tensor target = targets({0});
  for (double magnitude : {1e15, 1e17, 1e30, -1e30}) {
    INFO(magnitude);
    const Tensor equal = from_vector<double>({magnitude, magnitude}, {1, 2});
    CHECK(cross_entropy(equal, target).item() == doctest::Approx(std::log(2.0)).epsilon(1e-12));
  }
  const Tensor wide_float = from_vector<float>({1e20f, 1e20f, 0.0f}, {1, 3});
  CHECK(cross_entropy(wide_float, target).item() == doctest::Approx(std::log(2.0)).epsilon(1e-6));
  // With label smoothing, every class's -log p: gaps from the maximum (0, 2, 4) and 3 log(total).
  const Tensor spread = from_vector<double>({1e15, 1e15 + 2, 1e15 - 2}, {1, 3});
  const double log_total = std::log(std::exp(-2.0) + 1.0 + std::exp(-4.0));
  const double nll = 2.0 + log_total;
  const double smoothed = 0.9 * nll + 0.1 / 3.0 * ((2.0 + 0.0 + 4.0) + 3.0 * log_total);
  CHECK(cross_entropy(spread, target, {.label_smoothing = 0.1}).item() == doctest::Approx(smoothed).epsilon(1e-12));
  CHECK(cross_entropy(spread, target).item() ==
        doctest::Approx(nll_loss(log_softmax(spread, 1), target).item()).epsilon(1e-12));
}

TEST_CASE("gradients of cross_entropy, nll_loss and mse_loss match finite differences") {
  const Tensor labels = targets({1, -100, 3, 0});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    for (double smoothing : {0.0, 0.25}) {
      INFO("reduction " << static_cast<int>(reduction) << " smoothing " << smoothing);
      gradcheck([&](const std::vector<Tensor>& x) {
        return cross_entropy(x[0].t(), labels, {.reduction = reduction, .label_smoothing = smoothing});
      }, {random_tensor({4, 4}, 240)});
    }
    gradcheck([&](const std::vector<Tensor>& x) { return nll_loss(x[0], labels, reduction); }, {random_tensor({4, 5}, 241)});
    gradcheck([&](const std::vector<Tensor>& x) { return mse_loss(x[0], x[1], reduction); },
              {random_tensor({3, 4}, 242), random_tensor({3, 4}, 243)});
    gradcheck([&](const std::vector<Tensor>& x) { return mse_loss(x[0].t(), x[1], reduction); },
              {random_tensor({4, 3}, 244), random_tensor({4}, 245)});
  }
}

TEST_CASE("nll_loss and mse_loss match loop references") {
  const Tensor log_probs = random_tensor({3, 4}, 250);
  const std::vector<double> values = values_of(log_probs);
  check_close(nll_loss(log_probs, targets({3, 0, -100}), Reduction::None), {-values[3], -values[4], 0.0}, 1e-15);
  check_close(nll_loss(log_probs, targets({3, 0, -100})), {-(values[3] + values[4]) / 2}, 1e-15);
  check_close(nll_loss(log_probs, targets({3, 0, 1}), Reduction::Sum), {-(values[3] + values[4] + values[9])}, 1e-15);
  const Tensor input = random_tensor({2, 3}, 251, kFloat32);
  const Tensor target = random_tensor({3}, 252, kFloat32);
  const std::vector<double> a = values_of(input), b = values_of(target);
  std::vector<double> squares;
  double total = 0;
  for (int i = 0; i < 6; ++i) {
    squares.push_back((a[i] - b[i % 3]) * (a[i] - b[i % 3]));
    total += squares.back();
  }
  check_close(mse_loss(input, target, Reduction::None), squares, 1e-6);
  check_close(mse_loss(input, target), {total / 6}, 1e-6);
  check_close(mse_loss(input, target.expand({2, 3}).contiguous(), Reduction::Sum), {total}, 1e-6);
  check_close(mse_loss(input.t(), target.view({3, 1}), Reduction::Sum), values_of(mse_loss(input.t().contiguous(), target.view({3, 1}), Reduction::Sum)), 1e-6);
}

TEST_CASE("losses name the op and the offending values in their errors") {
  const Tensor logits = random_tensor({4, 10}, 260, kFloat32);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, 2, 12, 3})),
                       doctest::Contains("cross_entropy: target 12 at position 2 is out of range for 10 classes"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, -5, 0, 3})),
                       doctest::Contains("cross_entropy: target -5 at position 1 is out of range for 10 classes"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, zeros({4})),
                       doctest::Contains("cross_entropy: target must hold int64 class indices, got float32"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, 2, 3})),
                       doctest::Contains("cross_entropy: scores have batch size 4 but target has shape [3]"), Error);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, 2, 3, 4}), {.label_smoothing = 1.5}),
                       doctest::Contains("cross_entropy: label_smoothing must be in [0, 1], got 1.5"), Error);
  CHECK_THROWS_WITH_AS(nll_loss(logits, targets({0, 10, 0, 0})),
                       doctest::Contains("nll_loss: target 10 at position 1 is out of range for 10 classes"), Error);
  CHECK_THROWS_WITH_AS(mse_loss(zeros({2, 3}), zeros({4})), doctest::Contains("mse_loss: shapes [2, 3] and [4]"), Error);
  CHECK_THROWS_WITH_AS(mse_loss(zeros({2}), zeros({2}, {.dtype = kInt64})),
                       doctest::Contains("mse_loss: expected floating-point input and target of one dtype"), Error);
}

TEST_CASE("mse_loss of float32 and float64 computes in float64, as PyTorch promotes") {
  const Tensor input = from_vector<float>({0.1f, -2.5f, 3.0f}).requires_grad_();
  const Tensor target = from_vector<double>({0.3, 1.0, -0.7}).requires_grad_();
  const Tensor loss = mse_loss(input, target, Reduction::Sum);
  CHECK(loss.dtype() == kFloat64);
  const std::vector<double> wide = {double(0.1f), -2.5, 3.0};
  const std::vector<double> goal = {0.3, 1.0, -0.7};
  double expected = 0.0;
  for (int i = 0; i < 3; ++i) expected += (wide[i] - goal[i]) * (wide[i] - goal[i]);
  CHECK(loss.item() == doctest::Approx(expected).epsilon(1e-15));
  loss.backward();
  CHECK(input.grad().dtype() == kFloat32);
  CHECK(target.grad().dtype() == kFloat64);
  for (int i = 0; i < 3; ++i) {
    CHECK(input.grad().to_vector<float>()[i] == static_cast<float>(2.0 * (wide[i] - goal[i])));
    CHECK(target.grad().to_vector<double>()[i] == doctest::Approx(-2.0 * (wide[i] - goal[i])).epsilon(1e-15));
  }
}

TEST_CASE("a two-layer model's loss and gradients match PyTorch 1.13 (linear, linear, cross_entropy)") {
  // x = [[0.5, -1, 2], [1.5, 0.25, -0.75]]; t = [2, 0]; float32 parameters as below
  // loss = F.cross_entropy(F.linear(F.linear(x, w1, b1), w2, b2), t); loss.backward()
  const Tensor x = from_vector<float>({0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}, {2, 3});
  const Tensor w1 = from_vector<float>({0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, -0.7f, 0.8f, 0.9f, 0.15f, -0.25f, 0.35f},
                                       {4, 3}).requires_grad_();
  const Tensor b1 = from_vector<float>({0.05f, -0.1f, 0.2f, 0.0f}).requires_grad_();
  const Tensor w2 = from_vector<float>({0.3f, -0.1f, 0.2f, 0.4f, -0.5f, 0.6f, 0.1f, -0.2f, 0.25f, 0.35f, -0.45f, 0.55f},
                                       {3, 4}).requires_grad_();
  const Tensor b2 = from_vector<float>({0.1f, 0.0f, -0.1f}).requires_grad_();
  const Tensor loss = cross_entropy(linear(linear(x, w1, b1), w2, b2), targets({2, 0}));
  CHECK(loss.item() == doctest::Approx(1.7653164863586426).epsilon(1e-6));
  loss.backward();
  check_close(w1.grad(), {-0.243805006, -0.0391970277, 0.118917674, 0.275236368, 0.222267359, -0.503976226,
                          -0.128574386, -0.302759707, 0.648589313, -0.154281273, 0.0573576055, -0.0953917503}, 1e-6);
  check_close(b1.grad(), {-0.163421065, 0.0749403685, 0.087410301, -0.153974891}, 1e-6);
  check_close(w2.grad(), {0.370895326, -1.05863905, 0.882060528, 0.428591907, 0.0101088202, 0.158929408, -0.226059347,
                          0.00877321325, -0.381004184, 0.899709761, -0.65600121, -0.437365174}, 1e-6);
  check_close(b2.grad(), {-0.0472308099, 0.214746028, -0.167515233}, 1e-6);
}

// cross_entropy goes through its rows in blocks (kernels/cpu/cross_entropy_kernels.cpp): many
// short rows per block, or one long row per block, in parallel over blocks for big inputs.

}  // namespace test_losses
