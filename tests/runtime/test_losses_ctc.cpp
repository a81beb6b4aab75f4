// ctc_loss (runtime/functional_losses_ctc.cpp) against a float64 brute force over every alignment
// (ctc_reference.h): padded and concatenated targets, lengths varying in one batch, repeated
// labels, empty targets and inputs, impossible alignments, each reduction, the unbatched form,
// both overloads, gradients (by finite differences, and against the brute force's posteriors
// directly and through log_softmax), the module, autocast, CPU against CUDA, and every error.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "composite_loss_checks.h"
#include "ctc_reference.h"
#include "error_of.h"
#include "numeric_check.h"
#include "skip_case.h"

namespace test_losses_ctc {

using namespace ember;
using namespace ember::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const Device kCuda0{DeviceType::CUDA, 0};

// log_softmax of reproducible logits [T, N, C] (float64), the usual input of ctc_loss.
Tensor random_log_probs(int64_t time, int64_t batch, int64_t classes, uint32_t seed) {
  return log_softmax(random_tensor({time, batch, classes}, seed), 2);
}

// Sequence n's log-probabilities [t][c] of a [T, N, C] tensor.
std::vector<std::vector<double>> sequence_of(const Tensor& log_probs, int64_t n) {
  const std::vector<double> values = values_of(log_probs);
  const int64_t time = log_probs.size(0), batch = log_probs.size(1), classes = log_probs.size(2);
  std::vector<std::vector<double>> rows(static_cast<size_t>(time));
  for (int64_t t = 0; t < time; ++t)
    for (int64_t c = 0; c < classes; ++c) rows[t].push_back(values[static_cast<size_t>((t * batch + n) * classes + c)]);
  return rows;
}

// One batch used throughout: three sequences of 5, 4 and 3 steps over classes {0 (blank), 1, 2},
// targets [1, 1] (a repeat: needs a blank between), [2, 1, 2] and [] (empty).
struct Batch {
  Tensor log_probs = random_log_probs(5, 3, 3, 11);
  std::vector<std::vector<int64_t>> targets = {{1, 1}, {2, 1, 2}, {}};
  std::vector<int64_t> input_lengths = {5, 4, 3};
  std::vector<int64_t> target_lengths = {2, 3, 0};
  // Padded with values a reader must not use: -1 and 7 lie outside the classes.
  Tensor padded = from_vector<int64_t>({1, 1, -1, 2, 1, 2, 7, 7, 7}, {3, 3});
  Tensor concatenated = from_vector<int64_t>({1, 1, 2, 1, 2});

  std::vector<CtcReference> references(int64_t blank = 0) const {
    std::vector<CtcReference> result;
    for (int64_t n = 0; n < 3; ++n)
      result.push_back(ctc_brute_force(sequence_of(log_probs, n), input_lengths[n], targets[n], blank));
    return result;
  }
};

std::vector<double> losses_of(const std::vector<CtcReference>& references) {
  std::vector<double> losses;
  for (const CtcReference& reference : references) losses.push_back(reference.loss);
  return losses;
}

// PyTorch's Mean: each loss over its target length (at least 1), then the batch's mean.
double mean_per_target_length(const std::vector<double>& losses, const std::vector<int64_t>& target_lengths) {
  double total = 0.0;
  for (size_t n = 0; n < losses.size(); ++n)
    total += losses[n] / static_cast<double>(std::max<int64_t>(target_lengths[n], 1));
  return total / static_cast<double>(losses.size());
}

std::vector<double> expected_for(const std::vector<double>& losses, const std::vector<int64_t>& target_lengths,
                                 Reduction reduction) {
  if (reduction == Reduction::Mean) return {mean_per_target_length(losses, target_lengths)};
  return reduced(losses, reduction);
}

Tensor lengths_tensor(const std::vector<int64_t>& lengths, DType dtype = kInt64) {
  return from_vector<int64_t>(lengths).to(dtype);
}

}  // namespace

