// A second execution provider with its own memory (FakeDeviceProvider): nodes go to it by op and
// dtype, the rest to the CPU, and the session copies values at each boundary so that results equal
// a CPU-only run and callers see host tensors.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/float16.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tests/unit/runtime/fake_device_provider.h"
#include "tests/util/graph_builder.h"
#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

using test::add_constant;
using test::add_input;
using test::add_output;
using test::FakeDeviceProvider;

// As a model's value_info would: the partitioner sees a value's dtype only when the graph declares it.
void declare(Graph& g, const std::string& name, DType dtype) { g.values[g.find_value(name)].dtype = dtype; }

// a = x + c (device), b = a * a (device), r = Relu(b) (cpu), y = r * x (device), s = Sigmoid(a) (cpu);
// outputs y, b (written by a device node and read by a CPU node) and s.
std::shared_ptr<Graph> mixed_graph() {
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {2, -1}, {"", "n"});
  add_constant(*g, "c", Tensor::from<float>(Shape{1}, std::vector<float>{-1.5f}));
  g->add_node("Add", "", {"x", "c"}, {"a"}, "add");
  g->add_node("Mul", "", {"a", "a"}, {"b"}, "square");
  g->add_node("Relu", "", {"b"}, {"r"}, "relu");
  g->add_node("Mul", "", {"r", "x"}, {"y"}, "scale");
  g->add_node("Sigmoid", "", {"a"}, {"s"}, "sigmoid");
  for (const char* v : {"a", "b", "r"}) declare(*g, v, DType::kFloat32);
  add_output(*g, "y");
  add_output(*g, "b");
  add_output(*g, "s");
  return g;
}

SessionOptions with_provider(std::shared_ptr<ExecutionProvider> provider) {
  SessionOptions options;
  options.num_threads = 1;
  options.providers = {std::move(provider)};
  return options;
}

int count_of(const Session& s, const std::string& provider) {
  for (const auto& [name, n] : s.provider_node_counts())
    if (name == provider) return n;
  return 0;
}

void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].device() == kHostDevice);
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    for (int64_t j = 0; j < got[i].numel(); ++j) EXPECT_EQ(got[i].data<float>()[j], want[i].data<float>()[j]) << i << "," << j;
  }
}

TEST(ExecutionProvider, AssignsItsOpsToTheDeviceAndCopiesAtEachBoundary) {
  auto fake = std::make_shared<FakeDeviceProvider>();
  Session device(mixed_graph(), with_provider(fake));
  Session cpu(mixed_graph(), SessionOptions{1, true, nullptr});
  EXPECT_EQ(count_of(device, "fake_device"), 3);  // add, square, scale
  EXPECT_EQ(count_of(device, "cpu"), 2);          // relu, sigmoid
  EXPECT_EQ(count_of(cpu, "fake_device"), 0);
  // x up (once, for add and scale), b down (a graph output, read by relu), r up, y down, a down
  // (for sigmoid); c goes up once at creation.
  EXPECT_EQ(device.copy_step_count(), 5);
  EXPECT_EQ(fake->live_blocks(), 1u);

  IoBinding binding(device);
  for (int64_t n : {3, 5, 3}) {
    const Tensor x = Tensor::from<float>(Shape{2, n}, test::uniform(static_cast<size_t>(2 * n), -3.f, 3.f, 7 + n));
    fake->to_device = fake->to_host = 0;
    binding.bind_input("x", x);
    device.run(binding);
    EXPECT_EQ(fake->to_device, 2);
    EXPECT_EQ(fake->to_host, 3);
    EXPECT_EQ(fake->live_blocks(), 1u) << "device activations are freed after their last reader";
    std::vector<Tensor> got;
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(binding.output(i).on_host());
      got.push_back(Tensor::copy_of(binding.output(i)));
    }
    expect_same(got, cpu.run({{"x", x}}));
  }
  EXPECT_EQ(fake->foreign_inputs, 0);
}

