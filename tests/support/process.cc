#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>
#include <thread>

extern char** environ;

namespace readingsd::test {
namespace {

// The program's path: argv[0] itself if it has a '/', else the first match in $PATH. Done
// before fork because the child may only make async-signal-safe calls.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    std::string candidate(dirs.substr(0, colon));
    candidate.append("/").append(name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return name;  // execve fails with ENOENT, reported like any other exec failure
}

std::vector<std::string> ChildEnvironment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [key, value] : overrides) overridden = overridden || key == name;
    if (!overridden) env.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

int ExitStatus(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

}  // namespace

Process::Process(const ProcessOptions& options) {
  if (options.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "Process: empty argv");
  const std::string program = ResolveProgram(options.argv[0]);
  std::vector<std::string> argv = options.argv;
  std::vector<std::string> env = ChildEnvironment(options.env);
  std::vector<char*> argv_ptrs = CStrings(argv);
  std::vector<char*> env_ptrs = CStrings(env);

  // The child reports a failed exec through this pipe; a successful exec closes it (CLOEXEC).
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    const int error = errno;
    close(report[0]);
    close(report[1]);
    throw std::system_error(error, std::generic_category(), "fork");
  }
  if (pid_ == 0) {
    // Child: async-signal-safe calls only.
    int error = 0;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);  // a blocked SIGTERM would make Stop() hang
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0) error = errno;
    if (error == 0 && !options.log_path.empty()) {
      const int log_fd = open(options.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log_fd < 0 || dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0) error = errno;
    }
    if (error == 0) {
      execve(program.c_str(), argv_ptrs.data(), env_ptrs.data());
      error = errno;
    }
    ssize_t ignored = write(report[1], &error, sizeof(error));
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  int child_error = 0;
  ssize_t n;
  do {
    n = read(report[0], &child_error, sizeof(child_error));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof(child_error)) {
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::system_error(child_error, std::generic_category(), "exec " + program);
  }
}

Process::~Process() {
  if (pid_ > 0 && !Reap()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool Process::Reap() {
  if (status_) return true;
  if (pid_ <= 0) return false;
  int wait_status = 0;
  if (waitpid(pid_, &wait_status, WNOHANG) != pid_) return false;
  status_ = ExitStatus(wait_status);
  return true;
}

bool Process::Running() { return pid_ > 0 && !Reap(); }

void Process::Kill(int signal) {
  // Once reaped the pid may belong to someone else: never signal it then.
  if (Running()) kill(pid_, signal);
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!Reap()) {
    if (pid_ <= 0 || std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status_;
}

}  // namespace readingsd::test
