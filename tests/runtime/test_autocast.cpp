// Autocast: output dtypes of every op on the lists, values equal to casting the inputs by hand
// (and to PyTorch's bf16 rounding and CPU autocast linear), float64 and integer inputs left alone,
// nesting, disabling, threads, the error for a bad dtype, and what a dispatch mode sees.
#include <doctest/doctest.h>

#include <string>
#include <thread>

#include "numeric_check.h"

namespace test_autocast {

using namespace ember;
using namespace ember::testing;

namespace {

bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() && values_of(a) == values_of(b);
}

Tensor bf16(const Tensor& tensor) { return tensor.to(kBFloat16); }

// Records the name and input dtypes of every call it sees, then runs it.
class RecordingMode : public DispatchMode {
 public:
  std::vector<std::string> calls;
  TensorList handle(const OpCall& call, const DispatchNext& next) override {
    std::string text = call.op.name + "(";
    for (const Tensor& input : call.inputs)
      text += input.defined() ? std::string(dtype_name(input.dtype())) + "," : "-,";
    calls.push_back(text + ")");
    return next.run(call);
  }
};

}  // namespace

TEST_CASE("autocast: bf16 and fp16 casts round to nearest even as PyTorch does") {
  // torch.tensor(x, dtype=torch.float32).bfloat16().float() / .half().float() (PyTorch 1.13)
  const Tensor x = from_vector<float>({1.00390625f, 1.01171875f, -2.3456789f, 3.14159265f, 1e-3f, 65504.0f, 1e30f,
                                       -0.01171875f});
  const std::vector<double> bfloat16_values = {1.0,      1.015625, -2.34375, 3.140625, 0.00099945068359375,
                                                65536.0,  1.0002555517425873e+30, -0.01171875};
  const std::vector<double> float16_values = {1.00390625, 1.01171875, -2.345703125, 3.140625, 0.0010004043579101562,
                                              65504.0,    INFINITY,   -0.01171875};
  CHECK(values_of(x.to(kBFloat16)) == bfloat16_values);
  CHECK(values_of(x.to(kFloat16)) == float16_values);
}

TEST_CASE("autocast: linear in bf16 matches PyTorch's CPU autocast and a float64 reference") {
  // with torch.autocast("cpu", dtype=torch.bfloat16): y = F.linear(X, W, B)   (PyTorch 1.13)
  const Tensor x = from_vector<float>({0.31f, -1.27f, 2.03f, 0.377f, 1.51f, 0.629f, -0.871f, 1.13f, -2.07f, 0.33f,
                                       1.71f, -0.93f},
                                      {3, 4});
  const Tensor w = from_vector<float>({0.11f, -0.52f, 0.73f, 0.94f, -1.05f, 0.26f, 0.47f, -0.68f, 0.19f, 0.81f,
                                       -0.42f, 0.23f},
                                      {3, 4});
  const Tensor b = from_vector<float>({0.05f, -0.15f, 0.25f});
  Tensor y;
  {
    AutocastGuard autocast(kBFloat16);
    y = linear(x, w, b);
  }
  CHECK(y.dtype() == kBFloat16);
  check_close(values_of(y), {2.578125, -0.1064453125, -1.484375, 0.318359375, -2.75, 1.671875, 0.0264892578125,
                             3.53125, -0.80859375},
              0.0);
  // F.linear(X.bfloat16().double(), W.bfloat16().double(), B.bfloat16().double()): the exact
  // product of the rounded operands; y is it rounded once to bf16 (relative spacing 2^-8).
  const std::vector<double> reference = {2.58438777923584,    -0.10638427734375,  -1.4866466522216797,
                                         0.3190956115722656,  -2.7454986572265625, 1.6725311279296875,
                                         0.02654266357421875, 3.5317726135253906, -0.8085861206054688};
  check_close(values_of(y), reference, 1.0 / 256);
}

