import { AsyncLocalStorage } from "node:async_hooks";
import type { HandlerContext } from "@connectrpc/connect";
import type { TonQueryServiceImpl } from "../service/service.ts";
import type { HttpHandler, HttpResponse } from "../server/single-port.ts";

// The service sets response headers on the handler context (X-Index-Seqno): connect's doors send them, the REST door
// builds its context and writes its response itself (router.ts) and does not. These two wrappers carry them over:
// the REST handler runs with its response in an AsyncLocalStorage, and the service the REST door calls copies the
// context's response headers onto that response once the call has answered, before the router writes the head.
// AsyncLocalStorage rather than passing the response along: the router's calls in between stay as they are, and
// whatever it awaits before calling the service, the response found is the request's own.

const exchange = new AsyncLocalStorage<HttpResponse>();

/** Runs the REST handler with its response where {@link forwardingResponseHeaders} finds it. */
export function withResponseHeaders(handler: HttpHandler): HttpHandler {
  return (req, res) => exchange.run(res, () => handler(req, res));
}

/** The service, for the REST door: each answer's context response headers go onto the HTTP response. */
export function forwardingResponseHeaders(service: TonQueryServiceImpl): TonQueryServiceImpl {
  const forward = <T>(context: HandlerContext, answer: Promise<T>): Promise<T> =>
    answer.then((value) => {
      const res = exchange.getStore();
      if (res !== undefined && !res.headersSent) context.responseHeader.forEach((header, name) => res.setHeader(name, header));
      return value;
    });
  return {
    ...service,
    getMasterchainInfo: (request, context, finish) => forward(context, service.getMasterchainInfo(request, context, finish)),
    getAdjacentTransactions: (request, context, finish) => forward(context, service.getAdjacentTransactions(request, context, finish)),
    getTraces: (request, context, finish) => forward(context, service.getTraces(request, context, finish)),
    getBlockTransactionsExt: (request, context, finish) => forward(context, service.getBlockTransactionsExt(request, context, finish)),
    getTracesInto: (request, context, newSink, answerSent) => forward(context, service.getTracesInto(request, context, newSink, answerSent)),
    loadAdjacentTransactions: (request, context, finish) => forward(context, service.loadAdjacentTransactions(request, context, finish)),
    loadBlockTransactionsExt: (request, context, finish) => forward(context, service.loadBlockTransactionsExt(request, context, finish)),
  };
}
