// The hub client's pure parts: URLs, repository names, SHA-256, the cache layout and the path
// checks that keep a hostile hub's names inside the cache, and --include matching. The network
// parts run end to end against the mock hub in tests/hub/pull_test.py (ctest hub_pull).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "hub/hub_cache.h"
#include "hub/hub_downloader.h"
#include "hub/repo_id.h"
#include "hub/sha256.h"
#include "hub/url.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

namespace fs = std::filesystem;

// The message of the Error `fn` throws, or "" when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HubUrl, ParsesEndpointsAndDefaults) {
  const Url a = Url::parse("https://huggingface.co");
  EXPECT_EQ(a.scheme, "https");
  EXPECT_EQ(a.host, "huggingface.co");
  EXPECT_EQ(a.port, 443);
  EXPECT_EQ(a.target, "/");
  const Url b = Url::parse("HTTP://127.0.0.1:8080/mirror?x=1#frag");
  EXPECT_EQ(b.scheme, "http");
  EXPECT_EQ(b.port, 8080);
  EXPECT_EQ(b.target, "/mirror?x=1");
  EXPECT_EQ(b.origin(), "http://127.0.0.1:8080");
  EXPECT_EQ(b.str(), "http://127.0.0.1:8080/mirror?x=1");
  EXPECT_EQ(b.display(), "http://127.0.0.1:8080/mirror");
  const Url v6 = Url::parse("http://[::1]:9000/a");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.origin(), "http://[::1]:9000");
}

TEST(HubUrl, RejectsWhatIsNotAnHttpUrl) {
  EXPECT_NE(error_of([] { Url::parse("huggingface.co"); }).find("is not a URL"), std::string::npos);
  EXPECT_NE(error_of([] { Url::parse("ftp://host/x"); }).find("not an http"), std::string::npos);
  EXPECT_NE(error_of([] { Url::parse("http://:80/"); }).find("no host"), std::string::npos);
  EXPECT_NE(error_of([] { Url::parse("http://h:99999/"); }).find("invalid port"), std::string::npos);
  EXPECT_NE(error_of([] { Url::parse("http://user:pw@h/"); }).find("credentials"), std::string::npos);
}

TEST(HubUrl, ResolvesRedirectLocations) {
  const Url base = Url::parse("https://huggingface.co/old/name/resolve/main/sub/model.onnx");
  EXPECT_EQ(base.resolve("/new/name/resolve/main/sub/model.onnx").str(),
            "https://huggingface.co/new/name/resolve/main/sub/model.onnx");
  EXPECT_EQ(base.resolve("https://cdn.example/blob?sig=1").str(), "https://cdn.example/blob?sig=1");
  EXPECT_EQ(base.resolve("//cdn.example:8443/b").str(), "https://cdn.example:8443/b");
  EXPECT_EQ(base.resolve("other.onnx").str(), "https://huggingface.co/old/name/resolve/main/sub/other.onnx");
}

TEST(HubUrl, QuotesAsPythonDoes) {
  EXPECT_EQ(url_quote("refs/pr/1", ""), "refs%2Fpr%2F1");
  EXPECT_EQ(url_quote("sub dir/a+b#.onnx", "/"), "sub%20dir/a%2Bb%23.onnx");
  EXPECT_EQ(url_quote("A-z_0.9~", ""), "A-z_0.9~");
  EXPECT_EQ(url_quote("\xc3\xa9", ""), "%C3%A9");
}

TEST(HubRepoId, ParsesValidNames) {
  const RepoId id = RepoId::parse("microsoft/Phi-3-mini-4k-instruct-onnx");
  EXPECT_EQ(id.owner, "microsoft");
  EXPECT_EQ(id.name, "Phi-3-mini-4k-instruct-onnx");
  EXPECT_EQ(id.str(), "microsoft/Phi-3-mini-4k-instruct-onnx");
  EXPECT_EQ(id.cache_folder(), "models--microsoft--Phi-3-mini-4k-instruct-onnx");
  EXPECT_EQ(RepoId::parse("gpt2").cache_folder(), "models--gpt2");
  EXPECT_EQ(RepoId::parse("a_b/c.d").str(), "a_b/c.d");
  EXPECT_TRUE(RepoId::is_owner_name("acme/tiny"));
  EXPECT_FALSE(RepoId::is_owner_name("gpt2"));
  EXPECT_FALSE(RepoId::is_owner_name("./model"));
  EXPECT_FALSE(RepoId::is_owner_name("/abs/path"));
}

TEST(HubRepoId, RejectsBadNamesSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"a/b/c", "more than one '/'"}, {"acme/", "the name is empty"}, {"/name", "the owner is empty"},
      {"-acme/x", "starts or ends"},  {"acme/x.", "starts or ends"},  {"acme/a--b", "'--' or '..'"},
      {"acme/a..b", "'--' or '..'"},  {"ac me/x", "contains ' '"},    {"acme/x.git", "ends with .git"},
      {"acme/\xc3\xa9", "contains"},
  };
  for (const auto& [text, why] : cases) {
    const std::string message = error_of([&] { RepoId::parse(text); });
    EXPECT_NE(message.find("invalid repository"), std::string::npos) << text;
    EXPECT_NE(message.find(why), std::string::npos) << text << ": " << message;
  }
  EXPECT_NE(error_of([] { RepoId::parse("a/" + std::string(97, 'x')); }).find("longer than 96"), std::string::npos);
}

