// nn::ModuleDict: keyed registration, replacement in place, removal.
#include "runtime/nn/modules/module_dict.h"

#include <fmt/ranges.h>

namespace ember::nn {

ModuleDictImpl::ModuleDictImpl(const Entries& modules, Where where) : Module("ModuleDict") { update(modules, where); }

void ModuleDictImpl::insert(const std::string& key, ModulePointer module, Where where) {
  CallSiteScope site(where);
  if (modules_.contains(key)) {
    replace_module(key, module.get());
    modules_.at(key) = module.get();
    return;
  }
  // Registered first: a bad key or an empty module is refused there, before the dict changes.
  register_module(key, module.get());
  modules_.insert(key, module.get());
}

void ModuleDictImpl::update(const Entries& modules, Where where) {
  for (const auto& [key, module] : modules) insert(key, module, where);
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key, Where where) {
  std::shared_ptr<Module> module = ptr(key, where);
  unregister_module(key, where);
  modules_.erase(key);
  return module;
}

void ModuleDictImpl::clear() {
  for (const std::string& key : modules_.keys()) unregister_module(key);
  modules_.clear();
}

std::shared_ptr<Module> ModuleDictImpl::ptr(const std::string& key, Where where) const {
  guard_children();
  const std::shared_ptr<Module>* module = modules_.find(key);
  if (module == nullptr) [[unlikely]] {
    CallSiteScope site(where);
    fail("ModuleDict: no module under key '{}' (keys: {})", key, modules_.keys());
  }
  return *module;
}

void ModuleDictImpl::fail_wrong_type(const std::string& key, const Module& module, Where where) {
  CallSiteScope site(where);
  fail("ModuleDict: module '{}' is a {}, not the requested type", key, module.name());
}

}  // namespace ember::nn
