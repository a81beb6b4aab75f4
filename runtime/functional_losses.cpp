// The class losses: cross_entropy, nll_loss (the fused registry ops, and composites of them when
// a per-class weight is given, for [N, C, d1, ...] scores, or, cross_entropy's, for class
// probabilities) and mse_loss. Reduction helpers shared with the pointwise losses.
#include "runtime/autocast_composites.h"
#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

void check_reduction(std::string_view function, Reduction reduction, bool batchmean_allowed) {
  const auto code = static_cast<int64_t>(reduction);
  check(code >= 0 && code <= 3, "{}: reduction must be {}, got {}", function,
        batchmean_allowed ? "None (0), Mean (1), Sum (2) or BatchMean (3)" : "None (0), Mean (1) or Sum (2)", code);
  check(batchmean_allowed || reduction != Reduction::BatchMean,
        "{}: reduction BatchMean is kl_div's only; use None, Mean or Sum", function);
}

Tensor reduce_loss(const Tensor& losses, Reduction reduction) {
  if (reduction == Reduction::Sum) return sum(losses);
  if (reduction == Reduction::Mean) return mean(losses);
  return losses;
}

Tensor log1p_exp(const Tensor& z) {
  const Tensor positive = gt(z, ops::scalar_like(0.0, z));
  const Tensor above = ember::where(positive, z, ops::scalar_like(0.0, z));
  const Tensor below = ember::where(positive, ops::scalar_like(0.0, z), z);
  return ember::where(positive, add(above, log1p(exp(neg(above)))), log1p(exp(below)));
}

namespace {

Tensor ignored_rows(const Tensor& target, int64_t ignore_index) {
  return eq(target, ops::scalar_like(static_cast<double>(ignore_index), target));
}

// w[y_i] for each row, 0 where the row is ignored (it has no class, and must count for nothing in
// Mean's denominator). The scores were validated by the op that gave the per-row losses; the
// weight takes those losses' dtype, which the scores (and autocast) decided.
Tensor row_weights(const char* function, const Tensor& scores, const Tensor& target, const Tensor& weight,
                   const Tensor& ignored, DType loss_dtype) {
  const int64_t classes = scores.sizes()[scores.dim() - 1];
  check(weight.dim() == 1 && weight.sizes()[0] == classes,
        "{}: weight must hold one value for each of the {} classes, got shape {} (scores {})", function, classes,
        weight.sizes(), scores.sizes());
  check(is_floating(weight.dtype()), "{}: weight must be floating-point, got {}", function, weight.dtype());
  const Tensor classes_of_rows = ember::where(ignored, ops::scalar_like(0.0, target), target);
  const Tensor picked = index_select(to_dtype(weight, loss_dtype), 0, classes_of_rows.reshape({target.numel()}));
  return ember::where(ignored, ops::scalar_like(0.0, picked), picked.view(target.sizes()));
}

// Mean divides by the total weight of the counted rows (PyTorch's nll_loss with weights): all
// rows ignored gives 0 / 0 = nan, as in PyTorch.
Tensor reduce_weighted_rows(const Tensor& rows, const Tensor& weights, Reduction reduction) {
  if (reduction == Reduction::None) return rows;
  if (reduction == Reduction::Sum) return sum(rows);
  return div(sum(rows), sum(weights));
}

// PyTorch's cross_entropy with weight and label smoothing: (1 - e) * weighted nll + e / C * the
// smoothing term -sum_c w_c log p_c (0 on ignored rows), both over the same Mean denominator.
Tensor weighted_cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  check_reduction("cross_entropy", options.reduction);
  // The fused op's per-row losses check shapes and class indices under cross_entropy's name.
  const CrossEntropyOptions per_row{.reduction = Reduction::None, .ignore_index = options.ignore_index};
  const Tensor nll = cross_entropy(logits, target, per_row);
  const Tensor ignored = ignored_rows(target, options.ignore_index);
  const Tensor weights = row_weights("cross_entropy", logits, target, options.weight, ignored, nll.dtype());
  Tensor rows = mul(nll, weights);
  const double smoothing = options.label_smoothing;
  if (smoothing > 0.0) {
    const Tensor log_probs = log_softmax(logits, -1);
    const Tensor weighted_sum = sum(mul(log_probs, to_dtype(options.weight, log_probs.dtype())), {-1});
    const Tensor smooth = ember::where(ignored, ops::scalar_like(0.0, weighted_sum), neg(weighted_sum));
    const auto classes = static_cast<double>(logits.sizes()[logits.dim() - 1]);
    rows = add(mul(rows, 1.0 - smoothing), mul(smooth, smoothing / classes));
  }
  return reduce_weighted_rows(rows, weights, options.reduction);
}

