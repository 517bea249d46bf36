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
   * accepted but never reach the database.
   *
   * How it ends is `onReturn`'s choice. "drop" (the default): restoring drops the held connections, as a real
   * network's timeouts eventually would, and relays again. "resume": a path that only stalled, as a proxy in front of
   * PostgreSQL (HAProxy, say) does while its backend is unreachable: the bytes sent meanwhile wait, and on restore
   * every held connection comes alive, those accepted during the black hole connected to the database only then,
   * with whatever their clients sent meanwhile. A relay that was refusing accepts again.
   */
  blackhole(options?: { onReturn?: "drop" | "resume" }): Promise<void>;
  /**
   * The path resets every connection it relays (an RST, as a proxy whose backend went away sends) and refuses new
   * ones until restored. Connections accepted during a black hole and not yet connected to the database are not
   * relayed yet: they stay queued and come alive on restore, as a proxy's queue holds its clients.
   */
  resetAndRefuse(): Promise<void>;
  restore(): Promise<void>;
  /** Connections accepted and waiting for the database (during a black hole that resumes). */
  readonly queued: number;
  close(): Promise<void>;
}

/** One client connection and, once it is relayed, its connection to the database. */
interface Link {
  client: net.Socket;
  upstream: net.Socket | undefined;
}

export async function startOutageProxy(databaseUrl: string): Promise<OutageProxy> {
  const target = new URL(databaseUrl);
  const upstreamPort = Number(target.port || 5432);
  const links = new Set<Link>();
  let blackhole: "drop" | "resume" | undefined;

  const sockets = (link: Link) => (link.upstream === undefined ? [link.client] : [link.client, link.upstream]);
  const destroy = (link: Link) => {
    for (const s of sockets(link)) s.destroy();
    links.delete(link);
  };

  /** Bytes cross only while the path is not black-holed; pausing (rather than dropping) keeps them for a resume. */
  const pipe = (from: net.Socket, to: net.Socket) => {
    from.on("data", (chunk: Buffer) => {
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => {
          if (blackhole === undefined) from.resume();
        });
      }
    });
  };

  const relay = (link: Link) => {
    const upstream = net.connect(upstreamPort, target.hostname);
    link.upstream = upstream;
    for (const s of [link.client, upstream]) {
      s.on("error", () => destroy(link));
      s.once("close", () => destroy(link));
    }
    pipe(link.client, upstream);
    pipe(upstream, link.client);
    link.client.resume();
  };

  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    const link: Link = { client, upstream: undefined };
    links.add(link);
    if (blackhole === undefined) {
      relay(link);
      return;
    }
    // Accepted but not relayed: nothing is read from the client, so what it sends waits in the socket's buffers.
    client.on("error", () => destroy(link));
    client.once("close", () => destroy(link));
  });
  const listen = (port: number) => new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  /**
   * Closes the listening socket at once, so that new connections are refused; close's callback would wait for every
   * connection to end, queued ones included.
   */
  const refuse = () => {
    if (server.listening) server.close();
  };
  const dropAll = () => {
    for (const link of [...links]) destroy(link);
  };
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    cut: async () => {
      dropAll();
      refuse();
    },
    blackhole: async (options = {}) => {
      blackhole = options.onReturn ?? "drop";
      for (const link of links) for (const s of sockets(link)) s.pause();
      if (!server.listening) await listen(port);
    },
    resetAndRefuse: async () => {
      for (const link of [...links]) {
        if (link.upstream === undefined) continue;
        link.client.resetAndDestroy();
        link.upstream.resetAndDestroy();
        links.delete(link);
      }
      refuse();
    },
    restore: async () => {
      const returning = blackhole;
      blackhole = undefined;
      if (returning === "drop") dropAll();
      if (returning === "resume") {
        for (const link of [...links]) {
          if (link.client.destroyed) continue;
          if (link.upstream === undefined) relay(link);
          else for (const s of sockets(link)) s.resume();
        }
      }
      if (!server.listening) await listen(port);
    },
    get queued() {
      return [...links].filter((link) => link.upstream === undefined && !link.client.destroyed).length;
    },
    close: async () => {
      dropAll();
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
