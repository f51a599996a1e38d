import { randomUUID } from 'node:crypto';
import { link, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { stringify } from 'yaml';
import { ToolError } from '../../protocol/errors.ts';
import { readClaimedName } from '../../vault/claim.ts';
import { errnoCode } from '../../vault/fs-errors.ts';
import { makeFolderInVault } from '../../vault/vault-writer.ts';
import type { Message } from './types.ts';

/** Where an outbox message was filed. */
export interface OutboxReceipt {
  /** File name, e.g. `2026-11-21T10-00-00-000Z-weekly-report.md`. */
  readonly fileName: string;
  /** Vault-relative path with forward slashes. */
  readonly path: string;
}

/** Facts recorded in the outbox note's front-matter. */
export interface OutboxMeta {
  readonly callId: string;
  /** Vault-relative path of the note the call came from. */
  readonly note: string | undefined;
  readonly now: Date;
}

/**
 * Turn a subject into a short file-name slug: ASCII letters, digits and hyphens, at most 50.
 * @param subject the message subject.
 * @returns the slug, or `message` when nothing usable is left.
 */
export function slugify(subject: string): string {
  const slug = subject
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return slug === '' ? 'message' : slug;
}

/**
 * File a message as a markdown note in the vault's outbox folder: written to a temp file, then
 * linked into place under a name no other file has (a taken name gets `-2`, `-3`, …), so a reader
 * never sees half a note and no note is ever overwritten. The folder must be the vault's own, with
 * no symbolic link on the way (an agent's link would file the message outside the vault).
 * @param vault absolute vault path.
 * @param folder outbox folder relative to the vault (created when missing).
 * @throws ToolError `EXECUTION_FAILED` when the folder is outside the vault or is a link.
 * @param message recipient, subject and body.
 * @param meta call id, source note and time for the front-matter and the name.
 */
export async function writeOutboxNote(
  vault: string,
  folder: string,
  message: Message,
  meta: OutboxMeta,
): Promise<OutboxReceipt> {
  const dir = resolve(vault, folder);
  const inside = relative(resolve(vault), dir);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    throw new ToolError(
      'EXECUTION_FAILED',
      `the outbox folder '${folder}' is outside the vault; fix tools.send_notification.outbox.folder`,
      {
        recoverable: false,
      },
    );
  }
  try {
    await makeFolderInVault(vault, dir);
  } catch (error) {
    if (errnoCode(error) !== 'EOUTSIDE') throw error;
    throw new ToolError(
      'EXECUTION_FAILED',
      `${(error as Error).message}; the message was not filed`,
      { recoverable: false },
    );
  }
  const stamp = meta.now.toISOString().replace(/:/g, '-').replace('.', '-');
  const base = `${stamp}-${slugify(message.subject)}`;
  const temp = join(dir, `.${base}.${randomUUID()}.tmp`);
  await writeFile(temp, renderOutboxNote(message, meta), { flag: 'wx' });
  try {
    for (let n = 1; n <= 1000; n++) {
      const fileName = n === 1 ? `${base}.md` : `${base}-${n}.md`;
      if (await placeFile(temp, join(dir, fileName))) {
        return {
          fileName,
          path: relative(resolve(vault), join(dir, fileName)).split('\\').join('/'),
        };
      }
    }
    throw new Error(`no free file name for ${base}.md in ${dir}`);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Link `temp` to `target` unless `target` exists; false when the name is taken. */
async function placeFile(temp: string, target: string): Promise<boolean> {
  try {
    await link(temp, target);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    // File systems without hard links (some network and FAT mounts): check, then rename.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') {
      const taken = await stat(target).then(
        () => true,
        () => false,
      );
      if (taken) return false;
      await rename(temp, target);
      return true;
    }
    throw error;
  }
}

/**
 * A link to the note a call came from that keeps working after it moves on: Obsidian resolves
 * `[[name]]` by name in any folder, while the path the note had during the call (in In_Progress/,
 * under a claim tag) is gone a moment later.
 * @param note the note's vault-relative path during the call.
 */
export function sourceLink(note: string): string {
  const name = readClaimedName(basename(note)).original.replace(/\.md$/i, '');
  return /[[\]|#^\r\n]/.test(name) ? name : `[[${name}]]`;
}

/**
 * The outbox note: front-matter with the recipient, subject and provenance, then the message.
 * @param message recipient, subject and body.
 * @param meta call id, source note and time.
 */
export function renderOutboxNote(message: Message, meta: OutboxMeta): string {
  const front = stringify({
    type: 'outbox_message',
    recipient: message.recipient,
    subject: message.subject,
    created: meta.now.toISOString(),
    delivered: false,
    call_id: meta.callId,
    ...(meta.note === undefined ? {} : { source_note: sourceLink(meta.note) }),
  });
  const body = message.body.endsWith('\n') ? message.body : `${message.body}\n`;
  return `---\n${front}---\n\n# ${message.subject}\n\n${body}`;
}
