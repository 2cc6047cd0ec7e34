#include "cli/step_commands.h"

namespace cronledger::cli {

void AddEffectSubcommands(CLI::App& effect, StepCommands& c) {
  EffectRunArgs& effect_run = c.effect_run;
  c.effect = &effect;
  c.effect->require_subcommand(1);
  CLI::App* effect_run_cmd = c.effect->add_subcommand(
      "run",
      "Run CMD at most once in effect for KEY (scoped to the job): a replay prints the stored "
      "result. Exit: CMD's own status; 0 on a replay; 64 usage or outside a step; 65 "
      "fingerprint mismatch; 69 in doubt and not reconciled; 75 server unreachable; 76 fenced");
  c.effect_run_cmd = effect_run_cmd;
  effect_run_cmd->add_option("--key", effect_run.key, "Idempotency key (1-1024 bytes)")
      ->required();
  auto* fp = effect_run_cmd->add_option("--fingerprint", effect_run.fingerprint,
                                        "What the effect is about (default: empty); the same key "
                                        "with another fingerprint is refused (65)");
  effect_run_cmd
      ->add_option("--fingerprint-file", effect_run.fingerprint_file,
                   "Fingerprint: the SHA-256 of this file's bytes")
      ->excludes(fp);
  effect_run_cmd->add_option("--reconcile", effect_run.reconcile,
                             "PROGRAM run (no arguments, CRONLEDGER_EFFECT_KEY set) when the key "
                             "is in doubt: exit 0 it happened (stdout is the result), 1 it did "
                             "not, else still in doubt");
  auto* cp = effect_run_cmd->add_option(
      "--checkpoint", effect_run.checkpoint,
      "Watermark committed with the effect, in the same transaction");
  effect_run_cmd
      ->add_option("--checkpoint-scope", effect_run.checkpoint_scope,
                   "Whose watermark: run (default) or partition")
      ->check(CLI::IsMember({"run", "partition"}))
      ->needs(cp);
  effect_run_cmd->add_option("CMD", effect_run.command, "The command and its arguments, after --")
      ->required();

}

void AddCheckpointSubcommands(CLI::App& checkpoint_cmd, StepCommands& c) {
  CheckpointArgs& checkpoint = c.checkpoint;
  c.checkpoint_cmd = &checkpoint_cmd;
  c.checkpoint_cmd->require_subcommand(1);
  c.checkpoint_get = c.checkpoint_cmd->add_subcommand(
      "get", "Print the watermark (nothing when none). Exit 0, 64, 75 or 76 as effect run");
  c.checkpoint_get->add_option("--scope", checkpoint.scope, "run (default) or partition")
      ->check(CLI::IsMember({"run", "partition"}));
  c.checkpoint_set = c.checkpoint_cmd->add_subcommand(
      "set", "Move the watermark. Exit 0, 64, 75 or 76 as effect run");
  c.checkpoint_set->add_option("VALUE", checkpoint.value, "The new watermark")->required();
  c.checkpoint_set->add_option("--scope", checkpoint.scope, "run (default) or partition")
      ->check(CLI::IsMember({"run", "partition"}));
}

void AddStepCommands(CLI::App& app, StepCommands& c) {
  AddEffectSubcommands(*app.add_subcommand("effect", kEffectSummary), c);
  AddCheckpointSubcommands(*app.add_subcommand("checkpoint", kCheckpointSummary), c);
}

int RunStepCommand(const StepCommands& c, std::ostream& out, std::ostream& err) {
  const auto parsed = [](const CLI::App* cmd) { return cmd != nullptr && *cmd; };
  if (parsed(c.effect_run_cmd)) return RunEffectRun(c.effect_run, out, err);
  if (parsed(c.checkpoint_get)) return RunCheckpointGet(c.checkpoint, out, err);
  if (parsed(c.checkpoint_set)) return RunCheckpointSet(c.checkpoint, out, err);
  return -1;
}

}  // namespace cronledger::cli
