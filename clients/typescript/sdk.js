// An SDK in the shape of E2B's (camelCase), over the `sandcap serve` daemon.
//
//   import { Sandbox } from "sandcap/sdk";      // instead of: from "e2b"
//   const sb = await Sandbox.create("agent", { timeoutMs: 300_000, envs: { K: "V" } });
//   const r = await sb.commands.run("echo hi");  // r.stdout === "hi\n"
//   const h = await sb.commands.run("sleep 60", { background: true }); await h.kill();
//   await sb.files.write("/work/a.txt", "x"); await sb.files.read("/work/a.txt");
//   await sb.kill();
//
// Every command and file operation runs inside the sandbox, behind its
// policy's walls, and is recorded in its audit log. What differs from E2B's:
// docs/api.md, "An SDK in E2B's shape". No dependencies; types: sdk.d.ts.
import http from "node:http";
import { Readable } from "node:stream";
import { basename } from "node:path";

export const DEFAULT_SOCKET = "/run/sandcap.sock";
const DEFAULT_COMMAND_TIMEOUT_MS = 60_000;

export class SandboxError extends Error {
  constructor(code, message, path = null, status = 0) {
    super(`${code}: ${message}${path ? ` (at ${path})` : ""}`);
    this.name = "SandboxError";
    this.code = code;
    this.detail = message;
    this.path = path;
    this.status = status;
  }
}
export class NotFoundError extends SandboxError {}
export class TimeoutError extends SandboxError {}
export class InvalidArgumentError extends SandboxError {}
export class CommandExitError extends SandboxError {
  constructor(result) {
    super("command_exit", `command exited with status ${result.exitCode}`);
    this.name = "CommandExitError";
    Object.assign(this, { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode,
      error: result.error, limitsHit: result.limitsHit });
  }
}

/** An apply refused (nothing written): paths the host changed since the sandbox
 * started (`sandcap workspace apply` exits 2); {force: true} writes over them. */
export class WorkspaceConflictError extends SandboxError {}

function errorFrom(status, body) {
  let code = `http_${status}`, msg = body.toString("utf8").slice(0, 300), path = null, o = {}, e = {};
  try {
    o = JSON.parse(body.toString("utf8"));
    e = o.error;
    [code, msg, path] = [e.code ?? "error", e.message ?? "", e.path ?? null];
  } catch { /* not ours: the text as it came */ }
  const C = code === "conflicts" ? WorkspaceConflictError : status === 404 ? NotFoundError
    : status === 408 ? TimeoutError : status === 400 ? InvalidArgumentError : SandboxError;
  const err = new C(code, msg, path, status);
  // a workspace apply's, as the CLI's: its exit code, conflicts, what it did
  if (e?.exit_code !== undefined) Object.assign(err, { exitCode: e.exit_code, conflicts: e.conflicts ?? [],
    result: o.result ?? {} });
  return err;
}

async function readAll(res) {
  const parts = [];
  for await (const c of res) parts.push(c);
  return Buffer.concat(parts);
}

class Api {
  constructor(opts = {}) {
    this.socketPath = opts.socketPath ?? process.env.SANDCAP_SOCKET ?? DEFAULT_SOCKET;
    this.requestTimeoutMs = opts.requestTimeoutMs;
  }

  // The response, its status checked; body: a string, Buffer, object (JSON) or a stream.
  open(method, path, body, headers = {}) {
    return new Promise((resolve, reject) => {
      let data = body;
      const h = { ...headers };
      if (body !== undefined && !(typeof body === "string" || Buffer.isBuffer(body) || body instanceof Uint8Array
        || typeof body.pipe === "function")) {
        data = JSON.stringify(body);
        h["Content-Type"] = "application/json";
      }
      if (typeof data === "string" || Buffer.isBuffer(data) || data instanceof Uint8Array)
        h["Content-Length"] = Buffer.byteLength(data);
      const req = http.request({ socketPath: this.socketPath, method, path, headers: h, agent: false,
        timeout: this.requestTimeoutMs }, async (res) => {
        if (res.statusCode >= 300) reject(errorFrom(res.statusCode, await readAll(res)));
        else resolve(res);
      });
      req.on("error", reject);
      if (data && typeof data.pipe === "function") data.pipe(req);
      else req.end(data);
    });
  }

