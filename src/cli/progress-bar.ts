/** A one-line progress bar for a terminal; silent when the stream is not a TTY. */
export interface ProgressBar {
  update(left: number): void;
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
  const draw = (left: number): void => {
    total = Math.max(total, left + 1);
    const done = total - left;
    const width = 30;
    const filled = Math.round((done / total) * width);
    stream.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} notes`);
  };
  return {
    update(left) {
      const now = Date.now();
      if (now - last < 100 && left > 0) return;
      last = now;
      draw(left);
    },
    done() {
      // The last updates race with each other (notes finish together) and may be throttled:
      // the finished bar is drawn here.
      if (total === 0) return;
      draw(0);
      stream.write('\n');
    },
  };
}
