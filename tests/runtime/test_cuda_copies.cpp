// Host<->device copies on a GPU: non_blocking copies from pinned memory (the source must stay
// alive until the copy has read it, even when the caller drops it at once) and pin_memory itself;
// the events and side streams they are ordered with.
#include <doctest/doctest.h>

#include <set>

#include "cuda_test_util.h"
#include "runtime/ember.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/copy_source_holds.h"
#endif

namespace test_cuda_copies {

using namespace ember;
using cuda_test::kCuda0;

namespace {

double max_difference(const Tensor& a, const Tensor& b) {
  return amax(abs(sub(a.to(kCPU).to(kFloat64), b.to(kCPU).to(kFloat64))), {}, false).item();
}

}  // namespace

TEST_CASE("cuda non_blocking copies from pinned memory arrive intact after the source is dropped") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor host = randn({1024, 1024}, {.device = kCPU});
  CHECK_FALSE(host.is_pinned());
  Tensor pinned = host.pin_memory();
  REQUIRE(pinned.is_pinned());
  CHECK(pinned.pin_memory().is_same(pinned));  // already pinned: itself
  CHECK(max_difference(pinned, host) == 0);

  Tensor device = pinned.to(kCuda0, /*non_blocking=*/true);
#ifdef EMBER_HAS_CUDA
  CHECK(cuda::held_copy_sources() >= 1);  // released at a later copy or synchronize, not by the stream
#endif
  pinned = Tensor();  // the copy may still be reading it
  // The pinned pool hands the same bytes to the next request of that size only once the copy
  // released them; writing into it now must not change what arrives.
  const Tensor reused = full({1024, 1024}, 7.0, {.device = kCPU}).pin_memory();
  CHECK(max_difference(device, host) == 0);
  CHECK(max_difference(reused, full({1024, 1024}, 7.0, {.device = kCPU})) == 0);

  // A non-contiguous source is packed into pinned memory first.
  const Tensor transposed = host.t().pin_memory();
  CHECK(transposed.is_contiguous());
  CHECK(max_difference(transposed.to(kCuda0, /*non_blocking=*/true), host.t()) == 0);
#ifdef EMBER_HAS_CUDA
  synchronize(kCuda0);
  CHECK(cuda::held_copy_sources() == 0);
#endif
  // Pinning a device tensor is an error that names the device.
  CHECK_THROWS_WITH_AS(device.pin_memory(), doctest::Contains("only CPU tensors can be pinned, got a tensor on cuda:0"),
                       Error);
}

TEST_CASE("cuda copy_ between the CPU and a GPU converts dtype and layout, and carries gradients") {
  if (!ember::testing::cuda_or_skip()) return;
  const Tensor host = randn({3, 4}, {.dtype = kFloat64, .device = kCPU});
  Tensor device = zeros({3, 4}, {.device = kCuda0});
  device.copy_(host);  // host data into a preallocated device buffer, as PyTorch's copy_
  CHECK(device.device() == kCuda0);
  CHECK(max_difference(device, host.to(kFloat32)) == 0);
  Tensor host_view = zeros({4, 3}, {.dtype = kFloat64, .device = kCPU}).t();  // non-contiguous target
  host_view.copy_(device);
  CHECK(max_difference(host_view, host.to(kFloat32).to(kFloat64)) == 0);

  const Tensor source = randn({3, 4}, {.device = kCPU}).requires_grad_(true);
  Tensor target = zeros({3, 4}, {.device = kCuda0});
  target.copy_(source);
  mul(target, 3.0).sum().backward();
  REQUIRE(source.grad().defined());
  CHECK(source.grad().device() == kCPU);
  CHECK(max_difference(source.grad(), full({3, 4}, 3.0, {.device = kCPU})) == 0);
}

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda pinned DataLoader batches: a dataset without targets pins its data alone") {
  if (!ember::testing::cuda_or_skip()) return;
  auto dataset = std::make_shared<data::TensorDataset>(randn({10, 3}, {.device = kCPU}));
  for (const int workers : {0, 2}) {
    INFO(workers, " workers");
    data::DataLoader loader(dataset, {.batch_size = 4, .num_workers = workers, .pin_memory = true});
    int64_t rows = 0;
    for (auto& batch : loader) {
      CHECK(batch.data.is_pinned());
      CHECK_FALSE(batch.target.defined());
      rows += batch.data.size(0);
    }
    CHECK(rows == 10);
  }
}

TEST_CASE("cuda events: made on their first stream's device, finished before their first record") {
  if (!ember::testing::cuda_or_skip()) return;
  cuda::Event start(true), stop(true);
  CHECK(start.handle() == nullptr);
  CHECK(start.query());  // nothing recorded: nothing to wait for
  start.synchronize();
  CHECK_THROWS_WITH_AS(start.elapsed_milliseconds(stop), doctest::Contains("not both recorded"), Error);
  const cuda::Stream stream = cuda::current_stream(kCuda0);
  start.record(stream);
  const Tensor product = matmul(randn({512, 512}, {.device = kCuda0}), randn({512, 512}, {.device = kCuda0}));
  stop.record(stream);
  stop.synchronize();
  CHECK(stop.query());
  CHECK(start.elapsed_milliseconds(stop) >= 0.0f);
  CHECK(product.sizes() == Dims{512, 512});
}

TEST_CASE("cuda streams: side streams come from a pool, so asking for one per iteration does not leak") {
  if (!ember::testing::cuda_or_skip()) return;
  std::set<void*> handles;
  const cuda::Stream first = cuda::Stream::from_pool(kCuda0);
  handles.insert(first.handle);
  for (int i = 1; i < cuda::Stream::kPooledStreams; ++i) handles.insert(cuda::Stream::from_pool(kCuda0).handle);
  CHECK(handles.size() == static_cast<size_t>(cuda::Stream::kPooledStreams));  // each one its own stream
  CHECK(handles.count(nullptr) == 0);                                         // never the legacy stream
  CHECK(cuda::Stream::from_pool(kCuda0).handle == first.handle);              // then they come round again
  CHECK(handles.count(cuda::Stream::create(kCuda0).handle) == 0);             // a dedicated one is not in it
  // Work on a pooled stream runs like on any other.
  Tensor on_side;
  {
    cuda::StreamGuard on_stream(first);
    on_side = mul(full({1000}, 3.0, {.device = kCuda0}), 2.0);
  }
  synchronize(kCuda0);
  CHECK(amin(on_side).item() == 6.0);
  CHECK(amax(on_side).item() == 6.0);
}
#endif

}  // namespace test_cuda_copies
