export { canonicalJson } from '../protocol/canonical-json.ts';
