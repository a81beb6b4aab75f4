// CUDA reductions, softmax and losses against the CPU ops on what the conformance suite's small
// shapes never reach: split (two-pass) reductions, long rows (block-per-row kernels), reductions
// over non-adjacent dims, ties and NaN in argmax, bit-identical reruns, out-of-range targets.
// Without a GPU each case says why it is skipped and checks nothing.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/dispatch.h"
#include "runtime/ember.h"
#include "runtime/ops/registry.h"
#include "skip_case.h"

namespace test_cuda_reduce {

using namespace ember;

namespace {

const Device kCuda0{DeviceType::CUDA, 0};

std::vector<double> host_values(const Tensor& tensor) { return tensor.to(kCPU).to(kFloat64).to_vector<double>(); }

// The CUDA result equals the CPU result within rtol (exactly for rtol 0), element by element.
void check_close(const Tensor& cuda_result, const Tensor& cpu_result, double rtol, const std::string& what) {
  INFO(what);
  REQUIRE(cuda_result.device() == kCuda0);
  REQUIRE(cuda_result.sizes() == cpu_result.sizes());
  REQUIRE(cuda_result.dtype() == cpu_result.dtype());
  const std::vector<double> got = host_values(cuda_result);
  const std::vector<double> want = host_values(cpu_result);
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(got[i]), "element " << i);
    } else {
      CHECK_MESSAGE(std::abs(got[i] - want[i]) <= rtol * std::abs(want[i]) + rtol * 1e-3,
                    "element " << i << ": cuda " << got[i] << ", cpu " << want[i]);
    }
  }
}

Tensor random_cpu(const Dims& sizes, DType dtype = kFloat32) { return randn(sizes, {.device = kCPU}).to(dtype); }

}  // namespace

TEST_CASE("cuda reductions: split, long, permuted and 16-bit reductions match the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  struct Shape {
    Dims sizes;
    Dims dims;
  };
  const Shape shapes[] = {
      {{1 << 22}, {}},          // one output: split rows, two passes
      {{3, 5000}, {1}},         // a block per long row, split in two
      {{4096, 8}, {0}},         // columns, split
      {{6, 7, 8}, {0, 2}},      // non-adjacent dims: permuted copy
      {{300, 130}, {1}},        // a warp per short row
  };
  for (const Shape& shape : shapes) {
    for (DType dtype : {kFloat32, kFloat64, kBFloat16}) {
      const Tensor input = random_cpu(shape.sizes, dtype);
      const Tensor device_input = input.to(kCuda0);
      const double rtol = dtype == kBFloat16 ? 1e-2 : 1e-5;
      const std::string label = fmt::format("{} dims {} {}", shape.sizes, shape.dims, dtype);
      check_close(sum(device_input, shape.dims), sum(input, shape.dims), rtol, "sum " + label);
      check_close(mean(device_input, shape.dims, true), mean(input, shape.dims, true), rtol, "mean " + label);
      check_close(var(device_input, shape.dims, 1), var(input, shape.dims, 1), rtol, "var " + label);
      check_close(amax(device_input, shape.dims), amax(input, shape.dims), 0.0, "amax " + label);
      check_close(amin(device_input, shape.dims), amin(input, shape.dims), 0.0, "amin " + label);
    }
  }
  // Sums of float32 are bit-identical from run to run (no atomics, fixed combine order).
  const Tensor big = random_cpu({1 << 22}).to(kCuda0);
  CHECK(sum(big).to(kCPU).item() == sum(big).to(kCPU).item());
}

