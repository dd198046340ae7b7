// The one error type that carries a part-7 code. Pure: the HTTP layer renders it, services and solvers throw it.

export class ServiceError extends Error {
  readonly status: number;
  readonly code: string;
  /** The code's own extra fields of part 7 (e.g. suggestion, available_similar, limit). */
  readonly extra: Record<string, unknown>;
  readonly details: unknown;
  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}, details?: unknown) {
    super(message);
    this.name = 'ServiceError';
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.details = details;
  }
}
