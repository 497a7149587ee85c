"""Stream a continuation of a prompt: python3 generate.py -m MODEL_DIR -p "Once upon a time" [-n 100] [--sample]"""

import argparse

import onnxllm as og


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-m", "--model", required=True, help="model folder (genai_config.json)")
    parser.add_argument("-p", "--prompt", default="Once upon a time")
    parser.add_argument("-n", "--max-new-tokens", type=int, default=100)
    parser.add_argument("--sample", action="store_true", help="top-p sampling instead of greedy search")
    args = parser.parse_args()

    model = og.Model(args.model)
    tokenizer = og.Tokenizer(model)
    stream = tokenizer.create_stream()
    prompt = tokenizer.encode(args.prompt)

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(prompt) + args.max_new_tokens, do_sample=args.sample, top_p=0.9)
    generator = og.Generator(model, params)
    generator.append_tokens(prompt)
    print(args.prompt, end="", flush=True)
    while not generator.is_done():
        generator.generate_next_token()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)
    print()


if __name__ == "__main__":
    main()