// var's moments are (count, mean, M2) merged pairwise; clamping a slightly negative M2 to 0 must
// not also turn the NaN of an inf or NaN input into 0 (or leave inf): the CPU gives NaN.
TEST_CASE("cuda var: an inf or NaN anywhere in a group gives NaN, as on the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor single = from_vector<float>({NAN, INFINITY, 1.0f}, {3, 1}, {.device = kCPU});
  check_close(var(single.to(kCuda0), {1}, 0), var(single, {1}, 0), 1e-6, "groups of one, correction 0");
  for (int64_t length : {16, 1000, 100000}) {  // one warp, one block, split over blocks
    std::vector<float> values(static_cast<size_t>(3 * length));
    for (int64_t i = 0; i < length; ++i)
      for (int64_t row = 0; row < 3; ++row) values[static_cast<size_t>(row * length + i)] = static_cast<float>(i % 15);
    values[static_cast<size_t>(length - 1)] = INFINITY;  // last of row 0
    values[static_cast<size_t>(length)] = -INFINITY;     // first of row 1
    values[static_cast<size_t>(2 * length + length / 2)] = NAN;  // middle of row 2
    const Tensor input = from_vector(values, {3, length}, {.device = kCPU});
    check_close(var(input.to(kCuda0), {1}), var(input, {1}), 1e-5, fmt::format("rows of {}", length));
  }
}

TEST_CASE("cuda argmax and argmin: ties pick the first index, NaN wins, on long inputs") {
  if (!ember::testing::cuda_or_skip()) return;
  // Few distinct values, so every group has many ties.
  const Tensor ties = randint(0, 4, {3, 70000}, {.dtype = kInt64, .device = kCPU}).to(kFloat32);
  const Tensor device_ties = ties.to(kCuda0);
  check_close(argmax(device_ties, 1), argmax(ties, 1), 0.0, "argmax dim 1 with ties");
  check_close(argmin(device_ties, 0), argmin(ties, 0), 0.0, "argmin dim 0 with ties");
  check_close(argmax(device_ties), argmax(ties), 0.0, "argmax flattened with ties");
  std::vector<float> values(200000, 1.0f);
  values[1234] = std::nanf("");
  values[150000] = std::nanf("");
  values[7] = 5.0f;
  const Tensor with_nan = from_vector(values, Dims{200000}, {.device = kCPU});
  CHECK(argmax(with_nan.to(kCuda0)).to(kCPU).item<int64_t>() == 1234);
  CHECK(argmin(with_nan.to(kCuda0)).to(kCPU).item<int64_t>() == 1234);
  CHECK(std::isnan(amax(with_nan.to(kCuda0)).to(kCPU).item()));
}

// Few long groups take the path that counts ties in shares (atomics into device scratch) before
// writing the gradient; the rest take the one-pass kernels. Both against the CPU op, with many
// ties (few distinct values) and a NaN result.
TEST_CASE("cuda extremum_backward: few long groups and many short ones, with ties and NaN, match the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  static const OpDef& backward_op = lookup_op("extremum_backward");
  struct Shape {
    Dims sizes;
    Dims dims;
  };
  const Shape shapes[] = {
      {{1 << 20}, {}},         // one output: shares of one contiguous group
      {{200000, 3}, {0}},      // three columns
      {{512, 2, 512}, {0, 2}},  // non-adjacent dims: permuted, two long groups
      {{3000, 40}, {1}},       // many short rows: one warp each
      {{40, 3000}, {0}},       // many columns: one thread each
  };
  for (const Shape& shape : shapes) {
    std::vector<float> values = randint(0, 5, shape.sizes, {.device = kCPU}).to(kFloat32).to_vector<float>();
    for (bool with_nan : {false, true}) {
      if (with_nan) values[17] = NAN;  // its group's result is NaN, and its gradient goes to the NaN alone
      for (DType dtype : {kFloat32, kBFloat16}) {
        const Tensor input = from_vector(values, shape.sizes, {.device = kCPU}).to(dtype);
        const std::string label = fmt::format("{} dims {} {}{}", shape.sizes, shape.dims, dtype, with_nan ? " NaN" : "");
        const Attrs attrs{{"dims", shape.dims}, {"keepdim", false}};
        const Tensor result = amax(input, shape.dims);
        const Tensor grad = randn(result.sizes(), {.device = kCPU}).to(dtype);
        check_close(dispatch_one(backward_op, {grad.to(kCuda0), input.to(kCuda0), result.to(kCuda0)}, attrs),
                    dispatch_one(backward_op, {grad, input, result}, attrs), dtype == kBFloat16 ? 1e-2 : 1e-6,
                    "extremum_backward " + label);
      }
    }
  }
}

