// record_stream in the caching allocator's pool logic, through a fake backend whose streams the
// test runs by hand: a block another stream uses returns to the pool only once the work that
// stream had queued at the free has finished, and counts as allocated until then.
#include <doctest/doctest.h>

#include <vector>

#include "fake_memory_backend.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/ember.h"

namespace test_allocator_stream_uses {

using namespace ember;
using ember::testing::FakeBackend;

namespace {
constexpr StreamId kOwn = 1;   // the stream the block was allocated on
constexpr StreamId kSide = 2;  // another stream reading it
constexpr StreamId kThird = 3;

// An allocation on kOwn with a kernel queued on `stream` that reads it (named by record_stream).
CachingAllocator::Allocation read_by(StreamId stream, FakeBackend& backend, CachingAllocator& allocator,
                                     size_t bytes = 4096) {
  auto allocation = allocator.allocate(bytes, kOwn);
  backend.queue_work(stream);
  allocator.record_stream(allocation, stream);
  return allocation;
}

// Everything went back: nothing allocated, no marker alive, every segment returned.
void check_all_returned(CachingAllocator& allocator, const FakeBackend& backend) {
  allocator.empty_cache();
  CHECK(allocator.stats().allocated_bytes == 0);
  CHECK(allocator.stats().reserved_bytes == 0);
  CHECK(backend.live_markers == 0);
  CHECK(backend.live_bytes == 0);
}
}  // namespace

TEST_CASE("record_stream: a freed block waits for the other stream's work queued before the free") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto block = allocator.allocate(4096, kOwn);
  backend.queue_work(kSide);  // a kernel on the side stream reads the block
  allocator.record_stream(block, kSide);
  allocator.record_stream(block, kSide);  // named once
  allocator.record_stream(block, kOwn);   // its own stream orders itself: nothing to wait for
  allocator.free(block);
  CHECK(backend.live_markers == 1);
  CHECK(allocator.stats().allocated_bytes == 4096);  // not free yet

  backend.queue_work(kSide);  // queued after the free: need not finish before the reuse
  auto while_busy = allocator.allocate(4096, kOwn);
  CHECK(while_busy.pointer != block.pointer);

  backend.finish_work(kSide);
  auto after = allocator.allocate(4096, kOwn);
  CHECK(after.pointer == block.pointer);
  CHECK(backend.live_markers == 0);
  CHECK(allocator.stats().allocated_bytes == 2 * 4096);
  allocator.free(while_busy);
  allocator.free(after);
  CHECK(allocator.stats().allocated_bytes == 0);
  CHECK(backend.allocations == 1);
}

TEST_CASE("record_stream: every stream that used the block must finish first") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto block = allocator.allocate(3 << 20, kOwn);  // a segment of its own
  backend.queue_work(kSide);
  backend.queue_work(kThird);
  allocator.record_stream(block, kSide);
  allocator.record_stream(block, kThird);
  allocator.free(block);
  CHECK(backend.live_markers == 2);

  backend.finish_work(kSide);
  auto first = allocator.allocate(3 << 20, kOwn);
  CHECK(first.pointer != block.pointer);  // the third stream still reads it
  backend.finish_work(kThird);
  auto second = allocator.allocate(3 << 20, kOwn);
  CHECK(second.pointer == block.pointer);
  CHECK(backend.live_markers == 0);
  allocator.free(first);
  allocator.free(second);
}

TEST_CASE("record_stream: a free while no marker can be made is marked later, never reused early") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto block = read_by(kSide, backend, allocator);
  backend.markers_possible = false;  // as during a CUDA-graph capture
  allocator.free(block);
  CHECK(backend.live_markers == 0);
  backend.finish_work(kSide);  // finished, but nothing marked it: the allocator cannot know
  auto during = allocator.allocate(4096, kOwn);
  CHECK(during.pointer != block.pointer);

  backend.markers_possible = true;
  backend.queue_work(kSide);  // the marker made now also covers this later work
  auto marked_late = allocator.allocate(4096, kOwn);
  CHECK(marked_late.pointer != block.pointer);
  CHECK(backend.live_markers == 1);
  backend.finish_work(kSide);
  auto reused = allocator.allocate(4096, kOwn);
  CHECK(reused.pointer == block.pointer);
  for (auto allocation : {during, marked_late, reused}) allocator.free(allocation);
  CHECK(allocator.stats().allocated_bytes == 0);
}

TEST_CASE("record_stream: empty_cache waits for pending frees and returns their segments") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  allocator.free(read_by(kSide, backend, allocator, 3 << 20));
  check_all_returned(allocator, backend);
  CHECK(backend.waits == 1);
  CHECK(backend.releases == 1);
}