TEST(ExecutionProvider, OtherDtypesFallBackToTheCpu) {
  for (DType dtype : {DType::kFloat16, DType::kInt64}) {
    auto g = test::new_graph();
    add_input(*g, "a", dtype, {-1});
    add_input(*g, "b", dtype, {-1});
    g->add_node("Add", "", {"a", "b"}, {"y"}, "the_add");
    add_output(*g, "y");
    auto fake = std::make_shared<FakeDeviceProvider>();
    Session session(g, with_provider(fake));
    EXPECT_EQ(count_of(session, "fake_device"), 0) << dtype_name(dtype);
    EXPECT_EQ(count_of(session, "cpu"), 1);
    EXPECT_EQ(session.copy_step_count(), 0);
    Tensor a = dtype == DType::kInt64 ? Tensor::from<int64_t>(Shape{2}, std::vector<int64_t>{1, 2})
                                      : Tensor::from<Float16>(Shape{2}, std::vector<Float16>{Float16(1.f), Float16(2.f)});
    auto out = session.run({{"a", a}, {"b", a}});
    if (dtype == DType::kInt64) EXPECT_EQ(out[0].data<int64_t>()[1], 4);
    else EXPECT_EQ(static_cast<float>(out[0].data<Float16>()[1]), 4.f);
    EXPECT_EQ(fake->to_device + fake->to_host, 0);
  }
}

// A node whose dtype the graph does not declare stays on the CPU (its kernels check when they run).
TEST(ExecutionProvider, UndeclaredDtypesStayOnTheCpu) {
  auto g = mixed_graph();
  for (const char* v : {"a", "b", "r"}) declare(*g, v, DType::kUndefined);
  Session session(g, with_provider(std::make_shared<FakeDeviceProvider>()));
  EXPECT_EQ(count_of(session, "fake_device"), 1);  // add reads x and c, both declared
  EXPECT_EQ(count_of(session, "cpu"), 4);
}

TEST(ExecutionProvider, CpuOnlySessionsHaveNoCopySteps) {
  Session cpu(mixed_graph(), SessionOptions{1, true, nullptr});
  EXPECT_EQ(cpu.copy_step_count(), 0);
  EXPECT_EQ(count_of(cpu, "cpu"), 5);
  // A provider that takes none of the nodes adds none either.
  auto g = test::new_graph();
  add_input(*g, "x", DType::kFloat32, {-1});
  g->add_node("Relu", "", {"x"}, {"y"}, "relu");
  add_output(*g, "y");
  Session session(g, with_provider(std::make_shared<FakeDeviceProvider>()));
  EXPECT_EQ(session.copy_step_count(), 0);
}

TEST(ExecutionProvider, ADtypeNoProviderTakesIsAnErrorAtCreation) {
  auto g = test::new_graph();
  add_input(*g, "a", DType::kBool, {-1});
  g->add_node("Add", "", {"a", "a"}, {"y"}, "the_add");
  add_output(*g, "y");
  test::expect_error([&] { Session s(g, with_provider(std::make_shared<FakeDeviceProvider>())); },
                     ErrorCode::kUnsupported,
                     "operator Add (domain 'ai.onnx', opset 17) in node 'the_add': inputs of dtype bool are not "
                     "supported by any execution provider (fake_device, cpu)");
}

TEST(ExecutionProvider, DeviceInputsAreRefusedAndDeviceTensorsAreNotReadOnTheHost) {
  auto fake = std::make_shared<FakeDeviceProvider>();
  Session session(mixed_graph(), with_provider(fake));
  Tensor on_device(DType::kFloat32, Shape{2, 3}, fake->allocator());
  EXPECT_EQ(on_device.device().kind, MemoryKind::kDevice);
  EXPECT_FALSE(on_device.view().reshaped(Shape{6}).on_host());
  test::expect_error([&] { session.run({{"x", on_device}}); }, ErrorCode::kInvalidArgument,
                     "input 'x' must be in host memory");
  test::expect_error([&] { Tensor::copy_of(on_device); }, ErrorCode::kInvalidArgument, "is in device memory");
}

}  // namespace
}  // namespace onnxllm
