// Emits the C++ (CPU) and CUDA C++ text of fused groups. A group's math is one inline body
// function over compute-typed values, shared verbatim by both targets; only the loops differ.
#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "runtime/parallel.h"

namespace ember::graph {

namespace {

const char* storage_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::BFloat16: return "ember::BFloat16";
    case DType::Float16: return "ember::Float16";
    default: break;
  }
  fail("fusion: no generated code for dtype {}", dtype);
}

// 16-bit floats compute in float, like the CPU kernels (compute_t in runtime/dtype.h).
const char* compute_type(DType dtype) { return dtype == DType::Float64 ? "double" : "float"; }

std::string operand_name(const FusedGroup& group, int operand) {
  const int inputs = static_cast<int>(group.inputs.size());
  return operand < inputs ? fmt::format("x{}", operand) : fmt::format("t{}", operand - inputs);
}

// `EMBER_FORCE_INLINE EMBER_HOST_DEVICE float fused_3_body(float x0, float x1) {...}`
std::string emit_body(const FusedGroup& group) {
  const char* compute = compute_type(group.dtype);
  std::string parameters;
  for (size_t k = 0; k < group.inputs.size(); ++k)
    parameters += fmt::format("{}{} x{}", k ? ", " : "", compute, k);
  std::string text = fmt::format("EMBER_FORCE_INLINE EMBER_HOST_DEVICE {} {}_body({}) {{\n", compute, group.name,
                                 parameters);
  for (size_t s = 0; s < group.steps.size(); ++s) {
    const FusedStep& step = group.steps[s];
    std::string arguments;
    for (size_t i = 0; i < step.operands.size(); ++i)
      arguments += (i ? ", " : "") + operand_name(group, step.operands[i]);
    text += fmt::format("  const {} t{} = {}({});  // {}\n", compute, s, step.functor, arguments, step.op);
  }
  return text + fmt::format("  return t{};\n}}\n", group.steps.size() - 1);
}

// The body's arguments: every input loaded at its offset variable and converted.
std::string loads(const FusedGroup& group, const std::string& offset_prefix, int first_operand) {
  std::string text;
  for (size_t k = 0; k < group.inputs.size(); ++k)
    text += fmt::format("{}static_cast<{}>(in{}[{}{}])", k ? ", " : "", compute_type(group.dtype), k,
                        offset_prefix, offset_prefix == "i" ? "" : fmt::format("[{}]", k + first_operand));
  return text;
}

std::string pointer_declarations(const FusedGroup& group, const std::string& data) {
  std::string text = fmt::format("  using Storage = {};\n  Storage* out = reinterpret_cast<Storage*>({}[0]);\n",
                                 storage_type(group.dtype), data);
  for (size_t k = 0; k < group.inputs.size(); ++k)
    text += fmt::format("  const Storage* in{} = reinterpret_cast<const Storage*>({}[{}]);\n", k, data, k + 1);
  return text;
}

// The stored result: 16-bit types round from float, the others convert directly.
std::string store(const FusedGroup& group, const std::string& value) {
  return fmt::format("static_cast<Storage>(static_cast<{}>({}))", compute_type(group.dtype), value);
}

std::string emit_cpu_entry(const FusedGroup& group) {
  const int operands = static_cast<int>(group.inputs.size()) + 1;
  std::string text = fmt::format(
      "extern \"C\" void {}(char* const* data, const int64_t* strides, const int64_t* sizes, int rank, "
      "int contiguous) {{\n",
      group.name);
  text += pointer_declarations(group, "data");
  text += "  int64_t numel = 1;\n  for (int d = 0; d < rank; ++d) numel *= sizes[d];\n";
  const std::string value = fmt::format("{}_body({})", group.name, loads(group, "at.offset", 1));
  if (group.root == FusedRoot::None) {
    // Elementwise results do not depend on the split, so big flat loops use the threads like the
    // eager kernels do (kParallelGrain, runtime/parallel.h).
    text += fmt::format(
        "  if (contiguous) {{\n"
        "#pragma omp parallel for schedule(static) if (numel >= {})\n"
        "    for (int64_t i = 0; i < numel; ++i) out[i] = {};\n    return;\n  }}\n",
        kParallelGrain, store(group, fmt::format("{}_body({})", group.name, loads(group, "i", 1))));
    // Broadcast or strided operands: rows of the last dim with per-operand strides (a broadcast
    // bias row has stride 1, a broadcast column 0), the outer dims walked by the odometer.
    std::string row_loads, row_strides;
    for (size_t k = 0; k < group.inputs.size(); ++k) {
      row_loads += fmt::format("{}static_cast<{}>(in{}[at.offset[{}] + j * step{}])", k ? ", " : "",
                               compute_type(group.dtype), k, k + 1, k + 1);
      row_strides += fmt::format(", step{} = rank > 0 ? strides[{} * rank + rank - 1] : 0", k + 1, k + 1);
    }
    text += fmt::format(
        "  if (numel == 0) return;\n"
        "  const int64_t row = rank > 0 ? sizes[rank - 1] : 1;\n"
        "  const int64_t step0 = rank > 0 ? strides[rank - 1] : 0{};\n"
        "  ember_codegen::Odometer<{}> at(sizes, strides, rank, rank - 1);\n"
        "  for (int64_t first = 0; first < numel; first += row, at.next())\n"
        "    for (int64_t j = 0; j < row; ++j) out[at.offset[0] + j * step0] = {};\n}}\n",
        row_strides, operands,
        store(group, fmt::format("{}_body({})", group.name, row_loads)));
    return text;
  }
  text += fmt::format("  ember_codegen::Odometer<{}> at(sizes, strides, rank, rank);\n", operands);
  // Reductions accumulate in double in element order (deterministic, no threads), then divide
  // by the reduced count for a mean.
  text += fmt::format(
      "  int64_t outputs = 1, count = 1;\n"
      "  for (int d = 0; d < rank; ++d) ((0x{:x}u >> d) & 1u ? count : outputs) *= sizes[d];\n"
      "  double* sums = new double[outputs > 0 ? outputs : 1]();\n"
      "  for (int64_t i = 0; i < numel; ++i, at.next()) sums[at.offset[0]] += static_cast<double>({});\n"
      "  for (int64_t o = 0; o < outputs; ++o) out[o] = {};\n"
      "  delete[] sums;\n}}\n",
      group.reduced_dims, value,
      store(group, group.root == FusedRoot::Mean ? "sums[o] / static_cast<double>(count)" : "sums[o]"));
  return text;
}

