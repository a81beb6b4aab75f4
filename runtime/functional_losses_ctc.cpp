// ctc_loss in PyTorch's semantics (aten/src/ATen/native/LossCTC.cpp), as a composite of registry
// ops: the alpha recursion of Graves et al. over the extended labels (a blank, the first label,
// a blank, ... a blank: 2S + 1 states), one step per time step, each a few pointwise ops over
// [N, 2S + 1], so autograd, CUDA, autocast and capture come with it and no kernel is needed.
//
// The gradient is autograd's, the true derivative of the loss w.r.t. log_probs. PyTorch's kernel
// returns exp(log_probs) minus the posterior instead (the derivative w.r.t. the logits of a
// log_softmax that made log_probs): through log_softmax both agree, since log_softmax's backward
// cancels the exp(log_probs) term (its rows sum to 1 times the sum of the incoming gradient, which
// is 1 per time step inside the input length); w.r.t. log_probs directly they differ by it.
//
// Lengths are used as tensors on log_probs' device (masks over time and states), never read on the
// host to compute: so a CUDA call does not wait for the device and a capture records the whole
// loss, lengths given as tensors staying graph values. Their values (and the targets') are checked
// where reading them costs nothing, on the CPU outside a capture, as the other losses' values are;
// elsewhere a length outside its range is clamped into it (PyTorch copies the lengths to the host
// and checks them always), and a target class outside [0, C) is gather's error.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional_losses_more.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::autocast_to_float32;
using ops::scalar_like;

constexpr const char* kFunction = "ctc_loss";
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// log(sum(exp(terms))) of same-shaped tensors, shifted by their (detached) maximum. Where every
// term is -inf the result is -inf and the gradient 0: the log's argument is replaced by 1 there, so
// no 1/0 meets a zero (an unreachable state would otherwise give 0 * inf = NaN). NaN propagates.
Tensor log_sum_exp_of(const std::vector<Tensor>& terms) {
  Tensor peak = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) peak = maximum(peak, terms[i]);
  peak = peak.detach();
  const Tensor negative_infinity = scalar_like(-kInfinity, peak);
  const Tensor shift = ember::where(eq(peak, negative_infinity), scalar_like(0.0, peak), peak);
  Tensor total = exp(sub(terms[0], shift));
  for (size_t i = 1; i < terms.size(); ++i) total = add(total, exp(sub(terms[i], shift)));
  const Tensor reachable = ne(total, scalar_like(0.0, total));
  const Tensor safe_total = ember::where(reachable, total, scalar_like(1.0, total));
  return ember::where(reachable, add(log(safe_total), shift), negative_infinity);
}

// alpha moved k states up: state s holds alpha[s - k], the first k states -inf.
Tensor from_k_states_below(const Tensor& alpha, int64_t k) {
  const int64_t states = alpha.size(1);
  const Tensor unreachable =
      full({alpha.size(0), std::min(k, states)}, -kInfinity, {.dtype = alpha.dtype(), .device = alpha.device()});
  if (states <= k) return unreachable;
  return cat({unreachable, slice(alpha, 1, 0, states - k)}, 1);
}

// Host lengths as an int64 tensor made by dispatched factories (one `full` per run of equal
// values), so that a capture records them as constants: a tensor copied from host memory
// (from_vector) would be lifted as state bound to a temporary, and recompile every call.
Tensor lengths_on(const std::vector<int64_t>& lengths, Device device) {
  if (lengths.empty()) return full({0}, 0.0, {.dtype = kInt64, .device = device});
  std::vector<Tensor> runs;
  for (size_t start = 0, end = 0; start < lengths.size(); start = end) {
    while (end < lengths.size() && lengths[end] == lengths[start]) ++end;
    runs.push_back(full({static_cast<int64_t>(end - start)}, static_cast<double>(lengths[start]),
                        {.dtype = kInt64, .device = device}));
  }
  return runs.size() == 1 ? runs[0] : cat(runs, 0);
}

bool can_read(const Tensor& tensor) { return tensor.device().is_cpu() && !dispatch_mode_active(); }

void check_integral(const char* what, const Tensor& tensor) {
  const std::string dtype =
      tensor.defined() ? std::string(dtype_name(tensor.dtype())) : std::string("an undefined tensor");
  check(tensor.defined() && is_integral(tensor.dtype()) && tensor.dtype() != kBool, "{}: {} must be integral, got {}",
        kFunction, what, dtype);
}

