// dlopen/dlsym with ember errors; see shared_library.h.
#include "runtime/shared_library.h"

#include <dlfcn.h>

#include <string>

#include "runtime/error.h"

namespace ember {

void* open_shared_library(std::initializer_list<const char*> candidates, std::string_view what) {
  std::string reasons;
  for (const char* name : candidates) {
    // RTLD_LOCAL: nothing else in the process binds to the library's symbols by accident.
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return handle;
    reasons += fmt::format("\n  {}: {}", name, dlerror());
  }
  fail("cannot load {}; tried:{}", what, reasons);
}

void* shared_library_symbol(void* library, const char* symbol, std::string_view library_name) {
  dlerror();  // clears an earlier error, so the one read below is this lookup's
  void* address = dlsym(library, symbol);
  check(address != nullptr, "{} has no function {} ({})", library_name, symbol, dlerror());
  return address;
}

}  // namespace ember
