// The operator's administration routes: POST /api/admin/backup streams a consistent backup of the running node's
// store (one LevelDB snapshot, store/backup.ts) and of its data dir's secrets. `svc-node backup` calls it when the
// node holds the data dir's store.
import { backupStream, type DataDirFile, type RawDb } from '../../store/backup.js';
import { operatorOnly } from '../auth.js';
import type { RouteGroup } from '../route-group.js';
import { describes } from '../validate.js';

export const BACKUP_PATH = '/api/admin/backup';

export interface AdminRouteServices {
  /** The node's open store, read as raw bytes. */
  db: RawDb;
  /** The data dir's secret files, read when a backup starts. */
  files: () => Promise<DataDirFile[]>;
  nodeVersion: string;
  storageFormat: number;
  isOperator: (token: string) => boolean;
}

export function adminRoutes(s: AdminRouteServices): RouteGroup {
  return {
    name: 'admin',
    register: (router, kit) => {
      router.post(
        BACKUP_PATH,
        operatorOnly(s.isOperator),
        describes({ contentType: 'application/gzip', summary: "a backup of the node's store and secrets (gzip NDJSON, docs/operating.md)" }),
        async (ctx) => {
          const files = await s.files();
          const createdMs = kit.time.nowMs();
          // The snapshot is taken here: what is written after this line is not in the backup.
          const stream = backupStream(
            s.db,
            { node_version: s.nodeVersion, node_id: kit.nodeId(), storage_format: s.storageFormat, created_unix_ms: createdMs },
            files,
          );
          ctx.set('content-disposition', `attachment; filename="svc-node-${kit.nodeId()}-${createdMs}.backup.gz"`);
          ctx.set('cache-control', 'no-store');
          ctx.type = 'application/gzip';
          ctx.body = stream;
        },
      );
    },
  };
}