  async call(method, path, body, headers) {
    const res = await this.open(method, path, body, headers);
    const buf = await readAll(res);
    return (res.headers["content-type"] ?? "").startsWith("application/json") ? JSON.parse(buf) : buf;
  }
}

const q = (path, params) => {
  const s = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => [k, String(v)])).toString();
  return s ? `${path}?${s}` : path;
};

function entryInfo(o) {
  const perms = [..."rwxrwxrwx"].map((c, i) => (o.mode & (1 << (8 - i)) ? c : "-")).join("");
  return { name: o.name, type: o.type, path: o.path, size: o.size, mode: o.mode, permissions: perms,
    modifiedTime: new Date(o.mtime * 1000) };
}

function sandboxInfo(o) {
  return { sandboxId: o.id, templateId: o.policy, name: o.policy, metadata: o.metadata ?? {},
    startedAt: new Date(o.created_ms), endAt: o.end_ms ? new Date(o.end_ms) : undefined, state: o.state ?? "running" };
}

function commandResult(final, stdout, stderr) {
  if (!final) throw new SandboxError("disconnected", "the command's stream ended without its result");
  if (final.error) throw new SandboxError(final.error.code ?? "error", final.error.message ?? "");
  const r = { stdout, stderr, exitCode: final.exit_code, error: final.signal ? `signal: ${final.signal}` : undefined,
    limitsHit: final.limits_hit ?? [] };
  if (r.limitsHit.includes("timeout")) throw new TimeoutError("timeout", "the command passed its timeout and was killed");
  if (r.exitCode !== 0) throw new CommandExitError(r);
  return r;
}

// Reads a command's NDJSON stream: the first line (its pid), then a handle.
async function openHandle(api, sid, res, opts = {}) {
  const it = res[Symbol.asyncIterator]();
  let buf = "";
  const nextLine = async () => {
    for (;;) {
      const i = buf.indexOf("\n");
      if (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        return line;
      }
      const { value, done } = await it.next();
      if (done) return buf ? ((buf = ""), buf) : null;
      buf += value.toString("utf8");
    }
  };
  const first = JSON.parse(await nextLine());
  return new CommandHandle(api, sid, res, first.pid, nextLine, opts);
}

export class CommandHandle {
  constructor(api, sid, res, pid, nextLine, opts) {
    this.api = api;
    this.sid = sid;
    this.res = res;
    this.pid = pid;
    this.out = [];
    this.err = [];
    this.final = null;
    this.onStdout = opts.onStdout;
    this.onStderr = opts.onStderr;
    this.onPty = opts.onPty;
    this.done = (async () => {
      try {
        for (let line; (line = await nextLine()) !== null;) {
          if (!line.trim()) continue;
          const o = JSON.parse(line);
          if (o.stream === "pty") {
            // bytes, as the terminal wrote them
            if (this.onPty) this.onPty(new Uint8Array(Buffer.from(o.data, "base64")));
          } else if (o.stream) {
            const text = Buffer.from(o.data, "base64").toString("utf8");
            (o.stream === "stdout" ? this.out : this.err).push(text);
            const cb = o.stream === "stdout" ? this.onStdout : this.onStderr;
            if (cb) cb(text);
          } else if ("exit_code" in o || o.error) this.final = o;
        }
      } catch { /* disconnected: wait() says so */ }
    })();
  }

  get stdout() { return this.out.join(""); }
  get stderr() { return this.err.join(""); }
  get exitCode() { return this.final?.exit_code; }

  async wait() {
    await this.done;
    return commandResult(this.final, this.stdout, this.stderr);
  }

  async disconnect() { this.res.destroy(); }

  async kill() { return new Commands(this.api, this.sid).kill(this.pid); }
}

export class Commands {
  constructor(api, sid) {
    this.api = api;
    this.sid = sid;
  }

  path(...rest) { return ["/v1/sessions", this.sid, "commands", ...rest].join("/"); }

