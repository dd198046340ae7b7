// Where a node's LevelDB store lives in its data dir: the node opens it there, a backup copies it, and a client
// command knows a node's data dir by it.
export const STORE_DIR = 'db';
