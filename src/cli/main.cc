// The cronledger command. The only translation unit that includes CLI11
// (it costs seconds of compile time per file); each command's logic lives in
// its own file and takes plain argument structs.
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/check_command.h"
#include "cli/events_command.h"
#include "cli/exit_codes.h"
#include "cli/gaps_command.h"
#include "cli/next_command.h"
#include "cli/pause_command.h"
#include "cli/recovery_commands.h"
#include "cli/resolve_command.h"
#include "cli/retry_command.h"
#include "cli/runs_command.h"
#include "cli/serve_command.h"
#include "cli/status_command.h"
#include "cli/store_commands.h"
#include "cli/verify_command.h"
#include "cli/step_client.h"
#include "cli/step_commands.h"
#include "common/logging.h"
#include "cronledger/clock.h"

namespace cronledger::cli {
namespace {

constexpr const char* kDescription =
    "cronledger runs scheduled work so that every expected unit of work completes "
    "exactly once in effect, and proves it.";

// --config, else $CRONLEDGER_CONFIG, else ./cronledger.toml (docs/cli.md).
std::string ResolveConfigPath(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv("CRONLEDGER_CONFIG"); env != nullptr && *env != '\0') {
    return env;
  }
  return "cronledger.toml";
}

constexpr const char* kConfigHelp =
    "Configuration file (default: $CRONLEDGER_CONFIG, else ./cronledger.toml)";

// --server, else $CRONLEDGER_SERVER; "" (work on the store) when neither.
std::string ResolveServer(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv("CRONLEDGER_SERVER"); env != nullptr && *env != '\0') {
    return env;
  }
  return "";
}

constexpr const char* kServerHelp =
    "Go through this serve's HTTP API instead of opening the store, e.g. "
    "http://127.0.0.1:8377 (default: $CRONLEDGER_SERVER). Token: $CRONLEDGER_AUTH_TOKEN, else "
    "cronledger.token beside the config file";

