// Types of sdk.js: an SDK in the shape of E2B's over `sandcap serve` (docs/api.md).
export declare const DEFAULT_SOCKET: string;

export declare class SandboxError extends Error {
  code: string; detail: string; path: string | null; status: number;
}
export declare class NotFoundError extends SandboxError {}
export declare class TimeoutError extends SandboxError {}
export declare class InvalidArgumentError extends SandboxError {}

export interface CommandResult { stdout: string; stderr: string; exitCode: number; error?: string; limitsHit: string[] }
export declare class CommandExitError extends SandboxError implements CommandResult {
  stdout: string; stderr: string; exitCode: number; error?: string; limitsHit: string[];
}

export interface ConnectionOpts { socketPath?: string; requestTimeoutMs?: number }
export interface SandboxOpts extends ConnectionOpts {
  timeoutMs?: number; envs?: Record<string, string>; metadata?: Record<string, string>; token?: string;
}
export interface CommandStartOpts {
  background?: boolean; envs?: Record<string, string>; cwd?: string; user?: "user";
  timeoutMs?: number; stdin?: boolean; tag?: string;
  onStdout?: (data: string) => void; onStderr?: (data: string) => void;
}
export interface ProcessInfo { pid: number; tag?: string; cmd: string; args: string[]; envs: Record<string, string>; cwd?: string }
export interface EntryInfo {
  name: string; type: "file" | "dir" | "symlink" | "other"; path: string; size: number; mode: number;
  permissions: string; modifiedTime: Date;
}
export interface WriteInfo { name: string; type: "file"; path: string }
export interface SandboxInfo {
  sandboxId: string; templateId: string; name: string; metadata: Record<string, string>; startedAt: Date; endAt?: Date;
  state: "running" | "paused";
}

export declare class CommandHandle {
  readonly pid: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | undefined;
  wait(): Promise<CommandResult>;
  disconnect(): Promise<void>;
  kill(): Promise<boolean>;
}

export declare class Commands {
  run(cmd: string, opts?: CommandStartOpts & { background?: false }): Promise<CommandResult>;
  run(cmd: string, opts: CommandStartOpts & { background: true }): Promise<CommandHandle>;
  connect(pid: number, opts?: { onStdout?: (d: string) => void; onStderr?: (d: string) => void }): Promise<CommandHandle>;
  list(): Promise<ProcessInfo[]>;
  kill(pid: number): Promise<boolean>;
  sendStdin(pid: number, data: string | Uint8Array): Promise<void>;
  closeStdin(pid: number): Promise<void>;
}

export interface PtySize { cols: number; rows: number }
export interface PtyCreateOpts extends Partial<PtySize> {
  onData?: (data: Uint8Array) => void; envs?: Record<string, string>; cwd?: string; user?: "user";
  timeoutMs?: number; cmd?: string[];
}
export declare class Pty {
  create(opts?: PtyCreateOpts): Promise<CommandHandle>;
  sendInput(pid: number, data: string | Uint8Array): Promise<void>;
  sendStdin(pid: number, data: string | Uint8Array): Promise<void>;
  resize(pid: number, size: PtySize): Promise<void>;
  kill(pid: number): Promise<boolean>;
}

type WriteData = string | ArrayBuffer | Uint8Array | Blob | ReadableStream | NodeJS.ReadableStream;
export declare const FilesystemEventType: {
  readonly CHMOD: "chmod"; readonly CREATE: "create"; readonly REMOVE: "remove"; readonly RENAME: "rename"; readonly WRITE: "write";
};
export interface FilesystemEvent { name: string; type: "chmod" | "create" | "remove" | "rename" | "write" }
export declare class WatchHandle { stop(): Promise<void> }

export declare class Filesystem {
  watchDir(path: string, onEvent: (e: FilesystemEvent) => void,
    opts?: { recursive?: boolean; timeoutMs?: number; onExit?: (err?: Error) => void }): Promise<WatchHandle>;
  read(path: string, opts?: { format?: "text" }): Promise<string>;
  read(path: string, opts: { format: "bytes" }): Promise<Uint8Array>;
  read(path: string, opts: { format: "blob" }): Promise<Blob>;
  read(path: string, opts: { format: "stream" }): Promise<ReadableStream<Uint8Array>>;
  write(path: string, data: WriteData): Promise<WriteInfo>;
  write(files: { path: string; data: WriteData }[]): Promise<WriteInfo[]>;
  writeFiles(files: { path: string; data: WriteData }[]): Promise<WriteInfo[]>;
  list(path: string, opts?: { depth?: number }): Promise<EntryInfo[]>;
  exists(path: string): Promise<boolean>;
  getInfo(path: string): Promise<EntryInfo>;
  makeDir(path: string): Promise<boolean>;
  remove(path: string): Promise<void>;
  rename(oldPath: string, newPath: string): Promise<EntryInfo>;
}

export interface WorkspaceChange {
  op: "A" | "M" | "m" | "D" | "R"; path: string; type: "file" | "directory" | "symlink" | "FIFO";
  from?: string; link?: string; mode: number; old_mode: number;
}
export interface WorkspaceDiff { workspace: string; grant: string; changes: WorkspaceChange[]; patch?: string; refused: number }
export interface WorkspaceApplied {
  workspace: string; outcome: "applied" | "conflicts" | "failed"; exit_code: number; session: string;
  paths: { path: string; op: string }[]; conflicts: string[]; changed_during_apply: string[]; record: string; error: string;
}
export declare class WorkspaceConflictError extends SandboxError {
  exitCode: number; conflicts: string[]; result: WorkspaceApplied;
}
export declare class Workspace {
  list(): Promise<{ id: string; state: string; path?: string; files?: number; bytes?: number }[]>;
  diff(opts?: { workspace?: string; patch?: boolean }): Promise<WorkspaceDiff>;
  apply(opts?: { workspace?: string; force?: boolean }): Promise<WorkspaceApplied>;
  discard(opts?: { workspace?: string }): Promise<void>;
}

export declare class Sandbox {
  readonly sandboxId: string;
  readonly workspace: Workspace;
  readonly commands: Commands;
  readonly files: Filesystem;
  readonly pty: Pty;
  readonly auditPath: string | undefined;
  /** "127.0.0.1:HOSTPORT": where the host reaches a port of net.serve; throws for another. */
  getHost(port: number): string;
  static create(template?: string | object, opts?: SandboxOpts): Promise<Sandbox>;
  static create(opts?: SandboxOpts): Promise<Sandbox>;
  static connect(sandboxId: string, opts?: ConnectionOpts): Promise<Sandbox>;
  static list(opts?: ConnectionOpts & { query?: { metadata?: Record<string, string> } }): Promise<SandboxInfo[]>;
  static kill(sandboxId: string, opts?: ConnectionOpts): Promise<boolean>;
  static setTimeout(sandboxId: string, timeoutMs: number, opts?: ConnectionOpts): Promise<void>;
  static getInfo(sandboxId: string, opts?: ConnectionOpts): Promise<SandboxInfo>;
  static resume(sandboxId: string, opts?: ConnectionOpts & { timeoutMs?: number }): Promise<Sandbox>;
  pause(): Promise<boolean>;
  kill(): Promise<boolean>;
  setTimeout(timeoutMs: number): Promise<void>;
  getInfo(): Promise<SandboxInfo>;
  isRunning(): Promise<boolean>;
}
export default Sandbox;
