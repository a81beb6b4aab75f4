// NVRTC compilation of generated CUDA programs, with the shared kernels/*.h served from memory
// and the results published to the disk kernel cache.
#include "graph/cuda/nvrtc_program.h"

#include <atomic>
#include <cstring>

#include "graph/cuda/embedded_headers.h"
#include "graph/cuda/nvrtc_library.h"
#include "graph/kernel_cache.h"
#include "runtime/error.h"

namespace ember::graph::cuda {
namespace {

std::atomic<uint64_t> compile_counter{0};

void nvrtc_check(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS) fail("NVRTC: {} failed: {}", call, nvrtc().GetErrorString(result));
}

// Destroys the program on every path out, including a failed compile.
class ProgramHandle {
 public:
  ProgramHandle(std::string_view source, const std::string& name, int header_count,
                const char* const* texts, const char* const* names) {
    std::string text(source);  // NVRTC wants a NUL-terminated string
    nvrtc_check(nvrtc().CreateProgram(&handle_, text.c_str(), name.c_str(), header_count, texts, names),
                "nvrtcCreateProgram");
  }
  ~ProgramHandle() { nvrtc().DestroyProgram(&handle_); }
  ProgramHandle(const ProgramHandle&) = delete;
  ProgramHandle& operator=(const ProgramHandle&) = delete;
  nvrtcProgram get() const { return handle_; }

