// Type promotion.
#include "runtime/dtype.h"

namespace ember {

namespace {
int rank(DType dtype) {  // position on the promotion lattice
  switch (dtype) {
    case DType::Bool: return 0;
    case DType::Int32: return 1;
    case DType::Int64: return 2;
    case DType::BFloat16: case DType::Float16: return 3;
    case DType::Float32: return 4;
    case DType::Float64: return 5;
  }
  return 0;
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if ((a == DType::BFloat16 && b == DType::Float16) || (a == DType::Float16 && b == DType::BFloat16))
    return DType::Float32;
  return rank(a) >= rank(b) ? a : b;
}

namespace {
int category(DType dtype) { return dtype == DType::Bool ? 0 : is_floating(dtype) ? 2 : 1; }
}  // namespace

DType result_type(DType a, bool a_is_0d, DType b, bool b_is_0d) {
  if (a_is_0d == b_is_0d) return promote_types(a, b);
  const DType with_dims = a_is_0d ? b : a;
  const DType zero_dim = a_is_0d ? a : b;
  return category(zero_dim) > category(with_dims) ? promote_types(with_dims, zero_dim) : with_dims;
}

}  // namespace ember
