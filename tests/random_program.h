// A seeded generator of small training programs for randomized equivalence tests. A program is a
// list of instructions over a pool of tensors (x [4,6], parameters p [6] and q [4,6], then one value
// per instruction) that mixes broadcasting pointwise chains, keepdim reductions, GEMMs on transposed
// views, softmax/layer_norm/var/mse_loss, slices, cat, reshapes and in-place updates of
// intermediates, of a view's base (read through transpose, select, expand and permute views made
// before the update), through a view (recorded, and through a detach()ed alias) and through a
// detach()ed alias of the base, and dropout. The compile
// tests run the same program compiled and eager; the autograd tests check its gradient in float64
// against central differences.
#pragma once

#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/ember.h"

namespace ember::testing {

enum class Kind { Add, Sub, Mul, Maximum, Where, SafeDiv, Tanh, Sigmoid, Relu, Gelu, Silu, ExpTanh,
                  SqrtAbs, Square, SumRows, MeanCols, AmaxRows, Gemm, InPlace, MutateBase, MutateView,
                  MutateDetached, Softmax, LogSoftmax, LayerNorm, RowSlice, CatHalves, ReshapeRoundTrip,
                  Clamp, VarRows, MseLoss, SelectAfterMutate, PermuteAfterMutate, MutateThroughView, Dropout };
inline constexpr int kKinds = static_cast<int>(Kind::Dropout) + 1;
inline const char* const kKindNames[kKinds] = {"add", "sub", "mul", "maximum", "where(a > b, a - b, s (b - a))", "safe_div", "tanh",
  "sigmoid", "relu", "gelu", "silu", "exp(tanh)", "sqrt(|a|+1)", "square", "sum(dim 0)", "mean(dim 1)",
  "amax(dim 0)", "a @ (b^T @ c)", "t = a * 1.5; t.add_(mean(b))",
  "t = a * 1.5; v = t^T; t.add_(mean(b)); v^T", "t = a.detach() * 1.5; v = t^T; v.mul_(s); t",
  "t = a * 1.5; t.detach().mul_(s); t", "softmax(dim -1)", "log_softmax(dim -1)",
  "layer_norm(a[4,6], [6], w = b, bias = c)", "a[4,6][1:2] (a view at an offset)",
  "cat(a[0:2], b[2:4]) of [4,6]s", "a[4,6].reshape(24).reshape(4,6)", "clamp(a, -0.5, 0.8)",
  "var(a, dim 1, keepdim)", "mse_loss(a, b) of [4,6]s",
  "t = a[4,6] * 1.5; r = t.select(0, 2); t.mul_(b); r.unsqueeze(0).expand(4, 6)",
  "t = a[4,6] * 1.5; v = t.reshape(2,2,6).permute(2,0,1); t.add_(mean(b)); v.permute(1,2,0).reshape(4,6)",
  "t = a[4,6] * 1.5; t^T[1:3].mul_(b[4,6]^T[1:3]); t", "dropout(a, p = 0.25)"};

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
    std::ostringstream text;
    text << "v0 = x[4,6], v1 = p[6], v2 = q[4,6], W[6,6] in GEMMs\n";
    for (size_t i = 0; i < instructions.size(); ++i) {
      const Instruction& in = instructions[i];
      text << 'v' << i + 3 << " = " << kKindNames[static_cast<int>(in.kind)] << "(v" << in.a << ", v" << in.b
           << ", v" << in.c << ")\n";
    }
    return text.str();
  }
};

inline bool is_full(const Tensor& t) { return t.sizes() == Dims{4, 6}; }

// Updates through a detach()ed alias are invisible to autograd by design (as in PyTorch), so a
// gradient check leaves them out; the function they compute still changes. Dropout draws a new
// mask at every evaluation, which central differences cannot straddle.
inline bool differentiable(Kind kind) {
  return kind != Kind::MutateView && kind != Kind::MutateDetached && kind != Kind::Dropout;
}

