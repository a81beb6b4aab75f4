// record_stream for the caching allocator: a block that other streams use is freed only once the
// work those streams had queued when it was freed has finished. Without this, the block's own
// stream could be handed the bytes again while a kernel on another stream still reads them.
//
// As in PyTorch's allocator, the check is polled, never blocking: each allocation first frees the
// pending blocks whose markers have completed; empty_cache and the out-of-memory retry wait for all
// of them, since those are about to return memory to the device anyway.
#include "runtime/memory/caching_allocator.h"

#include <algorithm>

#include "runtime/error.h"

namespace ember {

void* MemoryBackend::record_event(StreamId) {
  fail("{} allocator: record_stream needs a memory with streams", name());
}
bool MemoryBackend::event_done(void*) { return true; }
void MemoryBackend::wait_event(void*) {}
void MemoryBackend::destroy_event(void*) {}

void CachingAllocator::record_stream(const Allocation& allocation, StreamId stream) {
  if (allocation.handle == nullptr) return;
  std::lock_guard lock(mutex_);
  Block* block = static_cast<Block*>(allocation.handle);
  internal_assert(block->allocated && !block->freed_pending && block->pointer == allocation.pointer,
                  "caching allocator: record_stream on a block that is not allocated");
  if (stream == block->stream) return;  // its own stream's work is ordered by the stream itself
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) == block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
}

void CachingAllocator::defer_free(Block* block) {
  pending_frees_.push_back(PendingFree{block, {}, block->stream_uses});
  block->stream_uses.clear();
  block->freed_pending = true;
  // Marked now, so that work queued later on those streams does not hold the block. A failure
  // (a CUDA error) must not escape: free() runs in destructors. The streams then stay unmarked,
  // to be marked at a later allocation, where the error is reported.
  try {
    finish_pending_frees(/*wait=*/false);
  } catch (const Error&) {
  }
}

// Entries change one marker at a time, each change made only after the backend call succeeded,
// so an error thrown by the backend leaves every entry whole.
void CachingAllocator::finish_pending_frees(bool wait) {
  // Work on a stream finishes in order: once one of its markers is unfinished, later-made ones
  // are too (an earlier-made one is merely asked again at the next call).
  std::vector<StreamId> busy;
  auto is_busy = [&](StreamId stream) { return std::find(busy.begin(), busy.end(), stream) != busy.end(); };
  for (size_t i = 0; i < pending_frees_.size();) {
    PendingFree& pending = pending_frees_[i];
    for (size_t k = 0; k < pending.unmarked.size();) {
      const StreamId stream = pending.unmarked[k];
      void* event = backend_.record_event(stream);
      if (event == nullptr) {  // cannot mark now (a capture is underway)
        ++k;
        continue;
      }
      pending.markers.push_back({stream, event});
      pending.unmarked[k] = pending.unmarked.back();
      pending.unmarked.pop_back();
    }
    for (size_t k = 0; k < pending.markers.size();) {
      const StreamMarker marker = pending.markers[k];
      if (wait) {
        backend_.wait_event(marker.event);
      } else if (is_busy(marker.stream) || !backend_.event_done(marker.event)) {
        if (!is_busy(marker.stream)) busy.push_back(marker.stream);
        ++k;
        continue;
      }
      pending.markers[k] = pending.markers.back();
      pending.markers.pop_back();
      backend_.destroy_event(marker.event);
    }
    if (!pending.markers.empty() || !pending.unmarked.empty()) {
      ++i;
      continue;
    }
    Block* block = pending.block;
    if (i + 1 != pending_frees_.size()) pending_frees_[i] = std::move(pending_frees_.back());
    pending_frees_.pop_back();
    block = free_block(block);
    // Without caching the block is a segment of its own, returned now as free() returns one.
    if (!caching_ && backend_.can_release() && !retained_streams_.contains(block->stream)) {
      release_segment(pool_for(block->small_pool), block);
    }
  }
}

}  // namespace ember
