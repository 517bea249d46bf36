import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { TraceAction } from "../../gen/tonquery/v1/trace_pb.ts";
import { type Names, ton, words } from "./format.ts";

// A trace's classified actions as one sentence each: "jetton transfer 9 USD₮ from A to B". The common types have
// sentences of their own, written from the fields each type's details carry (src/actions/details.ts); any other
// type is its name and the accounts it involves. Addresses stay addresses here: the page links each to its account
// view, and the tests write them with the same names.

/** Text, and addresses to be shown by name. */
export type Phrase = Array<string | { address: string }>;

type Details = Record<string, JsonValue | undefined>;

function text(details: Details, key: string): string | undefined {
  const value = details[key];
  return typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined;
}

function object(details: Details, key: string): Details {
  const value = details[key];
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : {};
}

/** Builds a phrase from a template's pieces, leaving out a clause whose address or value is missing. */
class PhraseBuilder {
  readonly parts: Phrase = [];

  say(...pieces: Array<string | undefined>): this {
    for (const piece of pieces) if (piece !== undefined && piece !== "") this.parts.push(piece);
    return this;
  }

  /** " from <A>", when the address is known. */
  address(lead: string, address: string | undefined): this {
    if (address === undefined) return this;
    if (lead !== "") this.parts.push(lead);
    this.parts.push({ address });
    return this;
  }

  /** The parts with a space between two of them (none before a comma), neighbouring texts merged. */
  phrase(): Phrase {
    const joined: Phrase = [];
    for (const part of this.parts) {
      const gap = joined.length === 0 || part === "," ? "" : " ";
      const last = joined[joined.length - 1];
      if (typeof last === "string") joined[joined.length - 1] = last + gap;
      else if (gap !== "") joined.push(gap);
      if (typeof part === "string" && typeof joined[joined.length - 1] === "string") joined[joined.length - 1] += part;
      else joined.push(part);
    }
    return joined.filter((part) => part !== "");
  }
}

const rawAddress = /^-?\d+:[0-9A-F]{64}$/;

/** The distinct addresses among an action's detail values, in their order. */
function detailAddresses(details: Details): string[] {
  const found = new Set<string>();
  for (const value of Object.values(details)) if (typeof value === "string" && rawAddress.test(value)) found.add(value);
  return [...found];
}

function quoted(comment: string | undefined): string | undefined {
  if (comment === undefined) return undefined;
  return `“${comment.length > 60 ? `${comment.slice(0, 60)}…` : comment}”`;
}

