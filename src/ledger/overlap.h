// What a claim does with a run while an earlier run of its partition is in
// flight (docs/execution.md; the job's `overlap` key): a domain rule the
// store applies in the claim's transaction, so it lives here and not with
// the configuration that names it.
#ifndef CRONLEDGER_LEDGER_OVERLAP_H_
#define CRONLEDGER_LEDGER_OVERLAP_H_

namespace cronledger::ledger {

enum class Overlap {
  kQueue,  // wait while an earlier run of the partition is pending or running
  kSkip,   // skip it (overlap) while an earlier one is running
  kAllow,  // claim it anyway
};

}  // namespace cronledger::ledger

#endif  // CRONLEDGER_LEDGER_OVERLAP_H_
