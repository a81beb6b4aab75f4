// Pass-through dispatch modes for tests. HostReadRecorder runs every op as usual and records the
// host reads the dispatcher's modes hear of (a compiled step breaks its graph at each), so a test
// can check which functions read values on the host and under which name. OpNameRecorder records
// the name of every op dispatched while it is installed, as a capture would see them.
#pragma once

#include <string>
#include <vector>

#include "runtime/dispatch.h"

namespace ember::testing {

class HostReadRecorder : public DispatchMode {
 public:
  TensorList handle(const OpCall& call, const DispatchNext& next) override { return next.run(call); }
  void on_host_read(const char* what, const Tensor&) override { reads.emplace_back(what); }
  std::vector<std::string> reads;
};

class OpNameRecorder : public DispatchMode {
 public:
  TensorList handle(const OpCall& call, const DispatchNext& next) override {
    names.push_back(call.op.name);
    return next.run(call);
  }
  std::vector<std::string> names;
};

}  // namespace ember::testing
