// Chunk checksums: XXH3-64 over fixed-size blocks of a chunk, and their 16-hex-digit spelling in
// the manifest. Blocks let a rank that reads part of a chunk verify only what it touches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::ckpt {

// Block sizes stay within these bounds so a reader's scratch memory for a partial block is bounded.
constexpr uint64_t kMinBlockBytes = 4096;
constexpr uint64_t kMaxBlockBytes = 64ull << 20;

uint64_t checksum(const void* data, size_t size);
std::string checksum_hex(uint64_t value);  // 16 lowercase hex digits
bool parse_checksum_hex(std::string_view text, uint64_t* value);

// The writer's block size: 64 KiB, doubled until a chunk has at most 256 blocks, at most 16 MiB.
// Small blocks keep the extra bytes a resharding reader must read at a chunk's edges small.
uint64_t choose_block_bytes(uint64_t chunk_length);
uint64_t block_count(uint64_t length, uint64_t block_bytes);  // ceil(length / block_bytes)
std::vector<uint64_t> block_checksums(const std::byte* data, uint64_t length, uint64_t block_bytes);

// XXH3-64 over pieces fed in order (a block assembled from scratch and destination memory).
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;

  void reset();
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

}  // namespace ember::ckpt
