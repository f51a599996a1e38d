export type { Config, FolderNames, PolicyRule } from './types.ts';
export { ConfigError } from './config-error.ts';
export { CONFIG_DEFAULTS } from './defaults.ts';
export { CONFIG_SCHEMA } from './schema.ts';
export { envValuesOf, loadConfig, type LoadConfigOptions } from './load-config.ts';
export { parseDuration } from './duration.ts';
export { sampleConfigText } from './sample.ts';
