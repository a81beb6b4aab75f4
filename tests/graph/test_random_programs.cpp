// Random training steps through ember::compile against eager. A seeded generator writes small
// programs over broadcasting shapes ([4,6], [1,6], [4,1], [6], [1]): pointwise chains, keepdim
// reductions, GEMMs on transposed views, and in-place updates of intermediates; each step then
// runs backward and an update by SGD with momentum or AdamW. Every pass, fusion, the memory plan and the
// lowered executor see graphs nobody wrote by hand, and the results must equal eager's: the
// loss at every call, the final parameters, their gradients and the optimizer's state.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "fusion_test_util.h"
#include "graph/compile.h"
#include "graph/fusion.h"
#include "runtime/ember.h"

using namespace ember;

namespace {

enum class Kind { Add, Sub, Mul, Maximum, Where, SafeDiv, Tanh, Sigmoid, Relu, Gelu, Silu, ExpTanh,
                  SqrtAbs, Square, SumRows, MeanCols, AmaxRows, Gemm, InPlace, MutateBase, MutateView,
                  MutateDetached, Softmax, LogSoftmax, LayerNorm, RowSlice, CatHalves, ReshapeRoundTrip,
                  Clamp, VarRows, MseLoss };
constexpr int kKinds = static_cast<int>(Kind::MseLoss) + 1;
const char* const kKindNames[kKinds] = {"add", "sub", "mul", "maximum", "where(gt)", "safe_div", "tanh",
  "sigmoid", "relu", "gelu", "silu", "exp(tanh)", "sqrt(|a|+1)", "square", "sum(dim 0)", "mean(dim 1)",
  "amax(dim 0)", "a @ (b^T @ c)", "t = a * 1.5; t.add_(mean(b))",
  "t = a * 1.5; v = t^T; t.add_(mean(b)); v^T", "t = a.detach() * 1.5; v = t^T; v.mul_(s); t",
  "t = a * 1.5; t.detach().mul_(s); t", "softmax(dim -1)", "log_softmax(dim -1)",
  "layer_norm(a[4,6], [6], w = b, bias = c)", "a[4,6][1:2] (a view at an offset)",
  "cat(a[0:2], b[2:4]) of [4,6]s", "a[4,6].reshape(24).reshape(4,6)", "clamp(a, -0.5, 0.8)",
  "var(a, dim 1, keepdim)", "mse_loss(a, b) of [4,6]s"};

// Value i of the pool is one of the step's tensors: 0 = x (the input), 1 = p [6], 2 = q [4,6]
// (parameters), then one per instruction.
struct Instruction {
  Kind kind;
  int a, b, c;
  double scalar;
};

struct Program {
  std::vector<Instruction> instructions;

  std::string describe() const {
    std::string text = "v0 = x[4,6], v1 = p[6], v2 = q[4,6], W[6,6] in GEMMs\n";
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& in = instructions[i];
      text += "v" + std::to_string(i + 3) + " = " + kKindNames[static_cast<int>(in.kind)] + "(v" +
              std::to_string(in.a) + ", v" + std::to_string(in.b) + ", v" + std::to_string(in.c) + ")\n";
    }
    return text;
  }
};

bool is_full(const Tensor& t) { return t.sizes() == Dims{4, 6}; }

Program random_program(std::mt19937& rng, int length) {
  Program program;
  for (int i = 0; i < length; ++i) {
    const int pool = 3 + i;
    std::uniform_int_distribution<int> pick(0, pool - 1), kind(0, kKinds - 1);
    // Later instructions lean on recent values, so programs are deep as well as wide.
    std::uniform_int_distribution<int> recent(std::max(0, pool - 4), pool - 1);
    program.instructions.push_back({static_cast<Kind>(kind(rng)), recent(rng), pick(rng), pick(rng),
                                    std::uniform_real_distribution<double>(0.25, 1.5)(rng)});
  }
  return program;
}

// The first value at or before `index` of shape [4,6] (x always is).
const Tensor& full_at_or_before(const std::vector<Tensor>& pool, int index) {
  while (!is_full(pool[index])) --index;
  return pool[index];
}

// `t` broadcast to [4,6] (through an op, so autograd sums the gradient back).
Tensor expand_to_full(const Tensor& t) { return add(t, zeros({4, 6})); }

