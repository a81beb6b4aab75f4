// Compiles generated C++ with the host compiler recorded at build time into a shared library,
// caches it on disk (key: source, compiler identity, flags, target CPU) and loads it.
#include "graph/codegen_cpp.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "graph/kernel_cache.h"
#include "runtime/error.h"

extern char** environ;

namespace ember::graph {

namespace fs = std::filesystem;

namespace {

std::atomic<int> compiler_run_count{0};

std::string compiler_path() {
  const char* configured = std::getenv("EMBER_CXX");
  return configured != nullptr && *configured != '\0' ? configured : EMBER_HOST_CXX;
}

// The directory holding kernels/functors.h: EMBER_INCLUDE_DIR, else <prefix>/include/ember next
// to an installed library (the headers it was installed with, whatever the source tree holds
// now), else the source tree this library was built from.
std::string include_directory() {
  const char* configured = std::getenv("EMBER_INCLUDE_DIR");
  if (configured != nullptr && *configured != '\0') return configured;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&compiler_runs), &info) != 0 && info.dli_fname != nullptr) {
    const fs::path installed = fs::path(info.dli_fname).parent_path().parent_path() / "include" / "ember";
    if (fs::exists(installed / "kernels" / "functors.h")) return installed.string();
  }
  if (fs::exists(fs::path(EMBER_SOURCE_DIR) / "kernels" / "functors.h")) return EMBER_SOURCE_DIR;
  fail("fusion: cannot find ember's headers (kernels/functors.h) for generated code; set EMBER_INCLUDE_DIR");
}

// The flags libember's own kernels are built with (runtime/CMakeLists.txt), so that fused code
// rounds like the eager kernels it replaces: without contraction a multiply of one op and an add of
// the next round apart, as they do eagerly, and the FMAs inside a formula are the explicit
// mul_add calls both compile alike. The flags are part of the cache key.
std::vector<std::string> compile_flags() {
  std::vector<std::string> flags{"-std=c++20", "-O3", "-DNDEBUG", "-fno-math-errno", "-fno-trapping-math",
                                 "-ffp-contract=off", "-fPIC", "-fopenmp", "-w"};
  if (EMBER_NATIVE_CODE) flags.push_back("-march=native");
  return flags;
}

std::string read_command_output(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[512];
  size_t read = 0;
  while ((read = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, read);
  ::pclose(pipe);
  return output;
}

// Read once per process: another compiler version must not load a stale library.
const std::string& compiler_identity() {
  static const std::string identity = [] {
    std::string command = "'";
    command += compiler_path();
    command += "' --version 2>&1";
    std::string text = compiler_path();
    text += '\n';
    text += read_command_output(command);
    return text;
  }();
  return identity;
}

// With -march=native the library is only valid for this CPU model and feature set.
const std::string& target_identity() {
  static const std::string identity = [] {
    if (!EMBER_NATIVE_CODE) return std::string("x86-64 generic");
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, identity;
    while (std::getline(cpuinfo, line) && identity.size() < 4096)
      if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
        identity += line + "\n";
        if (line.rfind("flags", 0) == 0) break;
      }
    return identity;
  }();
  return identity;
}

