// The one translation unit of cronledger-core that includes CLI11 (it costs
// seconds of compile time per file): the table of commands, the shared
// flags, and the parse that picks a row. Each command's logic lives in its
// own file and takes a plain argument struct.
#include "cli/command_table.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cli/check_command.h"
#include "cli/events_command.h"
#include "cli/exit_codes.h"
#include "cli/gaps_command.h"
#include "cli/login_link_command.h"
#include "cli/next_command.h"
#include "cli/pause_command.h"
#include "cli/recovery_commands.h"
#include "cli/resolve_command.h"
#include "cli/run_action_command.h"
#include "cli/runs_command.h"
#include "cli/serve_command.h"
#include "cli/status_command.h"
#include "cli/step_client.h"
#include "cli/step_commands.h"
#include "cli/store_commands.h"
#include "cli/verify_command.h"
#include "common/logging.h"

namespace cronledger::cli {
namespace {

constexpr const char* kDescription =
    "cronledger runs scheduled work so that every expected unit of work completes "
    "exactly once in effect, and proves it.";

constexpr const char* kFooter =
    "Exit codes: 0 success, 1 the check found something or the ledger refused, "
    "2 usage or config error, 3 store or server unavailable.\n"
    "Documentation: README.md and docs/ in the source tree.";

// ---- the shared flags ----------------------------------------------------------------------

// The flags several commands take, each with one name, one help text and
// one field name in the argument structs. A command's help lists --config
// and --server before its own options, the others after them.
using SharedFlags = unsigned;
inline constexpr SharedFlags kConfig = 1u << 0;   // --config -> args.config_path
inline constexpr SharedFlags kServer = 1u << 1;   // --server -> args.server
inline constexpr SharedFlags kReason = 1u << 2;   // --reason -> args.reason
inline constexpr SharedFlags kBy = 1u << 3;       // --by -> args.by
inline constexpr SharedFlags kConfirm = 1u << 4;  // --yes, --preview-digest
inline constexpr SharedFlags kJson = 1u << 5;     // --json -> args.json (help: the row's)

constexpr const char* kConfigHelp =
    "Configuration file (default: $CRONLEDGER_CONFIG, else ./cronledger.toml)";
constexpr const char* kServerHelp =
    "Go through this serve's HTTP API instead of opening the store, e.g. "
    "http://127.0.0.1:8377 (default: $CRONLEDGER_SERVER). Token: $CRONLEDGER_AUTH_TOKEN, else "
    "cronledger.token beside the config file";
// A run id as typed: digits that fit in 64 bits. Checked on the text, since
// the conversion would clamp 99999999999999999999 to the largest id.
const CLI::Validator kRunIdText(
    [](std::string& text) -> std::string {
      if (text.empty() ||
          !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return "\"" + text + "\" is not a run id: give the number `cronledger runs` shows";
      }
      errno = 0;
      const unsigned long long n = std::strtoull(text.c_str(), nullptr, 10);
      if (errno == ERANGE || n > static_cast<unsigned long long>(INT64_MAX)) {
        return text + " is not a run id: it does not fit in 64 bits";
      }
      return "";
    },
    "", "run id");
constexpr const char* kReasonHelp = "Why (required; recorded in the ledger)";
constexpr const char* kByHelp = "Who (default: the OS user)";
constexpr const char* kYesHelp = "Act, after the preview";
constexpr const char* kPreviewDigestHelp = "Act only if the ledger still matches this preview";

// --config, else $CRONLEDGER_CONFIG, else ./cronledger.toml (docs/cli.md).
std::string ResolveConfigPath(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv("CRONLEDGER_CONFIG"); env != nullptr && *env != '\0') {
    return env;
  }
  return "cronledger.toml";
}

// --server, else $CRONLEDGER_SERVER; "" (work on the store) when neither.
std::string ResolveServer(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv("CRONLEDGER_SERVER"); env != nullptr && *env != '\0') {
    return env;
  }
  return "";
}

// ---- rows ----------------------------------------------------------------------------------

// A command bound to its CLI11 subcommand: holds the values the parse
// writes and runs the command on them.
class BoundCommand {
 public:
  virtual ~BoundCommand() = default;
  // `root` is the whole command line (for `help`).
  virtual int Run(const CLI::App& root, Clock& clock, std::ostream& out, std::ostream& err) = 0;
};

