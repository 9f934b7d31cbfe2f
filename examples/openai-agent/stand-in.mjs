// A stand-in for the OpenAI API on loopback, for running agent.mjs offline
// (and in tests/integration/test-openai-agent.sh): POST /v1/chat/completions
// answers a fixed script by how far the conversation is: write hello.py,
// run it, then a last answer quoting what the run printed. It checks what a
// real server would need (a model, the tools, each tool call answered) and
// answers 400 otherwise. Usage: node stand-in.mjs [PORT] (0: any; the port
// is printed on stdout).
import http from "node:http";

const script = [
  { name: "write_file", args: { path: "/tmp/hello.py", content: "print(6 * 7)\n" } },
  { name: "run_command", args: { command: "python3 /tmp/hello.py" } },
];

function answer(body) {
  const toolMsgs = body.messages.filter((m) => m.role === "tool");
  const step = toolMsgs.length;
  const base = { id: `chatcmpl-${step}`, object: "chat.completion", created: Math.floor(Date.now() / 1000),
    model: body.model, usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } };
  if (step < script.length) {
    const { name, args } = script[step];
    return { ...base, choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null,
      tool_calls: [{ id: `call_${step}`, type: "function", function: { name, arguments: JSON.stringify(args) } }] } }] };
  }
  const ran = toolMsgs[toolMsgs.length - 1].content;
  const out = /stdout:\n([^\n]*)/.exec(ran)?.[1] ?? "(nothing)";
  return { ...base, choices: [{ index: 0, finish_reason: "stop",
    message: { role: "assistant", content: `The program printed ${out}.` } }] };
}

function problem(body) {
  if (!body || typeof body.model !== "string" || !Array.isArray(body.messages)) return "expected a model and messages";
  if (!Array.isArray(body.tools) || !body.tools.some((t) => t.function?.name === "run_command")) return "expected the tools";
  const asked = body.messages.flatMap((m) => m.tool_calls ?? []).map((c) => c.id);
  const answered = body.messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
  if (asked.join() !== answered.join()) return "every tool call needs its answer";
  return null;
}

const server = http.createServer((req, res) => {
  let data = "";
  req.on("data", (c) => { data += c; });
  req.on("end", () => {
    let body = null;
    try { body = JSON.parse(data); } catch { /* problem() says so */ }
    const why = req.method === "POST" && req.url === "/v1/chat/completions" ? problem(body) : "no such endpoint";
    const out = why ? { error: { message: why, type: "invalid_request_error" } } : answer(body);
    res.writeHead(why ? 400 : 200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(out));
  });
});
server.listen(Number(process.argv[2] ?? 0), "127.0.0.1", () => console.log(server.address().port));