int Main(int argc, char** argv) {
  LogToStderr();
  CLI::App app{kDescription, "cronledger"};
  app.set_version_flag("--version", std::string("cronledger ") + CRONLEDGER_VERSION);
  app.require_subcommand(0, 1);
  app.footer("Exit codes: 0 success, 1 the check found something or the ledger refused, "
             "2 usage or config error, 3 store or server unavailable.\n"
             "Documentation: README.md and docs/ in the source tree.");

  // --- next -------------------------------------------------------------------
  NextArgs next;
  CLI::App* next_cmd = app.add_subcommand(
      "next", "Print the next occurrences of a cron expression in a business timezone");
  next_cmd->add_option("EXPR", next.expression,
                       "Cron expression: 5 fields, 6 with a leading seconds field, or an "
                       "@macro; quote it")
      ->required();
  next_cmd->add_option("--tz", next.timezone, "IANA timezone, e.g. Asia/Seoul")->required();
  next_cmd->add_option("--from", next.from,
                       "Start strictly after this RFC 3339 instant (default: now)");
  next_cmd->add_option("-n", next.count, "Number of occurrences (1-100000)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  next_cmd->add_option("--offset-days", next.offset_days,
                       "date_offset_days: business date = local date + D")
      ->check(CLI::Range(-366, 366))
      ->capture_default_str();
  next_cmd->add_option("--dst-gap", next.dst_gap, "Nonexistent wall times: shift or skip")
      ->check(CLI::IsMember({"shift", "skip"}))
      ->capture_default_str();
  next_cmd->add_option("--dst-repeat", next.dst_repeat,
                       "Repeated wall times: first, last or both (default: first for a fixed "
                       "hour, both for a wildcard, range or step hour)")
      ->check(CLI::IsMember({"first", "last", "both"}));
  next_cmd->add_flag("--json", next.json, "Print a JSON array");

  // --- check ------------------------------------------------------------------
  std::optional<std::string> check_config;
  CheckArgs check;
  CLI::App* check_cmd =
      app.add_subcommand("check", "Validate the configuration and list every problem");
  check_cmd->add_option("--config", check_config, kConfigHelp);
  CLI::Option* against = check_cmd->add_flag(
      "--against-store", check.against_store,
      "Also show what the configuration would change in the ledger: run keys newly expected, "
      "no longer expected, re-keyed; exit 1 when a planned run would be orphaned or re-keyed");
  check_cmd->add_flag("--json", check.json, "With --against-store: print the impact as JSON")
      ->needs(against);

  // --- serve ------------------------------------------------------------------
  std::optional<std::string> serve_config;
  ServeArgs serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve", "Run the scheduler: plan every expected run, claim due ones and run their steps");
  serve_cmd->add_option("--config", serve_config, kConfigHelp);
  serve_cmd->add_option("--listen", serve.listen, "Override server.listen (HOST:PORT)");
  serve_cmd->add_option("--node-id", serve.node_id,
                        "This node's name (default: host name and listen port)");
  serve_cmd->add_option("--log-format", serve.log_format, "Log lines as text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  // --- status -----------------------------------------------------------------
  std::optional<std::string> status_config;
  std::optional<std::string> status_server;
  StatusArgs status;
  CLI::App* status_cmd = app.add_subcommand(
      "status", "Show where each job stands: state, counts for its business date, lag, next run");
  status_cmd->add_option("--config", status_config, kConfigHelp);
  status_cmd->add_option("--server", status_server, kServerHelp);
  status_cmd->add_flag("--json", status.json, "Print the status JSON of docs/cli.md");

  // --- runs -------------------------------------------------------------------
  std::optional<std::string> runs_config;
  std::optional<std::string> runs_server;
  RunsArgs runs;
  CLI::App* runs_cmd = app.add_subcommand(
      "runs", "List the ledger's runs, newest first, or show one run with its events");
  runs_cmd->add_option("--config", runs_config, kConfigHelp);
  runs_cmd->add_option("--server", runs_server, kServerHelp);
  runs_cmd->add_option("--job", runs.job, "Only this job's runs");
  runs_cmd->add_option("--date", runs.date, "Only runs for this business date (YYYY-MM-DD)");
  runs_cmd->add_option("--state", runs.state,
                       "Only runs in this state: pending, running, succeeded, failed, unknown, "
                       "skipped, awaiting_approval, cancelled");
  runs_cmd->add_option("--partition", runs.partition, "Only this partition's runs");
  runs_cmd->add_option("--limit", runs.limit, "At most N runs (1-100000, default 100)");
  runs_cmd->add_option("--run", runs.run, "Show this run (by id) with its attempts, effects and events");
  runs_cmd->add_flag("--json", runs.json, "Print the runs JSON of docs/cli.md");

  // --- events -----------------------------------------------------------------
  std::optional<std::string> events_config;
  std::optional<std::string> events_server;
  EventsArgs events;
  CLI::App* events_cmd = app.add_subcommand(
      "events", "Show the audit log: every transition and operator action, oldest first");
  events_cmd->add_option("--config", events_config, kConfigHelp);
  events_cmd->add_option("--server", events_server, kServerHelp);
  events_cmd->add_option("--job", events.job, "Only this job's events");
  events_cmd->add_option("--run", events.run, "Only this run's events (by id)");
  events_cmd->add_option("--since", events.since,
                         "The first events at or after this RFC 3339 instant (default: the "
                         "newest)");
  events_cmd->add_option("--limit", events.limit, "At most N events (1-100000, default 100)");
  events_cmd->add_flag("--json", events.json, "Print the events JSON of docs/cli.md");

  // --- pause, resume ----------------------------------------------------------
  std::optional<std::string> pause_config, pause_server;
  PauseArgs pause;
  std::optional<std::string> resume_config, resume_server;
  PauseArgs resume;
  resume.pause = false;
  const auto add_pause_options = [](CLI::App* cmd, std::optional<std::string>& config,
                                    std::optional<std::string>& server, PauseArgs& args) {
    cmd->add_option("--config", config, kConfigHelp);
    cmd->add_option("--server", server, kServerHelp);
    CLI::Option* job = cmd->add_option("--job", args.job, "The job");
    CLI::Option* all = cmd->add_flag("--all", args.all, "Every job (the global switch)");
    job->excludes(all);
    cmd->add_option("--reason", args.reason, "Why (required; recorded in the ledger)");
    cmd->add_option("--by", args.by, "Who (default: the OS user)");
  };
  CLI::App* pause_cmd = app.add_subcommand(
      "pause", "Pause a job or everything: nothing new is claimed until resume");
  add_pause_options(pause_cmd, pause_config, pause_server, pause);
  CLI::App* resume_cmd = app.add_subcommand("resume", "Resume a paused job or everything");
  add_pause_options(resume_cmd, resume_config, resume_server, resume);

  // --- retry ------------------------------------------------------------------
  std::optional<std::string> retry_config;
  std::optional<std::string> retry_server;
  RetryArgs retry;
  CLI::App* retry_cmd = app.add_subcommand(
      "retry", "Requeue a failed or unknown run as a new attempt on the same run key");
  retry_cmd->add_option("RUN_ID", retry.run_id, "The run's id (see `cronledger runs`)")
      ->required();
  retry_cmd->add_option("--config", retry_config, kConfigHelp);
  retry_cmd->add_option("--server", retry_server, kServerHelp);
  retry_cmd->add_option("--reason", retry.reason, "Why (required; recorded in the ledger)");
  retry_cmd->add_option("--by", retry.by, "Who asks (default: the OS user)");

  // --- resolve ----------------------------------------------------------------
  std::optional<std::string> resolve_config;
  std::optional<std::string> resolve_server;
  ResolveArgs resolve;
  CLI::App* resolve_cmd = app.add_subcommand(
      "resolve",
      "Settle an unknown run: an effect in doubt (--effect KEY --as committed|failed), or "
      "the run itself (--as succeeded|failed|retry)");
  resolve_cmd->add_option("RUN_ID", resolve.run_id, "The run's id (see `cronledger runs`)")
      ->required();
  resolve_cmd->add_option("--config", resolve_config, kConfigHelp);
  resolve_cmd->add_option("--server", resolve_server, kServerHelp);
  resolve_cmd->add_option("--effect", resolve.effect,
                          "The effect in doubt to settle (its idempotency key)");
  resolve_cmd->add_option("--as", resolve.as,
                          "What happened: committed or failed with --effect; else succeeded, "
                          "failed or retry");
  resolve_cmd->add_option("--reason", resolve.reason, "Why (required; recorded in the ledger)");
  resolve_cmd->add_option("--by", resolve.by, "Who decides (default: the OS user)");
  resolve_cmd->add_flag("--json", resolve.json, "Print the resulting run as JSON");

  // --- gaps -------------------------------------------------------------------
  std::optional<std::string> gaps_config;
  std::optional<std::string> gaps_server;
  GapsArgs gaps;
  CLI::App* gaps_cmd = app.add_subcommand(
      "gaps",
      "List every due expected run key that is not done (never planned, misfired, failed, "
      "unknown, awaiting approval, stuck); exit 1 when there is one");
  gaps_cmd->add_option("--config", gaps_config, kConfigHelp);
  gaps_cmd->add_option("--server", gaps_server, kServerHelp);
  gaps_cmd->add_option("--job", gaps.job, "Only this job");
  gaps_cmd->add_option("--from", gaps.from,
                       "First business date, YYYY-MM-DD (default: backfill.horizon ago)");
  gaps_cmd->add_option("--to", gaps.to, "Last business date, YYYY-MM-DD (default: tomorrow)");
  gaps_cmd->add_flag("--include-waived", gaps.include_waived,
                     "Also list keys not done on purpose (coalesced, catchup_none, overlap, "
                     "paused, cancelled)");
  gaps_cmd->add_flag("--json", gaps.json, "Print the gaps JSON of docs/cli.md");

  // --- verify -----------------------------------------------------------------
  std::optional<std::string> verify_config;
  std::optional<std::string> verify_server;
  VerifyArgs verify;
  CLI::App* verify_cmd = app.add_subcommand(
      "verify",
      "Prove a business date complete: exit 0 only when every expected run key succeeded "
      "through its last step or is waived");
  verify_cmd->add_option("--config", verify_config, kConfigHelp);
  verify_cmd->add_option("--server", verify_server, kServerHelp);
  verify_cmd->add_option("--job", verify.job, "The job")->required();
  verify_cmd->add_option("--date", verify.date, "The business date, YYYY-MM-DD")->required();
  verify_cmd->add_flag("--json", verify.json, "Print the completion report of docs/cli.md");

  // --- backfill, approve --------------------------------------------------------
  std::optional<std::string> backfill_config;
  std::optional<std::string> backfill_server;
  BackfillArgs backfill;
  CLI::App* backfill_cmd = app.add_subcommand(
      "backfill",
      "Queue the never-planned and misfired run keys of a date range; prints the impact and "
      "stops unless given --yes");
  backfill_cmd->add_option("--config", backfill_config, kConfigHelp);
  backfill_cmd->add_option("--server", backfill_server, kServerHelp);
  backfill_cmd->add_option("--job", backfill.job, "The job")->required();
  backfill_cmd->add_option("--from", backfill.from, "First business date, YYYY-MM-DD")
      ->required();
  backfill_cmd->add_option("--to", backfill.to, "Last business date, YYYY-MM-DD")->required();
  backfill_cmd->add_option("--partition", backfill.partitions, "Only these partitions (repeat)");
  backfill_cmd->add_flag("--include-waived", backfill.include_waived,
                         "Also queue keys skipped on purpose (coalesced, catchup_none, ...)");
  backfill_cmd->add_option("--reason", backfill.reason, "Why (required; recorded in the ledger)");
  backfill_cmd->add_option("--by", backfill.by, "Who asks (default: the OS user)");
  backfill_cmd->add_flag("--yes", backfill.yes, "Act, after the preview");
  backfill_cmd->add_option("--preview-digest", backfill.preview_digest,
                           "Act only if the ledger still matches this preview");
  backfill_cmd->add_flag("--json", backfill.json, "Print the preview (or the result) as JSON");

  std::optional<std::string> rerun_config;
  std::optional<std::string> rerun_server;
  RerunArgs rerun;
  CLI::App* rerun_cmd = app.add_subcommand(
      "rerun",
      "Run a business date's failed, unknown and missing run keys again (succeeded ones with "
      "--force); prints the impact and stops unless given --yes");
  rerun_cmd->add_option("--config", rerun_config, kConfigHelp);
  rerun_cmd->add_option("--server", rerun_server, kServerHelp);
  rerun_cmd->add_option("--job", rerun.job, "The job")->required();
  rerun_cmd->add_option("--date", rerun.date, "The business date, YYYY-MM-DD")->required();
  rerun_cmd->add_option("--partition", rerun.partitions, "Only these partitions (repeat)");
  rerun_cmd->add_option("--only", rerun.only, "failed, missing, unknown or all (default: all)");
  rerun_cmd->add_flag("--include-waived", rerun.include_waived,
                      "With --only all: also keys skipped on purpose or cancelled");
  rerun_cmd->add_flag("--force", rerun.force,
                      "Also rerun succeeded runs; every queued run starts at its first step "
                      "(committed effects are replayed, never sent again)");
  rerun_cmd->add_option("--reason", rerun.reason, "Why (required; recorded in the ledger)");
  rerun_cmd->add_option("--by", rerun.by, "Who asks (default: the OS user)");
  rerun_cmd->add_flag("--yes", rerun.yes, "Act, after the preview");
  rerun_cmd->add_option("--preview-digest", rerun.preview_digest,
                        "Act only if the ledger still matches this preview");
  rerun_cmd->add_flag("--json", rerun.json, "Print the preview (or the result) as JSON");

  std::optional<std::string> approve_config;
  std::optional<std::string> approve_server;
  ApproveArgs approve;
  CLI::App* approve_cmd = app.add_subcommand(
      "approve", "Let runs awaiting approval (gaps beyond backfill.auto_within) run");
  approve_cmd->add_option("--config", approve_config, kConfigHelp);
  approve_cmd->add_option("--server", approve_server, kServerHelp);
  approve_cmd->add_option("--job", approve.job, "The job")->required();
  approve_cmd->add_option("--from", approve.from, "First business date, YYYY-MM-DD");
  approve_cmd->add_option("--to", approve.to, "Last business date, YYYY-MM-DD");
  approve_cmd->add_option("--run", approve.run, "One run by id");
  approve_cmd->add_option("--reason", approve.reason, "Why (required; recorded in the ledger)");
  approve_cmd->add_option("--by", approve.by, "Who approves (default: the OS user)");

  std::optional<std::string> cancel_config;
  std::optional<std::string> cancel_server;
  CancelArgs cancel;
  CLI::App* cancel_cmd = app.add_subcommand(
      "cancel", "Cancel a pending, awaiting_approval, failed or unknown run (it is then waived)");
  cancel_cmd->add_option("RUN_ID", cancel.run_id, "The run's id")->required();
  cancel_cmd->add_option("--config", cancel_config, kConfigHelp);
  cancel_cmd->add_option("--server", cancel_server, kServerHelp);
  cancel_cmd->add_option("--reason", cancel.reason, "Why (required; recorded in the ledger)");
  cancel_cmd->add_option("--by", cancel.by, "Who decides (default: the OS user)");

  std::optional<std::string> trigger_config;
  std::optional<std::string> trigger_server;
  TriggerArgs trigger;
  CLI::App* trigger_cmd = app.add_subcommand(
      "trigger",
      "Run now: queue the job's latest due period; exit 1, changing nothing, when that "
      "period's run already exists");
  trigger_cmd->add_option("--config", trigger_config, kConfigHelp);
  trigger_cmd->add_option("--server", trigger_server, kServerHelp);
  trigger_cmd->add_option("--job", trigger.job, "The job")->required();
  trigger_cmd->add_option("--partition", trigger.partitions, "Only these partitions (repeat)");
  trigger_cmd->add_option("--reason", trigger.reason, "Why (required; recorded in the ledger)");
  trigger_cmd->add_option("--by", trigger.by, "Who asks (default: the OS user)");

  // --- effect run, checkpoint (inside a step; cli/front_main.cc answers them) ----
  StepCommands step;
  AddStepCommands(app, step);

  // --- backup, migrate-store (docs/deploy.md) ------------------------------------
  std::optional<std::string> backup_config;
  BackupArgs backup;
  CLI::App* backup_cmd = app.add_subcommand(
      "backup", "Copy the SQLite ledger to FILE, consistently, while serve runs");
  backup_cmd->add_option("--config", backup_config, kConfigHelp);
  backup_cmd->add_option("--to", backup.to, "The copy to write (replaced only once complete)")
      ->required();

  MigrateStoreArgs migrate;
  CLI::App* migrate_cmd = app.add_subcommand(
      "migrate-store", "Copy a SQLite ledger into an empty PostgreSQL database, verified");
  migrate_cmd->add_option("--from", migrate.from, "sqlite:FILE")->required();
  migrate_cmd->add_option("--to", migrate.to, "postgresql://USER@HOST/DB")->required();

  std::string help_topic;
  CLI::App* help_cmd = app.add_subcommand("help", "List the commands, or show one command's help");
  help_cmd->add_option("COMMAND", help_topic, "A command, e.g. serve");

  // A parse error names its command, as every other message does.
  app.failure_message([](const CLI::App* parsed, const CLI::Error& e) {
    std::string command = "cronledger";
    for (const CLI::App* sub = parsed; sub != nullptr;) {
      const auto chosen = sub->get_subcommands();
      sub = chosen.empty() ? nullptr : chosen.front();
      if (sub != nullptr) command += " " + sub->get_name();
    }
    return command + ": " + e.what() + "\nRun with --help for more information.\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    if (code == 0) return kExitOk;
    // Commands a step calls answer in sysexits, so its retry classes apply.
    return *step.effect || *step.checkpoint_cmd ? kStepUsage : kExitUsage;
  }

  if (*next_cmd) return RunNext(next, RealClock(), std::cout, std::cerr);
  if (*check_cmd) {
    check.config_path = ResolveConfigPath(check_config);
    return RunCheck(check, RealClock(), std::cout, std::cerr);
  }
  if (*serve_cmd) {
    serve.config_path = ResolveConfigPath(serve_config);
    return RunServe(serve, RealClock(), std::cerr);
  }
  if (*status_cmd) {
    status.config_path = ResolveConfigPath(status_config);
    status.server = ResolveServer(status_server);
    return RunStatus(status, RealClock(), std::cout, std::cerr);
  }
  if (*runs_cmd) {
    runs.config_path = ResolveConfigPath(runs_config);
    runs.server = ResolveServer(runs_server);
    return RunRuns(runs, RealClock(), std::cout, std::cerr);
  }
  if (*events_cmd) {
    events.config_path = ResolveConfigPath(events_config);
    events.server = ResolveServer(events_server);
    return RunEvents(events, RealClock(), std::cout, std::cerr);
  }
  if (*retry_cmd) {
    retry.config_path = ResolveConfigPath(retry_config);
    retry.server = ResolveServer(retry_server);
    return RunRetry(retry, RealClock(), std::cout, std::cerr);
  }
  if (*gaps_cmd) {
    gaps.config_path = ResolveConfigPath(gaps_config);
    gaps.server = ResolveServer(gaps_server);
    return RunGaps(gaps, RealClock(), std::cout, std::cerr);
  }
  if (*verify_cmd) {
    verify.config_path = ResolveConfigPath(verify_config);
    verify.server = ResolveServer(verify_server);
    return RunVerify(verify, RealClock(), std::cout, std::cerr);
  }
  if (*backfill_cmd) {
    backfill.config_path = ResolveConfigPath(backfill_config);
    backfill.server = ResolveServer(backfill_server);
    return RunBackfill(backfill, RealClock(), std::cout, std::cerr);
  }
  if (*rerun_cmd) {
    rerun.config_path = ResolveConfigPath(rerun_config);
    rerun.server = ResolveServer(rerun_server);
    return RunRerun(rerun, RealClock(), std::cout, std::cerr);
  }
  if (*approve_cmd) {
    approve.config_path = ResolveConfigPath(approve_config);
    approve.server = ResolveServer(approve_server);
    return RunApprove(approve, RealClock(), std::cout, std::cerr);
  }
  if (*cancel_cmd) {
    cancel.config_path = ResolveConfigPath(cancel_config);
    cancel.server = ResolveServer(cancel_server);
    return RunCancel(cancel, RealClock(), std::cout, std::cerr);
  }
  if (*trigger_cmd) {
    trigger.config_path = ResolveConfigPath(trigger_config);
    trigger.server = ResolveServer(trigger_server);
    return RunTrigger(trigger, RealClock(), std::cout, std::cerr);
  }
  if (const int code = RunStepCommand(step, std::cout, std::cerr); code >= 0) return code;
  if (*backup_cmd) {
    backup.config_path = ResolveConfigPath(backup_config);
    return RunBackup(backup, std::cout, std::cerr);
  }
  if (*migrate_cmd) return RunMigrateStore(migrate, RealClock(), std::cout, std::cerr);
  if (*resolve_cmd) {
    resolve.config_path = ResolveConfigPath(resolve_config);
    resolve.server = ResolveServer(resolve_server);
    return RunResolve(resolve, RealClock(), std::cout, std::cerr);
  }
  if (*pause_cmd) {
    pause.config_path = ResolveConfigPath(pause_config);
    pause.server = ResolveServer(pause_server);
    return RunPause(pause, RealClock(), std::cout, std::cerr);
  }
  if (*resume_cmd) {
    resume.config_path = ResolveConfigPath(resume_config);
    resume.server = ResolveServer(resume_server);
    return RunPause(resume, RealClock(), std::cout, std::cerr);
  }
  if (*help_cmd) {
    // app.help() would describe the selected subcommand, `help` itself.
    const CLI::App* topic = &app;
    if (!help_topic.empty()) {
      try {
        topic = app.get_subcommand(help_topic);
      } catch (const CLI::OptionNotFound&) {
        std::cerr << "cronledger help: no command \"" << help_topic
                  << "\"; `cronledger help` lists them\n";
        return kExitUsage;
      }
    }
    std::cout << app.get_formatter()->make_help(
        topic, topic == &app ? "cronledger" : "cronledger " + topic->get_name(),
        CLI::AppFormatMode::Normal);
    return kExitOk;
  }
  std::cerr << app.help();
  return kExitUsage;
}

}  // namespace
}  // namespace cronledger::cli

int main(int argc, char** argv) { return cronledger::cli::Main(argc, argv); }
