import onnxllm as og
model = og.Model("./phi-2-int4")
tokenizer = og.Tokenizer(model)
tokenizer_stream = tokenizer.create_stream()
input_tokens = tokenizer.encode("Write a short haiku about autumn leaves:")
params = og.GeneratorParams(model)
params.input_ids = input_tokens
params.max_length = 200
params.temperature = 0.7
params.do_sample = True
params.top_p = 0.95
generator = og.Generator(model, params)
while not generator.is_done():
    generator.compute_logits()
    generator.generate_next_token()
    new_token = generator.get_output_tokens()[generator.get_current_sequence_length() - 1]
    print(tokenizer_stream.decode(new_token), end='', flush=True)