TEST_CASE("ctc_loss equals the brute-force sum over alignments for padded and concatenated targets") {
  const Batch batch;
  const std::vector<double> losses = losses_of(batch.references());
  for (double loss : losses) CHECK(std::isfinite(loss));
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    const CTCLossOptions options{.reduction = reduction};
    const std::vector<double> expected = expected_for(losses, batch.target_lengths, reduction);
    const Tensor input_lengths = lengths_tensor(batch.input_lengths);
    const Tensor target_lengths = lengths_tensor(batch.target_lengths);
    check_close(ctc_loss(batch.log_probs, batch.padded, input_lengths, target_lengths, options), expected, 1e-12);
    check_close(ctc_loss(batch.log_probs, batch.concatenated, input_lengths, target_lengths, options), expected,
                1e-12);
    // The host-lengths overload, and lengths and targets of other integer dtypes.
    check_close(ctc_loss(batch.log_probs, batch.padded, batch.input_lengths, batch.target_lengths, options), expected,
                1e-12);
    check_close(ctc_loss(batch.log_probs, batch.concatenated.to(kInt32), lengths_tensor(batch.input_lengths, kInt32),
                         lengths_tensor(batch.target_lengths, kInt32), options),
                expected, 1e-12);
  }
  CHECK(ctc_loss(batch.log_probs, batch.padded, batch.input_lengths, batch.target_lengths,
                 {.reduction = Reduction::None})
            .sizes() == Dims{3});
  CHECK(ctc_loss(batch.log_probs, batch.padded, batch.input_lengths, batch.target_lengths).dim() == 0);
}

TEST_CASE("ctc_loss takes any blank class, and float32 agrees with float64") {
  const Tensor log_probs = random_log_probs(4, 2, 4, 12);
  // Blank 2: the targets use 0, 1 and 3; [3, 3] repeats.
  const std::vector<std::vector<int64_t>> targets = {{0, 3}, {3, 3}};
  const Tensor padded = from_vector<int64_t>({0, 3, 3, 3}, {2, 2});
  std::vector<double> losses;
  for (int64_t n = 0; n < 2; ++n) losses.push_back(ctc_brute_force(sequence_of(log_probs, n), 4, targets[n], 2).loss);
  const CTCLossOptions options{.blank = 2, .reduction = Reduction::None};
  check_close(ctc_loss(log_probs, padded, std::vector<int64_t>{4, 4}, {2, 2}, options), losses, 1e-12);
  const Tensor single = ctc_loss(log_probs.to(kFloat32), padded, std::vector<int64_t>{4, 4}, {2, 2}, options);
  CHECK(single.dtype() == kFloat32);
  check_close(single, losses, 1e-5);
}

TEST_CASE("ctc_loss gives inf for an impossible alignment, 0 and a zero gradient with zero_infinity") {
  // Two steps cannot emit [1, 1] (it needs 1, blank, 1); sequence 1 ([2] in 2 steps) can.
  const Tensor logits = random_tensor({2, 2, 3}, 13);
  const Tensor targets = from_vector<int64_t>({1, 1, 2, 0}, {2, 2});
  const std::vector<int64_t> input_lengths{2, 2}, target_lengths{2, 1};
  const double possible = ctc_brute_force(sequence_of(log_softmax(logits, 2), 1), 2, {2}, 0).loss;
  CHECK(ctc_brute_force(sequence_of(log_softmax(logits, 2), 0), 2, {1, 1}, 0).loss == kInf);
  check_exactly(ctc_loss(log_softmax(logits, 2), targets, input_lengths, target_lengths,
                         {.reduction = Reduction::None}),
                {kInf, possible});
  CHECK(ctc_loss(log_softmax(logits, 2), targets, input_lengths, target_lengths).item() == kInf);

  Tensor leaf = logits.clone().requires_grad_();
  const Tensor zeroed = ctc_loss(log_softmax(leaf, 2), targets, input_lengths, target_lengths,
                                 {.reduction = Reduction::Sum, .zero_infinity = true});
  CHECK(zeroed.item() == doctest::Approx(possible).epsilon(1e-12));
  zeroed.backward();
  const std::vector<double> gradient = values_of(leaf.grad());
  for (size_t i = 0; i < gradient.size(); ++i) {
    INFO("element " << i);
    CHECK(std::isfinite(gradient[i]));
    if ((i / 3) % 2 == 0) CHECK(gradient[i] == 0.0);  // sequence 0's entries
  }
  // Without zero_infinity the infinite sequence's gradient is 0 too, not NaN (PyTorch's kernel
  // gives NaN there): every alignment's probability is 0.
  Tensor direct = log_softmax(logits, 2).detach().requires_grad_();
  ctc_loss(direct, targets, input_lengths, target_lengths, {.reduction = Reduction::Sum}).backward();
  for (double g : values_of(direct.grad())) CHECK(!std::isnan(g));
}

