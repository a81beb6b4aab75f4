// Where a random op's draws start. Random ops take (seed, offset) as attributes; this reserves
// the range from the device's default generator and, while a dispatch mode records the call
// (ember::compile), also hands the mode a refresh that reserves a fresh range before each replay.
// Replays then advance the generator exactly as eager calls would, in the same order, so a
// compiled step draws the same numbers as the eager step it replaces, and never repeats a draw.
#pragma once

#include <cstdint>

#include "runtime/dispatch.h"

namespace ember {

// Reserves `words` 32-bit words of default_generator(device) and sets attrs "seed" and "offset".
void reserve_random_attrs(Attrs& attrs, Device device, uint64_t words);

// randint's bounds: low < high, and every integer of [low, high) exact in `dtype` (its own range,
// or +-2^(significand bits) for floats), as PyTorch requires: an int32 drawn from [0, 5e9) or a
// float32 above 2^24 would otherwise wrap or round, and differently per device. The factory calls
// it before reserving draws, so a refused call leaves the generator where it was.
void check_randint_range(int64_t low, int64_t high, DType dtype);

}  // namespace ember
