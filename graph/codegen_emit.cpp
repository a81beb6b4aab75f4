// Emits the C++ (CPU) and CUDA C++ text of fused groups. A group's math is one inline body
// function over compute-typed values, shared verbatim by both targets; only the loops differ.
#include <algorithm>

#include <fmt/format.h>

#include "graph/codegen_cpp.h"
#include "graph/codegen_emit_parts.h"
#include "runtime/parallel.h"

namespace ember::graph {

namespace codegen {

const char* storage_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::BFloat16: return "ember::BFloat16";
    case DType::Float16: return "ember::Float16";
    case DType::Bool: return "bool";
    default: break;
  }
  fail("fusion: no generated code for dtype {}", dtype);
}

// 16-bit floats compute in float, like the CPU kernels (compute_t in runtime/dtype.h), and each
// step's result is rounded to 16 bits as an eager op's (emit_body).
const char* compute_type(DType dtype) { return dtype == DType::Float64 ? "double" : "float"; }

std::string extent_text(const FusedGroup& group, bool reduced) {
  int64_t fixed = 1;
  std::string text;
  for (int d = 0; d < group.shape.size(); ++d) {
    const bool is_reduced = group.root != FusedRoot::None && ((group.reduced_dims >> d) & 1u) != 0;
    if (is_reduced != reduced) continue;
    if (((group.dynamic_dims >> d) & 1u) != 0)
      text += fmt::format("{}sizes[{}]", text.empty() ? "" : " * ", d);
    else
      fixed *= group.shape[d];
  }
  if (text.empty()) return std::to_string(fixed);
  return fixed == 1 ? fmt::format("({})", text) : fmt::format("({} * {})", text, fixed);
}

std::string shape_text(const Dims& shape, uint32_t dynamic_dims) {
  std::string text;
  for (int d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + (((dynamic_dims >> d) & 1u) != 0 ? std::string("?") : std::to_string(shape[d]));
  return "[" + text + "]";
}

static std::string operand_name(const FusedGroup& group, int operand) {
  const int inputs = static_cast<int>(group.inputs.size());
  return operand < inputs ? fmt::format("x{}", operand) : fmt::format("t{}", operand - inputs);
}

std::string emit_body(const FusedGroup& group) {
  const char* compute = compute_type(group.dtype);
  // Eager stores every op's result in the tensor's dtype: a 16-bit group rounds each step's result
  // through its storage type likewise (kept in float throughout, the chain differed from eager by
  // about an ulp per op; Inductor's emulate_precision_casts does the same rounding).
  const bool rounds = group.dtype == DType::BFloat16 || group.dtype == DType::Float16;
  std::string parameters;
  for (size_t k = 0; k < group.inputs.size(); ++k)
    parameters += fmt::format("{}{} x{}", k ? ", " : "", compute, k);
  for (size_t e = 0; e < group.exports.size(); ++e)
    parameters += fmt::format("{}{}& e{}", parameters.empty() ? "" : ", ", compute, e);
  std::string text = fmt::format("EMBER_FORCE_INLINE EMBER_HOST_DEVICE {} {}_body({}) {{\n", compute, group.name,
                                 parameters);
  for (size_t s = 0; s < group.steps.size(); ++s) {
    const FusedStep& step = group.steps[s];
    std::string arguments;
    for (size_t i = 0; i < step.operands.size(); ++i)
      arguments += (i ? ", " : "") + operand_name(group, step.operands[i]);
    std::string value = fmt::format("{}({})", step.functor, arguments);
    // A bool step's value is 0 or 1, as eager's bool tensor holds it (bool + bool stores true).
    if (step.dtype == DType::Bool) {
      value = fmt::format("static_cast<{}>(static_cast<bool>({}))", compute, value);
    } else if (rounds) {
      value = fmt::format("static_cast<{}>(static_cast<{}>({}))", compute, storage_type(group.dtype), value);
    }
    text += fmt::format("  const {} t{} = {};  // {}\n", compute, s, value, step.op);
  }
  for (size_t e = 0; e < group.exports.size(); ++e)
    text += fmt::format("  e{} = t{};  // exported: also read outside the group\n", e, group.exports[e]);
  return text + fmt::format("  return t{};\n}}\n", group.steps.size() - 1);
}

std::string loads(const FusedGroup& group, const std::function<std::string(size_t)>& index) {
  std::string text;
  for (size_t k = 0; k < group.inputs.size(); ++k)
    text += fmt::format("{}static_cast<{}>(in{}[{}])", k ? ", " : "", compute_type(group.dtype), k, index(k));
  return text;
}

std::string pointer_declarations(const FusedGroup& group, const std::string& data, const std::string& restrict) {
  const std::string pointer = restrict.empty() ? "*" : "* " + restrict;
  const char* out = storage_type(group.output.dtype);
  std::string text = fmt::format("  {0}{1} out = reinterpret_cast<{0}*>({2}[0]);\n", out, pointer, data);
  for (size_t k = 0; k < group.inputs.size(); ++k)
    text += fmt::format("  const {0}{1} in{2} = reinterpret_cast<const {0}*>({3}[{4}]);\n",
                        storage_type(group.inputs[k].dtype), pointer, k, data, k + 1);
  for (size_t e = 0; e < group.exports.size(); ++e)
    text += fmt::format("  {0}{1} ex{2} = reinterpret_cast<{0}*>({3}[{4}]);\n", storage_type(group.export_dtype(e)),
                        pointer, e, data, group.inputs.size() + 1 + e);
  return text;
}

std::string store_as(DType dtype, const FusedGroup& group, const std::string& value) {
  return fmt::format("static_cast<{}>(static_cast<{}>({}))", storage_type(dtype), compute_type(group.dtype), value);
}

std::string store(const FusedGroup& group, const std::string& value) {
  return store_as(group.output.dtype, group, value);
}

std::string element(const FusedGroup& group, const std::string& arguments, const std::string& target,
                    const std::string& flat, const std::string& indent) {
  const bool reduction = group.root != FusedRoot::None;
  if (group.exports.empty()) {
    const std::string value = fmt::format("{}_body({})", group.name, arguments);
    return indent + (reduction ? fmt::format("{} += static_cast<double>({});\n", target, value)
                               : fmt::format("{} = {};\n", target, store(group, value)));
  }
  const char* compute = compute_type(group.dtype);
  std::string text = indent + compute;
  std::string outs;
  for (size_t e = 0; e < group.exports.size(); ++e) {
    text += fmt::format("{} e{}", e ? "," : "", e);
    outs += fmt::format(", e{}", e);
  }
  text += fmt::format(";\n{}const {} value = {}_body({}{});\n", indent, compute, group.name, arguments, outs);
  text += indent + (reduction ? fmt::format("{} += static_cast<double>(value);\n", target)
                              : fmt::format("{} = {};\n", target, store(group, "value")));
  for (size_t e = 0; e < group.exports.size(); ++e)
    text += fmt::format("{}ex{}[{}] = {};\n", indent, e, flat,
                        store_as(group.export_dtype(e), group, fmt::format("e{}", e)));
  return text;
}

}  // namespace codegen

