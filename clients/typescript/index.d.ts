// Types of the sandcap client (index.js).

export declare const DEFAULT_SOCKET: string;

export declare class SandcapError extends Error {
  code: string;
  detail: string;
  path: string | null;
  status: number;
  constructor(code: string, message: string, path?: string | null, status?: number);
}

/** A policy's JSON (docs/policy.md), a policy file, or a policy the daemon offers by name. */
export type Policy = Record<string, unknown> | string;

export interface SandboxOptions {
  /** the daemon's socket; default $SANDCAP_SOCKET or /run/sandcap.sock when it exists */
  socketPath?: string;
  /** the sandcap binary to run without a daemon; default $SANDCAP or PATH */
  sandcap?: string;
  /** a capability token instead of a policy (daemon only) */
  token?: string;
}

export interface RunOptions {
  stdin?: string | Uint8Array;
  cwd?: string;
  env?: Record<string, string>;
}

export interface Result {
  exitCode: number;
  signal: number | null;
  limitsHit: string[];
  durationMs: number;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
  stderrBytes: Buffer;
  auditPath: string | null;
}

export interface Chunk {
  stream: "stdout" | "stderr";
  data: Buffer;
}

export interface DirEntry {
  name: string;
  type: string;
  size: number;
  mode: number;
  mtime: number;
}

export interface SessionInfo {
  id?: string;
  name?: string;
  pid: number;
  audit: string;
  policy: string;
  [key: string]: unknown;
}

export interface Transport {
  start(policy: Policy | undefined, token: string | undefined): Promise<SessionInfo>;
  stop(id: string): Promise<Record<string, unknown>>;
  list(): Promise<SessionInfo[]>;
  execStream(id: string, argv: string[], opts?: RunOptions): AsyncGenerator<Chunk | { final: Record<string, unknown> }>;
  put(id: string, path: string, data: string | Uint8Array): Promise<void>;
  get(id: string, path: string): Promise<Buffer>;
  ls(id: string, path: string): Promise<DirEntry[]>;
  report(id: string, auditPath: string | null): Promise<Record<string, unknown>>;
}

/** Talks to `sandcap serve` over its unix socket. */
export declare class DaemonTransport {
  constructor(socketPath: string);
  socketPath: string;
}
export interface DaemonTransport extends Transport {}

/** Runs the `sandcap` CLI itself (no daemon). */
export declare class CliTransport {
  constructor(sandcap: string);
  sandcap: string;
}
export interface CliTransport extends Transport {}

export declare function pickTransport(opts?: SandboxOptions): Transport;

export declare class Sandbox {
  readonly transport: Transport;
  info: SessionInfo | null;
  readonly id: string;
  readonly auditPath: string | null;
  static create(policy: Policy | undefined, opts?: SandboxOptions): Promise<Sandbox>;
  static with<T>(policy: Policy | undefined, fn: (sb: Sandbox) => Promise<T>, opts?: SandboxOptions): Promise<T>;
  stream(argv: string[], opts?: RunOptions): AsyncGenerator<Chunk | { result: Result }>;
  run(argv: string[], opts?: RunOptions): Promise<Result>;
  writeFile(path: string, data: string | Uint8Array): Promise<void>;
  readFile(path: string): Promise<Buffer>;
  listFiles(path?: string): Promise<DirEntry[]>;
  report(): Promise<Record<string, unknown>>;
  close(): Promise<Record<string, unknown> | null>;
}
