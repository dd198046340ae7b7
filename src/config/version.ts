// This release of svc-node: what `svc-node --version` prints and what a backup's manifest names.
export const NODE_VERSION = '0.1.0';
