// The training flag a module's forward branches on (Dropout, BatchNorm), read so that a compiled
// step captured in one mode never replays in the other.
#pragma once

#include "runtime/nn/module.h"

namespace ember::nn {

// module.is_training(); while a dispatch mode records (compile's capture), also a host guard on
// the flag, as PyTorch's compile guards on module.training: eval() after a capture in train mode
// recompiles, and train() finds the first variant again. The guard fails (recompiles) once the
// module is gone, whether it was held in a shared_ptr or by value.
bool training_for_forward(const Module& module);

}  // namespace ember::nn
