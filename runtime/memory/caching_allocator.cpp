// Pool logic of the caching allocator: best-fit search, splitting, merging, statistics.
#include "runtime/memory/caching_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "runtime/error.h"

namespace ember {

namespace {

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Splitting leaves a remainder only when it is big enough to be useful again.
constexpr size_t kMinSplitRemainderSmall = CachingAllocator::kRoundBytes;
constexpr size_t kMinSplitRemainderLarge = size_t{1} << 20;

}  // namespace

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->pointer) < std::tie(b->stream, b->size, b->pointer);
}

CachingAllocator::~CachingAllocator() {
  // Blocks still live at exit belong to static tensors; leave their segments to the OS. A backend
  // error (waiting for other streams' work) must not escape a destructor: the memory is then left.
  try {
    release_free_segments(/*retained_too=*/true);
  } catch (const Error&) {
  }
  for (Block* block : spare_blocks_) delete block;
}

void CachingAllocator::insert_free(FreeBlocks& pool, Block* block) {
  if (spare_nodes_.empty()) {
    pool.insert(block);
    return;
  }
  FreeBlocks::node_type node = std::move(spare_nodes_.back());
  spare_nodes_.pop_back();
  node.value() = block;
  pool.insert(std::move(node));
}

void CachingAllocator::erase_free(FreeBlocks& pool, Block* block) {
  FreeBlocks::node_type node = pool.extract(block);
  if (!node.empty()) spare_nodes_.push_back(std::move(node));
}

CachingAllocator::Block* CachingAllocator::new_block(const Block& value) {
  if (spare_blocks_.empty()) return new Block(value);
  Block* block = spare_blocks_.back();
  spare_blocks_.pop_back();
  *block = value;
  return block;
}

void CachingAllocator::delete_block(Block* block) { spare_blocks_.push_back(block); }

