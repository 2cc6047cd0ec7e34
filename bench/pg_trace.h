// A profiler for the PostgreSQL store, from the outside: pg_trace.cc defines
// PQexec, PQprepare and PQexecPrepared in the benchmark executable, so the
// store's calls (src/store/postgres/pg_db.cc, linked statically) go through
// them before reaching libpq. Each of those calls is one round trip to the
// server. While tracing is on it counts and times every call by statement,
// and follows each connection's write transactions: the time waiting for
// the advisory write lock (the BEGIN; SELECT pg_advisory_xact_lock(...)
// round trip), the time it is held (from that round trip's end to the end
// of COMMIT, which includes the WAL flush) and what the transaction did.
// Nothing in src/ changes; off, it costs an atomic load per call.
#ifndef CRONLEDGER_BENCH_PG_TRACE_H_
#define CRONLEDGER_BENCH_PG_TRACE_H_

#include <cstdio>

namespace cronledger::bench::pgtrace {

void Enable(bool on);
void Reset();
// Prints the profile: per transaction kind and per statement; `runs`
// divides the totals, `wall_s` gives the lock's share of the time.
void Report(std::FILE* out, long runs, double wall_s);

}  // namespace cronledger::bench::pgtrace

#endif  // CRONLEDGER_BENCH_PG_TRACE_H_
