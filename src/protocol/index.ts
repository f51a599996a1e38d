export type {
  ApprovedBy,
  JsonSchema,
  RateLimit,
  ResultMetadata,
  ResultStatus,
  SafetyLevel,
  Tool,
  ToolCall,
  ToolContext,
  ToolDefinition,
  ToolProgress,
  ToolResult,
} from './types.ts';
export { SAFETY_LEVELS } from './types.ts';
export type { ErrorCode, ResultError, ToolErrorOptions } from './errors.ts';
export { ERROR_CODES, ToolError, isErrorCode } from './errors.ts';
export {
  PARAMETER_TYPES,
  TOOL_NAME_PATTERN,
  defineTool,
  getValidator,
  isDefinedTool,
} from './define-tool.ts';
export type { ValidationResult } from './validate.ts';
export { describeValue, validateArguments } from './validate.ts';
export type { ToolFilter } from './registry.ts';
export { ToolRegistry } from './registry.ts';
export type {
  AnthropicTool,
  McpTool,
  McpToolAnnotations,
  OpenAIExportOptions,
  OpenAITool,
} from './export.ts';
export { toAnthropicTools, toMcpTools, toOpenAITools } from './export.ts';
