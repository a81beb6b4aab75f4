// The caching allocator at its limits, through the fake backend: a device that is full, and
// requests no device could hold.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "fake_memory_backend.h"
#include "runtime/ember.h"

namespace test_allocator_limits {

using namespace ember;
using ember::testing::FakeBackend;

namespace {
constexpr size_t kMiB = size_t{1} << 20;
}  // namespace

TEST_CASE("out of memory: a cached block far bigger than the request is split rather than failing") {
  FakeBackend backend;
  backend.limit_bytes = 100 * kMiB;
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(100 * kMiB));  // one cached 100 MiB segment: the whole device
  const auto first = allocator.allocate(60 * kMiB);
  CHECK(first.pointer == backend.live.begin()->first);  // carved from it: 40 MiB stay free there
  // 40 MiB is more than 2 * 10 MiB + 2 MiB, so in normal times the block is left alone (a small
  // request would fragment it) and the device asked; the device is full, so the block serves.
  const auto second = allocator.allocate(10 * kMiB);
  CHECK(static_cast<char*>(second.pointer) - static_cast<char*>(first.pointer) == 60 * kMiB);
  CHECK(backend.allocations == 1);
  MemoryStats stats = allocator.stats();
  CHECK(stats.allocated_bytes == 70 * kMiB);
  CHECK(stats.reserved_bytes == 100 * kMiB);
  // The 30 MiB left after the split serve the next one too; beyond them the device is full.
  const auto third = allocator.allocate(30 * kMiB);
  CHECK(static_cast<char*>(third.pointer) - static_cast<char*>(first.pointer) == 70 * kMiB);
  CHECK_THROWS_WITH_AS(allocator.allocate(kMiB + 1), doctest::Contains("fake allocator: out of memory"), Error);
  allocator.free(first);
  allocator.free(second);
  allocator.free(third);
  allocator.empty_cache();
  CHECK(backend.live.empty());
}

TEST_CASE("out of memory: with memory to spare the fragmentation limit still holds") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  allocator.free(allocator.allocate(100 * kMiB));
  const auto fresh = allocator.allocate(10 * kMiB);  // a segment of its own: the device has room
  CHECK(backend.allocations == 2);
  CHECK(backend.live.at(fresh.pointer) == 10 * kMiB);
  allocator.free(fresh);
}

TEST_CASE("a request whose rounding would pass the largest countable size is refused, nothing changes") {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  const auto kept = allocator.allocate(1000);
  const MemoryStats before = allocator.stats();
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  // Rounded to 512 bytes or to the 2 MiB of a large segment these wrapped around to small sizes
  // (even 0), and allocated_bytes, an int64, went negative.
  for (const size_t bytes : {kMax, kMax - 100, kMax - 511, kMax - 512, size_t{1} << 63, kMax - kMiB}) {
    CAPTURE(bytes);
    const std::string expected = fmt::format("fake allocator: cannot allocate {} bytes", bytes);
    CHECK_THROWS_WITH_AS(allocator.allocate(bytes), doctest::Contains(expected.c_str()), Error);
  }
  // The largest size counted: int64's maximum less a 2 MiB segment's rounding.
  constexpr size_t kLargest = size_t{std::numeric_limits<int64_t>::max()} - (2 * kMiB - 1);
  CHECK(CachingAllocator::kMaxRequestBytes == kLargest);
  CHECK_THROWS_WITH_AS(allocator.allocate(kLargest + 1),
                       doctest::Contains("the largest request is 9223372036852678656 bytes"), Error);
  // Not refused up front: the backend is asked, and says no.
  CHECK_THROWS_WITH_AS(allocator.allocate(kLargest), doctest::Contains("fake allocator: out of memory"), Error);
  const MemoryStats after = allocator.stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.num_allocations == before.num_allocations);
  CHECK(after.reserved_bytes == before.reserved_bytes);
  CHECK(backend.live.size() == 1);
  allocator.free(kept);

  CachingAllocator uncached(backend, /*caching=*/false);  // no rounding, but the same counters
  CHECK_THROWS_WITH_AS(uncached.allocate(kMax), doctest::Contains("cannot allocate"), Error);
  CHECK(uncached.stats().allocated_bytes == 0);
}

}  // namespace test_allocator_limits
