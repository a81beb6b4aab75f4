// matrix_power (negative powers through linalg::inv), addmv, addbmm, baddbmm, linalg_multi_dot and chain_matmul
// (runtime/functional_math_extra.h) from matmul, mm, bmm, mul and add, multiplied in the order
// torch multiplies, so the results round as torch's do up to the GEMM's own summation order.
#include <cmath>
#include <limits>

#include "runtime/functional.h"
#include "runtime/linalg.h"

namespace ember {

namespace {

// torch refuses a fractional beta or alpha for integer tensors (it would be truncated).
void check_scalars(const char* function, DType dtype, double beta, double alpha) {
  if (is_floating(dtype)) return;
  check(std::isfinite(beta) && beta == std::trunc(beta),
        "{}: For integral input tensors, argument beta must not be a floating point number, got {}", function, beta);
  check(std::isfinite(alpha) && alpha == std::trunc(alpha),
        "{}: For integral input tensors, argument alpha must not be a floating point number, got {}", function, alpha);
}

void check_one_dtype(const char* function, const Tensor& input, const Tensor& a, const Tensor& b) {
  check(input.dtype() == a.dtype() && a.dtype() == b.dtype(),
        "{}: expected input, and both operands of one dtype, got {}, {} and {}", function, input.dtype(), a.dtype(),
        b.dtype());
}

// beta input + alpha product, input broadcast to the product's shape; input unread when beta is 0
// (its NaN and inf do not reach the result, as torch documents). A factor of 1 is not multiplied.
Tensor scaled_sum(const Tensor& input, const Tensor& product, double beta, double alpha) {
  const Tensor scaled_product = alpha == 1.0 ? product : mul(product, alpha);
  if (beta == 0.0) return scaled_product;
  return add(beta == 1.0 ? input : mul(input, beta), scaled_product);
}

void check_broadcasts(const char* function, const Tensor& input, const Dims& target, const Tensor& a, const Tensor& b) {
  bool fits = input.dim() <= target.size();
  for (int i = 1; fits && i <= input.dim(); ++i) {
    const int64_t size = input.size(input.dim() - i);
    fits = size == 1 || size == target[target.size() - i];
  }
  check(fits, "{}: input of shape {} does not broadcast to the product's shape {} (operands {} and {})", function,
        input.sizes(), target, a.sizes(), b.sizes());
}

// The multiplication order of torch's multi_dot for 3 or more matrices with dims p[0] .. p[n]
// (matrix i is p[i] x p[i + 1]): split[i][j] is where the product of i..j splits.
std::vector<std::vector<size_t>> chain_order(const std::vector<int64_t>& p) {
  const size_t n = p.size() - 1;
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t length = 1; length < n; ++length) {
    for (size_t i = 0; i + length < n; ++i) {
      const size_t j = i + length;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t k = i; k < j; ++k) {
        const int64_t q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1];
        if (q < cost[i][j]) {  // strict: the first split of least cost, as torch
          cost[i][j] = q;
          split[i][j] = k;
        }
      }
    }
  }
  return split;
}

Tensor multiply_in_order(const std::vector<Tensor>& m, const std::vector<std::vector<size_t>>& split, size_t i,
                         size_t j) {
  if (i == j) return m[i];
  const size_t k = split[i][j];
  return mm(multiply_in_order(m, split, i, k), multiply_in_order(m, split, k + 1, j));
}

Tensor multi_dot_of(std::vector<Tensor> m, const char* function) {
  const size_t n = m.size();
  const bool row_first = m[0].dim() == 1, column_last = m[n - 1].dim() == 1;
  if (row_first) m[0] = unsqueeze(m[0], 0);
  if (column_last) m[n - 1] = unsqueeze(m[n - 1], 1);
  for (size_t i = 0; i < n; ++i) {
    check(m[i].dim() == 2, "{}: tensor {} must be 2D but got {}D (shape {})", function, i, m[i].dim(), m[i].sizes());
    check(m[i].dtype() == m[0].dtype(),
          "{}: all tensors must have be the same dtype but tensor 0 is {} and tensor {} is {}", function, m[0].dtype(),
          i, m[i].dtype());
    // Not folded into the check's condition: its message arguments are evaluated either way.
    if (i > 0)
      check(m[i - 1].size(1) == m[i].size(0), "{}: tensors {} and {} with shapes {} and {} cannot be multiplied",
            function, i - 1, i, m[i - 1].sizes(), m[i].sizes());
  }
  Tensor result;
  if (n == 2) {
    result = mm(m[0], m[1]);
  } else if (n == 3) {
    // torch's own rule for three: (AB)C unless it costs strictly more than A(BC).
    const int64_t a = m[0].size(0), b = m[1].size(0), c = m[2].size(0), d = m[2].size(1);
    const int64_t cost_left = a * c * (b + d), cost_right = b * d * (a + c);
    result = cost_left > cost_right ? mm(m[0], mm(m[1], m[2])) : mm(mm(m[0], m[1]), m[2]);
  } else {
    std::vector<int64_t> p{m[0].size(0)};
    for (const Tensor& matrix : m) p.push_back(matrix.size(1));
    result = multiply_in_order(m, chain_order(p), 0, n - 1);
  }
  if (row_first) result = squeeze(result, 0);
  if (column_last) result = squeeze(result, -1);
  return result;
}

}  // namespace

