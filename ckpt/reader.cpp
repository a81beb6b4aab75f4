// CheckpointReader: validation on open, then positioned reads of row ranges with block checksums.
#include "ckpt/reader.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "ckpt/host_copy.h"

namespace ember::ckpt {

namespace fs = std::filesystem;

namespace {

// Every pread asks for at most this many bytes. Measured on a virtio disk with 8 ranks reading
// cold files: 32-128 KiB reads finish 30-40% sooner than 1-2 MiB ones, because the kernel's
// sequential readahead keeps the disk busy while a small read returns as soon as its pages
// arrive, so hashing overlaps the disk; a big read waits for all of its pages first. (Telling the
// kernel every range up front with POSIX_FADV_WILLNEED was slower still: it queues the whole
// file before any rank can start hashing.)
constexpr uint64_t kReadBytes = 64 << 10;

// Ranks simulated as threads of one process open the same checkpoint at once: the last manifest
// parsed is kept, and a reader whose manifest text is byte-for-byte the same shares it instead of
// parsing it again (parsing is most of the CPU time of opening a checkpoint).
std::shared_ptr<const Manifest> parse_shared(const std::string& text, const std::string& source) {
  static std::mutex mutex;
  static std::string last_text;
  static std::shared_ptr<const Manifest> last_manifest;
  std::lock_guard lock(mutex);  // held while parsing: the other ranks wait and then share
  if (last_manifest == nullptr || last_text != text) {
    last_manifest = std::make_shared<const Manifest>(parse_manifest(text, source));
    last_text = text;
  }
  return last_manifest;
}

}  // namespace

CheckpointReader::CheckpointReader(const fs::path& directory) : directory_(directory) {
  const fs::path manifest_path = directory / kManifestFileName;
  const std::string text = read_small_file(manifest_path, kMaxManifestBytes);
  manifest_ = parse_shared(text, manifest_path.string());
  for (size_t i = 0; i < manifest_->files.size(); ++i) {
    open_data_file(manifest_->files[i]);  // closed again: reads open what they need
    file_index_.emplace(manifest_->files[i].name, i);
  }
}

File CheckpointReader::open_data_file(const DataFile& data_file) const {
  File opened = File::open_read(directory_ / data_file.name);
  const uint64_t size = opened.size();
  check(size == data_file.size,
        "checkpoint {}: data file {} is {} bytes but the manifest says {} (truncated, extended "
        "or replaced)", directory_.string(), data_file.name, size, data_file.size);
  return opened;
}

const Entry& CheckpointReader::entry(std::string_view name) const {
  const Entry* found = manifest_->find(name);
  check(found != nullptr, "checkpoint {}: no entry '{}' (it has {} entries; `ember-ckpt inspect` "
        "lists them)", directory_.string(), name, manifest_->entries.size());
  return *found;
}

std::shared_ptr<const File> CheckpointReader::file(std::string_view name) const {
  const auto listed = file_index_.find(name);
  internal_assert(listed != file_index_.end(), "validated chunk names an unlisted file");
  std::lock_guard lock(open_files_mutex_);
  ++uses_;
  for (OpenFile& open : open_files_)
    if (open.index == listed->second) {
      open.last_use = uses_;
      return open.file;
    }
  OpenFile opened{listed->second, uses_,
                  std::make_shared<const File>(open_data_file(manifest_->files[listed->second]))};
  if (open_files_.size() < kMaxOpenDataFiles) {
    open_files_.push_back(opened);
  } else {
    auto least_recent = std::min_element(open_files_.begin(), open_files_.end(),
                                         [](const OpenFile& a, const OpenFile& b) { return a.last_use < b.last_use; });
    *least_recent = opened;
  }
  return opened.file;
}

void CheckpointReader::checksum_mismatch(const Entry& entry, const Chunk& chunk, uint64_t block,
                                         uint64_t actual) const {
  const uint64_t begin = chunk.offset + block * chunk.block_bytes;
  const uint64_t end = chunk.offset + std::min(chunk.length, (block + 1) * chunk.block_bytes);
  fail("checkpoint {}: checksum mismatch in entry '{}' (rows [{}, {})), file {} bytes [{}, {}): "
       "stored {}, computed {}; the data file is corrupt", directory_.string(), entry.name,
       chunk.row_begin, chunk.row_begin + chunk.rows, chunk.file, begin, end,
       checksum_hex(chunk.checksums[block]), checksum_hex(actual));
}

void CheckpointReader::hash_file_range(const Chunk& chunk, uint64_t begin, uint64_t end,
                                       StreamingChecksum& hasher) const {
  if (begin >= end) return;
  std::vector<std::byte> scratch(std::min(end - begin, kReadBytes));
  const std::shared_ptr<const File> data = file(chunk.file);
  for (uint64_t at = begin; at < end; at += scratch.size()) {
    const uint64_t size = std::min<uint64_t>(scratch.size(), end - at);
    data->read_at(scratch.data(), size, chunk.offset + at);
    hasher.update(scratch.data(), size);
  }
  bytes_read_ += end - begin;
}

// Reads bytes [begin, end) of a chunk into `destination` in reads of at most kReadBytes, each hashed
// while still in cache; a block only partly wanted is completed from the file for its checksum.
void CheckpointReader::read_chunk_part(const Entry& entry, const Chunk& chunk, uint64_t begin,
                                       uint64_t end, std::byte* destination) const {
  if (begin >= end) return;
  const std::shared_ptr<const File> data = file(chunk.file);
  StreamingChecksum hasher;
  for (uint64_t block = begin / chunk.block_bytes; block <= (end - 1) / chunk.block_bytes; ++block) {
    const uint64_t block_begin = block * chunk.block_bytes;
    const uint64_t block_end = std::min(block_begin + chunk.block_bytes, chunk.length);
    const uint64_t piece_begin = std::max(block_begin, begin);
    const uint64_t piece_end = std::min(block_end, end);
    std::byte* piece = destination + (piece_begin - begin);
    hasher.reset();
    hash_file_range(chunk, block_begin, piece_begin, hasher);
    for (uint64_t at = piece_begin; at < piece_end; at += kReadBytes) {
      const uint64_t size = std::min(kReadBytes, piece_end - at);
      data->read_at(piece + (at - piece_begin), size, chunk.offset + at);
      hasher.update(piece + (at - piece_begin), size);  // while the bytes are still in cache
    }
    bytes_read_ += piece_end - piece_begin;
    hash_file_range(chunk, piece_end, block_end, hasher);
    const uint64_t actual = hasher.digest();
    if (actual != chunk.checksums[block]) checksum_mismatch(entry, chunk, block, actual);
  }
}

void CheckpointReader::read_rows(const Entry& entry, RowRange rows, std::byte* destination) const {
  const TensorEntry& tensor = entry.tensor();
  check(rows.begin >= 0 && rows.begin <= rows.end && rows.end <= tensor.rows(),
        "checkpoint {}: rows [{}, {}) of entry '{}' are outside its {} rows", directory_.string(),
        rows.begin, rows.end, entry.name, tensor.rows());
  const uint64_t row_bytes = tensor.row_bytes();
  for (const Chunk& chunk : tensor.chunks) {
    const RowRange overlap = intersect(rows, {chunk.row_begin, chunk.row_begin + chunk.rows});
    if (overlap.empty()) continue;
    const uint64_t begin = static_cast<uint64_t>(overlap.begin - chunk.row_begin) * row_bytes;
    const uint64_t end = static_cast<uint64_t>(overlap.end - chunk.row_begin) * row_bytes;
    std::byte* part = destination + static_cast<uint64_t>(overlap.begin - rows.begin) * row_bytes;
    read_chunk_part(entry, chunk, begin, end, part);
    check_bools(entry, chunk, begin, part, end - begin);
  }
}

void CheckpointReader::check_bools(const Entry& entry, const Chunk& chunk, uint64_t begin, const std::byte* data,
                                   uint64_t count) const {
  if (entry.tensor().dtype != kBool) return;
  const int64_t bad = first_invalid_bool(data, count);
  if (bad < 0) return;
  fail("checkpoint {}: bool entry '{}' holds byte {} at element {} (file {} byte {}); a bool element is 0 or 1",
       directory_.string(), entry.name, std::to_integer<unsigned>(data[bad]),
       static_cast<uint64_t>(chunk.row_begin) * entry.tensor().row_bytes() + begin + static_cast<uint64_t>(bad),
       chunk.file, chunk.offset + begin + static_cast<uint64_t>(bad));
}

Tensor CheckpointReader::read(std::string_view name, std::optional<RowRange> rows) const {
  const Entry& found = entry(name);
  const TensorEntry& tensor = found.tensor();
  const RowRange wanted = rows.value_or(RowRange{0, tensor.rows()});
  Dims shape = tensor.shape;
  if (!shape.empty()) shape[0] = std::max<int64_t>(wanted.size(), 0);
  else check(wanted == RowRange{0, 1}, "checkpoint: entry '{}' is 0-d; it has one row", name);
  Tensor result = make_tensor(shape, tensor.dtype, kCPU);
  read_rows(found, wanted, static_cast<std::byte*>(result.raw_data_ptr()));
  return result;
}

void CheckpointReader::verify() const {
  StreamingChecksum hasher;
  for (const Entry& entry : manifest_->entries) {
    if (!entry.is_tensor()) continue;
    for (const Chunk& chunk : entry.tensor().chunks) {
      if (entry.tensor().dtype == kBool) {
        // Its bytes are needed too: read_chunk_part checks the checksums as it reads them.
        std::vector<std::byte> bytes(chunk.length);
        read_chunk_part(entry, chunk, 0, chunk.length, bytes.data());
        check_bools(entry, chunk, 0, bytes.data(), chunk.length);
        continue;
      }
      for (uint64_t block = 0; block < chunk.checksums.size(); ++block) {
        hasher.reset();
        const uint64_t begin = block * chunk.block_bytes;
        hash_file_range(chunk, begin, std::min(begin + chunk.block_bytes, chunk.length), hasher);
        if (hasher.digest() != chunk.checksums[block])
          checksum_mismatch(entry, chunk, block, hasher.digest());
      }
    }
  }
}

}  // namespace ember::ckpt
