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

}  // namespace ember
