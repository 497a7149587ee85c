// The official OpenAI client (npm `openai`) against `onnxllm serve`: chat, streaming chat,
// completions, n > 1, a tool call, a reply held to a JSON schema and a cancelled stream. Prints one JSON object with what it saw;
// tests/python/test_server.py checks it against onnxllm's own generation.
// Usage: node openai_client.mjs OPENAI_MODULE_DIR BASE_URL API_KEY MODEL TOOL_BASE_URL TOOL_MODEL
// (the tool call goes to a second server whose model writes one: tests/python/scripted_model.py).
import { createRequire } from "node:module";

const [moduleDir, baseURL, apiKey, model, toolBaseURL, toolModel] = process.argv.slice(2);
const require = createRequire(moduleDir + "/");
const OpenAI = require("openai").default ?? require("openai");
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
const out = {};

const messages = [{ role: "user", content: "Once upon a time" }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 24, temperature: 0 });
out.chat = { content: chat.choices[0].message.content, finish: chat.choices[0].finish_reason, usage: chat.usage };

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let streamed = "", finish = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  chunks += 1;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    streamed += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.stream = { content: streamed, finish, usage, chunks };

const completion = await client.completions.create({ model, prompt: "Lily and Tom", max_tokens: 16, temperature: 0 });
out.completion = { text: completion.choices[0].text, finish: completion.choices[0].finish_reason };

const many = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0.9, seed: 7, n: 3 });
out.n = many.choices.map((c) => c.message.content);

const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
const toolClient = new OpenAI({ baseURL: toolBaseURL, apiKey, maxRetries: 0 });
const toolCall = await toolClient.chat.completions.create({
  model: toolModel, messages: [{ role: "user", content: "What is the weather in Paris?" }], tools, temperature: 0,
});
out.tool = { message: toolCall.choices[0].message, finish: toolCall.choices[0].finish_reason };
const toolStream = await toolClient.chat.completions.create({
  model: toolModel, messages: [{ role: "user", content: "What is the weather in Paris?" }], tools, temperature: 0, stream: true,
});
const streamedCalls = [];
let toolFinish = null;
for await (const chunk of toolStream) {
  for (const c of chunk.choices) {
    for (const call of c.delta?.tool_calls ?? []) streamedCalls.push(call);
    if (c.finish_reason) toolFinish = c.finish_reason;
  }
}
out.tool_stream = { calls: streamedCalls, finish: toolFinish };

// Structured output: a streamed reply held to a JSON schema.
const schema = {
  type: "object", properties: { name: { type: "string", maxLength: 12 }, age: { type: "integer" } },
  required: ["name", "age"], additionalProperties: false,
};
const structured = await client.chat.completions.create({
  model, messages, max_tokens: 300, temperature: 0, stream: true,
  response_format: { type: "json_schema", json_schema: { name: "person", schema, strict: true } },
});
let structuredText = "", structuredFinish = null;
for await (const chunk of structured) {
  for (const c of chunk.choices) {
    structuredText += c.delta?.content ?? "";
    if (c.finish_reason) structuredFinish = c.finish_reason;
  }
}
out.structured = { content: structuredText, finish: structuredFinish, schema };

// A stream the client abandons after its first chunk.
const controller = new AbortController();
const long = await client.chat.completions.create(
  { model, messages, max_tokens: 400, temperature: 0, stream: true }, { signal: controller.signal });
let seen = 0;
out.cancel_error = null;  // the client may end the iteration quietly instead of throwing
try {
  for await (const chunk of long) {
    seen += 1;
    if (seen === 2) controller.abort();
  }
} catch (e) {
  out.cancel_error = e.name;
}
out.cancel_seen = seen;

try {
  await client.chat.completions.create({ model: "no-such-model", messages });
} catch (e) {
  out.bad_model = { status: e.status, code: e.code, message: e.message };
}
try {
  await new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).models.list();
} catch (e) {
  out.bad_key = { status: e.status, code: e.code };
}
out.models = (await client.models.list()).data.map((m) => m.id);
console.log(JSON.stringify(out));
