// Bad class targets and indices on CUDA are errors, not NaN: the kernel writes the device's error
// record and the next synchronization (item(), to(kCPU), ember::synchronize) raises it, naming the
// op and the values; the record is then clear, so later calls work. With EMBER_CUDA_CHECK_INDICES
// the op raises it itself. Without a GPU each case says so and stops (the decoding is tested on
// the CPU in test_device_error.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "runtime/dispatch.h"
#include "runtime/ember.h"
#include "cuda_test_util.h"
#include "runtime/ops/registry.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/index_cuda_common.h"
#include "skip_case.h"
#endif

namespace test_cuda_device_error {

using namespace ember;

namespace {

using cuda_test::kCuda0;

[[maybe_unused]] Tensor targets(std::vector<int64_t> values) {  // unused in builds without CUDA
  const auto count = static_cast<int64_t>(values.size());
  return from_vector<int64_t>(std::move(values), {count}, {.dtype = kInt64, .device = kCPU});
}

}  // namespace

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda cross_entropy with a bad target raises at the next sync, naming the op and values") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor logits = randn({6, 10}, {.device = kCPU});  // the default device is CUDA on a GPU machine
  const Tensor good = targets({1, 2, 3, 4, 5, 9});
  const Tensor bad = targets({1, 2, 3, 4, 5, 12});
  const Tensor loss = cross_entropy(logits.to(kCuda0), bad.to(kCuda0));  // asynchronous: no error yet
  CHECK_THROWS_WITH_AS(loss.item(),
                       doctest::Contains("cross_entropy: target 12 at index 5 is out of range [0, 10) (reported at "
                                         "synchronization"),
                       Error);
  // Cleared: the same logits with good targets match the CPU.
  const double expected = cross_entropy(logits, good).item();
  CHECK(std::abs(cross_entropy(logits.to(kCuda0), good.to(kCuda0)).item() - expected) < 1e-5);
  // ignore_index is not an error.
  const Tensor ignored = targets({1, -100, 3, 4, 5, 9});
  CHECK(std::isfinite(cross_entropy(logits.to(kCuda0), ignored.to(kCuda0)).item()));
}

TEST_CASE("cuda nll_loss and the loss backward report bad targets at ember::synchronize") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor log_probs = log_softmax(randn({4, 3}), 1).to(kCuda0);
  const Tensor bad = targets({0, 1, -5, 2}).to(kCuda0);
  const Tensor loss = nll_loss(log_probs, bad, Reduction::Sum);
  CHECK_THROWS_WITH_AS(synchronize(kCuda0), doctest::Contains("nll_loss: target -5 at index 2 is out of range [0, 3)"),
                       Error);
  synchronize(kCuda0);  // cleared
  // Forward and backward kernels both check; the forward's report comes first and wins. Wherever
  // the first sync falls (inside backward or after it), that is where the error is raised.
  const Tensor logits = randn({3, 4}).to(kCuda0).requires_grad_();
  const Tensor bad_rows = targets({0, 4, 1}).to(kCuda0);
  std::string message = "(no error)";
  try {
    cross_entropy(logits, bad_rows).backward();
    synchronize(kCuda0);
  } catch (const Error& error) {
    message = error.what();
  }
  CHECK(message.find("cross_entropy: target 4 at index 1 is out of range [0, 4)") != std::string::npos);
  synchronize(kCuda0);  // the backward's own report was dropped with the first one
}

TEST_CASE("cuda device errors: the first one wins, and index ops report through the same record") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor values = randn({5, 4}).to(kCuda0);
  // Both indices reach the device first: a blocking copy to the GPU raises a pending device error,
  // so none may run between the two launches.
  const Tensor gather_index = from_vector<int64_t>({0, 7, 1, 2}, {1, 4}, {.dtype = kInt64}).to(kCuda0);
  const Tensor select_index = targets({8}).to(kCuda0);
  const Tensor gathered = gather(values, 1, gather_index);
  const Tensor selected = index_select(values, 0, select_index);
  CHECK_THROWS_WITH_AS(synchronize(kCuda0),
                       doctest::Contains("gather: index 7 at position 1 is out of range for a dim of size 4"), Error);
  synchronize(kCuda0);  // the second error was dropped with the first report
  CHECK(gathered.to(kCPU).numel() == 4);
  CHECK(selected.to(kCPU).numel() == 4);
  const Tensor embedded = embedding(values, targets({1, 5}).to(kCuda0));
  CHECK_THROWS_WITH_AS(embedded.to(kCPU), doctest::Contains("embedding: index 5 at position 1"), Error);
  const Tensor scattered =
      dispatch_one(lookup_op("scatter_add"),
                   {zeros({2, 3}).to(kCuda0), from_vector<int64_t>({3}, {1, 1}, {.dtype = kInt64}).to(kCuda0),
                    ones({1, 1}).to(kCuda0)},
                   {{"dim", int64_t{1}}});
  CHECK_THROWS_WITH_AS(scattered.to(kCPU), doctest::Contains("scatter_add: index 3 at position 0"), Error);
}

TEST_CASE("cuda EMBER_CUDA_CHECK_INDICES raises a bad target at the op, with the scores' shape") {
  if (!ember::testing::cuda_or_skip()) return;
  cuda_test::IndexCheckingScope checking(true);
  const Tensor logits = randn({6, 10}).to(kCuda0);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, 2, 3, 4, 5, 12}).to(kCuda0)),
                       doctest::Contains("cross_entropy: target 12 at index 5 is out of range [0, 10) (scores [6, 10])"),
                       Error);
  CHECK(std::isfinite(cross_entropy(logits, targets({1, 2, 3, 4, 5, 9}).to(kCuda0)).item()));
  checking.set(false);
  // An error an unchecked op left behind is raised, as found at synchronization, by the next checked op.
  const Tensor pending = nll_loss(logits, targets({0, 11, 0, 0, 0, 0}).to(kCuda0));
  checking.set(true);
  CHECK_THROWS_WITH_AS(cross_entropy(logits, targets({1, 2, 3, 4, 5, 9}).to(kCuda0)),
                       doctest::Contains("nll_loss: target 11 at index 1 is out of range [0, 10) (reported at "
                                         "synchronization"),
                       Error);
  checking.set(false);
  synchronize(kCuda0);
}
#endif

TEST_CASE("cuda device error tests run only with a CUDA build") {
#ifndef EMBER_HAS_CUDA
  ember::testing::skip_case("CUDA unavailable: this build has no CUDA backend");
#else
  if (!ember::testing::cuda_or_skip()) return;
  synchronize(kCuda0);  // nothing left over from the cases above
#endif
}

}  // namespace test_cuda_device_error
