/** A one-line progress bar for a terminal; silent when the stream is not a TTY. */
export interface ProgressBar {
  update(left: number): void;
  /**
   * Write something else to the same terminal above the bar: the bar's line is cleared, `write`
   * runs (it must write synchronously, ending with a newline), and the bar is drawn again below.
   */
  around(write: () => void): void;
  done(): void;
}

/**
 * Make a progress bar that draws at most every 100 ms on `stream` when it is a terminal.
 * @param stream usually `process.stderr`.
 */
export function createProgressBar(stream: NodeJS.WriteStream): ProgressBar | undefined {
  if (!stream.isTTY) return undefined;
  let total = 0;
  let last = 0;
  let shown: number | undefined;
  let finished = false;
  const draw = (left: number): void => {
    total = Math.max(total, left + 1);
    const done = total - left;
    const width = 30;
    const filled = Math.round((done / total) * width);
    shown = left;
    stream.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} notes`);
  };
  return {
    update(left) {
      if (finished) return;
      const now = Date.now();
      if (now - last < 100 && left > 0) return;
      last = now;
      draw(left);
    },
    around(write) {
      if (shown === undefined || finished) {
        write();
        return;
      }
      // Carriage return, then erase to the end of the line: the log line starts on a clean line.
      stream.write('\r\x1b[K');
      write();
      draw(shown);
    },
    done() {
      // The last updates race with each other (notes finish together) and may be throttled:
      // the finished bar is drawn here.
      if (finished) return;
      finished = true;
      if (total === 0) return;
      draw(0);
      stream.write('\n');
    },
  };
}
