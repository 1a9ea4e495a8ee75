import { createServer } from 'node:net';

/**
 * Asks the kernel for a free TCP port on 127.0.0.1.
 *
 * The port is released before it is returned, so another process can take it in between; callers
 * that bind it later (redis-server) retry with a new port when the bind fails.
 */
export function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`getFreePort: unexpected listen address ${String(address)}`));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
