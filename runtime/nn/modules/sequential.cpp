// nn::Sequential: naming children by position and chaining forwards.
#include "runtime/nn/modules/sequential.h"

#include <string>

namespace ember::nn {

void SequentialImpl::push_back(AnyModule module) { push_back(std::to_string(modules_.size()), std::move(module)); }

void SequentialImpl::push_back(std::string name, AnyModule module) {
  register_module(std::move(name), module.ptr());
  modules_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& input, Where where) {
  CallSiteScope site(where);
  check(!modules_.empty(), "Sequential: forward on an empty Sequential");
  return forward_range(0, static_cast<int64_t>(modules_.size()), input, where);
}

Tensor SequentialImpl::forward_range(int64_t begin, int64_t end, const Tensor& input, Where where) {
  CallSiteScope site(where);
  guard_children();  // a compiled step that ran these modules must not replay after push_back
  const auto count = static_cast<int64_t>(modules_.size());
  check(0 <= begin && begin < end && end <= count, "Sequential: forward_range [{}, {}) is not a non-empty range of its {} modules",
        begin, end, count);
  Tensor output = modules_[static_cast<size_t>(begin)].forward(input);
  for (auto i = static_cast<size_t>(begin) + 1; i < static_cast<size_t>(end); ++i) output = modules_[i].forward(output);
  return output;
}

std::shared_ptr<Module> SequentialImpl::ptr(int64_t index, Where where) const {
  guard_children();
  const auto count = static_cast<int64_t>(modules_.size());
  if (index < -count || index >= count) [[unlikely]] {
    CallSiteScope site(where);
    fail("Sequential: index {} out of range for {} modules", index, count);
  }
  return modules_[static_cast<size_t>(index < 0 ? index + count : index)].ptr();
}

void SequentialImpl::fail_wrong_type(int64_t index, const Module& module, Where where) {
  CallSiteScope site(where);
  fail("Sequential: module {} is a {}, not the requested type", index, module.name());
}

}  // namespace ember::nn
