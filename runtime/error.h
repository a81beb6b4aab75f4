// ember::Error and the checks that raise it. A user error names the op, the offending values and
// the user's call site; an internal invariant failure says plainly that it is a bug in ember.
#pragma once

#include <fmt/format.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace ember {

// Thrown for every user-facing failure: bad shapes, dtypes, devices, indices, files.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The call site of the outermost public API call on this thread. Ops called from inside other ops
// (nn modules, backward rules) keep the user's site, so an error points at the user's line.
class CallSite {
 public:
  static bool known() { return known_; }
  static const std::source_location& current() { return current_; }
  static std::string describe();  // " at file:line", or "" when unknown

 private:
  friend class CallSiteScope;
  friend class CallSiteSuspend;
  static thread_local std::source_location current_;
  static thread_local bool known_;
};

// Sets the call site for the duration of a public API call unless an outer call already set it.
class CallSiteScope {
 public:
  explicit CallSiteScope(const std::source_location& where) noexcept
      : owner_(!CallSite::known_) {
    if (owner_) {
      CallSite::current_ = where;
      CallSite::known_ = true;
    }
  }
  ~CallSiteScope() {
    if (owner_) CallSite::known_ = false;
  }
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

 private:
  bool owner_;
};

// Forgets the call site while user code that ember calls back (an optimizer's loss closure) runs,
// so the errors raised there name the closure's own lines; restores it afterwards.
class CallSiteSuspend {
 public:
  CallSiteSuspend() noexcept : saved_(CallSite::current_), was_known_(CallSite::known_) { CallSite::known_ = false; }
  ~CallSiteSuspend() {
    CallSite::current_ = saved_;
    CallSite::known_ = was_known_;
  }
  CallSiteSuspend(const CallSiteSuspend&) = delete;
  CallSiteSuspend& operator=(const CallSiteSuspend&) = delete;

 private:
  std::source_location saved_;
  bool was_known_;
};

// Throws ember::Error with the formatted message followed by the user's call site.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...) + CallSite::describe());
}

// `check(condition, "op: what went wrong ({} vs {})", a, b)`: the user-error check.
template <typename... Args>
inline void check(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) [[unlikely]] fail(format, std::forward<Args>(args)...);
}

// Internal invariants. A failure here is ember's bug, never the user's.
[[noreturn]] void internal_assert_failed(const char* condition, const std::string& detail,
                                         std::source_location where);

inline void internal_assert(bool condition, const char* what,
                            std::source_location where = std::source_location::current()) {
  if (!condition) [[unlikely]] internal_assert_failed(what, "", where);
}

}  // namespace ember
