// The API under a connection attack (issue 28): the latency of what must
// never starve — an external worker's heartbeat, a step's effect call and
// GET /healthz — on an idle `serve`, then with 200 idle connections and 50
// slow ones (a header byte every 4 s) held open by an attacker without a
// token. Target: p99 under attack at most 2x the idle p99, and a
// kept-alive call's p50 under 5 ms (no delayed-ACK stalls).
//
//   bench/run.sh api-attack [--cronledger PATH] [--calls N] [--rounds N] [--control]
//
// Runs the `cronledger` it is given (default: the bench build's) as a real
// `serve` on a fresh SQLite ledger with one external job due every second,
// claims a run with a worker token, and times N calls of each kind on one
// kept-alive connection per kind (and healthz on a new connection each
// time, as a load balancer probes). Prints one line per kind and phase.
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "common/raw_socket.h"
#include "cronledger/clock.h"

namespace cronledger {
namespace bench {
const char* const kBenchName = "api_attack_bench";
}  // namespace bench

namespace {

using bench::Die;
using json = nlohmann::json;

constexpr const char* kSecret = "api-attack-bench-worker-secret-0123456789";

struct Options {
  std::string cronledger = CRONLEDGER_BENCH_BIN;
  int calls = 1000;
  int rounds = 6;
  // Both phases idle: what the phase order alone does to the figures.
  bool control = false;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cronledger" && i + 1 < argc) {
      o.cronledger = argv[++i];
    } else if (a == "--calls" && i + 1 < argc) {
      o.calls = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      o.rounds = std::atoi(argv[++i]);
    } else if (a == "--control") {
      o.control = true;
    } else {
      Die("unknown argument " + a + " (--cronledger PATH, --calls N, --rounds N, --control)");
    }
  }
  if (o.calls < 10) Die("--calls must be at least 10");
  if (o.rounds < 1) Die("--rounds must be at least 1");
  return o;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

class Serve {
 public:
  Serve(const std::string& bin, const std::string& dir) {
    const std::string config = dir + "/cronledger.toml";
    std::ofstream(config) << R"([server]
store = "sqlite:ledger.db"
listen = "127.0.0.1:0"
durability = "normal"

[[job]]
name = "attack"
schedule = "* * * * * *"
timezone = "UTC"
executor = "external"
lease_ttl = "60s"

  [[job.step]]
  name = "work"
  timeout = "10s"
  idempotent = true

[[auth.token]]
name = "bench-worker"
role = "worker"
secret_env = "BENCH_WORKER_SECRET"
)";
    log_ = dir + "/serve.log";
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      setenv("BENCH_WORKER_SECRET", kSecret, 1);
      execl(bin.c_str(), bin.c_str(), "serve", "--config", config.c_str(), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::string log = ReadFile(log_);
      const auto at = log.find("API listening on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::atoi(log.c_str() + at + 34);
    }
    if (port_ == 0) Die("serve did not start:\n" + ReadFile(log_));
  }
  ~Serve() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

struct Phase {
  std::vector<double> heartbeat, effect, health;
  int unanswered = 0;  // calls without an answer within 10 s (counted as 10 s)
};

constexpr double kGiveUpMs = 10000;

Phase Measure(int port, const json& claim, int calls) {
  Phase p;
  httplib::Client worker("127.0.0.1", port);
  worker.set_keep_alive(true);
  // The client's own Nagle would hold a body sent after its headers.
  worker.set_tcp_nodelay(true);
  worker.set_bearer_token_auth(kSecret);
  worker.set_read_timeout(10);
  worker.set_connection_timeout(10);
  httplib::Client step("127.0.0.1", port);
  step.set_keep_alive(true);
  step.set_tcp_nodelay(true);
  step.set_bearer_token_auth(claim["credential"].get<std::string>());
  step.set_read_timeout(10);
  step.set_connection_timeout(10);
  const auto took = [&](Clock::TimePoint t0, bool answered) {
    if (!answered) ++p.unanswered;
    return answered ? std::chrono::duration<double, std::milli>(RealClock().Now() - t0).count()
                    : kGiveUpMs;
  };
  const std::string run = std::to_string(claim["id"].get<int64_t>());
  const json heartbeat = {{"fencing_token", claim["fencing_token"]}};
  static int key = 0;
  // A server that leaves calls unanswered has said what it does: five
  // unanswered calls end the phase (each took 10 s).
  for (int i = 0; i < calls && p.unanswered < 5; ++i) {
    auto t0 = RealClock().Now();
    auto h = worker.Post("/v1/runs/" + run + "/heartbeat", heartbeat.dump(), "application/json");
    if (h && h->status != 200) Die("a heartbeat was refused: " + h->body);
    p.heartbeat.push_back(took(t0, static_cast<bool>(h)));

    const json begin = {{"run_id", claim["id"]},
                        {"fencing_token", claim["fencing_token"]},
                        {"key", fmt::format("k{}", ++key)}};
    t0 = RealClock().Now();
    auto e = step.Post("/v1/effects/begin", begin.dump(), "application/json");
    if (e && e->status != 200) Die("an effect call was refused: " + e->body);
    p.effect.push_back(took(t0, static_cast<bool>(e)));

    t0 = RealClock().Now();
    httplib::Client probe("127.0.0.1", port);
    probe.set_read_timeout(10);
    probe.set_connection_timeout(10);
    auto g = probe.Get("/healthz");
    if (g && g->status != 200) Die("/healthz was refused");
    p.health.push_back(took(t0, static_cast<bool>(g)));
  }
  return p;
}

void Append(Phase& into, const Phase& from) {
  into.heartbeat.insert(into.heartbeat.end(), from.heartbeat.begin(), from.heartbeat.end());
  into.effect.insert(into.effect.end(), from.effect.begin(), from.effect.end());
  into.health.insert(into.health.end(), from.health.begin(), from.health.end());
  into.unanswered += from.unanswered;
}

// 200 connections that send nothing and 50 that send a header byte every
// 4 s, held open from construction to destruction, without a token.
class Attack {
 public:
  explicit Attack(int port) {
    for (int i = 0; i < 250; ++i) {
      sockets_.emplace_back(port);
      if (!sockets_.back().connected()) Die("the attacker could not connect");
    }
    trickle_ = std::thread([this] {
      for (int tick = 0; !done_; ++tick) {
        if (tick % 40 == 0) {
          for (int i = 200; i < 250; ++i) sockets_[i].Send("G");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    // Until the server has accepted them all.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ~Attack() {
    done_ = true;
    trickle_.join();
  }

 private:
  std::vector<testing::RawSocket> sockets_;
  std::atomic<bool> done_{false};
  std::thread trickle_;
};

double P99(const std::vector<double>& v) { return Percentile(v, 0.99); }

void Print(const char* phase, const char* kind, const std::vector<double>& v) {
  std::printf("%-8s %-10s p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n", phase, kind,
              Percentile(v, 0.50), P99(v), Percentile(v, 1.0));
}

int Main(int argc, char** argv) {
  const Options opt = ParseArgs(argc, argv);
  char tmpl[] = "/tmp/cronledger-api-attack-XXXXXX";
  if (!mkdtemp(tmpl)) Die("mkdtemp failed");
  Serve serve(opt.cronledger, tmpl);
  const int port = serve.port();

  httplib::Client worker("127.0.0.1", port);
  worker.set_bearer_token_auth(kSecret);
  worker.set_read_timeout(30);
  auto claimed = worker.Post("/v1/claims", R"({"jobs": ["attack"], "wait": 10, "worker": "bench"})",
                             "application/json");
  if (!claimed || claimed->status != 200) Die("the claim failed");
  const json claim = json::parse(claimed->body)["run"];
  if (claim.is_null()) Die("nothing to claim");

  std::printf(
      "api_attack_bench: %s, %d rounds of %d calls of each kind per phase, attack = 200 idle "
      "+ 50 slow connections%s; odd rounds idle first, even rounds attacked first\n",
      opt.cronledger.c_str(), opt.rounds, opt.calls,
      opt.control ? " (--control: no attack is made)" : "");
  // The phases alternate in order so that what grows with the ledger (the
  // WAL before a checkpoint, the effects table) weighs on both alike.
  Phase idle, attacked;
  for (int round = 1; round <= opt.rounds; ++round) {
    Phase quiet, loud;
    const auto measure_attacked = [&] {
      std::optional<Attack> attack;
      if (!opt.control) attack.emplace(port);
      loud = Measure(port, claim, opt.calls);
    };
    if (round % 2 == 1) {
      quiet = Measure(port, claim, opt.calls);
      measure_attacked();
    } else {
      measure_attacked();
      quiet = Measure(port, claim, opt.calls);
    }
    std::printf(
        "round %d (%s first): p99 idle / attacked: heartbeat %.3f / %.3f  effect %.3f / %.3f  "
        "healthz %.3f / %.3f ms\n",
        round, round % 2 == 1 ? "idle" : "attacked", P99(quiet.heartbeat), P99(loud.heartbeat),
        P99(quiet.effect), P99(loud.effect), P99(quiet.health), P99(loud.health));
    Append(idle, quiet);
    Append(attacked, loud);
  }

  std::printf("all rounds:\n");
  Print("idle", "heartbeat", idle.heartbeat);
  Print("idle", "effect", idle.effect);
  Print("idle", "healthz", idle.health);
  Print("attacked", "heartbeat", attacked.heartbeat);
  Print("attacked", "effect", attacked.effect);
  Print("attacked", "healthz", attacked.health);
  std::printf(
      "unanswered within 10 s: idle %d, attacked %d (calls made: idle %zu, attacked %zu; "
      "a phase ends after 5 unanswered)\n",
      idle.unanswered, attacked.unanswered, 3 * idle.heartbeat.size(),
      3 * attacked.heartbeat.size());
  std::printf("ratio p99 attacked/idle: heartbeat %.2f  effect %.2f  healthz %.2f\n",
              P99(attacked.heartbeat) / P99(idle.heartbeat),
              P99(attacked.effect) / P99(idle.effect), P99(attacked.health) / P99(idle.health));
  std::filesystem::remove_all(tmpl);
  return 0;
}

}  // namespace
}  // namespace cronledger

int main(int argc, char** argv) { return cronledger::Main(argc, argv); }