// One command. Its shared flags are the kShared of Command<Args, kShared>,
// the row's constructor, so that they are checked against Args at compile
// time.
struct CommandRow {
  std::string name;
  std::string summary;
  int usage_exit = kExitUsage;  // a parse error of this command
  // Adds the shared flags and the command's own options to `cmd`, the
  // command's subcommand; the result receives their values.
  std::function<std::unique_ptr<BoundCommand>(CLI::App& cmd)> bind;
};

template <typename Args>
using OwnOptions = void (*)(CLI::App& cmd, Args& args);
template <typename Args>
using Runner = int (*)(const Args& args, Clock& clock, std::ostream& out, std::ostream& err);

// The one place the shared flags are registered and resolved. A flag in
// kShared whose field `Args` lacks does not compile.
template <typename Args, SharedFlags kShared>
class TypedCommand final : public BoundCommand {
 public:
  TypedCommand(CLI::App& cmd, OwnOptions<Args> own, Runner<Args> run, const char* json_help)
      : run_(run) {
    if constexpr ((kShared & kConfig) != 0) cmd.add_option("--config", config_, kConfigHelp);
    if constexpr ((kShared & kServer) != 0) cmd.add_option("--server", server_, kServerHelp);
    if (own != nullptr) own(cmd, args_);
    if constexpr ((kShared & kReason) != 0) cmd.add_option("--reason", args_.reason, kReasonHelp);
    if constexpr ((kShared & kBy) != 0) cmd.add_option("--by", args_.by, kByHelp);
    if constexpr ((kShared & kConfirm) != 0) {
      cmd.add_flag("--yes", args_.yes, kYesHelp);
      cmd.add_option("--preview-digest", args_.preview_digest, kPreviewDigestHelp);
    }
    if constexpr ((kShared & kJson) != 0) cmd.add_flag("--json", args_.json, json_help);
  }

  int Run(const CLI::App&, Clock& clock, std::ostream& out, std::ostream& err) override {
    if constexpr ((kShared & kConfig) != 0) args_.config_path = ResolveConfigPath(config_);
    if constexpr ((kShared & kServer) != 0) args_.server = ResolveServer(server_);
    return run_(args_, clock, out, err);
  }

 private:
  Args args_;
  std::optional<std::string> config_;
  std::optional<std::string> server_;
  Runner<Args> run_;
};

// A row of a command that runs as RunX(args, clock, out, err).
template <typename Args, SharedFlags kShared>
CommandRow Command(std::string name, std::string summary, OwnOptions<Args> own,
                   Runner<Args> run, const char* json_help = "") {
  return CommandRow{std::move(name), std::move(summary), kExitUsage,
                    [own, run, json_help](CLI::App& cmd) -> std::unique_ptr<BoundCommand> {
                      return std::make_unique<TypedCommand<Args, kShared>>(cmd, own, run,
                                                                           json_help);
                    }};
}

// `help [COMMAND]`: the table as CLI11 renders it, from the root.
class HelpCommand final : public BoundCommand {
 public:
  explicit HelpCommand(CLI::App& cmd) {
    cmd.add_option("COMMAND", topic_, "A command, e.g. serve");
  }

  int Run(const CLI::App& root, Clock&, std::ostream& out, std::ostream& err) override {
    // root.help() would describe the selected subcommand, `help` itself.
    const CLI::App* topic = &root;
    if (!topic_.empty()) {
      try {
        topic = root.get_subcommand(topic_);
      } catch (const CLI::OptionNotFound&) {
        err << "cronledger help: no command \"" << topic_ << "\"; `cronledger help` lists them\n";
        return kExitUsage;
      }
    }
    out << root.get_formatter()->make_help(
        topic, topic == &root ? "cronledger" : "cronledger " + topic->get_name(),
        CLI::AppFormatMode::Normal);
    return kExitOk;
  }

 private:
  std::string topic_;
};

// ---- the table -----------------------------------------------------------------------------

