// Reduced-dim bookkeeping shared by the reduction shape rules and kernels.
#include "kernels/cpu/reduce_geometry.h"

namespace ember::cpu {

uint32_t reduce_mask(const Dims& dims, int rank, std::string_view op) {
  if (dims.empty()) return rank == 0 ? 0u : (1u << rank) - 1u;
  uint32_t mask = 0;
  for (int64_t dim : dims) {
    const int wrapped = wrap_dim(dim, rank, op);
    check(!(mask & (1u << wrapped)), "{}: dim {} appears more than once in dims {}", op, wrapped, dims);
    mask |= 1u << wrapped;
  }
  // A 0-d tensor accepts dim 0 / -1 but has nothing to reduce.
  return rank == 0 ? 0u : mask;
}

Dims reduced_sizes(const Dims& sizes, uint32_t mask, bool keepdim) {
  Dims result;
  for (int d = 0; d < sizes.size(); ++d) {
    if (!(mask & (1u << d))) {
      result.push_back(sizes[d]);
    } else if (keepdim) {
      result.push_back(1);
    }
  }
  return result;
}

void check_nonempty_reduction(const Dims& sizes, uint32_t mask, std::string_view op) {
  for (int d = 0; d < sizes.size(); ++d) {
    check(!(mask & (1u << d)) || sizes[d] != 0,
          "{}: cannot reduce over dim {} of size 0 (input shape {}): an empty set has no {}", op, d, sizes,
          op == "amin" || op == "argmin" ? "minimum" : "maximum");
  }
}

}  // namespace ember::cpu
