// The CUDA target of the code generator: one `extern "C" __global__` kernel per fused group,
// around the same body function as the CPU entry. Shapes are compile-time constants (the fused
// node is specialized for them), so index arithmetic divides by constants, except dynamic dims
// (FusedGroup::dynamic_dims), which the argument block carries; the per-call part is that one
// by-value argument block, whose layout graph/fused_launch.h packs on the host.
#include <fmt/format.h>

#include "graph/codegen_emit_parts.h"
#include "graph/fused_launch.h"

namespace ember::graph::codegen {

namespace {

std::string argument_struct(const FusedGroup& group) {
  const int64_t pointers = 1 + static_cast<int64_t>(group.inputs.size() + group.exports.size());
  return fmt::format(
      "struct {0}_args {{\n"
      "  char* data[{1}];  // output 0, the inputs, then the exports\n"
      "  int64_t strides[{2}];  // each input's element strides over the shape (0: broadcast)\n"
      "{4}{5}"
      "  int64_t contiguous;  // 1: every input is flat over the shape\n"
      "}};\n"
      "static_assert(sizeof({0}_args) == {3} * 8, \"the layout graph/fused_launch.h packs\");\n",
      group.name, pointers, fused_cuda_stride_words(group), fused_cuda_argument_words(group),
      group.dynamic_dims == 0 ? ""
                              : fmt::format("  int64_t sizes[{}];  // the shape: its dynamic dims are read here\n",
                                            group.shape.size()),
      group.root == FusedRoot::None ? ""
                                    : "  double* piece_sums;  // [pieces][outputs] when split over blocks\n"
                                      "  int64_t pieces;  // gridDim.y: how many pieces each output's elements are cut in\n");
}

// The shape as constants, except the dynamic dims, which the argument block carries.
std::string constant_sizes(const FusedGroup& group) {
  std::string list;
  for (int d = 0; d < group.shape.size(); ++d)
    list += (d ? ", " : "") + (((group.dynamic_dims >> d) & 1u) != 0 ? fmt::format("args.sizes[{}]", d)
                                                                     : std::to_string(group.shape[d]));
  return fmt::format("  {} int64_t sizes[{}] = {{{}}};\n", group.dynamic_dims == 0 ? "constexpr" : "const",
                     group.shape.size(), list);
}

// Statements that fill `offset[k]` (input k's element offset) from the element's index over the
// shape: `kept` and, for a reduction, `reduced` are consumed dim by dim from the last, and `flat`
// becomes the element's row-major number (where exports are stored).
std::string offsets(const FusedGroup& group, const std::string& indent) {
  const int rank = group.shape.size();
  const size_t inputs = group.inputs.size();
  std::string text = fmt::format("{}int64_t offset[{}] = {{}};\n{}int64_t flat = 0, dense = 1;\n", indent,
                                 std::max<size_t>(inputs, 1), indent);
  if (rank == 0) return text;
  const bool reduction = group.root != FusedRoot::None;
  text += fmt::format(
      "{0}#pragma unroll\n"
      "{0}for (int d = {1} - 1; d >= 0; --d) {{\n"
      "{0}  int64_t& rest = {2};\n"
      "{0}  const int64_t index = rest % sizes[d];\n"
      "{0}  rest /= sizes[d];\n"
      "{0}  flat += index * dense;\n"
      "{0}  dense *= sizes[d];\n"
      "{0}  #pragma unroll\n"
      "{0}  for (int k = 0; k < {3}; ++k) offset[k] += index * args.strides[k * {1} + d];\n"
      "{0}}}\n",
      indent, rank, reduction ? fmt::format("((0x{:x}u >> d) & 1u) ? reduced : kept", group.reduced_dims) : "kept",
      inputs);
  return text;
}

std::string flat_loads(const FusedGroup& group) {
  return loads(group, [](size_t) { return std::string("flat"); });
}

std::string strided_loads(const FusedGroup& group) {
  return loads(group, [](size_t k) { return fmt::format("offset[{}]", k); });
}

// A reduction element's row-major number from (o, r) when the reduced dims are all leading (a
// bias gradient) or all trailing (a row sum), else "" (the dim walk computes it).
std::string closed_form_flat(const FusedGroup& group) {
  const int rank = group.shape.size();
  const uint32_t mask = group.reduced_dims & ((rank == 0 ? 0u : (1u << rank) - 1u));
  int reduced = 0;
  for (int d = 0; d < rank; ++d) reduced += (mask >> d) & 1u;
  if (mask == (1u << reduced) - 1u) return fmt::format("r * {} + o", extent_text(group, false));
  if (mask == (((1u << rank) - 1u) & ~((1u << (rank - reduced)) - 1u)))
    return fmt::format("o * {} + r", extent_text(group, true));
  return "";
}

std::string pointwise_loop(const FusedGroup& group) {
  const std::string loop = fmt::format(
      "  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < {}; i += step) {{\n",
      extent_text(group, false));
  return fmt::format(
      "  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;\n"
      "  if (args.contiguous) {{  // every input is read at the element's own number\n"
      "  {0}      const int64_t flat = i;\n{1}    }}\n    return;\n  }}\n"
      "{0}    int64_t kept = i;\n{2}{3}  }}\n",
      loop, element(group, flat_loads(group), "out[i]", "flat", "      "), offsets(group, "    "),
      element(group, strided_loads(group), "out[i]", "flat", "    "));
}

// The loops over output o's elements r = part, part + split, ...: one reading flat when every
// input is, one at the offsets. The flat one is unrolled so that, with the pointers restrict-
// qualified, the loads of four elements can be in flight at once instead of one element's at a
// time, each issued behind the previous element's export store. That was the large model's bias
// gradients (gelu_backward + a sum over a 4096 batch, 128 blocks of 1024 threads): its seven such
// kernels cost its compiled step 0.25 ms against eager's two kernels each (H200, --no-fuse). The
// sum's order is unchanged.
std::string reduction_loops(const FusedGroup& group, const std::string& indent) {
  const std::string loop = fmt::format("{}  for (int64_t r = first + part; r < last; r += split) {{\n", indent);
  const std::string closed = closed_form_flat(group);
  const std::string inner = indent + "    ";
  std::string flat = closed.empty() ? inner + "int64_t kept = o, reduced = r;\n" + offsets(group, inner)
                                    : fmt::format("{}const int64_t flat = {};\n", inner, closed);
  flat += element(group, flat_loads(group), "sum", "flat", inner);
  const std::string strided = inner + "int64_t kept = o, reduced = r;\n" + offsets(group, inner) +
                              element(group, strided_loads(group), "sum", "flat", inner);
  return fmt::format("{0}if (args.contiguous) {{\n#pragma unroll 4\n{1}{2}{0}  }}\n"
                     "{0}}} else {{\n{1}{3}{0}  }}\n{0}}}\n",
                     indent, loop, flat, strided);
}

// The output's value from `total`, its elements' sum in double: divided by the count for a mean.
std::string root_value(const FusedGroup& group) {
  const std::string count = extent_text(group, true);
  const bool dynamic_count = (group.dynamic_dims & group.reduced_dims) != 0;
  return group.root != FusedRoot::Mean ? "total"
         : dynamic_count               ? fmt::format("total / static_cast<double>{}", count)
                                       : fmt::format("total / {}.0", count);
}

// Threads along one block axis split an output's elements (`part` of `split`), along the other
// they take different outputs (`slot` of `across`); see fused_cuda_launch. Every thread of a block
// runs the same number of outer iterations, so the barriers are reached by all. Blocks along y
// take one piece each of every output's elements, [first, last); with more than one piece the
// block's sum goes to piece_sums, for the finishing kernel.
std::string reduction_loop(const FusedGroup& group) {
  const FusedExtent extent = fused_extent(group);
  const char* split_axis = extent.inner_reduced ? "x" : "y";
  const char* across_axis = extent.inner_reduced ? "y" : "x";
  const std::string count = extent_text(group, true);
  return fmt::format(
      "  __shared__ double partial[{0}];\n"
      "  const unsigned part = threadIdx.{1}, split = blockDim.{1};\n"
      "  const unsigned slot = threadIdx.{2}, across = blockDim.{2};\n"
      "  const unsigned me = threadIdx.y * blockDim.x + threadIdx.x;\n"
      "  const int64_t piece = ({7} + args.pieces - 1) / args.pieces;\n"
      "  const int64_t first = static_cast<int64_t>(blockIdx.y) * piece;\n"
      "  const int64_t last = first + piece < {7} ? first + piece : {7};\n"
      "  for (int64_t base = static_cast<int64_t>(blockIdx.x) * across; base < {3};\n"
      "       base += static_cast<int64_t>(across) * gridDim.x) {{\n"
      "    const int64_t o = base + slot;\n"
      "    double sum = 0;\n"
      "    if (o < {3}) {{\n"
      "{4}"
      "    }}\n"
      "    partial[me] = sum;\n"
      "    __syncthreads();\n"
      "    if (part == 0 && o < {3}) {{\n"
      "      double total = 0;  // the parts in order: the same sum every run\n"
      "      for (unsigned p = 0; p < split; ++p) total += partial[{5}];\n"
      "      if (args.pieces > 1) args.piece_sums[static_cast<int64_t>(blockIdx.y) * {3} + o] = total;\n"
      "      else out[o] = {6};\n"
      "    }}\n"
      "    __syncthreads();  // partial is rewritten by the next iteration\n"
      "  }}\n",
      kFusedCudaMaxBlock, split_axis, across_axis, extent_text(group, false), reduction_loops(group, "      "),
      extent.inner_reduced ? "slot * blockDim.x + p" : "p * blockDim.x + slot", store(group, root_value(group)),
      count);
}

// `<name>_finish`: each output's piece sums added in piece order, then stored as the root does.
std::string emit_finish_kernel(const FusedGroup& group) {
  std::string text = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(256) {0}_finish(const {0}_args args) {{\n"
      "  {1}* out = reinterpret_cast<{1}*>(args.data[0]);\n",
      group.name, storage_type(group.output.dtype));
  const std::string outputs = extent_text(group, false), value = store(group, root_value(group));
  if ((outputs + value).find("sizes[") != std::string::npos) text += constant_sizes(group);  // dynamic counts
  return text + fmt::format(
                    "  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;\n"
                    "  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < {0};\n"
                    "       o += step) {{\n"
                    "    double total = 0;  // the pieces in order: the same sum every run\n"
                    "    for (int64_t p = 0; p < args.pieces; ++p) total += args.piece_sums[p * {0} + o];\n"
                    "    out[o] = {1};\n"
                    "  }}\n"
                    "}}\n",
                    outputs, value);
}

}  // namespace

std::string emit_cuda_entry(const FusedGroup& group) {
  std::string text = argument_struct(group);
  // The bound is the launch's block size: without it the compiler may use more registers per
  // thread than a 1024-thread block can have, and the launch would fail.
  const FusedCudaLaunch launch = fused_cuda_launch(group);
  const unsigned threads = group.root == FusedRoot::None ? launch.block_x : kFusedCudaMaxBlock;
  text += fmt::format("extern \"C\" __global__ void __launch_bounds__({1}) {0}(const {0}_args args) {{\n", group.name,
                      threads);
  text += pointer_declarations(group, "args.data", "__restrict__");
  if (group.shape.size() > 0) text += constant_sizes(group);
  text += group.root == FusedRoot::None ? pointwise_loop(group) : reduction_loop(group);
  text += "}\n";
  if (group.root != FusedRoot::None) text += emit_finish_kernel(group);
  return text;
}

}  // namespace ember::graph::codegen