TEST_CASE("ctc_loss handles empty inputs and targets as PyTorch's kernel does") {
  const Tensor log_probs = random_log_probs(3, 3, 3, 14);
  // An empty input emits only the empty target (probability 1); an empty target needs all blanks.
  const Tensor targets = from_vector<int64_t>({0, 0, 1, 0, 0, 0}, {3, 2});
  const Tensor losses = ctc_loss(log_probs, targets, std::vector<int64_t>{0, 0, 3}, {0, 1, 0},
                                 {.reduction = Reduction::None});
  const double all_blank = ctc_brute_force(sequence_of(log_probs, 2), 3, {}, 0).loss;
  check_exactly(losses, {0.0, kInf, all_blank});
  // Padded targets of no columns: every target empty.
  const Tensor no_columns = from_vector<int64_t>({}, Dims{3, 0});
  const Tensor none =
      ctc_loss(log_probs, no_columns, std::vector<int64_t>{3, 2, 1}, {0, 0, 0}, {.reduction = Reduction::None});
  std::vector<double> expected;
  for (int64_t n = 0; n < 3; ++n) expected.push_back(ctc_brute_force(sequence_of(log_probs, n), 3 - n, {}, 0).loss);
  check_close(none, expected, 1e-12);
  check_close(ctc_loss(log_probs, from_vector<int64_t>({}, Dims{0}), std::vector<int64_t>{3, 2, 1}, {0, 0, 0},
                       {.reduction = Reduction::None}),
              expected, 1e-12);
}

