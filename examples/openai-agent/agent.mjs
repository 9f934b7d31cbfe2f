// An agent loop: a model (through npm's `openai` SDK) asks for tools, and
// every tool runs in a sandcap sandbox through the TypeScript SDK
// (sandcap/sdk, E2B's shape), behind the policy's walls and recorded in its
// audit log. README.md says how to run it, against OpenAI or offline
// against stand-in.mjs.
//
//   SANDCAP_SOCKET=/run/sandcap.sock OPENAI_API_KEY=... node agent.mjs "the task"
import OpenAI from "openai";
import { Sandbox } from "sandcap/sdk";

const task = process.argv[2] ?? "Write a Python program that prints 6 * 7, run it, and tell me what it printed.";
const model = process.env.OPENAI_MODEL ?? "gpt-4o-mini";
const template = process.env.SANDCAP_POLICY ?? "agent";
const MAX_TURNS = 10;
const MAX_OUTPUT = 16384; // bytes of a tool's result handed back to the model

const tools = [
  { type: "function", function: { name: "run_command", description: "Run a shell command in the sandbox (/bin/sh -c).",
    parameters: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } } },
  { type: "function", function: { name: "write_file", description: "Write a text file in the sandbox.",
    parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"] } } },
  { type: "function", function: { name: "read_file", description: "Read a text file of the sandbox.",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } },
];

// One tool call, done in the sandbox: its result as text for the model.
// A refusal of the walls or a failing command is a result too, not a crash.
async function callTool(sb, name, args) {
  try {
    if (name === "run_command") {
      const r = await sb.commands.run(args.command, { timeoutMs: 60_000 }).catch((e) => {
        if (e.exitCode === undefined) throw e;
        return e; // CommandExitError: its output and status are the result
      });
      return `exit code ${r.exitCode}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`.slice(0, MAX_OUTPUT);
    }
    if (name === "write_file") {
      await sb.files.write(args.path, args.content);
      return `wrote ${Buffer.byteLength(args.content)} bytes to ${args.path}`;
    }
    if (name === "read_file") return (await sb.files.read(args.path)).slice(0, MAX_OUTPUT);
    return `error: no tool ${name}`;
  } catch (e) {
    return `error: ${e.code ?? "failed"}: ${e.detail ?? e.message}`;
  }
}

const openai = new OpenAI(); // OPENAI_API_KEY, OPENAI_BASE_URL
const sb = await Sandbox.create(template, { timeoutMs: 300_000, metadata: { example: "openai-agent" } });
console.error(`sandbox ${sb.sandboxId}, audit log ${sb.auditPath}`);
try {
  const messages = [
    { role: "system", content: "You are an agent with a Linux sandbox. Use the tools to do the task; the files you write persist between calls." },
    { role: "user", content: task },
  ];
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const res = await openai.chat.completions.create({ model, messages, tools });
    const msg = res.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) {
      console.log(msg.content);
      break;
    }
    for (const call of msg.tool_calls) {
      const args = JSON.parse(call.function.arguments || "{}");
      console.error(`tool ${call.function.name} ${JSON.stringify(args)}`);
      messages.push({ role: "tool", tool_call_id: call.id, content: await callTool(sb, call.function.name, args) });
    }
  }
} finally {
  await sb.kill(); // stops it; its log is sealed
}
