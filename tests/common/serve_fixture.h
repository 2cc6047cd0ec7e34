// One `cronledger serve` for a test or a suite: the folder it runs in, its
// config, the process and the port its API listens on. Header-only, like
// serve_process.h: the including target defines CRONLEDGER_BIN. Waiting
// for serve fails the current test (gtest's ADD_FAILURE) with serve's exit
// and its log's tail when it exits first or never gets there, so a caller
// only checks the returned bool.
#ifndef CRONLEDGER_TESTS_COMMON_SERVE_FIXTURE_H_
#define CRONLEDGER_TESTS_COMMON_SERVE_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/serve_process.h"
#include "common/temp_dir.h"

namespace cronledger::testing {

// The last `lines` lines of `text`, for failure messages.
inline std::string LastLines(const std::string& text, std::size_t lines = 40) {
  std::size_t at = text.size();
  for (std::size_t n = 0; n <= lines && at != std::string::npos && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos || at == 0 ? text : "...\n" + text.substr(at + 1);
}

// Why `serve` is not ready, for a failure message: its exit or that it is
// still running, then its log's tail.
inline std::string NotReady(ServeProcess& serve, const std::string& waited_for) {
  const std::string state =
      serve.Running() ? "serve is still running but never logged " + waited_for
                      : "serve exited (code " + std::to_string(serve.exit_code()) +
                            ", -1: a signal) before it logged " + waited_for;
  return state + "; its log ends:\n" + LastLines(serve.Log());
}

// Waits until `serve` has logged that its API listens: the port, or 0
// after failing the test with NotReady().
inline int WaitUntilListening(ServeProcess& serve) {
  const int port = serve.WaitForApiPort();
  if (port == 0) ADD_FAILURE() << NotReady(serve, "\"API listening on\"");
  return port;
}

// Waits until `serve`'s log contains `line`: true, or false after failing
// the test with NotReady(). For a serve whose readiness is not its API.
inline bool WaitUntilLogged(ServeProcess& serve, const std::string& line, int tries = 600) {
  const bool logged = WaitFor(
      [&] { return serve.Log().find(line) != std::string::npos || !serve.Running(); }, tries) &&
                      serve.Log().find(line) != std::string::npos;
  if (!logged) ADD_FAILURE() << NotReady(serve, "\"" + line + "\"");
  return logged;
}

// What differs between the tests that start serve.
struct ServeOptions {
  std::vector<std::string> args = {};  // after `serve --config CONFIG`
  std::vector<std::string> env = {};   // "NAME=value", replacing inherited ones
  std::string log = "serve.log";       // in the folder: stderr, and stdout too
  std::string stdout_log = "";         // in the folder: stdout alone, when given
};

// A temp folder with a config, and serve on it. Start() and Restart() wait
// until the API listens; the process is killed on destruction (before the
// folder goes) if a test did not Stop() it.
class ServeFixture {
 public:
  explicit ServeFixture(const std::string& prefix = "cronledger-test") : dir_(prefix) {}
  ServeFixture(const ServeFixture&) = delete;
  ServeFixture& operator=(const ServeFixture&) = delete;

  const TempDir& dir() const { return dir_; }
  // cronledger.toml in the folder, written or not.
  std::string config() const { return dir_.File("cronledger.toml"); }
  // Writes the config; its path.
  std::string WriteConfig(const std::string& text) const {
    return dir_.Write("cronledger.toml", text);
  }

  // Starts serve (a running one is killed first) and waits until its API
  // listens: true, with port() and url(); false, the test failed.
  bool Start(ServeOptions options = {}) {
    Launch(std::move(options));
    port_ = WaitUntilListening(*serve_);
    return port_ > 0;
  }
  // Starts serve and waits until its log contains `line`, not for its API.
  bool StartUntilLogged(const std::string& line, ServeOptions options = {}, int tries = 600) {
    Launch(std::move(options));
    return WaitUntilLogged(*serve_, line, tries);
  }
  // Stop(), then Start() with the same options (the log begins again).
  bool Restart() {
    Stop();
    return Start(options_);
  }
  // SIGTERM and the exit code (ServeProcess::Stop); -1 when never started.
  int Stop() { return serve_ ? serve_->Stop() : -1; }

  ServeProcess& process() { return *serve_; }
  bool started() const { return serve_ != nullptr; }
  // 0 until Start() saw the API listen.
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The log of the last start; "" before the first.
  std::string Log() const { return serve_ ? serve_->Log() : ""; }

 private:
  void Launch(ServeOptions options) {
    serve_.reset();
    port_ = 0;
    options_ = std::move(options);
    serve_ = std::make_unique<ServeProcess>(
        config(), dir_.File(options_.log), options_.args, options_.env,
        options_.stdout_log.empty() ? "" : dir_.File(options_.stdout_log));
  }

  TempDir dir_;
  ServeOptions options_;
  std::unique_ptr<ServeProcess> serve_;  // after dir_: killed before the folder goes
  int port_ = 0;
};

}  // namespace cronledger::testing

#endif  // CRONLEDGER_TESTS_COMMON_SERVE_FIXTURE_H_
