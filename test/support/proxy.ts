import net from "node:net";

/**
 * A TCP relay between the service and PostgreSQL that a test can cut and restore, to stage a database
 * outage without touching the shared server.
 */
export interface OutageProxy {
  /** The database URL rewritten to go through the relay. */
  url: string;
  /** Drops every relayed connection and stops listening (connections are refused) until restored. */
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startOutageProxy(databaseUrl: string): Promise<OutageProxy> {
  const target = new URL(databaseUrl);
  const upstreamPort = Number(target.port || 5432);
  const links = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, target.hostname);
    for (const s of [client, upstream]) {
      links.add(s);
      s.once("close", () => links.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const stop = () => {
    for (const s of links) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    cut: stop,
    restore: () => listen(port),
    close: async () => {
      if (server.listening) await stop();
    },
  };
}
