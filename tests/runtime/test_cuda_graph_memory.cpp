// CUDA graphs and the caching allocator on a GPU: a block a graph's kernel used during capture
// went back to the cache, but the graph keeps writing it on every launch, so it must stay
// allocated from the driver while the graph lives, and may go back once the graph is destroyed;
// and no allocation outside a capture may be handed it meanwhile (the graph's private pool).
#include <doctest/doctest.h>

#include "cuda_test_util.h"
#include "runtime/ember.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#endif

namespace test_cuda_graph_memory {

using namespace ember;
using cuda_test::kCuda0;

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda graphs: a graph's blocks are its own while it lives (kept, never handed out) and returned after") {
  if (!ember::testing::cuda_or_skip()) return;
  const int64_t count = (2 << 20) + 12345;  // ~8 MiB of float32: a large-pool segment of its own
  Tensor total = zeros({count}, {.device = kCuda0});
  synchronize(kCuda0);  // `total` is written before the side stream adds to it
  empty_cache(kCuda0);
  const int64_t reserved_with_total = memory_stats(kCuda0).reserved_bytes;

  const cuda::Stream stream = cuda::Stream::from_pool(kCuda0);
  cuda::GraphExec graph = nullptr;
  {
    cuda::StreamGuard on_stream(stream);
    cuda::begin_capture(stream);
    {
      const Tensor scratch = full({count}, 2.0, {.device = kCuda0});
      total.add_(scratch);
    }  // scratch's block returns to the graph pool, still addressed by the graph
    graph = cuda::instantiate(cuda::end_capture(stream));
  }
  // The same size on the same stream, outside the capture: it must not get the graph's block,
  // or each launch below would overwrite it with 2s.
  Tensor bystander;
  {
    cuda::StreamGuard on_stream(stream);
    bystander = full({count}, 5.0, {.device = kCuda0});
  }
  empty_cache(kCuda0);
  const int64_t reserved_with_graph = memory_stats(kCuda0).reserved_bytes;
  CHECK(reserved_with_graph >= reserved_with_total + count * 4);  // the scratch segment, kept for the graph

  cuda::launch(graph, stream);
  cuda::launch(graph, stream);
  synchronize(kCuda0);
  CHECK(amin(total).item() == 4.0);  // nothing ran at capture; each launch added 2
  CHECK(amax(total).item() == 4.0);
  CHECK(amin(bystander).item() == 5.0);
  CHECK(amax(bystander).item() == 5.0);
  bystander = Tensor();

  cuda::destroy(graph, stream);
  empty_cache(kCuda0);
  CHECK(memory_stats(kCuda0).reserved_bytes <= reserved_with_graph - count * 4);  // back to the driver
}
#endif

}  // namespace test_cuda_graph_memory