std::vector<CommandRow> CommandTable() {
  std::vector<CommandRow> rows;

  rows.push_back(Command<NextArgs, kJson>(
      "next", "Print the next occurrences of a cron expression in a business timezone",
      [](CLI::App& cmd, NextArgs& a) {
        cmd.add_option("EXPR", a.expression,
                       "Cron expression: 5 fields, 6 with a leading seconds field, or an "
                       "@macro; quote it")
            ->required();
        cmd.add_option("--tz", a.timezone, "IANA timezone, e.g. Asia/Seoul")->required();
        cmd.add_option("--from", a.from,
                       "Start strictly after this RFC 3339 instant (default: now)");
        cmd.add_option("-n", a.count, "Number of occurrences (1-100000)")
            ->check(CLI::Range(1, 100000))
            ->capture_default_str();
        cmd.add_option("--offset-days", a.offset_days,
                       "date_offset_days: business date = local date + D")
            ->check(CLI::Range(-366, 366))
            ->capture_default_str();
        cmd.add_option("--dst-gap", a.dst_gap, "Nonexistent wall times: shift or skip")
            ->check(CLI::IsMember({"shift", "skip"}))
            ->capture_default_str();
        cmd.add_option("--dst-repeat", a.dst_repeat,
                       "Repeated wall times: first, last or both (default: first for a fixed "
                       "hour, both for a wildcard, range or step hour)")
            ->check(CLI::IsMember({"first", "last", "both"}));
      },
      RunNext, "Print a JSON array"));

  // check's --json is its own: it needs --against-store.
  rows.push_back(Command<CheckArgs, kConfig>(
      "check", "Validate the configuration and list every problem",
      [](CLI::App& cmd, CheckArgs& a) {
        CLI::Option* against = cmd.add_flag(
            "--against-store", a.against_store,
            "Also show what the configuration would change in the ledger: run keys newly "
            "expected, no longer expected, re-keyed; exit 1 when a planned run would be orphaned "
            "or re-keyed");
        cmd.add_flag("--json", a.json, "With --against-store: print the impact as JSON")
            ->needs(against);
      },
      RunCheck));

  rows.push_back(Command<ServeArgs, kConfig>(
      "serve", "Run the scheduler: plan every expected run, claim due ones and run their steps",
      [](CLI::App& cmd, ServeArgs& a) {
        cmd.add_option("--listen", a.listen, "Override server.listen (HOST:PORT)");
        cmd.add_option("--node-id", a.node_id,
                       "This node's name (default: host name and listen port)");
        cmd.add_option("--log-format", a.log_format, "Log lines as text or json")
            ->check(CLI::IsMember({"text", "json"}))
            ->capture_default_str();
      },
      [](const ServeArgs& a, Clock& clock, std::ostream&, std::ostream& err) {
        return RunServe(a, clock, err);
      }));

  rows.push_back(Command<StatusArgs, kConfig | kServer | kJson>(
      "status", "Show where each job stands: state, counts for its business date, lag, next run",
      nullptr, RunStatus, "Print the status JSON of docs/cli.md"));

  rows.push_back(Command<RunsArgs, kConfig | kServer | kJson>(
      "runs", "List the ledger's runs, newest first, or show one run with its events",
      [](CLI::App& cmd, RunsArgs& a) {
        cmd.add_option("--job", a.job, "Only this job's runs");
        cmd.add_option("--date", a.date, "Only runs for this business date (YYYY-MM-DD)");
        cmd.add_option("--state", a.state,
                       "Only runs in this state: pending, running, succeeded, failed, unknown, "
                       "skipped, awaiting_approval, cancelled");
        cmd.add_option("--partition", a.partition, "Only this partition's runs");
        cmd.add_option("--limit", a.limit, "At most N runs (1-100000, default 100)");
        cmd.add_option("--run", a.run,
                       "Show this run (by id) with its attempts, effects and events")
            ->check(kRunIdText);
      },
      RunRuns,
      "Print the runs JSON of docs/cli.md"));

  rows.push_back(Command<EventsArgs, kConfig | kServer | kJson>(
      "events", "Show the audit log: every transition and operator action, oldest first",
      [](CLI::App& cmd, EventsArgs& a) {
        cmd.add_option("--job", a.job, "Only this job's events");
        cmd.add_option("--run", a.run, "Only this run's events (by id)")->check(kRunIdText);
        cmd.add_option("--type", a.type, "Only events of this type (docs/events.md)");
        cmd.add_option("--actor", a.actor,
                       "Only events by this actor, or done on behalf of this name (--by)");
        cmd.add_option("--since", a.since,
                       "The first events at or after this RFC 3339 instant (default: the "
                       "newest)");
        cmd.add_option("--limit", a.limit, "At most N events (1-100000, default 100)");
      },
      RunEvents,
      "Print the events JSON of docs/cli.md"));

  constexpr OwnOptions<PauseArgs> kPauseOptions = [](CLI::App& cmd, PauseArgs& a) {
    CLI::Option* job = cmd.add_option("--job", a.job, "The job");
    CLI::Option* all = cmd.add_flag("--all", a.all, "Every job (the global switch)");
    job->excludes(all);
  };
  rows.push_back(Command<PauseArgs, kConfig | kServer | kReason | kBy>(
      "pause", "Pause a job or everything: nothing new is claimed until resume", kPauseOptions,
      RunPause));
  rows.push_back(Command<PauseArgs, kConfig | kServer | kReason | kBy>(
      "resume", "Resume a paused job or everything", kPauseOptions,
      [](const PauseArgs& a, Clock& clock, std::ostream& out, std::ostream& err) {
        PauseArgs resume = a;
        resume.pause = false;
        return RunPause(resume, clock, out, err);
      }));

  rows.push_back(Command<RunActionArgs, kConfig | kServer | kReason | kBy>(
      "retry", "Requeue a failed or unknown run as a new attempt on the same run key",
      [](CLI::App& cmd, RunActionArgs& a) {
        cmd.add_option("RUN_ID", a.run_id, "The run's id (see `cronledger runs`)")
            ->check(kRunIdText)
            ->required();
      },
      RunRetry));

  rows.push_back(Command<ResolveArgs, kConfig | kServer | kReason | kBy | kJson>(
      "resolve",
      "Settle an unknown run: an effect in doubt (--effect KEY --as committed|failed), or "
      "the run itself (--as succeeded|failed|retry)",
      [](CLI::App& cmd, ResolveArgs& a) {
        cmd.add_option("RUN_ID", a.run_id, "The run's id (see `cronledger runs`)")
            ->check(kRunIdText)
            ->required();
        cmd.add_option("--effect", a.effect,
                       "The effect in doubt to settle (its idempotency key)");
        cmd.add_option("--as", a.as,
                       "What happened: committed or failed with --effect; else succeeded, "
                       "failed or retry");
      },
      RunResolve, "Print the resulting run as JSON"));

  rows.push_back(Command<GapsArgs, kConfig | kServer | kJson>(
      "gaps",
      "List every due expected run key that is not done (never planned, misfired, failed, "
      "unknown, awaiting approval, stuck); exit 1 when there is one",
      [](CLI::App& cmd, GapsArgs& a) {
        cmd.add_option("--job", a.job, "Only this job");
        cmd.add_option("--from", a.from,
                       "First business date, YYYY-MM-DD (default: backfill.horizon ago)");
        cmd.add_option("--to", a.to, "Last business date, YYYY-MM-DD (default: tomorrow)");
        cmd.add_flag("--include-waived", a.include_waived,
                     "Also list keys not done on purpose (coalesced, catchup_none, overlap, "
                     "paused, cancelled)");
      },
      RunGaps, "Print the gaps JSON of docs/cli.md"));

  rows.push_back(Command<VerifyArgs, kConfig | kServer | kJson>(
      "verify",
      "Prove a business date complete: exit 0 only when every expected run key succeeded "
      "through its last step or is waived",
      [](CLI::App& cmd, VerifyArgs& a) {
        cmd.add_option("--job", a.job, "The job")->required();
        cmd.add_option("--date", a.date, "The business date, YYYY-MM-DD")->required();
      },
      RunVerify, "Print the completion report of docs/cli.md"));

  rows.push_back(Command<BackfillArgs, kConfig | kServer | kReason | kBy | kConfirm | kJson>(
      "backfill",
      "Queue the never-planned and misfired run keys of a date range; prints the impact and "
      "stops unless given --yes",
      [](CLI::App& cmd, BackfillArgs& a) {
        cmd.add_option("--job", a.job, "The job")->required();
        cmd.add_option("--from", a.from, "First business date, YYYY-MM-DD")->required();
        cmd.add_option("--to", a.to, "Last business date, YYYY-MM-DD")->required();
        cmd.add_option("--partition", a.partitions, "Only these partitions (repeat)");
        cmd.add_flag("--include-waived", a.include_waived,
                     "Also queue keys skipped on purpose (coalesced, catchup_none, ...)");
      },
      RunBackfill, "Print the preview (or the result) as JSON"));

  rows.push_back(Command<RerunArgs, kConfig | kServer | kReason | kBy | kConfirm | kJson>(
      "rerun",
      "Run a business date's failed, unknown and missing run keys again (succeeded ones with "
      "--force); prints the impact and stops unless given --yes",
      [](CLI::App& cmd, RerunArgs& a) {
        cmd.add_option("--job", a.job, "The job")->required();
        cmd.add_option("--date", a.date, "The business date, YYYY-MM-DD")->required();
        cmd.add_option("--partition", a.partitions, "Only these partitions (repeat)");
        cmd.add_option("--only", a.only, "failed, missing, unknown or all (default: all)");
        cmd.add_flag("--include-waived", a.include_waived,
                     "With --only all: also keys skipped on purpose or cancelled");
        cmd.add_flag("--force", a.force,
                     "Also rerun succeeded runs; every queued run starts at its first step "
                     "(committed effects are replayed, never sent again)");
      },
      RunRerun, "Print the preview (or the result) as JSON"));

  rows.push_back(Command<ApproveArgs, kConfig | kServer | kReason | kBy>(
      "approve", "Let runs awaiting approval (gaps beyond backfill.auto_within) run",
      [](CLI::App& cmd, ApproveArgs& a) {
        cmd.add_option("--job", a.job, "The job")->required();
        cmd.add_option("--from", a.from, "First business date, YYYY-MM-DD");
        cmd.add_option("--to", a.to, "Last business date, YYYY-MM-DD");
        cmd.add_option("--run", a.run, "One run by id")->check(kRunIdText);
      },
      RunApprove));

  rows.push_back(Command<RunActionArgs, kConfig | kServer | kReason | kBy>(
      "cancel", "Cancel a pending, awaiting_approval, failed or unknown run (it is then waived)",
      [](CLI::App& cmd, RunActionArgs& a) {
        cmd.add_option("RUN_ID", a.run_id, "The run's id")->check(kRunIdText)->required();
      },
      RunCancel));

  rows.push_back(Command<TriggerArgs, kConfig | kServer | kReason | kBy>(
      "trigger",
      "Run now: queue the job's latest due period, or the one --date or --period names; exit "
      "1, changing nothing, when that period's run already exists",
      [](CLI::App& cmd, TriggerArgs& a) {
        cmd.add_option("--job", a.job, "The job")->required();
        cmd.add_option("--partition", a.partitions, "Only these partitions (repeat)");
        auto* date = cmd.add_option("--date", a.date,
                                    "A business date (YYYY-MM-DD) from the job's start up to "
                                    "today's, run at once; for a job keyed by date");
        cmd.add_option("--period", a.period,
                       "A due period, as run keys show it; for a job keyed by slot")
            ->excludes(date);
      },
      RunTrigger));

  // Inside a step; the `cronledger` front answers them without this
  // program (src/cli/front_main.cc), and in sysexits, so that the step's
  // retry classes apply to a usage error too.
  constexpr Runner<StepCommands> kRunStep = [](const StepCommands& c, Clock&, std::ostream& out,
                                               std::ostream& err) {
    return RunStepCommand(c, out, err);
  };
  rows.push_back(Command<StepCommands, 0>("effect", kEffectSummary, AddEffectSubcommands,
                                          kRunStep));
  rows.back().usage_exit = kStepUsage;
  rows.push_back(Command<StepCommands, 0>("checkpoint", kCheckpointSummary,
                                          AddCheckpointSubcommands, kRunStep));
  rows.back().usage_exit = kStepUsage;

  // docs/deploy.md
  rows.push_back(Command<BackupArgs, kConfig>(
      "backup", "Copy the SQLite ledger to FILE, consistently, while serve runs",
      [](CLI::App& cmd, BackupArgs& a) {
        cmd.add_option("--to", a.to, "The copy to write (replaced only once complete)")
            ->required();
      },
      [](const BackupArgs& a, Clock&, std::ostream& out, std::ostream& err) {
        return RunBackup(a, out, err);
      }));

  // docs/dashboard.md
  rows.push_back(Command<LoginLinkArgs, kConfig>(
      "login-link",
      "Print a new one-time dashboard login link (valid 10 minutes, works once) for an "
      "operator on this machine",
      [](CLI::App& cmd, LoginLinkArgs& a) {
        cmd.add_option("--token", a.token,
                       "With [[auth.token]]: the read or operate token the link logs in as");
      },
      [](const LoginLinkArgs& a, Clock& clock, std::ostream& out, std::ostream& err) {
        return RunLoginLink(a, clock, out, err);
      }));

  rows.push_back(Command<MigrateStoreArgs, 0>(
      "migrate-store", "Copy a SQLite ledger into an empty PostgreSQL database, verified",
      [](CLI::App& cmd, MigrateStoreArgs& a) {
        cmd.add_option("--from", a.from, "sqlite:FILE")->required();
        cmd.add_option("--to", a.to, "postgresql://USER@HOST/DB")->required();
      },
      [](const MigrateStoreArgs& a, Clock& clock, std::ostream& out, std::ostream& err) {
        return RunMigrateStore(a, clock, out, err);
      }));

  rows.push_back(CommandRow{"help", "List the commands, or show one command's help", kExitUsage,
                            [](CLI::App& cmd) -> std::unique_ptr<BoundCommand> {
                              return std::make_unique<HelpCommand>(cmd);
                            }});
  return rows;
}

