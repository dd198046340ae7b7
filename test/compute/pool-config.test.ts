// The solver pool's settings: solverThreads (a number, 0 = inline, or auto = every core but one) and the per-caller
// cap on waiting runs, from the config file's defaults, the environment and overrides.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { solverPoolSize } from '../../src/compute/executor.js';

describe('solverThreads', () => {
  it('auto is every core but one, at least one; a number is kept as given', () => {
    expect(solverPoolSize('auto', 1)).toBe(1);
    expect(solverPoolSize('auto', 2)).toBe(1);
    expect(solverPoolSize('auto', 8)).toBe(7);
    expect(solverPoolSize(3, 8)).toBe(3);
    expect(solverPoolSize(0, 8)).toBe(0);
  });

  it('defaults to auto; SVC_SOLVER_THREADS takes auto or an integer', () => {
    expect(loadConfig({ env: {} }).solverThreads).toBe('auto');
    expect(loadConfig({ env: { SVC_SOLVER_THREADS: 'auto' } }).solverThreads).toBe('auto');
    expect(loadConfig({ env: { SVC_SOLVER_THREADS: 'AUTO' } }).solverThreads).toBe('auto');
    expect(loadConfig({ env: { SVC_SOLVER_THREADS: '3' } }).solverThreads).toBe(3);
    expect(loadConfig({ env: { SVC_SOLVER_THREADS: '0' } }).solverThreads).toBe(0);
    expect(() => loadConfig({ env: { SVC_SOLVER_THREADS: 'many' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { SVC_SOLVER_THREADS: '-1' } })).toThrow(/solverThreads/);
    expect(() => loadConfig({ env: {}, overrides: { solverThreads: 'half' } })).toThrow(/solverThreads/);
  });
});

describe('limits.maxQueuedRunsPerIdentity', () => {
  it('defaults to 4, is set by SVC_MAX_QUEUED_RUNS_PER_IDENTITY, and is at least 1', () => {
    expect(loadConfig({ env: {} }).limits.maxQueuedRunsPerIdentity).toBe(4);
    expect(loadConfig({ env: { SVC_MAX_QUEUED_RUNS_PER_IDENTITY: '9' } }).limits.maxQueuedRunsPerIdentity).toBe(9);
    expect(() => loadConfig({ env: { SVC_MAX_QUEUED_RUNS_PER_IDENTITY: '0' } })).toThrow(/maxQueuedRunsPerIdentity/);
    expect(() => loadConfig({ env: {}, overrides: { limits: { maxQueuedRunsPerIdentity: 2.5 } } })).toThrow(/maxQueuedRunsPerIdentity/);
  });
});

describe('limits.maxQueuedRuns', () => {
  it('defaults to 256, is set by SVC_MAX_QUEUED_RUNS, and is at least 1', () => {
    expect(loadConfig({ env: {} }).limits.maxQueuedRuns).toBe(256);
    expect(loadConfig({ env: { SVC_MAX_QUEUED_RUNS: '9' } }).limits.maxQueuedRuns).toBe(9);
    expect(() => loadConfig({ env: { SVC_MAX_QUEUED_RUNS: '0' } })).toThrow(/maxQueuedRuns/);
  });
});
