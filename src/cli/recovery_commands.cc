#include "cli/recovery_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ops/impact_preview.h"
#include "ops/json_shapes.h"
#include "ops/operator_actions.h"
#include "cli/context.h"
#include "cli/exit_codes.h"
#include "cli/ledger_output.h"
#include "cli/remote_ledger.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::cli {
namespace {

bool Blank(const std::optional<std::string>& s) {
  return !s || s->find_first_not_of(" \t\r\n") == std::string::npos;
}

// A preview document (ImpactPreview::Json, or the server's answer).
void PrintPreview(const nlohmann::ordered_json& p, const std::string& title, bool json,
                  std::ostream& out) {
  if (json) {
    out << ops::Dump(p, 2) << "\n";
    return;
  }
  out << fmt::format(
      "{}: {} expected, {} succeeded, {} failed, {} unknown, {} missing, {} waived, "
      "{} in progress; {} effect(s) already committed (never sent again)\n",
      title, Integer(p, "expected"), Integer(p, "succeeded"), Integer(p, "failed"),
      Integer(p, "unknown"), Integer(p, "missing"), Integer(p, "waived"),
      Integer(p, "in_progress"), Integer(p, "effects_committed"));
  if (const int64_t alone = Integer(p, "succeeded_left_alone"); alone > 0) {
    out << fmt::format("{} succeeded run(s) left alone: rerunning a succeeded run needs --force\n",
                       alone);
  }
  const auto& would_queue = Field(p, "would_queue");
  out << fmt::format("would queue {} run(s):\n", would_queue.size());
  for (const auto& k : would_queue) out << "  " << (k.is_string() ? k.get<std::string>() : "") << "\n";
  out << "preview digest " << Text(p, "preview_digest") << "\n";
  out << (would_queue.empty() ? "nothing to queue: --yes would change nothing\n"
                              : "nothing done: run again with --yes to queue them\n");
}

// Prints a refusal of a remote call as `command`; its exit code.
int Refused(const std::string& command, const Status& s, std::ostream& err) {
  err << "cronledger " << command << ": " << s.message() << "\n";
  return ExitCodeFor(s);
}

struct ImpactCommand {
  std::string name;   // backfill, rerun
  std::string title;  // of the preview
  std::string config_path;
  std::string job;
  ops::ImpactRequest request;
  std::optional<std::string> reason;
  std::optional<std::string> by;
  bool yes = false;
  std::optional<std::string> preview_digest;
  bool json = false;
  std::string server;
  // The request as the API's body takes it (job, dates, partitions, ...).
  nlohmann::ordered_json body;
};

// What backfill and rerun take alike.
template <typename Args>
ImpactCommand CommonImpact(std::string name, std::string title, const Args& args) {
  ImpactCommand c;
  c.name = std::move(name);
  c.title = std::move(title);
  c.config_path = args.config_path;
  c.job = args.job;
  c.request.partitions = args.partitions;
  c.request.include_waived = args.include_waived;
  c.reason = args.reason;
  c.by = args.by;
  c.yes = args.yes;
  c.preview_digest = args.preview_digest;
  c.json = args.json;
  c.server = args.server;
  c.body["job"] = args.job;
  return c;
}

// What a done backfill or rerun answers: {"event_id", "queued", "run_keys"}.
void PrintImpactDone(const nlohmann::ordered_json& done, const ImpactCommand& c,
                     std::ostream& out) {
  if (c.json) {
    out << ops::Dump(done, 2) << "\n";
  } else {
    out << fmt::format("queued {} run(s) of {} (event {})\n", Field(done, "queued").size(),
                       c.job, Text(done, "event_id"));
  }
}

// As RunImpactCommand, through the server's POST /v1/backfill or /v1/rerun.
int RunRemoteImpact(const ImpactCommand& c, std::ostream& out, std::ostream& err) {
  std::unique_ptr<RemoteLedger> remote;
  if (int rc = RemoteLedger::Connect(c.name, c.server, c.config_path, &remote, err);
      rc != kExitOk) {
    return rc;
  }
  const std::string path = "/v1/" + c.name;
  nlohmann::ordered_json body = c.body;
  if (!c.request.partitions.empty()) body["partitions"] = c.request.partitions;
  body["include_waived"] = c.request.include_waived;
  body["reason"] = *c.reason;
  body["by"] = c.by.value_or(DefaultActor());
  // The preview first: what is shown without --yes; with it, the digest
  // confirmed when none was given (locally, --yes alone acts on the ledger
  // as it is found, which this mirrors: the server only acts on a digest).
  // A job the server does not have is a usage error, as locally.
  auto preview = remote->Post(path, body, StatusCode::kInvalidArgument);
  if (!preview.ok()) return Refused(c.name, preview.status(), err);
  if (!c.yes) {
    PrintPreview(*preview, c.title, c.json, out);
    return kExitOk;
  }
  body["yes"] = true;
  body["preview_digest"] = c.preview_digest.value_or(Text(*preview, "preview_digest"));
  nlohmann::ordered_json refusal;
  auto done = remote->Post(path, body, StatusCode::kInvalidArgument, &refusal);
  if (!done.ok()) {
    const std::string code = Text(refusal, "error");
    if (code == "stale_preview") {
      err << "cronledger " << c.name << ": the ledger changed since the preview"
          << (c.preview_digest ? " " + *c.preview_digest : std::string())
          << "; nothing done. The new preview:\n";
      PrintPreview(Field(refusal, "preview"), c.title, c.json, out);
      return kExitFound;
    }
    if (code == "nothing_to_do") {
      err << "cronledger " << c.name << ": nothing to queue"
          << (Integer(*preview, "succeeded_left_alone") > 0
                  ? " (rerunning a succeeded run needs --force)"
                  : "")
          << "\n";
      return kExitFound;
    }
    return Refused(c.name, done.status(), err);
  }
  PrintImpactDone(*done, c, out);
  return kExitOk;
}

// Impact first: prints the preview, or with --yes acts on it (docs/gaps.md).
int RunImpactCommand(const ImpactCommand& c, Clock& clock, std::ostream& out,
                     std::ostream& err) {
  if (!c.server.empty()) return RunRemoteImpact(c, out, err);
  JobCommand ctx;
  if (int rc = OpenJobCommand(c.name, c.config_path, c.job, &ctx, err); rc != kExitOk) return rc;
  const store::Instant now = store::ToInstant(clock.Now());
  if (!c.yes) {
    auto preview = ops::PreviewImpact(*ctx.store, *ctx.job, c.request, now);
    if (!preview.ok()) {
      err << "cronledger " << c.name << ": " << preview.status().message() << "\n";
      return ExitCodeFor(preview.status());
    }
    PrintPreview(preview->Json(), c.title, c.json, out);
    return kExitOk;
  }
  auto outcome = ops::ApplyImpact(*ctx.store, *ctx.job, c.request, c.preview_digest,
                                  c.by.value_or(DefaultActor()), *c.reason, now);
  if (!outcome.ok()) {
    err << "cronledger " << c.name << ": " << outcome.status().message() << "\n";
    return ExitCodeFor(outcome.status());
  }
  switch (outcome->kind) {
    case ops::ImpactOutcome::Kind::kStale:
      err << "cronledger " << c.name << ": the ledger changed since the preview"
          << (c.preview_digest ? " " + *c.preview_digest : std::string())
          << "; nothing done. The new preview:\n";
      PrintPreview(outcome->preview.Json(), c.title, c.json, out);
      return kExitFound;
    case ops::ImpactOutcome::Kind::kNothingToDo:
      err << "cronledger " << c.name << ": nothing to queue"
          << (outcome->preview.succeeded_left_alone > 0
                  ? " (rerunning a succeeded run needs --force)"
                  : "")
          << "\n";
      return kExitFound;
    case ops::ImpactOutcome::Kind::kDone:
      break;
  }
  const auto& r = outcome->result;
  PrintImpactDone({{"event_id", r.event_id},
                   {"queued", r.queued},
                   {"run_keys", outcome->preview.would_queue}},
                  c, out);
  return kExitOk;
}

}  // namespace