// ---- the command line ----------------------------------------------------------------------

struct Bound {
  const CommandRow* row;
  CLI::App* cmd;
  std::unique_ptr<BoundCommand> command;
};

// The whole command line: `rows` must outlive `app` and `bound`.
void BuildApp(const std::vector<CommandRow>& rows, CLI::App& app, std::vector<Bound>& bound) {
  app.set_version_flag("--version", std::string("cronledger ") + CRONLEDGER_VERSION);
  app.require_subcommand(0, 1);
  app.footer(kFooter);  // before the subcommands, which inherit it
  for (const CommandRow& row : rows) {
    CLI::App* cmd = app.add_subcommand(row.name, row.summary);
    bound.push_back(Bound{&row, cmd, row.bind(*cmd)});
  }
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
}

void Describe(const CLI::App& cmd, const std::string& name, std::vector<CommandDoc>& docs) {
  CommandDoc doc{name, cmd.get_description(), {}};
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt == cmd.get_help_ptr()) continue;
    if (opt->get_positional()) {
      doc.options.push_back(opt->get_name());
      continue;
    }
    for (const std::string& s : opt->get_snames()) doc.options.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) doc.options.push_back("--" + l);
  }
  docs.push_back(std::move(doc));
  for (const CLI::App* sub : cmd.get_subcommands([](const CLI::App*) { return true; })) {
    Describe(*sub, name + " " + sub->get_name(), docs);
  }
}

}  // namespace

