import type { Logger } from 'pino';
import type { LspConfig, ServerConfig } from './config.ts';
import { ToolError } from '../../protocol/errors.ts';
import { BWRAP, checkSearchable, missingSandboxProgram } from '../sandbox/run-as.ts';
import { identitiesOf } from '../sandbox/vault-mounts.ts';
import { LanguageServer, ServerFailure } from './server.ts';
import { isTypescriptLanguageServer, resolveCommand, trustedTsserver } from './workspace.ts';

/** Longest wait before a server that keeps crashing is started again. */
const MAX_BACKOFF_MS = 60_000;
/** A server that ran this long before it crashed starts again without waiting. */
const STABLE_MS = 60_000;

interface Backoff {
  failures: number;
  until: number;
  reason: string;
}

/**
 * The running language servers, one per configured server and workspace root: started lazily by
 * the first call that needs one, shared by the calls after it, stopped when idle for
 * `idle_shutdown_ms` or when more than `max_servers` run, started again after a crash with
 * backoff (1 s doubling to 1 min), and all stopped with the pack.
 */
export class ServerPool {
  readonly #config: LspConfig;
  readonly #roots: readonly string[];
  readonly #hidden: readonly string[];
  readonly #logger: Logger;
  readonly #servers = new Map<string, LanguageServer>();
  readonly #backoff = new Map<string, Backoff>();
  /** Starts under way, by key: calls that come meanwhile wait for the same server. */
  readonly #starting = new Map<string, Promise<LanguageServer>>();
  readonly #sweep: NodeJS.Timeout;
  #stopped = false;

