// The thread-count check: an op's results must not depend on how many threads run it (the team's
// rule: no parallel reductions whose association order follows the thread count). Cases large
// enough for the parallel paths run on one thread and on three, and must agree bit for bit.
#include <cmath>

#include "harness_detail.h"

namespace conformance {

using namespace detail;

namespace {

// Below this many elements in or out, kernels run on one thread whatever the setting.
constexpr int64_t kParallelCaseElements = ember::kParallelGrain / 4;

bool identical(const RefTensor& a, const RefTensor& b) {
  if (a.defined != b.defined || a.sizes != b.sizes || a.dtype != b.dtype) return false;
  for (size_t i = 0; i < a.values.size(); ++i) {
    const bool both_nan = std::isnan(a.values[i]) && std::isnan(b.values[i]);
    if (!both_nan && a.values[i] != b.values[i]) return false;
  }
  return true;
}

// The op's outputs on `threads` threads, float32 on the CPU.
std::vector<RefTensor> outputs_with(int threads, const ember::OpDef& op, const Case& c, int64_t* elements) {
  ember::set_num_threads(threads);
  ember::NoGradGuard no_grad;
  const std::vector<Tensor> inputs = make_inputs(c, ember::kFloat32, ember::kCPU);
  const ember::TensorList outputs = run_op(op, inputs, attrs_for(c, ember::kCPU));
  std::vector<RefTensor> values;
  for (const Tensor& input : inputs) *elements += input.defined() ? input.numel() : 0;
  for (const Tensor& output : outputs) {
    values.push_back(to_reference(output));
    *elements += output.defined() ? output.numel() : 0;
  }
  return values;
}

}  // namespace

std::vector<std::string> check_thread_invariance(const ember::OpDef& op, const Case& c) {
  Failures failures(describe(c, ember::kFloat32, ember::kCPU) + "thread count: ");
  const int configured = ember::get_num_threads();
  try {
    int64_t elements = 0;
    const std::vector<RefTensor> single = outputs_with(1, op, c, &elements);
    if (elements >= kParallelCaseElements) {
      const std::vector<RefTensor> several = outputs_with(3, op, c, &elements);
      for (size_t k = 0; k < single.size(); ++k)
        if (!identical(single[k], several[k]))
          failures.add(fmt::format("output {} differs between 1 and 3 threads", k));
    }
  } catch (const std::exception& error) {
    failures.add(fmt::format("threw: {}", error.what()));
  }
  ember::set_num_threads(configured);
  return failures.take();
}

}  // namespace conformance