int Run(const std::vector<std::string>& argv, Clock& clock, std::ostream& out,
        std::ostream& err) {
  LogToStderr();
  const std::vector<CommandRow> rows = CommandTable();
  CLI::App app{kDescription, "cronledger"};
  std::vector<Bound> bound;
  BuildApp(rows, app, bound);

  // CLI11 parses argc/argv as main() receives them.
  std::vector<std::string> storage = argv;
  std::vector<char*> pointers;
  for (std::string& arg : storage) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  try {
    app.parse(static_cast<int>(storage.size()), pointers.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    if (code == 0) return kExitOk;
    for (const Bound& b : bound) {
      if (*b.cmd) return b.row->usage_exit;
    }
    return kExitUsage;
  }

  for (const Bound& b : bound) {
    if (*b.cmd) return b.command->Run(app, clock, out, err);
  }
  err << app.help();
  return kExitUsage;
}

std::vector<CommandDoc> DescribeCommands() {
  const std::vector<CommandRow> rows = CommandTable();
  CLI::App app{kDescription, "cronledger"};
  std::vector<Bound> bound;
  BuildApp(rows, app, bound);
  std::vector<CommandDoc> docs;
  for (const Bound& b : bound) Describe(*b.cmd, b.row->name, docs);
  return docs;
}

}  // namespace cronledger::cli