int RunBackfill(const BackfillArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger backfill: " << message << "\n";
    return kExitUsage;
  };
  const auto from = ParseBusinessDate(args.from);
  const auto to = ParseBusinessDate(args.to);
  if (!from) return usage(NotADate("--from", args.from));
  if (!to) return usage(NotADate("--to", args.to));
  if (std::chrono::sys_days(*from) > std::chrono::sys_days(*to)) {
    return usage("--from " + args.from + " is after --to " + args.to);
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  ImpactCommand c = CommonImpact(
      "backfill", "backfill of " + args.job + " " + args.from + ".." + args.to, args);
  c.request.action = ops::ImpactAction::kBackfill;
  c.request.from = *from;
  c.request.to = *to;
  c.body["from"] = args.from;
  c.body["to"] = args.to;
  return RunImpactCommand(c, clock, out, err);
}

int RunRerun(const RerunArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger rerun: " << message << "\n";
    return kExitUsage;
  };
  const auto date = ParseBusinessDate(args.date);
  if (!date) return usage(NotADate("--date", args.date));
  const auto only = ops::ParseRerunScope(args.only);
  if (!only) {
    return usage("--only \"" + args.only + "\" is not one of failed, missing, unknown, all");
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  ImpactCommand c = CommonImpact("rerun",
                                 "rerun of " + args.job + " " + args.date + " (" + args.only +
                                     (args.force ? ", forced" : "") + ")",
                                 args);
  c.request.action = ops::ImpactAction::kRerun;
  c.request.from = c.request.to = *date;
  c.request.only = *only;
  c.request.force = args.force;
  c.body["date"] = args.date;
  c.body["only"] = args.only;
  c.body["force"] = args.force;
  return RunImpactCommand(c, clock, out, err);
}