TEST(HubSha256, MatchesTheFipsVectors) {
  EXPECT_EQ(Sha256::of("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::of("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(Sha256::of(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a's fed in uneven pieces: incremental updates give the one-shot digest.
  Sha256 h;
  const std::string chunk(7777, 'a');
  size_t left = 1000000;
  while (left > 0) {
    const size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  h.update("abc", 3);  // hex_digest started it over
  EXPECT_EQ(h.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(HubCache, LaysOutRefsSnapshotsAndBlobsAsHuggingfaceHub) {
  const fs::path root = test::temp_dir("hub_cache_layout");
  const HubCache cache(root);
  const RepoId repo = RepoId::parse("acme/tiny");
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  const std::string etag = "9e26dfeeb6e641a33dae4961196235bdb965b21b";
  EXPECT_EQ(cache.blob_path(repo, etag), root / "models--acme--tiny" / "blobs" / etag);
  EXPECT_EQ(cache.lock_path(repo, etag), root / ".locks" / "models--acme--tiny" / (etag + ".lock"));
  EXPECT_FALSE(cache.find_snapshot(repo, "main"));

  fs::create_directories(cache.blob_path(repo, etag).parent_path());
  std::ofstream(cache.blob_path(repo, etag)) << "{}";
  cache.link_snapshot_file(repo, commit, "sub/dir/config.json", etag);
  const fs::path pointer = cache.snapshot_dir(repo, commit) / "sub/dir/config.json";
  ASSERT_TRUE(fs::is_symlink(pointer));
  EXPECT_EQ(fs::read_symlink(pointer), fs::path("../../../../blobs") / etag);  // relative, survives moving the cache
  EXPECT_TRUE(fs::is_regular_file(pointer));
  cache.link_snapshot_file(repo, commit, "sub/dir/config.json", etag);  // replacing an entry is fine

  cache.write_ref(repo, "refs/pr/1", commit);
  std::ifstream ref(root / "models--acme--tiny" / "refs" / "refs" / "pr" / "1");
  std::string text((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, commit);  // no newline
  EXPECT_EQ(cache.read_ref(repo, "refs/pr/1"), commit);
  EXPECT_EQ(cache.find_snapshot(repo, "refs/pr/1"), cache.snapshot_dir(repo, commit));
  EXPECT_EQ(cache.find_snapshot(repo, commit), cache.snapshot_dir(repo, commit));
  EXPECT_FALSE(cache.find_snapshot(repo, "main"));

  std::ofstream(root / "models--acme--tiny" / "refs" / "bad") << "not a commit";
  EXPECT_NE(error_of([&] { cache.read_ref(repo, "bad"); }).find("does not hold a commit hash"), std::string::npos);
}

TEST(HubCache, FollowsTheEnvironmentAsHuggingfaceHub) {
  const auto with_env = [](std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* name : {"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"}) ::unsetenv(name);
    for (const auto& [name, value] : vars) ::setenv(name, value, 1);
    return HubCache::from_environment().root();
  };
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(with_env({}), fs::path("/home/u/.cache/huggingface/hub"));
  EXPECT_EQ(with_env({{"XDG_CACHE_HOME", "/x"}}), fs::path("/x/huggingface/hub"));
  EXPECT_EQ(with_env({{"XDG_CACHE_HOME", "/x"}, {"HF_HOME", "~/hf"}}), fs::path("/home/u/hf/hub"));
  EXPECT_EQ(with_env({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/cache"}}), fs::path("/cache"));
  for (const char* name : {"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"}) ::unsetenv(name);
  ::setenv("HOME", saved_home.c_str(), 1);
}

TEST(HubCache, KeepsHostileNamesInsideTheCache) {
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", "a\\b", "a\nb"})
    EXPECT_NE(error_of([&] { HubCache::check_repo_path(bad); }).find("unsafe file name"), std::string::npos) << bad;
  EXPECT_EQ(error_of([] { HubCache::check_repo_path("onnx/cpu/model.onnx.data"); }), "");
  for (const std::string& bad : std::vector<std::string>{"", "../../x", ".hidden", "a/b", std::string(200, 'a')})
    EXPECT_NE(error_of([&] { HubCache::check_etag(bad, "f"); }).find("unusable ETag"), std::string::npos) << bad;
  EXPECT_EQ(
      error_of([] { HubCache::check_etag("cf295b8e45f6145452a475792da2afc857df3491258425b4659474ef8618a29c", "f"); }),
      "");
  for (const char* bad : {"", "/main", "a/../b", "..", "a\tb"})
    EXPECT_NE(error_of([&] { HubCache::check_revision(bad); }).find("invalid revision"), std::string::npos) << bad;
  EXPECT_EQ(error_of([] { HubCache::check_revision("refs/pr/12"); }), "");
  EXPECT_TRUE(HubCache::is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(HubCache::is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_FALSE(HubCache::is_commit_hash("main"));
}

TEST(HubInclude, MatchesAsSnapshotDownloadAllowPatterns) {
  EXPECT_TRUE(HubDownloader::matches_include("anything", {}));
  EXPECT_TRUE(HubDownloader::matches_include("config.json", {"*.json"}));
  EXPECT_TRUE(HubDownloader::matches_include("onnx/genai_config.json", {"*.json"}));  // '*' matches '/' (fnmatch)
  EXPECT_TRUE(HubDownloader::matches_include("cpu_and_mobile/int4/model.onnx", {"cpu_and_mobile/"}));
  EXPECT_FALSE(HubDownloader::matches_include("cuda/model.onnx", {"cpu_and_mobile/"}));
  EXPECT_TRUE(HubDownloader::matches_include("model.onnx.data", {"*.json", "model.onnx*"}));
  EXPECT_FALSE(HubDownloader::matches_include("Config.JSON", {"*.json"}));
  EXPECT_TRUE(HubDownloader::matches_include("model-00001.safetensors", {"model-0000[0-9].safetensors"}));
}

}  // namespace
}  // namespace onnxllm