// CUDA: the arguments travel by value in one struct; one thread per output element, grid-stride.
std::string emit_cuda_entry(const FusedGroup& group) {
  const int operands = static_cast<int>(group.inputs.size()) + 1;
  std::string text = fmt::format(
      "struct {0}_args {{\n  char* data[{1}];\n  int64_t strides[{1} * 8];  // operand-major, rank per operand\n"
      "  int64_t sizes[8];\n  int rank;\n  int64_t outputs;  // output elements\n"
      "  int64_t count;    // elements reduced into each output (1 without a reduction)\n}};\n"
      "extern \"C\" __global__ void {0}({0}_args args) {{\n",
      group.name, operands);
  text += pointer_declarations(group, "args.data");
  text += fmt::format(
      "  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;\n"
      "  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < args.outputs; o += step) {{\n"
      "    double sum = 0;\n"
      "    for (int64_t r = 0; r < args.count; ++r) {{\n"
      "      int64_t offset[{0}] = {{}};\n"
      "      int64_t kept = o, reduced = r;\n"
      "      for (int d = args.rank - 1; d >= 0; --d) {{\n"
      "        int64_t& rest = ((0x{1:x}u >> d) & 1u) ? reduced : kept;\n"
      "        const int64_t index = rest % args.sizes[d];\n"
      "        rest /= args.sizes[d];\n"
      "        for (int k = 0; k < {0}; ++k) offset[k] += index * args.strides[k * args.rank + d];\n"
      "      }}\n",
      operands, group.reduced_dims);
  const std::string value = fmt::format("{}_body({})", group.name, loads(group, "offset", 1));
  if (group.root == FusedRoot::None) {
    text += fmt::format("      out[offset[0]] = {};\n    }}\n  }}\n}}\n", store(group, value));
  } else {
    text += fmt::format("      sum += static_cast<double>({});\n    }}\n    out[o] = {};\n  }}\n}}\n", value,
                        store(group, group.root == FusedRoot::Mean ? "sum / static_cast<double>(args.count)" : "sum"));
  }
  return text;
}

const char* kCpuPreamble = R"(// Generated by ember's fusion pass (graph/codegen_emit.cpp). Each function computes one fused
// group of graph nodes with the functors of kernels/functors.h.
// functors.h comes first: it may be a precompiled header, which must precede everything else.
#include "kernels/functors.h"

#include <cstdint>

namespace ember_codegen {
// Walks a row-major index over `sizes`, keeping each operand's element offset.
template <int N>
struct Odometer {
  const int64_t* sizes;
  const int64_t* strides;  // N * rank, operand-major
  int rank;
  int64_t index[8] = {};
  int64_t offset[N] = {};
  int walked;  // next() steps through dims [0, walked): rank, or rank - 1 when the caller runs the last
  Odometer(const int64_t* sizes_, const int64_t* strides_, int rank_, int walked_)
      : sizes(sizes_), strides(strides_), rank(rank_), walked(walked_) {}
  void next() {
    for (int d = walked - 1; d >= 0; --d) {
      for (int k = 0; k < N; ++k) offset[k] += strides[k * rank + d];
      if (++index[d] < sizes[d]) return;
      for (int k = 0; k < N; ++k) offset[k] -= strides[k * rank + d] * sizes[d];
      index[d] = 0;
    }
  }
};
}  // namespace ember_codegen
)";

const char* kCudaPreamble = R"(// Generated by ember's fusion pass (graph/codegen_emit.cpp) for NVRTC.
#include "kernels/functors.h"
)";

}  // namespace

std::string emit_group_source(const FusedGroup& group, Target target) {
  std::string text = fmt::format("\n// {}: {}, {} {} -> {}\n", group.name, group.summary(), group.shape,
                                 group.dtype, group.output.sizes);
  text += emit_body(group);
  text += target == Target::Cpu ? emit_cpu_entry(group) : emit_cuda_entry(group);
  return text;
}

std::string emit_module_source(std::span<const FusedGroup* const> groups, Target target) {
  std::string text = target == Target::Cpu ? kCpuPreamble : kCudaPreamble;
  for (const FusedGroup* group : groups) text += emit_group_source(*group, target);
  return text;
}

}  // namespace ember::graph
