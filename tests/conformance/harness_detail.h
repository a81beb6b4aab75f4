// Helpers the harness's runner files share (forward checks, gradient checks, thread checks).
#pragma once

#include <string>
#include <vector>

#include "harness.h"

namespace conformance::detail {

uint64_t case_seed(const Case& c);
std::string describe(const Case& c, DType dtype, Device device);
// The dtypes a case runs in: float32 and float64, the 16-bit floats when it gives tolerances.
// A case whose inputs are all integer, bool or pinned runs once.
std::vector<DType> dtypes_of(const Case& c);
Tolerance tolerance_for(const Case& c, DType dtype);
Attrs attrs_for(const Case& c, Device device);  // with `device` substituted
// The case's inputs in `dtype` and their logical values (drawn, or derived from earlier inputs).
std::vector<Tensor> make_inputs(const Case& c, DType dtype, Device device,
                                std::vector<std::vector<double>>* values = nullptr);
std::string join(const std::vector<std::string>& lines);
// Runs the op on `inputs` (mapped by the case's gradient_inputs when set); an in-place op writes
// clones, so the leaves keep their values.
ember::TensorList run_for_gradient(const ember::OpDef& op, const Case& c, const std::vector<Tensor>& inputs,
                                   const Attrs& attrs);

// The failures of one check, each prefixed with the case, dtype and device.
class Failures {
 public:
  explicit Failures(std::string context) : context_(std::move(context)) {}
  void add(const std::string& what) { list_.push_back(context_ + what); }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::string context_;
  std::vector<std::string> list_;
};

}  // namespace conformance::detail