  /**
   * @param config the pack's config.
   * @param roots the pack's roots (absolute, real), which sandboxed servers see.
   * @param logger for the servers' lives.
   * @param hidden bwrap arguments hiding vaultd's own files from sandboxed servers.
   */
  constructor(
    config: LspConfig,
    roots: readonly string[],
    logger: Logger,
    hidden: readonly string[] = [],
  ) {
    this.#config = config;
    this.#roots = roots;
    this.#hidden = hidden;
    this.#logger = logger;
    this.#sweep = setInterval(
      () => this.#stopIdle(),
      Math.max(50, Math.min(30_000, Math.floor(config.idleShutdownMs / 2))),
    );
    this.#sweep.unref();
  }

  /** The servers running or starting now (for tests and status). */
  get running(): readonly LanguageServer[] {
    return [...this.#servers.values()];
  }

  /**
   * The server for a workspace root, started when none runs; waits until it is up.
   * @param server the configured server.
   * @param root absolute real path of the workspace root.
   * @param signal the call's signal: aborting it stops the wait (not the server).
   * @throws ServerFailure when the program is missing, it cannot start, or it is backing off
   *   after a crash.
   */
  async get(server: ServerConfig, root: string, signal: AbortSignal): Promise<LanguageServer> {
    if (this.#stopped) throw new ServerFailure('the lsp pack is stopping', true);
    const key = `${server.name}\u0000${root}`;
    let running = this.#servers.get(key);
    if (running === undefined || running.gone) {
      const backoff = this.#backoff.get(key);
      if (backoff !== undefined && Date.now() < backoff.until) {
        const seconds = Math.ceil((backoff.until - Date.now()) / 1000);
        throw new ServerFailure(
          `${backoff.reason}; it is started again in ${seconds} s, try again then`,
          true,
        );
      }
      // One start per key: calls arriving together each started a server before the first was
      // recorded, and only the last one recorded was ever stopped (the others ran on, and
      // `vaultd once` never exited).
      let starting = this.#starting.get(key);
      if (starting === undefined) {
        starting = this.#start(server, root, key).finally(() => this.#starting.delete(key));
        this.#starting.set(key, starting);
      }
      running = await starting;
    }
    running.lastUsed = Date.now();
    await abortable(running.ready, signal);
    return running;
  }

  /** Stop every server (shutdown, then their process groups killed); no new one starts. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#sweep);
    const all = [...this.#servers.values()];
    this.#servers.clear();
    await Promise.all(all.map((s) => s.stop()));
  }

  async #start(server: ServerConfig, root: string, key: string): Promise<LanguageServer> {
    const command = await resolveCommand(server.command, server.args);
    if (command === undefined) {
      throw new ServerFailure(
        `the ${server.name} language server's program ${server.command} is not installed (not in PATH, nor in vaultd's node_modules/.bin); install it, or set tools.lsp.servers.${server.name}.command`,
        false,
      );
    }
    const missing = server.sandbox ? await missingSandboxProgram() : undefined;
    if (missing !== undefined) {
      throw new ServerFailure(
        missing === BWRAP
          ? `the ${server.name} language server is configured to run in a bubblewrap sandbox, and ${BWRAP} is not installed (apt install bubblewrap)`
          : `the ${server.name} language server runs in a sandbox as tools.lsp.run_as, and ${missing} is not installed (util-linux)`,
        false,
      );
    }
    if (server.sandbox) {
      try {
        await checkSearchable(root, this.#config.runAs, {
          who: 'sandboxed language servers',
          key: 'tools.lsp.run_as',
        });
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        throw new ServerFailure(error.message, false);
      }
    }
    let initializationOptions: Record<string, unknown> = { ...server.initializationOptions };
    if (isTypescriptLanguageServer(server, command)) {
      const given = initializationOptions['tsserver'] as Record<string, unknown> | undefined;
      if (typeof given?.['path'] !== 'string') {
        // Left alone, typescript-language-server runs the workspace's node_modules/typescript:
        // code an agent could have written into the vault.
        const path = trustedTsserver(command.real);
        if (path === undefined) {
          throw new ServerFailure(
            `no TypeScript is installed beside ${command.real} or vaultd, and the workspace's own is not trusted; install typescript, or set tools.lsp.servers.${server.name}.initialization_options.tsserver.path`,
            false,
          );
        }
        initializationOptions = {
          disableAutomaticTypingAcquisition: true,
          ...initializationOptions,
          // One tsserver instead of a syntax and a semantic one: half the memory and start-up.
          tsserver: { useSyntaxServer: 'never', ...given, path },
        };
      }
    }
    if (this.#stopped) throw new ServerFailure('the lsp pack is stopping', true);
    // Another call may have started it while the program was looked up.
    const raced = this.#servers.get(key);
    if (raced !== undefined && !raced.gone) return raced;
    await this.#makeRoom();
    // The folders a sandboxed server is shown by path, as vaultd sees them now: a root swapped for
    // a link before bwrap mounts it would show the server another folder.
    const identities = server.sandbox
      ? await identitiesOf([...this.#roots, root]).catch((error: unknown) => {
          throw new ServerFailure(
            `cannot look at the workspace: ${(error as Error).message}`,
            true,
          );
        })
      : [];
    if (this.#stopped) throw new ServerFailure('the lsp pack is stopping', true);
    const started = new LanguageServer({
      server,
      command,
      root,
      config: this.#config,
      initializationOptions,
      roots: this.#roots,
      hidden: this.#hidden,
      identities,
      logger: this.#logger,
      onExit: (s, reason) => this.#crashed(key, s, reason),
    });
    this.#servers.set(key, started);
    started.ready.then(
      () => undefined,
      (error: unknown) => {
        if (this.#servers.get(key) === started) this.#servers.delete(key);
        if ((error as ServerFailure).recoverable) this.#fail(key, (error as Error).message, 0);
        this.#logger.error({ err: error }, 'language server could not start');
      },
    );
    return started;
  }

  #crashed(key: string, server: LanguageServer, reason: string): void {
    if (this.#servers.get(key) === server) this.#servers.delete(key);
    const name = server.options.server.name;
    this.#fail(
      key,
      `the ${name} language server for ${server.options.root} ${reason}`,
      Date.now() - server.upSince,
    );
    this.#logger.error({ reason, root: server.options.root }, 'language server crashed');
  }

  #fail(key: string, reason: string, ranMs: number): void {
    const previous = this.#backoff.get(key);
    const failures = previous === undefined || ranMs >= STABLE_MS ? 1 : previous.failures + 1;
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1));
    this.#backoff.set(key, { failures, until: Date.now() + delay, reason });
  }

  async #makeRoom(): Promise<void> {
    while (this.#servers.size >= this.#config.maxServers) {
      const oldest = [...this.#servers.entries()].sort((a, b) => a[1].lastUsed - b[1].lastUsed)[0];
      if (oldest === undefined) return;
      this.#servers.delete(oldest[0]);
      this.#logger.info({ root: oldest[1].options.root }, 'language server stopped for room');
      await oldest[1].stop();
    }
  }

  #stopIdle(): void {
    const now = Date.now();
    for (const [key, server] of this.#servers) {
      if (server.inFlight > 0 || !server.up) continue;
      if (now - server.lastUsed < this.#config.idleShutdownMs) continue;
      this.#servers.delete(key);
      this.#logger.info({ root: server.options.root }, 'idle language server stopped');
      void server.stop();
    }
  }
}

/** Wait for a promise, or reject at once when the signal aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('the call was aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('the call was aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}
