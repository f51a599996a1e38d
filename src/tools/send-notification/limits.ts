import { ToolError } from '../../protocol/errors.ts';
import type { Message } from './types.ts';

/** Longest subject, in characters. */
export const MAX_SUBJECT = 200;
/** Longest body, in characters. */
export const MAX_BODY = 50_000;
/** Longest recipient (an e-mail address is at most 254 characters). */
export const MAX_RECIPIENT = 254;

// One plain address: no display name, no list, a dotted domain of letters, digits and hyphens.
const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/**
 * Check the sizes and shape every method shares: subject one line of at most 200 characters,
 * body at most 50,000 characters, recipient not blank.
 * @param message the message as the agent wrote it.
 * @returns the message with the recipient and subject trimmed.
 * @throws ToolError INVALID_PARAMS saying what to change.
 */
export function checkMessage(message: Message): Message {
  const recipient = message.recipient.trim();
  const subject = message.subject.trim();
  if (recipient === '' || recipient.length > MAX_RECIPIENT) {
    throw new ToolError('INVALID_PARAMS', `recipient must be 1 to ${MAX_RECIPIENT} characters`);
  }
  if (subject === '')
    throw new ToolError('INVALID_PARAMS', 'subject is blank: give the message a subject');
  if (/[\r\n]/.test(subject)) {
    throw new ToolError('INVALID_PARAMS', 'subject must be a single line: remove the line breaks');
  }
  if (subject.length > MAX_SUBJECT) {
    throw new ToolError(
      'INVALID_PARAMS',
      `subject is ${subject.length} characters; shorten it to at most ${MAX_SUBJECT}`,
    );
  }
  if (message.body.length > MAX_BODY) {
    throw new ToolError(
      'INVALID_PARAMS',
      `body is ${message.body.length} characters; shorten it to at most ${MAX_BODY}`,
    );
  }
  return { recipient, subject, body: message.body };
}

/**
 * True for one plain e-mail address such as `name@example.org` (no display name, no list).
 * @param value the candidate.
 */
export function isEmailAddress(value: string): boolean {
  return value.length <= MAX_RECIPIENT && EMAIL.test(value) && !value.includes('..');
}