namespace {

using namespace codegen;

std::string emit_cpu_pointwise(const FusedGroup& group) {
  const int operands = static_cast<int>(group.inputs.size()) + 1;
  // Elementwise results do not depend on the split, so big flat loops use the threads like the
  // eager kernels do (kParallelGrain, runtime/parallel.h). The group's shape is fixed, so the
  // choice is made here: a small group gets no OpenMP region at all, as even one with a false
  // `if` costs a system call (kernels/cpu/parallel_for.h).
  // With a dynamic dim the size is known only at run time, and so is the choice.
  auto flat = [&](const char* indent) {
    return element(group, loads(group, [](size_t) { return std::string("i"); }), "out[i]", "i", indent);
  };
  const char* pragma = "#pragma omp parallel for schedule(static)\n";
  std::string text;
  if (group.dynamic_dims != 0)
    text = fmt::format(
        "  if (contiguous) {{\n"
        "    if (numel >= {}) {{  // enough elements for the threads\n{}"
        "      for (int64_t i = 0; i < numel; ++i) {{\n{}      }}\n      return;\n    }}\n"
        "    for (int64_t i = 0; i < numel; ++i) {{\n{}    }}\n    return;\n  }}\n",
        kParallelGrain, pragma, flat("        "), flat("      "));
  else
    text = fmt::format("  if (contiguous) {{\n{}    for (int64_t i = 0; i < numel; ++i) {{\n{}    }}\n    return;\n  }}\n",
                       group.shape.product() >= kParallelGrain ? pragma : "", flat("      "));
  // Broadcast or strided operands: rows of the last dim with per-operand strides (a broadcast
  // bias row has stride 1, a broadcast column 0), the outer dims walked by the odometer.
  std::string row_strides;
  for (size_t k = 0; k < group.inputs.size(); ++k)
    row_strides += fmt::format(", step{} = rank > 0 ? strides[{} * rank + rank - 1] : 0", k + 1, k + 1);
  const std::string arguments =
      loads(group, [](size_t k) { return fmt::format("at.offset[{}] + j * step{}", k + 1, k + 1); });
  text += fmt::format(
      "  if (numel == 0) return;\n"
      "  const int64_t row = rank > 0 ? sizes[rank - 1] : 1;\n"
      "  const int64_t step0 = rank > 0 ? strides[rank - 1] : 0{};\n"
      "  ember_codegen::Odometer<{}> at(sizes, strides, rank, rank - 1);\n"
      "  for (int64_t first = 0; first < numel; first += row, at.next())\n"
      "    for (int64_t j = 0; j < row; ++j) {{\n{}    }}\n}}\n",
      row_strides, operands, element(group, arguments, "out[at.offset[0] + j * step0]", "first + j", "      "));
  return text;
}

// Reductions accumulate in double in element order (deterministic, no threads), then divide by
// the reduced count for a mean. Flat inputs with the reduced dims leading (a bias gradient) or
// trailing take plain nested loops in that same order; anything else walks the odometer.
std::string emit_cpu_reduction(const FusedGroup& group) {
  const int rank = group.shape.size();
  const uint32_t mask = group.reduced_dims;
  int64_t outputs = 1;
  int reduced = 0;
  for (int d = 0; d < rank; ++d) {
    const bool is_reduced = ((mask >> d) & 1u) != 0;
    if (!is_reduced) outputs *= group.shape[d];
    reduced += is_reduced ? 1 : 0;
  }
  // Literals, or expressions over `sizes` where a dim is dynamic.
  const std::string kept = extent_text(group, false), count = extent_text(group, true);
  const bool dynamic_outputs = (group.dynamic_dims & ~mask) != 0;
  const uint32_t all = rank == 0 ? 0u : (1u << rank) - 1u;
  const bool leading = mask == (1u << reduced) - 1u;
  const bool trailing = mask == (all & ~((1u << (rank - reduced)) - 1u));
  // Up to 4096 sums (32 KiB) live on the stack; more, or a number known only at run time, are
  // allocated per call.
  const bool on_stack = !dynamic_outputs && outputs <= 4096;
  std::string text = on_stack ? fmt::format("  double sums[{}] = {{}};\n", std::max<int64_t>(outputs, 1))
                              : fmt::format("  double* sums = new double[{}]();\n", kept);
  const std::string flat_arguments = loads(group, [](size_t) { return std::string("i"); });
  if (leading || trailing) {
    const std::string index = leading ? fmt::format("r * {} + o", kept) : fmt::format("o * {} + r", count);
    text += fmt::format(
        "  if (contiguous) {{\n"
        "    for (int64_t {0} = 0; {0} < {2}; ++{0})\n"
        "      for (int64_t {1} = 0; {1} < {3}; ++{1}) {{\n"
        "        const int64_t i = {4};\n{5}      }}\n"
        "  }} else {{\n",
        leading ? "r" : "o", leading ? "o" : "r", leading ? count : kept, leading ? kept : count, index,
        element(group, flat_arguments, "sums[o]", "i", "        "));
  } else {
    text += "  {\n";
  }
  const std::string strided_arguments =
      loads(group, [](size_t k) { return fmt::format("at.offset[{}]", k + 1); });
  text += fmt::format(
      "    ember_codegen::Odometer<{}> at(sizes, strides, rank, rank);\n"
      "    for (int64_t i = 0; i < numel; ++i, at.next()) {{\n{}    }}\n  }}\n",
      group.inputs.size() + 1, element(group, strided_arguments, "sums[at.offset[0]]", "i", "      "));
  const std::string mean = (group.dynamic_dims & mask) != 0 ? fmt::format("sums[o] / static_cast<double>{}", count)
                                                     : fmt::format("sums[o] / {}.0", count);
  text += fmt::format("  for (int64_t o = 0; o < {}; ++o) out[o] = {};\n", kept,
                      store(group, group.root == FusedRoot::Mean ? mean : "sums[o]"));
  if (!on_stack) text += "  delete[] sums;\n";
  return text + "}\n";
}

// FusedGroup::dynamic_dims for the dims of the group's output (the shape without the reduced dims,
// or with them as 1 when the reduction keeps them).
uint32_t output_dynamic_dims(const FusedGroup& group) {
  if (group.root == FusedRoot::None || group.output.sizes.size() == group.shape.size())
    return group.dynamic_dims & ~group.reduced_dims;
  uint32_t mask = 0;
  int out = 0;
  for (int d = 0; d < group.shape.size(); ++d) {
    if (((group.reduced_dims >> d) & 1u) != 0) continue;
    if (((group.dynamic_dims >> d) & 1u) != 0) mask |= 1u << out;
    ++out;
  }
  return mask;
}

std::string emit_cpu_entry(const FusedGroup& group) {
  std::string text = fmt::format(
      "extern \"C\" void {}(char* const* data, const int64_t* strides, const int64_t* sizes, int rank, "
      "int contiguous) {{\n",
      group.name);
  text += pointer_declarations(group, "data");
  text += "  int64_t numel = 1;\n  for (int d = 0; d < rank; ++d) numel *= sizes[d];\n";
  return text + (group.root == FusedRoot::None ? emit_cpu_pointwise(group) : emit_cpu_reduction(group));
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
  std::string text = fmt::format("\n// {}: {}, {} {} -> {}\n", group.name, group.summary(),
                                 shape_text(group.shape, group.dynamic_dims), group.dtype,
                                 shape_text(group.output.sizes, output_dynamic_dims(group)));
  text += emit_body(group);
  text += target == Target::Cpu ? emit_cpu_entry(group) : codegen::emit_cuda_entry(group);
  return text;
}

std::string emit_module_source(std::span<const FusedGroup* const> groups, Target target) {
  std::string text = target == Target::Cpu ? kCpuPreamble : kCudaPreamble;
  for (const FusedGroup* group : groups) text += emit_group_source(*group, target);
  return text;
}

}  // namespace ember::graph
