export { Executor } from './executor.ts';
export type { CheckResult, ExecuteOptions, ExecutorHooks, ExecutorOptions } from './types.ts';
export type { ToolMetrics } from './metrics.ts';
export { LATENCY_WINDOW } from './metrics.ts';
export type { FormattedOutput } from './format-result.ts';
export { EMPTY_OUTPUT, formatOutput } from './format-result.ts';
export { canonicalJson } from './canonical-json.ts';
