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
  internal_assert(block->allocated && block->pointer == allocation.pointer,
                  "caching allocator: record_stream on a block that is not allocated");
  if (stream == block->stream) return;  // its own stream's work is ordered by the stream itself
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) == block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
}

void CachingAllocator::finish_pending_frees(bool wait) {
  auto freed = [&](PendingFree& pending) {
    // Streams that could not be marked at the free (a capture was underway) are marked now: later
    // than needed, which only delays the reuse.
    std::erase_if(pending.unmarked, [&](StreamId stream) {
      void* event = backend_.record_event(stream);
      if (event != nullptr) pending.events.push_back(event);
      return event != nullptr;
    });
    std::erase_if(pending.events, [&](void* event) {
      if (wait) {
        backend_.wait_event(event);
      } else if (!backend_.event_done(event)) {
        return false;
      }
      backend_.destroy_event(event);
      return true;
    });
    if (!pending.events.empty() || !pending.unmarked.empty()) return false;
    free_block(pending.block);
    return true;
  };
  std::erase_if(pending_frees_, freed);
}

}  // namespace ember
