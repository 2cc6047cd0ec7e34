#include "cli/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include "api/attempt_api.h"
#include "api/auth.h"
#include "api/credential.h"
#include "api/dashboard.h"
#include "api/dashboard_session.h"
#include "api/http_server.h"
#include "api/metrics.h"
#include "api/operator_api.h"
#include "api/worker_api.h"
#include "cli/context.h"
#include "common/logging.h"
#include "cli/exit_codes.h"
#include "cli/node_id_check.h"
#include "engine/alert_delivery.h"
#include "engine/alert_sender.h"
#include "engine/alerter.h"
#include "engine/heartbeat_pinger.h"
#include "engine/status_report.h"
#include "engine/dispatcher.h"
#include "engine/node_metrics.h"
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/serve_loop.h"
#include "engine/step_runner.h"
#include "engine/store_health.h"
#include "store/open_store.h"

namespace cronledger::cli {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// Logs, per job, where it stands: what an operator restarting after an
// outage reads first.
void LogStanding(const config::Config& config, store::Store& store, Clock::TimePoint now) {
  auto report = engine::BuildStatus(config, store, now);
  if (!report.ok()) {
    spdlog::warn("serve: could not read the ledger's state: {}", report.status().ToString());
    return;
  }
  for (const auto& j : report->jobs) {
    spdlog::info(
        "serve: job {} ({}): planned through {}, last succeeded business date {}, "
        "{} run(s) in flight, {} expired lease(s), {} unknown, lag {}s",
        j.name, j.state, j.planned_through.empty() ? "-" : j.planned_through,
        j.last_success_business_date.empty() ? "-" : j.last_success_business_date,
        j.in_flight, j.expired_leases, j.unknown_total, j.lag_seconds);
  }
}

// The operator API's tokens: the [[auth.token]] secrets from the
// environment. Writes nothing: it runs before anything may be refused.
int LoadApiTokens(const config::Config& config, std::vector<api::ApiToken>* tokens,
                  std::ostream& err) {
  if (config.auth.tokens.empty()) return kExitOk;
  auto secrets = config::ResolveTokenSecrets(config, [](const char* name) {
    return static_cast<const char*>(std::getenv(name));
  });
  if (auto* errors = std::get_if<config::ConfigErrors>(&secrets)) {
    for (const auto& p : errors->problems) err << "cronledger serve: " << p.ToString() << "\n";
    return kExitUsage;
  }
  for (const auto& s : std::get<std::vector<config::TokenSecret>>(secrets)) {
    tokens->push_back({s.token->name, s.token->role, s.secret});
  }
  return kExitOk;
}

// Without [[auth.token]]: the local operator token, created at the first
// start, once the store has opened (a serve that cannot start writes
// nothing).
int LoadLocalToken(const config::Config& config, std::vector<api::ApiToken>* tokens,
                   std::optional<api::LocalToken>* local, std::ostream& err) {
  if (!config.auth.tokens.empty()) return kExitOk;
  auto token = api::LoadOrCreateLocalToken(config.dir);
  if (!token.ok()) {
    err << "cronledger serve: " << token.status().message() << "\n";
    return kExitUsage;
  }
  tokens->push_back({"local", config::TokenRole::kOperate, token->secret});
  *local = std::move(*token);
  return kExitOk;
}

}  // namespace

