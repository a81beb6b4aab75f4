// Building blocks for float64 references: broadcasting, reductions over dims, functions along a
// dim and shape variants. Plain loops over std::vector<double>; nothing here calls an ember op.
#pragma once

#include <functional>
#include <vector>

#include "harness.h"

namespace conformance {

// Row-major index arithmetic.
std::vector<int64_t> unravel(int64_t flat, const Dims& sizes);
int64_t ravel(const std::vector<int64_t>& index, const Dims& sizes);
int wrap(int64_t dim, int rank);  // Python-style negative dims

// NumPy broadcasting of two shapes, and the element of `input` that broadcasts to `out_flat`.
Dims broadcast(const Dims& a, const Dims& b);
double broadcast_at(const RefTensor& input, const Dims& out_sizes, int64_t out_flat);

RefTensor filled(const Dims& sizes, double value, std::optional<DType> dtype = {});
RefTensor unary(const RefTensor& a, const std::function<double(double)>& fn, std::optional<DType> dtype = {});
RefTensor binary(const RefTensor& a, const RefTensor& b, const std::function<double(double, double)>& fn,
                 std::optional<DType> dtype = {});

// Reduces `dims` (empty: all) of `a`: `fn` receives each group's elements in row-major order.
RefTensor reduce(const RefTensor& a, const Dims& dims, bool keepdim,
                 const std::function<double(const std::vector<double>&)>& fn, std::optional<DType> dtype = {});
// Applies `fn` to every 1-D slice of `a` along `dim` (softmax, log_softmax).
RefTensor along(const RefTensor& a, int64_t dim,
                const std::function<std::vector<double>(const std::vector<double>&)>& fn);

// Reductions as group functions.
double sum_of(const std::vector<double>& values);
double mean_of(const std::vector<double>& values);
double max_of(const std::vector<double>& values);
double min_of(const std::vector<double>& values);

// Shape variants a family runs each op on: contiguous, transposed, strided with an offset,
// expanded (stride 0), size-0, size-1, 0-d and one large enough for the parallel path.
struct Variant {
  const char* label;
  std::vector<InputSpec> inputs;
  bool gradcheck = true;  // false for the large variant (finite differences cost 2 calls per element)
};
std::vector<Variant> unary_variants(const Domain& domain);
std::vector<Variant> binary_variants(const Domain& a, const Domain& b);

// A row of the pointwise tables of one input (cases_unary.cpp, cases_math.cpp): the op, its
// float64 math and the domain its inputs are drawn from.
struct UnaryOp {
  const char* op;
  double (*math)(double);
  Domain domain;
};

}  // namespace conformance
