// E2B-shaped calls through the TypeScript SDK, the same as e2b_calls.py
// (tests/integration/test-sdk.sh). Usage: node e2b-calls.mjs SDK GRANT MARKER BIG-FILE
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, readFileSync, statSync } from "node:fs";

const [sdkPath, grant, marker, big] = process.argv.slice(2);
const { Sandbox, CommandExitError, TimeoutError, SandboxError, NotFoundError } = await import(sdkPath);
let failed = 0;
const check = (name, cond, why = "") => {
  console.log((cond ? "ok " : "not ok ") + name + (cond ? "" : `: ${JSON.stringify(why)}`));
  if (!cond) failed++;
};
const rejects = async (p, cls) => { try { await p; } catch (e) { return e instanceof cls ? e : null; } return null; };

const sb = await Sandbox.create("agent", { timeoutMs: 120_000, envs: { SDK_ENV: "from-create" },
  metadata: { client: "node", marker } });
check("create: an id", sb.sandboxId.startsWith("api-"), sb.sandboxId);
check("isRunning", await sb.isRunning());
const listed = (await Sandbox.list()).filter((i) => i.sandboxId === sb.sandboxId);
check("list: it, with its metadata", listed.length === 1 && listed[0].metadata.marker === marker, listed);
check("list filtered by metadata",
  JSON.stringify((await Sandbox.list({ query: { metadata: { marker } } })).map((i) => i.sandboxId)) === JSON.stringify([sb.sandboxId]));
const other = execFileSync(process.execPath, ["--input-type=module", "-e",
  `const { Sandbox } = await import(${JSON.stringify(sdkPath)}); const s = await Sandbox.connect(process.argv[1]);
   process.stdout.write((await s.commands.run("echo connected")).stdout);`, sb.sandboxId]).toString();
check("connect from another process", other === "connected\n", other);

let r = await sb.commands.run("echo $SDK_ENV; echo err >&2");
check("run: stdout, stderr, exitCode", r.stdout === "from-create\n" && r.stderr === "err\n" && r.exitCode === 0, r);
let e = await rejects(sb.commands.run("echo partial; exit 3"), CommandExitError);
check("a status other than 0 throws CommandExitError", e && e.exitCode === 3 && e.stdout === "partial\n", e);
r = await sb.commands.run("echo $A; pwd", { envs: { A: "b" }, cwd: grant });
check("run with envs and cwd", r.stdout === `b\n${grant}\n`, r);
const seen = [];
await sb.commands.run("echo one; echo two", { onStdout: (d) => seen.push(d) });
check("onStdout gets the output", seen.join("") === "one\ntwo\n", seen);
const t0 = Date.now();
check("a per-call timeout throws TimeoutError", !!(await rejects(sb.commands.run("sleep 30", { timeoutMs: 1000 }), TimeoutError)));
check("... within 5 s", Date.now() - t0 < 5000, Date.now() - t0);
e = await rejects(sb.commands.run("id", { user: "root" }), SandboxError);
check("user root is refused", e && e.code === "forbidden", e);

let started;
const gotOutput = new Promise((res) => { started = res; });
const h = await sb.commands.run(`echo started; sleep 300 # ${marker}`, { background: true, onStdout: () => started() });
check("background: a handle with a pid", Number.isInteger(h.pid) && h.pid > 0, h.pid);
check("its output streams while it runs", await Promise.race([gotOutput.then(() => true),
  new Promise((res) => setTimeout(() => res(false), 10000))]));
check("commands.list shows it", (await sb.commands.list()).some((p) => p.pid === h.pid && p.args.join(" ").includes(marker)));
check("commands.kill", await sb.commands.kill(h.pid));
e = await rejects(h.wait(), CommandExitError);
check("the killed command ends with 137", e && e.exitCode === 137, e);
check("commands.list no longer shows it", (await sb.commands.list()).every((p) => p.pid !== h.pid));
check("kill of a command that ended: false", (await sb.commands.kill(h.pid)) === false);

const h2 = await sb.commands.run("cat", { background: true, stdin: true });
await sb.commands.sendStdin(h2.pid, "hello stdin\n");
await sb.commands.closeStdin(h2.pid);
check("sendStdin", (await h2.wait()).stdout === "hello stdin\n");
const h3 = await sb.commands.run("echo one; sleep 1; echo two", { background: true });
await h3.disconnect();
const h4 = await sb.commands.connect(h3.pid);
check("connect(pid) re-attaches to its output", (await h4.wait()).stdout === "one\ntwo\n", h4.stdout);

