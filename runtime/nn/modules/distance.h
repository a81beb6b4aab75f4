// nn::CosineSimilarity and nn::PairwiseDistance (torch.nn's): modules over two inputs that hold
// their options and call cosine_similarity (runtime/functional.h) and pairwise_distance
// (runtime/functional_losses_more.h). Neither has parameters; both print as PyTorch's, with
// empty parentheses.
#pragma once

#include "runtime/nn/holder.h"

namespace ember::nn {

// PyTorch's defaults.
struct CosineSimilarityOptions {
  int64_t dim = 1;
  double eps = 1e-8;
};
struct PairwiseDistanceOptions {
  double p = 2.0;
  double eps = 1e-6;  // added to the differences
  bool keepdim = false;
};

class CosineSimilarityImpl : public Module {
 public:
  explicit CosineSimilarityImpl(CosineSimilarityOptions options = {})
      : Module("CosineSimilarity"), options_(options) {}
  // x1 and x2 broadcast together; the result drops dim.
  Tensor forward(const Tensor& x1, const Tensor& x2, Where where = Where::current());
  const CosineSimilarityOptions& options() const { return options_; }

 private:
  CosineSimilarityOptions options_;
};

class CosineSimilarity : public ModuleHolder<CosineSimilarityImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit CosineSimilarity(CosineSimilarityOptions options = {})
      : ModuleHolder(std::make_shared<CosineSimilarityImpl>(options)) {}
};

class PairwiseDistanceImpl : public Module {
 public:
  explicit PairwiseDistanceImpl(PairwiseDistanceOptions options = {})
      : Module("PairwiseDistance"), options_(options) {}
  // The p-norm of x1 - x2 + eps over the last dim.
  Tensor forward(const Tensor& x1, const Tensor& x2, Where where = Where::current());
  const PairwiseDistanceOptions& options() const { return options_; }

 private:
  PairwiseDistanceOptions options_;
};

class PairwiseDistance : public ModuleHolder<PairwiseDistanceImpl> {
 public:
  using ModuleHolder::ModuleHolder;
  explicit PairwiseDistance(PairwiseDistanceOptions options = {})
      : ModuleHolder(std::make_shared<PairwiseDistanceImpl>(options)) {}
};

}  // namespace ember::nn
