#include "engine/alerter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "cronledger/schedule.h"
#include "engine/attempt.h"
#include "engine/closed_dates.h"
#include "engine/status_report.h"
#include "ledger/names.h"

namespace cronledger::engine {
namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

// Runs read per page when listing a job's failed or unknown runs.
constexpr int kRunPage = 500;

// "2h5m", "45s": for people.
std::string Human(int64_t secs) {
  if (secs <= 0) return "0s";
  std::string out;
  const int64_t d = secs / 86400, h = secs % 86400 / 3600, m = secs % 3600 / 60, s = secs % 60;
  if (d > 0) out += fmt::format("{}d", d);
  if (h > 0) out += fmt::format("{}h", h);
  if (m > 0) out += fmt::format("{}m", m);
  if (s > 0 && d == 0) out += fmt::format("{}s", s);
  return out.empty() ? "0s" : out;
}

sys_seconds ToSeconds(Clock::TimePoint t) { return std::chrono::floor<seconds>(t); }

bool IsKind(const std::string& id, std::string_view alert) {
  return id == alert || (id.size() > alert.size() && id.compare(0, alert.size(), alert) == 0 &&
                         id[alert.size()] == '/');
}

}  // namespace

Alerter::Alerter(const config::Config& config, store::Store& store, AlertDelivery& delivery,
                 AlerterOptions options)
    : config_(config),
      store_(store),
      delivery_(delivery),
      options_(options),
      role_(store, "alerter", options.node, options.every) {}

std::vector<std::string> Alerter::Firing(std::string_view job) const {
  std::vector<std::string> out;
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return out;
  for (const auto& [id, c] : it->second.firing) out.push_back(id);
  return out;
}

Status Alerter::RunOnce(Clock::TimePoint now, AlerterStats* stats) {
  if (now < next_at_) return Status::Ok();
  next_at_ = now + options_.every;
  const bool scan_missing = now >= next_missing_at_;
  if (scan_missing) next_missing_at_ = now + options_.missing_every;

  bool any = false;
  for (const auto& job : config_.jobs) any = any || job.alert.HasTargets();
  if (!any) return Status::Ok();
  auto held = role_.Hold(now);
  if (!held.ok()) return held.status();  // NodeRole logged it
  if (!*held) {
    // What the alerting node says meanwhile is in the events: read again
    // when this node alerts next.
    jobs_.clear();
    return Status::Ok();
  }
  // Lag comes from the status report, as `cronledger status` and
  // cronledger_lag_seconds compute it.
  auto report = BuildStatus(config_, store_, now);
  if (!report.ok()) {
    spdlog::error("alerts: cannot read the jobs' status: {}", report.status().ToString());
    return report.status();
  }
  Status first;
  for (std::size_t i = 0; i < config_.jobs.size(); ++i) {
    const config::JobConfig& job = config_.jobs[i];
    if (!job.alert.HasTargets()) continue;
    const int64_t lag = i < report->jobs.size() ? report->jobs[i].lag_seconds : 0;
    Status s = EvaluateJob(job, lag, scan_missing, now, jobs_[job.name], stats);
    if (!s.ok()) {
      spdlog::error("alerts: job {}: {}", job.name, s.ToString());
      if (first.ok()) first = s;
    }
  }
  return first;
}

