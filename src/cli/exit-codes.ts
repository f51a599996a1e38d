/** Exit codes of every command (SPEC section 9). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;
