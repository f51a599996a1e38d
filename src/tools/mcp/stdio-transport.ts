import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { killByEnvironment } from '../../execute/proc-sweep.ts';
import { signalGroup } from '../../execute/exec.ts';
import { McpNotSentError } from './not-sent.ts';

/**
 * The variable every stdio server is started with, a value of its own: what the server starts
 * inherits it, so a process that left the server's group (`setsid`) is still found and ended.
 */
export const SERVER_TAG_VARIABLE = 'VAULTD_MCP_SERVER_TAG';

/** How long a server may take to exit once its stdin is closed and it is sent SIGTERM. */
const GRACE_MS = 2000;

/**
 * Bytes sent to a server and not yet read by it past which nothing more is sent: a server that
 * stops reading its input made vaultd keep every later call's arguments in memory, for ever.
 */
const MAX_UNREAD_BYTES = 16 * 1024 * 1024;

/** The program of a stdio MCP server and how to start it. */
export interface StdioServerParams {
  readonly command: string;
  readonly args: readonly string[];
  /** Added to the SDK's few safe variables (`HOME`, `PATH`, `USER`…); nothing else is inherited. */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/**
 * The SDK's stdio client transport, but with the server in a process group of its own: closing
 * ends the whole group (a wrapper such as `npx` or `sh -c` and what it started, or a child the
 * server left behind), not just the process vaultd started, and a server whose process exits is
 * closed at once, even while a child of it still holds its output open. A process the server
 * started in a session of its own, out of the group's reach, is found by the tag in its
 * environment ({@link SERVER_TAG_VARIABLE}) and killed too. Messages are read with the SDK's own
 * reader, with its size cap.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, there before the start so that nothing it writes early is lost. */
  readonly stderr = new PassThrough();
  readonly #params: StdioServerParams;
  readonly #buffer = new ReadBuffer();
  readonly #tag = randomUUID();
  #child: ChildProcess | undefined;
  #pid: number | null = null;
  #closed = false;

  /** @param params the program, its arguments, environment and working directory. */
  constructor(params: StdioServerParams) {
    this.#params = params;
  }

  /** Start the server's process. */
  async start(): Promise<void> {
    if (this.#child !== undefined) throw new Error('the MCP server was started already');
    const child = spawn(this.#params.command, [...this.#params.args], {
      env: { ...getDefaultEnvironment(), ...this.#params.env, [SERVER_TAG_VARIABLE]: this.#tag },
      ...(this.#params.cwd === undefined ? {} : { cwd: this.#params.cwd }),
      stdio: ['pipe', 'pipe', 'pipe'],
      shell: false,
      detached: true,
    });
    this.#child = child;
    child.stderr?.pipe(this.stderr);
    child.stdin?.on('error', (error) => this.onerror?.(error));
    child.stdout?.on('error', (error) => this.onerror?.(error));
    child.stdout?.on('data', (chunk: Buffer) => {
      try {
        this.#buffer.append(chunk);
      } catch (error) {
        // Over the SDK's cap on one message.
        this.onerror?.(error as Error);
        void this.close();
        return;
      }
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.#buffer.readMessage();
        } catch (error) {
          // A line that is not a JSON-RPC message is skipped, as the SDK does.
          this.onerror?.(error as Error);
          continue;
        }
        if (message === null) break;
        this.onmessage?.(message);
      }
    });
    // `exit`, not `close`: a child of the server that holds its output open would keep `close`
    // from coming, and the connection would wait for answers that never come.
    child.once('exit', () => void this.close());
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', () => {
        this.#pid = child.pid ?? null;
        resolve();
      });
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
    });
  }

  /**
   * Send one message.
   * @param message the JSON-RPC message.
   */
  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    // Nothing of the message leaves vaultd in either case: the call did not act (a plain Error
    // counted as "may have acted" for a tool that is not safe).
    if (this.#closed || stdin === undefined || stdin === null)
      throw new McpNotSentError('Not connected');
    if (stdin.writableLength > MAX_UNREAD_BYTES) {
      throw new McpNotSentError(
        `the server has not read the last ${Math.round(stdin.writableLength / 1024 / 1024)} MiB sent to it; nothing more is sent until it reads`,
      );
    }
    if (!stdin.write(serializeMessage(message))) {
      await new Promise((resolve) => stdin.once('drain', resolve));
    }
  }

  /**
   * End the server and its group: stdin closed, then SIGTERM to the group, then SIGKILL to it,
   * each after up to {@link GRACE_MS} while the server's process is still there; then SIGKILL to
   * any process left that carries the server's tag.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const child = this.#child;
    if (child !== undefined) {
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) resolve();
        else child.once('exit', () => resolve());
      });
      try {
        child.stdin?.end();
      } catch {
        // Closed already.
      }
      // As the SDK does: stdin closed, then SIGTERM, then SIGKILL, each after up to GRACE_MS;
      // but to the whole group, whose other members get the signals once the server is gone.
      await Promise.race([exited, delay(GRACE_MS)]);
      this.#signal('SIGTERM');
      await Promise.race([exited, delay(GRACE_MS)]);
      this.#signal('SIGKILL');
      // What left the group: a daemonising server, or a child it put in a session of its own.
      if (this.#pid !== null) await killByEnvironment(SERVER_TAG_VARIABLE, this.#tag);
      child.stdout?.destroy();
      child.stderr?.unpipe(this.stderr);
      child.stderr?.destroy();
    }
    this.#buffer.clear();
    this.onclose?.();
  }

  #signal(signal: NodeJS.Signals): void {
    if (this.#pid !== null) signalGroup(this.#pid, signal);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
