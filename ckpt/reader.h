// Reading a checkpoint: the manifest is read and validated, and every data file's size checked,
// before any tensor byte is read. A rank then reads just the byte ranges of the rows it needs
// (pread), verifying the checksum of every block it touches.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "ckpt/checksum.h"
#include "ckpt/file_io.h"
#include "ckpt/manifest.h"
#include "ckpt/sharding.h"
#include "runtime/tensor.h"

namespace ember::ckpt {

class CheckpointReader {
 public:
  // Opens `directory`: reads and validates its manifest, opens every data file and checks its size.
  explicit CheckpointReader(const std::filesystem::path& directory);

  const Manifest& manifest() const { return *manifest_; }
  const std::filesystem::path& directory() const { return directory_; }
  const Entry& entry(std::string_view name) const;  // throws naming the checkpoint when absent

  // Reads rows `rows` of tensor entry `entry` into `destination` (rows.size() * row_bytes bytes).
  void read_rows(const Entry& entry, RowRange rows, std::byte* destination) const;
  // A new contiguous CPU tensor holding rows `rows` (all rows by default) of a tensor entry.
  Tensor read(std::string_view name, std::optional<RowRange> rows = std::nullopt) const;
  const Value& value(std::string_view name) const { return entry(name).value(); }

  // Reads every block of every chunk and checks its checksum, and that every bool element is 0
  // or 1; throws naming the first bad one.
  void verify() const;

  // Data bytes read so far (tests check that a rank reads only what it needs).
  uint64_t bytes_read() const { return bytes_read_.load(); }

 private:
  void read_chunk_part(const Entry& entry, const Chunk& chunk, uint64_t begin, uint64_t end,
                       std::byte* destination) const;
  void hash_file_range(const Chunk& chunk, uint64_t begin, uint64_t end,
                       StreamingChecksum& hasher) const;
  [[noreturn]] void checksum_mismatch(const Entry& entry, const Chunk& chunk, uint64_t block,
                                      uint64_t actual) const;
  // For a bool entry: every byte read from `chunk` at chunk byte `begin` is 0 or 1, else throws
  // naming the entry, the element and the file (a checksum over a bad byte still matches).
  void check_bools(const Entry& entry, const Chunk& chunk, uint64_t begin, const std::byte* data,
                   uint64_t count) const;
  const File& file(std::string_view name) const;

  std::filesystem::path directory_;
  std::shared_ptr<const Manifest> manifest_;
  std::vector<File> files_;  // in manifest_->files order
  mutable std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace ember::ckpt
