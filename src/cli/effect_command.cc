#include "cli/effect_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nettle/sha2.h>
#include <signal.h>
#include <spawn.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "api/attempt_requests.h"
#include "cli/step_client.h"
#include "common/text.h"

extern char** environ;

namespace cronledger::cli {
namespace {

constexpr const char* kCommand = "effect run";
// The most of CMD's stdout kept as the result (the server caps it further
// at output_cap); the rest is still printed.
constexpr std::size_t kMaxResultBytes = 1 << 20;

// Names this invocation: a retry of one of its calls is the same request,
// another invocation in the same attempt is not (docs/effects.md).
std::string RequestId() {
  unsigned char bytes[16] = {};
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) break;
    got += static_cast<std::size_t>(n);
  }
  return fmt::format("effect-run-{}-{}", getpid(), Hex(bytes, sizeof bytes));
}

std::optional<std::string> Sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  // nettle, not OpenSSL: this command starts once per effect, and loading
  // libcrypto costs more than hashing (docs/benchmarks.md).
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const uint8_t*>(data.data()));
  unsigned char digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
  return "sha256:" + Hex(digest, SHA256_DIGEST_SIZE);
}

struct ChildResult {
  int spawn_errno = 0;  // not started: why
  bool exited = false;
  int status = 0;       // exit status, or the signal
  std::string out;      // its stdout, up to kMaxResultBytes
};

// Runs argv (PATH searched, never a shell) with this process's environment
// plus `extra`, in this process's group (a cancelled step's group kill
// reaches it). Its stdout is copied to `out` as it comes and kept. While it
// runs this process ignores SIGINT, SIGTERM and SIGHUP, so that it settles
// the effect by the child's own end.
ChildResult RunChild(const std::vector<std::string>& argv, const std::vector<std::string>& extra,
                     std::ostream& out) {
  ChildResult r;
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  for (const auto& e : extra) env_text.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    r.spawn_errno = errno;
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);

  struct sigaction ignore {}, old_int{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &ignore, &old_term);
  sigaction(SIGHUP, &ignore, &old_hup);

  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argp[0], &actions, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(pipe_fds[1]);
  if (rc != 0) {
    r.spawn_errno = rc;
  } else {
    char buf[65536];
    for (;;) {
      const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.write(buf, n);
      out.flush();
      const std::size_t room = kMaxResultBytes - std::min(kMaxResultBytes, r.out.size());
      r.out.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.exited = WIFEXITED(status);
    r.status = r.exited ? WEXITSTATUS(status) : WTERMSIG(status);
  }
  close(pipe_fds[0]);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return r;
}

class EffectRun {
 public:
  EffectRun(const EffectRunArgs& args, StepClient client, std::string fingerprint,
            std::ostream& out, std::ostream& err)
      : args_(args),
        client_(std::move(client)),
        fingerprint_(std::move(fingerprint)),
        request_(RequestId()),
        out_(out),
        err_(err) {}

  int Run() {
    std::optional<StepReply> begun;
    if (int rc = Begin(&begun); rc >= 0) return rc;
    const std::string outcome = begun->body.value("outcome", "");
    if (outcome == "replay") {
      const auto& e = begun->body["effect"];
      out_ << e.value("result", "");
      out_.flush();
      // An operator who resolved it committed settled it, not an attempt.
      const std::string by =
          e.contains("settled_by") && e["settled_by"].is_string()
              ? fmt::format("resolved committed by {}", e["settled_by"].get<std::string>())
              : fmt::format("by run {}", e.value("run_id", int64_t{0}));
      err_ << fmt::format("cronledger effect run: {}: already committed ({}); replayed "
                          "its stored result, CMD not run again\n",
                          args_.key, by);
      return 0;
    }
    if (outcome == "in_doubt") {
      const int rc = Reconcile(begun->body["effect"]);
      if (rc >= 0) return rc;
      // It did not happen: do it now.
      if (int again = Begin(&begun); again >= 0) return again;
      if (begun->body.value("outcome", "") != "proceed") {
        err_ << "cronledger effect run: " << args_.key
             << ": still not free to proceed after reconciling; in doubt\n";
        return kStepInDoubt;
      }
    }
    if (begun->body.value("outcome", "") != "proceed") {
      err_ << "cronledger effect run: " << args_.key << ": the server answered "
           << begun->body.dump() << ", which this release does not know; CMD not run\n";
      return kStepTempFail;
    }
    return DoEffect();
  }

 private:
  // -1 when the begin answered (in *reply), else the exit code.
  int Begin(std::optional<StepReply>* reply) {
    nlohmann::json body = {{"run_id", client_.env().run_id},
                           {"fencing_token", client_.env().fencing_token},
                           {"key", args_.key},
                           {"fingerprint", fingerprint_},
                           {"request", request_}};
    std::string why;
    *reply = client_.Call("POST", "/v1/effects/begin", body, &why);
    if (!*reply) return StepUnreachable(client_.env(), kCommand, why, err_);
    if ((*reply)->status != 200) return StepExitFor(**reply, kCommand, err_);
    return -1;
  }

  // Records the outcome; the exit code when that fails, else -1.
  int Settle(bool committed, int exit_status, const std::string& result) {
    nlohmann::json body = {{"run_id", client_.env().run_id},
                           {"fencing_token", client_.env().fencing_token},
                           {"key", args_.key},
                           {"exit_status", exit_status},
                           {"result", result}};
    if (committed && args_.checkpoint) {
      body["checkpoint"] = {{"scope", args_.checkpoint_scope}, {"value", *args_.checkpoint}};
    }
    std::string why;
    const auto reply =
        client_.Call("POST", committed ? "/v1/effects/commit" : "/v1/effects/fail", body, &why);
    // Unrecorded, the key stays started: the next attempt finds it in doubt.
    if (!reply) return StepUnreachable(client_.env(), kCommand, why, err_);
    if (reply->status != 200) return StepExitFor(*reply, kCommand, err_);
    return -1;
  }

