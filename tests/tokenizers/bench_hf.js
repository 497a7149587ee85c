// usage: node bench_hf.js tokenizer.json text.txt  -> "ms ids" for Hugging Face tokenizers (npm),
// encoding the whole file once after a warm-up, without special tokens.
const { Tokenizer } = require('tokenizers'); const fs = require('fs');
(async () => {
  const tk = Tokenizer.fromFile(process.argv[2]);
  const text = fs.readFileSync(process.argv[3], 'utf8');
  await tk.encode(text.slice(0, 10000), null, { addSpecialTokens: false });
  const t0 = process.hrtime.bigint();
  const enc = await tk.encode(text, null, { addSpecialTokens: false });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(ms.toFixed(1), enc.getIds().length);
})();