let term = Buffer.alloc(0);
const until = async (text, ms = 10000) => {
  for (const t = Date.now(); Date.now() - t < ms; await new Promise((r) => setTimeout(r, 20)))
    if (term.includes(text)) return true;
  return false;
};
const onData = (b) => { term = Buffer.concat([term, Buffer.from(b)]); };
const pt = await sb.pty.create({ cols: 80, rows: 24, onData, envs: { PTY_ENV: "pty-env" }, cwd: grant });
check("pty.create: a handle with a pid", Number.isInteger(pt.pid) && pt.pid > 0, pt.pid);
await sb.pty.sendInput(pt.pid, new TextEncoder().encode("stty size; tty; echo $TERM $PTY_ENV; pwd\n"));
check("pty: its size, a tty inside, its envs and cwd", (await until("24 80")) && (await until("/dev/pts/"))
  && (await until("xterm-256color pty-env")) && (await until(grant)), term.toString());
await sb.pty.resize(pt.pid, { cols: 100, rows: 30 });
await sb.pty.sendStdin(pt.pid, "stty size\n");
check("pty.resize: the new size inside", await until("30 100"), term.toString());
await sb.pty.sendInput(pt.pid, "exit 3\n");
e = await rejects(pt.wait(), CommandExitError);
check("pty: the shell's exit status", e && e.exitCode === 3, e);
const pt2 = await sb.pty.create({ cols: 80, rows: 24, onData });
check("pty.kill", await sb.pty.kill(pt2.pid));
e = await rejects(pt2.wait(), CommandExitError);
check("the killed pty ends with 137", e && e.exitCode === 137, e);
check("resize of a command without a pty is refused", !!(await rejects(sb.pty.resize(h2.pid, { cols: 1, rows: 1 }), SandboxError)));

const d = `${grant}/node`;
check("makeDir", (await sb.files.makeDir(`${d}/sub`)) === true);
check("makeDir of one there: false", (await sb.files.makeDir(`${d}/sub`)) === false);
const w = await sb.files.write(`${d}/sub/a.txt`, "hello");
check("write", w.path === `${d}/sub/a.txt` && w.name === "a.txt", w);
await sb.files.write([{ path: `${d}/b.bin`, data: new Uint8Array([0, 1, 2]) }, { path: `${d}/kept.txt`, data: "kept by node\n" }]);
check("read text", (await sb.files.read(`${d}/sub/a.txt`)) === "hello");
check("read bytes", Buffer.from(await sb.files.read(`${d}/b.bin`, { format: "bytes" })).equals(Buffer.from([0, 1, 2])));
let streamed = [];
for await (const c of await sb.files.read(`${d}/sub/a.txt`, { format: "stream" })) streamed.push(Buffer.from(c));
check("read stream", Buffer.concat(streamed).toString() === "hello");
const names = (await sb.files.list(d, { depth: 2 })).map((x) => x.path.slice(d.length + 1)).sort();
check("list depth 2", JSON.stringify(names) === JSON.stringify(["b.bin", "kept.txt", "sub", "sub/a.txt"]), names);
check("list depth 1", JSON.stringify((await sb.files.list(d)).map((x) => x.name).sort()) === JSON.stringify(["b.bin", "kept.txt", "sub"]));
const info = await sb.files.getInfo(`${d}/sub/a.txt`);
check("getInfo", info.type === "file" && info.size === 5 && info.name === "a.txt", info);
check("exists", (await sb.files.exists(`${d}/sub/a.txt`)) && !(await sb.files.exists(`${d}/nope`)));
const moved = await sb.files.rename(`${d}/sub/a.txt`, `${d}/moved.txt`);
check("rename", moved.path === `${d}/moved.txt` && !(await sb.files.exists(`${d}/sub/a.txt`)));
await sb.files.remove(`${d}/sub`);
check("remove a directory", !(await sb.files.exists(`${d}/sub`)));
e = await rejects(sb.files.write("/etc/sdk-denied", "x"), SandboxError);
check("a write outside the grants is denied", e && e.code === "denied", e);
e = await rejects(sb.files.read("/etc/shadow"), SandboxError);
check("a read the walls refuse is refused", e && ["denied", "no_such_path"].includes(e.code), e);