// Along dim 1: rows (warp and block kernels, cached and uncached), then columns: [2, 300, 5] runs
// the column kernel, [3, 2000, 3] and [1, 5000, 2] (few long columns) run as rows after a swap.
TEST_CASE("cuda softmax: long rows (cached and uncached block kernels), columns, and their backward") {
  if (!ember::testing::cuda_or_skip()) return;
  static const OpDef& softmax_backward_op = lookup_op("softmax_backward");
  static const OpDef& log_softmax_backward_op = lookup_op("log_softmax_backward");
  for (const Dims& sizes : {Dims{64, 128}, Dims{5, 700}, Dims{7, 130}, Dims{4, 3000}, Dims{2, 12032}, Dims{2, 12288},
                            Dims{2, 20000}, Dims{2, 300, 5}, Dims{3, 2000, 3}, Dims{1, 5000, 2}}) {
    const int64_t dim = 1;
    const Tensor input = random_cpu(sizes);
    const Tensor grad = random_cpu(sizes);
    const std::string label = fmt::format("{}", sizes);
    const Tensor y = softmax(input, dim);
    const Tensor log_y = log_softmax(input, dim);
    check_close(softmax(input.to(kCuda0), dim), y, 1e-5, "softmax " + label);
    check_close(log_softmax(input.to(kCuda0), dim), log_y, 1e-5, "log_softmax " + label);
    const Attrs attrs{{"dim", dim}};
    check_close(dispatch_one(softmax_backward_op, {grad.to(kCuda0), y.to(kCuda0)}, attrs),
                dispatch_one(softmax_backward_op, {grad, y}, attrs), 1e-4, "softmax_backward " + label);
    check_close(dispatch_one(log_softmax_backward_op, {grad.to(kCuda0), log_y.to(kCuda0)}, attrs),
                dispatch_one(log_softmax_backward_op, {grad, log_y}, attrs), 1e-4, "log_softmax_backward " + label);
  }
}

