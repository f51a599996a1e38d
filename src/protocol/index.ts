export type {
  ApprovedBy,
  CallFacts,
  Effects,
  EffectsFunction,
  EffectsSpec,
  ExecOptions,
  ExecResult,
  FileRoot,
  Preview,
  PreviewBasis,
  PreviewContext,
  ResolvedPath,
  VaultAccess,
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
  checkToolSchemas,
  defineTool,
  getValidator,
  isDefinedTool,
  withPack,
} from './define-tool.ts';
export { isRecord, isToolName } from './names.ts';
export { isToolOutput, toolOutput, type ToolOutput } from './output.ts';
export { effectsOf, staticEffects } from './effects.ts';
export { hashArguments } from './hash-arguments.ts';
export {
  definePack,
  isToolPack,
  type PackContext,
  type PackHandle,
  type PackRoot,
  type ToolPack,
} from './pack.ts';
export type { RegistryChange } from './registry.ts';
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
