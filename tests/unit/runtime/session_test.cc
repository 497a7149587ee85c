#include "runtime/session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "runtime/io_binding.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::add_constant;
using test::add_input;
using test::add_output;

// y = reshape(x + c, [-1]) ; z = x * x
std::shared_ptr<Graph> small_graph() {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {2, -1}, {"", "n"});
  add_constant(*g, "c", Tensor::from<float>(Shape{1}, std::vector<float>{10.f}));
  add_constant(*g, "shape", Tensor::from<int64_t>(Shape{1}, std::vector<int64_t>{-1}));
  g->add_node("Add", "", {"x", "c"}, {"sum"}, "add");
  g->add_node("Reshape", "", {"sum", "shape"}, {"y"}, "reshape");
  g->add_node("Mul", "", {"x", "x"}, {"z"}, "square");
  add_output(*g, "y");
  add_output(*g, "z");
  return g;
}

TEST(Session, RunsAndReturnsOutputs) {
  Session session(small_graph(), SessionOptions{2, true, nullptr});
  Tensor x = Tensor::from<float>(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  auto out = session.run({{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape().to_string(), "[6]");
  EXPECT_EQ(out[0].data<float>()[5], 16.f);
  EXPECT_EQ(out[1].shape().to_string(), "[2,3]");
  EXPECT_EQ(out[1].data<float>()[4], 25.f);
}

// ONNXLLM_PROFILE=1: the session prints each op type's compute() calls when it ends.
TEST(Session, ProfilePrintsCallsPerOpType) {
  ::setenv("ONNXLLM_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  {
    Session session(small_graph(), SessionOptions{2, true, nullptr});
    ::unsetenv("ONNXLLM_PROFILE");
    Tensor x = Tensor::from<float>(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    for (int i = 0; i < 3; ++i) session.run({{"x", x}});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("onnxllm profile:"), std::string::npos) << err;
  EXPECT_NE(err.find("  3 runs, "), std::string::npos) << err;
  for (const char* op : {"Add", "Reshape", "Mul"}) {
    const size_t at = err.find(std::string("  ") + op + " ");
    ASSERT_NE(at, std::string::npos) << op << " missing from:\n" << err;
    EXPECT_NE(err.substr(at, err.find('\n', at) - at).find(" 3 calls"), std::string::npos) << err;
  }
  // Without the variable nothing is printed.
  testing::internal::CaptureStderr();
  { Session(small_graph(), SessionOptions{2, true, nullptr}).run({{"x", Tensor::from<float>(Shape{2, 1}, std::vector<float>{1, 2})}}); }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// Each op's line ends with the part of its time outside the pool's parallel regions: all of it
// on one thread; less for an Add of 4M values (a region) on two, where the machine gives two.
TEST(Session, ProfileSplitsOutTheTimeOutsideParallelRegions) {
  auto op_times = [](const std::string& err, const std::string& op) {
    const size_t at = err.find("  " + op + " ");
    EXPECT_NE(at, std::string::npos) << op << " missing from:\n" << err;
    const std::string line = err.substr(at, err.find('\n', at) - at);
    double ms = -1, outside = -1;
    const size_t calls = line.find(" calls ");
    EXPECT_EQ(std::sscanf(line.c_str() + calls + 7, "%lf ms %*f%% %lf ms outside regions", &ms, &outside), 2) << line;
    return std::pair{ms, outside};
  };
  for (int threads : {1, 2}) {
    ::setenv("ONNXLLM_PROFILE", "1", 1);
    testing::internal::CaptureStderr();
    int active = 1;
    {
      Session session(small_graph(), SessionOptions{threads, true, nullptr});
      ::unsetenv("ONNXLLM_PROFILE");
      active = session.pool().active_threads();
      Tensor x = Tensor::from<float>(Shape{2, 1 << 21}, std::vector<float>(size_t{1} << 22, 1.5f));
      for (int i = 0; i < 3; ++i) session.run({{"x", x}});
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ms of it outside the pool's parallel regions (one thread at work)"), std::string::npos) << err;
    const auto [ms, outside] = op_times(err, "Add");
    EXPECT_GT(ms, 0.0) << err;
    if (active == 1) {
      EXPECT_EQ(outside, ms) << err;
    } else {
      EXPECT_LT(outside, 0.5 * ms) << err;
    }
  }
}

// ONNXLLM_PROFILE_SKIP=N: the session's first N runs are not counted (a prompt before decode
// steps); a value that is not a count fails the session's creation, naming the variable.
TEST(Session, ProfileSkipLeavesOutTheFirstRuns) {
  ::setenv("ONNXLLM_PROFILE", "1", 1);
  ::setenv("ONNXLLM_PROFILE_SKIP", "2", 1);
  testing::internal::CaptureStderr();
  {
    Session session(small_graph(), SessionOptions{2, true, nullptr});
    Tensor x = Tensor::from<float>(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    for (int i = 0; i < 5; ++i) session.run({{"x", x}});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("  3 runs, "), std::string::npos) << err;
  EXPECT_NE(err.find("(the first 2 runs not counted)"), std::string::npos) << err;
  const size_t at = err.find("  Add ");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.substr(at, err.find('\n', at) - at).find(" 3 calls"), std::string::npos) << err;
  for (const char* bad : {"x", "-1", "2.5", "3 "}) {
    ::setenv("ONNXLLM_PROFILE_SKIP", bad, 1);
    test::expect_error([] { Session(small_graph(), SessionOptions{1, true, nullptr}); }, ErrorCode::kInvalidArgument,
                       "ONNXLLM_PROFILE_SKIP");
  }
  ::unsetenv("ONNXLLM_PROFILE_SKIP");
  ::unsetenv("ONNXLLM_PROFILE");
}

// ONNXLLM_PROFILE=node: by op and node name, each run of digits in the name as '#', so that
// nodes differing only by a number (a model's layers) share a line.
TEST(Session, ProfileByNodeFoldsNumbers) {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {2}, {""});
  g->add_node("Relu", "", {"x"}, {"a"}, "/layers.0/act");
  g->add_node("Relu", "", {"a"}, {"b"}, "/layers.12/act");
  g->add_node("Relu", "", {"b"}, {"y"}, "/head/act");
  add_output(*g, "y");
  ::setenv("ONNXLLM_PROFILE", "node", 1);
  testing::internal::CaptureStderr();
  {
    Session session(g, SessionOptions{1, true, nullptr});
    ::unsetenv("ONNXLLM_PROFILE");
    for (int i = 0; i < 2; ++i) session.run({{"x", Tensor::from<float>(Shape{2}, std::vector<float>{-1, 2})}});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  for (const auto& [line, calls] : {std::pair<std::string, const char*>{"  Relu /layers.#/act ", " 4 calls"},
                                    {"  Relu /head/act ", " 2 calls"}}) {
    const size_t at = err.find(line);
    ASSERT_NE(at, std::string::npos) << line << " missing from:\n" << err;
    EXPECT_NE(err.substr(at, err.find('\n', at) - at).find(calls), std::string::npos) << err;
  }
}

TEST(Session, BindingReusesOutputMemoryAcrossRuns) {
  Session session(small_graph(), SessionOptions{1, true, nullptr});
  IoBinding binding(session);
  std::vector<float> ybuf(16);
  binding.bind_output("y", ybuf.data(), ybuf.size() * sizeof(float));
  Tensor x = Tensor::from<float>(Shape{2, 2}, std::vector<float>{1, 2, 3, 4});
  binding.bind_input("x", x);
  session.run(binding);
  EXPECT_EQ(binding.output("y").raw(), ybuf.data());
  EXPECT_EQ(ybuf[3], 14.f);
  const void* z_before = binding.output("z").raw();
  session.run(binding);
  EXPECT_EQ(binding.output("z").raw(), z_before);
  // A bound buffer that is too small is a clear error.
  Tensor big = Tensor::from<float>(Shape{2, 10}, std::vector<float>(20, 1.f));
  binding.bind_input("x", big);
  try {
    session.run(binding);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output 'y' needs 80 bytes"), std::string::npos) << e.what();
  }
}

// The terminate flag (run option) stops runs with a clear error while it is set.
TEST(Session, TerminateFlagStopsRuns) {
  Session session(small_graph(), SessionOptions{1, true, nullptr});
  IoBinding binding(session);
  Tensor x = Tensor::from<float>(Shape{2, 2}, std::vector<float>{1, 2, 3, 4});
  binding.bind_input("x", x);
  std::atomic<bool> terminate{true};
  binding.set_terminate_flag(&terminate);
  try {
    session.run(binding);
    FAIL() << "the run was not terminated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_STREQ(e.what(), "the session was terminated (run option terminate_session)");
  }
  terminate = false;
  session.run(binding);
  EXPECT_EQ(binding.output("z").data<float>()[3], 16.f);
}

using test::expect_error;

TEST(Session, BadInputsAreClearErrors) {
  Session session(small_graph(), SessionOptions{1, true, nullptr});
  Tensor x = Tensor::from<float>(Shape{2, 2}, std::vector<float>{1, 2, 3, 4});
  Tensor xi = Tensor::from<int64_t>(Shape{2, 2}, std::vector<int64_t>{1, 2, 3, 4});
  Tensor x3 = Tensor(DType::kFloat32, Shape{2, 2, 1});
  Tensor x_wrong_dim = Tensor(DType::kFloat32, Shape{3, 2});
  expect_error([&] { session.run({{"nope", x}}); }, ErrorCode::kInvalidArgument, "no input named 'nope'");
  expect_error([&] { session.run({}); }, ErrorCode::kInvalidArgument, "input 'x' is not bound");
  expect_error([&] { session.run({{"x", xi}}); }, ErrorCode::kInvalidArgument, "must be float32 but a int64");
  expect_error([&] { session.run({{"x", x3}}); }, ErrorCode::kInvalidArgument, "must have rank 2");
  expect_error([&] { session.run({{"x", x_wrong_dim}}); }, ErrorCode::kInvalidArgument, "dimension 0 must be 2");
}

TEST(Session, UnknownOpNamesOpAndDomain) {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {1});
  g->add_node("FancyOp", "com.example", {"x"}, {"y"}, "fancy");
  add_output(*g, "y");
  g->opsets["com.example"] = 1;
  expect_error([&] { Session s(g, {}); }, ErrorCode::kUnsupported, "unknown operator com.example.FancyOp (domain 'com.example')");
}

TEST(Session, KernelErrorsNameTheNode) {
  auto g = test::new_graph();
  add_input(*g, "a", DType::kFloat32, {-1});
  add_input(*g, "b", DType::kFloat32, {-1});
  g->add_node("Add", "", {"a", "b"}, {"y"}, "the_add");
  add_output(*g, "y");
  Session session(g, {});
  Tensor a(DType::kFloat32, Shape{3}), b(DType::kFloat32, Shape{4});
  expect_error([&] { session.run({{"a", a}, {"b", b}}); }, ErrorCode::kInvalidArgument, "Add node 'the_add': shapes [3] and [4]");
}

TEST(Session, ConstantFoldingRemovesConstantNodes) {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {2});
  add_constant(*g, "a", Tensor::from<float>(Shape{2}, std::vector<float>{1, 2}));
  add_constant(*g, "b", Tensor::from<float>(Shape{2}, std::vector<float>{3, 4}));
  g->add_node("Mul", "", {"a", "b"}, {"ab"}, "const_mul");
  g->add_node("Add", "", {"x", "ab"}, {"y"}, "add");
  add_output(*g, "y");
  Session folded(g, SessionOptions{1, true, nullptr});
  Session plain(g, SessionOptions{1, false, nullptr});
  EXPECT_EQ(folded.provider_node_counts().front().second, 1);
  EXPECT_EQ(plain.provider_node_counts().front().second, 2);
  Tensor x = Tensor::from<float>(Shape{2}, std::vector<float>{1, 1});
  EXPECT_EQ(folded.run({{"x", x}})[0].data<float>()[1], 9.f);
  EXPECT_EQ(plain.run({{"x", x}})[0].data<float>()[1], 9.f);
}

// cond ? x + x : x * x, as one If.
std::shared_ptr<Graph> if_graph() {
  auto g = test::new_graph();
  add_input(*g, "cond", DType::kBool, {});
  add_input(*g, "x", DType::kFloat32, {2});
  auto then_g = std::make_shared<Graph>();
  then_g->opsets = g->opsets;
  then_g->add_node("Add", "", {"x", "x"}, {"t_out"}, "then_add");
  then_g->get_or_add_value("x");
  then_g->values[then_g->find_value("x")].is_outer = true;
  test::add_output(*then_g, "t_out");
  auto else_g = std::make_shared<Graph>();
  else_g->opsets = g->opsets;
  else_g->add_node("Mul", "", {"x", "x"}, {"e_out"}, "else_mul");
  else_g->values[else_g->find_value("x")].is_outer = true;
  test::add_output(*else_g, "e_out");
  Node& n = g->add_node("If", "", {"cond"}, {"y"}, "the_if");
  Attribute ta, ea;
  ta.name = "then_branch"; ta.kind = Attribute::Kind::kGraph; ta.g = then_g;
  ea.name = "else_branch"; ea.kind = Attribute::Kind::kGraph; ea.g = else_g;
  n.attributes = {ta, ea};
  n.implicit_inputs = {g->find_value("x")};
  g->relink();
  add_output(*g, "y");
  return g;
}

TEST(Session, IfRunsTheChosenBranchWithOuterValues) {
  Session session(if_graph(), {});
  Tensor x = Tensor::from<float>(Shape{2}, std::vector<float>{3, 4});
  EXPECT_EQ(session.run({{"cond", Tensor::scalar<bool>(true)}, {"x", x}})[0].data<float>()[1], 8.f);
  EXPECT_EQ(session.run({{"cond", Tensor::scalar<bool>(false)}, {"x", x}})[0].data<float>()[1], 16.f);
}

TEST(Session, IfBranchesWriteTheGraphOutputsInTheirBoundMemory) {
  // The branch's node writes the If's output where it is bound, not into the arena and then a copy
  // (a KV cache bound as past and present is updated in place by the branch that reads it).
  Session session(if_graph(), {});
  IoBinding binding(session);
  Tensor x = Tensor::from<float>(Shape{2}, std::vector<float>{3, 4});
  alignas(64) float out[2] = {0, 0};
  binding.bind_input("x", x.view());
  binding.bind_output("y", out, sizeof(out));
  for (const bool cond : {true, false}) {
    Tensor c = Tensor::scalar<bool>(cond);
    binding.bind_input("cond", c.view());
    session.run(binding);
    EXPECT_EQ(binding.output(0).raw(), static_cast<void*>(out));
    EXPECT_EQ(out[0], cond ? 6.f : 9.f);
    EXPECT_EQ(out[1], cond ? 8.f : 16.f);
    const auto& memory = binding.last_run_stats().memory;
    EXPECT_EQ(memory.planned + memory.searched, 0u) << "the branch's output went through the arena";
  }
  binding.unbind_output(0);  // owned by the binding: written in place as well
  Tensor c = Tensor::scalar<bool>(true);
  binding.bind_input("cond", c.view());
  session.run(binding);
  EXPECT_EQ(binding.output(0).data<float>()[1], 8.f);
  EXPECT_EQ(binding.last_run_stats().memory.planned + binding.last_run_stats().memory.searched, 0u);
}

}  // namespace
}  // namespace onnxllm