int RunApprove(const ApproveArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger approve: " << message << "\n";
    return kExitUsage;
  };
  if (args.run && (args.from || args.to)) return usage("give --run or --from/--to, not both");
  if (args.from && !ParseBusinessDate(*args.from)) {
    return usage(NotADate("--from", *args.from));
  }
  if (args.to && !ParseBusinessDate(*args.to)) {
    return usage(NotADate("--to", *args.to));
  }
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  std::size_t approved_count = 0;
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("approve", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    nlohmann::ordered_json body;
    body["job"] = args.job;
    if (args.from) body["from"] = *args.from;
    if (args.to) body["to"] = *args.to;
    if (args.run) body["run"] = *args.run;
    body["reason"] = *args.reason;
    body["by"] = actor;
    // 409 nothing_to_do: the server says what was not awaiting approval.
    auto answer = remote->Post("/v1/approve", body);
    if (!answer.ok()) return Refused("approve", answer.status(), err);
    approved_count = Field(*answer, "approved").size();
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport("approve", args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport("approve", config, &store, err, StoreAccess::kExisting);
        rc != kExitOk) {
      return rc;
    }
    store::ApproveParams p;
    p.job = args.job;
    p.run_id = args.run;
    p.from = args.from;
    p.to = args.to;
    p.actor = actor;
    p.reason = *args.reason;
    p.now = store::ToInstant(clock.Now());
    auto approved = store->RunApprove(p);
    if (!approved.ok()) {
      err << "cronledger approve: " << approved.status().message() << "\n";
      return ExitCodeFor(approved.status());
    }
    if (approved->empty()) {
      err << "cronledger approve: no run of " << args.job << " is awaiting approval"
          << (args.from || args.to ? " in that range" : "") << "\n";
      return kExitFound;
    }
    approved_count = approved->size();
  }
  out << fmt::format("approved {} run(s) of {}\n", approved_count, args.job);
  return kExitOk;
}

