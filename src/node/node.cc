// cronledger::Node (include/cronledger/node.h): the planner, dispatcher,
// reaper, gap watch, alerter and HTTP API of one node, wired together.
// `cronledger serve` and embedding programs both run this.
#include "cronledger/node.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
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
#include "config/config.h"
#include "engine/alert_delivery.h"
#include "engine/alert_sender.h"
#include "engine/alerter.h"
#include "engine/dispatcher.h"
#include "engine/heartbeat_pinger.h"
#include "engine/node_metrics.h"
#include "engine/planner.h"
#include "engine/reaper.h"
#include "engine/serve_loop.h"
#include "engine/status_report.h"
#include "engine/step_runner.h"
#include "engine/store_health.h"
#include "node/node_id_check.h"
#include "store/open_store.h"

namespace cronledger {
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
Status LoadApiTokens(const config::Config& config, std::vector<api::ApiToken>* tokens) {
  if (config.auth.tokens.empty()) return Status::Ok();
  auto secrets = config::ResolveTokenSecrets(config, [](const char* name) {
    return static_cast<const char*>(std::getenv(name));
  });
  if (auto* errors = std::get_if<config::ConfigErrors>(&secrets)) {
    std::string lines = errors->ToString();
    if (!lines.empty()) lines.pop_back();
    return InvalidArgument(std::move(lines));
  }
  for (const auto& s : std::get<std::vector<config::TokenSecret>>(secrets)) {
    tokens->push_back({s.token->name, s.token->role, s.secret});
  }
  return Status::Ok();
}

// A store named by NodeOptions::store, resolved as [server] store would be
// in a file in the current directory.
Result<std::string> StoreOverride(const std::string& url) {
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    if (std::string problem = config::PostgresUrlProblem(url); !problem.empty()) {
      return InvalidArgument("store: " + problem);
    }
    return url;
  }
  if (!url.starts_with("sqlite:") || url.size() == 7) {
    return InvalidArgument("store: \"" + url +
                           "\" is not a store; use sqlite:FILE or postgresql://USER@HOST/DB");
  }
  return "sqlite:" + std::filesystem::absolute(url.substr(7)).lexically_normal().string();
}

}  // namespace

struct Node::Impl {
  config::Config config;
  NodeOptions options;
  Clock* clock = nullptr;
  std::string node_id;
  std::vector<api::ApiToken> tokens;
  std::unique_ptr<api::HttpServer> http;
  std::unique_ptr<store::Store> store;
  // The dispatcher's group commits get a connection of their own where
  // they can run beside its claims (PostgreSQL).
  std::unique_ptr<store::Store> write_store;
  store::NodeBeat beat;  // name, version, listen, host, pid
  HandlerRegistry handlers;
  bool ran = false;
};

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() = default;

const std::string& Node::id() const { return impl_->node_id; }
std::string Node::url() const { return impl_->http->url(); }