  /** Runs cmd with /bin/sh -c: its result, or with background: true a CommandHandle. */
  async run(cmd, opts = {}) {
    const body = { argv: ["/bin/sh", "-c", cmd], background: !!opts.background,
      timeout: (opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS) / 1000 };
    for (const k of ["envs", "user", "cwd", "stdin", "tag"]) if (opts[k] !== undefined) body[k] = opts[k];
    const res = await this.api.open("POST", this.path(), body);
    const h = await openHandle(this.api, this.sid, res, opts);
    return opts.background ? h : h.wait();
  }

  /** Follows a running command again: what it wrote (its last 1 MiB) and on. */
  async connect(pid, opts = {}) {
    return openHandle(this.api, this.sid, await this.api.open("GET", this.path(pid)), opts);
  }

  async list() {
    const o = await this.api.call("GET", this.path());
    return o.commands.map((c) => ({ pid: c.pid, tag: c.tag, cmd: c.argv[0], args: c.argv.slice(1),
      envs: c.envs ?? {}, cwd: c.cwd ?? undefined }));
  }

  /** SIGKILL to its process group; false when there is no such command. */
  async kill(pid) {
    try {
      await this.api.call("DELETE", this.path(pid));
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  async sendStdin(pid, data) { await this.api.call("POST", this.path(pid, "stdin"), Buffer.from(data)); }

  async closeStdin(pid) { await this.api.call("POST", q(this.path(pid, "stdin"), { eof: 1 }), Buffer.alloc(0)); }
}

// The shell of a pty: bash when the sandbox has it, as E2B's, else sh.
const PTY_SHELL = ["/bin/sh", "-c", "command -v bash >/dev/null && exec bash -i; exec sh -i"];

/** Interactive terminals: a shell on a pty inside the sandbox (`sandcap exec -t`'s tty exec). */
export class Pty {
  constructor(api, sid) {
    this.api = api;
    this.commands = new Commands(api, sid);
    this.sid = sid;
  }

  /** opts: cols, rows (default 80x24), onData(bytes), envs, cwd, timeoutMs (0: none), cmd. */
  async create(opts = {}) {
    const body = { argv: opts.cmd ?? PTY_SHELL, background: true,
      timeout: (opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS) / 1000,
      pty: { cols: opts.cols ?? 80, rows: opts.rows ?? 24 },
      envs: { TERM: "xterm-256color", ...(opts.envs ?? {}) } };
    for (const k of ["user", "cwd"]) if (opts[k] !== undefined) body[k] = opts[k];
    const res = await this.api.open("POST", this.commands.path(), body);
    return openHandle(this.api, this.sid, res, { onPty: opts.onData });
  }

  async sendInput(pid, data) { return this.commands.sendStdin(pid, data); }

  async sendStdin(pid, data) { return this.commands.sendStdin(pid, data); }

  async resize(pid, size) {
    await this.api.call("POST", this.commands.path(pid, "resize"), { cols: size.cols, rows: size.rows });
  }

  async kill(pid) { return this.commands.kill(pid); }
}

export const FilesystemEventType = Object.freeze({ CHMOD: "chmod", CREATE: "create", REMOVE: "remove",
  RENAME: "rename", WRITE: "write" });
const EVENT_TYPES = new Set(Object.values(FilesystemEventType));

/** A directory watched (files.watchDir): stop() ends it. */
export class WatchHandle {
  constructor(res, onEvent, opts) {
    this.res = res;
    let buf = "", stopped = false;
    this.stopFlag = () => { stopped = true; };
    const timer = opts.timeoutMs ? setTimeout(() => this.stop(), opts.timeoutMs) : null;
    if (timer) timer.unref();
    res.on("data", (chunk) => {
      buf += chunk.toString("utf8");
      for (let i; (i = buf.indexOf("\n")) >= 0;) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.trim()) continue;
        const o = JSON.parse(line);
        if (EVENT_TYPES.has(o.type)) onEvent({ name: o.name, type: o.type }); // "overflow": some were lost
      }
    });
    const end = (err) => { if (timer) clearTimeout(timer); if (opts.onExit) opts.onExit(stopped ? undefined : err); };
    res.on("end", () => end());
    res.on("error", (e) => end(e));
  }

  async stop() { this.stopFlag(); this.res.destroy(); }
}

/** The copy-on-write grants of a sandbox (sandcap workspace, docs/api.md): while it
 * runs and after it was killed. opts.workspace: one of list()'s ids (default: its only one). */
