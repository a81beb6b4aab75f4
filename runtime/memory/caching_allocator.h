// A device-independent caching allocator: memory comes from a MemoryBackend in segments, is split
// into blocks, and freed blocks are kept for reuse (merged with free neighbours) instead of being
// returned. The same pool logic serves the CPU (aligned_alloc) and CUDA (cudaMalloc) backends, so
// it is tested on CPU through a fake backend. A block keeps the stream it was allocated on and is
// reused only by allocations on that stream; record_stream() names other streams that use it, and
// its free then waits (without blocking the host) for their work queued up to that point. The
// StreamId is a pool key: the CUDA backend gives a graph capture's allocations a private key of
// their own (cuda::graph_pool), never a real stream's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace ember {

using StreamId = uintptr_t;

// Where segments come from. allocate() returns nullptr when the device is out of memory.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* pointer, size_t bytes) = 0;
  virtual const char* name() const = 0;
  // False while release() must not be called (CUDA: this thread is capturing a CUDA graph, and
  // cudaFree would invalidate the capture); the cache then keeps its segments.
  virtual bool can_release() const { return true; }

  // Stream-ordered reuse, for backends with streams (record_stream). record_event marks the work
  // queued on `stream` so far and returns the marker, or nullptr when none can be made now (CUDA:
  // this thread captures a graph), and the allocator asks again later. event_done says whether
  // the marked work has finished (false when it cannot ask now); wait_event blocks until it has.
  virtual void* record_event(StreamId stream);
  virtual bool event_done(void* event);
  virtual void wait_event(void* event);
  virtual void destroy_event(void* event);
};

struct MemoryStats {
  int64_t allocated_bytes = 0;       // bytes in blocks handed to users (rounded sizes)
  int64_t reserved_bytes = 0;        // bytes held from the backend, used or cached
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocations = 0;       // user allocations served
  int64_t num_backend_allocations = 0;  // e.g. cudaMalloc calls
  int64_t num_backend_frees = 0;        // e.g. cudaFree calls
};

class CachingAllocator {
 public:
  // Sizes are rounded up to this many bytes; it is also every block's alignment.
  static constexpr size_t kRoundBytes = 512;
  // Requests up to this size share segments of kSmallSegmentBytes; larger ones get their own.
  static constexpr size_t kSmallRequestBytes = size_t{1} << 20;
  static constexpr size_t kSmallSegmentBytes = size_t{2} << 20;
  static constexpr size_t kLargeSegmentRound = size_t{2} << 20;
  // The largest request: rounded up to a segment, it still fits the int64 statistics (and no
  // rounding wraps around). Larger ones are refused before anything changes.
  static constexpr size_t kMaxRequestBytes = (size_t{1} << 63) - kLargeSegmentRound;

  // Without `caching`, every allocation is a segment of its own of exactly its size, returned to
  // the backend as soon as it is freed (when the backend can release then; after record_stream,
  // once the other streams' work is found finished): slow, but a tool watching the backend's
  // allocations (compute-sanitizer's memcheck) sees each tensor's bounds and each use after free,
  // which carving tensors out of cached segments hides.
  explicit CachingAllocator(MemoryBackend& backend, bool caching = true) : backend_(backend), caching_(caching) {}
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Memory for `bytes` (may be 0) usable on `stream`; throws ember::Error when the backend is out
  // of memory even after the cache was emptied, or `bytes` exceeds kMaxRequestBytes. The handle
  // identifies the block for free(), so freeing needs no lookup.
  struct Allocation {
    void* pointer = nullptr;
    void* handle = nullptr;
  };
  Allocation allocate(size_t bytes, StreamId stream = 0);
  void free(const Allocation& allocation);