TEST_CASE("autocast: mm, bmm, matmul and linear return the autocast dtype and equal hand-cast inputs") {
  const Tensor a = random_tensor({5, 7}, 1, kFloat32);
  const Tensor b = random_tensor({7, 3}, 2, kFloat32);
  const Tensor batch_a = random_tensor({2, 5, 7}, 3, kFloat32);
  const Tensor batch_b = random_tensor({2, 7, 3}, 4, kFloat32);
  const Tensor vector = random_tensor({7}, 5, kFloat32);
  const Tensor bias = random_tensor({3}, 6, kFloat32);
  const Tensor weight = random_tensor({3, 7}, 7, kFloat32);
  for (DType dtype : {kBFloat16, kFloat16}) {
    INFO("autocast dtype ", dtype_name(dtype));
    const auto low = [&](const Tensor& t) { return t.to(dtype); };
    Tensor results[6];
    {
      AutocastGuard autocast(dtype);
      results[0] = mm(a, b);
      results[1] = bmm(batch_a, batch_b);
      results[2] = matmul(batch_a, b);  // broadcast batch
      results[3] = matmul(vector, b);   // 1-D operand
      results[4] = linear(a, weight, bias);
      results[5] = matmul(a, b.to(dtype));  // one operand already 16-bit: only the other is cast
    }
    const Tensor expected[6] = {mm(low(a), low(b)),           bmm(low(batch_a), low(batch_b)),
                                matmul(low(batch_a), low(b)), matmul(low(vector), low(b)),
                                linear(low(a), low(weight), low(bias)), mm(low(a), low(b))};
    for (int i = 0; i < 6; ++i) {
      INFO("case ", i);
      CHECK(results[i].dtype() == dtype);
      CHECK(same_values(results[i], expected[i]));
    }
    // Against float64 loops over the rounded operands: one rounding of the fp32-accumulated sum.
    const Tensor a64 = low(a).to(kFloat64), b64 = low(b).to(kFloat64);
    check_close(values_of(results[0]), values_of(mm(a64, b64)), dtype == kBFloat16 ? 1.0 / 128 : 1.0 / 1024);
  }
}

TEST_CASE("autocast: fp32-listed ops lift 16-bit inputs to float32 and equal hand-cast inputs") {
  const Tensor x = bf16(random_tensor({4, 6}, 11, kFloat32));
  const Tensor positive = bf16(abs(random_tensor({4, 6}, 12, kFloat32)));
  const Tensor other = bf16(random_tensor({4, 6}, 13, kFloat32));
  const Tensor target = from_vector<int64_t>({0, 5, 2, 3});
  const Tensor gamma = bf16(random_tensor({6}, 14, kFloat32));
  const auto f32 = [](const Tensor& t) { return t.to(kFloat32); };
  using Op = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Op>> ops = {
      {"softmax", [](const Tensor& t, const Tensor&, const Tensor&) { return softmax(t, 1); }},
      {"log_softmax", [](const Tensor& t, const Tensor&, const Tensor&) { return log_softmax(t, 1); }},
      {"cross_entropy",
       [&](const Tensor& t, const Tensor&, const Tensor&) { return cross_entropy(t, target); }},
      {"nll_loss", [&](const Tensor& t, const Tensor&, const Tensor&) { return nll_loss(t, target); }},
      {"mse_loss", [](const Tensor& t, const Tensor& u, const Tensor&) { return mse_loss(t, u); }},
      {"layer_norm", [](const Tensor& t, const Tensor&, const Tensor& g) { return layer_norm(t, {6}, g); }},
      {"sum", [](const Tensor& t, const Tensor&, const Tensor&) { return sum(t, {1}); }},
      {"exp", [](const Tensor& t, const Tensor&, const Tensor&) { return exp(t); }},
      {"expm1", [](const Tensor& t, const Tensor&, const Tensor&) { return expm1(t); }},
      {"log", [](const Tensor& t, const Tensor&, const Tensor&) { return log(t); }},
      {"log1p", [](const Tensor& t, const Tensor&, const Tensor&) { return log1p(t); }},
      {"softplus", [](const Tensor& t, const Tensor&, const Tensor&) { return softplus(t); }},
      {"rsqrt", [](const Tensor& t, const Tensor&, const Tensor&) { return rsqrt(t); }},
      {"reciprocal", [](const Tensor& t, const Tensor&, const Tensor&) { return reciprocal(t); }},
      {"pow", [](const Tensor& t, const Tensor& u, const Tensor&) { return pow(t, u); }},
      {"pow_scalar", [](const Tensor& t, const Tensor&, const Tensor&) { return pow(t, 1.5); }},
      {"log2", [](const Tensor& t, const Tensor&, const Tensor&) { return log2(t); }},
      {"log10", [](const Tensor& t, const Tensor&, const Tensor&) { return log10(t); }},
      {"tan", [](const Tensor& t, const Tensor&, const Tensor&) { return tan(t); }},
      // * 0.25 (exact in bf16) keeps the arguments of asin and acos inside [-1, 1].
      {"asin", [](const Tensor& t, const Tensor&, const Tensor&) { return asin(mul(t, 0.25)); }},
      {"acos", [](const Tensor& t, const Tensor&, const Tensor&) { return acos(mul(t, 0.25)); }},
      {"sinh", [](const Tensor& t, const Tensor&, const Tensor&) { return sinh(t); }},
      {"cosh", [](const Tensor& t, const Tensor&, const Tensor&) { return cosh(t); }},
  };
  for (const auto& [name, op] : ops) {
    INFO("op ", name);
    // log, log1p, log2, log10, rsqrt and pow need positive bases; the others take the signed values.
    const std::string op_name = name;
    const bool needs_positive = op_name == "log" || op_name == "log1p" || op_name == "rsqrt" || op_name == "pow" ||
                                op_name == "pow_scalar" || op_name == "log2" || op_name == "log10";
    const Tensor input = needs_positive ? positive : x;
    Tensor result;
    {
      AutocastGuard autocast(kBFloat16);
      result = op(input, other, gamma);
    }
    CHECK(result.dtype() == kFloat32);
    CHECK(same_values(result, op(f32(input), f32(other), f32(gamma))));
    // Without autocast the same call stays in bf16: the guard made the difference.
    CHECK(op(input, other, gamma).dtype() == kBFloat16);
  }
}

