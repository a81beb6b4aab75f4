// POSIX file operations of the writer and reader, each throwing ember::Error with the path and
// the system's reason: whole writes, positioned reads, fsync of files and directories, renames.
// Also the numbered durability points at which the crash tests kill the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ember::ckpt {

// An open file descriptor that closes itself.
class File {
 public:
  File() = default;
  File(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  ~File();
  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }

  // New file, refusing an existing one (a temporary directory is fresh, so a clash is a bug).
  static File create(const std::filesystem::path& path);
  // Read-only, refusing symbolic links and anything but a regular file (a FIFO is refused, never
  // waited on): a checkpoint's files are plain files inside it.
  static File open_read(const std::filesystem::path& path);
  static File open_directory(const std::filesystem::path& path);

  void write_all(const void* data, size_t size) const;
  void read_at(void* data, size_t size, uint64_t offset) const;  // all `size` bytes or an error
  uint64_t size() const;
  void sync() const;
  void close();

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

void sync_directory(const std::filesystem::path& path);
void rename_path(const std::filesystem::path& from, const std::filesystem::path& to);
// Writes `text` to `path` by writing a temporary sibling and renaming it over `path`; syncs the
// temporary file before the rename and the directory after it when asked.
void replace_file_atomically(const std::filesystem::path& path, std::string_view text,
                             bool sync_content, bool sync_parent);
std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes);

// A step after which the files on disk are in a new state. When EMBER_CKPT_CRASH_AT=k is set, the
// k-th point reached in this process kills it with SIGKILL (the crash-safety tests sweep k).
void durability_point(std::string_view what);
uint64_t durability_points_reached();

}  // namespace ember::ckpt