int RunCancel(const CancelArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger cancel: " << message << "\n";
    return kExitUsage;
  };
  if (args.run_id <= 0) return usage(fmt::format("RUN_ID {}: run ids are positive", args.run_id));
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  Status s = Status::Ok();
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("cancel", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    s = remote
            ->Post(fmt::format("/v1/runs/{}/cancel", args.run_id),
                   {{"reason", *args.reason}, {"by", actor}})
            .status();
  } else {
    config::Config config;
    if (int rc = LoadConfigOrReport("cancel", args.config_path, &config, err); rc != kExitOk) {
      return rc;
    }
    std::unique_ptr<store::Store> store;
    if (int rc = OpenStoreOrReport("cancel", config, &store, err, StoreAccess::kExisting);
        rc != kExitOk) {
      return rc;
    }
    s = store->RunCancel({args.run_id, actor, *args.reason, store::ToInstant(clock.Now())});
  }
  if (!s.ok()) {
    err << "cronledger cancel: " << s.message() << "\n";
    return ExitCodeFor(s);
  }
  out << fmt::format("run {} cancelled\n", args.run_id);
  return kExitOk;
}

int RunTrigger(const TriggerArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  const auto usage = [&](const std::string& message) {
    err << "cronledger trigger: " << message << "\n";
    return kExitUsage;
  };
  if (Blank(args.reason)) {
    return usage("--reason TEXT is required: say why, it is recorded in the ledger");
  }
  const std::string actor = args.by.value_or(DefaultActor());
  if (!args.server.empty()) {
    std::unique_ptr<RemoteLedger> remote;
    if (int rc = RemoteLedger::Connect("trigger", args.server, args.config_path, &remote, err);
        rc != kExitOk) {
      return rc;
    }
    nlohmann::ordered_json body;
    body["job"] = args.job;
    if (!args.partitions.empty()) body["partitions"] = args.partitions;
    body["reason"] = *args.reason;
    body["by"] = actor;
    // 409 nothing_to_do ("nothing due yet") or conflict (the period exists:
    // the server lists its runs). A job the server does not have is a
    // usage error, as locally.
    auto answer = remote->Post("/v1/trigger", body, StatusCode::kInvalidArgument);
    if (!answer.ok()) return Refused("trigger", answer.status(), err);
    out << fmt::format("queued {} run(s) of {} for {}\n", Field(*answer, "queued").size(),
                       args.job, Text(*answer, "period"));
    return kExitOk;
  }
  JobCommand ctx;
  if (int rc = OpenJobCommand("trigger", args.config_path, args.job, &ctx, err); rc != kExitOk) {
    return rc;
  }
  const config::JobConfig* job = ctx.job;
  auto outcome = ops::Trigger(*ctx.store, *job, args.partitions, actor, *args.reason, clock.Now());
  if (!outcome.ok()) {
    err << "cronledger trigger: " << outcome.status().message() << "\n";
    return outcome.status().code() == StatusCode::kFailedPrecondition
               ? kExitFound
               : ExitCodeFor(outcome.status());
  }
  if (outcome->kind == ops::TriggerOutcome::Kind::kNothingDue) {
    err << "cronledger trigger: "
        << ops::NothingDueMessage(job->name, !args.partitions.empty(), *outcome) << "\n";
    return kExitFound;
  }
  if (outcome->kind == ops::TriggerOutcome::Kind::kExists) {
    err << "cronledger trigger: the latest due period exists already, nothing done; trigger "
           "only queues keys that have no run yet:\n";
    for (const auto& e : outcome->existing) err << "  " << e << "\n";
    return kExitFound;
  }
  out << fmt::format("queued {} run(s) of {} for {}\n", outcome->result.queued.size(), job->name,
                     outcome->period);
  return kExitOk;
}

}  // namespace cronledger::cli