TEST_CASE("autocast: other ops keep their dtypes, float64 and integers are never cast") {
  const Tensor x16 = bf16(random_tensor({3, 4}, 21, kFloat32));
  const Tensor x32 = random_tensor({3, 4}, 22, kFloat32);
  const Tensor x64 = random_tensor({4, 2}, 23, kFloat64);
  AutocastGuard autocast(kBFloat16);
  CHECK(relu(x16).dtype() == kBFloat16);
  CHECK(add(x16, x16).dtype() == kBFloat16);
  CHECK(add(x16, x32).dtype() == kFloat32);  // ordinary promotion
  CHECK(mean(x16).dtype() == kBFloat16);     // not on PyTorch's lists
  CHECK(mm(x64.t(), x64).dtype() == kFloat64);
  CHECK(sum(from_vector<int64_t>({1, 2, 3})).dtype() == kInt64);
  // Promote (scatter_add): the widest floating input wins instead of a dtype mismatch error.
  const Tensor index = from_vector<int64_t>({0, 2, 1, 0}, {1, 4}, {.dtype = kInt64});
  const Tensor source = x16.slice(0, 0, 1);
  const auto scatter_add = [&] {
    return dispatch_one(lookup_op("scatter_add"), {x32, index, source}, {{"dim", int64_t{0}}});
  };
  CHECK(scatter_add().dtype() == kFloat32);
  AutocastGuard off(kBFloat16, false);
  CHECK_THROWS_WITH_AS(scatter_add(),
                       doctest::Contains("scatter_add: src has dtype bfloat16 but self has dtype float32"), Error);
}

TEST_CASE("autocast: gradients reach float32 parameters in float32, equal to casting by hand") {
  const Tensor x = random_tensor({6, 5}, 31, kFloat32);
  const Tensor target = from_vector<int64_t>({0, 1, 2, 1, 0, 2});
  auto make_leaves = [] {
    Tensor weight = random_tensor({3, 5}, 32, kFloat32);
    Tensor bias = random_tensor({3}, 33, kFloat32);
    weight.requires_grad_();
    bias.requires_grad_();
    return std::pair{weight, bias};
  };
  auto [weight, bias] = make_leaves();
  Tensor loss;
  {
    AutocastGuard autocast(kBFloat16);
    Tensor logits = linear(x, weight, bias);
    CHECK(logits.dtype() == kBFloat16);
    loss = cross_entropy(logits, target);
    CHECK(loss.dtype() == kFloat32);
    loss.backward();  // backward inside the guard runs without autocast
  }
  REQUIRE(weight.grad().defined());
  CHECK(weight.grad().dtype() == kFloat32);
  CHECK(bias.grad().dtype() == kFloat32);

  auto [manual_weight, manual_bias] = make_leaves();
  Tensor manual_logits = linear(bf16(x), bf16(manual_weight), bf16(manual_bias));
  Tensor manual_loss = cross_entropy(manual_logits.to(kFloat32), target);
  manual_loss.backward();
  CHECK(same_values(loss, manual_loss));
  CHECK(same_values(weight.grad(), manual_weight.grad()));
  CHECK(same_values(bias.grad(), manual_bias.grad()));
  // And close to the float32 gradient: the casts changed precision, not the math.
  auto [exact_weight, exact_bias] = make_leaves();
  cross_entropy(linear(x, exact_weight, exact_bias), target).backward();
  check_close(values_of(weight.grad()), values_of(exact_weight.grad()), 0.03);
}

