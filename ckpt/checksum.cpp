// XXH3-64 through libxxhash.
#include "ckpt/checksum.h"

#include <xxhash.h>
// On x86 libxxhash also exports variants that pick AVX2 or AVX-512 at run time: the same hash
// values, twice the speed of the SSE2 baseline the library is built for (measured 26 vs 12 GB/s
// on the Zen 3 dev VM), which matters because every saved and loaded byte is hashed.
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <new>

namespace ember::ckpt {

uint64_t checksum(const void* data, size_t size) { return XXH3_64bits(data, size); }

std::string checksum_hex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i) {
    text[i] = kDigits[value & 0xf];
    value >>= 4;
  }
  return text;
}

bool parse_checksum_hex(std::string_view text, uint64_t* value) {
  if (text.size() != 16) return false;
  uint64_t result = 0;
  for (char c : text) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return false;  // one spelling only: lowercase
    result = (result << 4) | static_cast<uint64_t>(digit);
  }
  *value = result;
  return true;
}

uint64_t choose_block_bytes(uint64_t chunk_length) {
  uint64_t block = 64 << 10;
  while (block < (16ull << 20) && chunk_length / block >= 256) block *= 2;
  return block;
}

uint64_t block_count(uint64_t length, uint64_t block_bytes) {
  return length / block_bytes + (length % block_bytes != 0 ? 1 : 0);
}

std::vector<uint64_t> block_checksums(const std::byte* data, uint64_t length, uint64_t block_bytes) {
  std::vector<uint64_t> sums;
  sums.reserve(block_count(length, block_bytes));
  for (uint64_t start = 0; start < length; start += block_bytes) {
    uint64_t size = std::min(block_bytes, length - start);
    sums.push_back(checksum(data + start, size));
  }
  return sums;
}

StreamingChecksum::StreamingChecksum() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();
  reset();
}

StreamingChecksum::~StreamingChecksum() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StreamingChecksum::reset() { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }

void StreamingChecksum::update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

uint64_t StreamingChecksum::digest() const {
  return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_));
}

}  // namespace ember::ckpt