TEST_CASE("cuda cross_entropy: many classes, smoothing, ignore_index, backward and bad targets") {
  if (!ember::testing::cuda_or_skip()) return;
  static const OpDef& backward_op = lookup_op("cross_entropy_backward");
  const Tensor logits = random_cpu({9, 3000});
  Tensor target = randint(0, 3000, {9}, {.dtype = kInt64, .device = kCPU});
  std::vector<int64_t> labels = target.to_vector<int64_t>();
  labels[4] = -100;  // ignored
  target = from_vector(labels, Dims{9}, {.dtype = kInt64, .device = kCPU});
  for (Reduction reduction : {Reduction::None, Reduction::Mean, Reduction::Sum}) {
    const CrossEntropyOptions options{.reduction = reduction, .label_smoothing = 0.1};
    const Tensor loss = cross_entropy(logits, target, options);
    check_close(cross_entropy(logits.to(kCuda0), target.to(kCuda0), options), loss, 1e-5, "cross_entropy");
    const Tensor grad = reduction == Reduction::None ? random_cpu({9}) : full({}, 0.5, {.device = kCPU});
    const Attrs attrs{{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", int64_t{-100}},
                      {"label_smoothing", 0.1}};
    check_close(dispatch_one(backward_op, {grad.to(kCuda0), logits.to(kCuda0), target.to(kCuda0)}, attrs),
                dispatch_one(backward_op, {grad, logits, target}, attrs), 1e-4, "cross_entropy_backward");
    // cross_entropy_with_backward runs the two kernels in turn: the pair's bits on the device.
    static const OpDef& fused_op = lookup_op("cross_entropy_with_backward");
    const std::array<Tensor, 3> device_inputs{grad.to(kCuda0), logits.to(kCuda0), target.to(kCuda0)};
    const TensorList both = dispatch({fused_op, device_inputs, attrs});
    CHECK(both[0].to(kCPU).to_vector<float>() ==
          cross_entropy(logits.to(kCuda0), target.to(kCuda0), options).to(kCPU).to_vector<float>());
    CHECK(both[1].to(kCPU).to_vector<float>() ==
          dispatch_one(backward_op, device_inputs, attrs).to(kCPU).to_vector<float>());
  }
  // The kernel records an out-of-range target on the device; the next sync (the copy to the host)
  // raises it, naming the op, the target and its position.
  labels[2] = 3000;
  const Tensor bad = from_vector(labels, Dims{9}, {.dtype = kInt64, .device = kCPU}).to(kCuda0);
  CHECK_THROWS_WITH_AS(cross_entropy(logits.to(kCuda0), bad).to(kCPU),
                       doctest::Contains("cross_entropy: target 3000 at index 2 is out of range [0, 3000)"), Error);
  CHECK_THROWS_WITH_AS(nll_loss(logits.to(kCuda0), bad).to(kCPU),
                       doctest::Contains("nll_loss: target 3000 at index 2 is out of range [0, 3000)"), Error);
}

// Rows whose target logit dominates: exp(z - max) sums to ~1 and the loss is ~1e-6, below a
// float sum's rounding of 1. The CPU sums in double; a float sum on the device returned 0 here.
TEST_CASE("cuda softmax and cross_entropy: confident rows keep their tiny losses, as on the CPU") {
  if (!ember::testing::cuda_or_skip()) return;
  static const OpDef& backward_op = lookup_op("cross_entropy_backward");
  for (int64_t classes : {10, 1000, 3000}) {  // warp-per-row (short, long) and block-per-row kernels
    const int64_t rows = 6;
    std::vector<float> values = random_cpu({rows, classes}).to_vector<float>();
    std::vector<int64_t> labels(rows);
    for (int64_t row = 0; row < rows; ++row) {
      labels[row] = (row * 7919) % classes;
      values[row * classes + labels[row]] = 16.0f + static_cast<float>(row);
    }
    const Tensor logits = from_vector(values, Dims{rows, classes}, {.device = kCPU});
    const Tensor target = from_vector(labels, Dims{rows}, {.dtype = kInt64, .device = kCPU});
    const std::string label = fmt::format("{} classes", classes);
    for (double smoothing : {0.0, 0.1}) {
      const CrossEntropyOptions options{.reduction = Reduction::None, .label_smoothing = smoothing};
      check_close(cross_entropy(logits.to(kCuda0), target.to(kCuda0), options), cross_entropy(logits, target, options),
                  1e-5, fmt::format("cross_entropy, {}, smoothing {}", label, smoothing));
    }
    const Attrs attrs{{"reduction", int64_t{0}}, {"ignore_index", int64_t{-100}}, {"label_smoothing", 0.0}};
    const Tensor grad = random_cpu({rows});
    check_close(dispatch_one(backward_op, {grad.to(kCuda0), logits.to(kCuda0), target.to(kCuda0)}, attrs),
                dispatch_one(backward_op, {grad, logits, target}, attrs), 1e-4, "cross_entropy_backward, " + label);
    check_close(log_softmax(logits.to(kCuda0), 1), log_softmax(logits, 1), 1e-5, "log_softmax, " + label);
    check_close(softmax(logits.to(kCuda0), 1), softmax(logits, 1), 1e-5, "softmax, " + label);
    // The column kernel (softmax over a dim that is not the last).
    const Tensor columns = logits.t().contiguous().unsqueeze(0);
    check_close(log_softmax(columns.to(kCuda0), 1), log_softmax(columns, 1), 1e-5, "log_softmax over dim 1, " + label);
  }
}

TEST_CASE("cuda mse_loss: a long mean in two fixed-order passes") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor input = random_cpu({1000, 1500});
  const Tensor target = random_cpu({1500});
  check_close(mse_loss(input.to(kCuda0), target.to(kCuda0)), mse_loss(input, target), 1e-6, "mse_loss mean");
  check_close(mse_loss(input.to(kCuda0), target.to(kCuda0), Reduction::Sum), mse_loss(input, target, Reduction::Sum),
              1e-6, "mse_loss sum");
}

}  // namespace test_cuda_reduce
