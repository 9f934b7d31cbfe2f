// Client for sandcap sandboxes (no dependencies, Node >= 18, ESM).
//
//   import { Sandbox } from "sandcap";
//   const sb = await Sandbox.create({ version: 1, limits: { memory: "256M" } });
//   try { const r = await sb.run(["python3", "-c", "print(6 * 7)"]); } finally { await sb.close(); }
//
// A Sandbox is one session: a sandbox that stays up while commands run in
// it. It talks to the `sandcap serve` daemon when its socket is reachable,
// else runs the `sandcap` CLI itself. Types: index.d.ts.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync, unlinkSync, mkdtempSync, rmdirSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join, delimiter } from "node:path";

export const DEFAULT_SOCKET = "/run/sandcap.sock";

export class SandcapError extends Error {
  constructor(code, message, path = null, status = 0) {
    super(`${code}: ${message}${path ? ` (at ${path})` : ""}`);
    this.name = "SandcapError";
    this.code = code;
    this.detail = message;
    this.path = path;
    this.status = status;
  }
}

function parseLine(line) {
  const o = JSON.parse(line);
  if (o.error) throw new SandcapError(o.error.code ?? "error", o.error.message ?? "", o.error.path ?? null);
  if (o.stream) return { stream: o.stream, data: Buffer.from(o.data, "base64") };
  if ("exit_code" in o) return { final: o };
  throw new SandcapError("bad_stream", `unexpected line ${line.slice(0, 100)}`);
}

async function* lines(chunks) {
  let buf = "";
  for await (const c of chunks) {
    buf += c.toString("utf8");
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.trim()) yield line;
    }
  }
  if (buf.trim()) yield buf;
}

function errorFrom(status, body) {
  try {
    const e = JSON.parse(body.toString("utf8")).error;
    return new SandcapError(e.code ?? "error", e.message ?? "", e.path ?? null, status);
  } catch {
    return new SandcapError(`http_${status}`, body.toString("utf8").slice(0, 200), null, status);
  }
}

function execBody(argv, opts = {}) {
  const body = { argv: [...argv] };
  if (opts.stdin !== undefined) body.stdin = Buffer.from(opts.stdin).toString("base64");
  if (opts.cwd !== undefined) body.cwd = opts.cwd;
  if (opts.env) body.env = { ...opts.env };
  return JSON.stringify(body);
}

/** Talks to `sandcap serve` over its unix socket (docs/api.md). */
export class DaemonTransport {
  constructor(socketPath) {
    this.socketPath = socketPath;
  }

  request(method, path, body) {
    return new Promise((resolve, reject) => {
      const headers = body !== undefined ? { "Content-Length": Buffer.byteLength(body) } : {};
      const req = http.request({ socketPath: this.socketPath, method, path, headers, agent: false }, resolve);
      req.on("error", reject);
      req.end(body);
    });
  }

  async call(method, path, body) {
    const res = await this.request(method, path, body);
    const parts = [];
    for await (const c of res) parts.push(c);
    const data = Buffer.concat(parts);
    if (res.statusCode >= 300) throw errorFrom(res.statusCode, data);
    return data;
  }

  async json(method, path, body) {
    return JSON.parse((await this.call(method, path, body)).toString("utf8"));
  }

  async start(policy, token) {
    let req;
    if (token !== undefined) req = { token };
    else if (typeof policy === "string" && existsSync(policy)) req = { policy: JSON.parse(readFileSync(policy, "utf8")) };
    else req = { policy };
    return this.json("POST", "/v1/sessions", JSON.stringify(req));
  }

  stop(id) {
    return this.json("DELETE", `/v1/sessions/${encodeURIComponent(id)}`);
  }

  async list() {
    return (await this.json("GET", "/v1/sessions")).sessions;
  }

  async *execStream(id, argv, opts) {
    const res = await this.request("POST", `/v1/sessions/${encodeURIComponent(id)}/exec`, execBody(argv, opts));
    if (res.statusCode >= 300) {
      const parts = [];
      for await (const c of res) parts.push(c);
      throw errorFrom(res.statusCode, Buffer.concat(parts));
    }
    for await (const line of lines(res)) yield parseLine(line);
  }

  q(id, what, path) {
    return `/v1/sessions/${encodeURIComponent(id)}/${what}?path=${encodeURIComponent(path)}`;
  }

  async put(id, path, data) {
    await this.call("PUT", this.q(id, "files", path), Buffer.from(data));
  }

  get(id, path) {
    return this.call("GET", this.q(id, "files", path));
  }

  async ls(id, path) {
    return (await this.json("GET", this.q(id, "ls", path))).entries;
  }

  async report(id) {
    return (await this.json("GET", `/v1/sessions/${encodeURIComponent(id)}/audit`)).report;
  }
}

function run(exe, args, input) {
  return new Promise((resolve, reject) => {
    const p = spawn(exe, args, { stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    const out = [], err = [];
    p.stdout.on("data", (c) => out.push(c));
    p.stderr.on("data", (c) => err.push(c));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString("utf8") }));
    if (input !== undefined) {
      p.stdin.on("error", () => {});
      p.stdin.end(input);
    }
  });
}

function cliError(r) {
  const first = (r.stderr.trim().split("\n")[0] || `exit status ${r.code}`).replace(/^sandcap: /, "");
  return new SandcapError("cli_failed", first, null, r.code);
}

/** Runs the `sandcap` CLI itself (no daemon). */
export class CliTransport {
  constructor(sandcap) {
    this.sandcap = sandcap;
  }

  async cli(args, input) {
    const r = await run(this.sandcap, args, input);
    if (r.code !== 0) throw cliError(r);
    return r.stdout;
  }

