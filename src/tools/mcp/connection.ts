import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { McpServerConfig } from './config.ts';
import { cappedFetch, MAX_MCP_MESSAGE_BYTES } from './capped-fetch.ts';
import { oneAtATime } from '../../protocol/one-at-a-time.ts';
import { makeOutputValidator, type OutputValidator } from './output-validator.ts';
import { McpNotSentError } from './not-sent.ts';
import { listTools, type ToolListing } from './list-tools.ts';

/** What a call to a server's tool may be given. */
export interface McpCallOptions {
  /** Aborting it cancels the request (`notifications/cancelled` goes to the server). */
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** Progress the server reports, as a fraction when it says the total. */
  readonly onProgress?: (progress: {
    progress: number;
    total?: number | undefined;
    message?: string | undefined;
  }) => void;
}

/** Longest wait between two attempts to start a server that keeps failing. */
const MAX_BACKOFF_MS = 60_000;
/** Lines of a server's stderr kept for error messages. */
const STDERR_LINES = 20;

/**
 * One configured MCP server, connected through the official SDK client (stdio or Streamable
 * HTTP): its tools, calls to them, and its lifecycle. A server that goes away is started again
 * with backoff (1 s doubling to 1 min); calls in flight then fail with a clear error, and calls
 * while it is down are refused at once. `tools/list_changed` refreshes the tool list.
 */
export class McpConnection {
  readonly config: McpServerConfig;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  #client: Client | undefined;
  #outputs: OutputValidator | undefined;
  #transport: Transport | undefined;
  #listing: ToolListing = { tools: [], hash: '' };
  #state: 'starting' | 'up' | 'down' | 'stopped' = 'starting';
  #failures = 0;
  /** When the connection last came up (`performance.now()`). */
  #upSince = 0;
  #retry: NodeJS.Timeout | undefined;
  #lastError = '';
  /** Why this connection is being closed, when vaultd closes it (an answer over the size cap). */
  #closedFor: string | undefined;
  readonly #stderr: string[] = [];

  /**
   * @param config the server's config.
   * @param logger for the server's life and its stderr.
   * @param onChange told when the server's tools change (listed again, lost, back).
   */
  constructor(config: McpServerConfig, logger: Logger, onChange: () => void) {
    this.config = config;
    this.#logger = logger.child({ mcp_server: config.name });
    this.#onChange = onChange;
  }

  /** The server's tools as it last listed them (kept while it restarts). */
  get tools(): readonly McpTool[] {
    return this.#listing.tools;
  }

  /** Whether calls can be made now. */
  get up(): boolean {
    return this.#state === 'up';
  }

  /**
   * Connect and list the tools; rejects with the reason when the server cannot be reached in
   * time (then no retries are scheduled: start-up reports it).
   */
  async start(): Promise<void> {
    await this.#connect();
  }

