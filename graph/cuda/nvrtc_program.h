// The CUDA target of the compile stage's code generation: CUDA C++ source text -> sm_XX cubin and
// PTX through NVRTC, cached on disk (graph/kernel_cache.h). Compiling needs no GPU and no driver;
// loading and launching the result is runtime/cuda/kernel_library.h (CUDA runtime API only).
//
// The contract with the code generator (graph fusion):
//   - A program is one translation unit of `extern "C" __global__` kernels, so a kernel's symbol
//     is its name. It starts with cuda_prelude(), which includes kernels/functors.h (and, through
//     it, fast_math.h, half_types.h) plus reduce_functors.h; the body calls the same functors the
//     CPU runs, e.g. `ember::fn::Add{1.0}(a, b)`, on compute types (float for bf16/fp16 storage:
//     `float(x[i])` loads an ember::BFloat16, `ember::BFloat16(value)` stores one).
//   - The standard headers those files include (<cmath>, <limits>, <type_traits>, <cstdint>,
//     <cstring>) resolve to kernels/nvrtc_std.h; the generated code itself should not need more.
//   - compile_cuda(source) returns the cubin (for CudaTarget::sm) and its PTX; hand both to
//     ember::cuda::KernelLibrary, which loads the cubin on a GPU that can run it (same major
//     version, same or newer minor) and the PTX on newer ones.
//     Simplest: load_cuda_program(source, device) (graph/cuda/cuda_program_cache.h) does both,
//     once per process and device; then library->kernel("name") and library->launch(...).
// Everything here exists only in builds with EMBER_HAS_CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::graph::cuda {

// What the program is compiled for. Every field is part of the disk-cache key.
struct CudaTarget {
  int sm = 90;                           // compute capability x 10: sm_90 cubin, compute_90 PTX
  std::vector<std::string> extra_flags;  // more NVRTC options, e.g. "-lineinfo"
};

struct CudaBinary {
  std::string cubin;  // an ELF image for sm_<target.sm>
  std::string ptx;    // the same code as PTX text (NUL-free), for GPUs of a newer architecture
  int sm = 0;
  bool from_cache = false;  // true when read from the disk cache, NVRTC did not run
};

// The first lines of every generated CUDA program: the shared functors and storage types.
std::string cuda_prelude();

// Compiles `source` for `target` with NVRTC, or reads the result from the disk cache (key: the
// source, the embedded kernels/*.h texts, NVRTC's version, the options and the target). Throws
// ember::Error with NVRTC's log when the program does not compile; `program_name` appears in it.
CudaBinary compile_cuda(std::string_view source, const CudaTarget& target = {},
                        std::string_view program_name = "ember_generated.cu");

// The NVRTC options compile_cuda passes for `target` (for logs and tests).
std::vector<std::string> nvrtc_options(const CudaTarget& target);

// "major.minor" of the linked NVRTC, e.g. "13.0".
std::string nvrtc_version();

// How many times this process has run nvrtcCompileProgram (a disk-cache hit does not count).
uint64_t nvrtc_compile_count();

// The SM a cubin was built for, read from its ELF header (EM_CUDA; the SM sits in e_flags).
// Throws ember::Error when `image` is not a 64-bit CUDA ELF.
int cubin_sm(std::string_view image);

}  // namespace ember::graph::cuda