/** The sentence of one action. */
export function actionPhrase(action: TraceAction, names: Names): Phrase {
  const d: Details = (action.details ?? {}) as JsonObject;
  const say = new PhraseBuilder();
  const amount = (value: string | undefined, asset: string | undefined) => names.amount(value, asset);
  switch (action.type) {
    case "ton_transfer":
      say.say("TON transfer", ton(text(d, "value") ?? "0"));
      say.address("from", text(d, "source")).address("to", text(d, "destination"));
      if (d.encrypted === true) say.say("with an encrypted comment");
      else say.say(quoted(text(d, "comment")));
      break;
    case "extra_currency_transfer":
      say.say("extra currency transfer").address("from", text(d, "source")).address("to", text(d, "destination"));
      break;
    case "jetton_transfer":
      say.say("jetton transfer", amount(text(d, "amount"), text(d, "asset")));
      say.address("from", text(d, "sender")).address("to", text(d, "receiver"));
      say.say(d.is_encrypted_comment === true ? "with an encrypted comment" : quoted(text(d, "comment")));
      break;
    case "jetton_swap": {
      const incoming = object(d, "dex_incoming_transfer");
      const outgoing = object(d, "dex_outgoing_transfer");
      say.say("swap", amount(text(incoming, "amount"), text(d, "asset_in")), "for", amount(text(outgoing, "amount"), text(d, "asset_out")));
      if (text(d, "dex") !== undefined) say.say("on", text(d, "dex"));
      say.address("by", text(d, "sender"));
      break;
    }
    case "jetton_mint":
      say.say("jetton mint", amount(text(d, "amount"), text(d, "asset"))).address("to", text(d, "receiver"));
      break;
    case "jetton_burn":
      say.say("jetton burn", amount(text(d, "amount"), text(d, "asset"))).address("by", text(d, "owner"));
      break;
    case "nft_transfer":
    case "nft_purchase":
      say.say(action.type === "nft_purchase" || d.is_purchase === true ? "NFT purchase of" : "NFT transfer of").address("", text(d, "nft_item"));
      if (text(d, "price") !== undefined) say.say("for", ton(text(d, "price")));
      say.address("from", text(d, "old_owner")).address("to", text(d, "new_owner"));
      say.say(quoted(text(d, "comment")));
      break;
    case "nft_mint":
      say.say("NFT mint").address("", text(d, "nft_item")).address("in collection", text(d, "nft_collection")).address("for", text(d, "owner"));
      break;
    case "call_contract":
    case "contract_deploy":
      say.say(action.type === "call_contract" ? "contract call" : "contract deploy", text(d, "opcode") === undefined ? undefined : `(${text(d, "opcode")})`);
      say.address("from", text(d, "source")).address("to", text(d, "destination"));
      if (text(d, "value") !== undefined) say.say("with", ton(text(d, "value")));
      break;
    case "stake_deposit":
      say.say("stake", ton(text(d, "amount") ?? "0")).address("by", text(d, "stake_holder")).address("in pool", text(d, "pool"));
      if (text(d, "provider") !== undefined) say.say(`(${words(text(d, "provider") as string)})`);
      if (text(d, "tokens_minted") !== undefined) say.say("for", amount(text(d, "tokens_minted"), text(d, "asset")));
      break;
    case "stake_withdrawal":
      say.say("unstake", ton(text(d, "amount") ?? "0")).address("to", text(d, "stake_holder")).address("from pool", text(d, "pool"));
      if (text(d, "tokens_burnt") !== undefined) say.say("burning", amount(text(d, "tokens_burnt"), text(d, "asset")));
      break;
    case "stake_withdrawal_request":
      say.say("unstake request").address("by", text(d, "stake_holder")).address("to pool", text(d, "pool"));
      if (text(d, "tokens_burnt") !== undefined) say.say("burning", amount(text(d, "tokens_burnt"), text(d, "asset")));
      break;
    case "dex_deposit_liquidity":
      say.say("add liquidity", amount(text(d, "amount_1"), text(d, "asset_1")), "and", amount(text(d, "amount_2"), text(d, "asset_2")));
      say.address("to pool", text(d, "pool"));
      if (text(d, "dex") !== undefined) say.say("on", text(d, "dex"));
      say.address("by", text(d, "source"));
      break;
    case "dex_withdraw_liquidity":
      say.say("remove liquidity", amount(text(d, "amount_1"), text(d, "asset_1")), "and", amount(text(d, "amount_2"), text(d, "asset_2")));
      say.address("from pool", text(d, "pool"));
      if (text(d, "dex") !== undefined) say.say("on", text(d, "dex"));
      say.address("by", text(d, "source"));
      break;
    case "change_dns":
      say.say("change DNS record").address("of", text(d, "asset")).address("by", text(d, "source"));
      break;
    case "delete_dns":
      say.say("delete DNS record").address("of", text(d, "asset")).address("by", text(d, "source"));
      break;
    case "renew_dns":
      say.say("renew domain").address("", text(d, "asset")).address("by", text(d, "source"));
      break;
    case "auction_bid":
      say.say("auction bid", ton(text(d, "amount") ?? "0")).address("on", text(d, "nft_item")).address("by", text(d, "bidder"));
      break;
    case "tick_tock":
      say.say("tick-tock");
      break;
    default: {
      // Any other type: its name, its amount when it has one, then the accounts it involves: those the API lists for
      // the action, else the addresses its details name.
      say.say(words(action.type));
      if (text(d, "amount") !== undefined) say.say(amount(text(d, "amount"), text(d, "asset")));
      const accounts = action.accounts.length > 0 ? action.accounts : detailAddresses(d);
      accounts.forEach((account, i) => {
        say.say(i === 0 ? "—" : ",");
        say.address("", account);
      });
    }
  }
  if (!action.success) say.say("(failed)");
  return say.phrase();
}

/** A phrase as plain text, addresses by their labels. */
export function phraseText(phrase: Phrase, names: Names): string {
  return phrase.map((part) => (typeof part === "string" ? part : names.label(part.address))).join("");
}
