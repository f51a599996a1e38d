/** How big each sub-benchmark is: the full run (issue 6) or `--quick`. */
export interface Sizes {
  readonly latencyNotes: number;
  readonly latencyWarmup: number;
  readonly backlogNotes: number;
  readonly burstNotes: number;
  readonly scaleNotes: number;
  readonly scaleLogFiles: number;
  readonly idleSeconds: number;
  readonly sleepCalls: number;
  readonly sleepMs: number;
  readonly sleepCallsPerNote: number;
  readonly profileNotes: number;
  /** Notes processed one at a time by the raw baseline before its parallel pass. */
  readonly baselineSequential: number;
}

/** The full run's sizes, as issue 6 asks. */
export const FULL: Sizes = {
  latencyNotes: 500,
  latencyWarmup: 20,
  backlogNotes: 10_000,
  burstNotes: 20_000,
  scaleNotes: 200_000,
  scaleLogFiles: 3_650,
  idleSeconds: 30,
  sleepCalls: 100,
  sleepMs: 1_000,
  sleepCallsPerNote: 10,
  profileNotes: 5_000,
  baselineSequential: 200,
};

/** The `--quick` sizes: a few minutes on a 2-core machine. */
export const QUICK: Sizes = {
  latencyNotes: 200,
  latencyWarmup: 20,
  backlogNotes: 2_000,
  burstNotes: 5_000,
  scaleNotes: 50_000,
  scaleLogFiles: 1_000,
  idleSeconds: 10,
  sleepCalls: 50,
  sleepMs: 500,
  sleepCallsPerNote: 10,
  profileNotes: 2_000,
  baselineSequential: 100,
};

/** The raw baseline's figures, for the ratios of the other sub-benchmarks. */
export interface Baseline {
  readonly notesPerSecond: number;
  readonly perNoteP50Ms: number | null;
}

/** What every sub-benchmark gets. */
export interface BenchContext {
  readonly sizes: Sizes;
  readonly quick: boolean;
  /** Set once the baseline ran (it runs first). */
  baseline: Baseline | undefined;
  /** Where the profile is written (kept after the run). */
  readonly profileDir: string;
}

/** The daemon's default cap of concurrent tool calls (SPEC section 6). */
export const DEFAULT_CAP = 10;

/** Config lines that keep per-note logging out of the figures (the default level is info). */
export const QUIET_LOG = 'log:\n  level: warn\n';
