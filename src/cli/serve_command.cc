#include "cli/serve_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "api/dashboard_session.h"
#include "cli/exit_codes.h"
#include "cli/program_path.h"
#include "common/logging.h"
#include "cronledger/node.h"

namespace cronledger::cli {
namespace {

// Every line of `s`'s message, each as "cronledger serve: LINE".
void Report(const Status& s, std::ostream& err) {
  std::istringstream lines(s.message());
  for (std::string line; std::getline(lines, line);) err << "cronledger serve: " << line << "\n";
}

int ExitCode(const Status& s) {
  if (s.ok()) return kExitOk;
  return s.code() == StatusCode::kUnavailable ? kExitUnavailable : kExitUsage;
}

}  // namespace

int RunServe(const ServeArgs& args, Clock& clock, std::ostream& err) {
  if (Status s = ConfigureLogging(args.log_format); !s.ok()) {
    err << "cronledger serve: " << s.message() << "\n";
    return kExitUsage;
  }
  auto config = Config::Load(args.config_path);
  if (!config.ok()) {
    Report(config.status(), err);
    return kExitUsage;
  }

  // Signals are taken by a dedicated thread, never by whichever thread
  // happens to run: block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  NodeOptions options;
  options.listen = args.listen;
  options.node_id = args.node_id;
  options.clock = &clock;
  // Steps call `effect run` and `checkpoint` through the small front.
  options.cronledger_bin = ProgramBesideSelf("cronledger");
  // JSON lines go to a log collector: the login link is in the log line.
  // Text logs share stderr with the person who started serve: the link
  // gets a plain line of its own, once.
  if (args.log_format != "json") {
    options.on_login_link = [&err](const std::string& link) {
      err << "cronledger serve: dashboard login (one-time link, valid "
          << api::kLoginCodeTtl.count() << " min): " << link << "\n";
    };
  }
  auto node = Node::Open(*config, std::move(options));
  if (!node.ok()) {
    Report(node.status(), err);
    return ExitCode(node.status());
  }

  std::stop_source stop;
  std::atomic<bool> exiting{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (exiting) return;  // woken by our own shutdown
    spdlog::info("serve: {} received; stopping (a second signal exits at once)",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT");
    stop.request_stop();
    sigwait(&signals, &sig);
    if (!exiting) _exit(130);
  });
  const Status ran = (*node)->Run(stop.get_token());
  // Wake the signal thread, which may still be waiting for a (second) signal.
  exiting = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!ran.ok()) Report(ran, err);
  return ExitCode(ran);
}

}  // namespace cronledger::cli
