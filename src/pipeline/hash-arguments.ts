export { hashArguments } from '../protocol/hash-arguments.ts';
