// PyTorch's margin, multi-class margin, embedding and likelihood losses (torch.nn.functional's),
// composites of registry ops as the other composite losses are, so autograd, CUDA, autocast
// (their 16-bit inputs computed in float32, PyTorch's float32 list) and capture come with them.
// Options structs are shared with the loss modules of the same names
// (runtime/nn/modules/loss_more.h).
#pragma once

#include <functional>
#include <vector>

#include "runtime/functional.h"

namespace ember {

struct MarginRankingLossOptions {
  double margin = 0.0;
  Reduction reduction = Reduction::Mean;
};
struct HingeEmbeddingLossOptions {
  double margin = 1.0;
  Reduction reduction = Reduction::Mean;
};
struct SoftMarginLossOptions {
  Reduction reduction = Reduction::Mean;
};
struct MultilabelSoftMarginLossOptions {
  Tensor weight = {};  // [C] per-class weights, or undefined
  Reduction reduction = Reduction::Mean;
};
struct MultiMarginLossOptions {
  int64_t p = 1;       // 1 or 2: the power of each margin violation
  double margin = 1.0;
  Tensor weight = {};  // [C] weights of the target classes, or undefined
  Reduction reduction = Reduction::Mean;
};
struct MultilabelMarginLossOptions {
  Reduction reduction = Reduction::Mean;
};
struct CosineEmbeddingLossOptions {
  double margin = 0.0;
  Reduction reduction = Reduction::Mean;
};
struct TripletMarginLossOptions {
  double margin = 1.0;
  double p = 2.0;       // the norm of the distances
  double eps = 1e-6;    // added to the differences, as pairwise_distance does
  bool swap = false;    // the negative's distance is the smaller of anchor's and positive's
  Reduction reduction = Reduction::Mean;
};
struct TripletMarginWithDistanceLossOptions {
  // d(x1, x2) -> the distances of the rows; empty: pairwise_distance with its defaults (p = 2,
  // eps = 1e-6), PyTorch's default.
  std::function<Tensor(const Tensor&, const Tensor&)> distance_function = {};
  double margin = 1.0;
  bool swap = false;  // the negative's distance is the smaller of anchor's and positive's
  Reduction reduction = Reduction::Mean;
};
struct CTCLossOptions {
  int64_t blank = 0;  // the blank class
  // Mean: each sequence's loss divided by its target length (at least 1), then the batch's mean.
  Reduction reduction = Reduction::Mean;
  bool zero_infinity = false;  // an impossible alignment (infinite loss) gives 0 and a zero gradient
};
struct PoissonNLLLossOptions {
  bool log_input = true;  // input holds log(rate)
  bool full = false;      // add Stirling's approximation of log(target!) where target > 1
  double eps = 1e-8;      // log(input + eps) when log_input is false
  Reduction reduction = Reduction::Mean;
};
struct GaussianNLLLossOptions {
  bool full = false;  // add 0.5 log(2 pi)
  double eps = 1e-6;  // variances below eps count as eps (their gradient passes as if not clamped)
  Reduction reduction = Reduction::Mean;
};

// max(0, -y (x1 - x2) + margin), y = 1 or -1 (not bool: it is negated); the three tensors have
// one number of dims and broadcast together.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           MarginRankingLossOptions options = {}, Where where = Where::current());
// x where y = 1, max(0, margin - x) where y = -1 (a target of neither adds both, as PyTorch's).
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, HingeEmbeddingLossOptions options = {},
                            Where where = Where::current());
// log(1 + exp(-y x)), computed so that it never overflows; y broadcasts to x, and the losses
// have x's shape and dtype (PyTorch computes in place in a copy of x).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, SoftMarginLossOptions options = {},
                        Where where = Where::current());
// Per sample of input [..., C] and a target (and weight) broadcasting with it: the mean over the
// input's last dim of -w (y log sigmoid(x) + (1 - y) log sigmoid(-x)); None gives [...].
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   MultilabelSoftMarginLossOptions options = {}, Where where = Where::current());
// For input [N, C] (or [C], or 0-d as one class) and class indices target [N] (0-d for one
// sample): per sample sum over i != y of w[y] max(0, margin - x[y] + x[i])^p / C, a term counted
// where its violation is above 0 as in PyTorch's kernel (a NaN one adds nothing). None gives the
// target's shape. An index outside [0, C) is an error (on the CPU outside compile with this
// function's name; elsewhere gather's check reports it).
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, MultiMarginLossOptions options = {},
                         Where where = Where::current());
// For input [N, C] (or [C], or 0-d) and a target of the same shape (any 0-d or 1-d one of C
// entries for a 0-d or 1-d input) listing each sample's classes up to its first -1: per sample
// sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])) / C, a class listed twice counted
// twice as in PyTorch's kernel. None gives [N] (0-d for a 0-d or [C] input). Entries outside
// [-1, C) are errors (checked where multi_margin_loss's are). Costs O(N C^2) memory, as the
// kernel's O(N C^2) time.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, MultilabelMarginLossOptions options = {},
                              Where where = Where::current());
// For rows x1, x2 of [N, D] with target [N] (or [D] with a 0-d target): 1 - cos(x1, x2) where
// y = 1, max(0, cos(x1, x2) - margin) where y = -1; cos = x1.x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12)).
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             CosineEmbeddingLossOptions options = {}, Where where = Where::current());
// The p-norm of x1 - x2 + eps over the last dim (PyTorch's pairwise_distance; two 0-d tensors
// give |x1 - x2 + eps|).
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false,
                         Where where = Where::current());
// max(0, margin + d(anchor, positive) - d(anchor, negative)), d = pairwise_distance; the three
// tensors have one number of dims.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           TripletMarginLossOptions options = {}, Where where = Where::current());
// max(0, margin + d(anchor, positive) - d(anchor, negative)) for any distance function d; the
// three tensors have one number of dims.
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         TripletMarginWithDistanceLossOptions options = {},
                                         Where where = Where::current());
// Connectionist temporal classification: -log of the total probability of every alignment of
// the target to the input. log_probs [T, N, C] (log_softmax outputs; [T, C] for one sequence),
// targets [N, S] padded or 1-D with the N targets concatenated (class indices, not the blank),
// input_lengths and target_lengths [N] (0-d for one sequence). A loss per sequence with
// Reduction::None.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, CTCLossOptions options = {}, Where where = Where::current());
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, CTCLossOptions options = {},
                Where where = Where::current());
// exp(x) - y x with log_input, else x - y log(x + eps); with full, Stirling's
// y log y - y + 0.5 log(2 pi y) where y > 1. The target may be integral (counts).
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, PoissonNLLLossOptions options = {},
                        Where where = Where::current());
// 0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps)) (+ 0.5 log(2 pi) with full); the target
// may be integral. var has the input's shape, or it without the last dim, or that with a last
// dim of 1 (one variance per sample);
// negative variances are errors (checked on the CPU outside compile, as binary_cross_entropy's range).
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         GaussianNLLLossOptions options = {}, Where where = Where::current());

}  // namespace ember
