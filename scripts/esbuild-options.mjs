// How every bundle of vaultd's sources is made: by the build (scripts/build.mjs, dist/) and by
// the bench, which times modules bundled the way the daemon runs them (bench/lib/bundled.ts).
/** @type {import('esbuild').BuildOptions} */
export const NODE_BUNDLE = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.19',
  packages: 'external',
  logLevel: 'warning',
};
