#include "engine/config_impact.h"

#include <algorithm>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "engine/expected_runs.h"
#include "engine/job_definition.h"
#include "store/definition_diff.h"

namespace cronledger::engine {
namespace {

using std::chrono::days;
using std::chrono::seconds;
using std::chrono::sys_seconds;

using KeyId = std::pair<std::string, std::string>;         // partition, period
using OccurrenceId = std::pair<std::string, sys_seconds>;  // partition, instant

// A key expected just outside the window still counts as expected: a
// schedule or timezone change moves an occurrence by hours, and a
// date_offset_days change by days, so a key can leave one end of the
// window while staying expected. Without this margin every such move would
// show as one key gone and one key new. Two days cover the hours; the
// spread of the offsets involved is added (Compare).
constexpr days kKeyMargin{2};

// A schedule that fires every second would make a week millions of keys:
// the window ends at the kMaxOccurrences-th occurrence of the latest
// definitions (a week of a minutely schedule fits).
constexpr int kMaxOccurrences = 7 * 24 * 60;

// What one set of versions and partition history expects around a window.
struct Expectation {
  std::map<KeyId, ImpactKey> keys;  // in the window, each at its first occurrence
  std::map<OccurrenceId, std::pair<std::string, std::string>> at;  // -> period, business date
  std::set<KeyId> near;                // in the window widened by the margin on both sides
  std::map<KeyId, sys_seconds> first;  // of `near`: the occurrence that creates the run
};

Status Expect(const std::vector<store::JobVersion>& versions,
              const std::vector<store::PartitionInterval>& history, sys_seconds from,
              sys_seconds to, seconds margin, ScheduleCache& cache, Expectation* out) {
  const auto record = [&](const ExpectedOccurrence& e) -> Status {
    const bool in_window = e.occurrence.utc >= from && e.occurrence.utc <= to;
    for (const auto& partition : e.partitions) {
      KeyId key{partition, e.period};
      out->near.insert(key);
      out->first.try_emplace(key, e.occurrence.utc);  // in time order: the first wins
      if (!in_window) continue;
      ImpactKey k;
      k.partition = partition;
      k.period = e.period;
      k.business_date = e.business_date;
      k.scheduled_at = e.occurrence.utc;
      out->keys.try_emplace(key, std::move(k));
      out->at.emplace(OccurrenceId{partition, e.occurrence.utc},
                      std::make_pair(e.period, e.business_date));
    }
    return Status::Ok();
  };
  return ForEachExpected(versions, history, from - margin - seconds{1}, to + margin, cache, record);
}

// The job's runs, loaded one business date at a time as keys ask for them.
class RunIndex {
 public:
  RunIndex(store::Store& store, std::string job) : store_(store), job_(std::move(job)) {}

  Result<const store::RunRecord*> Find(const std::string& partition, const std::string& period,
                                       const std::string& business_date) {
    auto day = dates_.find(business_date);
    if (day == dates_.end()) {
      store::RunQuery q;
      q.job = job_;
      q.business_date = business_date;
      q.limit = INT_MAX;
      auto runs = store_.RunList(q);
      if (!runs.ok()) return runs.status();
      std::map<KeyId, store::RunRecord> index;
      for (auto& r : *runs) index.emplace(KeyId{r.partition, r.period}, std::move(r));
      day = dates_.emplace(business_date, std::move(index)).first;
    }
    const auto it = day->second.find({partition, period});
    return it == day->second.end() ? nullptr : &it->second;
  }

