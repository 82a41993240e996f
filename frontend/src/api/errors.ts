/**
 * What went wrong with a request, in words for the page. The API answers errors in FastAPI's shape:
 * {detail: "text"} or {detail: [{loc: ["body", "target", "preset"], msg: "..."}]}; domain errors use the
 * second shape too, with loc naming the field (backend/app/api/errors.py).
 */

export interface FieldError {
  /** Dotted field path without "body" and union tags: "target.options.innodb_buffer_pool_size". */
  field: string;
  message: string;
}

// Validation messages that quote a regular expression, said the way a DBA would.
const PATTERN_WORDS: Record<string, string> = {
  "^\\d+[KMGkmg]?$": "a size such as 512M or 2G (digits, then optionally K, M or G)",
  "^[^`/\\\\.\\x00]{1,64}$": "a database name of 1 to 64 characters without `, /, \\ or .",
  "^[a-z0-9][a-z0-9._@-]*$": "a user name of letters, digits and . _ @ -, starting with a letter or a digit",
};

function plainMessage(message: string): string {
  const pattern = /^String should match pattern '(.*)'$/.exec(message);
  const words = pattern?.[1] === undefined ? undefined : PATTERN_WORDS[pattern[1]];
  return words === undefined ? message.replace(/^Value error, /, "") : `should be ${words}`;
}

const UNION_TAGS = new Set(["sandbox", "saved", "SandboxTargetSpec", "SavedTargetSpec"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** Field errors from a FastAPI error body; messages without a location get the field "". */
export function readFieldErrors(body: unknown): FieldError[] {
  if (!isRecord(body) || !Array.isArray(body.detail)) return [];
  const errors: FieldError[] = [];
  for (const item of body.detail as unknown[]) {
    if (!isRecord(item)) continue;
    const loc = Array.isArray(item.loc) ? item.loc.map(String) : [];
    const path = loc.filter((part, index) => !(index === 0 && ["body", "query", "path"].includes(part)));
    const field = path.filter((part) => !UNION_TAGS.has(part)).join(".");
    const message = typeof item.msg === "string" ? plainMessage(item.msg) : "is not valid";
    errors.push({ field, message });
  }
  return errors;
}

/** Plain words for a status the API gives without a body we can read. */
function statusText(status: number): string {
  if (status === 0) return "The restorescope server did not answer. Is it running?";
  if (status === 404) return "Not found.";
  if (status === 413) return "The file is too large for this server.";
  if (status >= 500) return `The server failed (HTTP ${String(status)}); its log says why.`;
  return `The request failed (HTTP ${String(status)}).`;
}

export class ApiError extends Error {
  readonly status: number;
  readonly fields: FieldError[];

  constructor(status: number, message: string, fields: FieldError[] = []) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.fields = fields;
  }

  static from(status: number, body: unknown): ApiError {
    const fields = readFieldErrors(body);
    if (fields.length > 0) {
      // The last part of the field's path is the name on the form ("innodb_buffer_pool_size").
      const summary = fields.map((e) => (e.field ? `${e.field.split(".").pop() ?? e.field}: ${e.message}` : e.message)).join("; ");
      return new ApiError(status, summary, fields);
    }
    if (isRecord(body) && typeof body.detail === "string") return new ApiError(status, body.detail);
    return new ApiError(status, statusText(status));
  }

  /** The message for one field (or any field below it), if the API named it. */
  fieldMessage(field: string): string | undefined {
    return this.fields.find((e) => e.field === field || e.field.startsWith(`${field}.`))?.message;
  }
}

/** Any thrown value as one line for an error box. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof TypeError) return "The restorescope server did not answer. Is it running?";
  if (error instanceof Error) return error.message;
  return String(error);
}
