/* Streams a model's continuation of a prompt, using onnxllm's C API (ort_genai_c.h).
 *   generate MODEL_DIR [PROMPT] [MAX_LENGTH]
 * Build: cc -std=c11 generate.c $(pkg-config --cflags --libs onnxllm) -o generate */
#include <stdio.h>
#include <stdlib.h>

#include "ort_genai_c.h"

/* Prints the error of a failed call and exits. */
static void check(OgaResult* result) {
  if (result != NULL) {
    fprintf(stderr, "error: %s\n", OgaResultGetError(result));
    OgaDestroyResult(result);
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_DIR [PROMPT] [MAX_LENGTH]\n", argv[0]);
    return 2;
  }
  const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
  const double max_length = argc > 3 ? atof(argv[3]) : 64;

  OgaModel* model = NULL;
  check(OgaCreateModel(argv[1], &model));
  OgaTokenizer* tokenizer = NULL;
  check(OgaCreateTokenizer(model, &tokenizer));
  OgaTokenizerStream* stream = NULL;
  check(OgaCreateTokenizerStream(tokenizer, &stream));

  OgaSequences* sequences = NULL;
  check(OgaCreateSequences(&sequences));
  check(OgaTokenizerEncode(tokenizer, prompt, sequences));

  OgaGeneratorParams* params = NULL;
  check(OgaCreateGeneratorParams(model, &params));
  check(OgaGeneratorParamsSetSearchNumber(params, "max_length", max_length));
  check(OgaGeneratorParamsSetSearchBool(params, "do_sample", false));

  OgaGenerator* generator = NULL;
  check(OgaCreateGenerator(model, params, &generator));
  check(OgaGenerator_AppendTokenSequences(generator, sequences));

  printf("%s", prompt);
  while (!OgaGenerator_IsDone(generator)) {
    check(OgaGenerator_GenerateNextToken(generator));
    const int32_t* tokens = NULL;
    size_t count = 0;
    check(OgaGenerator_GetNextTokens(generator, &tokens, &count));
    const char* text = NULL;
    check(OgaTokenizerStreamDecode(stream, tokens[0], &text));
    printf("%s", text);
    fflush(stdout);
  }
  printf("\n");
  fprintf(stderr, "%zu tokens\n", OgaGenerator_TokenCount(generator));

  OgaDestroyGenerator(generator);
  OgaDestroyGeneratorParams(params);
  OgaDestroySequences(sequences);
  OgaDestroyTokenizerStream(stream);
  OgaDestroyTokenizer(tokenizer);
  OgaDestroyModel(model);
  OgaShutdown();
  return 0;
}