Tensor apply(const Instruction& in, const std::vector<Tensor>& pool, const Tensor& w) {
  const Tensor& a = pool[in.a];
  const Tensor& b = pool[in.b];
  switch (in.kind) {
    case Kind::Add: return add(a, b, in.scalar);
    case Kind::Sub: return sub(a, b);
    case Kind::Mul: return mul(mul(a, b), in.scalar);
    case Kind::Maximum: return maximum(a, b);
    case Kind::Where: return where(gt(a, b), a, mul(b, in.scalar));
    case Kind::SafeDiv: return div(a, add(abs(b), 1.0));
    case Kind::Tanh: return tanh(a);
    case Kind::Sigmoid: return sigmoid(a);
    case Kind::Relu: return relu(a);
    case Kind::Gelu: return gelu(a);
    case Kind::Silu: return silu(a);
    case Kind::ExpTanh: return exp(tanh(a));
    case Kind::SqrtAbs: return sqrt(add(abs(a), 1.0));
    case Kind::Square: return mul(pow(a, 2.0), 0.5);
    case Kind::SumRows: return a.dim() == 2 ? mul(sum(a, {0}, true), 0.25) : sum(a, {}, false);
    case Kind::MeanCols: return mean(a, {a.dim() - 1}, true);
    case Kind::AmaxRows: return amax(a, {0}, true);
    case Kind::Gemm: {
      // [4,6] @ ([6,4] @ [4,6]) and then @ W: transposed operands are views the GEMM reads in place.
      const Tensor& left = full_at_or_before(pool, in.a);
      const Tensor& middle = full_at_or_before(pool, in.b);
      const Tensor& right = full_at_or_before(pool, in.c);
      return mul(mm(mm(left, mm(middle.t(), right)), w), 0.05);
    }
    case Kind::InPlace: {
      Tensor t = mul(a, 1.5);
      t.add_(mean(b), in.scalar);
      return t;
    }
    // A view taken before its base changes in place must show the change, and the reverse.
    case Kind::MutateBase: {
      Tensor t = mul(a, 1.5);
      const Tensor view = t.t();
      t.add_(mean(b), in.scalar);
      return view.t();
    }
    case Kind::MutateView: {
      // Autograd refuses in-place updates of views of tensors that require grad (eager says so).
      Tensor t = mul(a.detach(), 1.5);
      Tensor view = t.t();
      view.mul_(in.scalar);
      return t;
    }
    // An update autograd does not see, through an alias made outside the dispatcher.
    case Kind::MutateDetached: {
      Tensor t = mul(a, 1.5);
      t.detach().mul_(in.scalar);
      return t;
    }
    case Kind::Softmax: return softmax(a, -1);
    case Kind::LogSoftmax: return mul(log_softmax(a, -1), 0.25);
    case Kind::LayerNorm: {
      // The affine weight and bias are [6] slices of any two values broadcast to [4,6].
      const Tensor& input = full_at_or_before(pool, in.a);
      const Tensor weight = expand_to_full(pool[in.b]).select(0, 1);
      const Tensor bias = expand_to_full(pool[in.c]).select(0, 2);
      return layer_norm(input, {6}, weight, bias);
    }
    case Kind::RowSlice: return full_at_or_before(pool, in.a).slice(0, 1, 2);
    case Kind::CatHalves:
      return cat({full_at_or_before(pool, in.a).slice(0, 0, 2), full_at_or_before(pool, in.b).slice(0, 2, 4)}, 0);
    case Kind::ReshapeRoundTrip: return mul(full_at_or_before(pool, in.a).reshape({24}), 0.5).reshape({4, 6});
    case Kind::Clamp: return clamp(a, -0.5, 0.8);
    case Kind::VarRows: return a.dim() == 2 ? var(a, {1}, 1, true) : var(a, {}, 1, false);
    case Kind::MseLoss: return mse_loss(full_at_or_before(pool, in.a), full_at_or_before(pool, in.b));
  }
  throw std::logic_error("unknown instruction");
}

// One model: its parameters, optimizer (SGD with momentum, or AdamW) and the program's step.
struct Model {
  Tensor p, q, w;
  std::unique_ptr<optim::SGD> sgd;
  std::unique_ptr<optim::AdamW> adamw;
  optim::Optimizer* optimizer = nullptr;

