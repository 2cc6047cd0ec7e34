// How a release pass treats overdue runs and runs that fall due while their
// job is paused (docs/ledger.md, Release; the job's `catchup` and
// `on_pause` keys): inputs of ledger::DecideRelease.
#ifndef CRONLEDGER_LEDGER_CATCHUP_H_
#define CRONLEDGER_LEDGER_CATCHUP_H_

namespace cronledger::ledger {

// When several runs of a partition are overdue at once.
enum class Catchup {
  kAll,     // each runs if within grace
  kLatest,  // the newest runs, the older ones are coalesced
  kNone,    // none runs (catchup_none)
};

// What a pause does to the runs that fall due during it.
enum class OnPause {
  kHold,  // they wait, exempt from misfire, and run on resume
  kSkip,  // they are skipped (paused)
};

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_CATCHUP_H_