export class Workspace {
  constructor(api, sid) {
    this.api = api;
    this.base = `/v1/sessions/${sid}/workspace`;
  }

  async list() { return (await this.api.call("GET", this.base)).workspaces; }

  /** {workspace, grant, changes: [{op: "A"|"M"|"m"|"D"|"R", path, type, from?, link?}], patch?} */
  async diff(opts = {}) {
    return this.api.call("GET", q(`${this.base}/diff`, { workspace: opts.workspace, patch: opts.patch ? 1 : undefined }));
  }

  /** Writes the changes into the host folder; WorkspaceConflictError when the host
   * changed a path since the start (unless {force: true}). */
  async apply(opts = {}) {
    return this.api.call("POST", q(`${this.base}/apply`, { workspace: opts.workspace, force: opts.force ? 1 : undefined }));
  }

  /** Removes a stopped sandbox's kept workspace; the host folder stays as it is. */
  async discard(opts = {}) {
    await this.api.call("POST", q(`${this.base}/discard`, { workspace: opts.workspace }));
  }
}

export class Filesystem {
  constructor(api, sid) {
    this.api = api;
    this.base = `/v1/sessions/${sid}`;
  }

  /** format: "text" (default), "bytes" (Uint8Array), "blob", or "stream" (a web ReadableStream). */
  async read(path, opts = {}) {
    const res = await this.api.open("GET", q(`${this.base}/files`, { path }));
    const format = opts.format ?? "text";
    if (format === "stream") return Readable.toWeb(res);
    const buf = await readAll(res);
    if (format === "bytes") return new Uint8Array(buf);
    if (format === "blob") return new Blob([buf]);
    return buf.toString("utf8");
  }

  /** data: a string, bytes, a Blob, or a stream (web or Node), sent as it is read. */
  async write(pathOrFiles, data) {
    if (Array.isArray(pathOrFiles)) return this.writeFiles(pathOrFiles);
    const path = pathOrFiles;
    let body = data;
    const headers = {};
    if (typeof Blob !== "undefined" && data instanceof Blob) body = Buffer.from(await data.arrayBuffer());
    else if (data instanceof ArrayBuffer) body = Buffer.from(data);
    else if (data && typeof data.getReader === "function") body = Readable.fromWeb(data);
    if (body && typeof body.pipe === "function") {
      // a file's stream: its length is known, so the daemon streams it on (any size)
      if (typeof body.path === "string") {
        const { statSync } = await import("node:fs");
        headers["Content-Length"] = statSync(body.path).size - (body.start ?? 0);
      } else headers["Transfer-Encoding"] = "chunked";
    }
    await this.api.call("PUT", q(`${this.base}/files`, { path }), body, headers);
    return { name: basename(path), type: "file", path };
  }

  async writeFiles(files) {
    const out = [];
    for (const f of files) out.push(await this.write(f.path, f.data));
    return out;
  }

  async list(path, opts = {}) {
    const o = await this.api.call("GET", q(`${this.base}/ls`, { path, depth: opts.depth ?? 1 }));
    return o.entries.map(entryInfo);
  }

  async getInfo(path) { return entryInfo(await this.api.call("GET", q(`${this.base}/stat`, { path }))); }