Status Alerter::Seed(const config::JobConfig& job, JobState& state) {
  // What was already said, in the order it was said.
  std::vector<store::EventRecord> events;
  for (std::string_view type : {ledger::event::kAlertSent, ledger::event::kAlertResolved}) {
    store::EventQuery q;
    q.job = job.name;
    q.type = std::string(type);
    q.limit = 1000000;
    auto found = store_.EventList(q);
    if (!found.ok()) return found.status();
    events.insert(events.end(), found->begin(), found->end());
  }
  std::sort(events.begin(), events.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  for (const auto& e : events) {
    const auto d = nlohmann::json::parse(e.details, nullptr, false);
    if (!d.is_object() || !d.contains("condition") || !d["condition"].is_string()) continue;
    const std::string id = d["condition"].get<std::string>();
    if (e.type == ledger::event::kAlertResolved) {
      state.firing.erase(id);
      continue;
    }
    Condition c;
    c.alert = d.value("alert", "");
    c.business_date = d.value("business_date", "");
    c.run_id = e.run_id;
    c.run_key = e.run_key;
    if (d.contains("details")) c.details = d["details"].dump();
    c.summary = e.reason;
    if (d.contains("members") && d["members"].is_array()) {
      for (const auto& m : d["members"]) {
        if (m.is_string()) c.members.push_back(m.get<std::string>());
      }
    } else if (IsKind(id, alert::kRunFailed) || IsKind(id, alert::kRunUnknown)) {
      c.members = {id};  // a notice of one run, recorded before groups
    }
    state.firing[id] = std::move(c);
  }
  state.seeded = true;
  if (!state.firing.empty()) {
    spdlog::info("alerts: job {}: {} condition(s) still firing from before", job.name,
                 state.firing.size());
  }
  return Status::Ok();
}

Status Alerter::EvaluateJob(const config::JobConfig& job, int64_t lag_seconds, bool scan_missing,
                            Clock::TimePoint now, JobState& state, AlerterStats* stats) {
  if (!state.seeded) {
    if (Status s = Seed(job, state); !s.ok()) return s;
  }
  // The conditions holding now, of the kinds looked at in this pass. All
  // are gathered before anything is compared, so that an error leaves the
  // state as it was.
  std::map<std::string, Condition> holding;
  std::vector<std::string_view> kinds = {alert::kLag, alert::kRunFailed, alert::kRunUnknown};

  const int64_t max_lag = job.alert.max_lag.count();
  if (lag_seconds > max_lag) {
    const sys_seconds oldest = ToSeconds(now) - seconds(lag_seconds);
    Condition c;
    c.alert = alert::kLag;
    auto schedule = Schedule::Create(job.schedule, job.timezone, job.ScheduleOptionsFor());
    if (schedule.ok()) {
      if (auto occ = PreviousOccurrence(*schedule, oldest)) {
        c.business_date = FormatDate(schedule->BusinessDate(*occ));
      }
    }
    c.details = nlohmann::json{{"lag_seconds", lag_seconds},
                               {"max_lag_seconds", max_lag},
                               {"oldest_open_scheduled_at", FormatUtc(oldest)}}
                    .dump();
    c.summary = fmt::format(
        "job {} is {} behind (alert.max_lag {}): its oldest due run key that is neither "
        "succeeded nor waived was scheduled at {}",
        job.name, Human(lag_seconds), Human(max_lag), FormatUtc(oldest));
    holding.emplace(std::string(alert::kLag), std::move(c));
  }

  // The run conditions some firing notice speaks for.
  std::set<std::string> notified;
  for (const auto& [id, c] : state.firing) notified.insert(c.members.begin(), c.members.end());
  std::map<std::string, Condition> runs_holding;
  const sys_seconds horizon_start = ToSeconds(now) - job.backfill.horizon;
  for (const ledger::RunState run_state : {ledger::RunState::kFailed, ledger::RunState::kUnknown}) {
    const bool failed = run_state == ledger::RunState::kFailed;
    store::RunQuery q;
    q.job = job.name;
    q.state = run_state;
    q.limit = kRunPage;
    for (;;) {
      auto runs = store_.RunList(q);
      if (!runs.ok()) return runs.status();
      for (const auto& run : *runs) {
        const std::string_view name = failed ? alert::kRunFailed : alert::kRunUnknown;
        std::string id = fmt::format("{}/{}/{}", name, run.id, run.attempts);
        // Runs older than the horizon are nobody's news, unless they fired
        // before: then they still resolve when they leave the state.
        if (run.scheduled_at < horizon_start && !notified.contains(id)) continue;
        Condition c;
        c.alert = name;
        c.business_date = run.business_date;
        c.run_id = run.id;
        c.run_key = run.RunKey();
        c.details = nlohmann::json{{"run_id", run.id},
                                   {"run_key", run.RunKey()},
                                   {"partition", run.partition},
                                   {"period", run.period},
                                   {"state", ledger::Name(run.state)},
                                   {"attempts", run.attempts},
                                   {"scheduled_at", FormatUtc(run.scheduled_at)}}
                        .dump();
        c.summary = failed ? fmt::format("run {} failed after {} attempt(s) (a dead letter: "
                                         "cronledger retry or rerun it once fixed)",
                                         run.RunKey(), run.attempts)
                           : fmt::format("run {} is unknown: its end is uncertain and it waits "
                                         "for an operator (cronledger resolve)",
                                         run.RunKey());
        runs_holding.emplace(std::move(id), std::move(c));
      }
      if (static_cast<int>(runs->size()) < q.limit) break;
      q.before_id = runs->back().id;
    }
  }

  if (scan_missing) {
    kinds.push_back(alert::kMissingRuns);
    auto by_date = MissingByClosedDate(job, store_, now, options_.max_run_keys);
    if (!by_date.ok()) return by_date.status();
    for (const auto& [date, m] : *by_date) {
      Condition c;
      c.alert = alert::kMissingRuns;
      c.business_date = date;
      c.details =
          nlohmann::json{{"missing", m.missing}, {"causes", m.causes}, {"run_keys", m.run_keys}}
              .dump();
      std::string causes;
      for (const auto& [cause, n] : m.causes) {
        causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", cause, n);
      }
      c.summary = fmt::format("{} run key(s) of job {} for the closed business date {} are "
                              "missing ({}){}{}",
                              m.missing, job.name, date, causes, m.run_keys.empty() ? "" : ": ",
                              fmt::join(m.run_keys, ", "));
      holding.emplace(fmt::format("{}/{}", alert::kMissingRuns, date), std::move(c));
    }
  }

  // Resolved: firing conditions of the kinds looked at that hold no more.
  for (auto it = state.firing.begin(); it != state.firing.end();) {
    const std::string& id = it->first;
    const bool looked_at =
        std::any_of(kinds.begin(), kinds.end(), [&](std::string_view k) { return IsKind(id, k); });
    const Condition& was = it->second;
    const bool holds =
        was.members.empty()
            ? holding.contains(id)
            : std::any_of(was.members.begin(), was.members.end(),
                          [&](const std::string& m) { return runs_holding.contains(m); });
    if (!looked_at || holds) {
      ++it;
      continue;
    }
    Condition c = std::move(it->second);
    if (c.alert == alert::kLag) {
      c.details = nlohmann::json{{"lag_seconds", lag_seconds}, {"max_lag_seconds", max_lag}}.dump();
      c.summary = fmt::format("job {} is within alert.max_lag {} again (lag {})", job.name,
                              Human(max_lag), Human(lag_seconds));
    } else if (c.alert == alert::kMissingRuns) {
      c.details = nlohmann::json{{"missing", 0}}.dump();
      c.summary = fmt::format("no run key of job {} for the business date {} is missing now",
                              job.name, c.business_date);
    } else if (c.members.size() > 1) {
      DescribeResolvedRuns(job, c);
    } else if (c.run_id) {
      std::string now_state = "gone (removed by retention)";
      if (auto run = store_.RunGet(*c.run_id); run.ok()) {
        now_state = std::string(ledger::Name(run->state));
        if (run->state == ledger::RunState::kFailed || run->state == ledger::RunState::kUnknown) {
          now_state += fmt::format(" again, attempt {}", run->attempts);
        }
        c.details = nlohmann::json{{"run_id", run->id},
                                   {"run_key", run->RunKey()},
                                   {"state", ledger::Name(run->state)},
                                   {"attempts", run->attempts}}
                        .dump();
      }
      c.summary = fmt::format("run {} is no longer {}: now {}", c.run_key,
                              c.alert == alert::kRunFailed ? "failed" : "unknown", now_state);
    }
    Notify(job, id, c, false, now);
    if (stats) ++stats->resolved;
    it = state.firing.erase(it);
  }
  // Firing: lag and missing dates holding that were not firing.
  for (auto& [id, c] : holding) {
    if (state.firing.contains(id)) continue;
    Notify(job, id, c, true, now);
    if (stats) ++stats->fired;
    state.firing.emplace(id, std::move(c));
  }

  // Run conditions wait in their group for its window: a run that left the
  // state meanwhile leaves the group (an empty group was never said).
  std::set<std::string> waiting;
  for (auto it = state.waiting.begin(); it != state.waiting.end();) {
    std::erase_if(it->second.runs, [&](const auto& r) { return !runs_holding.contains(r.first); });
    for (const auto& [id, c] : it->second.runs) waiting.insert(id);
    it = it->second.runs.empty() ? state.waiting.erase(it) : std::next(it);
  }
  for (auto& [id, c] : runs_holding) {
    if (notified.contains(id) || waiting.contains(id)) continue;
    DescribeLastAttempt(*c.run_id, c);
    Group& g = state.waiting[fmt::format("{}/{}/{}", c.alert, c.business_date, c.step)];
    if (g.runs.empty()) g.first_at = now;
    g.runs.emplace(id, std::move(c));
  }
  for (auto it = state.waiting.begin(); it != state.waiting.end();) {
    if (now < it->second.first_at + job.alert.group_window) {
      ++it;
      continue;
    }
    auto [id, c] = GroupNotice(job, it->second);
    Notify(job, id, c, true, now);
    if (stats) ++stats->fired;
    state.firing.emplace(std::move(id), std::move(c));
    it = state.waiting.erase(it);
  }
  return Status::Ok();
}

std::pair<std::string, Alerter::Condition> Alerter::GroupNotice(const config::JobConfig& job,
                                                                const Group& g) const {
  // In run id order: the runs' order of planning, partitions as listed.
  std::vector<const Condition*> runs;
  std::vector<std::string> members;
  for (const auto& [id, c] : g.runs) {
    runs.push_back(&c);
    members.push_back(id);
  }
  std::sort(runs.begin(), runs.end(),
            [](const auto* a, const auto* b) { return *a->run_id < *b->run_id; });
  const Condition& first = *runs.front();
  if (runs.size() == 1) {
    Condition c = first;
    nlohmann::json details = nlohmann::json::parse(c.details, nullptr, false);
    if (details.is_object()) {
      details["count"] = 1;
      details["run_keys"] = {c.run_key};
      c.details = details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    c.members = members;
    return {members.front(), std::move(c)};
  }
  const bool failed = first.alert == alert::kRunFailed;
  Condition c;
  c.alert = first.alert;
  c.business_date = first.business_date;
  c.step = first.step;
  c.members = std::move(members);
  nlohmann::json run_keys = nlohmann::json::array();
  nlohmann::json listed = nlohmann::json::array();
  for (std::size_t i = 0; i < runs.size() && i < options_.max_run_keys; ++i) {
    run_keys.push_back(runs[i]->run_key);
    listed.push_back(nlohmann::json::parse(runs[i]->details, nullptr, false));
  }
  const sys_seconds first_at = ToSeconds(g.first_at);
  c.details = nlohmann::json{
      {"count", runs.size()},
      {"run_keys", run_keys},
      {"step", c.step.empty() ? nlohmann::json() : nlohmann::json(c.step)},
      {"first_at", FormatUtc(first_at)},
      {"runs",
       listed}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string at_step = c.step.empty() ? "" : " at step " + c.step;
  // The summary is read on a phone: five keys, the details have more.
  std::vector<std::string> named;
  for (std::size_t i = 0; i < runs.size() && i < 5; ++i) named.push_back(runs[i]->run_key);
  const std::string more =
      runs.size() > named.size() ? fmt::format(" and {} more", runs.size() - named.size()) : "";
  // The first run's own summary says how its last attempt ended.
  const std::size_t attempt = first.summary.find("; attempt ");
  const std::string how =
      attempt == std::string::npos
          ? ""
          : fmt::format("; the first, {}: {}", first.run_key, first.summary.substr(attempt + 2));
  c.summary =
      failed
          ? fmt::format(
                "{} runs of job {} for {} failed{} (dead letters: cronledger "
                "retry or rerun them once fixed): {}{}{}",
                runs.size(), job.name, c.business_date, at_step, fmt::join(named, ", "), more, how)
          : fmt::format(
                "{} runs of job {} for {} are unknown{}: their end is uncertain "
                "and they wait for an operator (cronledger resolve): {}{}{}",
                runs.size(), job.name, c.business_date, at_step, fmt::join(named, ", "), more, how);
  std::string id = fmt::format("{}/{}{}/{}", c.alert, c.business_date,
                               c.step.empty() ? "" : "/" + c.step, FormatUtc(first_at));
  return {std::move(id), std::move(c)};
}

void Alerter::DescribeResolvedRuns(const config::JobConfig& job, Condition& c) {
  // What the runs are now, by state: the group's story at a glance.
  std::map<std::string, int> states;
  for (const std::string& m : c.members) {
    const std::size_t a = m.find('/'), b = m.rfind('/');
    std::string now_state = "gone";
    try {
      if (auto run = store_.RunGet(std::stoll(m.substr(a + 1, b - a - 1))); run.ok()) {
        now_state = std::string(ledger::Name(run->state));
      }
    } catch (const std::exception&) {
    }
    ++states[now_state];
  }
  nlohmann::json details = nlohmann::json::parse(c.details, nullptr, false);
  nlohmann::json run_keys = details.is_object() && details.contains("run_keys")
                                ? details["run_keys"]
                                : nlohmann::json::array();
  c.details =
      nlohmann::json{{"count", c.members.size()}, {"run_keys", run_keys}, {"states", states}}
          .dump();
  std::string now;
  for (const auto& [state, n] : states)
    now += fmt::format("{}{} {}", now.empty() ? "" : ", ", n, state);
  c.summary = fmt::format("none of the {} runs of job {} for {} is {} any more: now {}",
                          c.members.size(), job.name, c.business_date,
                          c.alert == alert::kRunFailed ? "failed" : "unknown", now);
}

std::string Alerter::PageUrl(const config::JobConfig& job, const Condition& c) const {
  const std::string& base = config_.server.public_url;
  if (base.empty()) return "";
  if (c.run_id && c.members.size() <= 1) return fmt::format("{}/#/run/{}", base, *c.run_id);
  return fmt::format("{}/#/job/{}", base, job.name);
}

void Alerter::DescribeLastAttempt(int64_t run_id, Condition& c) {
  auto attempts = store_.AttemptList(run_id);
  if (!attempts.ok() || attempts->empty()) return;  // the notice goes out without it
  const store::AttemptRecord& a = attempts->back();
  if (!a.ended_at) return;
  c.step = a.step;
  const std::string excerpt = LastOutputLine(a.output_tail);
  nlohmann::json details = nlohmann::json::parse(c.details, nullptr, false);
  if (!details.is_object()) return;
  details["step"] = a.step.empty() ? nlohmann::json() : nlohmann::json(a.step);
  details["end_class"] = a.end_class;
  details["exit_status"] = a.exit_status ? nlohmann::json(*a.exit_status) : nlohmann::json();
  details["excerpt"] = excerpt;
  // A step's output is any bytes: invalid UTF-8 becomes U+FFFD, not a throw.
  c.details = details.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  c.summary +=
      fmt::format("; attempt {}{}: {}{}{}", a.number, a.step.empty() ? "" : " at step " + a.step,
                  a.end_class, a.exit_status ? fmt::format(" (exit {})", *a.exit_status) : "",
                  excerpt.empty() ? "" : ": " + excerpt);
}

void Alerter::Notify(const config::JobConfig& job, const std::string& id, const Condition& c,
                     bool firing, Clock::TimePoint now) {
  AlertNotice n;
  n.condition = id;
  n.alert = c.alert;
  n.firing = firing;
  n.job = job.name;
  n.business_date = c.business_date;
  n.run_id = c.run_id;
  n.run_key = c.run_key;
  n.details = c.details;
  n.summary = c.summary;
  n.at = ToSeconds(now);
  n.url = PageUrl(job, c);
  n.members = c.members;
  if (c.members.size() > 1) {
    // A notice of many runs names them in its details only.
    n.run_id.reset();
    n.run_key.clear();
  }
  if (firing) {
    spdlog::warn("alerts: firing {} of job {}: {}", c.alert, job.name, c.summary);
  } else {
    spdlog::info("alerts: resolved {} of job {}: {}", c.alert, job.name, c.summary);
  }
  delivery_.Enqueue(std::move(n), TargetsOf(job, config_.dir));
}

}  // namespace cronledger::engine