// PyTorch's [N, C, d1, ..., dk] scores with [N, d1, ..., dk] class indices (a segmentation map, a
// sequence): the class dim moves last and every position becomes a row of the [rows, C] form the
// fused ops take, so Mean counts positions (or their weights) as PyTorch's; None gets the
// target's shape back.
// The target's dtype and the weight's shape are checked here, against the caller's shapes, not
// by the row ops against the reshaped ones.
template <typename RowLoss>
Tensor over_positions(const char* function, const Tensor& scores, const Tensor& target, const Tensor& weight,
                      Reduction reduction, RowLoss row_loss) {
  Dims positions, order{0};
  positions.push_back(scores.sizes()[0]);
  for (int d = 2; d < scores.dim(); ++d) {
    positions.push_back(scores.sizes()[d]);
    order.push_back(d);
  }
  order.push_back(1);
  check(target.defined() && target.dtype() == kInt64, "{}: target must hold int64 class indices, got {} (shape {})",
        function, target.defined() ? dtype_name(target.dtype()) : "an undefined tensor",
        target.defined() ? target.sizes() : Dims{});
  check(target.sizes() == positions,
        "{}: expected a target of shape {} for scores of shape {} (class dim 1 left out), got {}", function,
        positions, scores.sizes(), target.sizes());
  check(!weight.defined() || (weight.dim() == 1 && weight.sizes()[0] == scores.sizes()[1]),
        "{}: weight must hold one value for each of the {} classes, got shape {} (scores {})", function,
        scores.sizes()[1], weight.defined() ? weight.sizes() : Dims{}, scores.sizes());
  const Dims rows{positions.product(), scores.sizes()[1]};
  const Tensor losses = row_loss(reshape(permute(scores, order), rows), reshape(target, {rows[0]}));
  return reduction == Reduction::None ? reshape(losses, positions) : losses;
}

