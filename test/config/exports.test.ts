import assert from 'node:assert/strict';
import { it } from 'node:test';
import * as config from '../../src/config/index.ts';

it('src/config exports exactly its public surface', () => {
  assert.deepEqual(Object.keys(config).sort(), [
    'CONFIG_DEFAULTS',
    'CONFIG_SCHEMA',
    'ConfigError',
    'envValuesOf',
    'loadConfig',
    'parseDuration',
    'sampleConfigText',
  ]);
});