TEST_CASE("record_stream: a free whose block a neighbour merges with only after its streams finish") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto left = read_by(kSide, backend, allocator);
  auto right = allocator.allocate(4096, kOwn);
  allocator.free(left);   // pending
  allocator.free(right);  // free at once; must not merge with the pending block
  auto eight = allocator.allocate(8192, kOwn);
  CHECK(eight.pointer != left.pointer);
  backend.finish_work(kSide);
  allocator.free(eight);
  // Once the side stream is done, both blocks and the rest of the segment are one free block.
  auto whole = allocator.allocate(8192, kOwn);
  CHECK(whole.pointer == left.pointer);
  allocator.free(whole);
  check_all_returned(allocator, backend);
}

TEST_CASE("record_stream: out of memory waits for pending frees and reuses what they free") {
  FakeBackend backend;
  backend.limit_bytes = 2 << 20;  // one small segment
  CachingAllocator allocator(backend);
  auto first = read_by(kSide, backend, allocator, 1 << 20);
  auto second = allocator.allocate(1 << 20, kOwn);  // keeps the segment from being released
  allocator.free(first);
  // No room and no free block until the side stream is waited for; its block then fits.
  auto third = allocator.allocate(1 << 20, kOwn);
  CHECK(third.pointer == first.pointer);
  CHECK(backend.waits == 1);
  CHECK(backend.allocations == 1);
  allocator.free(second);
  allocator.free(third);
}

TEST_CASE("record_stream: a backend error while checking pending frees loses and repeats nothing") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  const StreamId kFourth = 4;
  std::vector<CachingAllocator::Allocation> blocks;
  for (StreamId stream : {kSide, kThird, kFourth}) blocks.push_back(read_by(stream, backend, allocator));
  for (const auto& block : blocks) allocator.free(block);
  backend.finish_work(kSide);
  backend.finish_work(kFourth);  // the third stream is still busy
  backend.queries_until_error = 2;
  CHECK_THROWS_WITH_AS(allocator.allocate(4096, kOwn), doctest::Contains("event query failed"), Error);
  backend.queries_until_error = -1;
  // The two finished blocks are freed once each, the busy one not at all.
  auto a = allocator.allocate(4096, kOwn);
  auto b = allocator.allocate(4096, kOwn);
  auto c = allocator.allocate(4096, kOwn);
  CHECK(c.pointer != blocks[1].pointer);
  CHECK(allocator.stats().allocated_bytes == 4 * 4096);
  backend.finish_work(kThird);
  allocator.free(a);
  allocator.free(b);
  allocator.free(c);
  check_all_returned(allocator, backend);
}

TEST_CASE("record_stream: freeing a block twice is caught while it waits for other streams") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  auto block = read_by(kSide, backend, allocator);
  allocator.free(block);
  CHECK_THROWS_WITH_AS(allocator.free(block), doctest::Contains("free of a block that is not allocated"), Error);
  CHECK_THROWS_WITH_AS(allocator.record_stream(block, kThird), doctest::Contains("not allocated"), Error);
  backend.finish_work(kSide);
  check_all_returned(allocator, backend);
}

TEST_CASE("record_stream without caching: the block goes back to the backend once its streams finish") {
  FakeBackend backend;
  CachingAllocator allocator(backend, /*caching=*/false);
  auto used = allocator.allocate(1000, kOwn);
  backend.queue_work(kSide);
  allocator.record_stream(used, kSide);
  allocator.free(used);
  CHECK(backend.live.at(used.pointer) == 1000);  // the side stream may still read it
  backend.finish_work(kSide);
  // The next allocation finds the work finished: the block is released, not kept for reuse (a
  // tool watching the backend would miss a use after free of memory handed out again).
  const auto next = allocator.allocate(1000, kOwn);
  CHECK(backend.releases == 1);
  CHECK(backend.allocations == 2);
  CHECK(backend.live.size() == 1);
  CHECK(backend.live.at(next.pointer) == 1000);
  CHECK(allocator.stats().reserved_bytes == 1000);
  CHECK(allocator.stats().allocated_bytes == 1000);
  // Work finished before the free: released by the free itself.
  backend.queue_work(kThird);
  allocator.record_stream(next, kThird);
  backend.finish_work(kThird);
  allocator.free(next);
  CHECK(backend.releases == 2);
  CHECK(backend.live.empty());
  CHECK(allocator.stats().reserved_bytes == 0);
  CHECK(backend.live_markers == 0);
}

TEST_CASE("record_stream on a tensor: the tensor must be on CUDA, on the stream's device") {
  const Tensor host = zeros({4});
  const cuda::Stream stream{Device(DeviceType::CUDA, 0), nullptr};
  CHECK_THROWS_WITH_AS(host.record_stream(stream),
                       doctest::Contains("record_stream: expected a CUDA tensor, got a tensor on cpu"), Error);
  // The call site in the message is the caller's, as for every op.
  CHECK_THROWS_WITH_AS(host.record_stream(stream), doctest::Contains("test_allocator_stream_uses.cpp"), Error);
}

}  // namespace test_allocator_stream_uses
