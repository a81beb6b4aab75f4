// ember-ops: the op registry as a table: every op, its kind and the devices it has kernels for.
//   ember-ops                       name, kind, cpu, cuda for every op
//   ember-ops --names               one name per line (tools/gpu_check.sh loops over these)
//   ember-ops --missing cuda        ops (views excepted) with no kernel on that device; exit 1 if any
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "runtime/ember.h"
#include "runtime/ops/registry.h"

namespace {

const char* kind_name(ember::OpKind kind) {
  switch (kind) {
    case ember::OpKind::Pointwise: return "pointwise";
    case ember::OpKind::Reduction: return "reduction";
    case ember::OpKind::View: return "view";
    case ember::OpKind::InPlace: return "in-place";
    case ember::OpKind::Factory: return "factory";
    case ember::OpKind::Other: return "other";
  }
  return "?";
}

// Views run no kernel on any device: they only make a new TensorImpl over the same storage.
bool has_kernel(const ember::OpDef& op, ember::DeviceType device) {
  return op.kind == ember::OpKind::View || op.kernels[static_cast<int>(device)] != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  bool names_only = false;
  std::string missing;
  CLI::App app{"ember-ops: the registered ops and the devices they run on"};
  app.add_flag("--names", names_only, "print only the op names, one per line");
  app.add_option("--missing", missing, "list ops without a kernel for this device (cpu or cuda)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  CLI11_PARSE(app, argc, argv);

  int without = 0;
  const auto ops = ember::registry().all();
  int width = 24;  // the name column fits the longest name
  for (const ember::OpDef* op : ops) width = std::max(width, static_cast<int>(op->name.size()));
  if (!names_only && missing.empty()) std::printf("%-*s %-10s %-4s %-4s\n", width, "op", "kind", "cpu", "cuda");
  for (const ember::OpDef* op : ops) {
    const bool cpu = has_kernel(*op, ember::DeviceType::CPU);
    const bool cuda = has_kernel(*op, ember::DeviceType::CUDA);
    if (!missing.empty()) {  // one name per line, so --names changes nothing here
      if (!(missing == "cpu" ? cpu : cuda)) {
        std::printf("%s\n", op->name.c_str());
        ++without;
      }
    } else if (names_only) {
      std::printf("%s\n", op->name.c_str());
    } else {
      std::printf("%-*s %-10s %-4s %-4s\n", width, op->name.c_str(), kind_name(op->kind), cpu ? "yes" : "-",
                  cuda ? "yes" : "-");
    }
  }
  if (!missing.empty()) std::fprintf(stderr, "%d of %zu ops have no %s kernel\n", without, ops.size(), missing.c_str());
  return without > 0 ? 1 : 0;
}
