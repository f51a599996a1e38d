import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { LspConfig, ServerConfig } from './config.ts';
import { JsonRpcConnection, JsonRpcError } from './json-rpc.ts';
import { BWRAP, dropUserArgv } from '../sandbox/run-as.ts';
import { sandboxArgs } from './sandbox.ts';
import type { MountIdentity } from '../sandbox/vault-mounts.ts';
import { safePath, type ResolvedCommand } from './workspace.ts';
import { signalGroup } from '../../execute/exec.ts';

/** Lines of a server's stderr kept for error messages. */
const STDERR_LINES = 20;
/** Documents kept open in one server; the least recently used one is closed beyond this. */
const MAX_OPEN_DOCUMENTS = 200;
/**
 * Files a folder's diagnostics open before asking for theirs: half of what a server keeps open,
 * so a batch's files are never closed under it by its own later files.
 */
export const DIAGNOSTICS_BATCH = MAX_OPEN_DOCUMENTS / 2;
/** How long a stopping server gets to answer `shutdown` and to exit before its group is killed. */
const STOP_GRACE_MS = 1_500;
/** Diagnostics kept of one publish (or pull) for a file; the rest are counted as left out. */
export const MAX_DIAGNOSTICS = 1_000;
/** Characters of messages, codes and sources kept of one publish (or pull) for a file. */
export const MAX_DIAGNOSTICS_CHARS = 1024 * 1024;
/** Characters of one diagnostic's message kept (a longer one is cut, with `…`). */
const MAX_DIAGNOSTIC_MESSAGE_CHARS = 4_000;
/** Characters of a diagnostic's code or source kept. */
const MAX_DIAGNOSTIC_LABEL_CHARS = 200;
/** Sections one `workspace/configuration` request may ask for (servers ask for a few). */
const MAX_CONFIGURATION_ITEMS = 1_000;

/** An LSP diagnostic as servers send it (only the fields vaultd reads). */
export interface LspDiagnostic {
  readonly range: {
    readonly start: { line: number; character: number };
    readonly end: { line: number; character: number };
  };
  readonly severity?: number;
  readonly code?: number | string;
  readonly source?: string;
  readonly message: string;
}

/** Why a server is not usable: what a call reports. */
export class ServerFailure extends Error {
  /** Whether trying again later may work (a crash, a hang), as opposed to a missing program. */
  readonly recoverable: boolean;

  /**
   * @param message the reason, written for the agent and the operator.
   * @param recoverable whether a later call may succeed.
   */
  constructor(message: string, recoverable: boolean) {
    super(message);
    this.name = 'ServerFailure';
    this.recoverable = recoverable;
  }
}

/** What a {@link LanguageServer} is made from. */
export interface LanguageServerOptions {
  readonly server: ServerConfig;
  readonly command: ResolvedCommand;
  /** Absolute real path of the workspace root (its working directory and `rootUri`). */
  readonly root: string;
  readonly config: LspConfig;
  readonly initializationOptions: Readonly<Record<string, unknown>>;
  /** The pack's roots (absolute, real): what a sandboxed server sees besides the system. */
  readonly roots: readonly string[];
  /** bwrap arguments hiding vaultd's state, config and secrets from a sandboxed server. */
  readonly hidden?: readonly string[];
  /** The roots and the workspace as vaultd saw them, checked once mounted (sandboxed only). */
  readonly identities?: readonly MountIdentity[];
  readonly logger: Logger;
  /** Told once when the process ends without {@link LanguageServer.stop} having been called. */
  readonly onExit: (server: LanguageServer, reason: string) => void;
}

/** A file's diagnostics as vaultd keeps them: at most {@link MAX_DIAGNOSTICS}, copied and cut. */
export interface DiagnosticsReport {
  readonly items: readonly LspDiagnostic[];
  /** How many the server sent; more than `items.length` when some were left out. */
  readonly total: number;
}

interface OpenDocument {
  version: number;
  /** sha256 and length of the text the server has: vaultd keeps no copy of the text. */
  hash: string;
  length: number;
  /** Diagnostics calls waiting for its diagnostics: only while one waits is a publish kept. */
  waiting: number;
}

