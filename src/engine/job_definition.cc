#include "engine/job_definition.h"

#include <fmt/format.h>

#include <cstdio>
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
  // Only when set, so that a job without one keeps the definition it had.
  if (job.start_date) d["start_date"] = FormatDate(*job.start_date);
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
  VersionedSchedule out{std::move(*schedule), key};
  if (d.contains("start_date")) {
    const std::string text = d["start_date"].is_string() ? d["start_date"].get<std::string>() : "";
    int y = 0;
    unsigned m = 0, day = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%4d-%2u-%2u%c", &y, &m, &day, &tail) != 3) {
      return Internal(
          fmt::format("stored job definition has an unreadable start_date: {}", definition));
    }
    out.start_date = std::chrono::year_month_day{std::chrono::year{y}, std::chrono::month{m},
                                                 std::chrono::day{day}};
    if (!out.start_date->ok()) {
      return Internal(
          fmt::format("stored job definition has an unreadable start_date: {}", definition));
    }
  }
  return out;
}

}  // namespace cronledger::engine
