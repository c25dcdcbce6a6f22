export { PowerContextClient, type ClientOptions } from "./client.js";
export * from "./errors.js";
export { OPERATIONS, type OperationId } from "./generated/operations.js";
export type { components, operations, paths } from "./generated/schema.js";
export { DEFAULT_RETRY, type RetryPolicy, repeatable } from "./retry.js";
export { type ImportSource, ScopeExport } from "./transfer.js";
export type * from "./types.js";
export { PREPARED_CONTEXT_SCHEMA, type ValidatedContext, validatePreparedContext } from "./validate.js";
