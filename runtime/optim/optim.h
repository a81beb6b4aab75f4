// ember::optim: optimizers, learning-rate schedulers, gradient clipping (libtorch's torch::optim) and
// stochastic weight averaging (torch.optim.swa_utils).
#pragma once

#include "runtime/optim/adadelta.h"
#include "runtime/optim/adagrad.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/adamax.h"
#include "runtime/optim/asgd.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/cyclic_lr.h"
#include "runtime/optim/lbfgs.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/lr_schedulers_more.h"
#include "runtime/optim/nadam.h"
#include "runtime/optim/optimizer.h"
#include "runtime/optim/radam.h"
#include "runtime/optim/rmsprop.h"
#include "runtime/optim/rprop.h"
#include "runtime/optim/sgd.h"
#include "runtime/optim/swa_utils.h"