int RunServe(const ServeArgs& args, Clock& clock, std::ostream& err) {
  if (Status s = ConfigureLogging(args.log_format); !s.ok()) {
    err << "cronledger serve: " << s.message() << "\n";
    return kExitUsage;
  }
  config::Config config;
  if (int rc = LoadConfigOrReport("serve", args.config_path, &config, err); rc != kExitOk) {
    return rc;
  }
  if (args.listen) {
    // The rule of server.listen in the file: loopback only without tokens.
    const std::string problem = config::ListenProblem(*args.listen, !config.auth.tokens.empty());
    if (!problem.empty()) {
      err << "cronledger serve: --listen: " << problem << "\n";
      return kExitUsage;
    }
    config.server.listen = *args.listen;
  }
  if (args.node_id) {
    if (std::string problem = config::NodeIdProblem(*args.node_id); !problem.empty()) {
      err << "cronledger serve: --node-id: " << problem << "\n";
      return kExitUsage;
    }
  }
  std::vector<api::ApiToken> tokens;
  if (int rc = LoadApiTokens(config, &tokens, err); rc != kExitOk) return rc;

  // Bound before anything else starts, so that a taken port fails fast and
  // port 0 ("any free port") is known for the node id and the steps.
  api::HttpServer http(static_cast<std::size_t>(config.server.max_workers) + 4);
  if (Status s = http.Bind(config.server.listen); !s.ok()) {
    err << "cronledger serve: " << s.message()
        << " (server.listen or --listen; port 0 takes any free port)\n";
    return kExitUsage;
  }
  std::string node_id = args.node_id.value_or(config.server.node_id);
  if (node_id.empty()) node_id = HostName() + ":" + std::to_string(http.port());

  // Signals are taken by a dedicated thread, never by whichever thread
  // happens to run: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::unique_ptr<store::Store> store;
  if (int rc = OpenStoreOrReport("serve", config, &store, err); rc != kExitOk) return rc;
  // The dispatcher's group commits get a connection of their own where
  // they can run beside its claims (PostgreSQL).
  std::unique_ptr<store::Store> write_store;
  if (store->WritesBesideClaims()) {
    if (int rc = OpenStoreOrReport("serve", config, &write_store, err); rc != kExitOk) return rc;
  }
  // The node table (status, the dashboard), and whether another process
  // still runs under this node id.
  engine::ServeLoopOptions loop_options;
  loop_options.node.node = node_id;
  loop_options.node.version = CRONLEDGER_VERSION;
  loop_options.node.listen = config.server.listen.substr(0, config.server.listen.rfind(':')) +
                             ":" + std::to_string(http.port());
  loop_options.node.started_at = store::ToInstant(clock.Now());
  loop_options.node.host = HostName();
  loop_options.node.pid = getpid();
  bool stopped_early = false;
  if (int rc = RefuseANodeIdInUse(*store, loop_options.node, clock, loop_options.node_beat_every,
                                  err, &stopped_early);
      rc != kExitOk) {
    return rc;
  }
  if (stopped_early) {
    spdlog::info("serve: stopped by a signal before it started (node {} not started)", node_id);
    return kExitOk;
  }
  std::optional<api::LocalToken> local_token;
  if (int rc = LoadLocalToken(config, &tokens, &local_token, err); rc != kExitOk) return rc;
  const api::TokenAuthenticator authenticator(std::move(tokens));

  spdlog::info("serve: node {} started with {} job(s), store {}", node_id, config.jobs.size(),
               store::RedactStoreUrl(config.server.store));
  LogStanding(config, *store, clock.Now());

  std::stop_source stop;
  std::atomic<bool> exiting{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (exiting) return;  // woken by our own shutdown
    spdlog::info("serve: {} received; stopping (a second signal exits at once)",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    stop.request_stop();
    sigwait(&signals, &sig);
    if (!exiting) _exit(130);
  });

  // What steps call: effects and checkpoints, with per-attempt credentials.
  const api::AttemptCredentials credentials;
  engine::Planner planner(config, *store, clock);
  engine::Reaper reaper(config, *store);
  HandlerRegistry no_handlers;  // the command has none; embedding apps register theirs
  engine::DefaultStepRunner runner(
      config, clock, &no_handlers, [&](const exec::StepContext& ctx) {
        return api::AttemptEnvironment(*store, credentials, http.url(), ctx);
      });
  // Every store call of the loop and the dispatcher reports here: an outage
  // is logged once and counted on /metrics.
  engine::StoreHealth store_health;
  engine::DispatcherOptions dispatch;
  dispatch.node = node_id;
  dispatch.health = &store_health;
  dispatch.max_workers = config.server.max_workers;
  dispatch.handlers = &no_handlers;
  dispatch.claim_ahead = config.server.claim_ahead;
  dispatch.write_store = write_store.get();
  if (store->NotifiesWork()) {
    // Releases, retries and requeues of every node NOTIFY this one (below):
    // the poll is only the safety net, and for runs whose retry backoff
    // ends, so it need not cost the database ten reads a second per node.
    dispatch.poll = std::chrono::seconds{1};
  }
  engine::Dispatcher dispatcher(config, *store, clock, runner, dispatch);
  // Steps' effect writes join the in-process handlers' group commits.
  api::AttemptApi attempt_api(*store, dispatcher.effect_writer(), clock, credentials,
                              {.node = node_id, .output_cap = config.server.output_cap});
  api::OperatorApi operator_api(config, *store, clock, authenticator, credentials);
  engine::NodeMetrics node_metrics;
  const api::MetricsEndpoint metrics(config, *store, clock, authenticator, [&] {
    return engine::Snapshot(node_metrics, &dispatcher, config.server.max_workers, &store_health);
  });
  // The dashboard's sessions live in this process (a restart logs out).
  api::SessionStore sessions(clock);
  operator_api.AcceptSessions(&sessions);
  const api::Dashboard dashboard(sessions, authenticator);
  http.ServeDashboard(&dashboard);
  http.SetPlannerPass([&] {
    std::optional<Clock::TimePoint> last;
    if (const int64_t ms = node_metrics.planner_last_pass_ms; ms >= 0) {
      last = Clock::TimePoint(std::chrono::milliseconds(ms));
    }
    // The pass is stamped on the ledger's clock: its age on it too.
    return std::make_pair(clock.Now() + std::chrono::milliseconds(node_metrics.ledger_offset_ms),
                          last);
  });
  // External workers claim over HTTP; half of the HTTP threads at most
  // wait in long-polls (docs/api.md, external workers).
  api::WorkerApi worker_api(config, *store, clock, authenticator, credentials,
                            {.url = http.url(),
                             .max_long_polls = std::max(1, (config.server.max_workers + 4) / 2)});
  http.ServeWorkers(worker_api);
  http.Serve(attempt_api, &operator_api, &metrics);
  spdlog::info("serve: API listening on {}", http.url());
  if (local_token) {
    // Never the token itself: logs are read by more people than the file.
    // The login link is single-use and expires soon, so it may be shown.
    const std::string link = fmt::format(
        "{}/login?code={}", http.url(),
        sessions.IssueLoginCode(authenticator.Find(local_token->secret)));
    // JSON lines go to a log collector: the link is in the log line. Text
    // logs share stderr with the person who started serve: the link gets a
    // plain line of its own, once.
    const bool json = args.log_format == "json";
    spdlog::info(
        "serve: no [[auth.token]] configured: the operator token is in {} ({}); dashboard at "
        "{}/{}",
        local_token->path, local_token->created ? "created now, mode 0600" : "as before",
        http.url(),
        json ? fmt::format(" — one-time login link (valid {} min): {}", api::kLoginCodeTtl.count(),
                           link)
             : "");
    if (!json) {
      err << "cronledger serve: dashboard login (one-time link, valid "
          << api::kLoginCodeTtl.count() << " min): " << link << "\n";
    }
  } else {
    std::string names;
    for (const auto& t : config.auth.tokens) {
      names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", t.name, api::RoleName(t.role));
    }
    spdlog::info("serve: API tokens: {}", names);
  }
  dispatcher.Start();
  // Other nodes' releases and requeues wake this dispatcher at once
  // (PostgreSQL LISTEN/NOTIFY), until it is drained.
  struct WakeTarget {
    std::mutex mu;
    engine::Dispatcher* dispatcher = nullptr;
  };
  auto wake_target = std::make_shared<WakeTarget>();
  wake_target->dispatcher = &dispatcher;
  store->WatchForWork([wake_target] {
    std::lock_guard lock(wake_target->mu);
    if (wake_target->dispatcher != nullptr) wake_target->dispatcher->Wake();
  });

  // One node scans for all that share the store, and one alerts: the
  // holders of its `scanner` and `alerter` roles.
  engine::GapWatchOptions gap_watch_options;
  gap_watch_options.node = node_id;
  engine::GapWatch gap_watch(config, *store, gap_watch_options);
  loop_options.gap_watch = &gap_watch;
  loop_options.metrics = &node_metrics;
  loop_options.health = &store_health;
  // Alerts (docs/alerts.md): evaluated by the loop, delivered by a thread
  // of their own so that a slow webhook never holds up planning.
  engine::RealAlertSender alert_sender(clock);
  engine::AlertDelivery alert_delivery(*store, clock, alert_sender);
  engine::AlerterOptions alerter_options;
  alerter_options.node = node_id;
  engine::Alerter alerter(config, *store, alert_delivery, alerter_options);
  alert_delivery.Start();
  loop_options.alerter = &alerter;
  std::optional<engine::HeartbeatPinger> heartbeat;
  if (!config.server.heartbeat_url.empty()) {
    heartbeat.emplace(config.server.heartbeat_url, clock);
    heartbeat->Start();
    loop_options.heartbeat = &*heartbeat;
    spdlog::info("serve: heartbeat to {} after planner passes, at most every {}s",
                 engine::UrlOrigin(config.server.heartbeat_url),
                 engine::HeartbeatPinger::kDefaultEvery.count());
  }
  // The node table (loop_options.node, above) and ledger retention.
  loop_options.store = store.get();
  engine::ServeLoop loop(config, planner, reaper, dispatcher, clock, loop_options);
  loop.Run(stop.get_token());
  if (heartbeat) heartbeat->Stop();
  gap_watch.ReleaseRole();

  worker_api.Stop();  // waiting claims answer now; workers claim nothing more here
  // Drain: no new claims; running steps get drain_timeout to finish, then
  // are stopped (an idempotent one released, any other left to its lease).
  const int active = dispatcher.Active();
  // A draining node is still working: it goes on beating, or status and
  // monitors would call it dead 30 s into a longer drain_timeout.
  std::stop_source drained;
  std::thread drain_beat;
  if (active > 0) {
    spdlog::info("serve: waiting up to {}s for {} running run(s)",
                 config.server.drain_timeout.count(), active);
    drain_beat = std::thread([&] {
      store::NodeBeat beat = loop_options.node;
      do {
        beat.now = store::ToInstant(clock.Now());
        if (Status s = store->NodeHeartbeat(beat); !s.ok()) {
          spdlog::warn("serve: node heartbeat failed while draining, retrying: {}",
                       s.ToString());
        }
      } while (clock.SleepFor(loop_options.node_beat_every, drained.get_token()));
    });
  }
  dispatcher.Drain(config.server.drain_timeout);
  drained.request_stop();
  if (drain_beat.joinable()) drain_beat.join();
  {
    std::lock_guard lock(wake_target->mu);
    wake_target->dispatcher = nullptr;
  }
  http.Stop();  // after the drain: finishing steps still commit their effects
  alert_delivery.Stop();
  alerter.ReleaseRole();  // after the delivery recorded what it sent

  // Wake the signal thread, which may still be waiting for a (second) signal.
  exiting = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  // The node's last beat says it stopped: status shows it at once, and a
  // serve started next under its name need not wait to see whether it runs.
  store::NodeBeat last_beat = loop_options.node;
  last_beat.now = store::ToInstant(clock.Now());
  if (Status s = store->NodeStopped(last_beat); !s.ok()) {
    spdlog::warn("serve: could not record the node's stop: {}", s.ToString());
  }
  spdlog::info("serve: node {} stopped cleanly", node_id);
  return kExitOk;
}

}  // namespace cronledger::cli
