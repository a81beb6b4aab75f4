// The caching allocator's pool logic, driven through a fake backend that records every call.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "fake_memory_backend.h"
#include "runtime/ember.h"

namespace test_allocator {

using namespace ember;

using ember::testing::FakeBackend;

TEST_CASE("freed blocks are reused without new backend allocations") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto first = allocator.allocate(1000);
  allocator.free(first);
  auto second = allocator.allocate(1000);
  CHECK(second.pointer == first.pointer);
  CHECK(backend.allocations == 1);
  allocator.free(second);
  // A steady state of alloc/free cycles never reaches the backend again.
  for (int i = 0; i < 100; ++i) allocator.free(allocator.allocate(static_cast<size_t>(100 + i * 37)));
  CHECK(backend.allocations == 1);
  CHECK(allocator.stats().num_backend_allocations == 1);
}

TEST_CASE("small requests are carved from one segment and merged back when freed") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto a = allocator.allocate(4096);
  auto b = allocator.allocate(4096);
  auto c = allocator.allocate(4096);
  CHECK(backend.allocations == 1);
  CHECK(static_cast<char*>(b.pointer) - static_cast<char*>(a.pointer) == 4096);
  allocator.free(b);
  allocator.free(a);
  allocator.free(c);
  // Fully merged: the whole segment is one free block again, so empty_cache returns it.
  allocator.empty_cache();
  CHECK(backend.releases == 1);
  CHECK(backend.live_bytes == 0);
  CHECK(allocator.stats().reserved_bytes == 0);
}

TEST_CASE("statistics track allocated, reserved and peaks") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto a = allocator.allocate(3 << 20);  // large: own segment, rounded to 2 MiB multiples
  auto b = allocator.allocate(1000);     // small: rounded to 1024 in a 2 MiB segment
  MemoryStats stats = allocator.stats();
  CHECK(stats.allocated_bytes == (3 << 20) + 1024);
  CHECK(stats.reserved_bytes == (4 << 20) + (2 << 20));
  CHECK(stats.num_allocations == 2);
  allocator.free(a);
  stats = allocator.stats();
  CHECK(stats.allocated_bytes == 1024);
  CHECK(stats.peak_allocated_bytes == (3 << 20) + 1024);
  allocator.reset_peak_stats();
  CHECK(allocator.stats().peak_allocated_bytes == 1024);
  allocator.free(b);
}

TEST_CASE("blocks are reused only on the stream that freed them") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto on_stream_1 = allocator.allocate(2 << 20, 1);
  allocator.free(on_stream_1);
  auto on_stream_2 = allocator.allocate(2 << 20, 2);
  CHECK(on_stream_2.pointer != on_stream_1.pointer);
  CHECK(backend.allocations == 2);
  allocator.free(on_stream_2);
}

TEST_CASE("out of memory empties the cache, retries, then raises a clear error") {
  FakeBackend backend;
  backend.limit_bytes = 8 << 20;
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(6 << 20));  // cached, holding 6 MiB
  auto big = allocator.allocate(7 << 20);       // needs the cache released first
  CHECK(backend.releases == 1);
  CHECK_THROWS_WITH_AS(allocator.allocate(4 << 20), doctest::Contains("fake allocator: out of memory"), Error);
  allocator.free(big);
}

TEST_CASE("a retained stream's segments stay cached: empty_cache returns only other streams' segments") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto captured = allocator.allocate(3 << 20, 7);  // as a kernel inside a CUDA-graph capture would
  auto other = allocator.allocate(3 << 20, 8);
  allocator.retain_stream(7);
  allocator.free(captured);
  allocator.free(other);
  allocator.empty_cache();
  CHECK(backend.releases == 1);                      // stream 8's segment only
  CHECK(backend.live.count(captured.pointer) == 1);  // a graph may still address it
  // Stream 7 reuses its cached segment: no new backend allocation.
  auto again = allocator.allocate(3 << 20, 7);
  CHECK(again.pointer == captured.pointer);
  CHECK(backend.allocations == 2);
  allocator.free(again);
}

TEST_CASE("retention is counted: a stream's segments are returned once every graph that retained it is gone") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  allocator.retain_stream(7);  // two graphs captured on stream 7
  allocator.retain_stream(7);
  allocator.free(allocator.allocate(3 << 20, 7));
  allocator.release_stream(7);  // the first graph is destroyed: the second may still address it
  allocator.empty_cache();
  CHECK(backend.releases == 0);
  CHECK(allocator.stats().reserved_bytes == 4 << 20);  // the 3 MiB segment, rounded to 2 MiB
  allocator.release_stream(7);  // the last one too
  allocator.empty_cache();
  CHECK(backend.releases == 1);
  CHECK(backend.live.empty());
  CHECK(allocator.stats().reserved_bytes == 0);
  // A release without a retention is a bookkeeping bug, said as such rather than ignored.
  CHECK_THROWS_WITH_AS(allocator.release_stream(7), doctest::Contains("release_stream of stream 0x7, which is not retained"),
                       Error);
}

