// The disk kernel cache: key stability and sensitivity, publish/read round trips, concurrent
// publishers (threads and forked processes) never exposing a partial entry, clear errors, and a
// damaged host library repaired by compiling it again.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "graph/codegen_cpp.h"
#include "graph/kernel_cache.h"
#include "runtime/error.h"
#include "scoped_cache_dir.h"

namespace test_kernel_cache {

namespace cache = ember::graph::cache;
namespace fs = std::filesystem;

namespace {

using ember::graph_test::ScopedCacheDir;

// A large payload with a per-position pattern, so a torn or mixed write shows as a mismatch.
std::string payload(size_t size, char salt) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + salt) & 0xff);
  return bytes;
}

size_t count_files(const fs::path& folder) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& item : fs::directory_iterator(folder)) ++count;
  return count;
}

}  // namespace

TEST_CASE("kernel cache: keys are 32 hex digits, stable, and depend on every part") {
  std::string base = cache::key({"__global__ void k() {}", "nvrtc 13.0", "-arch=sm_90", "cubin"});
  CHECK(base.size() == 32);
  CHECK(base.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(base == cache::key({"__global__ void k() {}", "nvrtc 13.0", "-arch=sm_90", "cubin"}));
  // Pinned from the first run: a change means every user's cache silently goes cold.
  CHECK(cache::key({"a", "b"}) == "4e8071d3974d16754bcb794c7d699bd6");
  CHECK(cache::key({"a", "b"}) == cache::key({std::string("a"), std::string("b")}));
  CHECK(cache::key({}) != cache::key({""}));

  CHECK(base != cache::key({"__global__ void k() { }", "nvrtc 13.0", "-arch=sm_90", "cubin"}));
  CHECK(base != cache::key({"__global__ void k() {}", "nvrtc 13.1", "-arch=sm_90", "cubin"}));
  CHECK(base != cache::key({"__global__ void k() {}", "nvrtc 13.0", "-arch=sm_80", "cubin"}));
  CHECK(base != cache::key({"__global__ void k() {}", "nvrtc 13.0", "-arch=sm_90", "ptx"}));
  // Part boundaries count: moving a character from one part to the next changes the key.
  CHECK(cache::key({"ab", "c"}) != cache::key({"a", "bc"}));
  CHECK(cache::key({"abc"}) != cache::key({"ab", "c"}));
}

TEST_CASE("kernel cache: directory, entry paths and publish/read round trip") {
  ScopedCacheDir scoped;
  CHECK(cache::directory() == scoped.path());
  std::string key = cache::key({"source"});
  fs::path entry = cache::entry("cuda", key, ".cubin");
  CHECK(entry == scoped.path() / "cuda" / (key + ".cubin"));
  CHECK(fs::is_directory(scoped.path() / "cuda"));
  CHECK_FALSE(cache::read(entry).has_value());

  std::string bytes = payload(4096, 7);
  bytes[10] = '\0';  // binary content with embedded zeros survives
  cache::publish(entry, bytes);
  CHECK(cache::read(entry) == bytes);
  cache::publish(entry, bytes);  // republishing the same key is allowed
  CHECK(cache::read(entry) == bytes);
  CHECK(count_files(entry.parent_path()) == 1);  // no temp file left behind

  fs::path other = cache::entry("cpu", key, ".so");
  fs::path temp = cache::temp_path(other);
  CHECK(temp.parent_path() == other.parent_path());
  CHECK(temp != cache::temp_path(other));
  std::ofstream(temp, std::ios::binary) << "shared object";
  cache::publish_file(temp, other);
  CHECK_FALSE(fs::exists(temp));
  CHECK(cache::read(other) == std::string("shared object"));
  CHECK_THROWS_WITH_AS(cache::publish_file(scoped.path() / "elsewhere", other),
                       doctest::Contains("must be in the entry's directory"), ember::Error);
}

TEST_CASE("kernel cache: concurrent publishers in threads never expose a partial entry") {
  ScopedCacheDir scoped;
  fs::path entry = cache::entry("cuda", cache::key({"threads"}), ".cubin");
  const std::string bytes = payload(1 << 20, 3);
  std::atomic<int> bad_reads{0}, good_reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        if ((t + i) % 2 == 0) cache::publish(entry, bytes);
        std::optional<std::string> seen = cache::read(entry);
        if (seen && *seen != bytes) ++bad_reads;
        if (seen && *seen == bytes) ++good_reads;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(bad_reads == 0);
  CHECK(good_reads > 0);
  CHECK(cache::read(entry) == bytes);
  CHECK(count_files(entry.parent_path()) == 1);
}

TEST_CASE("kernel cache: concurrent publishers in forked processes never expose a partial entry") {
  ScopedCacheDir scoped;
  fs::path entry = cache::entry("cuda", cache::key({"processes"}), ".cubin");
  const std::string bytes = payload(1 << 20, 11);
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: publish and read back; the exit status reports a torn read. _exit skips the
      // parent's doctest state and static destructors.
      int status = 0;
      try {
        for (int i = 0; i < 15; ++i) {
          cache::publish(entry, bytes);
          std::optional<std::string> seen = cache::read(entry);
          if (!seen || *seen != bytes) status = 2;
        }
      } catch (...) {
        status = 3;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  int torn_reads_in_parent = 0;
  for (int i = 0; i < 40; ++i) {
    std::optional<std::string> seen = cache::read(entry);
    if (seen && *seen != bytes) ++torn_reads_in_parent;
  }
  for (pid_t pid : children) {
    int status = -1;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(torn_reads_in_parent == 0);
  CHECK(cache::read(entry) == bytes);
  CHECK(count_files(entry.parent_path()) == 1);
}

TEST_CASE("kernel cache: a stale temp file from a crashed writer breaks nothing") {
  ScopedCacheDir scoped;
  fs::path entry = cache::entry("cuda", cache::key({"stale"}), ".cubin");
  // What a writer killed mid-write leaves: a half-written temp with an entry-like prefix.
  fs::path stale = entry.parent_path() / (".tmp-" + entry.filename().string() + "-99999-0-0");
  std::ofstream(stale, std::ios::binary) << "half a cub";
  CHECK_FALSE(cache::read(entry).has_value());
  cache::publish(entry, "complete cubin");
  CHECK(cache::read(entry) == std::string("complete cubin"));
  CHECK(fs::exists(stale));  // left alone: it may belong to a live writer in another process
}

TEST_CASE("kernel cache: unusable directories and entries give errors naming the path") {
  ScopedCacheDir scoped;
  fs::path file = scoped.path() / "a-file";
  std::ofstream(file) << "not a directory";
  ::setenv("EMBER_CACHE_DIR", (file / "cache").c_str(), 1);
  CHECK_THROWS_WITH_AS(cache::directory(), doctest::Contains((file / "cache").string().c_str()),
                       ember::Error);
  CHECK_THROWS_WITH_AS(cache::entry("cuda", "0123", ".cubin"),
                       doctest::Contains("cannot create directory"), ember::Error);
  ::setenv("EMBER_CACHE_DIR", file.c_str(), 1);
  CHECK_THROWS_WITH_AS(cache::directory(), doctest::Contains(file.string().c_str()), ember::Error);

  ::setenv("EMBER_CACHE_DIR", scoped.path().c_str(), 1);
  CHECK_THROWS_WITH_AS(cache::entry("a/b", "0123", ".cubin"), doctest::Contains("'a/b'"),
                       ember::Error);
  // An entry that exists but cannot be read (here: a directory squatting on the name).
  fs::path entry = cache::entry("cuda", "0123", ".cubin");
  fs::create_directory(entry);
  CHECK_THROWS_WITH_AS(cache::read(entry), doctest::Contains(entry.string().c_str()),
                       ember::Error);
  // Publishing over it fails the rename and says so, leaving no temp file behind.
  CHECK_THROWS_WITH_AS(cache::publish(entry, "bytes"), doctest::Contains("cannot publish"),
                       ember::Error);
  CHECK(count_files(entry.parent_path()) == 1);
}

TEST_CASE("kernel cache: without HOME or EMBER_CACHE_DIR the cache is per-user under /tmp") {
  ScopedCacheDir scoped;
  std::optional<std::string> home;
  if (const char* value = std::getenv("HOME")) home = value;
  const fs::path expected = fs::path("/tmp") / ("ember-cache-" + std::to_string(::getuid()));
  const bool existed = fs::exists(expected);
  ::unsetenv("EMBER_CACHE_DIR");
  ::unsetenv("HOME");
  fs::path chosen = cache::directory();
  if (home) ::setenv("HOME", home->c_str(), 1);
  CHECK(chosen == expected);
  CHECK(fs::is_directory(expected));
  if (!existed) fs::remove(expected);  // leave /tmp as we found it
  if (home) {
    ::setenv("EMBER_CACHE_DIR", "", 1);  // empty means unset
    CHECK(cache::directory() == fs::path(*home) / ".cache" / "ember");
  }
}

TEST_CASE("kernel cache: a damaged host library entry is compiled again once, then loads from the cache") {
  const ScopedCacheDir cache_dir;
  const std::string source = "extern \"C\" int ember_cache_repair_probe() { return 42; }\n";
  std::string path;
  {
    const std::shared_ptr<ember::graph::CompiledModule> module = ember::graph::compile_cpu_module(source);
    path = module->path;
  }  // unloaded: the next dlopen of the path reads the file again
  fs::resize_file(path, 0);  // as a full disk or a broken copy of the cache leaves it
  const int runs_before = ember::graph::compiler_runs();
  const std::shared_ptr<ember::graph::CompiledModule> repaired = ember::graph::compile_cpu_module(source);
  CHECK(ember::graph::compiler_runs() > runs_before);
  CHECK(repaired->path == path);
  CHECK(fs::file_size(path) > 0);
  CHECK(reinterpret_cast<int (*)()>(repaired->symbol("ember_cache_repair_probe"))() == 42);
  const int runs_after_repair = ember::graph::compiler_runs();
  CHECK(ember::graph::compile_cpu_module(source)->path == path);
  CHECK(ember::graph::compiler_runs() == runs_after_repair);
}

}  // namespace test_kernel_cache
