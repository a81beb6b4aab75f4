// A MemoryBackend for testing the caching allocator's pool logic on the CPU: it records every
// call, fails allocations past a limit, and models streams as counters of queued and finished
// work, so that record_stream's markers can be completed one by one by the test.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>

#include "runtime/error.h"
#include "runtime/memory/caching_allocator.h"

namespace ember::testing {

class FakeBackend final : public MemoryBackend {
 public:
  size_t limit_bytes = size_t{1} << 30;
  size_t live_bytes = 0;
  int allocations = 0;
  int releases = 0;
  bool releasable = true;  // what can_release() answers (CUDA: false while this thread captures)
  std::map<void*, size_t> live;

  void* allocate(size_t bytes) override {
    if (live_bytes + bytes > limit_bytes) return nullptr;
    void* pointer = std::malloc(bytes);
    live[pointer] = bytes;
    live_bytes += bytes;
    ++allocations;
    return pointer;
  }
  void release(void* pointer, size_t bytes) override {
    REQUIRE(live.count(pointer) == 1);
    CHECK(live[pointer] == bytes);
    live.erase(pointer);
    live_bytes -= bytes;
    ++releases;
    std::free(pointer);
  }
  const char* name() const override { return "fake"; }
  bool can_release() const override { return releasable; }

  // ---- streams: work is queued and finished by the test; a marker is a ticket in the queue ----
  bool markers_possible = true;  // false: record_event makes none (CUDA: during a capture)
  int queries_until_error = -1;  // >= 0: event_done fails (as a CUDA error) after that many answers
  int live_markers = 0;
  int waits = 0;
  void queue_work(StreamId stream) { ++queued_[stream]; }
  void finish_work(StreamId stream) { finished_[stream] = queued_[stream]; }

  void* record_event(StreamId stream) override {
    if (!markers_possible) return nullptr;
    markers_.push_back({stream, queued_[stream]});
    ++live_markers;
    return &markers_.back();
  }
  bool event_done(void* event) override {
    if (queries_until_error == 0) fail("fake: event query failed");
    if (queries_until_error > 0) --queries_until_error;
    const Marker& marker = *static_cast<Marker*>(event);
    return finished_[marker.stream] >= marker.ticket;
  }
  void wait_event(void* event) override {
    const Marker& marker = *static_cast<Marker*>(event);
    finished_[marker.stream] = std::max(finished_[marker.stream], marker.ticket);
    ++waits;
  }
  void destroy_event(void*) override { --live_markers; }

 private:
  struct Marker {
    StreamId stream;
    int ticket;
  };
  std::deque<Marker> markers_;  // stable addresses
  std::map<StreamId, int> queued_;
  std::map<StreamId, int> finished_;
};

}  // namespace ember::testing