interface Published extends DiagnosticsReport {
  /** Counter value of the publish (grows with every publish of the server). */
  readonly seq: number;
  readonly at: number;
  readonly version: number | undefined;
}

/**
 * One language server process for one workspace root: started with `initialize` under a
 * deadline, in a process group of its own (killed whole on stop), given only `PATH` and its
 * configured environment. Documents are opened with their content from disk and kept in step
 * with it; diagnostics are pulled where the server supports it, else waited for.
 */
export class LanguageServer {
  readonly options: LanguageServerOptions;
  /** The server's capabilities from `initialize`. */
  capabilities: Record<string, unknown> = {};
  /** When a call last used it (ms since the epoch). */
  lastUsed = Date.now();
  /** When it answered `initialize`. */
  upSince = 0;
  /** Requests in flight. */
  inFlight = 0;
  /** Resolves once the server answered `initialize`; rejects with a {@link ServerFailure}. */
  readonly ready: Promise<void>;
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #connection: JsonRpcConnection;
  readonly #logger: Logger;
  readonly #stderr: string[] = [];
  readonly #documents = new Map<string, OpenDocument>();
  readonly #published = new Map<string, Published>();
  readonly #waiters = new Set<() => void>();
  #publishSeq = 0;
  #state: 'starting' | 'up' | 'exited' | 'stopped' = 'starting';
  #exitReason = '';
  readonly #exited: Promise<void>;

