// runtime/fusion: eliminate_identities lets a node write an Identity's output itself (the present
// outputs of exported decoders are Identity(Concat(past, new))): chains collapse, other readers of
// the value read the output, and the results are unchanged; an Identity of a graph input or of a
// graph output, or of a value an If branch reads by name, stays. Bound to a buffer, such an output
// is computed straight into it.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/fusion.h"
#include "runtime/io_binding.h"
#include "runtime/session.h"
#include "tests/util/graph_builder.h"

namespace onnxllm {
namespace {

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// x -> Add(x, x) = s -> Identity -> i1 -> Identity -> out (a graph output); s and i1 also feed Mul.
std::shared_ptr<Graph> chain() {
  auto g = test::new_graph();
  test::add_input(*g, "x", DType::kFloat32, {-1});
  g->add_node("Add", "", {"x", "x"}, {"s"}, "sum");
  g->add_node("Identity", "", {"s"}, {"i1"}, "id1");
  g->add_node("Identity", "", {"i1"}, {"out"}, "id2");
  g->add_node("Mul", "", {"s", "i1"}, {"sq"}, "square");
  g->add_node("Identity", "", {"x"}, {"x_copy"}, "id_input");  // of a graph input: stays
  test::add_output(*g, "out");
  test::add_output(*g, "sq");
  test::add_output(*g, "x_copy");
  return g;
}

TEST(IdentityElimination, ChainsCollapseAndResultsStay) {
  auto g = chain();
  EXPECT_EQ(eliminate_identities(*g), 2);
  EXPECT_EQ(count(*g, "Identity"), 1);
  const Value& out = g->values[g->find_value("out")];
  ASSERT_GE(out.producer, 0);
  EXPECT_EQ(g->nodes[out.producer].op_type, "Add");
  EXPECT_EQ(g->nodes[g->values[g->find_value("sq")].producer].inputs,
            (std::vector<int>{g->find_value("out"), g->find_value("out")}));
  g->topological_order();  // every read value is defined

  SessionOptions on{2, true, nullptr}, off{2, true, nullptr};
  off.fusions = false;
  Session fused(chain(), on), plain(chain(), off);
  const Tensor x = Tensor::from<float>(Shape{3}, std::vector<float>{1, -2, 3.5f});
  const auto a = fused.run({{"x", x}}), b = plain.run({{"x", x}});
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    ASSERT_EQ(0, std::memcmp(a[i].data<float>(), b[i].data<float>(), a[i].bytes())) << "output " << i;
  }
  EXPECT_EQ(a[1].data<float>()[2], 49.f);

  // Bound to a buffer, the output is written there by the Add.
  IoBinding binding(fused);
  std::vector<float> buffer(3, 0.f);
  binding.bind_input("x", x);
  binding.bind_output("out", buffer.data(), buffer.size() * sizeof(float));
  fused.run(binding);
  EXPECT_EQ(buffer, (std::vector<float>{2, -4, 7}));
  EXPECT_EQ(binding.output("out").raw(), buffer.data());
}

TEST(IdentityElimination, GraphOutputsAndSubgraphReadsStay) {
  // Identity of a graph output: both names stay outputs with their own producers.
  auto g = test::new_graph();
  test::add_input(*g, "x", DType::kFloat32, {-1});
  g->add_node("Neg", "", {"x"}, {"n"}, "neg");
  g->add_node("Identity", "", {"n"}, {"n_copy"}, "id");
  test::add_output(*g, "n");
  test::add_output(*g, "n_copy");
  EXPECT_EQ(eliminate_identities(*g), 0);

  // A value an If branch reads by name keeps its name.
  auto h = test::new_graph();
  test::add_input(*h, "cond", DType::kBool, {});
  test::add_input(*h, "x", DType::kFloat32, {-1});
  h->add_node("Neg", "", {"x"}, {"n"}, "neg");
  h->add_node("Identity", "", {"n"}, {"n_copy"}, "id");
  auto branch = [&](const char* op, const char* out) {
    auto b = std::make_shared<Graph>();
    b->opsets = h->opsets;
    b->add_node(op, "", {"n"}, {out}, op);
    b->values[b->find_value("n")].is_outer = true;
    test::add_output(*b, out);
    return b;
  };
  Node& n = h->add_node("If", "", {"cond"}, {"y"}, "the_if");
  Attribute ta, ea;
  ta.name = "then_branch", ta.kind = Attribute::Kind::kGraph, ta.g = branch("Abs", "t");
  ea.name = "else_branch", ea.kind = Attribute::Kind::kGraph, ea.g = branch("Neg", "e");
  n.attributes = {ta, ea};
  n.implicit_inputs = {h->find_value("n")};
  h->relink();
  test::add_output(*h, "y");
  test::add_output(*h, "n_copy");
  EXPECT_EQ(eliminate_identities(*h), 0);
  Session session(h, {});
  const Tensor x = Tensor::from<float>(Shape{2}, std::vector<float>{3, -4});
  const auto y = session.run({{"cond", Tensor::scalar<bool>(false)}, {"x", x}});
  EXPECT_EQ(y[0].data<float>()[1], -4.f);
  EXPECT_EQ(y[1].data<float>()[0], -3.f);
}

}  // namespace
}  // namespace onnxllm
