#include "ops/job_history.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ops/json_shapes.h"
#include "ops/ledger_json.h"
#include "cronledger/schedule.h"
#include "engine/gap_scanner.h"
#include "ledger/names.h"

namespace cronledger::ops {
namespace {

using nlohmann::ordered_json;
using std::chrono::sys_days;

struct Key {
  engine::ExpectedKey key;  // `run` is not kept: the fields below are
  std::optional<store::RunRecord> run;
};

// The bucket of the status counts a key falls in (docs/api.md, history).
std::string Bucket(const Key& k) {
  if (!k.run) return "missing";  // never planned
  switch (k.run->state) {
    case ledger::RunState::kSucceeded:
      return "succeeded";
    case ledger::RunState::kFailed:
      return "failed";
    case ledger::RunState::kUnknown:
      return "unknown";
    case ledger::RunState::kPending:
    case ledger::RunState::kRunning:
      return "in_progress";
    case ledger::RunState::kCancelled:
      return "waived";
    case ledger::RunState::kAwaitingApproval:
      return "missing";
    case ledger::RunState::kSkipped:
      return k.run->reason && ledger::IsWaived(*k.run->reason) ? "waived" : "missing";
  }
  return "missing";
}

}  // namespace

Result<ordered_json> JobHistoryJson(store::Store& store, const config::JobConfig& job,
                                    store::Instant now, int days) {
  const sys_days today = std::chrono::floor<std::chrono::days>(now);
  engine::GapScanParams p;
  // Wide enough for any date offset; narrowed to `days` below.
  p.from = std::chrono::year_month_day(today - std::chrono::days(days + 2));
  p.to = std::chrono::year_month_day(today + std::chrono::days(2));
  p.now = now;
  p.include_waived = true;
  std::vector<Key> keys;
  engine::GapScanner scanner(store);
  Status s = scanner.ForEachKey(job, p, [&](const engine::ExpectedKey& k) {
    Key copy{k, std::nullopt};
    if (k.run != nullptr) copy.run = *k.run;
    copy.key.run = nullptr;
    keys.push_back(std::move(copy));
    return Status::Ok();
  });
  if (!s.ok()) return s;

  std::string to = FormatDate(std::chrono::year_month_day(today));
  // The latest due key's date, unless there is none: today.
  std::string latest_due;
  for (const Key& k : keys) {
    if (k.key.due && k.key.business_date > latest_due) latest_due = k.key.business_date;
  }
  if (!latest_due.empty()) to = latest_due;
  const auto to_date = ParseBusinessDate(to);
  const std::string from =
      FormatDate(std::chrono::year_month_day(sys_days(*to_date) - std::chrono::days(days - 1)));

  ordered_json out;
  out["job"] = job.name;
  out["from"] = from;
  out["to"] = to;
  out["days"] = days;
  std::set<std::string> partitions;
  ordered_json list = ordered_json::array();
  struct Day {
    std::optional<std::chrono::sys_seconds> scheduled;
    std::optional<store::Instant> finished;
    std::map<std::string, int> counts;
    int expected = 0;
  };
  std::map<std::string, Day> dates;
  bool truncated = false;
  for (const Key& k : keys) {
    if (!k.key.due || k.key.business_date < from || k.key.business_date > to) continue;
    if (static_cast<int>(list.size()) >= kMaxHistoryKeys) {
      truncated = true;
      break;
    }
    partitions.insert(k.key.partition);
    ordered_json item;
    item["partition"] = k.key.partition;
    item["business_date"] = k.key.business_date;
    item["scheduled_at"] = FormatUtc(k.key.scheduled_at);
    item["run_id"] = k.run ? ordered_json(k.run->id) : ordered_json(nullptr);
    item["state"] = k.run ? ordered_json(std::string(ledger::Name(k.run->state)))
                          : ordered_json(nullptr);
    item["reason"] = k.run && k.run->reason
                         ? ordered_json(std::string(ledger::Name(*k.run->reason)))
                         : ordered_json(nullptr);
    item["cause"] = StringOrNull(k.key.cause);
    item["waived"] = k.key.waived;
    item["attempts"] = k.run ? k.run->attempts : 0;
    ordered_json started = nullptr, finished = nullptr, duration = nullptr;
    Day& day = dates[k.key.business_date];
    if (!day.scheduled || k.key.scheduled_at < *day.scheduled) day.scheduled = k.key.scheduled_at;
    if (k.run && k.run->attempts > 0) {
      auto attempts = store.AttemptList(k.run->id);
      if (!attempts.ok()) return attempts.status();
      if (!attempts->empty()) {
        const store::AttemptRecord& last = attempts->back();
        started = FormatInstant(last.started_at);
        if (last.ended_at) {
          finished = FormatInstant(*last.ended_at);
          duration = std::chrono::duration_cast<std::chrono::seconds>(*last.ended_at -
                                                                      last.started_at)
                         .count();
          if (k.run->state == ledger::RunState::kSucceeded &&
              (!day.finished || *last.ended_at > *day.finished)) {
            day.finished = *last.ended_at;
          }
        }
      }
    }
    item["started_at"] = started;
    item["finished_at"] = finished;
    item["duration_seconds"] = duration;
    ++day.counts[Bucket(k)];
    ++day.expected;
    list.push_back(std::move(item));
  }
  out["truncated"] = truncated;
  out["partitions"] = partitions;
  out["keys"] = std::move(list);
  ordered_json date_list = ordered_json::array();
  for (const auto& [date, day] : dates) {
    const auto count = [&](const char* b) {
      const auto it = day.counts.find(b);
      return it == day.counts.end() ? 0 : it->second;
    };
    ordered_json d;
    d["business_date"] = date;
    d["scheduled_at"] = FormatUtc(*day.scheduled);
    d["finished_at"] = day.finished ? ordered_json(FormatInstant(*day.finished))
                                    : ordered_json(nullptr);
    d["complete"] = count("succeeded") + count("waived") == day.expected;
    d["expected"] = day.expected;
    for (const char* b : {"succeeded", "failed", "unknown", "waived", "in_progress", "missing"}) {
      d[b] = count(b);
    }
    date_list.push_back(std::move(d));
  }
  out["dates"] = std::move(date_list);
  return out;
}

}  // namespace cronledger::ops
