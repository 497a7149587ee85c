// Renders chat-template cases with @huggingface/jinja (the JS port used by transformers.js).
// usage: node chat_template_render.mjs ORACLE_DIR cases.json out.json
//   cases.json: {"cases": [{"template": "...", "context": {...}}, ...]}
//   out.json:   {"results": [{"rendered": "..."} | {"error": "..."}, ...]} in the same order
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [oracleDir, inPath, outPath] = process.argv.slice(2);
const entry = path.join(oracleDir, 'node_modules/@huggingface/jinja/dist/index.js');
const { Template } = await import(pathToFileURL(entry).href);
const { cases } = JSON.parse(fs.readFileSync(inPath, 'utf8'));
const compiled = new Map();  // many cases share a template
const results = cases.map(({ template, context }) => {
  try {
    if (!compiled.has(template)) compiled.set(template, new Template(template));
    // Strings are UTF-16 here: slicing can split a surrogate pair; keep the output valid UTF-8.
    return { rendered: compiled.get(template).render(context).toWellFormed() };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
fs.writeFileSync(outPath, JSON.stringify({ oracle: '@huggingface/jinja', results }));
