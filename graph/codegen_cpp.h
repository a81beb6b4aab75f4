// Code generation for fused groups: one C++ function per group calling the functors of
// kernels/functors.h, all groups of a graph in one translation unit compiled by the host compiler
// into a shared library (cached on disk by graph/kernel_cache.h), plus the CUDA text of a group.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "graph/fusion.h"

namespace ember::graph {

enum class Target : uint8_t { Cpu, Cuda };

// The source of one group: its body (the op chain on loaded values) and, for Target::Cpu, an
// `extern "C"` entry point with the signature of FusedCpuFunction; for Target::Cuda, an
// `extern "C" __global__` kernel named like the group with a grid-stride loop around the same
// body, taking one FusedCudaArgs-shaped struct by value (declared in the emitted text).
std::string emit_group_source(const FusedGroup& group, Target target);

// One translation unit holding every group (functors.h is the only include).
std::string emit_module_source(std::span<const FusedGroup* const> groups, Target target);

// The CPU entry point. data[0] is output 0, data[1 + k] input k, data[1 + inputs + e] export e
// (contiguous over `sizes`); strides holds rank element strides for output 0 and each input
// (operand-major; 0 on broadcast dims, and for a reduction's output on the reduced dims);
// contiguous != 0 promises that every input is flat over `sizes`, which selects the
// vectorizable loops (for a reduction: over leading or trailing reduced dims).
using FusedCpuFunction = void (*)(char* const* data, const int64_t* strides, const int64_t* sizes, int rank,
                                  int contiguous);

// A loaded shared library; unloaded when the last fused op using it dies.
struct CompiledModule {
  void* handle = nullptr;
  std::string path;
  CompiledModule() = default;
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;
  ~CompiledModule();
  void* symbol(const std::string& name) const;  // throws naming the symbol and library
};

// Compiles `source` for the CPU (or loads the cached library built from the same source,
// compiler and flags) and loads it. Throws ember::Error with the compiler's diagnostics when
// compilation fails. `log` prints the source (EMBER_LOGS=output_code).
std::shared_ptr<CompiledModule> compile_cpu_module(const std::string& source, bool log = false);

// How many times this process ran the host compiler (a cache hit runs none).
int compiler_runs();

// The compiler command used for generated code: path, then flags (for logs and the cache key).
std::string host_compiler_description();

}  // namespace ember::graph
