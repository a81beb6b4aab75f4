// error_of(body): runs body, expects it to throw ember::Error, and returns the message, so a test
// can check what the error names (the op, the values, the call site). No error fails the case.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "runtime/error.h"

namespace ember::testing {

template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  FAIL("expected ember::Error");
  return "";
}

}  // namespace ember::testing