 private:
  store::Store& store_;
  std::string job_;
  std::map<std::string, std::map<KeyId, store::RunRecord>> dates_;
};

bool IsPlanned(const store::RunRecord* run, sys_seconds window_from) {
  return run != nullptr && run->state == ledger::RunState::kPending &&
         run->scheduled_at >= window_from;
}

std::vector<SettingChange> DiffSettings(const std::string& before, const std::string& after) {
  std::vector<SettingChange> out;
  for (const auto& c : store::DiffDefinitions(before, after)) {
    out.push_back({c.key, c.before.dump(), c.after.dump()});
  }
  return out;
}

std::vector<std::string> ConfiguredPartitions(const config::JobConfig& job) {
  return job.partitions.empty() ? std::vector<std::string>{"default"} : job.partitions;
}

// The partition history as PartitionSync would leave it if `wanted` became
// the set at `t0`: members not wanted end at t0, wanted ones not active
// start at t0, changes recorded for after t0 give way to this one.
std::vector<store::PartitionInterval> HistoryWith(std::vector<store::PartitionInterval> history,
                                                  const std::string& job,
                                                  const std::set<std::string>& wanted,
                                                  sys_seconds t0) {
  std::vector<store::PartitionInterval> out;
  std::set<std::string> active;
  for (auto& i : history) {
    if (i.active_from >= t0) continue;
    if (!i.active_to || *i.active_to > t0) {
      if (wanted.contains(i.partition)) {
        i.active_to.reset();
        active.insert(i.partition);
      } else {
        i.active_to = t0;
      }
    }
    out.push_back(std::move(i));
  }
  for (const auto& p : wanted) {
    if (!active.contains(p)) out.push_back({job, p, t0, std::nullopt});
  }
  return out;
}

std::set<std::string> CurrentPartitions(const std::vector<store::PartitionInterval>& history) {
  std::set<std::string> out;
  for (const auto& i : history) {
    if (!i.active_to) out.insert(i.partition);
  }
  return out;
}

void SortKeys(std::vector<ImpactKey>& keys) {
  std::sort(keys.begin(), keys.end(), [](const ImpactKey& a, const ImpactKey& b) {
    return std::tie(a.scheduled_at, a.partition, a.period) <
           std::tie(b.scheduled_at, b.partition, b.period);
  });
}

Status Compare(const std::vector<store::JobVersion>& old_versions,
               const std::vector<store::PartitionInterval>& old_history,
               const std::vector<store::JobVersion>& new_versions,
               const std::vector<store::PartitionInterval>& new_history, RunIndex* runs,
               JobImpact* impact) {
  ScheduleCache cache;
  int min_offset = 0, max_offset = 0;
  for (const auto* versions : {&old_versions, &new_versions}) {
    for (const auto& v : *versions) {
      auto vs = cache.Get(v);
      if (!vs.ok()) return vs.status();
      const int offset = (*vs)->schedule.options().date_offset_days;
      min_offset = std::min(min_offset, offset);
      max_offset = std::max(max_offset, offset);
    }
  }
  seconds margin = kKeyMargin + days{max_offset - min_offset};
  // Ends the window early for a schedule that fires very often; the margin,
  // there for moves of hours or days, shrinks with it.
  for (const auto* versions : {&old_versions, &new_versions}) {
    if (versions->empty()) continue;
    auto vs = cache.Get(versions->back());
    if (!vs.ok()) return vs.status();
    const Schedule& schedule = (*vs)->schedule;
    int n = 0;
    for (auto occ = schedule.Next(impact->window_from - seconds{1});
         occ && occ->utc <= impact->window_to; occ = schedule.Next(occ->utc)) {
      if (++n == kMaxOccurrences) {
        impact->window_to = occ->utc;
        margin = std::min(margin, impact->window_to - impact->window_from);
        break;
      }
    }
  }
  Expectation before, after;
  for (auto [versions, history, out] : {std::tuple{&old_versions, &old_history, &before},
                                        std::tuple{&new_versions, &new_history, &after}}) {
    if (Status s =
            Expect(*versions, *history, impact->window_from, impact->window_to, margin, cache, out);
        !s.ok()) {
      return s;
    }
  }
  // The ledger's run of a key (null: none, or no ledger to ask).
  const auto find = [&](const std::string& partition, const std::string& period,
                        const std::string& business_date) -> Result<const store::RunRecord*> {
    if (runs == nullptr) return static_cast<const store::RunRecord*>(nullptr);
    return runs->Find(partition, period, business_date);
  };
  // The key with the run that holds it, if any. A run may hold a newly
  // expected key already (planned under an older version): the new
  // occurrence would then be deduplicated into it.
  const auto attach = [&](const ImpactKey& key) -> Result<ImpactKey> {
    ImpactKey k = key;
    auto run = find(k.partition, k.period, k.business_date);
    if (!run.ok()) return run.status();
    if (*run != nullptr) {
      k.run_id = (*run)->id;
      k.run_state = (*run)->state;
    }
    k.planned = IsPlanned(*run, impact->window_from);
    return k;
  };

  for (const auto& [id, key] : after.keys) {
    if (before.near.contains(id)) continue;
    auto k = attach(key);
    if (!k.ok()) return k.status();
    impact->newly_expected.push_back(std::move(*k));
  }
  for (const auto& [id, key] : before.keys) {
    if (after.near.contains(id)) continue;
    auto k = attach(key);
    if (!k.ok()) return k.status();
    if (k->planned) ++impact->orphaned_runs;
    impact->no_longer_expected.push_back(std::move(*k));
  }
  for (const auto& [occurrence, was] : before.at) {
    const auto now = after.at.find(occurrence);
    if (now == after.at.end() || now->second == was) continue;
    // Only an occurrence that creates a run under either key matters: the
    // later occurrences of a `date` key are deduplicated anyway, and would
    // list every minute of a minutely schedule.
    const auto creates = [&](const Expectation& e, const std::string& period) {
      const auto it = e.first.find({occurrence.first, period});
      return it != e.first.end() && it->second == occurrence.second;
    };
    if (!creates(before, was.first) && !creates(after, now->second.first)) continue;
    RekeyedOccurrence r;
    r.partition = occurrence.first;
    r.scheduled_at = occurrence.second;
    std::tie(r.from_period, r.from_business_date) = was;
    std::tie(r.to_period, r.to_business_date) = now->second;
    auto run = find(r.partition, r.from_period, r.from_business_date);
    if (!run.ok()) return run.status();
    // Only the run planned at this instant: a later occurrence of a `date`
    // key was deduplicated into an earlier run.
    if (*run != nullptr && (*run)->scheduled_at == r.scheduled_at) {
      r.run_id = (*run)->id;
      r.run_state = (*run)->state;
      r.planned = IsPlanned(*run, impact->window_from);
      if (r.planned) ++impact->rekeyed_runs;
    }
    impact->rekeyed.push_back(std::move(r));
  }
  SortKeys(impact->newly_expected);
  SortKeys(impact->no_longer_expected);
  std::sort(impact->rekeyed.begin(), impact->rekeyed.end(),
            [](const RekeyedOccurrence& a, const RekeyedOccurrence& b) {
              return std::tie(a.scheduled_at, a.partition) < std::tie(b.scheduled_at, b.partition);
            });
  return Status::Ok();
}

// A start_date change adds or drops keys before now, which the forward
// window does not reach: the dates between the two start dates (and from
// the new one for a new job) are compared too, and their keys join the
// report's lists.
Status ComparePast(const std::vector<store::JobVersion>& old_versions,
                   const std::vector<store::PartitionInterval>& old_history,
                   const std::vector<store::JobVersion>& new_versions,
                   const std::vector<store::PartitionInterval>& new_history, RunIndex* runs,
                   std::chrono::year_month_day from, JobImpact* impact) {
  JobImpact past;
  past.window_from = std::chrono::sys_days(from) - kKeyMargin;
  past.window_to = impact->window_from - seconds{1};
  if (past.window_from >= past.window_to) return Status::Ok();
  if (Status s = Compare(old_versions, old_history, new_versions, new_history, runs, &past);
      !s.ok()) {
    return s;
  }
  const auto merge = [](std::vector<ImpactKey>& into, std::vector<ImpactKey>& more) {
    std::set<KeyId> have;
    for (const auto& k : into) have.insert({k.partition, k.period});
    for (auto& k : more) {
      if (!have.contains({k.partition, k.period})) into.push_back(std::move(k));
    }
    SortKeys(into);
  };
  merge(impact->newly_expected, past.newly_expected);
  merge(impact->no_longer_expected, past.no_longer_expected);
  impact->orphaned_runs += past.orphaned_runs;
  impact->window_from = std::min(impact->window_from, past.window_from);
  return Status::Ok();
}

// The start date a stored definition holds, if any.
std::optional<std::chrono::year_month_day> StoredStartDate(const store::JobVersion& v) {
  auto vs = ScheduleFromDefinition(v.definition);
  return vs.ok() ? vs->start_date : std::nullopt;
}

Result<JobImpact> ConfiguredJobImpact(const config::JobConfig& job, store::Store& store,
                                      const ConfigImpactParams& p) {
  const sys_seconds t0 = std::chrono::ceil<seconds>(p.now);
  const std::string definition = CanonicalDefinition(job);
  const bool from_command = !job.partitions_command.empty();
  JobImpact impact;
  impact.job = job.name;
  impact.partitions_from_command = from_command;
  impact.window_from = t0;

  auto versions = store.JobVersionList(job.name);
  if (!versions.ok() && versions.status().code() != StatusCode::kNotFound) {
    return versions.status();
  }
  if (!versions.ok() || versions->empty()) {
    // Everything is new: the keys of the definition from now on.
    impact.change = JobChange::kNew;
    impact.effective_from = t0;
    impact.window_to = t0 + p.horizon;
    const std::vector<std::string> partitions =
        from_command ? std::vector<std::string>{"*"} : ConfiguredPartitions(job);
    if (!from_command) impact.partitions_added = partitions;
    const std::vector<store::JobVersion> none;
    const std::vector<store::JobVersion> added = {{job.name, 1, t0, definition}};
    const auto history =
        HistoryWith({}, job.name, std::set<std::string>(partitions.begin(), partitions.end()), t0);
    if (Status s = Compare(none, {}, added, history, nullptr, &impact); !s.ok()) return s;
    if (job.start_date) {
      if (Status s = ComparePast(none, {}, added, history, nullptr, *job.start_date, &impact);
          !s.ok()) {
        return s;
      }
    }
    return impact;
  }

  auto record = store.JobGet(job.name);
  if (!record.ok()) return record.status();
  auto history = store.PartitionHistory(job.name);
  if (!history.ok()) return history.status();
  impact.planned_through = record->planned_through;
  const sys_seconds watermark = record->planned_through.value_or(sys_seconds::min());
  impact.window_to = std::max(t0, watermark) + p.horizon;

  const std::set<std::string> current = CurrentPartitions(*history);
  std::set<std::string> wanted = current;
  if (!from_command) {
    const auto configured = ConfiguredPartitions(job);
    wanted = std::set<std::string>(configured.begin(), configured.end());
    std::set_difference(wanted.begin(), wanted.end(), current.begin(), current.end(),
                        std::back_inserter(impact.partitions_added));
    std::set_difference(current.begin(), current.end(), wanted.begin(), wanted.end(),
                        std::back_inserter(impact.partitions_removed));
  }
  impact.settings = DiffSettings(versions->back().definition, definition);
  if (impact.settings.empty() && wanted == current) {
    impact.change = JobChange::kUnchanged;
    return impact;
  }
  impact.change = JobChange::kChanged;
  impact.effective_from =
      record->planned_through ? std::max(t0, *record->planned_through + seconds{1}) : t0;

  // The versions as they would be with the configuration in force from t0:
  // versions recorded for later give way to it. Its number is new, so the
  // shared schedule cache keeps the two apart.
  std::vector<store::JobVersion> with;
  int last = 0;
  for (const auto& v : *versions) {
    last = std::max(last, v.version);
    if (v.effective_from < t0) with.push_back(v);
  }
  with.push_back({job.name, last + 1, t0, definition});
  RunIndex runs(store, job.name);
  const auto new_history = HistoryWith(*history, job.name, wanted, t0);
  if (Status s = Compare(*versions, *history, with, new_history, &runs, &impact); !s.ok()) {
    return s;
  }
  const auto old_start = StoredStartDate(versions->back());
  if (old_start != job.start_date) {
    // Without a start date the expected set begins when the job was first
    // recorded: the earlier of the two beginnings bounds the dates compared.
    const std::chrono::year_month_day recorded{
        std::chrono::floor<days>(versions->front().effective_from)};
    const auto earliest = [&](const std::optional<std::chrono::year_month_day>& d) {
      return d ? std::min(*d, recorded) : recorded;
    };
    const auto from = std::min(earliest(old_start), earliest(job.start_date));
    if (Status s = ComparePast(*versions, *history, with, new_history, &runs, from, &impact);
        !s.ok()) {
      return s;
    }
  }
  return impact;
}

// A job the configuration no longer has: serve leaves its planned runs
// pending (never released), so each one in the future is orphaned.
Result<JobImpact> RemovedJobImpact(const store::JobRecord& record, store::Store& store,
                                   const ConfigImpactParams& p) {
  const sys_seconds t0 = std::chrono::ceil<seconds>(p.now);
  JobImpact impact;
  impact.job = record.name;
  impact.change = JobChange::kRemoved;
  impact.planned_through = record.planned_through;
  impact.window_from = t0;
  impact.window_to = std::max(t0, record.planned_through.value_or(t0)) + p.horizon;
  store::RunQuery q;
  q.job = record.name;
  q.state = ledger::RunState::kPending;
  q.limit = INT_MAX;
  auto pending = store.RunList(q);
  if (!pending.ok()) return pending.status();
  for (const auto& run : *pending) {
    if (run.scheduled_at < t0) continue;
    impact.no_longer_expected.push_back(
        {run.partition, run.period, run.business_date, run.scheduled_at, run.id, run.state, true});
    ++impact.orphaned_runs;
  }
  SortKeys(impact.no_longer_expected);
  return impact;
}

}  // namespace

std::string_view Name(JobChange c) {
  switch (c) {
    case JobChange::kUnchanged:
      return "unchanged";
    case JobChange::kChanged:
      return "changed";
    case JobChange::kNew:
      return "new";
    case JobChange::kRemoved:
      return "removed";
  }
  return "changed";
}

bool ConfigImpact::Unchanged() const {
  // A job removed long ago stays in the ledger; with nothing planned ahead,
  // applying the configuration changes nothing for it.
  return std::all_of(jobs.begin(), jobs.end(), [](const JobImpact& j) {
    return j.change == JobChange::kUnchanged ||
           (j.change == JobChange::kRemoved && j.orphaned_runs == 0);
  });
}

int ConfigImpact::OrphanedRuns() const {
  int n = 0;
  for (const auto& j : jobs) n += j.orphaned_runs;
  return n;
}

int ConfigImpact::RekeyedRuns() const {
  int n = 0;
  for (const auto& j : jobs) n += j.rekeyed_runs;
  return n;
}

Result<ConfigImpact> AnalyzeConfigImpact(const config::Config& config, store::Store& store,
                                         const ConfigImpactParams& p) {
  ConfigImpact out;
  out.now = p.now;
  for (const auto& job : config.jobs) {
    auto impact = ConfiguredJobImpact(job, store, p);
    if (!impact.ok()) return impact.status();
    out.jobs.push_back(std::move(*impact));
  }
  auto ledger_jobs = store.JobList();
  if (!ledger_jobs.ok()) return ledger_jobs.status();
  std::sort(ledger_jobs->begin(), ledger_jobs->end(),
            [](const store::JobRecord& a, const store::JobRecord& b) { return a.name < b.name; });
  for (const auto& record : *ledger_jobs) {
    if (config.FindJob(record.name) != nullptr) continue;
    auto impact = RemovedJobImpact(record, store, p);
    if (!impact.ok()) return impact.status();
    out.jobs.push_back(std::move(*impact));
  }
  return out;
}

}  // namespace cronledger::engine