  /**
   * Spawn the server and send `initialize`; see {@link LanguageServer.ready}.
   * @param options what to run, where, and with which limits.
   */
  constructor(options: LanguageServerOptions) {
    this.options = options;
    const { server, command, root, config } = options;
    this.#logger = options.logger.child({ lsp_server: server.name, workspace: root });
    const env = { PATH: safePath(), ...server.env };
    const argv = [command.file, ...command.args];
    const [file, ...args] = server.sandbox
      ? [
          ...dropUserArgv(config.runAs),
          BWRAP,
          ...sandboxArgs(
            argv,
            root,
            options.roots,
            env,
            [command.real, ...tsserverOf(options)],
            server.sandboxPaths,
            options.hidden,
            options.identities,
          ),
        ]
      : argv;
    this.#child = spawn(file as string, args, {
      cwd: root,
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    this.#child.stderr.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        this.#stderr.push(line.slice(0, 500));
        if (this.#stderr.length > STDERR_LINES) this.#stderr.shift();
      }
    });
    this.#connection = new JsonRpcConnection(this.#child.stdout, this.#child.stdin, {
      maxMessageBytes: config.maxMessageBytes,
      onNotification: (method, params) => this.#onNotification(method, params),
      onRequest: (method, params) => this.#onRequest(method, params),
      onClose: (reason) => {
        // A broken stream makes the server useless: end it, which reports the exit. Its output
        // also ends when it exits by itself; then the exit, due at once, tells more.
        if (this.#state !== 'starting' && this.#state !== 'up') return;
        setTimeout(() => {
          if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
          if (this.#exitReason === '') this.#exitReason = `broke the protocol: ${reason.message}`;
          this.#killGroup('SIGKILL');
        }, 200).unref();
      },
    });
    let spawnError: Error | undefined;
    this.#exited = new Promise<void>((resolve) => {
      this.#child.once('error', (error) => {
        spawnError = error;
        this.#connection.close(error);
        resolve();
      });
      this.#child.once('exit', (code, signal) => {
        const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
        if (this.#exitReason === '') this.#exitReason = `exited (${how})`;
        this.#connection.close(new Error(`the language server exited (${how})`));
        resolve();
      });
    });
    void this.#exited.then(() => {
      const was = this.#state;
      this.#state = was === 'stopped' ? 'stopped' : 'exited';
      for (const wake of [...this.#waiters]) wake();
      // The leader is gone; anything it left in its group goes too.
      this.#killGroup('SIGKILL');
      if (was === 'up') options.onExit(this, `${this.#describeExit()}${this.#stderrTail()}`);
    });
    this.ready = this.#initialize().catch(async (error: unknown) => {
      // A server that went away says more by its exit and its last words than by its closed pipe.
      await this.#settle();
      const reason =
        spawnError !== undefined
          ? spawnError.message
          : this.#state === 'exited' || this.#exitReason !== ''
            ? `it ${this.#describeExit()}`
            : (error as Error).message;
      await this.stop();
      throw new ServerFailure(
        `the ${server.name} language server (${basename(command.real)}) could not start for ${root}: ${reason}${this.#stderrTail()}`,
        spawnError === undefined,
      );
    });
    // Callers await `ready`; this only keeps an unwatched failure from being unhandled.
    this.ready.catch(() => undefined);
  }

  /** The process id of the server (its process group's id), when it started. */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Whether calls can be made now. */
  get up(): boolean {
    return this.#state === 'up';
  }

  /**
   * What the client holds for this server: open documents, and the files and items of the
   * diagnostics it published that are kept (what the memory bounds are about; tests read it).
   */
  held(): { documents: number; diagnosticFiles: number; diagnosticItems: number } {
    let items = 0;
    for (const published of this.#published.values()) items += published.items.length;
    return {
      documents: this.#documents.size,
      diagnosticFiles: this.#published.size,
      diagnosticItems: items,
    };
  }

  /** Whether the process is gone (crashed, or stopped). */
  get gone(): boolean {
    return this.#state === 'exited' || this.#state === 'stopped';
  }

  /**
   * Send a request, counted as in flight while it runs.
   * @param method the LSP method.
   * @param params its parameters.
   * @param signal the call's signal.
   * @throws ServerFailure when the server is gone or does not answer in time; JsonRpcError for
   *   an error answer.
   */
  async request<T>(method: string, params: unknown, signal: AbortSignal): Promise<T> {
    if (!this.up) throw this.#failure();
    this.inFlight += 1;
    this.lastUsed = Date.now();
    try {
      return await this.#connection.request<T>(method, params, {
        timeoutMs: this.options.config.requestTimeoutMs,
        signal,
      });
    } catch (error) {
      if (error instanceof JsonRpcError) throw error;
      if (signal.aborted) throw error;
      if (this.#connection.closed !== undefined) {
        // It went away: its exit and last words say more than the closed pipe.
        await this.#settle();
        throw this.#failure();
      }
      throw new ServerFailure(
        `the ${this.options.server.name} language server: ${(error as Error).message}`,
        true,
      );
    } finally {
      this.inFlight -= 1;
      this.lastUsed = Date.now();
    }
  }

  /**
   * Make the server see a file as it is on disk: open it, or send its new content when it
   * changed (or always, with `touch`, so that the server checks it again). Waits first until
   * the server has read what it was sent before.
   * @param path absolute real path.
   * @param text its content.
   * @param languageId its LSP language identifier.
   * @param signal the call's signal.
   * @param touch send the content even when unchanged, and keep the server's diagnostics of it
   *   for one {@link LanguageServer.diagnostics} call, which must follow.
   * @returns the document's URI, and the publish counter before the change went out.
   */
  async sync(
    path: string,
    text: string,
    languageId: string,
    signal: AbortSignal,
    touch = false,
  ): Promise<{ uri: string; mark: number; version: number }> {
    if (!this.up) throw this.#failure();
    await this.#connection.drained(signal);
    if (!this.up) throw this.#failure();
    const uri = pathToFileURL(path).href;
    const mark = this.#publishSeq;
    const hash = createHash('sha256').update(text).digest('base64');
    const open = this.#documents.get(uri);
    if (open === undefined) {
      this.#documents.set(uri, { version: 1, hash, length: text.length, waiting: touch ? 1 : 0 });
      this.#connection.notify('textDocument/didOpen', {
        textDocument: { uri, languageId, version: 1, text },
      });
      this.#closeOldDocuments();
      return { uri, mark, version: 1 };
    }
    // Most recently used last, so the oldest comes first when closing.
    this.#documents.delete(uri);
    this.#documents.set(uri, open);
    if (touch) open.waiting += 1;
    if (open.hash !== hash || open.length !== text.length || touch) {
      open.version += 1;
      open.hash = hash;
      open.length = text.length;
      this.#connection.notify('textDocument/didChange', {
        textDocument: { uri, version: open.version },
        contentChanges: [{ text }],
      });
    }
    return { uri, mark, version: open.version };
  }

  /**
   * A file's diagnostics after a {@link LanguageServer.sync}: pulled when the server supports
   * `textDocument/diagnostic`, else the first publish after `mark` and whatever follows within
   * the settle time, waited for at most the diagnostics timeout. At most
   * {@link MAX_DIAGNOSTICS} diagnostics and {@link MAX_DIAGNOSTICS_CHARS} characters of their
   * text are kept; `total` counts what the server sent.
   * @param uri the document.
   * @param mark the publish counter {@link LanguageServer.sync} returned.
   * @param version the version {@link LanguageServer.sync} returned.
   * @param signal the call's signal.
   * @returns the diagnostics, or undefined when none came in time.
   */
  async diagnostics(
    uri: string,
    mark: number,
    version: number,
    signal: AbortSignal,
  ): Promise<DiagnosticsReport | undefined> {
    try {
      return await this.#diagnostics(uri, mark, version, signal);
    } finally {
      this.release(uri);
    }
  }

  /**
   * End the wait a touching {@link LanguageServer.sync} began without asking for the diagnostics
   * (the call ended before it came to this file): its publishes are no longer kept.
   * @param uri the document.
   */
  release(uri: string): void {
    const open = this.#documents.get(uri);
    if (open !== undefined) {
      open.waiting = Math.max(0, open.waiting - 1);
      if (open.waiting === 0) this.#published.delete(uri);
    }
  }

  async #diagnostics(
    uri: string,
    mark: number,
    version: number,
    signal: AbortSignal,
  ): Promise<DiagnosticsReport | undefined> {
    if (this.capabilities['diagnosticProvider'] !== undefined) {
      const report = await this.request<{ kind?: string; items?: unknown } | null>(
        'textDocument/diagnostic',
        { textDocument: { uri } },
        signal,
      );
      if (report?.kind === 'full' && Array.isArray(report.items)) {
        return keepDiagnostics(report.items);
      }
    }
    const { diagnosticsTimeoutMs, diagnosticsSettleMs } = this.options.config;
    const deadline = Date.now() + diagnosticsTimeoutMs;
    const fresh = (): Published | undefined => {
      const p = this.#published.get(uri);
      if (p === undefined || p.seq <= mark) return undefined;
      return p.version === undefined || p.version >= version ? p : undefined;
    };
    for (;;) {
      const published = fresh();
      const now = Date.now();
      if (published !== undefined && now - published.at >= diagnosticsSettleMs) {
        return published;
      }
      if (now >= deadline || this.gone || signal.aborted) {
        if (this.gone) throw this.#failure();
        return published;
      }
      const wait =
        published === undefined
          ? deadline - now
          : Math.min(deadline - now, diagnosticsSettleMs - (now - published.at));
      await this.#nextPublish(wait, signal);
    }
  }

  /**
   * Stop: `shutdown` and `exit` when it is up, then its whole process group is killed. Never
   * rejects.
   */
  async stop(): Promise<void> {
    const was = this.#state;
    if (was === 'stopped') return this.#exited;
    this.#state = 'stopped';
    if (this.#exitReason === '') this.#exitReason = 'was stopped';
    if (was === 'up') {
      try {
        await this.#connection.request('shutdown', null, { timeoutMs: STOP_GRACE_MS });
        this.#connection.notify('exit', null);
      } catch {
        // It is killed below either way.
      }
    }
    this.#child.stdin.end();
    const timer = setTimeout(() => this.#killGroup('SIGKILL'), STOP_GRACE_MS);
    if (was !== 'up') this.#killGroup('SIGKILL');
    await this.#exited;
    clearTimeout(timer);
    this.#killGroup('SIGKILL');
  }

  async #initialize(): Promise<void> {
    const { root, server, config } = this.options;
    const rootUri = pathToFileURL(root).href;
    const result = await this.#connection.request<{ capabilities?: Record<string, unknown> }>(
      'initialize',
      {
        // In the sandbox's PID namespace vaultd's pid means nothing (a server watching it would
        // exit at once); bubblewrap ends the server with vaultd instead.
        processId: server.sandbox ? null : process.pid,
        clientInfo: { name: 'vaultd', version: '0.1.0' },
        locale: 'en',
        rootPath: root,
        rootUri,
        workspaceFolders: [{ uri: rootUri, name: basename(root) }],
        initializationOptions: this.options.initializationOptions,
        capabilities: CLIENT_CAPABILITIES,
      },
      { timeoutMs: config.startTimeoutMs },
    );
    if (this.#state !== 'starting') throw new Error(this.#describeExit());
    this.capabilities = result?.capabilities ?? {};
    this.#connection.notify('initialized', {});
    if (Object.keys(server.settings).length > 0) {
      this.#connection.notify('workspace/didChangeConfiguration', { settings: server.settings });
    }
    this.#state = 'up';
    this.upSince = Date.now();
    this.#logger.info({ pid: this.pid }, 'language server started');
  }

  #onNotification(method: string, params: unknown): void {
    if (method === 'textDocument/publishDiagnostics') {
      const p = params as { uri?: unknown; version?: unknown; diagnostics?: unknown };
      if (typeof p?.uri !== 'string' || !Array.isArray(p.diagnostics)) return;
      // Kept only for a file a call waits for: a server may publish for any URI, as often as it
      // likes (a hostile one grew vaultd's heap 35 MB a second with URIs never opened).
      if ((this.#documents.get(p.uri)?.waiting ?? 0) === 0) return;
      this.#published.set(p.uri, {
        seq: ++this.#publishSeq,
        at: Date.now(),
        version: typeof p.version === 'number' ? p.version : undefined,
        ...keepDiagnostics(p.diagnostics),
      });
      for (const wake of [...this.#waiters]) wake();
    } else if (method === 'window/logMessage' || method === 'window/showMessage') {
      const message = (params as { message?: unknown })?.message;
      this.#logger.debug({ message: String(message).slice(0, 500) }, 'language server message');
    }
  }

  #onRequest(method: string, params: unknown): unknown {
    switch (method) {
      case 'workspace/configuration': {
        const items = (params as { items?: { section?: string }[] })?.items ?? [];
        if (items.length > MAX_CONFIGURATION_ITEMS) {
          // Each item is answered with a copy of the settings: a long list would be a large answer.
          throw new JsonRpcError(
            -32602,
            `vaultd answers at most ${MAX_CONFIGURATION_ITEMS} items of workspace/configuration`,
          );
        }
        return items.map((item) => lookupSetting(this.options.server.settings, item.section));
      }
      case 'workspace/workspaceFolders': {
        const uri = pathToFileURL(this.options.root).href;
        return [{ uri, name: basename(this.options.root) }];
      }
      case 'workspace/applyEdit':
        // The pack only reads: no server edits a file through it.
        return { applied: false, failureReason: 'vaultd’s lsp pack is read-only' };
      case 'client/registerCapability':
      case 'client/unregisterCapability':
      case 'window/workDoneProgress/create':
      case 'window/showMessageRequest':
      case 'window/showDocument':
        return null;
      default:
        throw new JsonRpcError(-32601, `vaultd does not handle ${method}`);
    }
  }

  #nextPublish(timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
    });
  }

  #closeOldDocuments(): void {
    while (this.#documents.size > MAX_OPEN_DOCUMENTS) {
      const oldest = this.#documents.keys().next().value;
      if (oldest === undefined) return;
      this.#documents.delete(oldest);
      this.#published.delete(oldest);
      this.#connection.notify('textDocument/didClose', { textDocument: { uri: oldest } });
    }
  }

  #killGroup(signal: NodeJS.Signals): void {
    const pid = this.#child.pid;
    if (pid !== undefined) signalGroup(pid, signal);
  }

  /** Wait a moment for the process to end, as it does once its pipe broke. */
  async #settle(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#exited,
      new Promise((resolve) => (timer = setTimeout(resolve, 500))),
    ]);
    clearTimeout(timer);
  }

  #failure(): ServerFailure {
    return new ServerFailure(
      `the ${this.options.server.name} language server for ${this.options.root} ${this.#describeExit()}${this.#stderrTail()}`,
      true,
    );
  }

  #describeExit(): string {
    if (this.#exitReason !== '') return this.#exitReason;
    if (this.#state === 'stopped') return 'was stopped';
    return this.#state === 'starting' ? 'is still starting' : 'is not running';
  }

  #stderrTail(): string {
    return this.#stderr.length === 0
      ? ''
      : `; its last words: ${this.#stderr.slice(-3).join(' | ')}`;
  }
}

