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

}  // namespace ember
