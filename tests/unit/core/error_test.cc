// core/error's printable(): file or request text quoted in a message keeps its printable ASCII and
// whole UTF-8 sequences, escapes everything else as \xNN, and stops at a length. error_text(), which
// every Error's message goes through, does the same without a limit and keeps line breaks.
#include "core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace onnxllm {
namespace {

TEST(Printable, KeepsTextAndEscapesTheRest) {
  EXPECT_EQ(printable("blk.0.attn_q.weight"), "blk.0.attn_q.weight");
  EXPECT_EQ(printable("a\x1b[31mb"), "a\\x1b[31mb");
  EXPECT_EQ(printable(std::string("a\0b\x7f\n", 5)), "a\\x00b\\x7f\\x0a");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // é € 😀
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");                  // a sequence cut short
  EXPECT_EQ(printable("\xc3("), "\\xc3(");                // a lead byte without its continuation
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");         // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable("a\xc2\x9b" "2Jb"), "a\\xc2\\x9b" "2Jb");       // U+009B, CSI to some terminals
  EXPECT_EQ(printable("\xc2\xa0"), "\xc2\xa0");                       // U+00A0 is text
}

TEST(ErrorText, EscapesWhatATerminalWouldActOnAndKeepsLineBreaks) {
  EXPECT_EQ(error_text("node 'a\x1b[2Jb'\n\tline two"), "node 'a\\x1b[2Jb'\n\tline two");
  EXPECT_EQ(error_text(std::string("\0\r\x7f\xff\xc2\x85 caf\xc3\xa9", 12)), "\\x00\\x0d\\x7f\\xff\\xc2\\x85 caf\xc3\xa9");
  const std::string long_text(100000, 'x');
  EXPECT_EQ(error_text(long_text), long_text);  // no limit
  // Applying it again changes nothing: the boundaries that escape other exceptions' messages
  // leave an Error's alone.
  const std::string once = error_text("\x1b]0;title\x07\xfe");
  EXPECT_EQ(once, "\\x1b]0;title\\x07\\xfe");
  EXPECT_EQ(error_text(once), once);
  const Error e(ErrorCode::kInvalidModel, "unknown operator Bad\x1b[2JOp in node 'evil\xff'");
  EXPECT_STREQ(e.what(), "unknown operator Bad\\x1b[2JOp in node 'evil\\xff'");
}

TEST(Printable, StopsAtTheLimit) {
  EXPECT_EQ(printable(std::string(1000, 'a'), 10), "aaaaaaaaaa...");
  EXPECT_EQ(printable(std::string(10, 'a'), 10), "aaaaaaaaaa");
  EXPECT_EQ(printable(std::string(100000, '\x01')).size(), 200u + 3u);  // whole escapes, then "..."
}

}  // namespace
}  // namespace onnxllm