/**
 * A server's diagnostics as vaultd keeps them: the first {@link MAX_DIAGNOSTICS}, within
 * {@link MAX_DIAGNOSTICS_CHARS} characters of text, each copied with only the fields vaultd reads
 * (so that nothing else of the server's message stays in memory) and its message cut.
 */
function keepDiagnostics(raw: readonly unknown[]): DiagnosticsReport {
  const items: LspDiagnostic[] = [];
  let chars = 0;
  for (const value of raw) {
    if (items.length === MAX_DIAGNOSTICS) break;
    const item = copyDiagnostic(value);
    chars += item.message.length + String(item.code ?? '').length + (item.source?.length ?? 0);
    if (chars > MAX_DIAGNOSTICS_CHARS) break;
    items.push(item);
  }
  return { items, total: raw.length };
}

function copyDiagnostic(value: unknown): LspDiagnostic {
  const d = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const range = (typeof d['range'] === 'object' && d['range'] !== null ? d['range'] : {}) as Record<
    string,
    unknown
  >;
  const start = copyPosition(range['start']);
  const { severity, code, source, message } = d;
  return {
    range: { start, end: range['end'] === undefined ? start : copyPosition(range['end']) },
    ...(typeof severity === 'number' ? { severity } : {}),
    ...(typeof code === 'number'
      ? { code }
      : typeof code === 'string'
        ? { code: cut(code, MAX_DIAGNOSTIC_LABEL_CHARS) }
        : {}),
    ...(typeof source === 'string' ? { source: cut(source, MAX_DIAGNOSTIC_LABEL_CHARS) } : {}),
    message: cut(
      typeof message === 'string' ? message : String(message),
      MAX_DIAGNOSTIC_MESSAGE_CHARS,
    ),
  };
}

