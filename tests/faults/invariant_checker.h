// The fault harness's invariant checker: reads the fenced sink's database
// (tests/faults/fenced_sink.cc) and a cronledger ledger (plain reads of the
// tables runs, attempts and effects, from SQLite or PostgreSQL) and lists
// every broken guarantee.
#ifndef CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_
#define CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_

#include <set>
#include <string>
#include <vector>

namespace cronledger::faults {

struct Violation {
  // One of: delivered_twice, stale_write_applied, missing, not_succeeded,
  // not_delivered, attempt_not_closed, duplicate_run, undelivered,
  // unexpected_delivery, effect_not_committed, unreadable.
  std::string kind;
  // job/partition/period; the sink key for delivered_twice,
  // stale_write_applied, undelivered, unexpected_delivery and
  // effect_not_committed; empty for unreadable.
  std::string run_key;
  std::string detail;
};

struct CheckInput {
  // The ledger: its SQLite file, or a postgresql:// URL (with the
  // scenario's search_path) for a PostgreSQL ledger.
  std::string ledger_db;
  std::string sink_db;    // the sink's SQLite file
  // Run keys the scenario expects to be in the ledger, succeeded, and
  // delivered to the sink exactly once.
  std::vector<std::string> expected_keys;
  // Expected keys allowed to be missing from the ledger, not succeeded, or
  // not delivered (a scenario that knows a key may legitimately not finish);
  // one of them the sink accepted is not an unexpected_delivery either.
  std::set<std::string> allowed_unfinished;
  // Whether a succeeded expected run must have delivered its own run key
  // (steps that deliver {run_key}); false when steps deliver other keys,
  // which expected_deliveries then names.
  bool runs_deliver_run_keys = true;
  // Sink keys that must each have been accepted (exactly once, as every
  // key); when not empty, no other key may have been accepted.
  std::vector<std::string> expected_deliveries;
  // When not empty: the job whose effect records (`cronledger effect run`)
  // must agree with the sink: the effect of each expected delivery's key is
  // committed.
  std::string effects_job;
};

// Checks, over the whole ledger and sink (not only the expected keys):
//  - delivered_twice: a key with more than one ACCEPTED sink write;
//  - stale_write_applied: an accepted write whose token is lower than a
//    token accepted before it for the same key (in the sink's write order);
//  - attempt_not_closed: an attempt without ended_at while its run is not
//    running;
//  - duplicate_run: more than one runs row for a run key;
// and, for each expected key not in allowed_unfinished:
//  - missing: no run in the ledger;
//  - not_succeeded: the run is in another state;
//  - not_delivered: the run succeeded but the sink accepted no write for it
//    (only with runs_deliver_run_keys);
// and, with expected_deliveries:
//  - undelivered: an expected delivery the sink never accepted;
//  - unexpected_delivery: an accepted key that is not expected;
//  - effect_not_committed (with effects_job): the ledger's effect of an
//    expected delivery is absent or not committed.
// A database that cannot be read is one `unreadable` violation.
std::vector<Violation> CheckInvariants(const CheckInput& input);

// One line per violation, for assertion messages; "" when there are none.
std::string Describe(const std::vector<Violation>& violations);

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_
