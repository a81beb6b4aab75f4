// Opening a shared library at run time and resolving its functions (dlopen/dlsym) with errors
// that say which library and why. Used for the big CUDA libraries (cuBLASLt, NVRTC), which ember
// loads on first use instead of linking: linked, their start-up cost falls on every process.
#pragma once

#include <initializer_list>
#include <string_view>

namespace ember {

// The first of `candidates` (sonames or paths) that dlopen loads, kept for the process's life;
// throws ember::Error listing each candidate and the loader's reason when none loads. `what`
// says what needs the library ("cuBLASLt, which CUDA matrix products need").
void* open_shared_library(std::initializer_list<const char*> candidates, std::string_view what);

// The address of `symbol` in `library`; throws ember::Error naming both when it is missing.
void* shared_library_symbol(void* library, const char* symbol, std::string_view library_name);

// Resolves `symbol` into a function pointer of the slot's type.
template <typename Function>
void resolve_function(void* library, const char* symbol, std::string_view library_name, Function& slot) {
  slot = reinterpret_cast<Function>(shared_library_symbol(library, symbol, library_name));
}

}  // namespace ember
