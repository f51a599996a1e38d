/**
 * `pass` made to run one at a time: a call while a pass runs asks for one more pass after it
 * (however many calls come meanwhile, one), and every call gets the promise of the passes in
 * flight. For work that reads the current state each time (a folder, a server's tool list), where
 * two passes at once would do the same work twice and a request during a pass must still be seen.
 * @param pass the work; it reads what it needs when it runs.
 */
export function oneAtATime(pass: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await pass();
        } while (again);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
}