  explicit Model(bool use_adamw) {
    manual_seed(7);
    p = randn({6}).requires_grad_();
    q = randn({4, 6}).requires_grad_();
    w = mul(randn({6, 6}), 0.4).detach().requires_grad_();
    std::vector<Tensor> parameters{p, q, w};
    if (use_adamw) {
      adamw = std::make_unique<optim::AdamW>(parameters, optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1});
      optimizer = adamw.get();
    } else {
      sgd = std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
      optimizer = sgd.get();
    }
  }

  // The optimizer's per-parameter state tensors (momentum buffer, or AdamW's two moments).
  std::vector<Tensor> state_of(const Tensor& parameter) const {
    if (sgd) return {sgd->state(parameter)->momentum_buffer};
    return {adamw->state(parameter)->exp_avg, adamw->state(parameter)->exp_avg_sq};
  }

  Tensor step(const Program& program, const Tensor& x) {
    optimizer->zero_grad();
    std::vector<Tensor> pool{x, p, q};
    for (const Instruction& in : program.instructions) pool.push_back(apply(in, pool, w));
    // Every parameter reaches the loss, so each gets a gradient and an update.
    Tensor loss = add(mean(mul(p, q)), mul(sum(w), 0.01));
    for (size_t i = pool.size() - 3; i < pool.size(); ++i) loss = add(loss, mean(pool[i]));
    loss.backward();
    optimizer->step();
    return loss;
  }
};

void check_close(const Tensor& actual, const Tensor& expected, const std::string& what = "result") {
  INFO(what);
  REQUIRE(actual.defined());
  REQUIRE(expected.defined());
  const double error = graph_test::max_relative_error(actual, expected);
  CHECK(error >= 0);
  CHECK(error <= 1e-5);
}

void check_same_state(Model& compiled, Model& eager) {
  const std::vector<std::pair<Tensor, Tensor>> pairs{{compiled.p, eager.p}, {compiled.q, eager.q},
                                                     {compiled.w, eager.w}};
  const std::string names[] = {"p", "q", "W"};
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [actual, expected] = pairs[i];
    INFO("parameter ", names[i]);
    check_close(actual, expected, "value");
    check_close(actual.grad(), expected.grad(), "grad");
    const std::vector<Tensor> actual_state = compiled.state_of(actual);
    const std::vector<Tensor> expected_state = eager.state_of(expected);
    for (size_t k = 0; k < actual_state.size(); ++k) check_close(actual_state[k], expected_state[k], "optimizer state");
  }
}

}  // namespace

TEST_CASE("random programs: compiled training steps (fused and plain replay) equal eager") {
  constexpr int kPrograms = 24;
  constexpr int kCalls = 4;  // one eager warm-up, the capture, two replays
  std::mt19937 rng(20261202);
  int programs_with_fusion = 0;
  for (int index = 0; index < kPrograms; ++index) {
    const Program program = random_program(rng, 14);
    INFO("program ", index, ":\n", program.describe());
    const bool use_adamw = index % 2 == 1;
    INFO("optimizer ", use_adamw ? "AdamW" : "SGD with momentum");
    Model eager(use_adamw), fused(use_adamw), plain(use_adamw);
    auto fused_step = ember::compile([&](const Tensor& x) { return fused.step(program, x); },
                                     {.fullgraph = true});
    auto plain_step = ember::compile([&](const Tensor& x) { return plain.step(program, x); },
                                     {.fullgraph = true, .fuse = false, .lowered = false});
    for (int call = 0; call < kCalls; ++call) {
      manual_seed(300 + static_cast<uint64_t>(call));
      const Tensor x = randn({4, 6});
      INFO("call ", call);
      const Tensor expected = eager.step(program, x);
      check_close(fused_step(x), expected);
      check_close(plain_step(x), expected);
    }
    CHECK(fused_step.state().replays() == kCalls - 2);
    CHECK(plain_step.state().replays() == kCalls - 2);
    check_same_state(fused, eager);
    check_same_state(plain, eager);
    if (!graph::fused_ops(*fused_step.state().graph()).empty()) ++programs_with_fusion;
  }
  // The generator is meant to exercise fusion: most programs must have produced fused kernels.
  CHECK(programs_with_fusion >= kPrograms * 3 / 4);
}
