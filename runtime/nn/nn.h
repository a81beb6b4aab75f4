// ember::nn: modules, their functional forms and initialisers (libtorch's torch::nn).
#pragma once

#include "runtime/nn/functional.h"
#include "runtime/nn/init.h"
#include "runtime/nn/module.h"
#include "runtime/nn/modules/activation.h"
#include "runtime/nn/modules/batch_norm.h"
#include "runtime/nn/modules/distance.h"
#include "runtime/nn/modules/dropout.h"
#include "runtime/nn/modules/embedding.h"
#include "runtime/nn/modules/flatten.h"
#include "runtime/nn/modules/layer_norm.h"
#include "runtime/nn/modules/linear.h"
#include "runtime/nn/modules/loss.h"
#include "runtime/nn/modules/loss_more.h"
#include "runtime/nn/modules/module_dict.h"
#include "runtime/nn/modules/module_list.h"
#include "runtime/nn/modules/sequential.h"