  // -1: it did not happen (recorded failed), go on; else the exit code.
  int Reconcile(const nlohmann::json& effect) {
    const std::string started = fmt::format("started by run {} attempt {}",
                                            effect.value("run_id", int64_t{0}),
                                            effect.value("started_attempt", 0));
    if (!args_.reconcile) {
      err_ << fmt::format(
          "cronledger effect run: {}: in doubt ({}, never settled) and no --reconcile program "
          "to tell whether it happened; the run becomes unknown. Settle it with `cronledger "
          "resolve {} --effect {} --as committed|failed --reason TEXT`\n",
          args_.key, started, client_.env().run_id, args_.key);
      return kStepInDoubt;
    }
    std::ostringstream captured;
    const ChildResult r =
        RunChild({*args_.reconcile}, {"CRONLEDGER_EFFECT_KEY=" + args_.key}, captured);
    if (r.spawn_errno != 0 || !r.exited || (r.status != 0 && r.status != 1)) {
      const std::string how =
          r.spawn_errno != 0 ? fmt::format("could not start: {}", std::strerror(r.spawn_errno))
          : !r.exited        ? fmt::format("ended by signal {}", r.status)
                             : fmt::format("exited {}", r.status);
      err_ << fmt::format(
          "cronledger effect run: {}: in doubt ({}); the reconcile program {} {}, which means "
          "it cannot tell; the run becomes unknown. Settle it with `cronledger resolve {} "
          "--effect {} --as committed|failed --reason TEXT`\n",
          args_.key, started, *args_.reconcile, how, client_.env().run_id, args_.key);
      return kStepInDoubt;
    }
    if (r.status == 0) {
      // It happened: its answer is the result, printed as a replay's would be.
      if (int rc = Settle(true, 0, r.out); rc >= 0) return rc;
      out_ << r.out;
      out_.flush();
      err_ << "cronledger effect run: " << args_.key
           << ": in doubt; the reconcile program says it happened; recorded committed, CMD "
              "not run\n";
      return 0;
    }
    if (int rc = Settle(false, 1, r.out); rc >= 0) return rc;
    err_ << "cronledger effect run: " << args_.key
         << ": in doubt; the reconcile program says it did not happen; running CMD\n";
    return -1;
  }

  int DoEffect() {
    const ChildResult r = RunChild(args_.command, {}, out_);
    if (r.spawn_errno != 0) {
      // Never started, so it did not happen.
      err_ << "cronledger effect run: cannot run " << args_.command[0] << ": "
           << std::strerror(r.spawn_errno) << "\n";
      const int status = r.spawn_errno == ENOENT ? 127 : 126;
      if (int rc = Settle(false, status, ""); rc >= 0) return rc;
      return status;
    }
    if (!r.exited) {
      // Killed midway: it may or may not have happened. The key stays
      // started; the server makes the run unknown unless a later attempt
      // reconciles it.
      err_ << fmt::format("cronledger effect run: {}: CMD was ended by signal {}; whether the "
                          "effect happened is unknown, the key stays started (in doubt)\n",
                          args_.key, r.status);
      return 128 + r.status;
    }
    if (int rc = Settle(r.status == 0, r.status, r.out); rc >= 0) return rc;
    return r.status;
  }

  const EffectRunArgs& args_;
  StepClient client_;
  std::string fingerprint_;
  std::string request_;
  std::ostream& out_;
  std::ostream& err_;
};

int Usage(std::ostream& err, const std::string& message) {
  err << "cronledger effect run: " << message << "\n";
  return kStepUsage;
}

}  // namespace

int RunEffectRun(const EffectRunArgs& args, std::ostream& out, std::ostream& err) {
  if (args.key.empty() || args.key.size() > store::kMaxEffectKeyBytes) {
    return Usage(err, fmt::format("--key must be 1 to {} bytes", store::kMaxEffectKeyBytes));
  }
  if (args.command.empty() || args.command[0].empty()) {
    return Usage(err, "no command: write it after --, e.g. `effect run --key K -- CMD ARGS`");
  }
  if (args.fingerprint && args.fingerprint_file) {
    return Usage(err, "give --fingerprint or --fingerprint-file, not both");
  }
  if (args.checkpoint_scope != "run" && args.checkpoint_scope != "partition") {
    return Usage(err, "--checkpoint-scope must be run or partition, not \"" +
                          args.checkpoint_scope + "\"");
  }
  if (args.checkpoint && args.checkpoint->size() > api::kMaxCheckpointBytes) {
    return Usage(err, fmt::format("--checkpoint is at most {} bytes", api::kMaxCheckpointBytes));
  }
  std::string fingerprint = args.fingerprint.value_or("");
  if (fingerprint.size() > api::kMaxFingerprintBytes) {
    return Usage(err, fmt::format("--fingerprint is at most {} bytes; for longer content use "
                                  "--fingerprint-file",
                                  api::kMaxFingerprintBytes));
  }
  if (args.fingerprint_file) {
    auto digest = Sha256OfFile(*args.fingerprint_file);
    if (!digest) {
      return Usage(err, "cannot read --fingerprint-file " + *args.fingerprint_file + ": " +
                            std::strerror(errno));
    }
    fingerprint = std::move(*digest);
  }
  const auto env = ReadStepEnvironment(kCommand, err);
  if (!env) return kStepUsage;
  return EffectRun(args, StepClient(*env), std::move(fingerprint), out, err).Run();
}

}  // namespace cronledger::cli
