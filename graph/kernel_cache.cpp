// Stand-in for the nvrtc helper's kernel cache (same API), replaced when branch nvrtc is merged.
#include "graph/kernel_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "runtime/error.h"

namespace ember::graph::cache {

namespace fs = std::filesystem;

fs::path directory() {
  const char* configured = std::getenv("EMBER_CACHE_DIR");
  fs::path path;
  if (configured != nullptr && *configured != '\0') {
    path = configured;
  } else {
    const char* home = std::getenv("HOME");
    path = fs::path(home != nullptr ? home : "/tmp") / ".cache" / "ember";
  }
  fs::create_directories(path);
  return path;
}

std::string key(std::initializer_list<std::string_view> parts) {
  // Two independent 64-bit FNV-1a streams; each part is length-prefixed so parts cannot blur.
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  auto mix = [&](unsigned char byte) {
    a = (a ^ byte) * 0x100000001b3ull;
    b = (b ^ byte) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
  };
  for (std::string_view part : parts) {
    const uint64_t length = part.size();
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(length >> (8 * i)));
    for (char c : part) mix(static_cast<unsigned char>(c));
  }
  return fmt::format("{:016x}{:016x}", a, b);
}

fs::path entry(std::string_view kind, const std::string& key, std::string_view extension) {
  const fs::path folder = directory() / std::string(kind);
  fs::create_directories(folder);
  return folder / (key + std::string(extension));
}

void publish_file(const fs::path& temp, const fs::path& entry) {
  const int fd = ::open(temp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  fs::rename(temp, entry);
}

void publish(const fs::path& entry, std::string_view bytes) {
  const fs::path temp = entry.string() + fmt::format(".{}.tmp", ::getpid());
  {
    std::ofstream out(temp, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    check(out.good(), "kernel cache: cannot write {}", temp.string());
  }
  publish_file(temp, entry);
}

std::optional<std::string> read(const fs::path& entry) {
  std::ifstream in(entry, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace ember::graph::cache