  async exists(path) {
    try {
      await this.getInfo(path);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  /** true when it was made, false when it was there already. */
  async makeDir(path) { return (await this.api.call("POST", q(`${this.base}/mkdir`, { path }))).created; }

  async remove(path) { await this.api.call("DELETE", q(`${this.base}/files`, { path })); }

  /** Changes in directory path (and below with opts.recursive), by inotify inside the sandbox,
   * from when it resolves; opts.timeoutMs (default 60 s, 0: none), opts.onExit(err). */
  async watchDir(path, onEvent, opts = {}) {
    const res = await this.api.open("GET", q(`${this.base}/watch`, { path, recursive: opts.recursive ? 1 : undefined }));
    return new WatchHandle(res, onEvent, { timeoutMs: opts.timeoutMs ?? 60_000, onExit: opts.onExit });
  }

  async rename(oldPath, newPath) {
    await this.api.call("POST", q(`${this.base}/rename`, { path: oldPath, to: newPath }));
    return this.getInfo(newPath);
  }
}

const toSeconds = (ms) => Math.max(1, Math.ceil(ms / 1000));

export class Sandbox {
  constructor(sandboxId, api, record = {}) {
    this.sandboxId = sandboxId;
    this.api = api;
    this.record = record;
    this.commands = new Commands(api, sandboxId);
    this.files = new Filesystem(api, sandboxId);
    this.pty = new Pty(api, sandboxId);
    this.workspace = new Workspace(api, sandboxId);
  }

  get auditPath() { return this.record.audit; }

  /** Where the host reaches port of the sandbox, "127.0.0.1:HOSTPORT" (net.serve). */
  getHost(port) {
    const addr = this.record.serve?.[String(port)];
    if (addr === undefined) throw new SandboxError("not_served", `port ${port} is not in the policy's net.serve`);
    return addr;
  }

  /** template: a policy the daemon offers; opts: timeoutMs, envs, metadata, socketPath, token. */
  static async create(template, opts = {}) {
    if (typeof template === "object" && template !== null && !("version" in template)) [template, opts] = [undefined, template];
    const api = new Api(opts);
    const body = opts.token ? { token: opts.token } : { policy: template ?? "default" };
    if (opts.timeoutMs !== undefined) body.timeout = toSeconds(opts.timeoutMs);
    if (opts.envs) body.envs = opts.envs;
    if (opts.metadata) body.metadata = opts.metadata;
    const o = await api.call("POST", "/v1/sessions", body);
    return new Sandbox(o.id, api, o);
  }

  /** Finds it again; a paused one is resumed, as E2B's. */
  static async connect(sandboxId, opts = {}) {
    const api = new Api(opts);
    let o = await api.call("GET", `/v1/sessions/${sandboxId}`);
    if (o.state === "paused") o = await api.call("POST", `/v1/sessions/${sandboxId}/resume`);
    return new Sandbox(sandboxId, api, o);
  }

  /** Thaws a paused sandbox (its clocks run on from where they stood); opts.timeoutMs as setTimeout. */
  static async resume(sandboxId, opts = {}) {
    const api = new Api(opts);
    const sb = new Sandbox(sandboxId, api, await api.call("POST", `/v1/sessions/${sandboxId}/resume`));
    if (opts.timeoutMs !== undefined) await sb.setTimeout(opts.timeoutMs);
    return sb;
  }

  /** Freezes every process of it (the cgroup freezer); its wall clock stops meanwhile.
   * true when it was running, false when it was paused already. */
  async pause() {
    const before = await this.api.call("GET", `/v1/sessions/${this.sandboxId}`);
    await this.api.call("POST", `/v1/sessions/${this.sandboxId}/pause`);
    return before.state !== "paused";
  }

  /** The caller's sandboxes; opts.query.metadata keeps those that match. */
  static async list(opts = {}) {
    const o = await new Api(opts).call("GET", "/v1/sessions");
    const want = opts.query?.metadata ?? {};
    return o.sessions.map(sandboxInfo).filter((i) => Object.entries(want).every(([k, v]) => i.metadata[k] === v));
  }

  static async kill(sandboxId, opts = {}) {
    try {
      await new Api(opts).call("DELETE", `/v1/sessions/${sandboxId}`);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  static async setTimeout(sandboxId, timeoutMs, opts = {}) {
    await new Api(opts).call("POST", `/v1/sessions/${sandboxId}/timeout`, { timeout: toSeconds(timeoutMs) });
  }

  static async getInfo(sandboxId, opts = {}) {
    return sandboxInfo(await new Api(opts).call("GET", `/v1/sessions/${sandboxId}`));
  }

  async kill() { return Sandbox.kill(this.sandboxId, { socketPath: this.api.socketPath }); }

  /** It ends timeoutMs from now (within the policy's limits.wall). */
  async setTimeout(timeoutMs) { return Sandbox.setTimeout(this.sandboxId, timeoutMs, { socketPath: this.api.socketPath }); }

  async getInfo() { return Sandbox.getInfo(this.sandboxId, { socketPath: this.api.socketPath }); }

  async isRunning() {
    try {
      await this.api.call("GET", `/v1/sessions/${this.sandboxId}`);
      return true;
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }
}

export default Sandbox;