// PyTorch's cross_entropy against class probabilities (a target of the scores' shape, class dim 1
// or the only one): -sum_c w_c t_c log_softmax(x)_c per sample, the targets smoothed to
// t (1 - e) + e / C. Mean divides by the number of samples, whatever the weights (0 / 0 = nan
// when there are none).
Tensor probability_cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  check_reduction("cross_entropy", options.reduction);
  check(is_floating(target.dtype()), "cross_entropy: a target of the scores' shape {} holds class probabilities and "
        "must be floating-point, got {}", logits.sizes(), target.dtype());
  check(options.ignore_index < 0, "cross_entropy: ignore_index ({}) is not supported for class-probability targets",
        options.ignore_index);
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  const int64_t classes = logits.sizes()[class_dim];
  const double smoothing = options.label_smoothing;
  // On PyTorch's autocast float32 list: the target is smoothed in float32 too.
  const Tensor x = detail::autocast_to_float32(logits), t = detail::autocast_to_float32(target);
  const Tensor probabilities = smoothing > 0.0 ? add(mul(t, 1.0 - smoothing), smoothing / classes) : t;
  Tensor terms = mul(log_softmax(x, class_dim), probabilities);
  if (options.weight.defined()) {
    check(options.weight.dim() == 1 && options.weight.sizes()[0] == classes,
          "cross_entropy: weight must hold one value for each of the {} classes, got shape {} (scores {})", classes,
          options.weight.sizes(), logits.sizes());
    Dims along_classes = Dims::filled(logits.dim(), 1);
    along_classes[class_dim] = classes;
    terms = mul(terms, reshape(detail::autocast_to_float32(options.weight), along_classes));
  }
  if (options.reduction == Reduction::None) return neg(sum(terms, {class_dim}));
  const Tensor total = neg(sum(terms));
  if (options.reduction == Reduction::Sum) return total;
  const auto samples = static_cast<double>(classes == 0 ? 0 : logits.numel() / classes);
  return div(total, samples);
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, CrossEntropyOptions options, Where where) {
  CallSiteScope site(where);
  check(options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
        "cross_entropy: label_smoothing must be in [0, 1], got {}", options.label_smoothing);
  if (logits.defined() && target.defined() && logits.dim() >= 1 && logits.sizes() == target.sizes())
    return probability_cross_entropy(logits, target, options);
  if (logits.defined() && logits.dim() > 2) {
    auto rows_loss = [&](const Tensor& rows, const Tensor& classes) { return cross_entropy(rows, classes, options); };
    return over_positions("cross_entropy", logits, target, options.weight, options.reduction, rows_loss);
  }
  if (options.weight.defined()) return weighted_cross_entropy(logits, target, options);
  static const OpDef& op = lookup_op("cross_entropy");
  return dispatch_one(op, {logits, target},
                      {{"reduction", static_cast<int64_t>(options.reduction)},
                       {"ignore_index", options.ignore_index},
                       {"label_smoothing", options.label_smoothing}});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, Reduction reduction, int64_t ignore_index,
                Where where) {
  CallSiteScope site(where);
  if (log_probs.defined() && log_probs.dim() > 2) {
    auto rows_loss = [&](const Tensor& rows, const Tensor& classes) {
      return nll_loss(rows, classes, reduction, ignore_index);
    };
    return over_positions("nll_loss", log_probs, target, {}, reduction, rows_loss);
  }
  static const OpDef& op = lookup_op("nll_loss");
  return dispatch_one(op, {log_probs, target},
                      {{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", ignore_index}});
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index, Where where) {
  CallSiteScope site(where);
  if (!weight.defined()) return nll_loss(log_probs, target, reduction, ignore_index);
  if (log_probs.defined() && log_probs.dim() > 2) {
    auto rows_loss = [&](const Tensor& rows, const Tensor& classes) {
      return nll_loss(rows, classes, weight, reduction, ignore_index);
    };
    return over_positions("nll_loss", log_probs, target, weight, reduction, rows_loss);
  }
  check_reduction("nll_loss", reduction);
  const Tensor nll = nll_loss(log_probs, target, Reduction::None, ignore_index);
  const Tensor weights = row_weights("nll_loss", log_probs, target, weight, ignored_rows(target, ignore_index),
                                     nll.dtype());
  return reduce_weighted_rows(mul(nll, weights), weights, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, Where where) {
  CallSiteScope site(where);
  static const OpDef& op = lookup_op("mse_loss");
  const Attrs attrs{{"reduction", static_cast<int64_t>(reduction)}};
  // The op takes one dtype; PyTorch computes float32 with float64 in float64, as the other losses
  // do here. The conversions are differentiable, so each gradient comes back in its input's dtype.
  if (input.defined() && target.defined() && input.dtype() != target.dtype() && is_floating(input.dtype()) &&
      is_floating(target.dtype())) {
    const DType common = promote_types(input.dtype(), target.dtype());
    return dispatch_one(op, {input.to(common), target.to(common)}, attrs);
  }
  return dispatch_one(op, {input, target}, attrs);
}

}  // namespace ember
