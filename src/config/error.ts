// A bad configuration: a one-line reason, and `svc-node start` exits with code 2.
export class ConfigError extends Error {
  override name = 'ConfigError';
}
