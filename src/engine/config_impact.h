// What a changed configuration would do to the ledger, before it is applied
// (`cronledger check --against-store`, issue 6). The ledger never re-keys a
// run it has planned: a new definition version takes effect after the
// job's planned-through watermark. So a change that drops or re-keys future
// occurrences leaves the runs already planned for them to run as planned,
// under the old definition, and a change of timezone or date_offset_days
// around midnight moves an occurrence onto another business date — the
// silent duplicate or gap this report exists to show.
//
// Read-only: only the store's read calls are used.
#ifndef CRONLEDGER_ENGINE_CONFIG_IMPACT_H_
#define CRONLEDGER_ENGINE_CONFIG_IMPACT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "cronledger/status.h"
#include "ledger/names.h"
#include "store/store.h"

namespace cronledger::engine {

// One run key of a job in the compared window, and the ledger's run for it.
struct ImpactKey {
  std::string partition;
  std::string period;
  std::string business_date;  // YYYY-MM-DD
  // The first occurrence of the key in the window (a later one of a `date`
  // key is deduplicated).
  std::chrono::sys_seconds scheduled_at;
  std::optional<int64_t> run_id;  // the ledger's run of this key, any state
  std::optional<ledger::RunState> run_state;
  // The run is pending and scheduled in the window: it will run as planned
  // (in no_longer_expected: it is orphaned).
  bool planned = false;
};

// One occurrence (partition and instant) both definitions expect, under
// different keys: the work of that instant would be about another period.
// Only occurrences that create a run under either key (the first of their
// key) are listed; a `date` key's later ones are deduplicated anyway.
struct RekeyedOccurrence {
  std::string partition;
  std::chrono::sys_seconds scheduled_at;
  std::string from_period, from_business_date;  // the ledger's key
  std::string to_period, to_business_date;      // the configuration's key
  // The run planned for the old key at this very instant, if any.
  std::optional<int64_t> run_id;
  std::optional<ledger::RunState> run_state;
  bool planned = false;  // that run is pending: it will do the old key
};

// One setting of the versioned definition that differs (the keys of
// CanonicalDefinition); values as JSON texts.
struct SettingChange {
  std::string key;
  std::string from;  // JSON, "null" when absent
  std::string to;
};

enum class JobChange {
  kUnchanged,  // same definition and partitions as the ledger's current ones
  kChanged,
  kNew,      // configured, unknown to the ledger
  kRemoved,  // in the ledger, gone from the configuration
};
std::string_view Name(JobChange c);

struct JobImpact {
  std::string job;
  JobChange change = JobChange::kUnchanged;
  std::vector<SettingChange> settings;
  std::optional<std::chrono::sys_seconds> planned_through;
  // Where `serve` would record the new version: max(now, planned_through +
  // 1 s) (docs/ledger.md). Runs planned before it keep the old definition.
  std::optional<std::chrono::sys_seconds> effective_from;
  // The compared occurrences: scheduled in [window_from, window_to].
  std::chrono::sys_seconds window_from;
  std::chrono::sys_seconds window_to;
  std::vector<std::string> partitions_added;
  std::vector<std::string> partitions_removed;
  // The partitions come from a command, which the check does not run: the
  // ledger's current set is assumed (for a new job: one partition "*").
  bool partitions_from_command = false;

  // Keys the configuration expects in the window that the ledger does not
  // expect near it (a `date` key the ledger expects a day earlier or later
  // is not new: its run exists or will).
  std::vector<ImpactKey> newly_expected;
  // Keys the ledger expects in the window that the configuration does not.
  std::vector<ImpactKey> no_longer_expected;
  std::vector<RekeyedOccurrence> rekeyed;
  // Pending runs scheduled in the window that the change would orphan (their
  // key no longer expected) or re-key (their instant now meaning another
  // key). They would still run as planned.
  int orphaned_runs = 0;
  int rekeyed_runs = 0;
};

struct ConfigImpact {
  store::Instant now;
  std::vector<JobImpact> jobs;  // configured jobs in config order, then removed ones by name

  // Applying the configuration would change nothing: every job unchanged,
  // or removed with no run planned ahead.
  bool Unchanged() const;
  int OrphanedRuns() const;
  int RekeyedRuns() const;
};

struct ConfigImpactParams {
  store::Instant now;
  // The window of each job: from now to this long after the later of now
  // and its planned-through watermark.
  std::chrono::seconds horizon = std::chrono::days{7};
};

// Compares, per job, the run keys the ledger expects (its stored versions
// and partition history) with those it would expect if `config`'s
// definition and partitions took effect at `now`. Reads only.
Result<ConfigImpact> AnalyzeConfigImpact(const config::Config& config, store::Store& store,
                                         const ConfigImpactParams& p);

}  // namespace cronledger::engine

#endif  // CRONLEDGER_ENGINE_CONFIG_IMPACT_H_
