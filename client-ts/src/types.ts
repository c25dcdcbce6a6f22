/** Per-operation types picked from the generated `operations`, so no request or answer is restated. */

import type { components, operations } from "./generated/schema.js";

type Op = keyof operations;
type Success<K extends Op> = operations[K]["responses"] extends { 200: infer R }
  ? R
  : operations[K]["responses"] extends { 201: infer R }
    ? R
    : never;

/** The JSON body an operation takes. */
export type Body<K extends Op> = operations[K] extends { requestBody: { content: { "application/json": infer B } } }
  ? B
  : never;
/** The JSON answer an operation succeeds with. */
export type Result<K extends Op> = Success<K> extends { content: { "application/json": infer B } } ? B : never;
/** An operation's path parameters. */
export type PathParams<K extends Op> = NonNullable<operations[K]["parameters"]["path"]>;
/** An operation's query parameters. */
export type QueryParams<K extends Op> = NonNullable<operations[K]["parameters"]["query"]>;

export type Schemas = components["schemas"];
export type PreparedContext = Schemas["PreparedContext"];
export type PrepareContextRequest = Schemas["PrepareContextRequest"];
export type ScopeDescriptor = Schemas["ScopeDescriptor"];
export type ScopeExportLine = Schemas["ScopeExportLine"];
