// Optimizers (SGD, Adam, AdamW), their fused step ops, state dicts, and clip_grad_norm_, against
// values computed once with PyTorch 1.13 (snippets in the comments) or float64 loops.
#include <doctest/doctest.h>

#include <cmath>

#include "runtime/ember.h"
#include "runtime/optim/fused_steps.h"

namespace test_optim {

using namespace ember;

namespace {

std::vector<double> values_of(const Tensor& tensor) { return tensor.to(kFloat64).to_vector<double>(); }

void check_close(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
  const std::vector<double> values = values_of(actual);
  REQUIRE(values.size() == expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("element " << i);
    CHECK(values[i] == doctest::Approx(expected[i]).epsilon(tolerance));
  }
}

// The fixed problem of the PyTorch snippet below: w [2, 3], b [3] and three steps of gradients.
//   W0 = [0.5, -1.25, 2.0, 0.75, -0.3, 1.1]; B0 = [0.2, -0.4, 0.9]
//   def grads(step):
//       s = [1.0, 0.6, 0.2][step]
//       gw = [s * v for v in [0.3, -0.8, 1.5, -0.2, 0.9, -1.1]]
//       gb = [s * v + 0.05 * step for v in [-0.5, 0.25, 0.7]]
//       return gw, gb
//   def run(make, dtype):
//       w = torch.tensor(W0, dtype=dtype).reshape(2, 3).requires_grad_()
//       b = torch.tensor(B0, dtype=dtype).requires_grad_()
//       opt = make([w, b])
//       for step in range(3):
//           gw, gb = grads(step)
//           w.grad = torch.tensor(gw, dtype=dtype).reshape(2, 3); b.grad = torch.tensor(gb, dtype=dtype)
//           opt.step()
struct Problem {
  Tensor w;
  Tensor b;

