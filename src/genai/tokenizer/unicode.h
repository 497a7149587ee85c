// Unicode properties and transformations the tokenizer components need (via ICU), with the
// semantics of Rust's char methods where Hugging Face tokenizers uses those.
#pragma once

#include <string>
#include <string_view>

namespace onnxllm::unicode {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

// `text` (valid UTF-8) in the given normalization form.
std::string normalize(std::string_view text, NormalForm form);

// Full lowercase mapping of each character on its own (Σ -> σ, İ -> i̇), as Hugging Face does
// with Rust's char::to_lowercase.
std::string to_lower(std::string_view text);

bool is_whitespace(char32_t c);    // White_Space property (Rust char::is_whitespace)
bool is_alphabetic(char32_t c);    // Alphabetic property
bool is_numeric(char32_t c);       // general categories Nd, Nl, No (Rust char::is_numeric)
bool is_alphanumeric(char32_t c);  // is_alphabetic || is_numeric
bool is_punctuation(char32_t c);   // ASCII punctuation or a P* general category
bool is_control(char32_t c);       // general categories Cc, Cf, Cn, Co (BERT's notion of control)
bool is_nonspacing_mark(char32_t c);  // general category Mn
bool is_mark(char32_t c);         // general categories Mn, Mc, Me
bool is_cjk(char32_t c);           // the CJK ideograph blocks BERT pads with spaces

}  // namespace onnxllm::unicode