// The shapes' part of PyTorch's checks, which needs no values.
struct CtcShape {
  int64_t time = 0, batch = 0, classes = 0;
  bool batched = true;
  bool concatenated = false;  // targets 1-D, the sequences' targets one after another
};

CtcShape check_shapes(const Tensor& log_probs, const Tensor& targets, int64_t blank) {
  check(log_probs.defined() && (log_probs.dim() == 2 || log_probs.dim() == 3),
        "{}: expected log_probs of shape [T, N, C] or [T, C], got {}", kFunction,
        log_probs.defined() ? fmt::format("shape {}", log_probs.sizes()) : std::string("an undefined tensor"));
  check(is_floating(log_probs.dtype()), "{}: log_probs must be a floating-point tensor, got {}", kFunction,
        log_probs.dtype());
  CtcShape shape;
  shape.batched = log_probs.dim() == 3;
  shape.time = log_probs.size(0);
  shape.batch = shape.batched ? log_probs.size(1) : 1;
  shape.classes = log_probs.size(log_probs.dim() - 1);
  check(blank >= 0 && blank < shape.classes, "{}: blank {} is outside the class range [0, {})", kFunction, blank,
        shape.classes);
  check_integral("targets", targets);
  check(targets.dim() == 1 || targets.dim() == 2,
        "{}: expected targets of shape [N, S] (padded) or [sum(target_lengths)] (concatenated), got shape {}",
        kFunction, targets.sizes());
  shape.concatenated = targets.dim() == 1;
  check(shape.concatenated || targets.size(0) == shape.batch,
        "{}: expected padded targets of {} rows (one per sequence), got shape {}", kFunction, shape.batch,
        targets.sizes());
  return shape;
}

void check_length_count(const char* what, const Tensor& lengths, int64_t batch) {
  check_integral(what, lengths);
  check(lengths.numel() == batch, "{}: {} must have {} elements (one per sequence), got shape {}", kFunction, what,
        batch, lengths.sizes());
}

// PyTorch's checks of the lengths' values, and the targets' classes (which PyTorch leaves
// unchecked: its kernel would read outside log_probs). Returns the longest target.
int64_t check_length_values(const CtcShape& shape, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                            const std::vector<int64_t>& target_lengths, int64_t blank) {
  int64_t total = 0, longest = 0;
  const int64_t columns = shape.concatenated ? 0 : targets.size(1);
  for (int64_t n = 0; n < shape.batch; ++n) {
    const int64_t input_length = input_lengths[n], target_length = target_lengths[n];
    check(input_length >= 0 && input_length <= shape.time,
          "{}: input length {} of sequence {} is outside [0, {}] (log_probs' time steps)", kFunction, input_length, n,
          shape.time);
    check(target_length >= 0, "{}: target length {} of sequence {} is negative", kFunction, target_length, n);
    check(shape.concatenated || target_length <= columns,
          "{}: target length {} of sequence {} exceeds the padded targets' {} columns", kFunction, target_length, n,
          columns);
    total += target_length;
    longest = std::max(longest, target_length);
  }
  check(!shape.concatenated || total == targets.size(0),
        "{}: the target lengths add up to {} but the concatenated targets hold {}", kFunction, total, targets.size(0));
  if (targets.numel() == 0 || !can_read(targets)) return longest;
  const std::vector<int64_t> classes = to_dtype(targets, kInt64).contiguous().to_vector<int64_t>();
  int64_t offset = 0;
  for (int64_t n = 0; n < shape.batch; ++n) {
    const int64_t start = shape.concatenated ? offset : n * columns;
    for (int64_t s = 0; s < target_lengths[n]; ++s) {
      const int64_t label = classes[static_cast<size_t>(start + s)];
      check(label >= 0 && label < shape.classes, "{}: target {} of sequence {} is outside the class range [0, {})",
            kFunction, label, n, shape.classes);
      check(label != blank, "{}: target {} of sequence {} is the blank, which a target cannot hold", kFunction, label,
            n);
    }
    offset += target_lengths[n];
  }
  return longest;
}