  MemoryStats stats() const;
  void reset_peak_stats();
  // Returns every fully free segment to the backend.
  void empty_cache();
  // Declares that work queued on `stream` (not the allocation's own) uses the allocation, as
  // PyTorch's record_stream: when it is freed, the block returns to the pool only after the work
  // each such stream had queued by then has finished, and it counts as allocated until it does.
  void record_stream(const Allocation& allocation, StreamId stream);
  // Keeps `stream`'s segments from the backend: a CUDA graph captured on that stream keeps the
  // addresses of the blocks its kernels used, even after those blocks went back to the cache.
  // Counted: each retain_stream is undone by one release_stream when that graph is gone, and once
  // no retention is left, empty_cache returns the stream's free segments again.
  void retain_stream(StreamId stream);
  void release_stream(StreamId stream);
  // Returns once a release of segments to the backend running on another thread (empty_cache, an
  // out-of-memory retry, a free without caching) has finished. Releases check can_release() under
  // the lock this takes, so a caller that first made can_release() false (a CUDA capture counting
  // itself as running) knows afterwards that none is running and none will start.
  void wait_for_releases() const;

 private:
  struct Block {
    void* pointer;
    size_t size;
    StreamId stream;
    bool allocated = false;
    bool small_pool;
    Block* prev = nullptr;  // neighbours inside the same segment
    Block* next = nullptr;
    std::vector<StreamId> stream_uses = {};  // other streams' work on it (record_stream)
    bool freed_pending = false;              // freed, waiting for those streams (still allocated)
  };
  // A freed block waiting for other streams' work: a marker per stream, or the streams still to
  // mark (no marker could be made when it was freed).
  struct StreamMarker {
    StreamId stream;
    void* event;
  };
  struct PendingFree {
    Block* block;
    std::vector<StreamMarker> markers;
    std::vector<StreamId> unmarked;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeBlocks = std::set<Block*, BySize>;

  // The smallest free block of at least `size` bytes for `stream`; a large one far bigger than
  // `size` only with `any_size` (out of memory).
  Block* find_free_block(FreeBlocks& pool, size_t size, StreamId stream, bool any_size);
  // find_free_block, and the block found leaves the pool.
  Block* take_free_block(FreeBlocks& pool, size_t size, StreamId stream, bool any_size = false);
  Block* new_segment(size_t size, StreamId stream, bool small_pool);
  void split(Block* block, size_t size, FreeBlocks& pool);
  void merge_into(Block* block, Block* neighbour, FreeBlocks& pool);
  // Returns an allocated block to its pool, merged with free neighbours; the merged block.
  Block* free_block(Block* block);
  // Frees the pending blocks whose streams' work has finished; with `wait`, waits for all of them.
  // A backend error leaves every entry whole (and the call may be repeated).
  void finish_pending_frees(bool wait);
  void defer_free(Block* block);
  // Returns every fully free segment to the backend, except those of retained streams unless
  // `retained_too` (the allocator's end: no graph runs through it any more).
  void release_free_segments(bool retained_too = false);
  // Returns a fully free block of `pool` (a segment of its own) to the backend. A backend error
  // leaves it cached.
  void release_segment(FreeBlocks& pool, Block* block);
  FreeBlocks& pool_for(bool small_pool) { return small_pool ? small_free_ : large_free_; }
  // Pool membership and Block objects through spares: a step's allocate/free pairs would
  // otherwise cost about three malloc/free pairs each (a Block per split, a tree node per insert).
  void insert_free(FreeBlocks& pool, Block* block);
  void erase_free(FreeBlocks& pool, Block* block);
  Block* new_block(const Block& value);
  void delete_block(Block* block);

  MemoryBackend& backend_;
  const bool caching_;
  mutable std::mutex mutex_;
  FreeBlocks small_free_;
  FreeBlocks large_free_;
  std::map<StreamId, int> retained_streams_;  // retentions per stream, none listed at zero
  std::vector<PendingFree> pending_frees_;
  std::vector<FreeBlocks::node_type> spare_nodes_;  // emptied tree nodes, reused by insert_free
  std::vector<Block*> spare_blocks_;                 // deleted Blocks, reused by new_block
  MemoryStats stats_;
};

// The process-wide CPU allocator (64-byte aligned memory from the C library).
CachingAllocator& cpu_allocator();

}  // namespace ember