await sb.files.write(`${d}/big.bin`, createReadStream(big));
const hash = createHash("sha256");
for await (const c of await sb.files.read(`${d}/big.bin`, { format: "stream" })) hash.update(c);
check("a 100 MB file written and read back as streams", (await sb.files.getInfo(`${d}/big.bin`)).size === statSync(big).size
  && hash.digest("hex") === createHash("sha256").update(readFileSync(big)).digest("hex"));
await sb.files.remove(`${d}/big.bin`);

const events = [];
const want = [["create", "w1.txt"], ["create", "wd/w2.txt"], ["rename", "w1.txt"], ["create", "w3.txt"],
  ["remove", "wd/w2.txt"], ["chmod", "w3.txt"]];
const has = (list, [t, n]) => list.some((e) => e.type === t && e.name === n);
const wh = await sb.files.watchDir(d, (e) => events.push(e), { recursive: true });
await sb.files.write(`${d}/w1.txt`, "x");
await sb.commands.run(`mkdir ${d}/wd; sleep 0.3; echo y > ${d}/wd/w2.txt; mv ${d}/w1.txt ${d}/w3.txt; rm ${d}/wd/w2.txt; chmod 600 ${d}/w3.txt`);
for (const t = Date.now(); Date.now() - t < 10000 && !want.every((w) => has(events, w));) await new Promise((r) => setTimeout(r, 20));
check("watchDir recursive: create, rename, remove, chmod, in a new subdirectory too", want.every((w) => has(events, w)), events);
await wh.stop();
const flat = [];
const wh2 = await sb.files.watchDir(d, (e) => flat.push(e));
await sb.commands.run(`echo z > ${d}/wd/deep.txt; echo t > ${d}/top.txt`);
await new Promise((r) => setTimeout(r, 500));
check("watchDir: not below without recursive", flat.some((e) => e.name === "top.txt") && !flat.some((e) => e.name === "wd/deep.txt"), flat);
await wh2.stop();
check("watchDir of no directory: NotFoundError", !!(await rejects(sb.files.watchDir(`${d}/nope`, () => {}), NotFoundError)));

await sb.setTimeout(60_000);
const end = (await Sandbox.getInfo(sb.sandboxId)).endAt.getTime();
check("setTimeout moves its end", Math.abs(end - (Date.now() + 60_000)) < 5000, end - Date.now());
check("a timeout past the policy's limits.wall is refused", !!(await rejects(sb.setTimeout(100_000_000), SandboxError)));
const tick = `${grant}/node-tick`;
const ticker = await sb.commands.run(`while :; do date +%s%N > ${tick}; sleep 0.05; done`, { background: true, timeoutMs: 0 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const readTick = () => { try { return readFileSync(tick, "utf8"); } catch { return ""; } };
// whether the ticker writes within ms (a loaded host may be slow)
const ticksMove = async (ms = 5000) => {
  const a = readTick();
  for (const t = Date.now(); Date.now() - t < ms;) { await sleep(50); if (readTick() !== a) return true; }
  return false;
};
check("a command runs (its ticks move)", await ticksMove());
const end0 = (await Sandbox.getInfo(sb.sandboxId)).endAt.getTime();
check("pause", (await sb.pause()) === true);
check("paused: nothing runs (its ticks stand still)", !(await ticksMove(500)));
check("getInfo: state paused", (await sb.getInfo()).state === "paused");
check("a command while paused is refused", !!(await rejects(sb.commands.run("true"), SandboxError)));
e = await rejects(sb.files.read(`${grant}/node/kept.txt`), SandboxError);
check("a file operation while paused is refused (paused)", e && e.code === "paused", e);
await sleep(1000);
const sb2 = await Sandbox.resume(sb.sandboxId);
check("Sandbox.resume: running again, its ticks move", (await sb2.getInfo()).state === "running" && (await ticksMove()));
const endMoved = ((await Sandbox.getInfo(sb.sandboxId)).endAt.getTime() - end0) / 1000;
check("its end moved by the time paused (1.5 s and more)", endMoved > 1.4 && endMoved < 10, endMoved);
await sb.pause();
check("connect resumes a paused sandbox", (await (await Sandbox.connect(sb.sandboxId)).getInfo()).state === "running" && (await ticksMove()));
await sb.commands.kill(ticker.pid);
console.log("RESULT " + JSON.stringify({ id: sb.sandboxId, audit: sb.auditPath, killed_pid: h.pid }));
check("kill", (await sb.kill()) === true);
check("isRunning after kill: false", !(await sb.isRunning()));
check("kill again: false", (await Sandbox.kill(sb.sandboxId)) === false);
process.exit(failed ? 1 : 0);
