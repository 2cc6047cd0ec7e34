#include "api/worker_api.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "api/attempt_api.h"
#include "ops/json_shapes.h"
#include "ops/ledger_json.h"
#include "engine/attempt.h"
#include "engine/dispatcher.h"
#include "engine/step_runner.h"
#include "exec/subprocess_executor.h"
#include "ledger/attempt_policy.h"
#include "ledger/names.h"

namespace cronledger::api {
namespace {

using ledger::EndClass;
using nlohmann::ordered_json;

// Attempt ends a worker's own write made (a failed step, a completion),
// as opposed to the reaper's or a fence's.
bool EndedByWorker(const store::AttemptRecord& a) {
  return a.ended_at.has_value() && !a.end_class.empty() && a.end_class != "lease_expired" &&
         a.end_class != "stale";
}

// The worker's id in the ledger: the attempt's node and the actor of what
// it writes.
std::string NodeOf(const std::optional<std::string>& worker, const ApiToken& token) {
  return "external:" + worker.value_or(token.name);
}

// Who writes, for a route after the claim: the body's `worker`, else the
// worker the claim that got `fencing_token` recorded (the lease's node
// while it holds the lease, else its attempt's, from `attempts`), else the
// token. A late writer is thus named as it claimed, not as its token.
std::string Actor(const std::optional<std::string>& worker, const ApiToken& token,
                  const Result<store::RunLease>& lease, int64_t fencing_token,
                  const std::vector<store::AttemptRecord>& attempts = {}) {
  if (worker) return NodeOf(worker, token);
  if (lease.ok() && lease->token == fencing_token) return lease->node;
  for (const auto& a : attempts) {
    if (a.token == fencing_token) return a.node;
  }
  return NodeOf(worker, token);
}

const std::vector<store::AttemptRecord>& NoAttempts() {
  static const std::vector<store::AttemptRecord> none;
  return none;
}

}  // namespace

WorkerApi::WorkerApi(const config::Config& config, store::Store& store, Clock& clock,
                     const TokenAuthenticator& tokens, const AttemptCredentials& credentials,
                     Options options)
    : config_(config),
      store_(store),
      clock_(clock),
      tokens_(tokens),
      credentials_(credentials),
      options_(std::move(options)),
      rng_(options_.jitter_seed ? options_.jitter_seed : std::random_device{}()) {}

void WorkerApi::Stop() { stop_.request_stop(); }

int WorkerApi::LongPolls() const {
  std::lock_guard lock(mu_);
  return long_polls_;
}

double WorkerApi::JitterSample() const {
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
}

std::variant<WorkerApi::Caller, ApiResponse> WorkerApi::Authenticate(
    const ApiRequest& request) const {
  auto found = AuthenticateBearer(
      request, tokens_,
      "no token: send \"Authorization: Bearer TOKEN\" with a token of role worker or operate",
      &credentials_,
      "a per-attempt credential reaches only its run's effects and checkpoints; the worker "
      "routes need a token of role worker or operate");
  if (auto* refused = std::get_if<ApiResponse>(&found)) return std::move(*refused);
  return Caller{std::get<const ApiToken*>(found)};
}

std::optional<ApiResponse> WorkerApi::RoleRefusal(const Caller& caller, const ApiRequest& request) {
  const TokenRole role = caller.token->role;
  if (role == TokenRole::kWorker || role == TokenRole::kOperate) return std::nullopt;
  return Error(403, "forbidden",
               fmt::format("token \"{}\" has role {}; {} {} needs role worker or operate",
                           caller.token->name, RoleName(role), request.method, request.path));
}

HeadVerdict WorkerApi::JudgeHead(const ApiRequest& head) const {
  if (!MatchWorkerPath(head.path)) return {};
  auto who = Authenticate(head);
  if (auto* refused = std::get_if<ApiResponse>(&who)) return {true, std::move(*refused)};
  return {true, RoleRefusal(std::get<Caller>(who), head), kMaxWorkerBodyBytes};
}

std::optional<ApiResponse> WorkerApi::Handle(const ApiRequest& request) const {
  const auto matched = MatchWorkerPath(request.path);
  if (!matched) return std::nullopt;
  const WorkerRoute route = matched->route;

  auto who = Authenticate(request);
  if (auto* refused = std::get_if<ApiResponse>(&who)) return *refused;
  if (request.method != "POST") {
    return Error(405, "method_not_allowed",
                 fmt::format("{} does not accept {}; send POST with a JSON body", request.path,
                             request.method));
  }
  const Caller& caller = std::get<Caller>(who);
  if (auto refused = RoleRefusal(caller, request)) return *refused;
  if (request.body.size() > kMaxWorkerBodyBytes) {
    return Error(413, "too_large",
                 fmt::format("the body is {} bytes; {} accepts at most {}", request.body.size(),
                             request.path, kMaxWorkerBodyBytes));
  }
  if (route == WorkerRoute::kClaims) return Claim(request, caller);
  const auto run_id = PositiveInteger(matched->run_id);
  if (!run_id) {
    return Error(400, "invalid_request",
                 fmt::format("the run id in {} must be a positive integer", request.path));
  }
  switch (route) {
    case WorkerRoute::kHeartbeat: return Heartbeat(request, caller, *run_id);
    case WorkerRoute::kStep: return Step(request, caller, *run_id, matched->step);
    case WorkerRoute::kComplete: return Complete(request, caller, *run_id);
    case WorkerRoute::kClaims: break;
  }
  return std::nullopt;
}

std::variant<const config::JobConfig*, ApiResponse> WorkerApi::ExternalJobOf(
    int64_t run_id, store::RunRecord* run) const {
  auto found = store_.RunGet(run_id);
  if (!found.ok()) return ErrorFor(found.status());
  *run = std::move(*found);
  const config::JobConfig* job = config_.FindJob(run->job);
  if (job == nullptr || job->executor != config::Executor::kExternal) {
    return Error(403, "forbidden",
                 fmt::format("run {} belongs to job \"{}\", which is not an executor = "
                             "\"external\" job here: workers may not report for it",
                             run_id, run->job));
  }
  return job;
}

std::optional<ApiResponse> WorkerApi::RefuseForeignClaim(
    const Caller& caller, const std::optional<std::string>& worker, const store::RunRecord& run,
    const Result<store::RunLease>& lease, int64_t token, std::string_view write,
    std::optional<std::vector<store::AttemptRecord>>& attempts) const {
  std::string claimant;
  if (lease.ok() && lease->token == token) {
    claimant = lease->claimant;
  } else {
    if (!attempts) {
      auto listed = store_.AttemptList(run.id);
      if (!listed.ok()) return ErrorFor(listed.status());
      attempts = std::move(*listed);
    }
    for (const auto& a : *attempts) {
      if (a.token == token) claimant = a.claimant;
    }
  }
  // Empty: a node's own executor claimed it, or a claim made before claims
  // recorded their token.
  if (claimant.empty() || claimant == caller.token->name) return std::nullopt;
  store::EventRecord e;
  e.at = store::ToInstant(clock_.Now());
  e.type = ledger::event::kStaleWriteRejected;
  e.job = run.job;
  e.run_id = run.id;
  e.run_key = run.RunKey();
  // Named by the token that called: a body's `worker` is only what it
  // says it is.
  e.actor = NodeOf(std::nullopt, *caller.token);
  e.reason = fmt::format(
      "{} with fencing token {} by API token \"{}\": the attempt was claimed "
      "by token \"{}\"",
      write, token, caller.token->name, claimant);
  nlohmann::json details = {{"write", write},
                            {"token", token},
                            {"current_token", lease.ok() ? nlohmann::json(lease->token) : nullptr},
                            {"caller_token", caller.token->name},
                            {"claimant_token", claimant}};
  if (worker) details["worker"] = *worker;
  e.details = details.dump();
  if (Status s = store_.EventAppend(e); !s.ok()) return ErrorFor(s);
  spdlog::warn("workers: run {} ({}): {} refused: token \"{}\" wrote to a claim of token \"{}\"",
               run.id, run.RunKey(), write, caller.token->name, claimant);
  return Error(403, "forbidden",
               fmt::format("run {}: fencing token {} belongs to another token's claim; only the "
                           "token that claimed an attempt may write to it",
                           run.id, token));
}

ApiResponse WorkerApi::Claim(const ApiRequest& request, const Caller& caller) const {
  const auto parsed = ParseClaimRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [jobs, wait, worker] = std::get<ClaimRequest>(parsed);
  std::vector<store::ClaimRule> rules;
  for (const auto& name : jobs) {
    const config::JobConfig* job = config_.FindJob(name);
    if (job == nullptr) {
      return Error(404, "not_found",
                   fmt::format("no job named \"{}\" is configured (field \"jobs\")", name));
    }
    if (job->executor != config::Executor::kExternal) {
      return Error(403, "forbidden",
                   fmt::format("job \"{}\" has executor = \"{}\": only executor = \"external\" "
                               "jobs are claimed through /v1/claims (field \"jobs\")",
                               name,
                               job->executor == config::Executor::kSubprocess ? "subprocess"
                                                                              : "inprocess"));
    }
    if (std::none_of(rules.begin(), rules.end(),
                     [&](const store::ClaimRule& r) { return r.job == name; })) {
      rules.push_back(engine::ClaimRuleFor(*job));
    }
  }
  if (stop_.stop_requested()) {
    return Error(503, "unavailable", "serve is shutting down and claims nothing more");
  }
  const std::string node = NodeOf(worker, *caller.token);
  // The wait is an interval: a wall-clock step neither ends it early nor
  // holds the caller an hour.
  const auto deadline = clock_.SteadyNow() + std::chrono::seconds(wait.value_or(0));
  // A waiting claim holds one of serve's HTTP threads: at most
  // max_long_polls wait at once, so that the others stay free for steps'
  // effects, heartbeats and operators. A claim beyond that looks once.
  bool waiting = false;
  if (wait.value_or(0) > 0) {
    std::lock_guard lock(mu_);
    if (long_polls_ < options_.max_long_polls) {
      ++long_polls_;
      waiting = true;
    }
  }
  struct Slot {
    const WorkerApi* api;
    bool held;
    ~Slot() {
      if (!held) return;
      std::lock_guard lock(api->mu_);
      --api->long_polls_;
    }
  } slot{this, waiting};
  for (;;) {
    store::ClaimParams p;
    p.now = store::ToInstant(clock_.Now());
    p.node = node;
    p.claimant = caller.token->name;
    p.limit = 1;
    // Nothing of a paused job is claimed, not even a run released before
    // the pause: RunClaim leaves paused jobs out.
    p.rules = rules;
    auto claimed = store_.RunClaim(p);
    if (!claimed.ok()) return ErrorFor(claimed.status());
    if (!claimed->empty()) {
      const store::ClaimedRun& c = claimed->front();
      return ClaimAnswer(c, *config_.FindJob(c.run.job));
    }
    const auto left = deadline - clock_.SteadyNow();
    if (!waiting || stop_.stop_requested() || left <= Clock::SteadyPoint::duration::zero()) break;
    clock_.SleepFor(std::min<Clock::Duration>(options_.poll, left), stop_.get_token());
  }
  ApiResponse r;
  r.body = {{"run", nullptr}};
  if (wait.value_or(0) > 0 && !waiting) r.body["retry_after"] = options_.retry_after;
  return r;
}

ApiResponse WorkerApi::ClaimAnswer(const store::ClaimedRun& claim,
                                   const config::JobConfig& job) const {
  const engine::Attempt attempt = engine::Attempt::FromClaim(job, claim, /*node=*/"");
  const RunContext ctx = attempt.Context(attempt.Running());
  auto attempt_env = AttemptEnvironment(store_, credentials_, options_.url, ctx);
  if (!attempt_env.ok()) {
    // Claimed, but the worker cannot be told: its lease expires and the
    // reaper decides, as for a worker that died on receiving it.
    spdlog::error("workers: run {} ({}) claimed but not handed out: {}", claim.run.id,
                  claim.run.RunKey(), attempt_env.status().ToString());
    return ErrorFor(attempt_env.status());
  }
  const auto ttl = std::chrono::duration_cast<std::chrono::seconds>(job.EffectiveLeaseTtl());
  ordered_json run = ops::RunJson(claim.run, claim.steps);
  run["attempt"] = claim.attempt;
  run["fencing_token"] = claim.token;
  run["lease_expires_at"] = ops::FormatInstant(claim.lease_expires_at);
  run["lease_ttl_seconds"] = ttl.count();
  run["heartbeat_seconds"] = std::max<int64_t>(1, ttl.count() / 3);
  run["step"] = ctx.step.empty() ? ordered_json(nullptr) : ordered_json(ctx.step);
  ordered_json env = ordered_json::object();
  for (const auto& [name, value] : job.env) env[name] = value;
  for (const auto& [name, value] : exec::RunKeyEnvironment(ctx)) env[name] = value;
  for (const auto& [name, value] : *attempt_env) {
    env[name] = value;
    if (name == "CRONLEDGER_API") run["api"] = value;
    if (name == "CRONLEDGER_TOKEN") run["credential"] = value;
    if (name == "CRONLEDGER_CHECKPOINT") run["checkpoint"] = value;
    if (name == "CRONLEDGER_CHECKPOINT_PARTITION") run["checkpoint_partition"] = value;
  }
  run["env"] = std::move(env);
  ApiResponse r;
  r.body = {{"run", std::move(run)}};
  return r;
}

ApiResponse WorkerApi::Heartbeat(const ApiRequest& request, const Caller& caller,
                                 int64_t run_id) const {
  const auto parsed = ParseHeartbeatRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [token, worker] = std::get<HeartbeatRequest>(parsed);
  store::RunRecord run;
  auto job = ExternalJobOf(run_id, &run);
  if (auto* refused = std::get_if<ApiResponse>(&job)) return *refused;
  const auto ttl = std::chrono::milliseconds(std::get<const config::JobConfig*>(job)
                                                 ->EffectiveLeaseTtl());
  const store::Instant now = store::ToInstant(clock_.Now());
  // The actor matters only when the heartbeat is stale (its event).
  auto lease = store_.RunGetLease(run_id);
  if (!lease.ok() && lease.status().code() != StatusCode::kFailedPrecondition) {
    return ErrorFor(lease.status());
  }
  std::optional<std::vector<store::AttemptRecord>> attempts;
  if (auto refused = RefuseForeignClaim(caller, worker, run, lease, token, "heartbeat", attempts)) {
    return *refused;
  }
  const Status s = store_.RunHeartbeat(
      {run_id, token, now, ttl,
       Actor(worker, *caller.token, lease, token, attempts ? *attempts : NoAttempts())});
  if (!s.ok()) return ErrorFor(s);
  ApiResponse r;
  r.body = {{"run_id", run_id},
            {"fencing_token", token},
            {"lease_expires_at", ops::FormatInstant(now + ttl)},
            {"lease_ttl_seconds", std::chrono::duration_cast<std::chrono::seconds>(ttl).count()}};
  return r;
}

namespace {

// The answer after a write that may have ended the attempt: the run as it
// is now and how the attempt ended (the store may have made it in_doubt).
ApiResponse AttemptAnswer(store::Store& store, int64_t run_id, int64_t token,
                          ordered_json head) {
  auto run = store.RunGet(run_id);
  if (!run.ok()) return ErrorFor(run.status());
  auto steps = store.StepList(run_id);
  if (!steps.ok()) return ErrorFor(steps.status());
  auto attempts = store.AttemptList(run_id);
  if (!attempts.ok()) return ErrorFor(attempts.status());
  const auto it = std::find_if(attempts->begin(), attempts->end(),
                               [&](const store::AttemptRecord& a) { return a.token == token; });
  ApiResponse r;
  r.body = std::move(head);
  r.body["run_id"] = run_id;
  r.body["fencing_token"] = token;
  r.body["attempt_ended"] = it != attempts->end() && it->ended_at.has_value();
  r.body["end_class"] =
      it != attempts->end() ? ops::StringOrNull(it->end_class) : ordered_json(nullptr);
  r.body["run"] = ops::RunJson(*run, *steps);
  return r;
}

// The answer to a step reported succeeded: the attempt goes on at `next`
// (none after the last step: complete it).
ApiResponse StepSucceededAnswer(int64_t run_id, const std::string& step,
                                const config::JobConfig& job, std::optional<std::size_t> next) {
  ApiResponse r;
  r.body = {{"run_id", run_id},
            {"step", step},
            {"step_state", "succeeded"},
            {"end_class", "succeeded"},
            {"next_step", next ? ordered_json(job.steps[*next].name) : ordered_json(nullptr)},
            {"attempt_ended", false}};
  return r;
}

}  // namespace

ApiResponse WorkerApi::Step(const ApiRequest& request, const Caller& caller, int64_t run_id,
                            const std::string& step_name) const {
  const auto parsed = ParseStepReport(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [token, exit_status, outcome, output_tail, worker] = std::get<StepReport>(parsed);
  store::RunRecord run;
  auto found = ExternalJobOf(run_id, &run);
  if (auto* refused = std::get_if<ApiResponse>(&found)) return *refused;
  const config::JobConfig& job = *std::get<const config::JobConfig*>(found);
  const auto step = std::find_if(job.steps.begin(), job.steps.end(),
                                 [&](const config::StepConfig& s) { return s.name == step_name; });
  if (step == job.steps.end()) {
    return Error(404, "not_found",
                 fmt::format("job \"{}\" has no step \"{}\"", job.name, step_name));
  }
  const auto now = [&] { return store::ToInstant(clock_.Now()); };
  auto lease = store_.RunGetLease(run_id);
  if (!lease.ok() && lease.status().code() != StatusCode::kFailedPrecondition) {
    return ErrorFor(lease.status());
  }
  std::optional<std::vector<store::AttemptRecord>> attempts;
  if (auto refused =
          RefuseForeignClaim(caller, worker, run, lease, token, "step " + step_name, attempts)) {
    return *refused;
  }
  const std::string node = Actor(worker, *caller.token, lease, token);
  if (!lease.ok() || lease->token != token) {
    // Asked again after this very report ended the attempt (its answer was
    // lost): the same answer, nothing written, as `complete` answers.
    for (const auto& a : *attempts) {
      if (a.token == token && EndedByWorker(a) && a.step == step_name &&
          a.end_class != ledger::Name(EndClass::kSucceeded)) {
        return AttemptAnswer(store_, run_id, token,
                             {{"step", step_name}, {"step_state", "failed"}});
      }
    }
    // Not the run's current token: the store's fence refuses the write and
    // records it (stale_write_rejected).
    const Status s =
        store_.StepUpdate({run_id, token, step_name, ledger::StepStatus::kFailed, now(),
                           Actor(worker, *caller.token, lease, token, *attempts)});
    if (!s.ok()) return ErrorFor(s);
    return Error(409, "stale_lease",
                 fmt::format("run {}: fencing token {} is not the current one", run_id, token));
  }
  auto steps = store_.StepList(run_id);
  if (!steps.ok()) return ErrorFor(steps.status());
  engine::Attempt attempt = engine::Attempt::FromLease(job, run, *lease, *steps, node);
  const std::size_t index = static_cast<std::size_t>(step - job.steps.begin());
  const std::optional<std::size_t> current = attempt.Current();
  exec::StepOutcome o;
  o.exit_status = exit_status.value_or(0);
  engine::EndOfStep end;
  end.end = exit_status ? engine::ClassifyStep(o, job) : *outcome;
  if (exit_status) end.exit_status = static_cast<int>(*exit_status);
  end.output_tail = output_tail.value_or("");
  if (current != index) {
    if (end.end == EndClass::kSucceeded &&
        attempt.Status(index) == ledger::StepStatus::kSucceeded) {
      // Its success reported again (the answer was lost): the same answer.
      return StepSucceededAnswer(run_id, step_name, job, current);
    }
    return Error(409, "conflict",
                 !current ? fmt::format("run {}: every step has succeeded; complete the attempt "
                                        "with POST /v1/runs/{}/complete",
                                        run_id, run_id)
                          : fmt::format("run {}: step \"{}\" is not the step to report; the "
                                        "attempt is at step \"{}\"",
                                        run_id, step_name, job.steps[*current].name));
  }
  if (end.end == EndClass::kSucceeded) {
    const engine::Attempt::AfterStep after =
        attempt.StepEnded(index, end, now(), [this] { return JitterSample(); });
    if (Status s = store_.StepUpdate(after.result); !s.ok()) return ErrorFor(s);
    // The next step starts at once, as the dispatcher starts it.
    if (after.next) {
      if (Status s = store_.StepUpdate(
              attempt.StepWrite(*after.next, ledger::StepStatus::kRunning, now()));
          !s.ok()) {
        return ErrorFor(s);
      }
    }
    return StepSucceededAnswer(run_id, step_name, job, after.next);
  }
  // A step that did not succeed ends the attempt, in one transaction with
  // its result: what the dispatcher writes for a subprocess step.
  // The retry's backoff counts from the ledger's now (PostgreSQL: the
  // database's clock, whatever this node's says).
  auto ledger_now = store_.LedgerNow(now());
  if (!ledger_now.ok()) return ErrorFor(ledger_now.status());
  engine::Attempt::AfterStep after =
      attempt.StepEnded(index, end, *ledger_now, [this] { return JitterSample(); });
  store::WorkerWrite write;
  write.step = std::move(after.result);
  write.finish = std::move(after.finish);
  auto results = store_.RunApplyWrites({write});
  if (!results.ok()) return ErrorFor(results.status());
  if (!results->at(0).ok()) return ErrorFor(results->at(0));
  spdlog::info("run {} {}: attempt {} (worker {}) {} -> {}", run_id, run.RunKey(), lease->attempt,
               node, ledger::Name(end.end), ledger::Name(write.finish->decision.state));
  return AttemptAnswer(store_, run_id, token,
                       {{"step", step_name}, {"step_state", "failed"}});
}

ApiResponse WorkerApi::Complete(const ApiRequest& request, const Caller& caller,
                                int64_t run_id) const {
  const auto parsed = ParseCompleteRequest(request);
  if (auto* refused = std::get_if<ApiResponse>(&parsed)) return *refused;
  const auto& [token, output_tail, worker] = std::get<CompleteRequest>(parsed);
  store::RunRecord run;
  auto found = ExternalJobOf(run_id, &run);
  if (auto* refused = std::get_if<ApiResponse>(&found)) return *refused;
  const config::JobConfig& job = *std::get<const config::JobConfig*>(found);
  auto lease = store_.RunGetLease(run_id);
  if (!lease.ok() && lease.status().code() != StatusCode::kFailedPrecondition) {
    return ErrorFor(lease.status());
  }
  std::optional<std::vector<store::AttemptRecord>> attempts;
  if (auto refused = RefuseForeignClaim(caller, worker, run, lease, token, "finish", attempts)) {
    return *refused;
  }
  store::FinishParams finish;
  finish.run_id = run_id;
  finish.token = token;
  finish.now = store::ToInstant(clock_.Now());
  finish.node = Actor(worker, *caller.token, lease, token);
  finish.end_class = EndClass::kSucceeded;
  finish.output_tail = output_tail.value_or("");
  if (!lease.ok() || lease->token != token) {
    // Asked again after the attempt ended by the worker's own write (a
    // failed step, an earlier completion whose answer was lost): the same
    // answer, nothing written.
    for (const auto& a : *attempts) {
      if (a.token == token && EndedByWorker(a)) {
        return AttemptAnswer(store_, run_id, token, ordered_json::object());
      }
    }
    // Otherwise the store's fence refuses it and records it.
    finish.node = Actor(worker, *caller.token, lease, token, *attempts);
    auto results = store_.RunFinishAttempts({finish});
    if (!results.ok()) return ErrorFor(results.status());
    if (!results->at(0).ok()) return ErrorFor(results->at(0));
    return Error(409, "stale_lease",
                 fmt::format("run {}: fencing token {} is not the current one", run_id, token));
  }
  auto steps = store_.StepList(run_id);
  if (!steps.ok()) return ErrorFor(steps.status());
  const engine::Attempt attempt = engine::Attempt::FromLease(job, run, *lease, *steps, finish.node);
  if (const std::optional<std::size_t> current = attempt.Current()) {
    const std::string& name = job.steps[*current].name;
    return Error(409, "conflict",
                 fmt::format("run {}: step \"{}\" has no result yet; report it with POST "
                             "/v1/runs/{}/steps/{} before completing",
                             run_id, name, run_id, name));
  }
  engine::EndOfStep end;
  end.output_tail = finish.output_tail;
  finish = attempt.End(job.steps.empty() ? std::nullopt : std::optional(job.steps.size() - 1), end,
                       *finish.now, JitterSample());
  auto results = store_.RunFinishAttempts({finish});
  if (!results.ok()) return ErrorFor(results.status());
  if (!results->at(0).ok()) return ErrorFor(results->at(0));
  ApiResponse answer = AttemptAnswer(store_, run_id, token, ordered_json::object());
  if (answer.status == 200) {
    spdlog::info("run {} {}: attempt {} (worker {}) completed: {} -> {}", run_id, run.RunKey(),
                 lease->attempt, finish.node, answer.body["end_class"].dump(),
                 answer.body["run"]["state"].dump());
  }
  return answer;
}

}  // namespace cronledger::api
