// `onnxllm pull REPO [--revision R] [--include GLOB]... [-o DIR] [--overwrite] [-q]`: downloads a
// model repository from the Hugging Face hub (HF_ENDPOINT, HF_TOKEN) into the cache under HF_HOME
// (huggingface_hub's layout, so either tool reuses the other's files) and, with -o, also into a
// plain folder. Prints the folder (the cache snapshot, or DIR) on stdout; the progress bar (on a
// terminal) and the summary go to stderr. A second pull of a cached revision downloads nothing.
#include <CLI/CLI.hpp>
#include <iostream>

#include "builder/progress.h"
#include "hub/hub_downloader.h"
#include "tools/cli/commands.h"

namespace onnxllm::cli {

Command add_pull_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pull",
                                 "Download a model repository from the Hugging Face hub into its cache "
                                 "(HF_HOME; HF_ENDPOINT, HF_TOKEN) and optionally into a folder");
  struct Args {
    std::string repo, revision = "main", output;
    std::vector<std::string> include;
    bool overwrite = false, quiet = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("repo", a->repo, "Repository, owner/name (e.g. microsoft/Phi-3-mini-4k-instruct-onnx)")->required();
  cmd->add_option("--revision", a->revision, "Branch, tag or commit")->capture_default_str();
  cmd->add_option("--include", a->include,
                  "Only files matching this glob (fnmatch: '*' also matches '/'; 'dir/' = everything in dir); "
                  "repeat for more")
      ->allow_extra_args(false)
      ->take_all();  // one glob per --include (a second word is not swallowed), all occurrences kept
  cmd->add_option("-o,--output", a->output,
                  "Also write the files into this folder (must not exist unless --overwrite)");
  cmd->add_flag("--overwrite", a->overwrite, "Replace an existing -o folder (holding only files this pull writes)");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress output");
  return {cmd, [a] {
            PullOptions o;
            o.repo = RepoId::parse(a->repo);
            o.revision = a->revision;
            o.include = a->include;
            o.output = a->output;
            o.overwrite = a->overwrite;
            o.progress_bar = !a->quiet && Progress::stderr_is_terminal();
            HttpClient http(std::string("onnxllm/") + ONNXLLM_VERSION);
            HubApi api(HubApi::endpoint_from_environment(), HubApi::token_from_environment(), http);
            HubDownloader downloader(HubCache::from_environment(), api);
            std::ostream null_log(nullptr);
            const PullResult r = downloader.pull(o, a->quiet ? null_log : std::cerr);
            if (!a->quiet)
              std::cerr << "pulled " << o.repo.str() << " at " << r.commit.substr(0, 12) << ": " << r.files.size()
                        << (r.files.size() == 1 ? " file, " : " files, ") << r.downloaded_files << " downloaded ("
                        << format_bytes(static_cast<double>(r.downloaded_bytes)) << "), "
                        << r.files.size() - static_cast<size_t>(r.downloaded_files) << " already cached\n";
            std::cout << (o.output.empty() ? r.snapshot.string() : std::filesystem::absolute(o.output).string())
                      << "\n";
            return 0;
          }};
}

}  // namespace onnxllm::cli