  async start(policy, token) {
    if (token !== undefined) throw new SandcapError("unsupported", "tokens need the daemon (sandcap serve --token-key)");
    let file = policy, dir = null;
    if (typeof policy === "object") {
      dir = mkdtempSync(join(tmpdir(), "sandcap-"));
      file = join(dir, "policy.json");
      writeFileSync(file, JSON.stringify(policy), { mode: 0o600 });
    }
    try {
      const info = JSON.parse((await this.cli(["session", "start", "--policy", file, "--json"])).toString("utf8"));
      info.id ??= info.name;
      return info;
    } finally {
      if (dir) {
        unlinkSync(file);
        rmdirSync(dir);
      }
    }
  }

  async stop(id) {
    return JSON.parse((await this.cli(["session", "stop", id, "--json"])).toString("utf8"));
  }

  async list() {
    return JSON.parse((await this.cli(["session", "list", "--json"])).toString("utf8"));
  }

  async *execStream(id, argv, opts = {}) {
    const args = ["exec", "--ndjson"];
    if (opts.stdin !== undefined) args.push("-i");
    if (opts.cwd !== undefined) args.push("--cwd", opts.cwd);
    for (const [k, v] of Object.entries(opts.env ?? {})) args.push("--env", `${k}=${v}`);
    args.push(id, "--", ...argv);
    const p = spawn(this.sandcap, args, { stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    const err = [];
    p.stderr.on("data", (c) => err.push(c));
    const closed = new Promise((resolve) => p.on("close", resolve));
    if (opts.stdin !== undefined) {
      p.stdin.on("error", () => {});
      p.stdin.end(Buffer.from(opts.stdin));
    }
    let final = false;
    for await (const line of lines(p.stdout)) {
      const item = parseLine(line);
      final ||= "final" in item;
      yield item;
    }
    const code = await closed;
    if (!final) throw cliError({ code, stderr: Buffer.concat(err).toString("utf8") });
  }

  async put(id, path, data) {
    await this.cli(["session", "put", id, path], Buffer.from(data));
  }

  get(id, path) {
    return this.cli(["session", "get", id, path]);
  }

  async ls(id, path) {
    return JSON.parse((await this.cli(["session", "ls", id, path, "--json"])).toString("utf8"));
  }

  async report(id, auditPath) {
    const r = await run(this.sandcap, ["audit", "report", auditPath, "--json"]);
    try {
      return JSON.parse(r.stdout.toString("utf8"));
    } catch {
      throw cliError(r);
    }
  }
}

function which(name) {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const p = join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return null;
}

/** The daemon when its socket is there (option, $SANDCAP_SOCKET or
 * /run/sandcap.sock), else the CLI (option, $SANDCAP or PATH). */
export function pickTransport(opts = {}) {
  let socketPath = opts.socketPath;
  if (socketPath === undefined && opts.sandcap === undefined) {
    socketPath = process.env.SANDCAP_SOCKET ?? (existsSync(DEFAULT_SOCKET) ? DEFAULT_SOCKET : undefined);
  }
  if (socketPath) return new DaemonTransport(socketPath);
  const exe = opts.sandcap ?? process.env.SANDCAP ?? which("sandcap");
  if (!exe) throw new SandcapError("no_sandcap", "no daemon socket and no sandcap binary on PATH");
  return new CliTransport(exe);
}

function resultOf(final, out, err, auditPath) {
  const stdout = Buffer.concat(out), stderr = Buffer.concat(err);
  return {
    exitCode: final.exit_code,
    signal: final.signal ?? null,
    limitsHit: final.limits_hit ?? [],
    durationMs: final.duration_ms ?? 0,
    stdout: stdout.toString("utf8"),
    stderr: stderr.toString("utf8"),
    stdoutBytes: stdout,
    stderrBytes: stderr,
    auditPath,
  };
}

export class Sandbox {
  constructor(transport, info) {
    this.transport = transport;
    this.info = info;
  }

  /** Starts a sandbox: policy is its JSON, a file name, or the name of a policy the daemon offers. */
  static async create(policy, opts = {}) {
    const t = pickTransport(opts);
    return new Sandbox(t, await t.start(opts.token !== undefined ? undefined : policy, opts.token));
  }

  /** Runs fn with a sandbox and stops it afterwards, whatever happens. */
  static async with(policy, fn, opts = {}) {
    const sb = await Sandbox.create(policy, opts);
    try {
      return await fn(sb);
    } finally {
      await sb.close();
    }
  }

  get id() {
    if (!this.info) throw new SandcapError("not_started", "the sandbox is stopped");
    return this.info.id ?? this.info.name;
  }

  get auditPath() {
    return this.info?.audit ?? null;
  }

  /** Yields {stream, data} chunks as the command writes, then {result}. */
  async *stream(argv, opts = {}) {
    const out = [], err = [];
    let final = null;
    for await (const item of this.transport.execStream(this.id, argv, opts)) {
      if ("final" in item) final = item.final;
      else {
        (item.stream === "stdout" ? out : err).push(item.data);
        yield item;
      }
    }
    if (!final) throw new SandcapError("exec_failed", "the command's stream ended without its result");
    yield { result: resultOf(final, out, err, this.auditPath) };
  }

  async run(argv, opts = {}) {
    let result = null;
    for await (const item of this.stream(argv, opts)) if (item.result) result = item.result;
    return result;
  }

  writeFile(path, data) {
    return this.transport.put(this.id, path, data);
  }

  readFile(path) {
    return this.transport.get(this.id, path);
  }

  listFiles(path = "/") {
    return this.transport.ls(this.id, path);
  }

  report() {
    return this.transport.report(this.id, this.auditPath);
  }

  async close() {
    if (!this.info) return null;
    const id = this.id;
    this.info = null;
    return this.transport.stop(id);
  }
}
