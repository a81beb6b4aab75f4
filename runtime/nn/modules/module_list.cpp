// nn::ModuleList: positional names, insertion with renaming, and torch's folded printing.
#include "runtime/nn/modules/module_list.h"

#include <string>

#include "runtime/nn/python_repr.h"

namespace ember::nn {

void ModuleListImpl::push_back(ModulePointer module, Where where) {
  // Registered first: an empty module is refused there, before the list changes.
  register_module(std::to_string(modules_.size()), module.get(), where);
  modules_.push_back(module.get());
}

void ModuleListImpl::insert(int64_t index, ModulePointer module, Where where) {
  CallSiteScope site(where);
  const auto count = static_cast<int64_t>(modules_.size());
  check(index >= -count && index <= count,
        "ModuleList: insert position {} is out of range for {} modules (from {} to {})", index, count, -count, count);
  check(module.get() != nullptr, "ModuleList: insert({}) got an empty module", index);
  const auto at = static_cast<size_t>(index < 0 ? index + count : index);
  // The names from `at` on shift up by one: unregister them, then register the new order.
  for (size_t i = modules_.size(); i > at; --i) unregister_module(std::to_string(i - 1));
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(at), module.get());
  for (size_t i = at; i < modules_.size(); ++i) register_module(std::to_string(i), modules_[i]);
}

size_t ModuleListImpl::position(int64_t index, size_t count, const char* what, Where where) const {
  CallSiteScope site(where);
  const auto signed_count = static_cast<int64_t>(count);
  check(index >= -signed_count && index < signed_count, "ModuleList: {} {} is out of range for {} modules", what,
        index, count);
  return static_cast<size_t>(index < 0 ? index + signed_count : index);
}

std::shared_ptr<Module> ModuleListImpl::ptr(int64_t index, Where where) const {
  guard_children();
  return modules_[position(index, modules_.size(), "index", where)];
}

void ModuleListImpl::fail_wrong_type(int64_t index, const Module& module, Where where) {
  CallSiteScope site(where);
  fail("ModuleList: module {} is a {}, not the requested type", index, module.name());
}

std::string ModuleListImpl::str() const {
  if (modules_.empty()) return name() + "()";
  std::vector<std::string> texts;
  texts.reserve(modules_.size());
  for (const std::shared_ptr<Module>& module : modules_) texts.push_back(module->str());
  std::string out = name() + "(";
  for (size_t start = 0; start < texts.size();) {
    size_t last = start;
    while (last + 1 < texts.size() && texts[last + 1] == texts[start]) ++last;
    const std::string entry = start == last
                                  ? fmt::format("({}): {}", start, texts[start])
                                  : fmt::format("({}-{}): {} x {}", start, last, last - start + 1, texts[start]);
    out += "\n  " + indent_later_lines(entry);
    start = last + 1;
  }
  return out + "\n)";
}

}  // namespace ember::nn
