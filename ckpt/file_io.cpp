// POSIX file operations with errors that name the path, and the crash-test hook.
#include "ckpt/file_io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

namespace ember::ckpt {

namespace {

[[noreturn]] void system_error(std::string_view what, const std::filesystem::path& path) {
  const int error = errno;
  fail("checkpoint: cannot {} {}: {}", what, path.string(), std::strerror(error));
}

int open_or_fail(const std::filesystem::path& path, int flags, std::string_view what) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) system_error(what, path);
  return fd;
}

}  // namespace

File::~File() { close(); }

File::File(File&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

File File::create(const std::filesystem::path& path) {
  return File(open_or_fail(path, O_WRONLY | O_CREAT | O_EXCL, "create"), path);
}

File File::open_read(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO waits for a writer, forever in a checkpoint nobody writes to. With it
  // the open returns, the file's type is checked before any read, and blocking reads come back.
  File file(open_or_fail(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, "open"), path);
  struct stat info {};
  if (::fstat(file.fd_, &info) != 0) system_error("stat", path);
  if (!S_ISREG(info.st_mode)) fail("checkpoint: {} is not a regular file", path.string());
  const int flags = ::fcntl(file.fd_, F_GETFL);
  if (flags < 0 || ::fcntl(file.fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) system_error("clear O_NONBLOCK of", path);
  return file;
}

File File::open_directory(const std::filesystem::path& path) {
  return File(open_or_fail(path, O_RDONLY | O_DIRECTORY, "open directory"), path);
}

void File::write_all(const void* data, size_t size) const {
  const auto* bytes = static_cast<const std::byte*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      system_error("write", path_);
    }
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void File::read_at(void* data, size_t size, uint64_t offset) const {
  auto* bytes = static_cast<std::byte*>(data);
  const uint64_t start = offset;
  while (size > 0) {
    const ssize_t got = ::pread(fd_, bytes, size, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      system_error(fmt::format("read bytes [{}, {}) of", start, offset + size), path_);
    }
    if (got == 0)
      fail("checkpoint: {} ends at byte {}, before the expected range [{}, {})", path_.string(),
           offset, start, offset + size);
    bytes += got;
    offset += static_cast<uint64_t>(got);
    size -= static_cast<size_t>(got);
  }
}

uint64_t File::size() const {
  struct stat info {};
  if (::fstat(fd_, &info) != 0) system_error("stat", path_);
  if (!S_ISREG(info.st_mode)) fail("checkpoint: {} is not a regular file", path_.string());
  return static_cast<uint64_t>(info.st_size);
}

void File::sync() const {
  if (::fsync(fd_) != 0) system_error("fsync", path_);
}

void File::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void sync_directory(const std::filesystem::path& path) { File::open_directory(path).sync(); }

void rename_path(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    system_error(fmt::format("rename {} to", from.string()), to);
}

void replace_file_atomically(const std::filesystem::path& path, std::string_view text,
                             bool sync_content, bool sync_parent) {
  // Built with append: GCC 12 warns falsely (-Wrestrict) on "." + string + ".tmp".
  std::string temporary_name = ".";
  temporary_name.append(path.filename().string()).append(".tmp");
  const std::filesystem::path temporary = path.parent_path() / temporary_name;
  std::filesystem::remove(temporary);  // left by a crash between create and rename
  {
    File file = File::create(temporary);
    file.write_all(text.data(), text.size());
    if (sync_content) file.sync();
  }
  durability_point("pointer written");
  rename_path(temporary, path);
  durability_point("pointer renamed");
  if (sync_parent) sync_directory(path.parent_path());
}

std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes) {
  File file = File::open_read(path);
  const uint64_t size = file.size();
  if (size > max_bytes)
    fail("checkpoint: {} is {} bytes, more than the limit of {}", path.string(), size, max_bytes);
  std::string text(size, '\0');
  file.read_at(text.data(), size, 0);
  return text;
}

namespace {
std::atomic<uint64_t> points_reached{0};

uint64_t crash_point() {
  static const uint64_t point = [] {
    const char* text = std::getenv("EMBER_CKPT_CRASH_AT");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : 0;
  }();
  return point;
}
}  // namespace

void durability_point(std::string_view what) {
  const uint64_t reached = points_reached.fetch_add(1) + 1;
  static const bool trace = std::getenv("EMBER_CKPT_CRASH_TRACE") != nullptr;
  if (trace) fmt::print(stderr, "ember-ckpt durability point {}: {}\n", reached, what);
  if (reached == crash_point()) ::kill(::getpid(), SIGKILL);
}

uint64_t durability_points_reached() { return points_reached.load(); }

}  // namespace ember::ckpt
