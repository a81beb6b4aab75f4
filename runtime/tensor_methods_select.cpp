// Tensor's methods for the ops whose result's shape depends on the values (runtime/functional_select.h):
// each calls the function of the same name.
#include "runtime/functional.h"

namespace ember {

Tensor Tensor::nonzero(Where where) const { return ember::nonzero(*this, where); }
Tensor Tensor::argwhere(Where where) const { return ember::argwhere(*this, where); }
Tensor Tensor::masked_select(const Tensor& mask, Where where) const { return ember::masked_select(*this, mask, where); }
std::tuple<Tensor, Tensor, Tensor> Tensor::unique(bool sorted, bool return_inverse, bool return_counts,
                                                  std::optional<int64_t> dim, Where where) const {
  return ember::unique(*this, sorted, return_inverse, return_counts, dim, where);
}
std::tuple<Tensor, Tensor, Tensor> Tensor::unique_consecutive(bool return_inverse, bool return_counts,
                                                              std::optional<int64_t> dim, Where where) const {
  return ember::unique_consecutive(*this, return_inverse, return_counts, dim, where);
}
Tensor Tensor::bincount(const Tensor& weights, int64_t minlength, Where where) const {
  return ember::bincount(*this, weights, minlength, where);
}

}  // namespace ember
