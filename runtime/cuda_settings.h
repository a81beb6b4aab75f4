// Process-wide switches of the CUDA backend that users set from the public API. They are plain
// flags with no CUDA types, so the header (and its setters) also exist in builds without CUDA.
#pragma once

namespace ember {

// Whether float32 GEMMs on CUDA may round their inputs to TF32 on tensor cores (about 10 mantissa
// bits, several times the throughput). Off by default, like PyTorch's matmul, so float32 results
// keep float32 accuracy unless asked; EMBER_ALLOW_TF32=1 in the environment turns it on at start.
void set_allow_tf32(bool allow);
bool get_allow_tf32();

}  // namespace ember
