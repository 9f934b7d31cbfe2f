// End-to-end tests against real sandboxes: SANDCAP_TEST_SOCKET (a running
// `sandcap serve`), SANDCAP (the binary, for the CLI transport) and
// SANDCAP_TEST_POLICY (a policy file the daemon offers). node --test test/
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { Sandbox, SandcapError } from "../index.js";

const SOCKET = process.env.SANDCAP_TEST_SOCKET;
const SANDCAP = process.env.SANDCAP;
const POLICY_FILE = process.env.SANDCAP_TEST_POLICY;

function suite(name, opts, skip) {
  describe(name, { skip }, () => {
    const policy = () => JSON.parse(readFileSync(POLICY_FILE, "utf8"));

    test("run: exit code, stdout, stderr, limits, audit path", () =>
      Sandbox.with(policy(), async (sb) => {
        const r = await sb.run(["sh", "-c", "echo out; echo err >&2; exit 4"]);
        assert.equal(r.exitCode, 4);
        assert.equal(r.stdout, "out\n");
        assert.equal(r.stderr, "err\n");
        assert.deepEqual(r.limitsHit, []);
        assert.ok(r.auditPath && r.auditPath.endsWith(".jsonl"), r.auditPath);
      }, opts()));

    test("files and state persist between commands", () =>
      Sandbox.with(policy(), async (sb) => {
        await sb.writeFile("/tmp/t.bin", Buffer.from([0, 1, 2, 255]));
        assert.deepEqual([...(await sb.readFile("/tmp/t.bin"))], [0, 1, 2, 255]);
        const r = await sb.run(["sh", "-c", "wc -c < /tmp/t.bin; echo x > /tmp/y"]);
        assert.equal(r.stdout.trim(), "4");
        assert.equal((await sb.readFile("/tmp/y")).toString(), "x\n");
        const names = (await sb.listFiles("/tmp")).map((e) => e.name);
        assert.ok(names.includes("t.bin") && names.includes("y"), names.join(","));
      }, opts()));

    test("stdin, env, cwd", () =>
      Sandbox.with(policy(), async (sb) => {
        const r = await sb.run(["sh", "-c", "cat; echo $V; pwd"], { stdin: "in\n", env: { V: "w" }, cwd: "/tmp" });
        assert.equal(r.stdout, "in\nw\n/tmp\n");
      }, opts()));

    test("streaming", () =>
      Sandbox.with(policy(), async (sb) => {
        const items = [];
        for await (const it of sb.stream(["sh", "-c", "echo a; sleep 0.2; echo b"])) items.push(it);
        assert.ok(items.at(-1).result);
        assert.equal(Buffer.concat(items.filter((i) => i.stream).map((i) => i.data)).toString(), "a\nb\n");
      }, opts()));

    test("the walls hold: a write outside the grants is refused", () =>
      Sandbox.with(policy(), async (sb) => {
        await assert.rejects(sb.writeFile("/usr/bin/planted", "x"), SandcapError);
        const r = await sb.run(["cat", "/etc/shadow"]);
        assert.notEqual(r.exitCode, 0);
      }, opts()));
  });
}

suite("daemon", () => ({ socketPath: SOCKET }), !(SOCKET && POLICY_FILE) && "needs SANDCAP_TEST_SOCKET and SANDCAP_TEST_POLICY");
suite("cli", () => ({ sandcap: SANDCAP }), !(SANDCAP && POLICY_FILE) && "needs SANDCAP and SANDCAP_TEST_POLICY");

describe("errors", { skip: !(SOCKET && POLICY_FILE) && "needs SANDCAP_TEST_SOCKET" }, () => {
  test("a bad policy is a structured error with its JSON path", async () => {
    await assert.rejects(
      Sandbox.create({ version: 1, fs: { grants: [{ path: "/tmp", mode: "rwx" }] } }, { socketPath: SOCKET }),
      (e) => e instanceof SandcapError && e.code === "policy_invalid" && e.path === "$.fs.grants[0].mode",
    );
  });
});
