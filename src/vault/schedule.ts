import cron from 'node-cron';

/** A running schedule. */
export interface Schedule {
  /** Stop; a run in progress finishes. */
  stop(): void;
}

/** Options of {@link scheduleCron}. */
export interface ScheduleOptions {
  /** Told about a run that threw or rejected. */
  readonly onError?: (error: unknown) => void;
  /** The longest a timer sleeps before the wall clock is read again; default 60 s. */
  readonly maxSleepMs?: number;
  /** The wall clock, in ms; default `Date.now` (tests move it without moving the timers). */
  readonly now?: () => number;
}

interface Fields {
  readonly second: ReadonlySet<number>;
  readonly minute: ReadonlySet<number>;
  readonly hour: ReadonlySet<number>;
  readonly dayOfMonth: ReadonlySet<number>;
  readonly month: ReadonlySet<number>;
  readonly dayOfWeek: ReadonlySet<number>;
}

/**
 * Run `task` at the times a cron expression names (node-cron syntax, seconds field optional),
 * safely across clock jumps: the next time is always computed from the current wall clock, never
 * from the last planned one, so a jump forward runs the task once (no replay of missed slots) and
 * a jump backward never stalls the schedule; a timer never sleeps longer than `maxSleepMs`, so a
 * jump is noticed within that. Runs never overlap. Timers are unref'd.
 * @param expression a cron expression node-cron accepts.
 * @param task what to run.
 * @param options error handler and longest sleep.
 * @throws Error for an invalid expression.
 */
export function scheduleCron(
  expression: string,
  task: () => unknown,
  options: ScheduleOptions = {},
): Schedule {
  const fields = toFields(cron.parse(expression) as Record<keyof Fields, number[]>);
  const maxSleepMs = options.maxSleepMs ?? 60_000;
  const clock = options.now ?? Date.now;
  let stopped = false;
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let due = nextMatch(fields, new Date(clock())).getTime();

  const arm = (): void => {
    if (stopped) return;
    const wait = Math.max(0, Math.min(due - clock(), maxSleepMs));
    timer = setTimeout(tick, wait);
    timer.unref?.();
  };
  const tick = (): void => {
    const now = clock();
    // A backward jump leaves `due` far ahead: plan again from now.
    if (due - now > maxSleepMs * 2 && nextMatch(fields, new Date(now)).getTime() < due) {
      due = nextMatch(fields, new Date(now)).getTime();
    }
    if (now >= due) {
      due = nextMatch(fields, new Date(now)).getTime();
      if (!running) {
        running = true;
        Promise.resolve()
          .then(task)
          .catch((error: unknown) => options.onError?.(error))
          .finally(() => {
            running = false;
          });
      }
    }
    arm();
  };
  arm();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/**
 * The first time strictly after `from` (whole seconds) that the fields match, in local time; at
 * most a few thousand steps for any expression, since whole months, days, hours and minutes that
 * do not match are skipped at once.
 * @param fields the allowed values of each field.
 * @param from the time to start after.
 */
function nextMatch(fields: Fields, from: Date): Date {
  const t = new Date(from.getTime());
  t.setMilliseconds(0);
  t.setSeconds(t.getSeconds() + 1);
  for (let steps = 0; steps < 100_000; steps++) {
    if (!fields.month.has(t.getMonth() + 1)) {
      t.setMonth(t.getMonth() + 1, 1);
      t.setHours(0, 0, 0);
      continue;
    }
    if (!fields.dayOfMonth.has(t.getDate()) || !fields.dayOfWeek.has(t.getDay())) {
      t.setDate(t.getDate() + 1);
      t.setHours(0, 0, 0);
      continue;
    }
    if (!fields.hour.has(t.getHours())) {
      t.setHours(t.getHours() + 1, 0, 0);
      continue;
    }
    if (!fields.minute.has(t.getMinutes())) {
      t.setMinutes(t.getMinutes() + 1, 0);
      continue;
    }
    if (!fields.second.has(t.getSeconds())) {
      t.setSeconds(t.getSeconds() + 1);
      continue;
    }
    return t;
  }
  // An expression that never matches (31 February): try again in a day.
  return new Date(from.getTime() + 86_400_000);
}

function toFields(parsed: Record<keyof Fields, number[]>): Fields {
  const set = (values: number[] | undefined): ReadonlySet<number> => new Set(values ?? []);
  // node-cron numbers Sunday 0 (and accepts 7 for it).
  const days = new Set((parsed.dayOfWeek ?? []).map((d) => d % 7));
  return {
    second: set(parsed.second),
    minute: set(parsed.minute),
    hour: set(parsed.hour),
    dayOfMonth: set(parsed.dayOfMonth),
    month: set(parsed.month),
    dayOfWeek: days,
  };
}