Result<std::unique_ptr<Node>> Node::Open(const Config& config, NodeOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->config = detail::ConfigOf(config);
  impl->clock = options.clock != nullptr ? options.clock : &RealClock();
  config::Config& c = impl->config;
  if (options.listen) {
    // The rule of server.listen in the file: loopback only without tokens.
    const std::string problem = config::ListenProblem(*options.listen, !c.auth.tokens.empty());
    if (!problem.empty()) return InvalidArgument("--listen: " + problem);
    c.server.listen = *options.listen;
  }
  if (options.node_id) {
    if (std::string problem = config::NodeIdProblem(*options.node_id); !problem.empty()) {
      return InvalidArgument("--node-id: " + problem);
    }
  }
  if (options.store) {
    auto store = StoreOverride(*options.store);
    if (!store.ok()) return store.status();
    c.server.store = *store;
  }
  if (Status s = LoadApiTokens(c, &impl->tokens); !s.ok()) return s;

  // Bound before anything else starts, so that a taken port fails fast and
  // port 0 ("any free port") is known for the node id and the steps.
  api::HttpLimits limits;
  limits.max_body = c.server.max_body;  // 0: what the step endpoints need
  limits.request_timeout = c.server.request_timeout;
  limits.max_connections = c.server.max_connections;
  limits.max_connections_per_peer = c.server.max_connections_per_peer;
  impl->http =
      std::make_unique<api::HttpServer>(static_cast<std::size_t>(c.server.max_workers) + 4, limits);
  if (Status s = impl->http->Bind(c.server.listen); !s.ok()) {
    return InvalidArgument(s.message() +
                           " (server.listen or --listen; port 0 takes any free port)");
  }
  impl->node_id = options.node_id.value_or(c.server.node_id);
  if (impl->node_id.empty()) impl->node_id = HostName() + ":" + std::to_string(impl->http->port());

  auto store = store::OpenStore({c.server.store, c.server.durability == config::Durability::kFull}, /*create=*/true);
  if (!store.ok()) {
    return Status(store.status().code() == StatusCode::kInvalidArgument
                      ? StatusCode::kInvalidArgument
                      : StatusCode::kUnavailable,
                  "store unavailable: " + store.status().message());
  }
  impl->store = std::move(*store);
  if (impl->store->WritesBesideClaims()) {
    auto write_store = store::OpenStore({c.server.store, c.server.durability == config::Durability::kFull}, /*create=*/true);
    if (!write_store.ok()) {
      return Status(StatusCode::kUnavailable,
                    "store unavailable: " + write_store.status().message());
    }
    impl->write_store = std::move(*write_store);
  }
  store::NodeBeat& beat = impl->beat;
  beat.node = impl->node_id;
  beat.version = CRONLEDGER_VERSION;
  beat.listen = c.server.listen.substr(0, c.server.listen.rfind(':')) + ":" +
                std::to_string(impl->http->port());
  beat.started_at = store::ToInstant(impl->clock->Now());
  beat.host = HostName();
  beat.pid = getpid();
  impl->options = std::move(options);
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Status Node::Register(const std::string& job, StepHandler handler, const std::string& step) {
  const config::JobConfig* j = impl_->config.FindJob(job);
  if (j == nullptr) return InvalidArgument("no job named \"" + job + "\" in the config");
  if (j->executor != config::Executor::kInprocess) {
    return InvalidArgument("job \"" + job +
                           "\" does not have executor = \"inprocess\": its steps are not run "
                           "by registered handlers");
  }
  if (!step.empty() &&
      std::none_of(j->steps.begin(), j->steps.end(), [&](const auto& s) { return s.name == step; })) {
    return InvalidArgument("job \"" + job + "\" has no step named \"" + step + "\"");
  }
  if (!handler) return InvalidArgument("the handler for job \"" + job + "\" is empty");
  impl_->handlers.Register(job, std::move(handler), step);
  return Status::Ok();
}

Status Node::Run(std::stop_token stop, std::optional<std::chrono::seconds> drain_grace) {
  Impl& n = *impl_;
  if (n.ran) return Status(StatusCode::kFailedPrecondition, "a node runs once");
  n.ran = true;
  const config::Config& config = n.config;
  Clock& clock = *n.clock;
  store::Store& store = *n.store;
  api::HttpServer& http = *n.http;
  const std::string& node_id = n.node_id;

  // The node table (status, the dashboard), and whether another process
  // still runs under this node id.
  engine::ServeLoopOptions loop_options;
  loop_options.node = n.beat;
  bool stopped_early = false;
  if (Status s = node::RefuseANodeIdInUse(store, loop_options.node, clock,
                                          loop_options.node_beat_every, stop, &stopped_early);
      !s.ok()) {
    return s;
  }
  if (stopped_early) {
    spdlog::info("serve: stopped by a signal before it started (node {} not started)", node_id);
    return Status::Ok();
  }
  // Without [[auth.token]]: the local operator token, created at the first
  // start, once the store has opened and the id is ours (a node that
  // cannot start writes nothing).
  std::vector<api::ApiToken> tokens = n.tokens;
  std::optional<api::LocalToken> local_token;
  if (config.auth.tokens.empty()) {
    auto token = api::LoadOrCreateLocalToken(config.dir);
    if (!token.ok()) return InvalidArgument(token.status().message());
    tokens.push_back({"local", config::TokenRole::kOperate, token->secret});
    local_token = std::move(*token);
  }
  const api::TokenAuthenticator authenticator(std::move(tokens));

  spdlog::info("serve: node {} started with {} job(s), store {}", node_id, config.jobs.size(),
               store::RedactStoreUrl(config.server.store));
  LogStanding(config, store, clock.Now());

  // What steps call: effects and checkpoints, with per-attempt credentials.
  const api::AttemptCredentials credentials;
  engine::Planner planner(config, store, clock);
  engine::Reaper reaper(config, store);
  const std::string cronledger_bin = n.options.cronledger_bin;
  engine::DefaultStepRunner runner(
      config, clock, &n.handlers, [&](const exec::StepContext& ctx) {
        auto env = api::AttemptEnvironment(store, credentials, http.url(), ctx);
        if (env.ok() && !cronledger_bin.empty()) env->emplace_back("CRONLEDGER_BIN", cronledger_bin);
        return env;
      });
  // Every store call of the loop and the dispatcher reports here: an outage
  // is logged once and counted on /metrics.
  engine::StoreHealth store_health;
  engine::DispatcherOptions dispatch;
  dispatch.node = node_id;
  dispatch.health = &store_health;
  dispatch.max_workers = config.server.max_workers;
  dispatch.handlers = &n.handlers;
  dispatch.claim_ahead = config.server.claim_ahead;
  dispatch.write_store = n.write_store.get();
  if (store.NotifiesWork()) {
    // Releases, retries and requeues of every node NOTIFY this one (below):
    // the poll is only the safety net, and for runs whose retry backoff
    // ends, so it need not cost the database ten reads a second per node.
    dispatch.poll = std::chrono::seconds{1};
  }
  engine::Dispatcher dispatcher(config, store, clock, runner, dispatch);
  // Steps' effect writes join the in-process handlers' group commits.
  api::AttemptApi attempt_api(store, dispatcher.effect_writer(), clock, credentials,
                              {.node = node_id, .output_cap = config.server.output_cap});
  api::OperatorApi operator_api(config, store, clock, authenticator, credentials);
  engine::NodeMetrics node_metrics;
  const api::MetricsEndpoint metrics(config, store, clock, authenticator, [&] {
    return engine::Snapshot(node_metrics, &dispatcher, config.server.max_workers, &store_health,
                            &store);
  });
  // The dashboard's sessions are kept in the ledger: a restart logs nobody
  // out, and a session holds on every node of the ledger.
  api::SessionStore sessions(clock, &store, &authenticator);
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
  http.SetStoreUp([&] { return store_health.up(); });
  // External workers claim over HTTP; half of the HTTP threads at most
  // wait in long-polls (docs/api.md, external workers).
  api::WorkerApi worker_api(config, store, clock, authenticator, credentials,
                            {.url = http.url(),
                             .max_long_polls = std::max(1, (config.server.max_workers + 4) / 2)});
  http.ServeWorkers(worker_api);
  http.Serve(attempt_api, &operator_api, &metrics);
  if (local_token) {
    // Never the token itself: logs are read by more people than the file.
    // The login link is single-use and expires soon, so it may be shown.
    const std::string link = fmt::format(
        "{}/login?code={}", http.url(),
        sessions.IssueLoginCode(authenticator.Find(local_token->secret)));
    const bool elsewhere = static_cast<bool>(n.options.on_login_link);
    spdlog::info(
        "serve: no [[auth.token]] configured: the operator token is in {} ({}); dashboard at "
        "{}/{}",
        local_token->path, local_token->created ? "created now, mode 0600" : "as before",
        http.url(),
        elsewhere ? "" : fmt::format(" — one-time login link (valid {} min): {}",
                                     api::kLoginCodeTtl.count(), link));
    if (elsewhere) n.options.on_login_link(link);
  } else {
    std::string names;
    for (const auto& t : config.auth.tokens) {
      names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", t.name, api::RoleName(t.role));
    }
    spdlog::info("serve: API tokens: {}", names);
  }
  // Last of the start-up lines: what waits for it (tests, scripts) finds
  // every line before it already written.
  spdlog::info("serve: API listening on {}", http.url());
  dispatcher.Start();
  // Other nodes' releases and requeues wake this dispatcher at once
  // (PostgreSQL LISTEN/NOTIFY), until it is drained.
  struct WakeTarget {
    std::mutex mu;
    engine::Dispatcher* dispatcher = nullptr;
  };
  auto wake_target = std::make_shared<WakeTarget>();
  wake_target->dispatcher = &dispatcher;
  store.WatchForWork([wake_target] {
    std::lock_guard lock(wake_target->mu);
    if (wake_target->dispatcher != nullptr) wake_target->dispatcher->Wake();
  });

  // One node scans for all that share the store, and one alerts: the
  // holders of its `scanner` and `alerter` roles.
  engine::GapWatchOptions gap_watch_options;
  gap_watch_options.node = node_id;
  engine::GapWatch gap_watch(config, store, gap_watch_options);
  loop_options.gap_watch = &gap_watch;
  loop_options.metrics = &node_metrics;
  loop_options.health = &store_health;
  // Alerts (docs/alerts.md): evaluated by the loop, delivered by a thread
  // of their own so that a slow webhook never holds up planning.
  engine::RealAlertSender alert_sender(clock);
  engine::AlertDelivery alert_delivery(store, clock, alert_sender);
  engine::AlerterOptions alerter_options;
  alerter_options.node = node_id;
  engine::Alerter alerter(config, store, alert_delivery, alerter_options);
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
  loop_options.store = &store;
  engine::ServeLoop loop(config, planner, reaper, dispatcher, clock, loop_options);
  loop.Run(stop);
  if (heartbeat) heartbeat->Stop();
  gap_watch.ReleaseRole();

  worker_api.Stop();  // waiting claims answer now; workers claim nothing more here
  // Drain: no new claims; running steps get the grace to finish, then are
  // stopped (an idempotent one released, any other left to its lease).
  const std::chrono::seconds grace = drain_grace.value_or(config.server.drain_timeout);
  const int active = dispatcher.Active();
  // A draining node is still working: it goes on beating, or status and
  // monitors would call it dead 30 s into a longer drain.
  std::stop_source drained;
  std::thread drain_beat;
  if (active > 0) {
    spdlog::info("serve: waiting up to {}s for {} running run(s)", grace.count(), active);
    drain_beat = std::thread([&] {
      store::NodeBeat beat = loop_options.node;
      do {
        beat.now = store::ToInstant(clock.Now());
        if (Status s = store.NodeHeartbeat(beat); !s.ok()) {
          spdlog::warn("serve: node heartbeat failed while draining, retrying: {}",
                       s.ToString());
        }
      } while (clock.SleepFor(loop_options.node_beat_every, drained.get_token()));
    });
  }
  dispatcher.Drain(grace);
  drained.request_stop();
  if (drain_beat.joinable()) drain_beat.join();
  {
    std::lock_guard lock(wake_target->mu);
    wake_target->dispatcher = nullptr;
  }
  http.Stop();  // after the drain: finishing steps still commit their effects
  alert_delivery.Stop();
  alerter.ReleaseRole();  // after the delivery recorded what it sent

  // The node's last beat says it stopped: status shows it at once, and a
  // node started next under its name need not wait to see whether it runs.
  store::NodeBeat last_beat = loop_options.node;
  last_beat.now = store::ToInstant(clock.Now());
  if (Status s = store.NodeStopped(last_beat); !s.ok()) {
    spdlog::warn("serve: could not record the node's stop: {}", s.ToString());
  }
  spdlog::info("serve: node {} stopped cleanly", node_id);
  return Status::Ok();
}

}  // namespace cronledger