function copyPosition(value: unknown): { line: number; character: number } {
  const p = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const count = (n: unknown): number =>
    Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : 0;
  return { line: count(p['line']), character: count(p['character']) };
}

/** The first `max` characters of a text, copied (a slice would keep the whole text alive). */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${Buffer.from(text.slice(0, max), 'utf8').toString('utf8')}…`;
}

/** The value of a dotted section (`python.analysis`) in the configured settings, or null. */
function lookupSetting(settings: Readonly<Record<string, unknown>>, section?: string): unknown {
  if (section === undefined || section === '') return settings;
  let value: unknown = settings;
  for (const key of section.split('.')) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return null;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

const SYMBOL_KINDS = Array.from({ length: 26 }, (_, i) => i + 1);

/** What vaultd tells servers it can do: read-only features, UTF-16 positions. */
const CLIENT_CAPABILITIES = {
  general: { positionEncodings: ['utf-16'] },
  workspace: {
    configuration: true,
    workspaceFolders: true,
    applyEdit: false,
    symbol: { dynamicRegistration: false, symbolKind: { valueSet: SYMBOL_KINDS } },
  },
  textDocument: {
    synchronization: { dynamicRegistration: false, didSave: false, willSave: false },
    publishDiagnostics: { relatedInformation: false, versionSupport: true },
    diagnostic: { dynamicRegistration: false, relatedDocumentSupport: false },
    hover: { dynamicRegistration: false, contentFormat: ['markdown', 'plaintext'] },
    definition: { dynamicRegistration: false, linkSupport: true },
    references: { dynamicRegistration: false },
    documentSymbol: {
      dynamicRegistration: false,
      hierarchicalDocumentSymbolSupport: true,
      symbolKind: { valueSet: SYMBOL_KINDS },
    },
  },
  window: { workDoneProgress: false },
};

/** The tsserver a typescript-language-server is given, as a list of zero or one path. */
function tsserverOf(options: LanguageServerOptions): string[] {
  const tsserver = options.initializationOptions['tsserver'];
  const path =
    typeof tsserver === 'object' && tsserver !== null
      ? (tsserver as Record<string, unknown>)['path']
      : undefined;
  return typeof path === 'string' ? [path] : [];
}