 private:
  nvrtcProgram handle_ = nullptr;
};

// What NVRTC may #include: kernels/*.h under their paths, and the standard headers those files
// include, each mapped to kernels/nvrtc_std.h. `digest` covers every text, so an edit to a
// functor changes every cache key and stale binaries are never loaded.
struct HeaderSet {
  std::vector<std::string> names, texts;
  std::vector<const char*> name_pointers, text_pointers;
  std::string digest;
};

const HeaderSet& header_set() {
  static const HeaderSet set = [] {
    HeaderSet result;
    for (const EmbeddedHeader& header : embedded_headers()) {
      result.names.emplace_back(header.name);
      result.texts.emplace_back(header.text);
    }
    for (const char* standard : {"cmath", "limits", "type_traits", "cstdint", "cstring"}) {
      result.names.emplace_back(standard);
      result.texts.emplace_back("#include \"kernels/nvrtc_std.h\"\n");
    }
    std::string all;
    for (size_t i = 0; i < result.names.size(); ++i) {
      result.name_pointers.push_back(result.names[i].c_str());
      result.text_pointers.push_back(result.texts[i].c_str());
      all += result.names[i] + '\n' + std::to_string(result.texts[i].size()) + '\n' + result.texts[i];
    }
    result.digest = cache::key({all});
    return result;
  }();
  return set;
}

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc().GetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtc().GetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The source with line numbers, which NVRTC's log refers to. Generated programs are short; a long
// one is cut so the error stays readable.
std::string numbered(std::string_view source, size_t max_lines = 120) {
  std::string result;
  size_t line = 1, start = 0;
  while (start < source.size() && line <= max_lines) {
    size_t end = source.find('\n', start);
    if (end == std::string_view::npos) end = source.size();
    result += fmt::format("{:4} | {}\n", line++, source.substr(start, end - start));
    start = end + 1;
  }
  if (start < source.size()) result += "     | ...\n";
  return result;
}

CudaBinary run_nvrtc(std::string_view source, const CudaTarget& target,
                     const std::vector<std::string>& options, std::string_view program_name) {
  const HeaderSet& headers = header_set();
  ProgramHandle program(source, std::string(program_name), static_cast<int>(headers.names.size()),
                        headers.text_pointers.data(), headers.name_pointers.data());
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  compile_counter.fetch_add(1, std::memory_order_relaxed);
  nvrtcResult result = nvrtc().CompileProgram(program.get(), static_cast<int>(option_pointers.size()),
                                              option_pointers.data());
  if (result != NVRTC_SUCCESS) {
    fail("NVRTC: cannot compile {} for sm_{} ({}):\n{}\nsource:\n{}", program_name, target.sm,
         nvrtc().GetErrorString(result), program_log(program.get()), numbered(source));
  }
  CudaBinary binary;
  binary.sm = target.sm;
  size_t size = 0;
  nvrtc_check(nvrtc().GetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
  binary.cubin.resize(size);
  nvrtc_check(nvrtc().GetCUBIN(program.get(), binary.cubin.data()), "nvrtcGetCUBIN");
  nvrtc_check(nvrtc().GetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
  binary.ptx.resize(size);
  nvrtc_check(nvrtc().GetPTX(program.get(), binary.ptx.data()), "nvrtcGetPTX");
  while (!binary.ptx.empty() && binary.ptx.back() == '\0') binary.ptx.pop_back();
  internal_assert(!binary.cubin.empty() && !binary.ptx.empty(), "NVRTC returned an empty image");
  return binary;
}

}  // namespace

std::string cuda_prelude() {
  return "#include \"kernels/functors.h\"\n"
         "#include \"kernels/reduce_functors.h\"\n"
         "#include \"kernels/half_types.h\"\n";
}

std::vector<std::string> nvrtc_options(const CudaTarget& target) {
  check(target.sm >= 50 && target.sm < 1000, "compile_cuda: target sm {} is not a CUDA SM", target.sm);
  // fmad and precise division/sqrt stay at NVRTC's defaults, which are nvcc's: generated kernels
  // must round like the nvcc-built ones (no --use_fast_math). -default-device makes the
  // unannotated functions of kernels/nvrtc_std.h device functions.
  std::vector<std::string> options = {"-arch=sm_" + std::to_string(target.sm), "-std=c++20",
                                      "-default-device"};
  options.insert(options.end(), target.extra_flags.begin(), target.extra_flags.end());
  return options;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtc_check(nvrtc().Version(&major, &minor), "nvrtcVersion");
  return fmt::format("{}.{}", major, minor);
}

uint64_t nvrtc_compile_count() { return compile_counter.load(std::memory_order_relaxed); }

CudaBinary compile_cuda(std::string_view source, const CudaTarget& target,
                        std::string_view program_name) {
  std::vector<std::string> options = nvrtc_options(target);
  std::string joined_options;
  for (const std::string& option : options) joined_options += option + '\n';
  const std::string key = cache::key({source, header_set().digest, "nvrtc " + nvrtc_version(),
                                      joined_options, "sm_" + std::to_string(target.sm)});
  const auto cubin_entry = cache::entry("cuda", key, ".cubin");
  const auto ptx_entry = cache::entry("cuda", key, ".ptx");
  // The PTX is published before the cubin, so a present cubin means a present PTX; a missing PTX
  // (someone pruned the cache) just means compiling again.
  if (std::optional<std::string> cubin = cache::read(cubin_entry)) {
    if (std::optional<std::string> ptx = cache::read(ptx_entry)) {
      return CudaBinary{std::move(*cubin), std::move(*ptx), target.sm, /*from_cache=*/true};
    }
  }
  CudaBinary binary = run_nvrtc(source, target, options, program_name);
  cache::publish(ptx_entry, binary.ptx);
  cache::publish(cubin_entry, binary.cubin);
  return binary;
}

int cubin_sm(std::string_view image) {
  // ELF64 header: e_ident[4] = 2 (64-bit), e_ident[8] = ABI version, e_machine at 18 (EM_CUDA =
  // 190), e_flags at 48. CUDA's ABI version 8 (CUDA 12.8+) keeps the SM in bits 8-15 of e_flags,
  // older versions in bits 0-7.
  constexpr uint16_t kMachineCuda = 190;
  check(image.size() >= 64 && std::memcmp(image.data(), "\x7f" "ELF", 4) == 0 && image[4] == 2,
        "cubin_sm: the image ({} bytes) is not a 64-bit ELF file", image.size());
  uint16_t machine = 0;
  uint32_t flags = 0;
  std::memcpy(&machine, image.data() + 18, sizeof machine);
  std::memcpy(&flags, image.data() + 48, sizeof flags);
  check(machine == kMachineCuda, "cubin_sm: ELF machine is {}, not EM_CUDA ({})", machine,
        kMachineCuda);
  const int abi_version = static_cast<unsigned char>(image[8]);
  return static_cast<int>(abi_version >= 8 ? (flags >> 8) & 0xffu : flags & 0xffu);
}

}  // namespace ember::graph::cuda
