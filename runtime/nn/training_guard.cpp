// The guarded training flag of runtime/nn/training_guard.h.
#include "runtime/nn/training_guard.h"

#include <fmt/format.h>

#include "runtime/dispatch.h"

namespace ember::nn {

bool training_for_forward(const Module& module) {
  const bool training = module.is_training();
  if (dispatch_mode_active()) [[unlikely]] {
    // The description names the module with its settings: "Dropout(p=0.3, inplace=False).training == true".
    // guard_host_state finds the module through its liveness token, so a module held by value (no
    // shared_ptr) is guarded too, and a destroyed one fails the guard (recompiles).
    module.guard_host_state(fmt::format("{}.training == {}", module.str(), training),
                            [training](const Module& self) { return self.is_training() == training; });
  }
  return training;
}

}  // namespace ember::nn
