// CUDA graphs and the caching allocator on a GPU: a block a graph's kernel used during capture
// went back to its stream's cache, but the graph keeps writing it on every launch, so it must stay
// allocated from the driver while the graph lives, and may go back once the graph is destroyed.
#include <doctest/doctest.h>

#include "cuda_test_util.h"
#include "runtime/ember.h"
#ifdef EMBER_HAS_CUDA
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_graph.h"
#endif

using namespace ember;
using cuda_test::kCuda0;

#ifdef EMBER_HAS_CUDA
TEST_CASE("cuda graphs: a captured stream's cached blocks are kept while its graph lives, returned after") {
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
    // Outside the capture, the stream's cache gets the segment the capture then takes its
    // scratch block from (cudaMalloc would be recorded by the capture).
    full({count}, 0.0, {.device = kCuda0});
    cuda::begin_capture(stream);
    {
      const Tensor scratch = full({count}, 2.0, {.device = kCuda0});
      total.add_(scratch);
    }  // scratch's block returns to the stream's cache, still addressed by the graph
    graph = cuda::instantiate(cuda::end_capture(stream));
  }
  empty_cache(kCuda0);
  const int64_t reserved_with_graph = memory_stats(kCuda0).reserved_bytes;
  CHECK(reserved_with_graph >= reserved_with_total + count * 4);  // the scratch segment, kept for the graph

  cuda::launch(graph, stream);
  cuda::launch(graph, stream);
  synchronize(kCuda0);
  CHECK(amin(total).item() == 4.0);  // nothing ran at capture; each launch added 2
  CHECK(amax(total).item() == 4.0);

  cuda::destroy(graph, stream);
  empty_cache(kCuda0);
  CHECK(memory_stats(kCuda0).reserved_bytes <= reserved_with_graph - count * 4);  // back to the driver
}
#endif