// [N, width] class indices: each sequence's first target_lengths[n] targets, then the blank.
Tensor padded_labels(const Tensor& targets, const Tensor& target_lengths, const CtcShape& shape, int64_t width,
                     int64_t blank, Device device) {
  const TensorOptions index_options{.dtype = kInt64, .device = device};
  const Tensor positions = arange(static_cast<double>(width), index_options).reshape({1, width});
  const Tensor all = to_dtype(targets, kInt64).to(device);
  Tensor labels;
  if (!shape.concatenated) {
    labels = slice(all, 1, 0, width);
  } else if (all.numel() == 0) {
    labels = full({shape.batch, width}, static_cast<double>(blank), index_options);
  } else {
    // Sequence n's targets start at the sum of the lengths before it.
    const Tensor starts = sub(cumsum(target_lengths, 0), target_lengths).reshape({shape.batch, 1});
    const Tensor index = clamp(add(starts, positions), 0.0, static_cast<double>(all.numel() - 1));
    labels = index_select(all, 0, index.reshape({-1})).reshape({shape.batch, width});
  }
  const Tensor within = lt(positions, target_lengths.reshape({shape.batch, 1}));
  return ember::where(within, labels, scalar_like(static_cast<double>(blank), labels));
}

// The negative log-likelihood of each sequence [N]: the forward (alpha) recursion.
Tensor negative_log_likelihoods(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                const Tensor& target_lengths, const CtcShape& shape, int64_t width, int64_t steps,
                                int64_t blank) {
  const Device device = log_probs.device();
  const TensorOptions index_options{.dtype = kInt64, .device = device};
  const int64_t batch = shape.batch, states = 2 * width + 1;
  const Tensor labels = padded_labels(targets, target_lengths, shape, width, blank, device);
  // The extended labels [N, 2S + 1]: blank, label 0, blank, label 1, ..., blank.
  const Tensor blanks = full_like(labels, static_cast<double>(blank));
  const Tensor extended = cat({stack({blanks, labels}, 2).reshape({batch, 2 * width}),
                               full({batch, 1}, static_cast<double>(blank), index_options)},
                              1);
  // s - 2 -> s skips a blank: allowed into a label that differs from the one two states back.
  Tensor skip = full({batch, states}, 0.0, {.dtype = kBool, .device = device});
  if (states > 2) {
    skip = cat({slice(skip, 1, 0, 2), ne(slice(extended, 1, 2, states), slice(extended, 1, 0, states - 2))}, 1);
  }
  // Each state's log-probability at each time step [T, N, 2S + 1]; 0 past a sequence's input
  // length, where nothing reads it (so padding holding NaN or inf leaks into no gradient).
  const Tensor gathered = gather(log_probs, 2, extended.unsqueeze(0).expand({shape.time, batch, states}).contiguous());
  const Tensor time = arange(static_cast<double>(shape.time), index_options).reshape({shape.time, 1, 1});
  const Tensor active = lt(time, input_lengths.reshape({1, batch, 1}));
  const Tensor emitted = ember::where(active, gathered, scalar_like(0.0, gathered));

  // t = 0 starts in the first blank or the first label (if any); an empty input starts in the
  // first blank with probability 1 (0 emitted above), so only an empty target is reachable.
  const Tensor state = arange(static_cast<double>(states), index_options).reshape({1, states});
  const Tensor lengths = target_lengths.reshape({batch, 1});
  const Tensor started = gt(input_lengths.reshape({batch, 1}), scalar_like(0.0, lengths));
  const Tensor first_states =
      ember::where(started, clamp(add(mul(lengths, 2.0), 1.0), std::nullopt, 2.0), scalar_like(1.0, lengths));
  const Tensor unreachable = scalar_like(-kInfinity, emitted);
  Tensor alpha = ember::where(lt(state, first_states), emitted.select(0, 0), unreachable);
  for (int64_t t = 1; t < steps; ++t) {
    const Tensor skipped = ember::where(skip, from_k_states_below(alpha, 2), unreachable);
    const Tensor next = add(log_sum_exp_of({alpha, from_k_states_below(alpha, 1), skipped}), emitted.select(0, t));
    alpha = ember::where(active.select(0, t), next, alpha);  // a finished sequence keeps its alpha
  }
  // The likelihood: ending in the last blank (2L) or the last label (2L - 1, none for L = 0).
  const Tensor last = mul(lengths, 2.0);
  const Tensor ends_blank = gather(alpha, 1, last);
  const Tensor has_label = gt(lengths, scalar_like(0.0, lengths));
  const Tensor ends_label =
      ember::where(has_label, gather(alpha, 1, clamp(sub(last, 1.0), 0.0, std::nullopt)), unreachable);
  return neg(log_sum_exp_of({ends_blank, ends_label})).reshape({batch});
}

