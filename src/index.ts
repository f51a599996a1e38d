// The public surface of vaultd as a library: every export is named here on purpose.
export * from './protocol/index.ts';
export * from './execute/index.ts';
export { startDaemon, type Daemon, type DaemonOptions } from './daemon.ts';
export { loadConfig, ConfigError } from './config/index.ts';
export type { Config } from './config/types.ts';
export { builtinTools } from './tools/index.ts';
export { searchWeb } from './tools/search-web/index.ts';
export { sendNotification } from './tools/send-notification/index.ts';
export { createLogger, silentLogger } from './observe/logger.ts';
