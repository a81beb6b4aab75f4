// ember-ckpt: inspect, verify, reshard, diff and synthesize sharded checkpoints.
//   ember-ckpt inspect DIR [--entry NAME] [--json]
//   ember-ckpt verify DIR
//   ember-ckpt reshard DIR --world M --out DIR2
//   ember-ckpt diff DIR1 DIR2        (exit 0: same, 1: they differ, 2: trouble, as diff(1))
//   ember-ckpt synth --world N --out DIR --seed S [--steps K]
//   ember-ckpt bench DIR [--world 8] [--reshard-world 3] [--repeat 5] [--copies 1]
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/ember-ckpt/commands.h"
#include "tools/integer_option.h"

namespace {

// synth, bench and reshard run each rank as a thread of this process (reshard: each new rank reads
// its rows and writes its file): past a thousand, a typo (--world 100000) would start that many
// threads instead of failing. (Larger worlds save with real ranks, each writing its own part.)
constexpr int kMaxThreadRanks = 1024;
// diff's exit status for trouble (an unreadable checkpoint, a bad argument), as diff(1) has it:
// 1 means the checkpoints differ.
constexpr int kDiffTrouble = 2;

}  // namespace

int main(int argc, char** argv) {
  namespace cli = ember::ckpt::cli;
  using ember::tools::integer_in;
  CLI::App app{"ember-ckpt: inspect, verify, reshard, diff and synthesize ember checkpoints"};
  app.require_subcommand(1);
  std::string directory, second, out, entry;
  int world_size = 1, steps = 3;
  uint64_t seed = 0;
  bool json = false;

  CLI::App* inspect = app.add_subcommand("inspect", "list entries, shapes, dtypes, shards and sizes");
  inspect->add_option("DIR", directory, "checkpoint directory")->required();
  inspect->add_option("--entry", entry, "print this entry's data as JSON");
  inspect->add_flag("--json", json, "print the listing as JSON");

  CLI::App* verify = app.add_subcommand("verify", "check every chunk's checksums");
  verify->add_option("DIR", directory, "checkpoint directory")->required();

  CLI::App* reshard = app.add_subcommand("reshard", "rewrite a checkpoint for another world size");
  reshard->add_option("DIR", directory, "checkpoint directory")->required();
  reshard->add_option("--world", world_size,
                      "ranks of the new layout, at most 1024: each is a thread of this process")
      ->required()
      ->transform(integer_in(1, kMaxThreadRanks));
  reshard->add_option("--out", out, "the new checkpoint directory (must not exist)")->required();

  CLI::App* diff = app.add_subcommand(
      "diff", "compare two checkpoints entry by entry; exit status 0: the same, 1: they differ, 2: trouble (as diff)");
  diff->add_option("DIR1", directory, "first checkpoint")->required();
  diff->add_option("DIR2", second, "second checkpoint")->required();

  CLI::App* synth = app.add_subcommand("synth", "write the wide MLP's training state after a few steps");
  synth->add_option("--world", world_size, "simulated saving ranks")->required()->transform(integer_in(1, kMaxThreadRanks));
  synth->add_option("--out", out, "the checkpoint directory to create")->required();
  synth->add_option("--seed", seed, "seed of the model, data and shuffling")
      ->required()
      ->transform(integer_in<uint64_t>(0));
  synth->add_option("--steps", steps, "training steps before saving")->transform(integer_in(0));

  CLI::App* bench = app.add_subcommand("bench", "time save/load/async/reshard of the wide MLP's state");
  int bench_world = 8, resharded_world = 3, repeat = 5, copies = 1;
  bench->add_option("DIR", directory, "scratch directory on the disk to measure")->required();
  bench->add_option("--world", bench_world, "saving ranks")->transform(integer_in(1, kMaxThreadRanks));
  bench->add_option("--reshard-world", resharded_world, "ranks of the resharded load")
      ->transform(integer_in(1, kMaxThreadRanks));
  bench->add_option("--repeat", repeat, "runs per measurement (the median is reported)")->transform(integer_in(1));
  bench->add_option("--copies", copies, "copies of the wide MLP's state (1: the state itself)")->transform(integer_in(1));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    return status != 0 && *diff ? kDiffTrouble : status;
  }
  try {
    if (*inspect) return cli::inspect(directory, entry, json);
    if (*verify) return cli::verify(directory);
    if (*reshard) return cli::reshard(directory, world_size, out);
    if (*diff) return cli::diff(directory, second);
    if (*synth) return cli::synth(out, world_size, seed, steps);
    if (*bench) return cli::bench(directory, bench_world, resharded_world, repeat, copies);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ember-ckpt: %s\n", error.what());
    return *diff ? kDiffTrouble : 1;
  }
  return 0;
}
