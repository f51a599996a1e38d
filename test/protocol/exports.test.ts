import assert from 'node:assert/strict';
import { it } from 'node:test';
import * as protocol from '../../src/protocol/index.ts';

it('src/protocol exports exactly its public runtime surface', () => {
  assert.deepEqual(Object.keys(protocol).sort(), [
    'ERROR_CODES',
    'PARAMETER_TYPES',
    'SAFETY_LEVELS',
    'TOOL_NAME_PATTERN',
    'ToolError',
    'ToolRegistry',
    'checkToolSchemas',
    'definePack',
    'defineTool',
    'describeValue',
    'effectsOf',
    'getValidator',
    'hashArguments',
    'isDefinedTool',
    'isErrorCode',
    'isRecord',
    'isToolName',
    'isToolOutput',
    'isToolPack',
    'staticEffects',
    'toAnthropicTools',
    'toMcpTools',
    'toOpenAITools',
    'toolOutput',
    'validateArguments',
    'withPack',
  ]);
});
