#include "cli/next_command.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cronledger/schedule.h"

namespace cronledger::cli {
namespace {

std::string HourMinute(std::chrono::local_seconds t) {
  const auto sod = (t - std::chrono::floor<std::chrono::days>(t)).count();
  return fmt::format("{:02}:{:02}", sod / 3600, sod / 60 % 60);
}

std::string DstText(const Occurrence& occ) {
  switch (occ.dst) {
    case DstNote::kNone: return "";
    case DstNote::kShifted:
      return fmt::format("DST: {} does not exist that day, shifted to {}",
                         HourMinute(occ.nominal), HourMinute(occ.local()));
    case DstNote::kRepeated:
      return fmt::format("DST: the second {} (clocks went back)", HourMinute(occ.local()));
  }
  return "";
}

const char* DstJson(DstNote note) {
  switch (note) {
    case DstNote::kNone: return nullptr;
    case DstNote::kShifted: return "shifted";
    case DstNote::kRepeated: return "repeated";
  }
  return nullptr;
}

}  // namespace

int RunNext(const NextArgs& args, Clock& clock, std::ostream& out, std::ostream& err) {
  ScheduleOptions options;
  options.date_offset_days = args.offset_days;
  options.dst_gap = args.dst_gap == "skip" ? DstGapPolicy::kSkip : DstGapPolicy::kShift;
  if (args.dst_repeat) {
    if (*args.dst_repeat == "first") options.dst_repeat = DstRepeatPolicy::kFirst;
    if (*args.dst_repeat == "last") options.dst_repeat = DstRepeatPolicy::kLast;
    if (*args.dst_repeat == "both") options.dst_repeat = DstRepeatPolicy::kBoth;
  }

  std::chrono::sys_seconds from;
  if (args.from) {
    auto parsed = ParseRfc3339(*args.from);
    if (!parsed.ok()) {
      err << "cronledger next: --from: " << parsed.status().message() << "\n";
      return kExitUsage;
    }
    from = *parsed;
  } else {
    from = std::chrono::floor<std::chrono::seconds>(clock.Now());
  }

  auto schedule = Schedule::Create(args.expression, args.timezone, options);
  if (!schedule.ok()) {
    err << "cronledger next: " << schedule.status().message() << "\n";
    return kExitUsage;
  }

  std::vector<Occurrence> occurrences;
  std::optional<Occurrence> occ = schedule->Next(from);
  for (int i = 0; i < args.count && occ; ++i) {
    occurrences.push_back(*occ);
    occ = schedule->Next(occ->utc);
  }

  if (args.json) {
    auto list = nlohmann::ordered_json::array();
    for (const Occurrence& o : occurrences) {
      nlohmann::ordered_json item;
      item["utc"] = FormatUtc(o.utc);
      item["local"] = FormatLocal(o);
      item["business_date"] = FormatDate(schedule->BusinessDate(o));
      const char* dst = DstJson(o.dst);
      item["dst"] = dst ? nlohmann::ordered_json(dst) : nlohmann::ordered_json(nullptr);
      list.push_back(std::move(item));
    }
    out << list.dump(2) << "\n";
    return kExitOk;
  }

  out << fmt::format("{:<22}{:<27}{:<15}{}\n", "UTC", "LOCAL (" + args.timezone + ")",
                     "BUSINESS DATE", "NOTE");
  for (const Occurrence& o : occurrences) {
    std::string line = fmt::format("{:<22}{:<27}{:<15}{}", FormatUtc(o.utc), FormatLocal(o),
                                   FormatDate(schedule->BusinessDate(o)), DstText(o));
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  if (occurrences.size() < static_cast<std::size_t>(args.count)) {
    out << fmt::format("(no further occurrences before the year 10000)\n");
  }
  return kExitOk;
}

}  // namespace cronledger::cli