Tensor ctc_loss_impl(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                     const Tensor& target_lengths, const CtcShape& shape, int64_t width, int64_t steps,
                     CTCLossOptions options) {
  const Tensor lp = autocast_to_float32(log_probs);
  // PyTorch's kernels take float32 and float64 only; autocast lifts 16-bit log_probs (above).
  check(lp.dtype() == kFloat32 || lp.dtype() == kFloat64,
        "{}: log_probs must be float32 or float64, got {} (16-bit log_probs compute in float32 under autocast)",
        kFunction, lp.dtype());
  const Tensor batched = shape.batched ? lp : lp.unsqueeze(1);
  const Device device = lp.device();
  // Clamped into range: unchecked lengths (CUDA, capture) address nothing outside the tensors.
  const Tensor inputs =
      clamp(to_dtype(input_lengths, kInt64).to(device).reshape({shape.batch}), 0.0, static_cast<double>(shape.time));
  const Tensor target_counts =
      clamp(to_dtype(target_lengths, kInt64).to(device).reshape({shape.batch}), 0.0, static_cast<double>(width));
  // No time steps or no sequences (PyTorch's kernel skips the recursion): an empty target has
  // probability 1, any other 0. The 0 * sum(log_probs) keeps the loss on log_probs' graph.
  Tensor losses =
      shape.time == 0 || shape.batch == 0
          ? add(ember::where(eq(target_counts, scalar_like(0.0, target_counts)), scalar_like(0.0, lp),
                             scalar_like(kInfinity, lp)),
                mul(sum(batched), 0.0))
          : negative_log_likelihoods(batched, targets, inputs, target_counts, shape, width, steps, options.blank);
  if (options.zero_infinity) {
    losses = ember::where(eq(losses, scalar_like(kInfinity, losses)), scalar_like(0.0, losses), losses);
  }
  if (options.reduction == Reduction::Mean) {
    const Tensor divisors = clamp(to_dtype(target_counts, losses.dtype()), 1.0, std::nullopt);
    return mean(div(losses, divisors));
  }
  if (options.reduction == Reduction::None && !shape.batched) return losses.reshape({});
  return reduce_loss(losses, options.reduction);
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, CTCLossOptions options, Where where) {
  CallSiteScope site(where);
  check_reduction(kFunction, options.reduction);
  const CtcShape shape = check_shapes(log_probs, targets, options.blank);
  check_length_count("input_lengths", input_lengths, shape.batch);
  check_length_count("target_lengths", target_lengths, shape.batch);
  // The targets' width: the padded columns, or for concatenated targets the longest a sequence's
  // can be without reading the lengths (all of them).
  int64_t width = shape.concatenated ? targets.size(0) : targets.size(1);
  int64_t steps = shape.time;
  if (can_read(input_lengths) && can_read(target_lengths)) {
    const auto host = [](const Tensor& lengths) {
      return to_dtype(lengths, kInt64).contiguous().reshape({-1}).to_vector<int64_t>();
    };
    const std::vector<int64_t> inputs = host(input_lengths), target_counts = host(target_lengths);
    width = check_length_values(shape, targets, inputs, target_counts, options.blank);
    steps = inputs.empty() ? 0 : *std::max_element(inputs.begin(), inputs.end());
  }
  return ctc_loss_impl(log_probs, targets, input_lengths, target_lengths, shape, width, steps, options);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, CTCLossOptions options, Where where) {
  CallSiteScope site(where);
  check_reduction(kFunction, options.reduction);
  const CtcShape shape = check_shapes(log_probs, targets, options.blank);
  const auto count = [&](const char* what, const std::vector<int64_t>& lengths) {
    check(static_cast<int64_t>(lengths.size()) == shape.batch,
          "{}: {} must have {} elements (one per sequence), got {}", kFunction, what, shape.batch, lengths.size());
  };
  count("input_lengths", input_lengths);
  count("target_lengths", target_lengths);
  const int64_t width = check_length_values(shape, targets, input_lengths, target_lengths, options.blank);
  const int64_t steps = input_lengths.empty() ? 0 : *std::max_element(input_lengths.begin(), input_lengths.end());
  return ctc_loss_impl(log_probs, targets, lengths_on(input_lengths, log_probs.device()),
                       lengths_on(target_lengths, log_probs.device()), shape, width, steps, options);
}

}  // namespace ember