// Runs the compiler without a shell; its diagnostics come back in `messages`. Returns the exit status.
int run_compiler(const std::vector<std::string>& arguments, const fs::path& log, std::string& messages) {
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  check(spawned == 0, "fusion: cannot start the compiler '{}' (errno {}); set EMBER_CXX", arguments[0], spawned);
  ++compiler_run_count;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  messages = cache::read(log).value_or("");
  fs::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The text of the headers generated code includes (kernels/*.h), read once per process.
const std::string& header_contents() {
  static const std::string contents = [] {
    std::vector<fs::path> headers;
    const fs::path directory = fs::path(include_directory()) / "kernels";
    std::error_code error;  // an ember::Error, not a filesystem_error: the caller then runs unfused
    for (fs::directory_iterator entry(directory, error), end; !error && entry != end; entry.increment(error))
      if (entry->path().extension() == ".h") headers.push_back(entry->path());
    check(!error && !headers.empty(), "fusion: cannot read ember's kernel headers in {} ({}); set EMBER_INCLUDE_DIR "
          "to a directory holding kernels/*.h", directory.string(), error ? error.message() : "no .h files");
    std::sort(headers.begin(), headers.end());
    std::string text;
    for (const fs::path& header : headers) text += header.filename().string() + "\n" + cache::read(header).value_or("");
    return text;
  }();
  return contents;
}

// Whether this cache already holds a compiled library: then more compiles are likely to follow.
bool cache_has_compiled_before() {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(cache::directory() / "cpu", error))
    if (entry.path().extension() == ".so") return true;
  return false;
}

// Parsing functors.h (<cmath> above all) is most of a compile, so it is precompiled once per
// header text, compiler and flags: <cache>/pch/<key>/kernels/functors.h.gch, which GCC picks up
// when that directory is searched before the real headers. One header per directory: GCC does
// not check that a .gch matches its header's text, only the flags. Returns "" when unavailable
// (the compile then parses the header as usual).
//
// Building the header costs twice a whole compile without it (0.5 s against 0.25 s of CPU on the
// dev VM) and saves 0.15 s per later compile, so the first compile into an empty cache goes
// without it, and the header is built by the next cold compile, once the cache shows compiles
// recur.
std::string precompiled_header_directory() {
  if (compiler_identity().find("clang") != std::string::npos) return "";  // the .gch lookup is GCC's
  std::string flags;
  for (const std::string& flag : compile_flags()) flags += flag + " ";
  const std::string key = cache::key({header_contents(), compiler_identity(), flags, target_identity()});
  const fs::path root = cache::entry("pch", key, "");
  const fs::path header = root / "kernels" / "functors.h.gch";
  if (fs::exists(header)) return root.string();
  if (!cache_has_compiled_before()) return "";
  std::error_code error;
  fs::create_directories(header.parent_path(), error);
  const fs::path temp = cache::temp_path(header);
  std::vector<std::string> arguments{compiler_path()};
  for (const std::string& flag : compile_flags()) arguments.push_back(flag);
  arguments.insert(arguments.end(), {"-I" + include_directory(), "-x", "c++-header",
                                     (fs::path(include_directory()) / "kernels" / "functors.h").string(), "-o",
                                     temp.string()});
  std::string messages;
  if (error || run_compiler(arguments, temp.string() + ".log", messages) != 0) {
    fs::remove(temp, error);
    return "";
  }
  cache::publish_file(temp, header);
  return root.string();
}

}  // namespace

CompiledModule::~CompiledModule() {
  if (handle != nullptr) ::dlclose(handle);
}

void* CompiledModule::symbol(const std::string& name) const {
  void* address = ::dlsym(handle, name.c_str());
  check(address != nullptr, "fusion: generated library {} lacks the function {}", path, name);
  return address;
}

int compiler_runs() { return compiler_run_count.load(); }

std::string host_compiler_description() {
  std::string text = compiler_path();
  for (const std::string& flag : compile_flags()) text += " " + flag;
  return text + " -I" + include_directory();
}

namespace {

// Compiles `source` into the cache entry `library` (published atomically).
void compile_into_cache(const std::string& source, const fs::path& library) {
  // Unique temporary names: concurrent compilers of the same key (threads or processes) do not
  // collide, and the rename in publish_file makes exactly one complete file visible.
  const fs::path temp_library = cache::temp_path(library);
  const fs::path source_file = temp_library.string() + ".cpp";
  {
    std::ofstream out(source_file);
    out << source;
    check(out.good(), "fusion: cannot write generated source {}", source_file.string());
  }
  std::vector<std::string> arguments{compiler_path()};
  for (const std::string& flag : compile_flags()) arguments.push_back(flag);
  arguments.push_back("-shared");
  const std::string precompiled = precompiled_header_directory();
  if (!precompiled.empty()) arguments.push_back("-I" + precompiled);  // searched first
  arguments.insert(arguments.end(), {"-I" + include_directory(), "-o", temp_library.string(), source_file.string()});
  std::string messages;
  const int status = run_compiler(arguments, temp_library.string() + ".log", messages);
  if (status != 0) {
    fs::remove(temp_library);
    fail("fusion: compiling generated code failed (exit {}; source kept at {}):\n{}", status, source_file.string(),
         messages);
  }
  fs::remove(source_file);
  cache::publish_file(temp_library, library);
}

}  // namespace

std::shared_ptr<CompiledModule> compile_cpu_module(const std::string& source, bool log) {
  const auto start = std::chrono::steady_clock::now();
  const std::string flags = host_compiler_description();
  // The headers' text is part of the key: a fixed functor must not load a stale library.
  const std::string key = cache::key({source, header_contents(), compiler_identity(), flags, target_identity()});
  const fs::path library = cache::entry("cpu", key, ".so");
  const bool hit = fs::exists(library);
  if (!hit) compile_into_cache(source, library);
  auto module = std::make_shared<CompiledModule>();
  module->path = library.string();
  module->handle = ::dlopen(module->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  bool repaired = false;
  if (module->handle == nullptr && hit) {
    // A damaged entry (a full disk, a cache copied or synced by another tool) would otherwise
    // leave this graph unfused in every later process: it is compiled again, once. Publishing
    // renames a complete file over the entry, so a process reading it meanwhile is safe.
    std::error_code ignored;
    fs::remove(library, ignored);
    compile_into_cache(source, library);
    module->handle = ::dlopen(module->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    repaired = true;
  }
  check(module->handle != nullptr, "fusion: cannot load generated library {}: {}", module->path, ::dlerror());
  if (log) {
    const double milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const std::string how = repaired ? "a damaged cache entry, compiled again: " + flags
                                     : (hit ? "cache hit" : "compiled: " + flags);
    fmt::print(stderr, "[ember output_code] {} ({}, {:.1f} ms)\n{}\n", module->path, how, milliseconds, source);
  }
  return module;
}

}  // namespace ember::graph