TEST_CASE("autocast: guards nest, disable, restore, stay per thread and do nothing outside") {
  const Tensor a = random_tensor({2, 3}, 41, kFloat32), b = random_tensor({3, 2}, 42, kFloat32);
  CHECK_FALSE(autocast_enabled());
  CHECK(mm(a, b).dtype() == kFloat32);
  {
    AutocastGuard outer(kBFloat16);
    CHECK(mm(a, b).dtype() == kBFloat16);
    {
      AutocastGuard inner(kFloat16);
      CHECK(autocast_dtype() == kFloat16);
      CHECK(mm(a, b).dtype() == kFloat16);
      {
        AutocastGuard disabled(kBFloat16, false);
        CHECK_FALSE(autocast_enabled());
        CHECK(mm(a, b).dtype() == kFloat32);
      }
      CHECK(mm(a, b).dtype() == kFloat16);
    }
    CHECK(autocast_dtype() == kBFloat16);
    CHECK(mm(a, b).dtype() == kBFloat16);
    DType other_thread = kBFloat16;
    bool other_enabled = true;
    std::thread worker([&] {
      other_enabled = autocast_enabled();
      other_thread = mm(a, b).dtype();
    });
    worker.join();
    CHECK_FALSE(other_enabled);
    CHECK(other_thread == kFloat32);
  }
  CHECK_FALSE(autocast_enabled());
  CHECK(mm(a, b).dtype() == kFloat32);
}

TEST_CASE("autocast: a dtype other than bfloat16 or float16 is an error that changes nothing") {
  for (DType dtype : {kFloat32, kFloat64, kInt64, kBool}) {
    INFO(dtype_name(dtype));
    const std::string expected = fmt::format("autocast: dtype must be bfloat16 or float16, got {}", dtype_name(dtype));
    CHECK_THROWS_WITH_AS(AutocastGuard{dtype}, doctest::Contains(expected.c_str()), Error);
    CHECK_THROWS_WITH_AS((AutocastGuard{dtype, false}), doctest::Contains(expected.c_str()), Error);
    CHECK_FALSE(autocast_enabled());
  }
  AutocastGuard outer(kFloat16);
  CHECK_THROWS_AS(AutocastGuard{kFloat32}, Error);
  CHECK(autocast_enabled());
  CHECK(autocast_dtype() == kFloat16);
}

TEST_CASE("autocast: a dispatch mode sees the casts as to_dtype calls before the op") {
  const Tensor a = random_tensor({2, 3}, 51, kFloat32), b = random_tensor({3, 2}, 52, kFloat32);
  RecordingMode mode;
  {
    DispatchModeGuard installed(mode);  // installed first: autocast still runs before it
    AutocastGuard autocast(kBFloat16);
    mm(a, b);
    softmax(bf16(a), 1);
  }
  const std::vector<std::string> expected = {"to_dtype(float32,)",   "to_dtype(float32,)",  "mm(bfloat16,bfloat16,)",
                                             "to_dtype(float32,)",   "to_dtype(bfloat16,)", "softmax(float32,)"};
  CHECK(mode.calls == expected);
}

TEST_CASE("autocast: every op of the policy table is registered with its policy") {
  CHECK(registry().pending_autocast_ops().empty());
  CHECK(registry().get("linear").autocast == AutocastPolicy::LowerPrecision);
  CHECK(registry().get("bmm").autocast == AutocastPolicy::LowerPrecision);
  CHECK(registry().get("layer_norm").autocast == AutocastPolicy::Float32);
  CHECK(registry().get("erfinv").autocast == AutocastPolicy::Float32);  // on torch's fp32 list; lgamma is not
  CHECK(registry().get("lgamma").autocast == AutocastPolicy::None);
  CHECK(registry().get("scatter_add").autocast == AutocastPolicy::Promote);
  CHECK(registry().get("softmax_backward").autocast == AutocastPolicy::None);
  CHECK(registry().get("to_dtype").autocast == AutocastPolicy::None);
}

}  // namespace test_autocast
