#include "schedule/time_zone.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

#include <date/tz.h>
#include <fmt/format.h>

#include "common/text.h"
#include "schedule/posix_rule.h"

namespace cronledger::schedule {
namespace {

constexpr const char* kZoneDir = "/usr/share/zoneinfo";

// The POSIX TZ string at the end of a TZif (v2+) file, e.g.
// "EST5EDT,M3.2.0,M11.1.0"; empty when absent.
std::string ReadFooter(const std::string& zone_name) {
  std::ifstream in(std::string(kZoneDir) + "/" + zone_name, std::ios::binary);
  if (!in) return {};
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < 2 || data.back() != '\n') return {};
  const std::size_t start = data.rfind('\n', data.size() - 2);
  if (start == std::string::npos) return {};
  std::string footer = data.substr(start + 1, data.size() - start - 2);
  for (char c : footer) {
    if (!std::isprint(static_cast<unsigned char>(c))) return {};
  }
  return footer;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

struct TimeZone::Rule {
  std::shared_ptr<const PosixRule> posix;
};

TimeZone::TimeZone(std::string name, const date::time_zone* zone,
                   std::shared_ptr<const Rule> rule)
    : name_(std::move(name)), zone_(zone), rule_(std::move(rule)) {}
TimeZone::~TimeZone() = default;
TimeZone::TimeZone(const TimeZone&) = default;
TimeZone& TimeZone::operator=(const TimeZone&) = default;
TimeZone::TimeZone(TimeZone&&) noexcept = default;
TimeZone& TimeZone::operator=(TimeZone&&) noexcept = default;

Result<TimeZone> TimeZone::Load(std::string_view name) {
  const date::time_zone* zone = nullptr;
  // Reject path tricks before the name reaches the file system.
  const bool plausible = !name.empty() && name.size() <= 64 && name.front() != '/' &&
                         name.find("..") == std::string_view::npos;
  if (plausible) {
    try {
      zone = date::locate_zone(name);
    } catch (const std::exception&) {
      zone = nullptr;
    }
  }
  if (zone == nullptr) {
    std::string message = fmt::format("unknown timezone \"{}\"", name);
    const auto suggestions = SuggestZones(name);
    if (!suggestions.empty()) {
      message += "; did you mean ";
      for (std::size_t i = 0; i < suggestions.size(); ++i) {
        if (i > 0) message += i + 1 == suggestions.size() ? " or " : ", ";
        message += "\"" + suggestions[i] + "\"";
      }
      message += "?";
    }
    return InvalidArgument(message);
  }
  std::shared_ptr<const Rule> rule;
  const std::string footer = ReadFooter(std::string(name));
  if (footer.find(',') != std::string::npos) {  // only rules with DST matter
    // An unreadable rule leaves date/tz's last offset in force.
    if (auto posix = PosixRule::Parse(footer)) {
      rule = std::make_shared<const Rule>(Rule{std::move(posix)});
    }
  }
  return TimeZone(std::string(name), zone, std::move(rule));
}

TimeZone::Segment TimeZone::SegmentAt(std::chrono::sys_seconds t) const {
  const date::sys_info info = zone_->get_info(date::sys_seconds{t.time_since_epoch()});
  Segment seg{std::chrono::sys_seconds{info.begin.time_since_epoch()},
              std::chrono::sys_seconds{info.end.time_since_epoch()}, info.offset};
  if (rule_ && info.end.time_since_epoch() >= date::years{8000}) {
    // Past the file's last explicit transition: the POSIX rule governs.
    const PosixRule::Span r = rule_->posix->At(t.time_since_epoch().count());
    seg.begin = std::max(seg.begin, std::chrono::sys_seconds{std::chrono::seconds{r.begin}});
    seg.end = std::chrono::sys_seconds{std::chrono::seconds{r.end}};
    seg.offset = std::chrono::seconds{r.offset};
  }
  return seg;
}

std::vector<std::string> SuggestZones(std::string_view name, std::size_t max) {
  std::vector<std::string> names;
  try {
    const auto& db = date::get_tzdb();
    for (const auto& z : db.zones) names.emplace_back(z.name());
  } catch (const std::exception&) {
    return {};
  }
  const std::string wanted = Lower(name);
  // Far-fetched suggestions help nobody.
  const std::size_t threshold = std::max<std::size_t>(2, wanted.size() / 3);
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const auto& n : names) {
    // The distance is at least the difference in length, and a city is
    // shorter than its zone's name: a zone much shorter than the name given
    // cannot be suggested. Skipping it keeps a long name (a config's
    // garbage, 4 KB of it) from costing seconds of edit distances.
    if (wanted.size() > n.size() + threshold) continue;
    const std::string lower = Lower(n);
    std::size_t score = EditDistance(wanted, lower);
    const std::size_t slash = lower.rfind('/');
    if (slash != std::string::npos) {
      // "Seoul" or "new york" for "Asia/Seoul", "America/New_York".
      std::string city = lower.substr(slash + 1);
      std::replace(city.begin(), city.end(), '_', ' ');
      std::string wanted_city = wanted;
      std::replace(wanted_city.begin(), wanted_city.end(), '_', ' ');
      score = std::min(score, EditDistance(wanted_city, city));
    }
    scored.emplace_back(score, n);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (const auto& [score, n] : scored) {
    if (out.size() >= max || score > threshold) break;
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::string ReadTzdataVersion() {
  std::ifstream in(std::string(kZoneDir) + "/tzdata.zi");
  std::string line;
  if (in && std::getline(in, line)) {
    constexpr std::string_view kPrefix = "# version ";
    if (line.rfind(kPrefix, 0) == 0) return line.substr(kPrefix.size());
  }
  return "unknown";
}

}  // namespace cronledger::schedule
