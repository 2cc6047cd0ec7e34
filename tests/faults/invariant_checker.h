// The fault harness's invariant checker: reads the fenced sink's database
// (tests/faults/fenced_sink.cc) and a cronledger ledger (plain SQLite reads
// of the tables runs and attempts) and lists every broken guarantee.
#ifndef CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_
#define CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_

#include <set>
#include <string>
#include <vector>

namespace cronledger::faults {

struct Violation {
  // One of: delivered_twice, stale_write_applied, missing, not_succeeded,
  // not_delivered, attempt_not_closed, duplicate_run, unreadable.
  std::string kind;
  std::string run_key;  // job/partition/period; empty for unreadable
  std::string detail;
};

struct CheckInput {
  std::string ledger_db;  // the ledger's SQLite file
  std::string sink_db;    // the sink's SQLite file
  // Run keys the scenario expects to be in the ledger, succeeded, and
  // delivered to the sink exactly once.
  std::vector<std::string> expected_keys;
  // Expected keys allowed to be missing from the ledger, not succeeded, or
  // not delivered (a scenario that knows a key may legitimately not finish).
  std::set<std::string> allowed_unfinished;
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
//  - not_delivered: the run succeeded but the sink accepted no write for it.
// A database that cannot be read is one `unreadable` violation.
std::vector<Violation> CheckInvariants(const CheckInput& input);

// One line per violation, for assertion messages; "" when there are none.
std::string Describe(const std::vector<Violation>& violations);

}  // namespace cronledger::faults

#endif  // CRONLEDGER_TESTS_FAULTS_INVARIANT_CHECKER_H_
