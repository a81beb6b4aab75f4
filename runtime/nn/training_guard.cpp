// The guarded training flag of runtime/nn/training_guard.h.
#include "runtime/nn/training_guard.h"

#include <fmt/format.h>

#include "runtime/dispatch.h"

namespace ember::nn {

bool training_for_forward(const Module& module) {
  const bool training = module.is_training();
  if (dispatch_mode_active()) [[unlikely]] {
    // The description names the module with its settings: "Dropout(p=0.3).training == true".
    notify_host_guard(fmt::format("{}.training == {}", module.str(), training),
                      [self = module.weak_from_this(), training] {
                        const std::shared_ptr<const Module> alive = self.lock();
                        return alive != nullptr && alive->is_training() == training;
                      });
  }
  return training;
}

}  // namespace ember::nn