TEST_CASE("without caching, each allocation is its own backend allocation of its exact size, released when freed") {
  FakeBackend backend;
  CachingAllocator allocator(backend, /*caching=*/false);
  const auto a = allocator.allocate(1000, 7);
  const auto b = allocator.allocate(1000, 7);
  CHECK(backend.allocations == 2);  // no shared segment: a tool watching the backend sees both
  CHECK(backend.live.at(a.pointer) == 1000);
  CHECK(backend.live.at(b.pointer) == 1000);
  allocator.free(a);
  CHECK(backend.releases == 1);  // back at once: a later use of it is a use after free there
  CHECK(backend.live.count(a.pointer) == 0);
  allocator.free(b);
  CHECK(backend.live.empty());
  CHECK(allocator.stats().reserved_bytes == 0);
  CHECK(allocator.stats().allocated_bytes == 0);
  // While the backend cannot release (a CUDA-graph capture), a freed block stays cached and is
  // reused only at its exact size: never split (a piece would start off its segment's
  // alignment), never a bigger block (it would hide an overrun).
  backend.releasable = false;
  const auto cached = allocator.allocate(2000, 7);
  allocator.free(cached);
  CHECK(backend.live.size() == 1);
  const auto smaller = allocator.allocate(6, 7);
  CHECK(smaller.pointer != cached.pointer);
  CHECK(backend.live.at(smaller.pointer) == 6);
  allocator.free(smaller);
  const auto same = allocator.allocate(2000, 7);
  CHECK(same.pointer == cached.pointer);
  allocator.free(same);
  backend.releasable = true;
  allocator.empty_cache();
  CHECK(backend.live.empty());
}

TEST_CASE("nothing is returned to a backend that cannot release now, out of memory then fails cleanly") {
  FakeBackend backend;
  backend.limit_bytes = 8 << 20;
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(6 << 20));  // cached
  backend.releasable = false;
  allocator.empty_cache();
  CHECK(backend.releases == 0);
  // The retry after out of memory would release the cached 6 MiB; it may not, so the error comes.
  CHECK_THROWS_WITH_AS(allocator.allocate(7 << 20), doctest::Contains("fake allocator: out of memory"), Error);
  CHECK(backend.releases == 0);
  backend.releasable = true;
  auto big = allocator.allocate(7 << 20);
  CHECK(backend.releases == 1);
  allocator.free(big);
}

namespace {

// Its release() blocks until the test lets it finish, so a test can look at another thread while
// a release is under way (CUDA: the device sync and cudaFree of empty_cache).
class SlowReleaseBackend final : public MemoryBackend {
 public:
  std::atomic<bool> releasing = false, may_finish = false, released = false;
  void* allocate(size_t bytes) override { return std::malloc(bytes); }
  void release(void* pointer, size_t) override {
    releasing = true;
    while (!may_finish) std::this_thread::yield();
    std::free(pointer);
    released = true;
  }
  const char* name() const override { return "slow"; }
};

}  // namespace

TEST_CASE("wait_for_releases returns only after a release running on another thread has finished") {
  SlowReleaseBackend backend;
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(6 << 20));
  std::thread releaser([&] { allocator.empty_cache(); });
  while (!backend.releasing) std::this_thread::yield();
  // What begin_capture does once it has counted itself: it must not go on while cudaFree runs.
  std::atomic<bool> waited = false, release_had_finished = false;
  std::thread capturer([&] {
    allocator.wait_for_releases();
    release_had_finished = backend.released.load();
    waited = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(waited.load());
  backend.may_finish = true;
  releaser.join();
  capturer.join();
  CHECK(release_had_finished.load());
  CHECK(allocator.stats().reserved_bytes == 0);
}

TEST_CASE("the CPU allocator reaches a steady state in a loop of tensor ops") {
  Tensor a = randn({64, 64});
  Tensor b = randn({64, 64});
  for (int i = 0; i < 3; ++i) (void)add(a, b);
  const int64_t before = memory_stats().num_backend_allocations;
  for (int i = 0; i < 100; ++i) (void)add(add(a, b), b);
  CHECK(memory_stats().num_backend_allocations == before);
}

}  // namespace test_allocator
