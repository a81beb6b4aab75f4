// Runs the generated CUDA kernels of fused groups on the CPU, so a machine without a GPU checks
// what it can of them: the index arithmetic, broadcasting, strided inputs, the reduction's split
// and fixed-order combination, exports, and the argument block the host packs
// (graph/fused_launch.h) against the struct the kernel declares. The program text is compiled by
// the host compiler with the CUDA built-ins it uses (blockIdx, threadIdx, blockDim, gridDim,
// __shared__, __syncthreads, __launch_bounds__) defined over std::thread: one thread per CUDA thread of a block,
// one block at a time. Timing, warps and the GPU memory model are not emulated; the GPU run of
// tools/gpu_check.sh covers those.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/codegen_cpp.h"
#include "graph/fused_launch.h"
#include "graph/fusion.h"
#include "runtime/ember.h"

namespace ember::graph_test {

inline const char* kCudaEmulationShim = R"(
#include <barrier>
#include <cstddef>
#include <thread>
#include <vector>
namespace ember_emulation {
struct Dim {
  unsigned x = 1, y = 1, z = 1;
};
inline Dim grid_dim, block_dim;
inline thread_local Dim block_index, thread_index;
inline thread_local std::barrier<>* block_barrier = nullptr;
inline void launch(Dim grid, Dim block, void (*kernel)(const void*), const void* arguments) {
  grid_dim = grid;
  block_dim = block;
  for (unsigned b = 0; b < grid.x * grid.y; ++b) {
    std::barrier<> barrier(static_cast<std::ptrdiff_t>(block.x * block.y));
    std::vector<std::thread> threads;
    for (unsigned y = 0; y < block.y; ++y)
      for (unsigned x = 0; x < block.x; ++x)
        threads.emplace_back([&, b, x, y] {
          block_index = {b % grid.x, b / grid.x, 0};
          thread_index = {x, y, 0};
          block_barrier = &barrier;
          kernel(arguments);
        });
    for (std::thread& thread : threads) thread.join();
  }
}
}  // namespace ember_emulation
#define gridDim ember_emulation::grid_dim
#define blockDim ember_emulation::block_dim
#define blockIdx ember_emulation::block_index
#define threadIdx ember_emulation::thread_index
#define __global__
#define __launch_bounds__(threads)
#define __shared__ static
#define __syncthreads() ember_emulation::block_barrier->arrive_and_wait()
)";

using EmulatedKernel = void (*)(const void* arguments, unsigned grid, unsigned pieces, unsigned block_x,
                                unsigned block_y);

// The CUDA program of `groups` (names must differ) compiled for the CPU, with an `extern "C"
// <name>_emulate(arguments, grid, pieces, block_x, block_y)` launcher per group, and one
// `<name>_finish_emulate` per reduction group for its finishing kernel.
inline std::shared_ptr<graph::CompiledModule> compile_emulated(std::span<const graph::FusedGroup* const> groups) {
  std::string source = graph::emit_module_source(groups, graph::Target::Cuda);
  const std::string include = "#include \"kernels/functors.h\"\n";
  const size_t at = source.find(include);
  REQUIRE(at != std::string::npos);
  source.insert(at + include.size(), kCudaEmulationShim);
  auto launcher = [&](const std::string& kernel, const std::string& args) {
    source += fmt::format(
        "static void {0}_thread(const void* arguments) {{ {0}(*static_cast<const {1}_args*>(arguments)); }}\n"
        "extern \"C\" void {0}_emulate(const void* arguments, unsigned grid, unsigned pieces, unsigned block_x,\n"
        "                                unsigned block_y) {{\n"
        "  ember_emulation::launch({{grid, pieces, 1}}, {{block_x, block_y, 1}}, {0}_thread, arguments);\n}}\n",
        kernel, args);
  };
  for (const graph::FusedGroup* group : groups) {
    launcher(group->name, group->name);
    if (group->root != graph::FusedRoot::None) launcher(group->name + "_finish", group->name);
  }
  return graph::compile_cpu_module(source);
}

// Runs `group`'s emulated kernel on CPU `inputs` with `launch` (default: the launch the CUDA
// backend would use), and its finishing kernel when the launch splits the reduced elements into
// pieces, and returns output 0 and the exports.
inline std::vector<Tensor> run_emulated(const graph::CompiledModule& module, const graph::FusedGroup& group,
                                        const std::vector<Tensor>& inputs, graph::FusedCudaLaunch launch = {}) {
  if (launch.grid == 0) launch = graph::fused_cuda_launch(group);
  TensorList outputs;
  outputs.push_back(empty(group.output.sizes, {.dtype = group.output.dtype}));
  for (size_t e = 0; e < group.exports.size(); ++e)
    outputs.push_back(empty(group.shape, {.dtype = group.export_dtype(e)}));
  const Attrs none;
  const OpCall call{registry().get("add"), std::span<const Tensor>(inputs), none};  // only the inputs are read
  graph::FusedOperands operands;
  graph::fill_fused_operands(group, call, outputs, operands);
  // NaN in every piece sum, so a piece the kernel forgot to write shows in the result.
  const int64_t sums = launch.pieces > 1 ? launch.pieces * graph::fused_extent(group).outputs : 0;
  std::vector<double> piece_sums(static_cast<size_t>(std::max<int64_t>(sums, 1)),
                                 std::numeric_limits<double>::quiet_NaN());
  const graph::FusedPieceSums pieces{launch.pieces > 1 ? piece_sums.data() : nullptr, launch.pieces};
  std::vector<uint64_t> words;
  graph::fill_fused_cuda_arguments(group, operands, pieces, words);
  const auto kernel = reinterpret_cast<EmulatedKernel>(module.symbol(group.name + "_emulate"));
  if (launch.grid > 0) kernel(words.data(), launch.grid, launch.pieces, launch.block_x, launch.block_y);
  if (launch.grid > 0 && launch.pieces > 1) {
    const graph::FusedCudaLaunch finish = graph::finish_launch(group);
    const auto finish_kernel = reinterpret_cast<EmulatedKernel>(module.symbol(group.name + "_finish_emulate"));
    finish_kernel(words.data(), finish.grid, 1, finish.block_x, 1);
  }
  std::vector<Tensor> results;
  for (int i = 0; i < outputs.size(); ++i) results.push_back(outputs[i]);
  return results;
}

}  // namespace ember::graph_test
