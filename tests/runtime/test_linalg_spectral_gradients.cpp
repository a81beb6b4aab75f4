// Gradients of the spectral linear-algebra functions against central finite differences in
// float64, on well-conditioned inputs with distinct eigen / singular values. Decompositions are
// unique only up to the signs of their vectors, so each check differentiates a sign-free quantity
// (Q with R's diagonal made positive, V diag(c) V^T, U diag(c) Vh); the CUDA == CPU cases compare
// the same quantities.
#include <doctest/doctest.h>

#include "error_of.h"
#include "linalg_spectral_reference.h"
#include "runtime/ember.h"
#include "runtime/linalg_spectral.h"
#include "skip_case.h"

namespace test_linalg_spectral_gradients {

using namespace ember;
using namespace ember::testing;

namespace {

Tensor flat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flattened;
  for (const Tensor& part : parts) flattened.push_back(part.reshape({-1}));
  return cat(flattened, 0);
}

// Q and R with R's diagonal made positive: the unique QR of a full-rank A. sign() is locally
// constant, so it does not change the derivative.
std::vector<Tensor> unique_qr(const Tensor& a, std::string_view mode = "reduced") {
  const auto [q, r] = linalg::qr(a, mode);
  const int64_t k = std::min(q.sizes()[q.dim() - 1], r.sizes()[r.dim() - 2]);
  const Tensor signs = sign(diagonal(r, 0, -2, -1)).detach();
  const Tensor q_signed = q.narrow(-1, 0, k) * signs.unsqueeze(-2);
  const Tensor r_signed = r.narrow(-2, 0, k) * signs.unsqueeze(-1);
  return {q_signed, r_signed};
}

// Fixed distinct weights 1, 2, ..., k for sign-free products of the singular / eigen vectors.
Tensor weights(int64_t k) { return arange(1.0, static_cast<double>(k) + 1.0, 1.0, {.dtype = kFloat64}); }

std::vector<Tensor> invariant_eigh(const Tensor& a, std::string_view uplo = "L") {
  const Tensor symmetric = a + a.transpose(-2, -1);  // eigh reads one triangle: perturb both
  const auto [w, v] = linalg::eigh(symmetric, uplo);
  const int64_t n = w.sizes()[w.dim() - 1];
  return {w, matmul(v * weights(n).unsqueeze(-2), v.transpose(-2, -1))};
}

std::vector<Tensor> invariant_svd(const Tensor& a, bool full) {
  const auto [u, s, vh] = linalg::svd(a, full);
  const int64_t k = s.sizes()[s.dim() - 1];
  const Tensor uk = u.narrow(-1, 0, k), vk = vh.narrow(-2, 0, k);
  return {s, matmul(uk * weights(k).unsqueeze(-2), vk), matmul(uk * weights(k).unsqueeze(-2), uk.transpose(-2, -1)),
          matmul(vk.transpose(-2, -1) * weights(k).unsqueeze(-2), vk)};
}

}  // namespace

TEST_CASE("linalg::qr gradients match finite differences: tall, square, wide, complete square, batched") {
  for (const Dims& sizes : {Dims{5, 3}, Dims{4, 4}, Dims{3, 5}, Dims{2, 4, 3}}) {
    INFO("shape ", sizes);
    gradcheck_leaves([](const std::vector<Tensor>& in) { return flat(unique_qr(in[0])); }, {leaf(sizes, 2)});
  }
  gradcheck_leaves([](const std::vector<Tensor>& in) { return flat(unique_qr(in[0], "complete")); }, {leaf({4, 4}, 4)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return flat(unique_qr(in[0], "complete")); }, {leaf({3, 5}, 6)});
  // Only R (Q's gradient undefined) and only Q.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return unique_qr(in[0])[1]; }, {leaf({5, 3}, 8)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return unique_qr(in[0])[0]; }, {leaf({3, 5}, 10)});
}

TEST_CASE("linalg::qr refuses the gradients PyTorch refuses: mode 'r' and complete with m > n") {
  const Tensor a = leaf({5, 3}, 12);
  const Tensor r_only = std::get<1>(linalg::qr(a, "r"));
  CHECK(error_of([&] { r_only.sum().backward(); }).find("which is not computed when mode='r'") != std::string::npos);
  const Tensor q_complete = std::get<0>(linalg::qr(a, "complete"));
  CHECK(error_of([&] {
          q_complete.sum().backward();
        }).find("not differentiable when mode='complete' and nrows > ncols") != std::string::npos);
}

TEST_CASE("linalg::eigh and eigvalsh gradients match finite differences, from either triangle and batched") {
  for (std::string_view uplo : {"L", "U"})
    gradcheck_leaves([uplo](const std::vector<Tensor>& in) { return flat(invariant_eigh(in[0], uplo)); },
                     {leaf({4, 4}, 14)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return flat(invariant_eigh(in[0])); }, {leaf({2, 3, 3}, 16)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return invariant_eigh(in[0])[1]; }, {leaf({3, 3}, 18)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return linalg::eigvalsh(in[0] + in[0].transpose(0, 1)); },
            {leaf({4, 4}, 20)});
}

