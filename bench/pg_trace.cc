// See pg_trace.h. The real libpq functions are found with dlsym(RTLD_NEXT).
#include "pg_trace.h"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cronledger/clock.h"

namespace cronledger::bench::pgtrace {
namespace {

using Clock = cronledger::Clock;

std::atomic<bool> g_on{false};

struct Tally {
  long count = 0;
  double ns = 0;
};

// What a write transaction did, by the statements it ran.
enum TxKind { kClaim, kFinish, kClaimAndFinish, kOther, kTxKinds };
const char* const kTxNames[] = {"claim (RunClaim)", "group commit (RunApplyWrites)",
                                "claim + finish", "other (plan, release, ...)"};

struct TxTally {
  long count = 0;
  long statements = 0;  // inside, not counting BEGIN and COMMIT
  long claims = 0;      // runs claimed (UPDATE runs SET state = 'running')
  long finishes = 0;    // attempts ended (UPDATE attempts SET ended_at)
  double wait_ns = 0;   // BEGIN + advisory lock round trip
  double held_ns = 0;   // lock acquired .. COMMIT answered
  double calls_ns = 0;  // of which in round trips other than COMMIT
  double commit_ns = 0; // of which COMMIT (WAL flush)
};

struct ConnState {
  bool in_tx = false;
  Clock::TimePoint acquired;
  double wait_ns = 0;
  long statements = 0;
  long claims = 0;
  long finishes = 0;
  double calls_ns = 0;
};

struct State {
  std::mutex mu;
  std::unordered_map<std::string, std::string> prepared;  // "conn/name" -> label
  std::map<std::string, Tally> by_statement;
  std::unordered_map<const PGconn*, ConnState> conns;
  TxTally tx[kTxKinds];
  Tally outside;  // round trips outside write transactions
};

State& S() {
  static State* s = new State;  // never destroyed: calls may come during exit
  return *s;
}

template <typename F>
F Real(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    std::fprintf(stderr, "pg_trace: %s not found in libpq\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(p);
}

std::string Label(const char* sql) {
  std::string out;
  bool space = false;
  for (const char* c = sql; *c != '\0' && out.size() < 110; ++c) {
    const bool ws = *c == ' ' || *c == '\n' || *c == '\t';
    if (ws) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *c;
  }
  return out;
}

std::string Key(const PGconn* conn, const char* name) {
  return std::to_string(reinterpret_cast<uintptr_t>(conn)) + "/" + name;
}

// Accounts one round trip of `label` on `conn` that took [t0, t1].
void Account(const PGconn* conn, const std::string& label, Clock::TimePoint t0,
             Clock::TimePoint t1) {
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  State& s = S();
  std::lock_guard lock(s.mu);
  Tally& t = s.by_statement[label];
  ++t.count;
  t.ns += ns;
  ConnState& c = s.conns[conn];
  if (label.rfind("BEGIN", 0) == 0) {
    c = ConnState{};
    c.in_tx = true;
    c.acquired = t1;
    c.wait_ns = ns;
    return;
  }
  if (label == "COMMIT" || label == "ROLLBACK") {
    if (!c.in_tx) {
      s.outside.count++;
      s.outside.ns += ns;
      return;
    }
    const int kind = c.claims > 0 && c.finishes > 0 ? kClaimAndFinish
                     : c.claims > 0                 ? kClaim
                     : c.finishes > 0               ? kFinish
                                                    : kOther;
    TxTally& x = s.tx[kind];
    ++x.count;
    x.statements += c.statements;
    x.claims += c.claims;
    x.finishes += c.finishes;
    x.wait_ns += c.wait_ns;
    x.held_ns += std::chrono::duration<double, std::nano>(t1 - c.acquired).count();
    x.calls_ns += c.calls_ns;
    x.commit_ns += ns;
    c.in_tx = false;
    return;
  }
  if (!c.in_tx) {
    s.outside.count++;
    s.outside.ns += ns;
    return;
  }
  ++c.statements;
  c.calls_ns += ns;
  if (label.find("SET state = 'running', lease_token") != std::string::npos) ++c.claims;
  if (label.find("UPDATE attempts SET ended_at") != std::string::npos) ++c.finishes;
}

}  // namespace

void Enable(bool on) { g_on.store(on); }

void Reset() {
  State& s = S();
  std::lock_guard lock(s.mu);
  s.by_statement.clear();
  s.conns.clear();
  for (auto& t : s.tx) t = TxTally{};
  s.outside = Tally{};
}

void Report(std::FILE* out, long runs, double wall_s) {
  State& s = S();
  std::lock_guard lock(s.mu);
  const double r = runs > 0 ? static_cast<double>(runs) : 1;
  long calls = 0;
  for (const auto& [label, t] : s.by_statement) calls += t.count;
  std::fprintf(out, "profile: %ld runs in %.2f s; %ld round trips to the server (%.1f per run), "
               "%ld of them outside write transactions (%.1f per run, %.1f us each)\n",
               runs, wall_s, calls, calls / r, s.outside.count, s.outside.count / r,
               s.outside.count ? s.outside.ns / s.outside.count / 1e3 : 0.0);
  double held_total = 0;
  std::fprintf(out, "profile: write transactions (the advisory lock serialises them across nodes):\n");
  std::fprintf(out, "  %-30s %7s %8s %8s %9s %9s %9s %9s %9s %9s\n", "kind", "count", "runs/tx",
               "stmts/tx", "stmts/run", "wait us", "held us", "rt us", "commit us", "client us");
  for (int k = 0; k < kTxKinds; ++k) {
    const TxTally& x = s.tx[k];
    if (x.count == 0) continue;
    held_total += x.held_ns;
    const double n = static_cast<double>(x.count);
    const long work = std::max(x.claims, x.finishes);
    std::fprintf(out, "  %-30s %7ld %8.1f %8.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
                 kTxNames[k], x.count, work / n, x.statements / n,
                 work ? static_cast<double>(x.statements) / work : 0.0, x.wait_ns / n / 1e3,
                 x.held_ns / n / 1e3, x.calls_ns / n / 1e3, x.commit_ns / n / 1e3,
                 (x.held_ns - x.calls_ns - x.commit_ns) / n / 1e3);
  }
  std::fprintf(out,
               "  (wait: the BEGIN + pg_advisory_xact_lock round trip; held: from then to COMMIT's "
               "answer; rt: round trips inside; commit: COMMIT incl. WAL flush; client: the rest, "
               "cronledger's own time while holding the lock)\n");
  std::fprintf(out, "profile: the write lock was held %.2f s of %.2f s wall (%.0f%%), %.1f us per run\n",
               held_total / 1e9, wall_s, wall_s > 0 ? 100 * held_total / 1e9 / wall_s : 0.0,
               held_total / r / 1e3);
  std::vector<std::pair<std::string, Tally>> rows(s.by_statement.begin(), s.by_statement.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::fprintf(out, "profile: round trips by statement (by total time):\n");
  std::fprintf(out, "  %8s %8s %8s %8s  %s\n", "count", "per run", "mean us", "total s", "statement");
  for (const auto& [label, t] : rows) {
    std::fprintf(out, "  %8ld %8.2f %8.1f %8.3f  %s\n", t.count, t.count / r, t.ns / t.count / 1e3,
                 t.ns / 1e9, label.c_str());
  }
}

}  // namespace cronledger::bench::pgtrace

using cronledger::bench::pgtrace::Account;
using cronledger::bench::pgtrace::Label;
using cronledger::bench::pgtrace::Real;
using cronledger::bench::pgtrace::S;
using cronledger::bench::pgtrace::g_on;

extern "C" {

PGresult* PQexec(PGconn* conn, const char* query) {
  static const auto real = Real<PGresult* (*)(PGconn*, const char*)>("PQexec");
  if (!g_on.load(std::memory_order_relaxed)) return real(conn, query);
  const auto t0 = cronledger::RealClock().Now();
  PGresult* r = real(conn, query);
  Account(conn, Label(query), t0, cronledger::RealClock().Now());
  return r;
}

PGresult* PQprepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types) {
  static const auto real =
      Real<PGresult* (*)(PGconn*, const char*, const char*, int, const Oid*)>("PQprepare");
  {
    // Always remembered: a statement prepared before tracing starts is
    // executed while it runs.
    auto& s = S();
    std::lock_guard lock(s.mu);
    s.prepared[cronledger::bench::pgtrace::Key(conn, name)] = Label(query);
  }
  if (!g_on.load(std::memory_order_relaxed)) return real(conn, name, query, n, types);
  const auto t0 = cronledger::RealClock().Now();
  PGresult* r = real(conn, name, query, n, types);
  Account(conn, "(prepare) " + Label(query), t0, cronledger::RealClock().Now());
  return r;
}

PGresult* PQexecPrepared(PGconn* conn, const char* name, int n, const char* const* values,
                         const int* lengths, const int* formats, int result_format) {
  static const auto real = Real<PGresult* (*)(PGconn*, const char*, int, const char* const*,
                                              const int*, const int*, int)>("PQexecPrepared");
  if (!g_on.load(std::memory_order_relaxed)) {
    return real(conn, name, n, values, lengths, formats, result_format);
  }
  std::string label;
  {
    auto& s = S();
    std::lock_guard lock(s.mu);
    auto it = s.prepared.find(cronledger::bench::pgtrace::Key(conn, name));
    label = it == s.prepared.end() ? std::string("(unknown) ") + name : it->second;
  }
  const auto t0 = cronledger::RealClock().Now();
  PGresult* r = real(conn, name, n, values, lengths, formats, result_format);
  Account(conn, label, t0, cronledger::RealClock().Now());
  return r;
}

}  // extern "C"
