// In a checkout the worker runs from the TypeScript sources: load tsx in this thread first.
import { register } from 'tsx/esm/api';

register();
await import('./note-worker.ts');