TEST_CASE("linalg::svd and svdvals gradients match finite differences: tall, wide, square, full_matrices, batched") {
  for (const Dims& sizes : {Dims{5, 3}, Dims{3, 5}, Dims{4, 4}, Dims{2, 4, 3}})
    for (bool full : {false, true}) {
      INFO("shape ", sizes, " full_matrices ", full);
      gradcheck_leaves([full](const std::vector<Tensor>& in) { return flat(invariant_svd(in[0], full)); },
                       {leaf(sizes, 22)});
    }
  // Vectors only on one side (gU or gVh undefined) and values only.
  gradcheck_leaves([](const std::vector<Tensor>& in) { return invariant_svd(in[0], false)[2]; }, {leaf({5, 3}, 24)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return invariant_svd(in[0], false)[3]; }, {leaf({3, 5}, 26)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return linalg::svdvals(in[0]); }, {leaf({3, 4, 2}, 28)});
}

TEST_CASE("pinv, matrix_norm, cond and lstsq differentiate through the decompositions") {
  gradcheck_leaves([](const std::vector<Tensor>& in) { return linalg::pinv(in[0]); }, {leaf({5, 3}, 30)});
  // hermitian reads one triangle, so its gradient holds along symmetric perturbations: perturb both.
  gradcheck_leaves(
      [](const std::vector<Tensor>& in) {
        return linalg::pinv(in[0] + in[0].transpose(0, 1), std::nullopt, std::nullopt, true);
      },
      {leaf({4, 4}, 32)}, 1e-5);
  for (const char* ord : {"fro", "nuc"})
    gradcheck_leaves([ord](const std::vector<Tensor>& in) { return linalg::matrix_norm(in[0], ord); },
                     {leaf({2, 4, 3}, 34)});
  for (double ord : std::vector<double>{2.0, -2.0, 1.0, -1.0, INFINITY, -INFINITY})
    gradcheck_leaves([ord](const std::vector<Tensor>& in) { return linalg::matrix_norm(in[0], ord); },
                     {leaf({3, 4}, 36)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return linalg::cond(in[0]); }, {leaf({4, 3}, 38)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return linalg::cond(in[0], 1.0); }, {leaf({3, 3}, 40)});
  gradcheck_leaves([](const std::vector<Tensor>& in) { return std::get<0>(linalg::lstsq(in[0], in[1])); },
            {leaf({6, 3}, 42), leaf({6, 2}, 44)});
}

TEST_CASE("CUDA: qr, eigh and svd match the CPU in sign-free quantities, float32 and float64, batched") {
  if (!cuda_or_skip()) return;
  const Device cuda{DeviceType::CUDA, 0};
  for (DType dtype : {kFloat64, kFloat32}) {
    const double tolerance = dtype == kFloat64 ? 1e-10 : 2e-4;
    for (const Dims& sizes : {Dims{2, 6, 4}, Dims{2, 4, 6}, Dims{5, 5}}) {
      INFO("dtype ", dtype, " shape ", sizes);
      const Tensor a = small_tensor(sizes, 46).to(dtype);
      const auto same = [&](const std::vector<Tensor>& cpu, const std::vector<Tensor>& gpu) {
        for (size_t i = 0; i < cpu.size(); ++i) {
          const std::vector<double> x = values_of(cpu[i]), y = values_of(gpu[i].to(kCPU));
          REQUIRE(x.size() == y.size());
          for (size_t e = 0; e < x.size(); ++e) CHECK(std::abs(x[e] - y[e]) < tolerance * (1 + std::abs(x[e])));
        }
      };
      for (std::string_view mode : {"reduced", "complete", "r"}) {
        const auto [q_cpu, r_cpu] = linalg::qr(a, mode);
        const auto [q_gpu, r_gpu] = linalg::qr(a.to(cuda), mode);
        same({abs(r_cpu)}, {abs(r_gpu)});
        if (mode != "r") same({matmul(q_gpu, r_gpu).to(kCPU)}, {a});
      }
      for (bool full : {true, false}) same(invariant_svd(a, full), invariant_svd(a.to(cuda), full));
      const Tensor square = a.narrow(-1, 0, std::min(sizes[sizes.size() - 1], sizes[sizes.size() - 2]))
                                .narrow(-2, 0, std::min(sizes[sizes.size() - 1], sizes[sizes.size() - 2]));
      for (std::string_view uplo : {"L", "U"})
        same(invariant_eigh(square, uplo), invariant_eigh(square.to(cuda), uplo));
    }
  }
}

}  // namespace test_linalg_spectral_gradients
