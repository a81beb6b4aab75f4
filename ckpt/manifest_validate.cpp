// Cross-member checks of a manifest: names, files, sizes without overflow, chunk bounds within
// their files, byte ranges that overlap, rows covered twice or not at all. Runs on every parsed
// manifest and on every manifest the writer is about to commit.
#include <algorithm>

#include "ckpt/checksum.h"
#include "ckpt/manifest.h"

namespace ember::ckpt {

namespace {

constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 62;

// A name as messages show it: its first 40 bytes when longer, other than printable ASCII as \xHH.
std::string printable_name(std::string_view name) {
  constexpr size_t kShown = 40;
  std::string shown;
  for (char c : name.substr(0, kShown)) {
    if (c >= 0x20 && c <= 0x7e) shown += c;
    else shown += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  return name.size() > kShown ? shown + "..." : shown;
}

// Bytes of the whole tensor, refusing shapes whose size overflows.
void check_tensor_size(const Entry& entry, std::string_view source) {
  const TensorEntry& tensor = entry.tensor();
  uint64_t bytes = element_size(tensor.dtype);
  for (int64_t dim : tensor.shape) {
    check(dim >= 0, "{}: entry '{}' has negative dim {} in shape {}", source, entry.name, dim,
          tensor.shape);
    check(dim == 0 || bytes <= kMaxTensorBytes / static_cast<uint64_t>(dim),
          "{}: entry '{}' shape {} of {} is larger than 2^62 bytes", source, entry.name,
          tensor.shape, dtype_name(tensor.dtype));
    bytes *= static_cast<uint64_t>(dim);
  }
}

struct ByteRange {
  const DataFile* file;
  uint64_t offset;
  uint64_t length;
  const Entry* entry;
  size_t chunk;
};

void check_chunks(const Entry& entry, const Manifest& manifest, std::vector<ByteRange>& ranges,
                  std::string_view source) {
  const TensorEntry& tensor = entry.tensor();
  const int64_t rows = tensor.rows();
  const uint64_t row_bytes = tensor.row_bytes();
  for (size_t i = 0; i < tensor.chunks.size(); ++i) {
    const Chunk& chunk = tensor.chunks[i];
    const auto where = [&] {
      return fmt::format("{}: entry '{}' chunk {} (file {}, bytes [{}, {}))", source, entry.name, i,
                         chunk.file, chunk.offset, chunk.offset + chunk.length);
    };
    const DataFile* file = manifest.find_file(chunk.file);
    check(file != nullptr, "{}: file {} is not listed in the manifest's files", where(), chunk.file);
    check(chunk.rows > 0 && chunk.row_begin >= 0 && chunk.row_begin <= rows &&
              chunk.rows <= rows - chunk.row_begin,
          "{}: rows [{}, {}) are outside the tensor's {} rows", where(), chunk.row_begin,
          chunk.row_begin + chunk.rows, rows);
    const uint64_t expected = static_cast<uint64_t>(chunk.rows) * row_bytes;
    check(chunk.length == expected,
          "{}: length {} disagrees with {} rows of {} bytes ({} {}) = {}", where(), chunk.length,
          chunk.rows, row_bytes, dtype_name(tensor.dtype), tensor.shape, expected);
    check(chunk.offset <= file->size && chunk.length <= file->size - chunk.offset,
          "{}: the range ends past the end of {} ({} bytes)", where(), chunk.file, file->size);
    check(chunk.block_bytes >= kMinBlockBytes && chunk.block_bytes <= kMaxBlockBytes,
          "{}: block_bytes {} is outside [{}, {}]", where(), chunk.block_bytes, kMinBlockBytes,
          kMaxBlockBytes);
    check(chunk.checksums.size() == block_count(chunk.length, chunk.block_bytes),
          "{}: {} checksums for {} blocks of {} bytes", where(), chunk.checksums.size(),
          block_count(chunk.length, chunk.block_bytes), chunk.block_bytes);
    if (chunk.length > 0) ranges.push_back({file, chunk.offset, chunk.length, &entry, i});
  }
}

// The chunks, sorted by row, must tile [0, rows) exactly.
void check_coverage(Entry& entry, std::string_view source) {
  TensorEntry& tensor = std::get<TensorEntry>(entry.content);
  std::sort(tensor.chunks.begin(), tensor.chunks.end(),
            [](const Chunk& a, const Chunk& b) { return a.row_begin < b.row_begin; });
  check(tensor.sharding == Sharding::Replicated || !tensor.shape.empty(),
        "{}: entry '{}' is 0-d and cannot be sharded by rows", source, entry.name);
  if (tensor.sharding == Sharding::Replicated)
    check(tensor.chunks.size() == (tensor.rows() > 0 ? 1u : 0u),
          "{}: replicated entry '{}' has {} chunks; it is written once, as one chunk", source,
          entry.name, tensor.chunks.size());
  int64_t covered = 0;
  for (const Chunk& chunk : tensor.chunks) {
    check(chunk.row_begin >= covered,
          "{}: entry '{}' rows [{}, {}) are covered twice (chunks in {} at byte {} and earlier)",
          source, entry.name, chunk.row_begin, std::min(covered, chunk.row_begin + chunk.rows),
          chunk.file, chunk.offset);
    check(chunk.row_begin == covered, "{}: entry '{}' rows [{}, {}) are in no chunk", source,
          entry.name, covered, chunk.row_begin);
    covered = chunk.row_begin + chunk.rows;
  }
  check(covered == tensor.rows(), "{}: entry '{}' rows [{}, {}) are in no chunk", source,
        entry.name, covered, tensor.rows());
}

void check_files(const Manifest& manifest, std::string_view source) {
  check(manifest.world_size >= 1, "{}: world_size {} must be at least 1", source,
        manifest.world_size);
  check(manifest.world_size <= kMaxWorldSize, "{}: world_size {} is larger than the limit {}", source,
        manifest.world_size, kMaxWorldSize);
  std::vector<bool> rank_seen(manifest.world_size, false);
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    const DataFile& file = manifest.files[i];
    check_file_name(file.name, source);
    check(file.rank >= 0 && file.rank < manifest.world_size,
          "{}: file {} belongs to rank {}, outside world_size {}", source, file.name, file.rank,
          manifest.world_size);
    check(!rank_seen[file.rank], "{}: rank {} has two data files", source, file.rank);
    rank_seen[file.rank] = true;
    for (size_t j = 0; j < i; ++j)
      check(manifest.files[j].name != file.name, "{}: file {} is listed twice", source, file.name);
  }
}

}  // namespace

void check_entry_name(std::string_view name, std::string_view source) {
  check(!name.empty(), "{}: an entry has an empty name", source);
  check(name.size() <= kMaxNameBytes, "{}: entry name '{}' has {} bytes, more than the {} a reader accepts",
        source, printable_name(name), name.size(), kMaxNameBytes);
  for (size_t i = 0; i < name.size(); ++i)
    check(name[i] >= 0x20 && name[i] <= 0x7e,
          "{}: entry name '{}' has byte 0x{:02x} at offset {}; names are printable ASCII", source,
          printable_name(name), static_cast<unsigned char>(name[i]), i);
}

void check_file_name(std::string_view name, std::string_view source) {
  check(!name.empty(), "{}: a data file has an empty name", source);
  check(name.front() != '/', "{}: data file '{}' is an absolute path; files must be plain names "
        "inside the checkpoint directory", source, name);
  const bool parent = name == ".." || name.starts_with("../") || name.ends_with("/..") ||
                      name.find("/../") != std::string_view::npos;
  check(!parent, "{}: data file '{}' escapes the checkpoint directory", source, name);
  check(name.find('/') == std::string_view::npos,
        "{}: data file '{}' is not a plain file name (contains '/')", source, name);
  check(name.front() != '.', "{}: data file '{}' starts with '.' (reserved for temporary files)",
        source, name);
  for (char c : name)
    check(c > 0x20 && c < 0x7f, "{}: data file name has byte 0x{:02x}", source,
          static_cast<unsigned char>(c));
  check(name != kManifestFileName, "{}: a data file may not be named {}", source, name);
}

void validate_manifest(Manifest& manifest, std::string_view source) {
  check_files(manifest, source);
  for (const Entry& entry : manifest.entries) check_entry_name(entry.name, source);
  std::sort(manifest.entries.begin(), manifest.entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  for (size_t i = 1; i < manifest.entries.size(); ++i)
    check(manifest.entries[i - 1].name != manifest.entries[i].name,
          "{}: entry name '{}' appears twice", source, manifest.entries[i].name);
  std::vector<ByteRange> ranges;
  for (Entry& entry : manifest.entries) {
    if (!entry.is_tensor()) continue;
    check_tensor_size(entry, source);
    check_chunks(entry, manifest, ranges, source);
    check_coverage(entry, source);
  }
  std::sort(ranges.begin(), ranges.end(), [](const ByteRange& a, const ByteRange& b) {
    return a.file != b.file ? a.file < b.file : a.offset < b.offset;
  });
  for (size_t i = 1; i < ranges.size(); ++i) {
    const ByteRange& previous = ranges[i - 1];
    const ByteRange& current = ranges[i];
    check(previous.file != current.file || previous.offset + previous.length <= current.offset,
          "{}: file {} bytes [{}, {}) (entry '{}' chunk {}) overlap bytes [{}, {}) (entry '{}' "
          "chunk {})", source, current.file->name, current.offset, current.offset + current.length,
          current.entry->name, current.chunk, previous.offset, previous.offset + previous.length,
          previous.entry->name, previous.chunk);
  }
}

}  // namespace ember::ckpt
