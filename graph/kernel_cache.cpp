// The disk kernel cache: xxHash3-128 keys, and publication by write-temp + fsync + rename, which
// POSIX makes atomic within one directory, so a reader sees either no entry or a complete one.
#include "graph/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "runtime/error.h"

namespace ember::graph::cache {
namespace fs = std::filesystem;

namespace {

std::string errno_text(int error) { return std::strerror(error); }

// Creates `path` (and parents) and checks that files can be made inside it.
void ensure_writable_directory(const fs::path& path) {
  std::error_code error;
  fs::create_directories(path, error);
  if (error) fail("kernel cache: cannot create directory '{}': {}", path.string(), error.message());
  if (!fs::is_directory(path, error)) fail("kernel cache: '{}' is not a directory", path.string());
  if (::access(path.c_str(), W_OK | X_OK) != 0)
    fail("kernel cache: directory '{}' is not writable: {}", path.string(), errno_text(errno));
}

// Closes a POSIX file descriptor on every path out, including exceptions.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now so that a failing close (delayed write errors on some file systems) is reported.
  int close() {
    int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

// Flushes `file` (and, best effort, its directory entry) to stable storage before rename, so a
// crash can leave a missing entry but never an entry name pointing at unwritten data.
void sync_file(const fs::path& file) {
  FileDescriptor fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 || ::fsync(fd.get()) != 0)
    fail("kernel cache: cannot sync '{}': {}", file.string(), errno_text(errno));
}

void sync_directory(const fs::path& directory) {
  FileDescriptor fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());  // durability only; the rename is already atomic
}

void rename_into_place(const fs::path& temp, const fs::path& entry) {
  if (::rename(temp.c_str(), entry.c_str()) != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    fail("kernel cache: cannot publish '{}' (rename from '{}'): {}", entry.string(),
         temp.string(), errno_text(error));
  }
  sync_directory(entry.parent_path());
}

}  // namespace

fs::path directory() {
  fs::path root;
  if (const char* configured = std::getenv("EMBER_CACHE_DIR"); configured && *configured) {
    root = configured;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    root = fs::path(home) / ".cache" / "ember";
  } else {
    // No HOME (daemons, some containers): a per-user directory, so users never share entries.
    root = fs::path("/tmp") / ("ember-cache-" + std::to_string(::getuid()));
  }
  ensure_writable_directory(root);
  return root;
}

std::string key(std::initializer_list<std::string_view> parts) {
  XXH3_state_t* state = XXH3_createState();
  internal_assert(state != nullptr, "XXH3_createState returned null");
  XXH3_128bits_reset(state);
  for (std::string_view part : parts) {
    // The length prefix keeps part boundaries in the hash: ("ab","c") differs from ("a","bc").
    uint64_t length = part.size();
    XXH3_128bits_update(state, &length, sizeof(length));
    XXH3_128bits_update(state, part.data(), part.size());
  }
  XXH128_hash_t hash = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("{:016x}{:016x}", hash.high64, hash.low64);
}

fs::path entry(std::string_view kind, const std::string& key, std::string_view extension) {
  check(!kind.empty() && kind.find('/') == std::string_view::npos,
        "kernel cache: entry kind '{}' must be a non-empty name without '/'", kind);
  fs::path folder = directory() / fs::path(std::string(kind));
  ensure_writable_directory(folder);
  return folder / (key + std::string(extension));
}

fs::path temp_path(const fs::path& entry) {
  static std::atomic<uint64_t> counter{0};
  // pid separates processes, the thread hash and counter separate writers inside one process.
  std::string name = fmt::format(".tmp-{}-{}-{:x}-{}", entry.filename().string(), ::getpid(),
                                 std::hash<std::thread::id>{}(std::this_thread::get_id()),
                                 counter.fetch_add(1, std::memory_order_relaxed));
  return entry.parent_path() / name;
}

void publish(const fs::path& entry, std::string_view bytes) {
  fs::path temp = temp_path(entry);
  FileDescriptor fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0)
    fail("kernel cache: cannot create '{}': {}", temp.string(), errno_text(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t count = ::write(fd.get(), bytes.data() + written, bytes.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      int error = errno;
      ::unlink(temp.c_str());
      fail("kernel cache: cannot write '{}': {}", temp.string(), errno_text(error));
    }
    written += static_cast<size_t>(count);
  }
  if (::fsync(fd.get()) != 0 || fd.close() != 0) {
    int error = errno;
    ::unlink(temp.c_str());
    fail("kernel cache: cannot write '{}': {}", temp.string(), errno_text(error));
  }
  rename_into_place(temp, entry);
}

void publish_file(const fs::path& temp, const fs::path& entry) {
  check(temp.parent_path() == entry.parent_path(),
        "kernel cache: temp file '{}' must be in the entry's directory '{}' for an atomic rename",
        temp.string(), entry.parent_path().string());
  sync_file(temp);
  rename_into_place(temp, entry);
}

std::optional<std::string> read(const fs::path& entry) {
  FileDescriptor fd(::open(entry.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("kernel cache: cannot read '{}': {}", entry.string(), errno_text(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0)
    fail("kernel cache: cannot stat '{}': {}", entry.string(), errno_text(errno));
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t count = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) fail("kernel cache: cannot read '{}': {}", entry.string(), errno_text(errno));
    if (count == 0) break;  // cannot happen for a published (immutable) entry
    done += static_cast<size_t>(count);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace ember::graph::cache
