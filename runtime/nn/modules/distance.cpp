// nn::CosineSimilarity and nn::PairwiseDistance: each forwards its options to its function.
#include "runtime/nn/modules/distance.h"

#include "runtime/functional.h"
#include "runtime/functional_losses_more.h"

namespace ember::nn {

Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2, Where where) {
  return cosine_similarity(x1, x2, options_.dim, options_.eps, where);
}

Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2, Where where) {
  return pairwise_distance(x1, x2, options_.p, options_.eps, options_.keepdim, where);
}

}  // namespace ember::nn
