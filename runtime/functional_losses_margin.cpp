// The margin and embedding losses in PyTorch's formulas (aten/src/ATen/native/Loss.cpp and
// torch.nn.functional): margin_ranking_loss, hinge_embedding_loss, soft_margin_loss,
// multilabel_soft_margin_loss, cosine_embedding_loss, pairwise_distance, triplet_margin_loss and
// triplet_margin_with_distance_loss.
// Composites of registry ops: their gradients are autograd's, which equal PyTorch's backward.
#include <span>

#include "runtime/autocast_composites.h"
#include "runtime/functional_losses_more.h"
#include "runtime/loss_reduction.h"
#include "runtime/ops/pointwise_common.h"

namespace ember {

namespace {

using detail::autocast_to_float32;
using ops::scalar_like;

void check_floating_input(const char* function, const char* what, const Tensor& tensor) {
  check(tensor.defined() && is_floating(tensor.dtype()), "{}: {} must be a floating-point tensor, got {}", function,
        what, tensor.defined() ? std::string(dtype_name(tensor.dtype())) : std::string("an undefined tensor"));
}

// margin_ranking_loss negates its target, which PyTorch refuses for bool; the other losses
// compare or multiply it, which bool allows.
void check_sign_target(const char* function, const Tensor& target) {
  check(target.defined() && target.dtype() != kBool, "{}: target must hold 1 or -1 as numbers, got {}", function,
        target.defined() ? std::string(dtype_name(target.dtype())) : std::string("an undefined tensor"));
}

void check_defined(const char* function, const char* what, const Tensor& tensor) {
  check(tensor.defined(), "{}: {} is an undefined tensor", function, what);
}

// A target compared with 1 and -1 in `like`'s dtype when it is bool: PyTorch promotes the pair, so
// true is 1 and never -1, where a bool scalar -1 would be true.
Tensor comparable_target(const Tensor& target, const Tensor& like) {
  return target.dtype() == kBool ? to_dtype(target, like.dtype()) : target;
}

}  // namespace

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           MarginRankingLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "margin_ranking_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "input1", input1);
  check_floating_input(function, "input2", input2);
  check_sign_target(function, target);
  check(input1.dim() == input2.dim() && input1.dim() == target.dim(),
        "{}: input1, input2 and target must have one number of dims, got shapes {}, {} and {}", function,
        input1.sizes(), input2.sizes(), target.sizes());
  broadcast_shapes(broadcast_shapes(input1.sizes(), input2.sizes(), function), target.sizes(), function);
  const Tensor x1 = autocast_to_float32(input1), x2 = autocast_to_float32(input2);
  const Tensor margins = add(neg(mul(target, sub(x1, x2))), options.margin);
  return reduce_loss(clamp(margins, 0.0, std::nullopt), options.reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, HingeEmbeddingLossOptions options,
                            Where where) {
  CallSiteScope site(where);
  const char* function = "hinge_embedding_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "input", input);
  check_defined(function, "target", target);
  broadcast_shapes(input.sizes(), target.sizes(), function);
  const Tensor x = autocast_to_float32(input), y = comparable_target(target, x);
  const Tensor below_margin = clamp(rsub(x, options.margin), 0.0, std::nullopt);
  const Tensor zero = scalar_like(0.0, x);
  const Tensor margin_part = ember::where(ne(y, scalar_like(1.0, y)), below_margin, zero);
  const Tensor self_part = ember::where(ne(y, scalar_like(-1.0, y)), x, zero);
  return reduce_loss(add(margin_part, self_part), options.reduction);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, SoftMarginLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "soft_margin_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "input", input);
  check_defined(function, "target", target);
  // PyTorch computes in place in a tensor of the input's dtype and shape: -x times y (in their
  // common dtype, rounded to x's), then log(1 + exp()).
  check(broadcast_shapes(input.sizes(), target.sizes(), function) == input.sizes(),
        "{}: target of shape {} must broadcast to the input's shape {}", function, target.sizes(), input.sizes());
  const Tensor x = autocast_to_float32(input);
  return reduce_loss(log1p_exp(to_dtype(neg(mul(x, target)), x.dtype())), options.reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   MultilabelSoftMarginLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "multilabel_soft_margin_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "input", input);
  check(input.dim() >= 1, "{}: expected an input with a class dim (its last), got a 0-d tensor", function);
  check_defined(function, "target", target);
  broadcast_shapes(input.sizes(), target.sizes(), function);
  const Tensor x = autocast_to_float32(input), y = autocast_to_float32(target);
  // PyTorch's Python composite: the target (and weight) broadcast, and the sum runs over the
  // input's last dim of the result. -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) is
  // y log(1 + exp(-x)) + (1 - y) log(1 + exp(x)).
  Tensor losses = add(mul(y, log1p_exp(neg(x))), mul(rsub(y, 1.0), log1p_exp(x)));
  if (options.weight.defined()) {
    broadcast_shapes(losses.sizes(), options.weight.sizes(), function);
    losses = mul(losses, autocast_to_float32(options.weight));
  }
  const int64_t class_dim = input.dim() - 1;
  const auto classes = static_cast<double>(input.sizes()[class_dim]);
  return reduce_loss(div(sum(losses, {class_dim}), classes), options.reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             CosineEmbeddingLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "cosine_embedding_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "input1", input1);
  check_floating_input(function, "input2", input2);
  check_defined(function, "target", target);
  check(target.dim() <= 1, "{}: expected a 0-d or 1-D target, got shape {} (multi-target is not supported)",
        function, target.sizes());
  check(input1.dim() == target.dim() + 1 && input2.dim() == target.dim() + 1,
        "{}: a {}-D target expects {}-D inputs, got shapes {} and {}", function, target.dim(), target.dim() + 1,
        input1.sizes(), input2.sizes());
  // The inputs' rows (their broadcast shape without the last dim) meet the target.
  const Dims pair = broadcast_shapes(input1.sizes(), input2.sizes(), function);
  broadcast_shapes(Dims(std::span<const int64_t>(pair.begin(), pair.size() - 1)), target.sizes(), function);
  const Tensor x1 = autocast_to_float32(input1), x2 = autocast_to_float32(input2);
  const Dims along{target.dim()};
  constexpr double kEpsilon = 1e-12;  // PyTorch's, keeping a zero vector's cosine 0, not NaN
  const Tensor dot = sum(mul(x1, x2), along);
  const Tensor squares1 = add(sum(mul(x1, x1), along), kEpsilon);
  const Tensor squares2 = add(sum(mul(x2, x2), along), kEpsilon);
  const Tensor cosine = div(dot, sqrt(mul(squares1, squares2)));
  const Tensor zero = scalar_like(0.0, cosine), y = comparable_target(target, cosine);
  const Tensor similar = ember::where(eq(y, scalar_like(1.0, y)), rsub(cosine, 1.0), zero);
  const Tensor dissimilar = ember::where(eq(y, scalar_like(-1.0, y)),
                                         clamp(sub(cosine, options.margin), 0.0, std::nullopt), zero);
  return reduce_loss(add(similar, dissimilar), options.reduction);
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim, Where where) {
  CallSiteScope site(where);
  check_floating_input("pairwise_distance", "x1", x1);
  check_floating_input("pairwise_distance", "x2", x2);
  // The last dim of the broadcast difference; for two 0-d tensors dim -1 of a 0-d one, |x1 - x2 + eps|.
  const int64_t innermost = std::max(x1.dim(), x2.dim()) - 1;
  return norm(add(sub(x1, x2), eps), p, {innermost}, keepdim);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           TripletMarginLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "triplet_margin_loss";
  check_reduction(function, options.reduction);
  check_floating_input(function, "anchor", anchor);
  check_floating_input(function, "positive", positive);
  check_floating_input(function, "negative", negative);
  check(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
        "{}: anchor, positive and negative must have one number of dims, got shapes {}, {} and {}", function,
        anchor.sizes(), positive.sizes(), negative.sizes());
  broadcast_shapes(broadcast_shapes(anchor.sizes(), positive.sizes(), function), negative.sizes(), function);
  const Tensor a = autocast_to_float32(anchor), pos = autocast_to_float32(positive);
  const Tensor negatives = autocast_to_float32(negative);
  const Tensor to_positive = pairwise_distance(a, pos, options.p, options.eps);
  Tensor to_negative = pairwise_distance(a, negatives, options.p, options.eps);
  if (options.swap) to_negative = minimum(to_negative, pairwise_distance(pos, negatives, options.p, options.eps));
  const Tensor margins = sub(add(to_positive, options.margin), to_negative);
  return reduce_loss(clamp(margins, 0.0, std::nullopt), options.reduction);
}

// PyTorch's Python composite (torch.nn.functional): its checks, then the distance function's
// results as they are (dtype included: nothing is cast, the function decides; the default's
// pairwise_distance computes as norm does, in float32 for 16-bit inputs under autocast).
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         TripletMarginWithDistanceLossOptions options, Where where) {
  CallSiteScope site(where);
  const char* function = "triplet_margin_with_distance_loss";
  check_reduction(function, options.reduction);
  check(options.margin > 0, "{}: expected margin to be greater than 0, got {} instead", function, options.margin);
  check_defined(function, "anchor", anchor);
  check_defined(function, "positive", positive);
  check_defined(function, "negative", negative);
  check(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
        "{}: the anchor, positive, and negative tensors are expected to have the same number of dimensions, but "
        "got: anchor {}D, positive {}D, and negative {}D inputs",
        function, anchor.dim(), positive.dim(), negative.dim());
  const auto distance = [&](const Tensor& x1, const Tensor& x2) {
    return options.distance_function ? options.distance_function(x1, x2) : pairwise_distance(x1, x2);
  };
  const Tensor to_positive = distance(anchor, positive);
  Tensor to_negative = distance(anchor, negative);
  if (options.swap) to_negative = minimum(to_negative, distance(positive, negative));
  const Tensor margins = sub(add(to_positive, options.margin), to_negative);
  return reduce_loss(clamp(margins, 0.0, std::nullopt), options.reduction);
}

}  // namespace ember
