// `onnxllm chat -m DIR [--system TEXT] [--max-new-tokens N] [search options]`: a conversation on
// stdin/stdout, one user message per line, each answer streamed and ended by a newline. `/reset`
// starts over, `/exit` or end of input quits. Ctrl-C (SIGINT) during an answer stops that answer
// and returns to the prompt; at the prompt it quits. The KV cache is kept between turns
// (ChatSession). stderr gets the notes (no chat template, context full, interrupted), the
// timings of each answer, and with --verbose "ran N new tokens (cache M), prompt ids ...".
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "core/error.h"
#include "tools/cli/chat_session.h"
#include "tools/cli/commands.h"
#include "tools/cli/generation_timings.h"
#include "tools/cli/search_args.h"

namespace onnxllm::cli {

namespace {

// SIGINT sets a flag (polled by the answer loop) and writes a byte to a pipe (polled with stdin at
// the prompt), instead of killing the process. The pipe closes the race a flag alone has: a signal
// arriving just before a blocking read() would otherwise be missed.
std::atomic<bool> g_interrupted{false};
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = write(g_signal_pipe[1], &byte, 1);  // full pipe: already signalled
}

void install_sigint_handler() {
  ONNXLLM_CHECK(pipe(g_signal_pipe) == 0, kRuntime, "chat: cannot create a pipe for Ctrl-C");
  for (const int fd : g_signal_pipe) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
}

// Forgets a Ctrl-C that stopped an answer, so that it does not also end the next prompt.
void clear_interrupt() {
  char buffer[64];
  while (read(g_signal_pipe[0], buffer, sizeof(buffer)) > 0) {
  }
  g_interrupted.store(false);
}

// Lines of stdin, read with poll() so that Ctrl-C at the prompt ends the wait.
class LineReader {
 public:
  // False at end of input or on Ctrl-C. A last line without '\n' is still returned.
  bool next(std::string& line) {
    while (true) {
      if (const size_t eol = buffer_.find('\n'); eol != std::string::npos) {
        line = buffer_.substr(0, eol);
        buffer_.erase(0, eol + 1);
        return true;
      }
      if (eof_) {
        if (buffer_.empty()) return false;
        line = std::move(buffer_);
        buffer_.clear();
        return true;
      }
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_signal_pipe[0], POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      if (fds[1].revents & POLLIN) return false;  // Ctrl-C at the prompt
      char chunk[4096];
      const ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        eof_ = true;
      else
        buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  std::string buffer_;
  bool eof_ = false;
};

struct ChatArgs {
  std::string model;
  std::string system;
  int max_new_tokens = 0;
  SearchArgs search;
  int threads = 0;
  std::string kv_cache;
  int token_delay_ms = 0;
  bool verbose = false;
  bool no_timings = false;
};

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

int run_chat(const ChatArgs& args) {
  ChatOptions options;
  options.system = args.system;
  options.max_new_tokens = args.max_new_tokens;
  options.search = search_options_json(args.search);
  options.num_threads = args.threads;
  options.kv_cache_dtype = kv_cache_dtype(args.kv_cache);
  ChatSession session(args.model, std::move(options));
  install_sigint_handler();  // before the first line on stderr, which tells a driver we are ready
  if (!session.has_template())
    std::cerr << "note: " << args.model << " has no chat template; turns are sent as plain text\n";
  std::cerr << "ready: type a message, /reset or /exit\n" << std::flush;
  const bool interactive = isatty(STDIN_FILENO);

  LineReader reader;
  std::string line;
  while (true) {
    if (interactive) std::cout << "> " << std::flush;
    if (!reader.next(line)) break;  // EOF, or Ctrl-C at the prompt
    if (line == "/exit") break;
    if (line == "/reset") {
      session.reset();
      std::cerr << "conversation reset\n";
      continue;
    }
    if (line.empty()) continue;

    GenerationTimings timings;
    ChatTurn turn;
    try {
      turn = session.send(
          line,
          [&](const std::string& text) {
            std::cout << text << std::flush;
            if (args.token_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.token_delay_ms));
          },
          timings, g_interrupted);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInvalidArgument) throw;
      std::cerr << "error: " << e.what() << "\n";  // e.g. the context is full: the session goes on
      continue;
    }
    std::cout << "\n" << std::flush;
    clear_interrupt();
    if (args.verbose)
      std::cerr << "ran " << turn.new_prompt_tokens << " new tokens (cache " << turn.cached_tokens << "), prompt ids "
                << join_ids(turn.prompt_ids) << "\n";
    if (turn.end == ChatTurn::End::kInterrupted) std::cerr << "[answer interrupted]\n";
    if (turn.end == ChatTurn::End::kContextFull)
      std::cerr << "note: the context is full (" << session.max_length() << " tokens); type /reset to start over\n";
    if (!args.no_timings) timings.print(std::cerr);
  }
  return 0;
}

}  // namespace

Command add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "Chat with a model folder: one message per line on stdin, /reset, /exit");
  auto args = std::make_shared<ChatArgs>();
  add_model_option(cmd, args->model, "Model folder with genai_config.json")->required();
  cmd->add_option("--system", args->system, "System message (sent first in every conversation)")
      ->capture_default_str();
  cmd->add_option("-n,--max-new-tokens", args->max_new_tokens,
                  "Tokens per answer at most (0 = until EOS or the context is full)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_search_options(*cmd, args->search, false);
  add_threads_option(cmd, args->threads, "Intra-op threads (0: the config's intra_op_num_threads if set)");
  add_kv_cache_option(cmd, args->kv_cache);
  cmd->add_option("--token-delay-ms", args->token_delay_ms,
                  "Pause after each streamed piece (slow playback; lets a test interrupt an answer)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", args->verbose, "After each answer: how many prompt tokens ran and how many came from "
                                               "the cache, and the prompt ids");
  cmd->add_flag("--no-timings", args->no_timings, "Do not print each answer's timings to stderr");
  return {cmd, [args] { return run_chat(*args); }};
}

}  // namespace onnxllm::cli
