#!/usr/bin/env node
// vaultd runs from its TypeScript sources through tsx: no build step between a checkout and a
// running daemon. File work (reads, fsyncs, renames) goes through libuv's thread pool, whose
// default of 4 threads serialises fsyncs under load; it must be sized before the first fs call.
process.env.UV_THREADPOOL_SIZE ??= '16';
const { register } = await import('tsx/esm/api');
register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