CachingAllocator::Allocation CachingAllocator::allocate(size_t bytes, StreamId stream) {
  check(bytes <= kMaxRequestBytes, "{} allocator: cannot allocate {} bytes, more than any device holds (the largest "
        "request is {} bytes)", backend_.name(), bytes, kMaxRequestBytes);
  const size_t size = caching_ ? round_up(std::max<size_t>(bytes, 1), kRoundBytes) : std::max<size_t>(bytes, 1);
  const bool small_pool = size <= kSmallRequestBytes;
  std::lock_guard lock(mutex_);
  if (!pending_frees_.empty()) finish_pending_frees(/*wait=*/false);
  FreeBlocks& pool = pool_for(small_pool);
  Block* block = take_free_block(pool, size, stream);
  if (block == nullptr) block = new_segment(size, stream, small_pool);
  // Out of memory: a cached block of any size beats failing (and releasing, a device sync).
  if (block == nullptr) block = take_free_block(pool, size, stream, /*any_size=*/true);
  if (block == nullptr) {  // give back what the cache holds and try once more
    release_free_segments();  // also frees the blocks other streams were using: one may fit now
    block = take_free_block(pool, size, stream, /*any_size=*/true);
    if (block == nullptr) block = new_segment(size, stream, small_pool);
    check(block != nullptr, "{} allocator: out of memory allocating {} bytes ({} bytes allocated, {} reserved)",
          backend_.name(), bytes, stats_.allocated_bytes, stats_.reserved_bytes);
  }
  split(block, size, pool);
  block->allocated = true;
  stats_.allocated_bytes += static_cast<int64_t>(block->size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  ++stats_.num_allocations;
  return {block->pointer, block};
}

void CachingAllocator::free(const Allocation& allocation) {
  if (allocation.handle == nullptr) return;
  std::lock_guard lock(mutex_);
  Block* block = static_cast<Block*>(allocation.handle);
  internal_assert(block->allocated && !block->freed_pending && block->pointer == allocation.pointer,
                  "caching allocator: free of a block that is not allocated");
  if (!block->stream_uses.empty()) {  // other streams may still use it: free once they are done
    defer_free(block);
    return;
  }
  free_block(block);
  if (!caching_) {
    // free() runs in destructors: a backend error (a sticky CUDA error, say) leaves the segment
    // cached, to be released by a later free or empty_cache.
    try {
      release_free_segments();
    } catch (const Error&) {
    }
  }
}

CachingAllocator::Block* CachingAllocator::free_block(Block* block) {
  block->allocated = false;
  block->freed_pending = false;
  stats_.allocated_bytes -= static_cast<int64_t>(block->size);
  FreeBlocks& pool = pool_for(block->small_pool);
  if (block->prev && !block->prev->allocated) {
    Block* prev = block->prev;
    merge_into(prev, block, pool);
    block = prev;
  }
  if (block->next && !block->next->allocated) merge_into(block, block->next, pool);
  insert_free(pool, block);
  return block;
}

CachingAllocator::Block* CachingAllocator::take_free_block(FreeBlocks& pool, size_t size, StreamId stream,
                                                           bool any_size) {
  Block* block = find_free_block(pool, size, stream, any_size);
  if (block != nullptr) erase_free(pool, block);
  return block;
}

CachingAllocator::Block* CachingAllocator::find_free_block(FreeBlocks& pool, size_t size, StreamId stream,
                                                           bool any_size) {
  Block key{nullptr, size, stream, false, false, nullptr, nullptr};
  auto candidate = pool.lower_bound(&key);
  if (candidate == pool.end() || (*candidate)->stream != stream) return nullptr;
  // Without caching a block is reused (while segments cannot be released) only at its exact size:
  // a split would start a block off its segment's alignment, a bigger one hide overruns.
  if (!caching_ && (*candidate)->size != size) return nullptr;
  // A huge cached block must not be carved for a small large-pool request (fragmentation), unless
  // the backend is out of memory: then a block that shares its segment with live ones, which no
  // release can return, is the only memory left.
  if (!any_size && !(*candidate)->small_pool && (*candidate)->size > 2 * size + kLargeSegmentRound) return nullptr;
  return *candidate;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, StreamId stream, bool small_pool) {
  const size_t segment = !caching_ ? size : small_pool ? kSmallSegmentBytes : round_up(size, kLargeSegmentRound);
  void* memory = backend_.allocate(segment);
  if (memory == nullptr) return nullptr;
  ++stats_.num_backend_allocations;
  stats_.reserved_bytes += static_cast<int64_t>(segment);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  return new_block({memory, segment, stream, false, small_pool, nullptr, nullptr});
}

void CachingAllocator::split(Block* block, size_t size, FreeBlocks& pool) {
  if (!caching_) return;  // exact sizes only (find_free_block)
  const size_t remainder = block->size - size;
  if (remainder < (block->small_pool ? kMinSplitRemainderSmall : kMinSplitRemainderLarge)) return;
  Block* rest = new_block({static_cast<char*>(block->pointer) + size, remainder, block->stream, false,
                           block->small_pool, block, block->next});
  if (block->next) block->next->prev = rest;
  block->next = rest;
  block->size = size;
  insert_free(pool, rest);
}

// Absorbs the free `neighbour` (which follows `block`) into `block`.
void CachingAllocator::merge_into(Block* block, Block* neighbour, FreeBlocks& pool) {
  erase_free(pool, block);
  erase_free(pool, neighbour);
  block->size += neighbour->size;
  block->next = neighbour->next;
  if (block->next) block->next->prev = block;
  delete_block(neighbour);
}

void CachingAllocator::release_free_segments(bool retained_too) {
  if (!backend_.can_release()) return;
  finish_pending_frees(/*wait=*/true);  // blocks other streams still use may complete a segment
  for (FreeBlocks* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it++;  // the iterator moves on before the block may leave the pool
      // The whole segment is free, and no captured graph may still address it.
      if (block->prev == nullptr && block->next == nullptr &&
          (retained_too || !retained_streams_.contains(block->stream))) {
        release_segment(*pool, block);
      }
    }
  }
}

void CachingAllocator::release_segment(FreeBlocks& pool, Block* block) {
  backend_.release(block->pointer, block->size);
  ++stats_.num_backend_frees;
  stats_.reserved_bytes -= static_cast<int64_t>(block->size);
  erase_free(pool, block);
  delete_block(block);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_free_segments();
}

void CachingAllocator::retain_stream(StreamId stream) {
  std::lock_guard lock(mutex_);
  ++retained_streams_[stream];
}

void CachingAllocator::release_stream(StreamId stream) {
  std::lock_guard lock(mutex_);
  const auto found = retained_streams_.find(stream);
  check(found != retained_streams_.end(), "{} allocator: release_stream of stream {:#x}, which is not retained",
        backend_.name(), stream);
  if (--found->second == 0) retained_streams_.erase(found);
}

void CachingAllocator::wait_for_releases() const { std::lock_guard lock(mutex_); }

namespace {
class CpuMemoryBackend final : public MemoryBackend {
 public:
  void* allocate(size_t bytes) override { return std::aligned_alloc(64, bytes); }
  void release(void* pointer, size_t) override { std::free(pointer); }
  const char* name() const override { return "cpu"; }
};
}  // namespace

CachingAllocator& cpu_allocator() {
  // Never destroyed: tensors in static storage may outlive any static allocator.
  static CpuMemoryBackend* backend = new CpuMemoryBackend;
  static CachingAllocator* allocator = new CachingAllocator(*backend);
  return *allocator;
}

}  // namespace ember
