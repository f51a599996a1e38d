import type { BuildOptions } from 'esbuild';

/** How every bundle of vaultd's sources is made (see esbuild-options.mjs). */
export declare const NODE_BUNDLE: BuildOptions;
