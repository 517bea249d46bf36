import net from "node:net";

/**
 * A TCP relay between the service and PostgreSQL that a test can cut, black-hole and restore, to stage a
 * database outage without touching the shared server.
 */
export interface OutageProxy {
  /** The database URL rewritten to go through the relay. */
  url: string;
  /** Drops every relayed connection and stops listening (connections are refused) until restored. */
  cut(): Promise<void>;
  /**
   * A host that stops answering: relayed connections stay open but nothing more crosses them, and new ones are
   * accepted but never reach the database. Restoring drops the held connections, as a real network's timeouts
   * eventually would, and relays again.
   */
  blackhole(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startOutageProxy(databaseUrl: string): Promise<OutageProxy> {
  const target = new URL(databaseUrl);
  const upstreamPort = Number(target.port || 5432);
  const links = new Set<net.Socket>();
  let blackholed = false;
  const server = net.createServer((client) => {
    links.add(client);
    client.once("close", () => links.delete(client));
    client.on("error", () => client.destroy());
    if (blackholed) return;
    const upstream = net.connect(upstreamPort, target.hostname);
    links.add(upstream);
    upstream.once("close", () => links.delete(upstream));
    for (const s of [client, upstream]) {
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
      s.once("close", () => (s === client ? upstream : client).destroy());
    }
    const relay = (from: net.Socket, to: net.Socket) =>
      from.on("data", (chunk) => {
        if (!blackholed) to.write(chunk);
      });
    relay(client, upstream);
    relay(upstream, client);
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const dropAll = () => {
    for (const s of links) s.destroy();
  };
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    cut: () => {
      dropAll();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
    blackhole: () => {
      blackholed = true;
    },
    restore: async () => {
      if (blackholed) {
        blackholed = false;
        dropAll();
      }
      if (!server.listening) await listen(port);
    },
    close: async () => {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
