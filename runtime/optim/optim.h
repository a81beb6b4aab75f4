// ember::optim: optimizers, learning-rate schedulers and gradient clipping (libtorch's torch::optim).
#pragma once

#include "runtime/optim/adadelta.h"
#include "runtime/optim/adagrad.h"
#include "runtime/optim/adam.h"
#include "runtime/optim/adamax.h"
#include "runtime/optim/clip_grad.h"
#include "runtime/optim/cyclic_lr.h"
#include "runtime/optim/lr_scheduler.h"
#include "runtime/optim/lr_schedulers_more.h"
#include "runtime/optim/nadam.h"
#include "runtime/optim/optimizer.h"
#include "runtime/optim/radam.h"
#include "runtime/optim/rmsprop.h"
#include "runtime/optim/sgd.h"
