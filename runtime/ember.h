// The one header a user includes: ember's whole public C++ API.
#pragma once

#include "runtime/amp/grad_scaler.h"
#include "runtime/autocast.h"
#include "runtime/autograd/grad.h"
#include "runtime/data/data.h"
#include "runtime/cuda_settings.h"
#include "runtime/device.h"
#include "runtime/dispatch.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/functional.h"
#include "runtime/memory/memory_stats.h"
#include "runtime/nn/nn.h"
#include "runtime/optim/optim.h"
#include "runtime/parallel.h"
#include "runtime/random/generator.h"
#include "runtime/tensor.h"