TEST_CASE("ctc_loss's unbatched form is one sequence with a 0-d loss") {
  const Tensor log_probs = random_log_probs(4, 1, 3, 15);
  const Tensor unbatched = log_probs.reshape({4, 3});
  const Tensor target = from_vector<int64_t>({2, 1});
  const double expected = ctc_brute_force(sequence_of(log_probs, 0), 4, {2, 1}, 0).loss;
  const Tensor input_length = from_vector<int64_t>({4}).reshape({});
  const Tensor target_length = from_vector<int64_t>({2}).reshape({});
  const Tensor none = ctc_loss(unbatched, target, input_length, target_length, {.reduction = Reduction::None});
  CHECK(none.dim() == 0);
  CHECK(none.item() == doctest::Approx(expected).epsilon(1e-12));
  CHECK(ctc_loss(unbatched, target, input_length, target_length).item() ==
        doctest::Approx(expected / 2).epsilon(1e-12));
  CHECK(ctc_loss(unbatched, target, std::vector<int64_t>{4}, {2}, {.reduction = Reduction::Sum}).item() ==
        doctest::Approx(expected).epsilon(1e-12));
  // As PyTorch, a 2-D target is padded targets of one row.
  CHECK(ctc_loss(unbatched, target.reshape({1, 2}), input_length, target_length, {.reduction = Reduction::None})
            .item() == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("ctc_loss's gradient is the true derivative in log_probs and PyTorch's through log_softmax") {
  const Batch batch;
  const std::vector<CtcReference> references = batch.references();
  const Tensor input_lengths = lengths_tensor(batch.input_lengths);
  const Tensor target_lengths = lengths_tensor(batch.target_lengths);
  // Finite differences, w.r.t. log_probs directly and w.r.t. the logits under log_softmax.
  for (Reduction reduction : kLossReductions) {
    INFO("reduction " << static_cast<int>(reduction));
    gradcheck([&](const std::vector<Tensor>& t) {
      return ctc_loss(t[0], batch.concatenated, input_lengths, target_lengths, {.reduction = reduction});
    }, {batch.log_probs});
    gradcheck([&](const std::vector<Tensor>& t) {
      return ctc_loss(log_softmax(t[0], 2), batch.padded, input_lengths, target_lengths, {.reduction = reduction});
    }, {random_tensor({5, 3, 3}, 16)});
  }
  // Against the brute force's posteriors (Sum: each sequence's loss counts once).
  Tensor direct = batch.log_probs.clone().requires_grad_();
  ctc_loss(direct, batch.padded, input_lengths, target_lengths, {.reduction = Reduction::Sum}).backward();
  const Tensor logits = random_tensor({5, 3, 3}, 17);
  Tensor through = logits.clone().requires_grad_();
  const Tensor through_log_probs = log_softmax(through, 2);
  ctc_loss(through_log_probs, batch.padded, input_lengths, target_lengths, {.reduction = Reduction::Sum}).backward();
  const std::vector<double> softmax_values = values_of(softmax(logits, 2));
  std::vector<double> direct_expected(45, 0.0), through_expected(45, 0.0), pytorch_direct(45, 0.0);
  for (int64_t n = 0; n < 3; ++n) {
    const CtcReference at_logits =
        ctc_brute_force(sequence_of(through_log_probs, n), batch.input_lengths[n], batch.targets[n], 0);
    const std::vector<std::vector<double>> log_probs = sequence_of(batch.log_probs, n);
    for (int64_t t = 0; t < batch.input_lengths[n]; ++t) {
      // log_softmax's backward: g - softmax * sum(g) over the classes.
      double row_sum = 0.0;
      for (double g : at_logits.gradient[t]) row_sum += g;
      for (int64_t c = 0; c < 3; ++c) {
        const size_t flat = static_cast<size_t>((t * 3 + n) * 3 + c);
        direct_expected[flat] = references[n].gradient[t][c];
        through_expected[flat] = at_logits.gradient[t][c] - softmax_values[flat] * row_sum;
        // What PyTorch's kernel returns as the gradient w.r.t. log_probs: exp(log_probs) added.
        pytorch_direct[flat] = std::exp(log_probs[t][c]) + references[n].gradient[t][c];
      }
    }
  }
  check_close(direct.grad(), direct_expected, 1e-12);
  check_close(through.grad(), through_expected, 1e-12);
  // The documented difference: w.r.t. log_probs directly, ember's gradient is not PyTorch's.
  const std::vector<double> ember_direct = values_of(direct.grad());
  double largest_gap = 0.0;
  for (size_t i = 0; i < ember_direct.size(); ++i)
    largest_gap = std::max(largest_gap, std::abs(ember_direct[i] - pytorch_direct[i]));
  CHECK(largest_gap > 0.1);
}

TEST_CASE("ctc_loss ignores log_probs past each input length, NaN included") {
  const Batch batch;
  std::vector<double> values = values_of(batch.log_probs);
  // Sequence 2 (3 steps) and sequence 1 (4 steps): NaN in their unused steps.
  for (int64_t t = 3; t < 5; ++t) values[static_cast<size_t>((t * 3 + 2) * 3 + 1)] = std::nan("");
  values[static_cast<size_t>((4 * 3 + 1) * 3 + 0)] = std::nan("");
  Tensor padded_log_probs = from_vector<double>(values, {5, 3, 3}).requires_grad_();
  const Tensor loss = ctc_loss(padded_log_probs, batch.padded, batch.input_lengths, batch.target_lengths,
                               {.reduction = Reduction::None});
  check_close(loss, losses_of(batch.references()), 1e-12);
  sum(loss).backward();
  for (double g : values_of(padded_log_probs.grad())) CHECK(std::isfinite(g));
}

TEST_CASE("CTCLoss calls ctc_loss, and autocast computes 16-bit log_probs in float32") {
  const Batch batch;
  const Tensor input_lengths = lengths_tensor(batch.input_lengths);
  const Tensor target_lengths = lengths_tensor(batch.target_lengths);
  nn::CTCLoss module({.reduction = Reduction::Sum, .zero_infinity = true});
  CHECK(module->name() == "CTCLoss");
  CHECK(module->options().zero_infinity);
  CHECK(values_of(module(batch.log_probs, batch.padded, input_lengths, target_lengths)) ==
        values_of(ctc_loss(batch.log_probs, batch.padded, input_lengths, target_lengths,
                           {.reduction = Reduction::Sum, .zero_infinity = true})));
  const int line = __LINE__ + 1;
  const std::string message = error_of([&] { module(batch.log_probs, batch.padded, input_lengths, input_lengths); });
  CHECK(message.find("ctc_loss: target length 5 of sequence 0 exceeds the padded targets' 3 columns") !=
        std::string::npos);
  CHECK(names_line(message, "test_losses_ctc.cpp", line));

  const Tensor half = batch.log_probs.to(kBFloat16);
  CHECK_THROWS_WITH_AS(ctc_loss(half, batch.padded, input_lengths, target_lengths),
                       doctest::Contains("ctc_loss: log_probs must be float32 or float64, got bfloat16"), Error);
  AutocastGuard autocast(kBFloat16);
  const Tensor lifted = ctc_loss(half, batch.padded, input_lengths, target_lengths);
  CHECK(lifted.dtype() == kFloat32);
  CHECK(lifted.item() == ctc_loss(half.to(kFloat32), batch.padded, input_lengths, target_lengths).item());
  CHECK(ctc_loss(batch.log_probs, batch.padded, input_lengths, target_lengths).dtype() == kFloat64);
}

TEST_CASE("ctc_loss on CUDA equals the CPU, in value and gradient") {
  if (!cuda_or_skip()) return;
  const Batch batch;
  const Tensor input_lengths = lengths_tensor(batch.input_lengths);
  const Tensor target_lengths = lengths_tensor(batch.target_lengths);
  const Tensor logits = random_tensor({5, 3, 3}, 18, kFloat32);
  Tensor on_cpu = logits.clone().requires_grad_();
  Tensor on_cuda = logits.to(kCuda0).requires_grad_();
  const Tensor cpu_loss = ctc_loss(log_softmax(on_cpu, 2), batch.concatenated, input_lengths, target_lengths);
  // Lengths and targets on the device too: nothing is read back to compute.
  const Tensor cuda_loss = ctc_loss(log_softmax(on_cuda, 2), batch.concatenated.to(kCuda0),
                                    input_lengths.to(kCuda0), target_lengths.to(kCuda0));
  check_close(cuda_loss, values_of(cpu_loss), 1e-5);
  cpu_loss.backward();
  cuda_loss.backward();
  check_close(on_cuda.grad(), values_of(on_cpu.grad()), 1e-5);
}

TEST_CASE("ctc_loss refuses PyTorch's bad arguments, naming the values") {
  const Batch batch;
  const Tensor& lp = batch.log_probs;
  const Tensor input_lengths = lengths_tensor(batch.input_lengths);
  const Tensor target_lengths = lengths_tensor(batch.target_lengths);
  const auto fails = [](auto&& call, const std::string& message) {
    CHECK_THROWS_WITH_AS(call(), doctest::Contains(message.c_str()), Error);
  };
  fails([&] { ctc_loss(lp.reshape({-1}), batch.padded, input_lengths, target_lengths); },
        "ctc_loss: expected log_probs of shape [T, N, C] or [T, C], got shape [45]");
  fails([&] { ctc_loss(Tensor{}, batch.padded, input_lengths, target_lengths); },
        "ctc_loss: expected log_probs of shape [T, N, C] or [T, C], got an undefined tensor");
  fails([&] { ctc_loss(lp.to(kInt64), batch.padded, input_lengths, target_lengths); },
        "ctc_loss: log_probs must be a floating-point tensor, got int64");
  fails([&] { ctc_loss(zeros({0, 3, 3}, {.dtype = kFloat64}), batch.padded, input_lengths, target_lengths); },
        "is outside [0, 0] (log_probs' time steps)");  // no time steps: only empty inputs
  fails([&] { ctc_loss(lp, batch.padded, input_lengths, target_lengths, {.blank = 3}); },
        "ctc_loss: blank 3 is outside the class range [0, 3)");
  fails([&] { ctc_loss(lp, batch.padded, input_lengths, target_lengths, {.blank = -1}); },
        "ctc_loss: blank -1 is outside the class range [0, 3)");
  fails([&] { ctc_loss(lp, batch.padded.to(kFloat32), input_lengths, target_lengths); },
        "ctc_loss: targets must be integral, got float32");
  fails([&] { ctc_loss(lp, batch.padded.reshape({3, 3, 1}), input_lengths, target_lengths); },
        "ctc_loss: expected targets of shape [N, S] (padded) or [sum(target_lengths)] (concatenated), got shape "
        "[3, 3, 1]");
  fails([&] { ctc_loss(lp, slice(batch.padded, 0, 0, 2), input_lengths, target_lengths); },
        "ctc_loss: expected padded targets of 3 rows (one per sequence), got shape [2, 3]");
  fails([&] { ctc_loss(lp, batch.padded, input_lengths.to(kFloat32), target_lengths); },
        "ctc_loss: input_lengths must be integral, got float32");
  fails([&] { ctc_loss(lp, batch.padded, input_lengths, target_lengths.to(kBool)); },
        "ctc_loss: target_lengths must be integral, got bool");
  fails([&] { ctc_loss(lp, batch.padded, slice(input_lengths, 0, 0, 2), target_lengths); },
        "ctc_loss: input_lengths must have 3 elements (one per sequence), got shape [2]");
  fails([&] { ctc_loss(lp, batch.padded, std::vector<int64_t>{5, 4, 3}, {2, 3}); },
        "ctc_loss: target_lengths must have 3 elements (one per sequence), got 2");
  fails([&] { ctc_loss(lp, batch.padded, std::vector<int64_t>{5, 6, 3}, {2, 3, 0}); },
        "ctc_loss: input length 6 of sequence 1 is outside [0, 5] (log_probs' time steps)");
  fails([&] { ctc_loss(lp, batch.padded, lengths_tensor({5, 4, -1}), target_lengths); },
        "ctc_loss: input length -1 of sequence 2 is outside [0, 5]");
  fails([&] { ctc_loss(lp, batch.padded, std::vector<int64_t>{5, 4, 3}, {2, -3, 0}); },
        "ctc_loss: target length -3 of sequence 1 is negative");
  fails([&] { ctc_loss(lp, batch.padded, std::vector<int64_t>{5, 4, 3}, {2, 3, 4}); },
        "ctc_loss: target length 4 of sequence 2 exceeds the padded targets' 3 columns");
  fails([&] { ctc_loss(lp, batch.concatenated, std::vector<int64_t>{5, 4, 3}, {2, 2, 0}); },
        "ctc_loss: the target lengths add up to 4 but the concatenated targets hold 5");
  fails([&] { ctc_loss(lp, from_vector<int64_t>({1, 3, 2, 1, 2}), input_lengths, target_lengths); },
        "ctc_loss: target 3 of sequence 0 is outside the class range [0, 3)");
  fails([&] { ctc_loss(lp, from_vector<int64_t>({1, 1, 2, 0, 2}), input_lengths, target_lengths); },
        "ctc_loss: target 0 of sequence 1 is the blank, which a target cannot hold");
  fails([&] { ctc_loss(lp, batch.padded, input_lengths, target_lengths, {.reduction = Reduction::BatchMean}); },
        "ctc_loss: reduction BatchMean is kl_div's only; use None, Mean or Sum");
}

}  // namespace test_losses_ctc