  explicit Problem(DType dtype) {
    w = from_vector<double>({0.5, -1.25, 2.0, 0.75, -0.3, 1.1}, {2, 3}, {.dtype = dtype}).requires_grad_();
    b = from_vector<double>({0.2, -0.4, 0.9}, {3}, {.dtype = dtype}).requires_grad_();
  }
  void set_grads(int step) const {
    const double scale = std::vector<double>{1.0, 0.6, 0.2}[step];
    std::vector<double> gw{0.3, -0.8, 1.5, -0.2, 0.9, -1.1};
    std::vector<double> gb{-0.5, 0.25, 0.7};
    for (double& value : gw) value *= scale;
    for (double& value : gb) value = value * scale + 0.05 * step;
    Tensor(w).set_grad(from_vector<double>(gw, {2, 3}, {.dtype = w.dtype()}));
    Tensor(b).set_grad(from_vector<double>(gb, {3}, {.dtype = b.dtype()}));
  }
  void run(optim::Optimizer& optimizer, int steps = 3) const {
    for (int step = 0; step < steps; ++step) {
      set_grads(step);
      optimizer.step();
    }
  }
};

struct Expected {
  std::vector<double> w;
  std::vector<double> b;
};

template <typename MakeOptimizer>
void check_against_pytorch(MakeOptimizer make, const Expected& float64, const Expected& float32) {
  for (DType dtype : {kFloat64, kFloat32}) {
    CAPTURE(dtype);
    Problem problem(dtype);
    auto optimizer = make(std::vector<Tensor>{problem.w, problem.b});
    problem.run(optimizer);
    // float64 pins the formulas down to rounding; float32 differs from PyTorch by FMA use only.
    const Expected& expected = dtype == kFloat64 ? float64 : float32;
    const double tolerance = dtype == kFloat64 ? 1e-13 : 1e-6;
    check_close(problem.w, expected.w, tolerance);
    check_close(problem.b, expected.b, tolerance);
  }
}

}  // namespace

TEST_CASE("SGD with momentum, Nesterov and weight decay matches PyTorch") {
  // run(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), dtype)
  check_against_pytorch(
      [](std::vector<Tensor> params) {
        return optim::SGD(params, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
      },
      {{0.3330061648005, -0.8053526977062501, 1.169048373432, 0.85262453303575, -0.7865183276523, 1.6887411057451005},
       {0.4374881731782, -0.5651314819314001, 0.47995846089690003}},
      {{0.3330061733722687, -0.8053528070449829, 1.1690484285354614, 0.8526245355606079, -0.7865183353424072,
        1.6887410879135132},
       {0.4374881684780121, -0.5651314854621887, 0.4799584448337555}});
}

TEST_CASE("SGD with dampening matches PyTorch") {
  // run(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.05), dtype)
  check_against_pytorch(
      [](std::vector<Tensor> params) {
        return optim::SGD(params, {.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.05});
      },
      {{0.37919207687499995, -0.9298139809375, 1.40777104, 0.8049488615625, -0.619905409125, 1.473673205125},
       {0.36330010025000004, -0.49502028175000007, 0.6107761123750001}},
      {{0.379192054271698, -0.9298139810562134, 1.407771110534668, 0.8049488663673401, -0.619905412197113,
        1.4736733436584473},
       {0.3633001148700714, -0.4950202703475952, 0.6107760667800903}});
}

TEST_CASE("Adam with L2 weight decay matches PyTorch") {
  // run(lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.9, 0.99), weight_decay=0.1), dtype)
  check_against_pytorch(
      [](std::vector<Tensor> params) {
        return optim::Adam(params, {.lr = 0.01, .betas = {0.9, 0.99}, .weight_decay = 0.1});
      },
      {{0.47144078622852337, -1.2214532713537163, 1.9715153402824472, 0.7736567229628746, -0.3278055509640835,
        1.1274018500357184},
       {0.22617388402156716, -0.42931590771609923, 0.8710004289394131}},
      {{0.47144079208374023, -1.221453309059143, 1.9715152978897095, 0.7736567258834839, -0.3278055489063263,
        1.1274018287658691},
       {0.22617389261722565, -0.4293158948421478, 0.8710004091262817}});
}

TEST_CASE("AdamW with AMSGrad matches PyTorch") {
  // run(lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.9, 0.5), weight_decay=0.1, amsgrad=True), dtype)
  // beta2 = 0.5 makes exp_avg_sq fall at step 2, so the running maximum matters (without amsgrad
  // PyTorch gives w[0] = 0.4670689962372543).
  check_against_pytorch(
      [](std::vector<Tensor> params) {
        return optim::AdamW(params, {.lr = 0.01, .betas = {0.9, 0.5}, .weight_decay = 0.1, .amsgrad = true});
      },
      {{0.47129585816630687, -1.2190481067534007, 1.966800355817787, 0.7749578900533681, -0.32630654174079293,
        1.1239089410050749},
       {0.2245466602546351, -0.4287724404964795, 0.8686259276469885}},
      {{0.47129586338996887, -1.2190481424331665, 1.9668004512786865, 0.7749579548835754, -0.32630655169487,
        1.1239089965820312},
       {0.2245466709136963, -0.4287724196910858, 0.8686259984970093}});
}

TEST_CASE("a large parameter goes through the threaded path and matches a float64 loop") {
  // 3 chunks of kParallelGrain plus a tail; the loop below is SGD's formula written out.
  const int64_t count = 3 * kParallelGrain + 123;
  std::vector<double> initial(count);
  std::vector<double> gradient(count);
  for (int64_t i = 0; i < count; ++i) {
    initial[i] = std::sin(0.001 * i);
    gradient[i] = std::cos(0.003 * i) + 0.1;
  }
  Tensor param = from_vector<double>(initial, {count}, {.dtype = kFloat64}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.05, .momentum = 0.8, .weight_decay = 0.01, .nesterov = true});
  std::vector<double> reference = initial;
  std::vector<double> buffer(count);
  for (int step = 0; step < 2; ++step) {
    param.set_grad(from_vector<double>(gradient, {count}, {.dtype = kFloat64}));
    optimizer.step();
    for (int64_t i = 0; i < count; ++i) {
      const double direction = gradient[i] + 0.01 * reference[i];
      buffer[i] = step == 0 ? direction : 0.8 * buffer[i] + direction;
      reference[i] -= 0.05 * (direction + 0.8 * buffer[i]);
    }
  }
  const std::vector<double> result = param.to_vector<double>();
  double worst = 0.0;
  for (int64_t i = 0; i < count; ++i) worst = std::max(worst, std::abs(result[i] - reference[i]));
  CHECK(worst < 1e-14);
}

TEST_CASE("a non-contiguous parameter is updated in place like a contiguous one") {
  Tensor contiguous = from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f}, {2, 3}).requires_grad_();
  // The same values stored transposed: a leaf with strides [1, 2].
  Tensor storage = from_vector<float>({0.5f, 0.25f, -1.0f, 1.5f, 2.0f, -0.75f}, {3, 2});
  Tensor strided = storage.t().detach().requires_grad_();
  REQUIRE_FALSE(strided.is_contiguous());
  const Tensor grad = from_vector<float>({0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, {2, 3});
  optim::AdamW first({contiguous}, {.lr = 0.1, .amsgrad = true});
  optim::AdamW second({strided}, {.lr = 0.1, .amsgrad = true});
  for (int step = 0; step < 2; ++step) {
    contiguous.set_grad(grad.clone());
    strided.set_grad(grad.clone());
    first.step();
    second.step();
  }
  // Equal up to rounding: the contiguous loop is vectorized and the compiler may contract a*b+c into
  // an FMA differently there than in the strided per-element path.
  const std::vector<double> expected = values_of(contiguous);
  check_close(strided, expected, 1e-6);
  CHECK(expected != std::vector<double>{0.5, -1.0, 2.0, 0.25, 1.5, -0.75});
}

