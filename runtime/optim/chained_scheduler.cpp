// ChainedScheduler: PyTorch 2.x's, stepping each scheduler in order and reporting the optimizer's
// rates; its state dict nests the schedulers' own under their index.
#include <charconv>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/optim/lr_schedulers_more.h"

namespace ember::optim {

ChainedScheduler::ChainedScheduler(Optimizer& optimizer, std::vector<LRScheduler*> schedulers, Where where)
    : optimizer_(optimizer), schedulers_(std::move(schedulers)) {
  CallSiteScope site(where);
  check(!schedulers_.empty(), "ChainedScheduler: expects at least one scheduler to chain, got none");
  for (size_t i = 0; i < schedulers_.size(); ++i)
    check(schedulers_[i] != nullptr, "ChainedScheduler: scheduler {} is null", i);
  read_rates();
}

void ChainedScheduler::read_rates() {
  last_lr_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) last_lr_.push_back(optimizer_.get_lr(g));
}

void ChainedScheduler::step(Where where) {
  CallSiteScope site(where);
  for (LRScheduler* scheduler : schedulers_) scheduler->step(where);
  read_rates();
}

OrderedDict<double> ChainedScheduler::state_dict() const {
  OrderedDict<double> state;
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    const OrderedDict<double> part = schedulers_[i]->state_dict();  // named: items() refers into it
    for (const auto& [key, value] : part.items()) state.insert(fmt::format("{}.{}", i, key), value);
  }
  return state;
}

void ChainedScheduler::load_state_dict(const OrderedDict<double>& state, Where where) {
  CallSiteScope site(where);
  // Split by index first, so that a key naming no scheduler is refused before anything loads.
  std::vector<OrderedDict<double>> parts(schedulers_.size());
  for (const auto& [key, value] : state.items()) {
    const size_t dot = key.find('.');
    size_t index = schedulers_.size();  // no scheduler, unless the key starts with "<digits>."
    if (dot != std::string::npos) {
      const auto [end, error] = std::from_chars(key.data(), key.data() + dot, index);
      if (error != std::errc() || end != key.data() + dot) index = schedulers_.size();
    }
    check(index < schedulers_.size(), "ChainedScheduler.load_state_dict: key '{}' names none of the {} schedulers", key,
          schedulers_.size());
    parts[index].insert(key.substr(dot + 1), value);
  }
  std::vector<OrderedDict<double>> before;
  for (LRScheduler* scheduler : schedulers_) before.push_back(scheduler->state_dict());
  size_t loaded = 0;
  try {
    for (; loaded < schedulers_.size(); ++loaded) schedulers_[loaded]->load_state_dict(parts[loaded], where);
  } catch (...) {
    for (size_t i = 0; i < loaded; ++i) schedulers_[i]->load_state_dict(before[i], where);
    throw;
  }
  // PyTorch restores its _last_lr, which a step read from the optimizer after the last scheduler
  // wrote it: that scheduler's saved last_lr. (Loading does not change the optimizer's rates.)
  last_lr_ = schedulers_.back()->get_last_lr();
}

}  // namespace ember::optim
