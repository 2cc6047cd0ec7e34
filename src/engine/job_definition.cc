#include "engine/job_definition.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cronledger::engine {
namespace {

const char* GapName(DstGapPolicy p) { return p == DstGapPolicy::kSkip ? "skip" : "shift"; }

const char* RepeatName(DstRepeatPolicy p) {
  switch (p) {
    case DstRepeatPolicy::kFirst: return "first";
    case DstRepeatPolicy::kLast: return "last";
    case DstRepeatPolicy::kBoth: return "both";
  }
  return "first";
}

}  // namespace

std::string CanonicalDefinition(const config::JobConfig& job) {
  nlohmann::json d;  // std::map-backed: keys come out sorted
  d["schedule"] = job.schedule;
  d["timezone"] = job.timezone;
  d["date_offset_days"] = job.date_offset_days;
  d["dst_gap"] = GapName(job.dst_gap);
  d["dst_repeat"] = job.dst_repeat ? nlohmann::json(RepeatName(*job.dst_repeat)) : nlohmann::json();
  // The key in force, so that a schedule change that flips the default key
  // shows as a key change too.
  auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
  const PeriodKey key = job.key ? *job.key
                                : (schedule.ok() ? schedule->DefaultKey() : PeriodKey::kSlot);
  d["key"] = key == PeriodKey::kDate ? "date" : "slot";
  if (!job.partitions_command.empty()) {
    d["partitions_command"] = job.partitions_command;
  } else if (!job.partitions.empty()) {
    d["partitions"] = job.partitions;
  } else {
    d["partitions"] = std::vector<std::string>{"default"};
  }
  return d.dump();
}

Result<VersionedSchedule> ScheduleFromDefinition(const std::string& definition) {
  const auto d = nlohmann::json::parse(definition, nullptr, false);
  if (!d.is_object() || !d.contains("schedule") || !d.contains("timezone")) {
    return Internal(fmt::format("stored job definition is not readable: {}", definition));
  }
  ScheduleOptions o;
  o.date_offset_days = d.value("date_offset_days", 0);
  o.dst_gap = d.value("dst_gap", "shift") == "skip" ? DstGapPolicy::kSkip : DstGapPolicy::kShift;
  if (d.contains("dst_repeat") && d["dst_repeat"].is_string()) {
    const std::string r = d["dst_repeat"];
    o.dst_repeat = r == "last" ? DstRepeatPolicy::kLast
                   : r == "both" ? DstRepeatPolicy::kBoth
                                 : DstRepeatPolicy::kFirst;
  }
  auto schedule = Schedule::Create(d["schedule"].get<std::string>(),
                                   d["timezone"].get<std::string>(), o);
  if (!schedule.ok()) return schedule.status();
  const PeriodKey key = d.value("key", "slot") == "date" ? PeriodKey::kDate : PeriodKey::kSlot;
  return VersionedSchedule{std::move(*schedule), key};
}

}  // namespace cronledger::engine
