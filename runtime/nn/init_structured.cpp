// nn::init's structured initialisers: eye_, dirac_ and orthogonal_, with torch.nn.init's rules.
// orthogonal_ factors its normal draws on the host in float64 (Eigen's Householder QR); the result
// is made unique as PyTorch makes it, by the signs of R's diagonal, so any QR gives the same matrix.
// GCC 12's avx512fintrin.h initialises a variable with itself on purpose, and -Wmaybe-uninitialized
// reports it where Eigen's AVX-512 code is inlined (gemm_library.cpp says more).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/Dense>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/functional.h"
#include "runtime/nn/init.h"

namespace ember::nn::init {

namespace {

// Writes `values` into `tensor` without recording autograd (parameters are leaves that require grad).
void write(Tensor& tensor, const Tensor& values) {
  NoGradGuard no_grad;
  tensor.copy_(values);
}

// `rows` x `columns` values (row-major) as a float64 CPU tensor.
Tensor host_matrix(const std::vector<double>& values, int64_t rows, int64_t columns) {
  return from_vector<double>(values, {rows, columns}, {.dtype = kFloat64});
}

}  // namespace

Tensor eye_(Tensor tensor, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "nn::init::eye_: undefined tensor");
  check(tensor.dim() == 2, "nn::init::eye_: only tensors with 2 dimensions are supported, got shape {}",
        tensor.sizes());
  const int64_t rows = tensor.size(0), columns = tensor.size(1);
  std::vector<double> values(static_cast<size_t>(rows * columns), 0.0);
  for (int64_t i = 0; i < std::min(rows, columns); ++i) values[static_cast<size_t>(i * columns + i)] = 1.0;
  write(tensor, host_matrix(values, rows, columns));
  return tensor;
}

Tensor dirac_(Tensor tensor, int64_t groups, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "nn::init::dirac_: undefined tensor");
  check(tensor.dim() >= 3 && tensor.dim() <= 5,
        "nn::init::dirac_: only tensors with 3, 4, or 5 dimensions are supported, got shape {}", tensor.sizes());
  check(groups > 0 && tensor.size(0) % groups == 0,
        "nn::init::dirac_: dim 0 ({}) must be divisible by groups ({}), got shape {}", tensor.size(0), groups,
        tensor.sizes());
  // A 1 at the kernel's centre (size // 2 in each spatial dim) for output channel g * out_per_group
  // + d and input channel d, d < min(out_per_group, in_channels): a convolution with "same" padding
  // then passes its input through.
  const int64_t out_per_group = tensor.size(0) / groups;
  const int64_t diagonal = std::min(out_per_group, tensor.size(1));
  const Dims& sizes = tensor.sizes();
  int64_t taps = 1, centre = 0;
  for (int d = 2; d < tensor.dim(); ++d) {
    centre = centre * sizes[d] + sizes[d] / 2;
    taps *= sizes[d];
  }
  std::vector<double> values(static_cast<size_t>(sizes.product()), 0.0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t d = 0; d < diagonal; ++d)
      values[static_cast<size_t>(((g * out_per_group + d) * sizes[1] + d) * taps + centre)] = 1.0;
  write(tensor, from_vector<double>(values, sizes, {.dtype = kFloat64}));
  return tensor;
}

Tensor orthogonal_(Tensor tensor, double gain, Generator* generator, Where where) {
  CallSiteScope site(where);
  check(tensor.defined(), "nn::init::orthogonal_: undefined tensor");
  check(tensor.dim() >= 2, "nn::init::orthogonal_: only tensors with 2 or more dimensions are supported, got shape {}",
        tensor.sizes());
  check(tensor.is_floating_point(), "nn::init::orthogonal_: expected a floating-point tensor, got {}", tensor.dtype());
  if (tensor.numel() == 0) return tensor;  // as PyTorch's: nothing to fill
  const int64_t rows = tensor.size(0), columns = tensor.numel() / rows;
  // PyTorch's order: N(0, 1) draws [rows, columns] on the tensor's device, transposed when wide,
  // so that the factored matrix is tall.
  Tensor draws = empty({rows, columns}, {.dtype = kFloat64, .device = tensor.device()});
  normal_(draws, 0.0, 1.0, generator);
  const std::vector<double> host = draws.to(kCPU).contiguous().to_vector<double>();
  const bool wide = rows < columns;
  const int64_t tall_rows = wide ? columns : rows, tall_columns = wide ? rows : columns;
  Eigen::MatrixXd matrix(tall_rows, tall_columns);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j) {
      const double value = host[static_cast<size_t>(i * columns + j)];
      if (wide) {
        matrix(j, i) = value;
      } else {
        matrix(i, j) = value;
      }
    }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(matrix);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(tall_rows, tall_columns);
  const Eigen::MatrixXd r = qr.matrixQR().topRows(tall_columns).triangularView<Eigen::Upper>();
  for (int64_t k = 0; k < tall_columns; ++k) {
    const double diagonal = r(k, k);
    const double sign = diagonal > 0.0 ? 1.0 : (diagonal < 0.0 ? -1.0 : 0.0);  // torch.sign: 0 stays 0
    q.col(k) *= sign;
  }
  std::vector<double> values(static_cast<size_t>(rows * columns));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j) values[static_cast<size_t>(i * columns + j)] = wide ? q(j, i) : q(i, j);
  write(tensor, reshape(host_matrix(values, rows, columns), tensor.sizes()));
  NoGradGuard no_grad;
  tensor.mul_(gain);  // after the copy, as PyTorch's: one rounding there, another here
  return tensor;
}

}  // namespace ember::nn::init
