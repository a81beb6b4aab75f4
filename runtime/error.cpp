// Call-site bookkeeping and the internal-assertion message.
#include "runtime/error.h"

#include <cstring>

namespace ember {

thread_local std::source_location CallSite::current_;
thread_local bool CallSite::known_ = false;

std::string CallSite::describe() {
  if (!known_) return "";
  // Only the file's base name: full build paths drown the message.
  const char* file = current_.file_name();
  if (const char* slash = std::strrchr(file, '/')) file = slash + 1;
  return fmt::format(" at {}:{}", file, current_.line());
}

void internal_assert_failed(const char* condition, const std::string& detail,
                            std::source_location where) {
  throw Error(fmt::format(
      "internal error (a bug in ember, please report it): {} failed{} at {}:{} in {}", condition,
      detail.empty() ? "" : ": " + detail, where.file_name(), where.line(), where.function_name()));
}

}  // namespace ember