Tensor matrix_power(const Tensor& a, int64_t k, Where where) {
  CallSiteScope site(where);
  check(a.dim() >= 2 && a.size(-1) == a.size(-2),
        "linalg.matrix_power: A must be batches of square matrices, but they are {} matrices (shape {})",
        a.dim() >= 2 ? fmt::format("{} by {}", a.size(-2), a.size(-1)) : std::string("not"), a.sizes());
  // A negative power is the power of the inverse, as torch (a singular A throws linalg.inv's error).
  if (k < 0) return matrix_power(linalg::inv(a), -k);
  if (k == 0) {
    const int64_t n = a.size(-1);
    return contiguous(expand(eye(n, {.dtype = a.dtype(), .device = a.device()}), a.sizes()));
  }
  if (k == 1) return clone(a);
  if (k == 2) return matmul(a, a);
  if (k == 3) return matmul(matmul(a, a), a);
  // Binary powers of a, multiplied into the result from the lowest bit up, as torch does.
  Tensor power, result;
  for (int64_t rest = k; rest > 0; rest /= 2) {
    power = power.defined() ? matmul(power, power) : a;
    if (rest % 2 == 1) result = result.defined() ? matmul(result, power) : power;
  }
  return result;
}

Tensor addmv(const Tensor& input, const Tensor& mat, const Tensor& vec, double beta, double alpha, Where where) {
  CallSiteScope site(where);
  check(mat.dim() == 2 && vec.dim() == 1 && input.dim() <= 1,
        "addmv: vector + matrix @ vector expected, got {}, {}, {} dims (shapes {}, {}, {})", input.dim(), mat.dim(),
        vec.dim(), input.sizes(), mat.sizes(), vec.sizes());
  check(mat.size(1) == vec.size(0), "addmv: size mismatch, got input ({}), mat ({}x{}), vec ({})", input.sizes(),
        mat.size(0), mat.size(1), vec.size(0));
  check_one_dtype("addmv", input, mat, vec);
  check_scalars("addmv", input.dtype(), beta, alpha);
  check_broadcasts("addmv", input, {mat.size(0)}, mat, vec);
  return scaled_sum(input, matmul(mat, vec), beta, alpha);
}

Tensor addbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, double beta, double alpha, Where where) {
  CallSiteScope site(where);
  check(batch1.dim() == 3, "addbmm: batch1 must be a 3D tensor, got shape {}", batch1.sizes());
  check(batch2.dim() == 3, "addbmm: batch2 must be a 3D tensor, got shape {}", batch2.sizes());
  check(batch1.size(0) == batch2.size(0), "addbmm: batch1 and batch2 must have same number of batches, got {} and {}",
        batch1.size(0), batch2.size(0));
  check(batch1.size(2) == batch2.size(1), "addbmm: Incompatible matrix sizes for bmm ({}x{} and {}x{})", batch1.size(1),
        batch1.size(2), batch2.size(1), batch2.size(2));
  check_one_dtype("addbmm", input, batch1, batch2);
  check_scalars("addbmm", input.dtype(), beta, alpha);
  const int64_t batches = batch1.size(0), n = batch1.size(1), m = batch1.size(2), p = batch2.size(2);
  check_broadcasts("addbmm", input, {n, p}, batch1, batch2);
  // sum_b batch1[b] @ batch2[b] is one [n, B m] @ [B m, p] product.
  const Tensor left = reshape(permute(batch1, {1, 0, 2}), {n, batches * m});
  return scaled_sum(input, mm(left, reshape(batch2, {batches * m, p})), beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& batch1, const Tensor& batch2, double beta, double alpha,
               Where where) {
  CallSiteScope site(where);
  check(batch1.dim() == 3, "baddbmm: batch1 must be a 3D tensor, got shape {}", batch1.sizes());
  check(batch2.dim() == 3, "baddbmm: batch2 must be a 3D tensor, got shape {}", batch2.sizes());
  check(batch1.size(0) == batch2.size(0), "baddbmm: batch1 and batch2 must have same number of batches, got {} and {}",
        batch1.size(0), batch2.size(0));
  check(batch1.size(2) == batch2.size(1), "baddbmm: Incompatible matrix sizes for bmm ({}x{} and {}x{})",
        batch1.size(1), batch1.size(2), batch2.size(1), batch2.size(2));
  check_one_dtype("baddbmm", input, batch1, batch2);
  check_scalars("baddbmm", input.dtype(), beta, alpha);
  check_broadcasts("baddbmm", input, {batch1.size(0), batch1.size(1), batch2.size(2)}, batch1, batch2);
  return scaled_sum(input, bmm(batch1, batch2), beta, alpha);
}

Tensor linalg_multi_dot(const std::vector<Tensor>& tensors, Where where) {
  CallSiteScope site(where);
  check(tensors.size() >= 2, "multi_dot(): expected at least 2 tensors but got {}", tensors.size());
  for (size_t i = 1; i + 1 < tensors.size(); ++i)
    check(tensors[i].dim() == 2, "multi_dot(): tensor {} must be 2D but got {}D (shape {})", i, tensors[i].dim(),
          tensors[i].sizes());
  for (const size_t i : {size_t{0}, tensors.size() - 1})
    check(tensors[i].dim() == 1 || tensors[i].dim() == 2,
          "multi_dot(): {} tensor must be 1D or 2D but got {}D (shape {})", i == 0 ? "the first" : "the last",
          tensors[i].dim(), tensors[i].sizes());
  return multi_dot_of(tensors, "multi_dot()");
}

Tensor chain_matmul(const std::vector<Tensor>& matrices, Where where) {
  CallSiteScope site(where);
  check(!matrices.empty(), "chain_matmul(): Expected one or more matrices");
  for (size_t i = 0; i < matrices.size(); ++i)
    check(matrices[i].dim() == 2, "chain_matmul(): Tensor dimension is {}, expected 2 instead (matrix {}, shape {})",
          matrices[i].dim(), i, matrices[i].sizes());
  if (matrices.size() == 1) return clone(matrices[0]);
  return multi_dot_of(matrices, "chain_matmul()");
}

}  // namespace ember
