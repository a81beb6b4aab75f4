// ember-ckpt synth: the wide MLP's training state after a few steps (needs ember::nn and optim).
#include "tools/ember-ckpt/commands.h"

#include "runtime/error.h"

namespace ember::ckpt::cli {

int synth(const std::filesystem::path& out, int world_size, uint64_t seed, int steps) {
  fail("synth: needs ember::nn and ember::optim (not merged yet); cannot write {}", out.string());
}

}  // namespace ember::ckpt::cli