  /**
   * Call one of the server's tools.
   * @param name the tool's name on the server.
   * @param args its arguments, validated against its input schema already.
   * @param options signal, timeout and progress.
   */
  async call(
    name: string,
    args: Record<string, unknown>,
    options: McpCallOptions,
  ): Promise<CallToolResult> {
    const client = this.#client;
    const transport = this.#transport;
    if (this.#state !== 'up' || client === undefined) {
      throw new McpNotSentError(
        `MCP server ${this.config.name} is not running (${this.#lastError || 'starting'}); it is being restarted, try again later`,
      );
    }
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs,
        ...(options.onProgress === undefined ? {} : { onprogress: options.onProgress }),
      })) as CallToolResult;
    } catch (error) {
      // The connection closed because an answer was over the size cap: say that, not "closed".
      const reason = this.#closedFor;
      if (reason !== undefined && this.#client !== client)
        throw new Error(reason, { cause: error });
      if (transport !== undefined && sessionLost(error, transport)) {
        this.#sessionLost(transport);
        throw new McpNotSentError(
          `MCP server ${this.config.name} no longer knows vaultd's session (it restarted?) and refused the call, which did not run; vaultd connects again, try again later`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /** Stop for good: no restarts, the client closed, a stdio server's process ended. */
  async stop(): Promise<void> {
    this.#state = 'stopped';
    clearTimeout(this.#retry);
    await this.#close();
  }

  async #connect(): Promise<void> {
    // The SDK is loaded the first time a server is configured: most vaults have none, and loading
    // it costs a start-up a few hundred milliseconds.
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const outputs = makeOutputValidator();
    const listAgain = oneAtATime(() => this.#listAgain(client));
    const client = new Client(
      { name: 'vaultd', version: '0.1.0' },
      {
        capabilities: {},
        jsonSchemaValidator: outputs,
        listChanged: {
          // Listed by vaultd, not the SDK: every page (the SDK lists the first), one listing at a
          // time, each with a fresh output-schema compiler.
          // No debounce: the SDK's (300 ms, trailing) restarted at each notification, and a
          // server that sent one every 50 ms was never listed again (review finding);
          // `oneAtATime` and the second between listings already bound the rate.
          tools: { autoRefresh: false, debounceMs: 0, onChanged: () => void listAgain() },
        },
      },
    );
    const transport = await this.#makeTransport();
    if (this.#state === 'stopped') {
      // Stopped while the transport was made: nothing of it may outlive the stop.
      await transport.close().catch(() => undefined);
      throw new Error(`MCP server ${this.config.name} was stopped`);
    }
    this.#outputs = outputs;
    this.#closedFor = undefined;
    // Only the connection in use, once it is up, is lost by a close: a close while it starts
    // fails the start, which schedules the one retry (both did: each failed start left two
    // timers, the restarts doubled, and of two that came up the first was overwritten, its
    // process no longer tracked or ended at stop; review finding). A close vaultd makes itself
    // is not a loss either, but the SDK's handler chained after this one still runs, so the
    // calls in flight fail at once instead of at their timeouts.
    let closedEarly = false;
    transport.onclose = () => {
      if (this.#transport !== transport) return;
      if (this.#state !== 'up') {
        closedEarly = true;
        return;
      }
      this.#lost(this.#closedFor ?? 'the connection closed');
    };
    transport.onerror = (error) => {
      this.#logger.debug({ err: error }, 'MCP transport error');
      // The event stream (GET) refused for the session. A turn later: a call whose own request
      // was refused fails with that refusal first (closing now would fail it as "closed").
      if (sessionLost(error, transport)) setImmediate(() => this.#sessionLost(transport));
    };
    this.#client = client;
    this.#transport = transport;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        (async () => {
          await client.connect(transport);
          this.#setTools(await this.#listAll(client, outputs));
        })(),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.config.connectTimeoutMs} ms`)),
            this.config.connectTimeoutMs,
          );
        }),
      ]);
    } catch (error) {
      clearTimeout(timer);
      this.#lastError = `${(error as Error).message}${this.#stderrTail()}`;
      await this.#close();
      throw new Error(`MCP server ${this.config.name} could not start: ${this.#lastError}`, {
        cause: error,
      });
    }
    clearTimeout(timer);
    if (this.#transport !== transport) {
      // Closed while it connected (a stop, or the session refused): whoever closed it closed it
      // whole, and one connect runs at a time, so nothing else replaced it.
      throw new Error(`MCP server ${this.config.name}: the connection closed while it was made`);
    }
    this.#state = 'up';
    this.#upSince = performance.now();
    if (closedEarly) {
      this.#lost(this.#closedFor ?? 'the connection closed');
      return;
    }
    this.#logger.info({ tools: this.#listing.tools.length }, 'MCP server connected');
    this.#onChange();
  }

  /**
   * List every page with a fresh output-schema compiler ({@link listTools}: within vaultd's
   * limits, each tool with only what vaultd uses).
   */
  async #listAll(client: Client, outputs: OutputValidator): Promise<ToolListing> {
    outputs.renew();
    return listTools(client, this.#logger);
  }

  /** Take a listing; the old one stays when nothing changed, so nothing is compiled again. */
  #setTools(listing: ToolListing): boolean {
    if (listing.hash === this.#listing.hash) return false;
    this.#listing = listing;
    return true;
  }

  /**
   * List a server's tools again after `tools/list_changed` (every page, with a fresh output-schema
   * compiler), one listing at a time ({@link oneAtATime}); a server that says its list changed
   * again and again is listed at most once a second.
   */
  async #listAgain(client: Client): Promise<void> {
    if (this.#client !== client || this.#outputs === undefined) return;
    try {
      const tools = await this.#listAll(client, this.#outputs);
      if (this.#client === client && this.#setTools(tools)) this.#onChange();
    } catch (error) {
      this.#logger.warn({ err: error }, 'MCP server tools could not be listed again');
    }
    await new Promise((resolve) => setTimeout(resolve, 1000).unref());
  }

  async #makeTransport(): Promise<Transport> {
    const { config } = this;
    if (config.url !== undefined) {
      const { StreamableHTTPClientTransport } =
        await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      // An event cut off for its size leaves its call without an answer: close the connection,
      // which fails the calls in flight at once instead of at their timeouts, and connect again.
      const http = cappedFetch(MAX_MCP_MESSAGE_BYTES, (error) => {
        if (this.#closedFor !== undefined) return;
        this.#closedFor = error.message;
        void this.#transport?.close().catch(() => undefined);
      });
      const transport = new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
        fetch: http.fetch,
      });
      // The client chains its handler after this one: an answer closes its request's stream.
      transport.onmessage = (message) => http.received(message);
      return transport;
    }
    const { GroupStdioTransport } = await import('./stdio-transport.ts');
    const transport = new GroupStdioTransport({
      command: config.command ?? '',
      args: config.args,
      // Only what the operator wrote, and PATH to find the program: no secret of vaultd's leaks.
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...config.env },
      ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
    });
    transport.stderr.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        this.#stderr.push(line.slice(0, 500));
        if (this.#stderr.length > STDERR_LINES) this.#stderr.shift();
        this.#logger.debug({ stderr: line.slice(0, 500) }, 'MCP server stderr');
      }
    });
    return transport;
  }

  #lost(reason: string): void {
    if (this.#state === 'stopped' || this.#state === 'down') return;
    this.#state = 'down';
    this.#lastError = `${reason}${this.#stderrTail()}`;
    // The backoff starts again only after a connection that lasted: a server that answers its
    // start and exits at once would otherwise be started every second for ever.
    if (performance.now() - this.#upSince >= MAX_BACKOFF_MS) this.#failures = 0;
    const delay = this.#scheduleRestart();
    this.#logger.error(
      { reason: this.#lastError, retry_in_ms: delay },
      'MCP server went away; restarting it',
    );
    void this.#close();
  }

  /**
   * A Streamable HTTP server that no longer knows the session (it restarted) answers every request
   * with 404 and the SDK neither closes nor starts a new session: taken as a lost connection, so a
   * new one (a new `initialize`, the tools listed again) is made after the backoff.
   */
  #sessionLost(transport: Transport): void {
    if (this.#transport !== transport) return;
    this.#lost('the server no longer knows the session (it restarted?)');
  }

  /** Start the server again after the backoff; returns the wait. */
  #scheduleRestart(): number {
    if (this.#state === 'stopped') return 0;
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(this.#failures, 6));
    this.#failures += 1;
    // One retry pending at a time.
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => {
      if (this.#state === 'stopped') return;
      this.#state = 'starting';
      this.#connect().catch((error: unknown) => {
        if (this.#state === 'stopped') return;
        this.#state = 'down';
        const retry = this.#scheduleRestart();
        this.#logger.error({ err: error, retry_in_ms: retry }, 'MCP server restart failed');
      });
    }, delay);
    this.#retry.unref();
    return delay;
  }

  async #close(): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    this.#outputs = undefined;
    this.#transport = undefined;
    // The handler stays: it ignores a transport no longer in use, and the SDK's, chained after
    // it, fails the calls in flight (cleared, they waited out their timeouts; review finding).
    await client?.close().catch(() => undefined);
    // Also when the client never connected; a stdio server's transport ends its process group.
    await transport?.close().catch(() => undefined);
  }

  #stderrTail(): string {
    return this.#stderr.length === 0
      ? ''
      : `; its last words: ${this.#stderr.slice(-3).join(' | ')}`;
  }
}

/**
 * Whether `error` is a Streamable HTTP server's refusal of vaultd's session: 404 for a request
 * that carried a session id (the MCP specification's word that the session is gone and the client
 * must start a new one), or 400 saying the session id is not valid (the SDK's own server answers
 * so for a session it does not know, as the reference servers do after a restart).
 */
function sessionLost(error: unknown, transport: Transport): boolean {
  if (transport.sessionId === undefined || !(error instanceof Error)) return false;
  if (!error.message.startsWith('Streamable HTTP error:')) return false;
  const code = (error as { code?: unknown }).code;
  return code === 404 || (code === 400 && /session/i.test(error.message));
}
