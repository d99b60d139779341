// A child process owned by a test: started on construction, killed and reaped on destruction.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace readingsd::test {

struct ProcessOptions {
  // argv[0] is a path, or a program name looked up in $PATH.
  std::vector<std::string> argv;
  // Set in the child on top of (overriding) this process's environment.
  std::vector<std::pair<std::string, std::string>> env;
  // stdout and stderr are appended here; empty: inherited from this process. stdin is /dev/null.
  std::string log_path;
};

class Process {
 public:
  // Throws std::system_error when the program cannot be started (including a failed exec).
  // The child gets SIGKILL if the thread that started it exits, so a crashed test leaves no
  // broker behind: start processes from the test's main thread.
  explicit Process(const ProcessOptions& options);
  // SIGKILL and reap, if still running.
  ~Process();

  // Not movable: hold it in std::optional to start another one in its place.
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  // Sends `signal`; a no-op once the child has exited.
  void Kill(int signal);
  // The exit status, as a shell reports it: the exit code, or 128 + the signal that ended the
  // child. nullopt if it is still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

 private:
  // Collects the exit status if the child has exited; true once it has.
  bool Reap();

  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace readingsd::test
