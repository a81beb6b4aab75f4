// ember::data: datasets, samplers, the DataLoader and the .npy / CSV readers, in one include.
#pragma once

#include "runtime/data/csv.h"
#include "runtime/data/dataloader.h"
#include "runtime/data/dataset.h"
#include "runtime/data/npy.h"
#include "runtime/data/distributed_sampler.h"
#include "runtime/data/sampler.h"
#include "runtime/data/tensor_dataset.h"
