// Tensor methods for the values-and-indices functions: max / min along a dim
// (functional_reductions.cpp) and sort, argsort, topk, kthvalue (runtime/functional_sort.h).
#include "runtime/functional.h"

namespace ember {

std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim, Where where) const {
  return ember::max(*this, dim, keepdim, where);
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim, Where where) const {
  return ember::min(*this, dim, keepdim, where);
}
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable, Where where) const {
  return ember::sort(*this, dim, descending, stable, where);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable, Where where) const {
  return ember::argsort(*this, dim, descending, stable, where);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted, Where where) const {
  return ember::topk(*this, k, dim, largest, sorted, where);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim, Where where) const {
  return ember::kthvalue(*this, k, dim, keepdim, where);
}

}  // namespace ember