TEST_CASE("bfloat16 parameters are updated in float32 and rounded once") {
  Tensor param = from_vector<float>({1.0f, -2.0f, 0.5f}, {3}, {.dtype = kBFloat16}).requires_grad_();
  param.set_grad(from_vector<float>({0.5f, 0.25f, -1.0f}, {3}, {.dtype = kBFloat16}));
  optim::SGD optimizer({param}, {.lr = 0.1});
  optimizer.step();
  CHECK(param.dtype() == kBFloat16);
  // 1 - 0.05, -2 - 0.025, 0.5 + 0.1, each rounded to bfloat16's 8 significant bits.
  check_close(param, {0.94921875, -2.03125, 0.6015625}, 1e-12);
}

TEST_CASE("parameters without gradients are skipped and get no state") {
  Tensor used = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  Tensor unused = from_vector<float>({3.0f, 4.0f}).requires_grad_();
  optim::Adam optimizer({used, unused}, {.lr = 0.1});
  used.set_grad(from_vector<float>({1.0f, -1.0f}));
  optimizer.step();
  // The first Adam step moves each element by lr against the gradient's sign.
  check_close(used, {0.9, 2.1}, 1e-6);
  CHECK(values_of(unused) == std::vector<double>{3.0, 4.0});
  REQUIRE(optimizer.state(used) != nullptr);
  CHECK(optimizer.state(used)->step == 1);
  CHECK(optimizer.state(unused) == nullptr);
}

TEST_CASE("zero_grad clears or zeroes gradients") {
  Tensor param = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::SGD optimizer({param}, {.lr = 0.1});
  param.set_grad(from_vector<float>({5.0f, 6.0f}));
  optimizer.zero_grad(false);
  REQUIRE(param.grad().defined());
  CHECK(param.grad().to_vector<float>() == std::vector<float>{0.0f, 0.0f});
  optimizer.zero_grad();
  CHECK_FALSE(param.grad().defined());
}

TEST_CASE("param groups carry their own options and learning rates") {
  Tensor first = from_vector<double>({1.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  Tensor second = from_vector<double>({1.0}, {1}, {.dtype = kFloat64}).requires_grad_();
  optim::SGD optimizer({first}, {.lr = 0.1});
  optimizer.add_param_group({second}, optim::SGDOptions{.lr = 0.5});
  CHECK(optimizer.num_param_groups() == 2);
  CHECK(optimizer.get_lr(1) == 0.5);
  optimizer.set_lr(0, 0.2);
  first.set_grad(from_vector<double>({1.0}, {1}, {.dtype = kFloat64}));
  second.set_grad(from_vector<double>({1.0}, {1}, {.dtype = kFloat64}));
  optimizer.step();
  CHECK(first.item() == doctest::Approx(0.8).epsilon(1e-15));
  CHECK(second.item() == doctest::Approx(0.5).epsilon(1e-15));
  CHECK_THROWS_WITH_AS(optimizer.get_lr(2), doctest::Contains("parameter group 2 does not exist"), Error);
}

TEST_CASE("optimizer argument errors name the problem") {
  Tensor param = from_vector<float>({1.0f}).requires_grad_();
  CHECK_THROWS_WITH_AS(optim::SGD({param}, {.lr = 0.1, .nesterov = true}), doctest::Contains("Nesterov"), Error);
  CHECK_THROWS_WITH_AS(optim::Adam({param}, {.betas = {0.9, 1.5}}), doctest::Contains("beta2 must be in [0, 1), got 1.5"),
                       Error);
  CHECK_THROWS_WITH_AS(optim::Adam({param, param}), doctest::Contains("appears twice"), Error);
  CHECK_THROWS_WITH_AS(optim::SGD({param * 2.0}), doctest::Contains("not a leaf"), Error);
  optim::AdamW optimizer({param});
  CHECK_THROWS_WITH_AS(optimizer.add_param_group({param}), doctest::Contains("appears twice"), Error);
}

TEST_CASE("the fused step ops check shapes and dtypes") {
  NoGradGuard no_grad;
  Tensor param = from_vector<float>({1.0f, 2.0f, 3.0f});
  Tensor state = zeros({3});
  CHECK_THROWS_WITH_AS(optim::adam_step_(param, zeros({2}), state, state.clone(), {}, {.lr = 0.1}),
                       doctest::Contains("adam_step_: input 1 has shape [2]"), Error);
  CHECK_THROWS_WITH_AS(optim::adam_step_(param, zeros({3}), state, state.clone(), {}, {.lr = 0.1, .amsgrad = true}),
                       doctest::Contains("amsgrad needs max_exp_avg_sq"), Error);
  CHECK_THROWS_WITH_AS(optim::sgd_step_(param, zeros({3}, {.dtype = kFloat64}), {}, {.lr = 0.1}),
                       doctest::Contains("sgd_step_: input 1 has shape [3] and dtype float64"), Error);
  CHECK_THROWS_WITH_AS(optim::sgd_step_(param, zeros({3}), {}, {.lr = 0.1, .momentum = 0.9}),
                       doctest::Contains("needs a momentum buffer"), Error);
  CHECK(param.to_vector<float>() == std::vector<float>{1.0f, 2.0f, 3.0f});
}

}  // namespace test_optim
