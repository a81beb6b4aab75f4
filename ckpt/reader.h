// Reading a checkpoint: the manifest is read and validated, and every data file's type and size
// checked, before any tensor byte is read. A rank then reads just the byte ranges of the rows it
// needs (pread), verifying the checksum of every block it touches.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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
  // Data files are opened when a read first needs them, and at most this many stay open (the least
  // recently read is closed first): a checkpoint saved by thousands of ranks must open under the
  // usual limit of 1024 descriptors, and a reader may be one of many rank threads of a process.
  static constexpr size_t kMaxOpenDataFiles = 16;

  // Opens `directory`: reads and validates its manifest, and checks that every data file is a
  // regular file of the manifest's size (each is opened and closed again).
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
  // The open data file `name`, opened now if it is not; shared, so that closing it when another
  // file takes its place waits until a read still using it is done.
  std::shared_ptr<const File> file(std::string_view name) const;
  // Opens a listed data file, checking that it is a regular file of the manifest's size.
  File open_data_file(const DataFile& data_file) const;

  struct OpenFile {
    size_t index = 0;       // in manifest_->files
    uint64_t last_use = 0;  // for closing the least recently read first
    std::shared_ptr<const File> file;
  };

  std::filesystem::path directory_;
  std::shared_ptr<const Manifest> manifest_;
  std::map<std::string, size_t, std::less<>> file_index_;  // data file name -> manifest_->files index
  mutable std::mutex open_files_mutex_;
  mutable std::vector<OpenFile> open_files_;  // at most kMaxOpenDataFiles
  mutable uint64_t uses_ = 0;
  mutable std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace ember::ckpt
