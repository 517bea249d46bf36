import { createContextKey } from "@connectrpc/connect";

/**
 * How a door that sends the answer after the implementation has returned it (the RPC doors: connect serialises the
 * message, the door writes it) tells the service when that is done. The request keeps its admission slots until
 * then (see `admitted`): an answer written but not yet sent holds its whole serialised message, and without this
 * such answers piled up beyond the bound admission keeps whenever clients read more slowly than pages are made.
 */
export interface AnswerDelivery {
  /** Settles once the answer has been handed to the transport, or never will be (the call failed, the client left). */
  readonly sent: Promise<void>;
  /**
   * Settles with `sent`: true when the transport has taken the whole answer (the response finished), so that nothing
   * reads the bytes it was written from any more; false when it never will (the call failed, the client left, the
   * answer was cut), and a write may still hold them.
   */
  readonly written: Promise<boolean>;
  /** The request's deadline passed with its answer unsent: stop sending it, and free what it holds. */
  abandon(): void;
}

export const answerDelivery = createContextKey<AnswerDelivery | undefined>(undefined, { description: "tonquery answer delivery" });
