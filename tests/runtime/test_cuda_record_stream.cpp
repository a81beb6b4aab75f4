// record_stream on a GPU: a tensor dropped on the host while a side stream still has queued work
// reading it must not be handed to the next allocation of its own stream before that work ran.
#include <doctest/doctest.h>

#include "cuda_test_util.h"
#include "runtime/ember.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#endif

namespace test_cuda_record_stream {

using namespace ember;
using cuda_test::kCuda0;

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda record_stream: memory a side stream still reads is not reused until it has read it") {
  if (!ember::testing::cuda_or_skip()) return;
  // Fully free segments go back to the driver, so this case's blocks are the only candidates for
  // its allocations' size (and reuse shows as an equal address).
  empty_cache(kCuda0);
  const int64_t count = (2 << 20) + 12345;  // ~8 MiB of float32: its own (large-pool) segment
  Tensor source = full({count}, 3.0, {.device = kCuda0});
  const void* address = source.raw_data_ptr();
  synchronize(kCuda0);  // the side stream reads `source` only after it was written

  const cuda::Stream side = cuda::Stream::from_pool(kCuda0);
  Tensor doubled;
  {
    cuda::StreamGuard on_side(side);
    // Tens of milliseconds of queued work ahead of the read: the host drops `source` and
    // allocates again long before the side stream reaches the read.
    Tensor busy = randn({2048, 2048}, {.device = kCuda0});
    for (int i = 0; i < 40; ++i) busy = mul(matmul(busy, busy), 1e-3);
    doubled = mul(source, 2.0);
    source.record_stream(side);
  }
  const int64_t allocated_before_drop = memory_stats(kCuda0).allocated_bytes;
  source = Tensor();
  // Still counted as allocated: the side stream has not finished with it.
  CHECK(memory_stats(kCuda0).allocated_bytes == allocated_before_drop);
  const Tensor overwrite = full({count}, 7.0, {.device = kCuda0});  // on the default stream
  CHECK(overwrite.raw_data_ptr() != address);

  synchronize(kCuda0);
  CHECK(amin(doubled, {}, false).item() == 6.0);
  CHECK(amax(doubled, {}, false).item() == 6.0);
  // With the side stream done, the next allocation of that size on the default stream gets it.
  const Tensor reused = empty({count}, {.device = kCuda0});
  CHECK(reused.raw_data_ptr() == address);

  // The stream must be on the tensor's device.
  CHECK_THROWS_WITH_AS(reused.record_stream(cuda::Stream{Device(DeviceType::CUDA, 1), nullptr}),
                       doctest::Contains("record_stream: the stream is on cuda:1 but the tensor is on cuda:0"),
                       Error);
}
#endif

}  // namespace test_cuda_record_stream
