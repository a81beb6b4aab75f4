// torch.optim.swa_utils for ember (PyTorch 2.3): AveragedModel (stochastic weight averaging and
// exponential moving averages of a model's parameters), the SWALR schedule and update_bn, which
// recomputes BatchNorm statistics for the averaged weights.
#pragma once

#include "runtime/optim/averaged_model.h"
#include "runtime/optim/swalr.h"
#include "runtime/optim/update_bn.h"