// Programs of `length` instructions whose kinds `allowed` accepts (all when empty).
inline Program random_program(std::mt19937& rng, int length, const std::function<bool(Kind)>& allowed = {}) {
  Program program;
  for (int i = 0; i < length; ++i) {
    const int pool = 3 + i;
    std::uniform_int_distribution<int> pick(0, pool - 1), kind(0, kKinds - 1);
    // Later instructions lean on recent values, so programs are deep as well as wide.
    std::uniform_int_distribution<int> recent(std::max(0, pool - 4), pool - 1);
    Kind drawn = static_cast<Kind>(kind(rng));
    while (allowed && !allowed(drawn)) drawn = static_cast<Kind>(kind(rng));
    program.instructions.push_back({drawn, recent(rng), pick(rng), pick(rng),
                                    std::uniform_real_distribution<double>(0.25, 1.5)(rng)});
  }
  return program;
}

// The first value at or before `index` of shape [4,6] (x always is).
inline const Tensor& full_at_or_before(const std::vector<Tensor>& pool, int index) {
  while (!is_full(pool[index])) --index;
  return pool[index];
}

// `t` broadcast to [4,6] (through an op, so autograd sums the gradient back).
inline Tensor expand_to_full(const Tensor& t) {
  return add(t, zeros({4, 6}, {.dtype = t.dtype(), .device = t.device()}));
}

inline Tensor apply(const Instruction& in, const std::vector<Tensor>& pool, const Tensor& w) {
  const Tensor& a = pool[in.a];
  const Tensor& b = pool[in.b];
  switch (in.kind) {
    case Kind::Add: return add(a, b, in.scalar);
    case Kind::Sub: return sub(a, b);
    case Kind::Mul: return mul(mul(a, b), in.scalar);
    case Kind::Maximum: return maximum(a, b);
    // Both branches are 0 where a == b: values that tie by construction (a maximum broadcast
    // everywhere, say) must not put a jump where central differences would straddle it.
    case Kind::Where: return where(gt(a, b), sub(a, b), mul(sub(b, a), in.scalar));
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
    case Kind::VarRows: {
      // Along a dim of more than one element (the unbiased variance of one element is NaN).
      if (a.numel() == 1) return mul(a, in.scalar);
      if (a.dim() == 2) return var(a, {a.size(1) > 1 ? 1 : 0}, 1, true);
      return var(a, {}, 1, false);
    }
    case Kind::MseLoss: return mse_loss(full_at_or_before(pool, in.a), full_at_or_before(pool, in.b));
    // Views through select/unsqueeze/expand and permute, taken before their base changes in place.
    case Kind::SelectAfterMutate: {
      Tensor t = mul(full_at_or_before(pool, in.a), 1.5);
      const Tensor row = t.select(0, 2);
      t.mul_(expand_to_full(b));
      return row.unsqueeze(0).expand({4, 6});
    }
    // An update through a view of a view while recording: the base's history follows it.
    case Kind::MutateThroughView: {
      Tensor t = mul(full_at_or_before(pool, in.a), 1.5);
      t.t().slice(0, 1, 3).mul_(expand_to_full(b).t().slice(0, 1, 3));
      return t;
    }
    // Each run draws its own mask: callers comparing two runs start both from one generator state.
    case Kind::Dropout: return dropout(a, 0.25, true);
    case Kind::PermuteAfterMutate: {
      Tensor t = mul(full_at_or_before(pool, in.a), 1.5);
      const Tensor view = t.reshape({2, 2, 6}).permute({2, 0, 1});  // a view of a view
      t.add_(mean(b), in.scalar);
      return view.permute({1, 2, 0}).reshape({4, 6});
    }
  }
  throw std::logic_error("unknown instruction");
}

// The program's loss over input x and parameters p [6], q [4,6], W [6,6]: every parameter reaches
// it, so each gets a gradient, and so do the last three values.
// With `host_reads`, after each instruction i it marks the program reads the new value's sum on
// the host and halves the value when the sum is positive: a branch on data, as code with a graph
// break has (compiled, each read ends a segment).
inline Tensor program_loss(const Program& program, const Tensor& x, const Tensor& p, const Tensor& q,
                           const Tensor& w, const std::vector<bool>* host_reads = nullptr) {
  std::vector<Tensor> pool{x, p, q};
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    pool.push_back(apply(program.instructions[i], pool, w));
    if (host_reads != nullptr && (*host_reads)[i] && pool.back().sum().item() > 0) pool.back() = mul(pool.back(), 0.5);
  }
  Tensor loss = add(mean(mul(p, q)), mul(sum(w), 0.01));
  for (size_t i = pool.size() - 3; i < pool.size(); ++i) loss = add(loss, mean(pool[i]));
  return loss;
}

}  // namespace ember::testing
