import { beginCell } from "@ton/core";
import { serializeBocBase64 } from "../../src/ton/boc.ts";
import { getMethodId } from "../../src/ton/interfaces.ts";
import { type BuiltCell, CellBuilder, emptyCell } from "./cell.ts";
import { Hasher, HashKind, Random, Zipf } from "./random.ts";
import { bool, composite, copyText, NULL, num, plainArray, type RowSink } from "./tables.ts";

// The synthetic chain: a deterministic simulation of workchain 0 (split into shards) and the masterchain, round
// by round (one masterchain block and one block per shard each round), in which accounts start traces
// (wallet transfers, jetton transfers, DEX swaps, contract calls, deploys, exchange payouts) whose messages are
// delivered in the same or a later block. Every transaction, message, state, trace and action is written as the
// worker (and the classifier) would write it, straight into COPY lines; only traces still in flight and the
// account table are kept in memory.

// ---- Realism knobs: everything that shapes the data is here. --------------------------------------------------

export const knobs = {
  /** Accounts existing before the first block, per requested transaction (more are created on the way). */
  baseAccountsPerTransaction: 1 / 26,
  /** Shares of the base accounts: wallets, generic contracts; jetton wallets take the rest. */
  walletShare: 0.6,
  contractShare: 0.05,
  /** Zipf exponents: how concentrated activity is (rank r drawn with weight 1/(r+1)^s). */
  walletZipf: 1.1,
  /** Fixed pick shares of the busiest wallets (an exchange, a custodial service, a bot), ahead of the power law. */
  hotWallets: [0.17, 0.15, 0.14],
  jettonWalletZipf: 1.05,
  contractZipf: 1.1,
  jettonZipf: 1.3,
  poolZipf: 1.2,
  exchangeZipf: 1.5,
  /** Jetton masters (the first one is USDT-like: 6 decimals, governed wallet code). */
  jettons: 24,
  stonfiPools: 16,
  exchanges: 3,
  /** Wallet code mix: v4r2, v5r1, v3r2. */
  walletVersions: [0.55, 0.3, 0.15],
  /** Workchain 0 is split into 2^shardPrefixBits shards. */
  shardPrefixBits: 2,
  /** Mean transactions a shard block takes (so masterchain blocks ≈ N / (shards × this)). */
  txPerShardBlock: 25,
  /** Seconds between masterchain blocks: uniform in [min, max]. */
  roundSeconds: [2, 4] as const,
  /** A message to an account of the same shard is processed in the same block with this probability. */
  sameBlockDelivery: 0.55,
  /** Tick-tock transactions (elector, config) in each masterchain block, each its own in-less trace. */
  tickTocksPerMcBlock: 2,
  /** Trace templates and their weights. */
  templates: {
    tonTransfer: 0.4,
    walletOnly: 0.04,
    jettonTransfer: 0.22,
    stonfiSwap: 0.05,
    dedustSwap: 0.04,
    callContract: 0.14,
    contractDeploy: 0.03,
    exchangePayout: 0.025,
  },
  /** Batch size of a plain wallet transfer when it is a batch (Pareto tail), and how often it is one. */
  walletBatchShare: 0.08,
  walletBatchAlpha: 1.3,
  walletBatchMax: 48,
  /** Payouts per exchange batch (Pareto, capped: a highload wallet sends at most 254 messages per transaction). */
  payoutAlpha: 1.05,
  payoutMax: 250,
  /** Traces over the API's 4000-transaction bound: one per this many transactions, of this size. */
  giantTraceEvery: 650_000,
  giantTraceSize: [4001, 6500] as const,
  /** Traces left pending (a message sent but not yet delivered). */
  pendingShare: 0.02,
  /**
   * Complete traces are classified (state ok, with their actions). A live index leaves the traces of its last
   * block or two unclassified while the classifier catches up; a positive value here leaves the traces that
   * finish after the last this-many transactions started unclassified. 0 by default: the busiest accounts take
   * part in most of the last traces, so their first page of traces would come without actions.
   */
  unclassifiedTail: 0,
  /** Transfers with a text comment. */
  commentShare: 0.33,
  /** Transfers to a brand-new wallet (credited non-bounceable: the account appears uninit). */
  newWalletShare: 0.02,
  /** Bounceable transfers to a nonexistent account (compute skipped, bounced back). */
  bounceToNowhereShare: 0.004,
  /** Jetton transfers that fail in the sender's jetton wallet (aborted, bounced back). */
  jettonFailureShare: 0.01,
  /** Jetton transfers whose receiver has no jetton wallet yet (deployed by the transfer). */
  newJettonWalletShare: 0.05,
  /** Wallets that keep query_id 0 in their jetton transfers. */
  zeroQueryIdShare: 0.2,
  /** External messages whose TEP-467 normalised hash differs from their hash (stored in msg_hash_norm). */
  normalizedHashShare: 0.85,
  /** Wallets with a .ton domain (dns_entries). */
  domainShare: 0.01,
  /** First indexed masterchain block's time: 2024-01-01 plus up to this many seconds (seed-chosen). */
  startUtime: 1_704_067_200,
  startSpread: 60 * 60 * 24 * 365,
};

// ---- Fixed data ------------------------------------------------------------------------------------------------

const zeroHash = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
/** Representation hash of account_none$0, the state of an account that does not exist. */
const nonexistStateHash = new CellBuilder().bit(false).finish().hash;
const masterShard = "-9223372036854775808";
/** Basechain flat gas price (nanotons): a message worth less cannot start the compute phase. */
const flatGasPrice = 40_000;
const globalId = -239;

const Op = {
  jettonTransfer: 0x0f8a7ea5,
  internalTransfer: 0x178d4519,
  transferNotification: 0x7362d09c,
  excesses: 0xd53276db,
  comment: 0,
  bounced: 0xffffffff,
  walletV5Signed: 0x7369676e,
  stonfiSwap: 0x6664de2a,
  stonfiPayTo: 0x657b54f5,
  dedustSwapExternal: 0x61ee542d,
  dedustPayoutFromPool: 0xad4eb6f5,
  dedustPayout: 0x474f86cf,
  dedustSwapEvent: 0x9c610de3,
  highloadContinue: 0xae42e5a4,
} as const;

/** Opcodes of contract calls, as seen in the recorded traces. */
const contractOpcodes = [
  0x00000001, 0x6578746e, 0x05138d91, 0x5fcc3d14, 0x595f07bc, 0x76dbd306, 0x01f3835d, 0xd3a25890, 0x87d36990,
  0x7bdd97de, 0x319b0cdc, 0x9b3aa3fa, 0xf04ec526, 0x54240fe5, 0x1674b0a0, 0x50c6a654, 0x37c096df, 0x3ebe5431,
];

const sharedComments = [
  "deposit", "Deposit", "withdraw", "Thanks!", "thank you", "gm", "for coffee", "rent", "refund", "payment",
  "Пополнение", "gift 🎁", "salary", "invoice paid", "tip", "test", "airdrop", "🙏", "donation", "ok",
];
const commentWords = ["order", "payment for", "invoice", "ref", "memo", "Telegram Stars", "subscription", "game", "bet", "prize"];

const Kind = {
  wallet: 0,
  highload: 1,
  jettonWallet: 2,
  jettonMaster: 3,
  stonfiRouter: 4,
  stonfiPool: 5,
  dedustVault: 6,
  dedustPool: 7,
  contract: 8,
  system: 9,
} as const;

const Status = { nonexist: 0, uninit: 1, active: 2, frozen: 3 } as const;
const statusNames = ["nonexist", "uninit", "active", "frozen"] as const;

interface CodeInfo {
  name: string;
  hash: string;
  methods: readonly string[];
}

const walletMethods = ["seqno", "get_public_key", "get_subwallet_id"];

/** Code of each account kind; index = code id. Real hashes where toncenter recognises the code by hash. */
function codeTable(hasher: Hasher): CodeInfo[] {
  const synthetic = (i: number) => hasher.base64(HashKind.codeHash, i);
  return [
    { name: "wallet_v4r2", hash: "/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=", methods: [...walletMethods, "get_plugin_list", "is_plugin_installed"] },
    { name: "wallet_v5r1", hash: "IINLe3KxEhR+Gy+0V7hOdNGjDwT3N9T2KmaOlVLSty8=", methods: [...walletMethods, "is_signature_allowed", "get_extensions"] },
    { name: "wallet_v3r2", hash: "hNr6RJ+Ypph3ibojI1gHK8D3bcRSQAKl0JGLmnXS1Zk=", methods: walletMethods },
    { name: "highload_wallet_v3", hash: synthetic(1), methods: ["get_public_key", "get_subwallet_id", "get_timeout", "get_last_clean_time", "processed?"] },
    { name: "jetton_wallet_governed", hash: "iUaPAseOVwgC45l5yFFvw43wfqdqSDV+BTbyuns+43s=", methods: ["get_wallet_data", "get_status"] },
    { name: "jetton_wallet_v2", hash: "jSjqQht36AX+pSrPM1KWSZ8Drsjp/SHdtfJWSqZcSN4=", methods: ["get_wallet_data"] },
    { name: "jetton_wallet", hash: synthetic(2), methods: ["get_wallet_data"] },
    { name: "jetton_master", hash: synthetic(3), methods: ["get_jetton_data", "get_wallet_address"] },
    { name: "stonfi_router_v2", hash: synthetic(4), methods: ["get_vault_address", "get_pool_address", "get_router_data", "get_router_version"] },
    { name: "stonfi_pool_v2", hash: synthetic(5), methods: ["get_pool_data", "get_pool_type", "get_lp_account_address", "get_jetton_data", "get_wallet_address"] },
    { name: "dedust_vault", hash: synthetic(6), methods: ["get_asset"] },
    { name: "dedust_pool", hash: synthetic(7), methods: ["get_reserves", "get_assets", "get_jetton_data", "is_stable", "get_trade_fee", "estimate_swap_out"] },
    { name: "elector", hash: synthetic(8), methods: ["active_election_id", "participates_in", "participant_list"] },
    { name: "config", hash: synthetic(9), methods: ["seqno", "get_public_key"] },
    // Generic contracts: some with get-methods no interface matches, some without contract_methods at all.
    ...Array.from({ length: 8 }, (_, i) => ({
      name: `contract_${i}`,
      hash: synthetic(100 + i),
      methods: i < 5 ? [`get_state_${i}`, "get_owner", `get_data_v${i}`] : [],
    })),
  ];
}

/** Code hashes of the wallets toncenter recognises by hash (v4r2, v5r1, v3r2): what follow mode takes over as wallets. */
export const walletCodeHashes: readonly string[] = codeTable(new Hasher(0)).slice(0, 3).map((code) => code.hash);

const Code = {
  walletV4: 0,
  walletV5: 1,
  walletV3: 2,
  highload: 3,
  jettonWalletGoverned: 4,
  jettonWalletV2: 5,
  jettonWallet: 6,
  jettonMaster: 7,
  stonfiRouter: 8,
  stonfiPool: 9,
  dedustVault: 10,
  dedustPool: 11,
  elector: 12,
  config: 13,
  contract: 14,
  contracts: 8,
} as const;

interface JettonInfo {
  master: number;
  name: string;
  symbol: string;
  decimals: number;
  walletCode: number;
  /** Jetton wallets of this jetton owned by plain wallets, in creation order (Zipf rank order). */
  wallets: number[];
  zipf: Zipf | undefined;
  zipfSize: number;
}

// ---- Accounts --------------------------------------------------------------------------------------------------

/** Per-account state in typed arrays, grown as accounts are created. */
class Accounts {
  count = 0;
  capacity = 0;
  address = Buffer.alloc(0);
  raw: string[] = [];
  workchain = new Int8Array(0);
  shard = new Uint8Array(0);
  kind = new Uint8Array(0);
  code = new Uint8Array(0);
  status = new Uint8Array(0);
  balance = new Float64Array(0);
  /** The lowest lt the account's next transaction may have. */
  nextLt = new Float64Array(0);
  lastLt = new Float64Array(0);
  /** Counter of the last transaction, -1 before the first one of the dataset. */
  lastTx = new Float64Array(0);
  /** Counter of the current state, -1 for the genesis state (or nonexist). */
  state = new Float64Array(0);
  data = new Float64Array(0);
  lastNow = new Int32Array(0);
  txs = new Int32Array(0);
  seqno = new Int32Array(0);
  /** Jetton wallets: their jetton (index) and owner; -1 otherwise. */
  jetton = new Int16Array(0);
  owner = new Int32Array(0);
  jettonBalance = new Float64Array(0);
  /** Jetton wallets and deployed contracts: has the StateInit's BOC been written to message_contents. */
  initWritten = new Uint8Array(0);
  /** Accounts that use query_id 0. */
  zeroQueryId = new Uint8Array(0);
  /** Genesis state written to account_states. */
  genesisWritten = new Uint8Array(0);
  /**
   * Accounts taken over from a database the chain continues (follow mode): their last transaction, state and data
   * hashes as the database has them, which stand for the derived ones until the account's first new transaction.
   */
  readonly known = new Map<number, KnownAccount>();

  private grow(): void {
    const capacity = Math.max(1024, this.capacity * 2);
    const address = Buffer.alloc(capacity * 32);
    this.address.copy(address);
    this.address = address;
    const resize = <T extends Int8Array | Uint8Array | Int16Array | Int32Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old as never);
      return next;
    };
    this.workchain = resize(this.workchain, (n) => new Int8Array(n));
    this.shard = resize(this.shard, (n) => new Uint8Array(n));
    this.kind = resize(this.kind, (n) => new Uint8Array(n));
    this.code = resize(this.code, (n) => new Uint8Array(n));
    this.status = resize(this.status, (n) => new Uint8Array(n));
    this.balance = resize(this.balance, (n) => new Float64Array(n));
    this.nextLt = resize(this.nextLt, (n) => new Float64Array(n));
    this.lastLt = resize(this.lastLt, (n) => new Float64Array(n));
    this.lastTx = resize(this.lastTx, (n) => new Float64Array(n));
    this.state = resize(this.state, (n) => new Float64Array(n));
    this.data = resize(this.data, (n) => new Float64Array(n));
    this.lastNow = resize(this.lastNow, (n) => new Int32Array(n));
    this.txs = resize(this.txs, (n) => new Int32Array(n));
    this.seqno = resize(this.seqno, (n) => new Int32Array(n));
    this.jetton = resize(this.jetton, (n) => new Int16Array(n));
    this.owner = resize(this.owner, (n) => new Int32Array(n));
    this.jettonBalance = resize(this.jettonBalance, (n) => new Float64Array(n));
    this.initWritten = resize(this.initWritten, (n) => new Uint8Array(n));
    this.zeroQueryId = resize(this.zeroQueryId, (n) => new Uint8Array(n));
    this.genesisWritten = resize(this.genesisWritten, (n) => new Uint8Array(n));
    this.capacity = capacity;
  }

  add(workchain: number, account: Uint8Array, shard: number, kind: number, code: number, status: number, balance: number): number {
    if (this.count === this.capacity) this.grow();
    const id = this.count++;
    this.address.set(account, id * 32);
    this.raw.push(`${workchain}:${Buffer.from(account).toString("hex").toUpperCase()}`);
    this.workchain[id] = workchain;
    this.shard[id] = shard;
    this.kind[id] = kind;
    this.code[id] = code;
    this.status[id] = status;
    this.balance[id] = balance;
    this.lastTx[id] = -1;
    this.state[id] = -1;
    this.data[id] = -1;
    this.jetton[id] = -1;
    this.owner[id] = -1;
    return id;
  }

  accountId(id: number): Buffer {
    return this.address.subarray(id * 32, id * 32 + 32);
  }
}

// ---- Traces as planned, then executed -------------------------------------------------------------------------

/** One transaction of a trace and the message that causes it. */
class Node {
  readonly trace: Trace;
  readonly account: number;
  readonly parent: Node | undefined;
  readonly children: Node[] = [];
  /** External-in message (roots), no message (tick-tock), or an internal one. */
  readonly inKind: "ext" | "int" | "none";
  opcode: number | null = null;
  value = 0;
  bounce = false;
  bounced = false;
  body: BuiltCell = emptyCell;
  /** The body may repeat across messages: written to message_contents once, checked against a set. */
  sharedBody = false;
  /** StateInit carried by the message (hash and BOC), for deploys. */
  initHash: string | null = null;
  initBoc: string | null = null;
  /** 0: processed as planned; 1: compute phase fails (exit code); 2: compute skipped (no state). */
  fail: 0 | 1 | 2 = 0;
  exitCode = 0;
  gas = 0;
  /** Ext-out (log) messages the transaction emits. */
  logs = 0;
  logOpcode = 0;
  /** Rounds after the parent's transaction; 0 may land in the same block. */
  delay = 1;
  /** Pending: sent but not delivered when the data ends. */
  dropped = false;
  // Set when the message is sent.
  msgHash = "";
  msgNorm: string | null = null;
  createdLt = 0;
  createdAt = 0;
  fwdFee = 0;
  /** The message columns after trace_id, shared by its 'out' and 'in' rows. */
  msgTail = "";
  // Set when the transaction runs.
  txHash = "";
  lt = 0;
  now = 0;
  mcSeqno = 0;
  aborted = false;

  constructor(trace: Trace, account: number, parent: Node | undefined, inKind: "ext" | "int" | "none") {
    this.trace = trace;
    this.account = account;
    this.parent = parent;
    this.inKind = inKind;
  }
}

interface DexTransfer {
  amount: number;
  asset: number | null;
  source: number;
  destination: number;
  sourceJettonWallet: number | null;
  destinationJettonWallet: number | null;
}

interface ActionSpec {
  type: "ton_transfer" | "jetton_transfer" | "jetton_swap" | "call_contract" | "contract_deploy" | "tick_tock";
  nodes: Node[];
  success: boolean;
  source?: number;
  sourceSecondary?: number;
  destination?: number;
  destinationSecondary?: number;
  asset?: number;
  asset2?: number;
  opcode?: number | null;
  value?: number;
  amount?: number;
  comment?: string | null;
  jetton?: { responseDestination: number; forwardAmount: number; queryId: number; comment: string | null };
  swap?: { dex: string; incoming: DexTransfer; outgoing: DexTransfer };
}

class Trace {
  id = "";
  readonly nodes: Node[] = [];
  readonly actions: ActionSpec[] = [];
  /** Nodes still to execute. */
  remaining = 0;
  executed = 0;
  edges = 0;
  /** Messages of the trace planned never to arrive (a pending trace's dropped leaf). */
  droppedEdges = 0;
  /**
   * Of those, the ones sent so far. A message is on its way only once the transaction sending it has run: a live trace
   * whose dropped leaf's parent has not run yet must not count it in pending_edges_, or its row would count a message
   * that no visible transaction sent.
   */
  droppedSent = 0;
  externalHash: string | null = null;
  externalNorm: string | null = null;
  startLt = 0;
  startUtime = 0;
  mcStart = 0;
  endLt = 0;
  endUtime = 0;
  mcEnd = 0;
  /** Messages sent to a transaction of the trace that has not run yet (follow mode writes them as pending_edges_). */
  inFlightMessages = 0;
}

interface BlockStats {
  seqno: number;
  txCount: number;
  endLt: number;
}

// ---- The generator ---------------------------------------------------------------------------------------------

export interface GeneratorOptions {
  transactions: number;
  seed: number;
  sink: RowSink;
  /** Called after every round; awaited, so the sink can apply backpressure. */
  afterRound?: (progress: Progress) => Promise<void> | void;
  /** Follow mode: the chain goes on round by round (`step()`), written as ton-index-worker writes a live index. */
  live?: LiveOptions;
}

/**
 * How the chain is written when it follows a live index (bench/generate/follow.ts): no transaction count, each
 * round is a batch of its own, traces are written at every round they grow in, and their actions are handed over
 * for a later classification instead of being written with the trace.
 */
export interface LiveOptions {
  /** Where the chain already in the database ends; undefined for an empty database (the chain starts afresh). */
  start: ChainStart | undefined;
  /** Mean transactions a round starts (the generator's own mean is knobs.txPerShardBlock per shard). */
  transactionsPerRound: number;
  /** Accounts of the chain's own population (besides those taken over from the database). */
  accounts: number;
  /**
   * Rounds a message takes to reach another block, per round the generator would take: with the number of
   * batches in flight here, two batches in flight together never hold transactions of one trace, so a batch that
   * commits before an earlier one never shows a trace counting transactions not yet visible.
   */
  deliverySpacing: number;
  /** A trace is complete (its row in this round's batch): its action and action_accounts lines, for the classifier. */
  classifiable(traceId: string, mcSeqno: number, rows: { actions: string[]; actionAccounts: string[] }): void;
}

/** The end of a chain already in a database: what a chain continuing it must go on from. */
export interface ChainStart {
  /** The first masterchain seqno to write. */
  mcSeqno: number;
  /** An lt above every lt in the database (a multiple of 1,000,000). */
  lt: number;
  /** The time of the first new masterchain block. */
  utime: number;
  /** The next seqno of each workchain-0 shard, by shard id (int64 text), where the database has blocks of it. */
  shardSeqnos: ReadonlyMap<string, number>;
  /** Accounts to take over, the busiest wallets first (they become the chain's busiest wallets). */
  accounts: readonly KnownAccount[];
}

/** An account as latest_account_states has it. */
export interface KnownAccount {
  address: string;
  stateHash: string;
  balance: number;
  status: "uninit" | "active" | "frozen";
  timestamp: number;
  lastTransHash: string;
  lastTransLt: number;
  dataHash: string | null;
  codeHash: string | null;
}

/** What one round of follow mode wrote. */
export interface RoundInfo {
  mcSeqno: number;
  transactions: number;
  tracesStarted: number;
  tracesCompleted: number;
}

export interface Progress {
  transactions: number;
  rounds: number;
  tracesInFlight: number;
}

export interface Summary {
  transactions: number;
  messages: number;
  traces: number;
  pendingTraces: number;
  giantTraces: number;
  actions: number;
  accounts: number;
  masterchainBlocks: number;
  shardBlocks: number;
  firstUtime: number;
  lastUtime: number;
  topAccounts: { account: string; transactions: number }[];
  largestTrace: number;
}

export class ChainGenerator {
  private readonly n: number;
  private readonly random: Random;
  private readonly hasher: Hasher;
  private readonly sink: RowSink;
  private readonly afterRound: GeneratorOptions["afterRound"];
  private readonly body = new CellBuilder();
  private readonly accounts = new Accounts();
  private readonly codes: CodeInfo[];

  private readonly shards: number;
  private readonly shardIds: string[];
  private readonly jettons: JettonInfo[] = [];
  private readonly jettonZipf: Zipf;
  private readonly jettonWalletOf = new Map<number, number>();
  private wallets: number[] = [];
  private walletZipf!: Zipf;
  private contracts: number[] = [];
  private contractZipf!: Zipf;
  private exchanges: number[] = [];
  private readonly exchangeZipf: Zipf;
  private elector = 0;
  private config = 0;
  private stonfiRouter = 0;
  private stonfiPools: { pool: number; a: number; b: number }[] = [];
  private readonly poolZipf: Zipf;
  private dedustNativeVault = 0;
  private dedustVaults: number[] = [];
  private dedustPools: number[] = [];
  private readonly validators = 100;

  // Counters behind the derived hashes.
  private txCounter = 0;
  private msgCounter = 0;
  private stateCounter = 0;
  private dataCounter = 0;
  private actionCounter = 0;
  private blockCounter = 0;
  private queryCounter = 0;

  private readonly sharedBodies = new Set<string>();
  private planned = 0;
  private readonly giantAt: number[] = [];

  // The current round.
  private round = 0;
  private mcSeqno = 0;
  private readonly mc0: number;
  private readonly shardSeqno0: number[];
  private lt0: number;
  private baseLt = 0;
  private utime: number;
  private readonly mcBlock: BlockStats = { seqno: 0, txCount: 0, endLt: 0 };
  private readonly shardBlocks: BlockStats[];
  private queue: Node[] = [];
  private readonly scheduled = new Map<number, Node[]>();
  private inFlight = 0;

  // Totals.
  private readonly totals = { messages: 0, traces: 0, pending: 0, giant: 0, actions: 0, shardBlocks: 0, largest: 0 };
  private readonly firstUtime: number;
  private readonly unclassifiedFrom: number;

  private readonly live: LiveOptions | undefined;
  /** Follow mode: traces and accounts a transaction of the current round touched. */
  private readonly touchedTraces = new Set<Trace>();
  private readonly touchedAccounts = new Set<number>();
  private roundTransactions = 0;
  private roundStarted = 0;
  private roundCompleted = 0;

  constructor(options: GeneratorOptions) {
    this.live = options.live;
    this.n = options.live === undefined ? options.transactions : Number.MAX_SAFE_INTEGER;
    this.random = new Random(options.seed);
    this.hasher = new Hasher(options.seed);
    this.sink = options.sink;
    this.afterRound = options.afterRound;
    this.codes = codeTable(this.hasher);
    this.shards = 1 << knobs.shardPrefixBits;
    this.shardIds = Array.from({ length: this.shards }, (_, s) => {
      const bits = knobs.shardPrefixBits;
      const id = (BigInt(s) << BigInt(64 - bits)) | (1n << BigInt(63 - bits));
      return BigInt.asIntN(64, id).toString();
    });
    this.shardBlocks = Array.from({ length: this.shards }, () => ({ seqno: 0, txCount: 0, endLt: 0 }));
    this.jettonZipf = new Zipf(knobs.jettons, knobs.jettonZipf);
    this.poolZipf = new Zipf(knobs.stonfiPools, knobs.poolZipf);
    this.exchangeZipf = new Zipf(knobs.exchanges, knobs.exchangeZipf);

    // Where the data sits in time: a seed-chosen start, with masterchain seqno and lt as mainnet had them then
    // (mc 40035138 ↔ 1725051418 ↔ lt 48818110000000; about 2.77 s and 1.07M lt a masterchain block).
    this.utime = knobs.startUtime + this.random.int(knobs.startSpread);
    this.firstUtime = this.utime;
    this.mc0 = Math.round(40_035_138 + (this.utime - 1_725_051_418) / 2.765);
    this.lt0 = Math.round(48_818_110 + (this.mc0 - 40_035_138) * 1.0692) * 1_000_000;
    this.shardSeqno0 = this.shardIds.map(() => 45_381_794 + Math.round((this.mc0 - 40_035_138) * 1.12) + this.random.int(5000));
    this.unclassifiedFrom = knobs.unclassifiedTail > 0 ? this.n - knobs.unclassifiedTail : Number.POSITIVE_INFINITY;
    const start = this.live?.start;
    if (start !== undefined) {
      this.utime = start.utime;
      this.firstUtime = start.utime;
      this.mc0 = start.mcSeqno;
      this.lt0 = start.lt;
      this.shardSeqno0 = this.shardIds.map((id, s) => start.shardSeqnos.get(id) ?? (this.shardSeqno0[s] as number));
    }

    // A live chain has no end to place giant traces before (and a 4000-transaction trace per batch is no live load).
    const giants = this.live === undefined ? Math.floor(this.n / knobs.giantTraceEvery) : 0;
    for (let i = 0; i < giants; i++) this.giantAt.push(Math.floor(((i + 0.5) * this.n) / giants));
    this.createAccounts();
    if (start !== undefined) this.adoptAccounts(start.accounts);
  }

  // ---- Accounts ----

  private newAddress(): { bytes: Buffer; shard: number } {
    const bytes = this.hasher.bytes(HashKind.address, this.accounts.count);
    return { bytes, shard: (bytes[0] as number) >> (8 - knobs.shardPrefixBits) };
  }

  private addAccount(kind: number, code: number, status: number, balance: number): number {
    const { bytes, shard } = this.newAddress();
    const id = this.accounts.add(0, bytes, shard, kind, code, status, Math.round(balance));
    this.accounts.zeroQueryId[id] = this.random.chance(knobs.zeroQueryIdShare) ? 1 : 0;
    return id;
  }

  private addJettonWallet(owner: number, jetton: number, existing: boolean): number {
    const info = this.jettons[jetton] as JettonInfo;
    const status = existing ? Status.active : Status.nonexist;
    const id = this.addAccount(Kind.jettonWallet, info.walletCode, status, existing ? this.random.logUniform(5e6, 5e7) : 0);
    this.accounts.jetton[id] = jetton;
    this.accounts.owner[id] = owner;
    // Exchanges and DEX vaults hold far more than people do.
    const tokens = this.accounts.kind[owner] === Kind.wallet ? this.random.logUniform(1, 1e6) : this.random.logUniform(1e6, 1e8);
    this.accounts.jettonBalance[id] = existing ? Math.round(tokens * 10 ** info.decimals) : 0;
    this.jettonWalletOf.set(owner * 64 + jetton, id);
    if (this.accounts.kind[owner] === Kind.wallet) info.wallets.push(id);
    return id;
  }

  private createAccounts(): void {
    const r = this.random;
    const a = this.accounts;
    const base = this.live !== undefined ? Math.max(300, this.live.accounts) : Math.max(300, Math.round(this.n * knobs.baseAccountsPerTransaction));

    const system = (byte: number, code: number) => {
      const id = a.add(-1, Buffer.alloc(32, byte), 0, Kind.system, code, Status.active, 0);
      a.balance[id] = Math.round(r.logUniform(1e13, 1e16));
      return id;
    };
    this.elector = system(0x33, Code.elector);
    this.config = system(0x55, Code.config);

    const names = ["Tether USD", "Notcoin", "DOGS", "Hamster Kombat", "Catizen", "STON", "Storm", "tsTON", "Gram", "Resistance Dog",
      "Fish", "Jetton", "Durev", "Bolt", "Ambra", "Lavandos", "Scaleton", "Punk", "Glint", "Kingy", "Arbuz", "Tonup", "Redo", "Utya"];
    for (let j = 0; j < knobs.jettons; j++) {
      const master = this.addAccount(Kind.jettonMaster, Code.jettonMaster, Status.active, r.logUniform(1e9, 1e11));
      const name = names[j % names.length] as string;
      this.jettons.push({
        master,
        name: j < names.length ? name : `${name} ${j}`,
        symbol: j === 0 ? "USD₮" : name.replace(/[^A-Za-z]/g, "").slice(0, 6).toUpperCase() || `J${j}`,
        decimals: j === 0 ? 6 : 9,
        walletCode: j === 0 ? Code.jettonWalletGoverned : j % 3 === 0 ? Code.jettonWalletV2 : Code.jettonWallet,
        wallets: [],
        zipf: undefined,
        zipfSize: 0,
      });
    }

    const walletCode = () => [Code.walletV4, Code.walletV5, Code.walletV3][r.weighted(knobs.walletVersions)] as number;
    const wallets = Math.round(base * knobs.walletShare);
    for (let i = 0; i < wallets; i++) {
      // The head of the Zipf order is exchanges and services: rich.
      const balance = i < 20 ? r.logUniform(1e14, 5e16) : r.logUniform(5e7, 5e12);
      this.wallets.push(this.addAccount(Kind.wallet, walletCode(), Status.active, balance));
    }
    this.walletZipf = new Zipf(this.wallets.length, knobs.walletZipf, knobs.hotWallets);
    for (let i = 0; i < knobs.exchanges; i++) {
      this.exchanges.push(this.addAccount(Kind.highload, Code.highload, Status.active, r.logUniform(1e15, 1e17)));
    }
    const contracts = Math.round(base * knobs.contractShare);
    for (let i = 0; i < contracts; i++) {
      this.contracts.push(this.addAccount(Kind.contract, Code.contract + r.int(Code.contracts), Status.active, r.logUniform(1e7, 1e12)));
    }
    this.contractZipf = new Zipf(this.contracts.length, knobs.contractZipf);

    // DEX: a STON.fi v2 router with pools, DeDust vaults and pools; each with its jetton wallets.
    this.stonfiRouter = this.addAccount(Kind.stonfiRouter, Code.stonfiRouter, Status.active, r.logUniform(1e12, 1e13));
    for (let j = 0; j < knobs.jettons; j++) this.addJettonWallet(this.stonfiRouter, j, true);
    for (let p = 0; p < knobs.stonfiPools; p++) {
      const x = p % (knobs.jettons - 1) + 1;
      const y = p < knobs.jettons - 1 ? 0 : (x + 1 + (p % 5)) % knobs.jettons;
      const pool = this.addAccount(Kind.stonfiPool, Code.stonfiPool, Status.active, r.logUniform(1e10, 1e12));
      this.stonfiPools.push({ pool, a: x, b: y === x ? 0 : y });
    }
    this.dedustNativeVault = this.addAccount(Kind.dedustVault, Code.dedustVault, Status.active, r.logUniform(1e15, 1e16));
    for (let j = 0; j < knobs.jettons; j++) {
      const vault = this.addAccount(Kind.dedustVault, Code.dedustVault, Status.active, r.logUniform(1e10, 1e12));
      this.dedustVaults.push(vault);
      this.addJettonWallet(vault, j, true);
      this.dedustPools.push(this.addAccount(Kind.dedustPool, Code.dedustPool, Status.active, r.logUniform(1e12, 1e15)));
    }
    for (const exchange of this.exchanges) for (let j = 0; j < 5; j++) this.addJettonWallet(exchange, j, true);

    // Jetton wallets of wallets: owners and jettons both Zipf-distributed (the busy wallets hold many jettons),
    // and every jetton held by a few wallets at least.
    const jettonWallets = base - a.count;
    for (let i = 0, tries = 0; i < jettonWallets && tries < jettonWallets * 3; tries++) {
      const owner = this.wallets[this.walletZipf.sample(r)] as number;
      const jetton = this.jettonZipf.sample(r);
      if (this.jettonWalletOf.has(owner * 64 + jetton)) continue;
      this.addJettonWallet(owner, jetton, true);
      i++;
    }
    for (let j = 0; j < knobs.jettons; j++) {
      const info = this.jettons[j] as JettonInfo;
      for (let tries = 0; info.wallets.length < 4 && tries < 1000; tries++) {
        const owner = this.wallets[r.int(this.wallets.length)] as number;
        if (!this.jettonWalletOf.has(owner * 64 + j)) this.addJettonWallet(owner, j, true);
      }
    }

    // Pre-dataset history: each existing account's last transaction happened some time before the first block.
    for (let id = 0; id < a.count; id++) {
      const before = r.logUniform(10, 3e7);
      a.lastLt[id] = Math.max(1_000_000, this.lt0 - Math.round(before * 400_000) - r.int(1000));
      a.nextLt[id] = (a.lastLt[id] as number) + 2;
      a.lastNow[id] = this.utime - Math.round(before);
      a.seqno[id] = r.int(5000);
    }
  }

  /**
   * Follow mode: the accounts the database already has take over accounts of the new population, so that the chain
   * goes on with them: the elector and config (fixed addresses), and the database's busiest wallets in the place of
   * the new population's busiest ones. Each keeps its address, code, balance and last transaction, so its next
   * transaction links to the one in the database.
   */
  private adoptAccounts(known: readonly KnownAccount[]): void {
    const a = this.accounts;
    const walletCodes = new Map([Code.walletV4, Code.walletV5, Code.walletV3].map((code) => [(this.codes[code] as CodeInfo).hash, code]));
    const byAddress = new Map(known.map((k) => [k.address, k]));
    const take = (id: number, k: KnownAccount) => {
      const [workchain, hex] = k.address.split(":") as [string, string];
      const bytes = Buffer.from(hex, "hex");
      a.address.set(bytes, id * 32);
      a.raw[id] = k.address;
      a.workchain[id] = Number(workchain);
      a.shard[id] = Number(workchain) === -1 ? 0 : (bytes[0] as number) >> (8 - knobs.shardPrefixBits);
      a.status[id] = Status[k.status];
      a.balance[id] = k.balance;
      a.lastLt[id] = k.lastTransLt;
      a.nextLt[id] = k.lastTransLt + 2;
      a.lastNow[id] = k.timestamp;
      // Its state is in account_states already.
      a.genesisWritten[id] = 1;
      a.known.set(id, k);
    };
    for (const id of [this.elector, this.config]) {
      const k = byAddress.get(a.raw[id] as string);
      if (k !== undefined) take(id, k);
    }
    let rank = 0;
    for (const k of known) {
      const code = k.codeHash === null ? undefined : walletCodes.get(k.codeHash);
      if (code === undefined || k.status !== "active" || !k.address.startsWith("0:") || rank >= this.wallets.length) continue;
      const id = this.wallets[rank++] as number;
      take(id, k);
      a.code[id] = code;
    }
  }

  private newWallet(): number {
    const code = [Code.walletV4, Code.walletV5, Code.walletV3][this.random.weighted(knobs.walletVersions)] as number;
    const id = this.addAccount(Kind.wallet, code, Status.nonexist, 0);
    this.wallets.push(id);
    return id;
  }

  private pickWallet(except = -1): number {
    for (;;) {
      const id = this.wallets[this.walletZipf.sample(this.random)] as number;
      if (id !== except) return id;
    }
  }

  private jettonWalletZipf(info: JettonInfo): Zipf {
    // The per-jetton tables are rebuilt when a jetton's wallet list has grown by a quarter.
    if (info.zipf === undefined || info.wallets.length > info.zipfSize * 1.25) {
      info.zipf = new Zipf(info.wallets.length, knobs.jettonWalletZipf);
      info.zipfSize = info.wallets.length;
    }
    return info.zipf;
  }

  /**
   * A jetton wallet of `jetton` owned by an active plain wallet; a sender's (`deployed`) must exist already, a
   * receiver's may still have to be deployed by the transfer.
   */
  private pickJettonWallet(jetton: number, options: { except?: number; deployed: boolean }): number {
    const a = this.accounts;
    const info = this.jettons[jetton] as JettonInfo;
    const zipf = this.jettonWalletZipf(info);
    for (let tries = 0; tries < 50; tries++) {
      const id = info.wallets[zipf.sample(this.random)] as number;
      const owner = a.owner[id] as number;
      if (id === options.except || a.kind[owner] !== Kind.wallet || a.status[owner] !== Status.active) continue;
      if (options.deployed && a.status[id] !== Status.active) continue;
      return id;
    }
    // Practically unreachable: the base population gives every jetton deployed wallets.
    throw new Error(`no ${options.deployed ? "deployed " : ""}wallet of jetton ${jetton} found`);
  }

  /** The owner's wallet of `jetton`, created (not yet deployed) when it has none. */
  private jettonWalletFor(owner: number, jetton: number): number {
    return this.jettonWalletOf.get(owner * 64 + jetton) ?? this.addJettonWallet(owner, jetton, false);
  }

  // ---- Planning ----

  private node(trace: Trace, account: number, parent: Node | undefined, inKind: "ext" | "int" | "none"): Node {
    const node = new Node(trace, account, parent, inKind);
    trace.nodes.push(node);
    if (parent !== undefined) {
      parent.children.push(node);
      const sameShard = this.accounts.workchain[account] === 0 && this.accounts.shard[account] === this.accounts.shard[parent.account];
      node.delay = sameShard && this.random.chance(knobs.sameBlockDelivery) ? 0 : this.random.chance(0.9) ? 1 : 2;
    }
    return node;
  }

  private queryId(account: number): number {
    if (this.accounts.zeroQueryId[account] === 1) return 0;
    // Unique (a counter), spread like the timestamp-derived ids wallets use.
    return this.firstUtime * 1000 + this.queryCounter++ * 7 + this.random.int(7);
  }

  /** The root: an external message to a wallet (its signed body), or none for a tick-tock. */
  private external(trace: Trace, account: number): Node {
    const node = this.node(trace, account, undefined, "ext");
    const r = this.random;
    const a = this.accounts;
    const b = this.body.reset();
    const code = a.code[account];
    a.seqno[account] = (a.seqno[account] as number) + 1;
    let first: number;
    if (code === Code.walletV5) {
      first = Op.walletV5Signed;
      b.uint(first, 32).uint(2147483409, 32).uint(this.utime + 60, 32).uint(a.seqno[account] as number, 32);
      for (let i = 0; i < 16; i++) b.uint(r.next(), 32);
    } else {
      // The signature comes first: the stored opcode is its first 32 bits.
      first = r.next();
      b.uint(first, 32);
      for (let i = 1; i < 16; i++) b.uint(r.next(), 32);
      b.uint(698983191, 32).uint(this.utime + 60, 32).uint(a.seqno[account] as number, 32);
      if (code === Code.walletV4) b.uint(0, 8);
    }
    node.body = b.finish();
    node.opcode = first | 0;
    node.gas = code === Code.highload ? 5700 : code === Code.walletV5 ? 4939 : 3308;
    if (a.status[account] !== Status.active) this.attachInit(node, account);
    return node;
  }

  private internal(parent: Node, account: number, opcode: number | null, value: number, bounce: boolean, gas: number): Node {
    const node = this.node(parent.trace, account, parent, "int");
    node.opcode = opcode;
    node.value = Math.max(1, Math.round(value));
    node.bounce = bounce;
    node.gas = gas;
    return node;
  }

  /** A comment body: one of the common texts (such bodies repeat) or a unique memo. */
  private commentBody(node: Node): string {
    const r = this.random;
    let comment: string;
    if (r.chance(0.35)) {
      comment = r.pick(sharedComments);
      node.sharedBody = true;
    } else {
      comment = `${r.pick(commentWords)} #${this.firstUtime % 100000}${this.queryCounter++}`;
    }
    node.body = this.body.reset().uint(0, 32).bytes(Buffer.from(comment, "utf8")).finish();
    node.opcode = Op.comment;
    return comment;
  }

  private attachInit(node: Node, account: number): void {
    // A StateInit with code and data: placeholder cells (the real contract code is not at hand), so the hash is
    // the real hash of this BOC but not the account's code_hash.
    const code = beginCell().storeUint(0xff00, 16).storeStringTail((this.codes[this.accounts.code[account] as number] as CodeInfo).name).endCell();
    const data = beginCell().storeBuffer(this.accounts.accountId(account)).storeUint((this.accounts.jetton[account] as number) & 0xffff, 16).endCell();
    const init = beginCell().storeUint(0, 2).storeMaybeRef(code).storeMaybeRef(data).storeUint(0, 1).endCell();
    node.initHash = init.hash().toString("base64");
    node.initBoc = serializeBocBase64(init);
  }

  private tonTransfer(trace: Trace, size: number | undefined): void {
    const r = this.random;
    const sender = this.pickWallet();
    const root = this.external(trace, sender);
    const batch = size !== undefined ? size - 1 : r.chance(knobs.walletBatchShare) ? r.pareto(2, knobs.walletBatchAlpha, knobs.walletBatchMax) : 1;
    for (let i = 0; i < batch; i++) this.tonPayment(root, sender, size === undefined, r.chance(knobs.commentShare));
  }

  /** One TON transfer out of `from`'s transaction `parent`, with its action. */
  private tonPayment(parent: Node, from: number, mayFail: boolean, withComment: boolean): void {
    const r = this.random;
    const a = this.accounts;
    const fresh = mayFail && r.chance(knobs.newWalletShare + knobs.bounceToNowhereShare);
    const to = fresh ? this.newWallet() : this.pickWallet(from);
    const toNowhere = fresh && r.chance(knobs.bounceToNowhereShare / (knobs.newWalletShare + knobs.bounceToNowhereShare));
    const value = Math.min(r.logUniform(1e6, 2e11), (a.balance[from] as number) / 4 + 1e6);
    const node = this.internal(parent, to, null, value, !fresh || toNowhere, 309);
    const comment = withComment ? this.commentBody(node) : null;
    const action: ActionSpec = { type: "ton_transfer", nodes: [parent, node], success: true, source: from, destination: to, value: node.value, comment };
    if (toNowhere) {
      node.fail = 2;
      action.success = false;
      this.bounceBack(node);
    }
    parent.trace.actions.push(action);
  }

  /** The bounced message a failed bounceable message sends back to its sender. */
  private bounceBack(node: Node): void {
    const parent = node.parent as Node;
    const back = this.internal(node, parent.account, Op.bounced, node.value * 0.95, false, 309);
    back.bounced = true;
    // 0xffffffff, then the first 256 bits of the original body (whole bytes here). Such bodies repeat.
    const boc = Buffer.from(node.body.boc, "base64");
    const dataBytes = Math.floor((boc[12] as number) / 2);
    back.body = this.body.reset().uint(Op.bounced, 32).bytes(boc.subarray(13, 13 + Math.min(dataBytes, 32))).finish();
    back.sharedBody = true;
  }

  private jettonTransfer(trace: Trace): void {
    const r = this.random;
    const jetton = this.jettonZipf.sample(r);
    const fromWallet = this.pickJettonWallet(jetton, { deployed: true });
    const sender = this.accounts.owner[fromWallet] as number;
    const root = this.external(trace, sender);
    const toWallet = r.chance(knobs.newJettonWalletShare)
      ? this.jettonWalletFor(this.newWallet(), jetton)
      : this.pickJettonWallet(jetton, { except: fromWallet, deployed: false });
    this.jettonPayment(root, sender, jetton, fromWallet, toWallet, true, r.chance(0.1));
  }

  /** A jetton transfer from `fromWallet` (owned by `sender`, whose transaction is `parent`) to `toWallet`. */
  private jettonPayment(parent: Node, sender: number, jetton: number, fromWallet: number, toWallet: number, mayFail: boolean, withComment: boolean): Node[] {
    const r = this.random;
    const a = this.accounts;
    const info = this.jettons[jetton] as JettonInfo;
    const receiver = a.owner[toWallet] as number;
    const amount = Math.max(1, Math.round(Math.min(r.logUniform(0.5, 5e4) * 10 ** info.decimals, (a.jettonBalance[fromWallet] as number) / 2 + 10 ** info.decimals)));
    const queryId = this.queryId(sender);
    const forward = r.chance(0.8) ? (r.chance(0.6) ? 1 : Math.round(r.logUniform(1e6, 5e7))) : 0;
    const comment = withComment && forward > 0 ? `${r.pick(commentWords)} ${this.queryCounter++}`.slice(0, 20) : null;
    const tonIn = r.logUniform(5e7, 3e8);

    const transfer = this.internal(parent, fromWallet, Op.jettonTransfer, tonIn, true, 7800 + r.int(2000));
    transfer.sharedBody = queryId === 0;
    const b = this.body.reset().uint(Op.jettonTransfer, 32).uint64(queryId).coins(amount);
    b.address(0, a.accountId(receiver)).address(0, a.accountId(sender)).bit(false).coins(forward);
    this.forwardPayload(b, comment);
    transfer.body = b.finish();
    const nodes = [parent, transfer];
    const action: ActionSpec = {
      type: "jetton_transfer",
      nodes,
      success: true,
      source: sender,
      destination: receiver,
      sourceSecondary: fromWallet,
      destinationSecondary: toWallet,
      asset: info.master,
      amount,
      jetton: { responseDestination: sender, forwardAmount: forward, queryId, comment },
    };
    parent.trace.actions.push(action);

    if (mayFail && r.chance(knobs.jettonFailureShare)) {
      transfer.fail = 1;
      transfer.exitCode = r.pick([47, 709, 705]);
      action.success = false;
      this.bounceBack(transfer);
      return nodes;
    }
    a.jettonBalance[fromWallet] = (a.jettonBalance[fromWallet] as number) - amount;
    a.jettonBalance[toWallet] = (a.jettonBalance[toWallet] as number) + amount;

    const internal = this.internal(transfer, toWallet, Op.internalTransfer, tonIn - 8e6, true, 8500 + r.int(2500));
    internal.sharedBody = transfer.sharedBody;
    const bi = this.body.reset().uint(Op.internalTransfer, 32).uint64(queryId).coins(amount);
    bi.address(0, a.accountId(sender)).address(0, a.accountId(sender)).coins(forward);
    this.forwardPayload(bi, comment);
    internal.body = bi.finish();
    if (a.status[toWallet] !== Status.active || r.chance(0.9)) this.attachInit(internal, toWallet);
    nodes.push(internal);

    if (forward > 0) {
      const note = this.internal(internal, receiver, Op.transferNotification, forward, false, 309);
      note.sharedBody = transfer.sharedBody;
      const bn = this.body.reset().uint(Op.transferNotification, 32).uint64(queryId).coins(amount).address(0, a.accountId(sender));
      this.forwardPayload(bn, comment);
      note.body = bn.finish();
      nodes.push(note);
    }
    if (r.chance(0.9)) {
      const excess = this.internal(internal, sender, Op.excesses, Math.max(1e6, tonIn - 2e7 - forward), false, 309);
      this.excessBody(excess, queryId);
      nodes.push(excess);
    }
    return nodes;
  }

  private forwardPayload(b: CellBuilder, comment: string | null): void {
    // Either ForwardPayload: inline (bit 0), a text comment or nothing.
    b.bit(false);
    if (comment !== null) b.uint(0, 32).bytes(Buffer.from(comment, "utf8"));
  }

  private stonfiSwap(trace: Trace): void {
    const r = this.random;
    const a = this.accounts;
    const pair = this.stonfiPools[this.poolZipf.sample(r)] as { pool: number; a: number; b: number };
    const [inJetton, outJetton] = r.chance(0.5) ? [pair.a, pair.b] : [pair.b, pair.a];
    const userIn = this.pickJettonWallet(inJetton, { deployed: true });
    const sender = a.owner[userIn] as number;
    const userOut = this.jettonWalletFor(sender, outJetton);
    const routerIn = this.jettonWalletFor(this.stonfiRouter, inJetton);
    const routerOut = this.jettonWalletFor(this.stonfiRouter, outJetton);
    const inInfo = this.jettons[inJetton] as JettonInfo;
    const outInfo = this.jettons[outJetton] as JettonInfo;
    const amountIn = Math.round(Math.min(r.logUniform(1, 2e4) * 10 ** inInfo.decimals, (a.jettonBalance[userIn] as number) / 2 + 10 ** inInfo.decimals));
    const amountOut = Math.max(1, Math.round(r.logUniform(0.2, 5) * (amountIn / 10 ** inInfo.decimals) * 10 ** outInfo.decimals));
    const queryId = this.queryId(sender);
    const ton = r.logUniform(2e8, 4e8);

    const root = this.external(trace, sender);
    const transfer = this.internal(root, userIn, Op.jettonTransfer, ton, true, 9000);
    this.jettonBody(transfer, Op.jettonTransfer, queryId, amountIn, this.stonfiRouter, sender);
    const internal = this.internal(transfer, routerIn, Op.internalTransfer, ton - 8e6, true, 10000);
    this.jettonBody(internal, Op.internalTransfer, queryId, amountIn, sender, sender);
    if (r.chance(0.5)) this.attachInit(internal, routerIn);
    const note = this.internal(internal, this.stonfiRouter, Op.transferNotification, ton - 5e7, true, 12000);
    this.jettonBody(note, Op.transferNotification, queryId, amountIn, sender, null);
    const excess1 = this.internal(internal, sender, Op.excesses, 2e7, false, 309);
    this.excessBody(excess1, queryId);
    const swap = this.internal(note, pair.pool, Op.stonfiSwap, ton - 6e7, true, 15000);
    this.opBody(swap, Op.stonfiSwap, queryId, amountIn, sender);
    const payTo = this.internal(swap, this.stonfiRouter, Op.stonfiPayTo, ton - 7e7, true, 11000);
    this.opBody(payTo, Op.stonfiPayTo, queryId, amountOut, sender);
    const out = this.internal(payTo, routerOut, Op.jettonTransfer, ton - 8e7, true, 9000);
    this.jettonBody(out, Op.jettonTransfer, queryId, amountOut, sender, sender);
    const outInternal = this.internal(out, userOut, Op.internalTransfer, ton - 9e7, true, 10000);
    this.jettonBody(outInternal, Op.internalTransfer, queryId, amountOut, this.stonfiRouter, sender);
    if (a.status[userOut] !== Status.active || r.chance(0.9)) this.attachInit(outInternal, userOut);
    const excess2 = this.internal(outInternal, sender, Op.excesses, ton - 1e8, false, 309);
    this.excessBody(excess2, queryId);
    a.jettonBalance[userIn] = (a.jettonBalance[userIn] as number) - amountIn;
    a.jettonBalance[routerIn] = (a.jettonBalance[routerIn] as number) + amountIn;
    a.jettonBalance[routerOut] = Math.max(0, (a.jettonBalance[routerOut] as number) - amountOut);
    a.jettonBalance[userOut] = (a.jettonBalance[userOut] as number) + amountOut;

    trace.actions.push({
      type: "jetton_swap",
      nodes: [root, transfer, internal, note, swap, payTo, out, outInternal, excess2],
      success: true,
      source: sender,
      asset: inInfo.master,
      asset2: outInfo.master,
      swap: {
        dex: "stonfi_v2",
        incoming: { amount: amountIn, asset: inInfo.master, source: sender, destination: this.stonfiRouter, sourceJettonWallet: userIn, destinationJettonWallet: routerIn },
        outgoing: { amount: amountOut, asset: outInfo.master, source: this.stonfiRouter, destination: sender, sourceJettonWallet: routerOut, destinationJettonWallet: userOut },
      },
    });
    trace.actions.push({ type: "ton_transfer", nodes: [internal, excess1], success: true, source: routerIn, destination: sender, value: excess1.value, comment: null });
  }

  private dedustSwap(trace: Trace): void {
    const r = this.random;
    const a = this.accounts;
    const jetton = this.jettonZipf.sample(r);
    const info = this.jettons[jetton] as JettonInfo;
    const userIn = this.pickJettonWallet(jetton, { deployed: true });
    const sender = a.owner[userIn] as number;
    const vault = this.dedustVaults[jetton] as number;
    const vaultWallet = this.jettonWalletFor(vault, jetton);
    const pool = this.dedustPools[jetton] as number;
    const amountIn = Math.round(Math.min(r.logUniform(1, 2e4) * 10 ** info.decimals, (a.jettonBalance[userIn] as number) / 2 + 10 ** info.decimals));
    const tonOut = Math.round(r.logUniform(1e7, 5e11));
    const queryId = this.queryId(sender);
    const ton = r.logUniform(2.5e8, 3.5e8);

    const root = this.external(trace, sender);
    const transfer = this.internal(root, userIn, Op.jettonTransfer, ton, true, 9000);
    this.jettonBody(transfer, Op.jettonTransfer, queryId, amountIn, vault, sender);
    const internal = this.internal(transfer, vaultWallet, Op.internalTransfer, ton - 2e6, true, 10000);
    this.jettonBody(internal, Op.internalTransfer, queryId, amountIn, sender, sender);
    if (r.chance(0.5)) this.attachInit(internal, vaultWallet);
    const note = this.internal(internal, vault, Op.transferNotification, ton - 5e7, true, 12000);
    this.jettonBody(note, Op.transferNotification, queryId, amountIn, sender, null);
    const excess = this.internal(internal, sender, Op.excesses, 4.6e7, false, 309);
    this.excessBody(excess, queryId);
    const swap = this.internal(note, pool, Op.dedustSwapExternal, ton - 5.4e7, true, 14000);
    this.opBody(swap, Op.dedustSwapExternal, queryId, amountIn, sender);
    swap.logs = 1;
    swap.logOpcode = Op.dedustSwapEvent;
    const payout = this.internal(swap, this.dedustNativeVault, Op.dedustPayoutFromPool, ton - 6.2e7, true, 8000);
    this.opBody(payout, Op.dedustPayoutFromPool, queryId, tonOut, sender);
    const final = this.internal(payout, sender, Op.dedustPayout, tonOut + ton - 7e7, false, 309);
    this.opBody(final, Op.dedustPayout, queryId, 0, null);
    a.jettonBalance[userIn] = (a.jettonBalance[userIn] as number) - amountIn;
    a.jettonBalance[vaultWallet] = (a.jettonBalance[vaultWallet] as number) + amountIn;

    trace.actions.push({
      type: "jetton_swap",
      nodes: [root, transfer, internal, note, swap, payout, final, excess],
      success: true,
      source: sender,
      asset: info.master,
      swap: {
        dex: "dedust",
        incoming: { amount: amountIn, asset: info.master, source: sender, destination: vault, sourceJettonWallet: userIn, destinationJettonWallet: vaultWallet },
        outgoing: { amount: tonOut, asset: null, source: this.dedustNativeVault, destination: sender, sourceJettonWallet: null, destinationJettonWallet: null },
      },
    });
  }

  private callContract(trace: Trace): void {
    const r = this.random;
    const sender = this.pickWallet();
    const root = this.external(trace, sender);
    let from = root;
    let depth = 0;
    do {
      const contract = this.contracts[this.contractZipf.sample(r)] as number;
      const opcode = r.pick(contractOpcodes);
      const value = r.logUniform(5e7, 5e9);
      const call = this.internal(from, contract, opcode, value, true, 3000 + r.int(17000));
      this.opBody(call, opcode, this.queryId(from.account), Math.round(value / 1000), r.chance(0.5) ? from.account : null);
      trace.actions.push({ type: "call_contract", nodes: [from, call], success: true, source: from.account, destination: contract, opcode, value: call.value });
      if (r.chance(0.03)) {
        call.fail = 1;
        call.exitCode = r.pick([9, 13, 37, 65535, 101, 401]);
        (trace.actions[trace.actions.length - 1] as ActionSpec).success = false;
        this.bounceBack(call);
        return;
      }
      if (r.chance(0.45)) {
        const reply = this.internal(call, sender, Op.excesses, value * r.float() * 0.9 + 1e6, false, 309);
        this.excessBody(reply, this.queryId(contract));
      }
      from = call;
      depth++;
    } while (depth < 6 && r.chance(0.22));
  }

  private contractDeploy(trace: Trace): void {
    const r = this.random;
    const sender = this.pickWallet();
    const root = this.external(trace, sender);
    const contract = this.addAccount(Kind.contract, Code.contract + r.int(Code.contracts), Status.nonexist, 0);
    this.contracts.push(contract);
    const opcode = r.chance(0.5) ? null : r.pick(contractOpcodes);
    const value = r.logUniform(2e7, 2e9);
    const deploy = this.internal(root, contract, opcode, value, false, 2000 + r.int(8000));
    if (opcode !== null) this.opBody(deploy, opcode, this.queryId(sender), 0, sender);
    this.attachInit(deploy, contract);
    trace.actions.push({ type: "contract_deploy", nodes: [root, deploy], success: true, source: sender, destination: contract, opcode, value: deploy.value });
    if (r.chance(0.4)) {
      const reply = this.internal(deploy, sender, Op.excesses, value * 0.5, false, 309);
      this.excessBody(reply, this.queryId(contract));
    }
  }

  /**
   * An exchange's highload wallet paying out: TON and USDT transfers, at most `perTx` messages per transaction,
   * chained through messages to itself. `target` fixes the trace's size exactly (the giant traces).
   */
  private exchangePayout(trace: Trace, target: number | undefined): void {
    const r = this.random;
    const exchange = this.exchanges[this.exchangeZipf.sample(r)] as number;
    let payer = this.external(trace, exchange);
    const payouts = target === undefined ? r.pareto(3, knobs.payoutAlpha, knobs.payoutMax) : Number.POSITIVE_INFINITY;
    let sent = 0;
    let inTx = 0;
    const perTx = 200;
    for (;;) {
      const left = target === undefined ? payouts - sent : target - trace.nodes.length;
      if (left <= 0) break;
      if (inTx === perTx && left > 1) {
        const next = this.internal(payer, exchange, Op.highloadContinue, 1e9, false, 5700);
        this.opBody(next, Op.highloadContinue, this.queryCounter++, 0, null);
        payer = next;
        inTx = 0;
        continue;
      }
      // A USDT payout adds at most 4 transactions, a TON one exactly 1: with a target, USDT only while 4 fit.
      const usdt = target !== undefined ? left >= 4 && r.chance(0.85) : r.chance(0.3);
      if (usdt) {
        const toWallet = this.pickJettonWallet(0, { deployed: false });
        this.jettonPayment(payer, exchange, 0, this.jettonWalletFor(exchange, 0), toWallet, false, false);
      } else {
        this.tonPayment(payer, exchange, false, r.chance(0.2));
      }
      sent++;
      inTx++;
    }
  }

  private walletOnly(trace: Trace): void {
    this.external(trace, this.pickWallet());
  }

  /** Plans a trace of at most `limit` transactions. */
  private plan(limit: number): Trace {
    const r = this.random;
    const trace = new Trace();
    const giantDue = this.giantAt.length > 0 && this.planned >= (this.giantAt[0] as number);
    if (giantDue) {
      const size = r.range(knobs.giantTraceSize[0], knobs.giantTraceSize[1]);
      this.giantAt.shift();
      if (size <= limit) {
        this.exchangePayout(trace, size);
        if (trace.nodes.length !== size) throw new Error(`giant trace of ${trace.nodes.length} transactions, wanted ${size}`);
        this.totals.giant++;
        return trace;
      }
    }
    const t = knobs.templates;
    const weights = [t.tonTransfer, t.walletOnly, t.jettonTransfer, t.stonfiSwap, t.dedustSwap, t.callContract, t.contractDeploy, t.exchangePayout];
    switch (r.weighted(weights)) {
      case 0: this.tonTransfer(trace, undefined); break;
      case 1: this.walletOnly(trace); break;
      case 2: this.jettonTransfer(trace); break;
      case 3: this.stonfiSwap(trace); break;
      case 4: this.dedustSwap(trace); break;
      case 5: this.callContract(trace); break;
      case 6: this.contractDeploy(trace); break;
      default: this.exchangePayout(trace, undefined); break;
    }
    if (trace.nodes.length > limit) {
      // The last trace of the dataset: a wallet batch of exactly the transactions left. Accounts and counters
      // the discarded plan touched stay as they are (it only cost some randomness).
      const exact = new Trace();
      if (limit === 1) this.walletOnly(exact);
      else this.tonTransfer(exact, limit);
      return exact;
    }
    if (trace.nodes.length >= 2 && r.chance(knobs.pendingShare)) {
      // Pending: a message at the edge of the trace is still on its way.
      const leaves = trace.nodes.filter((n) => n.children.length === 0 && n.parent !== undefined);
      const leaf = r.pick(leaves);
      leaf.dropped = true;
      trace.droppedEdges = 1;
    }
    return trace;
  }

  private startTrace(limit: number): number {
    const trace = this.plan(limit);
    const size = trace.nodes.length - trace.droppedEdges;
    trace.remaining = size;
    this.planned += size;
    this.inFlight++;
    this.queue.push(trace.nodes[0] as Node);
    return size;
  }

  private tickTock(account: number): void {
    const trace = new Trace();
    const node = this.node(trace, account, undefined, "none");
    node.gas = 2000 + this.random.int(10000);
    trace.remaining = 1;
    trace.actions.push({ type: "tick_tock", nodes: [node], success: true });
    this.planned++;
    this.inFlight++;
    this.execute(node);
  }

  // ---- Bodies ----

  // Bodies carrying a query_id: unique by construction, except with query_id 0, when they may repeat and are
  // written to message_contents through the set of shared bodies.

  private jettonBody(node: Node, op: number, queryId: number, amount: number, address: number | null, response: number | null): void {
    const a = this.accounts;
    const b = this.body.reset().uint(op, 32).uint64(queryId).coins(amount);
    if (address !== null) b.address(a.workchain[address] as number, a.accountId(address));
    if (response !== null) b.address(a.workchain[response] as number, a.accountId(response)).bit(false).coins(0);
    node.body = b.bit(false).finish();
    node.sharedBody = queryId === 0;
  }

  private excessBody(node: Node, queryId: number): void {
    // Excesses repeat even with a query_id: a trace often returns several with the one query_id it started with.
    node.body = this.body.reset().uint(Op.excesses, 32).uint64(queryId).finish();
    node.sharedBody = true;
  }

  private opBody(node: Node, op: number, queryId: number, amount: number, address: number | null): void {
    const b = this.body.reset().uint(op, 32).uint64(queryId).coins(amount);
    if (address !== null) b.address(this.accounts.workchain[address] as number, this.accounts.accountId(address));
    node.body = b.uint(this.random.next(), 32).finish();
    node.sharedBody = queryId === 0;
  }

  private writeBody(cell: BuiltCell, shared: boolean): void {
    if (shared || cell === emptyCell) {
      if (this.sharedBodies.has(cell.hash)) return;
      this.sharedBodies.add(cell.hash);
    }
    this.sink.write("message_contents", `${cell.hash}\t${cell.boc}\n`);
  }

  // ---- Execution ----

  private stateHash(id: number): string {
    const a = this.accounts;
    if (a.status[id] === Status.nonexist) return nonexistStateHash;
    const state = a.state[id] as number;
    if (state < 0 && a.known.has(id)) return (a.known.get(id) as KnownAccount).stateHash;
    return state < 0 ? this.hasher.base64(HashKind.accountState, 2 ** 40 + id) : this.hasher.base64(HashKind.accountState, state);
  }

  private dataHash(id: number): string | null {
    const a = this.accounts;
    if (a.status[id] !== Status.active) return null;
    const data = a.data[id] as number;
    if (data < 0 && a.known.has(id)) return (a.known.get(id) as KnownAccount).dataHash;
    return data < 0 ? this.hasher.base64(HashKind.accountData, 2 ** 40 + id) : this.hasher.base64(HashKind.accountData, data);
  }

  /** The hash of the account's last transaction: the dataset's, the database's (an adopted account) or the pre-dataset one. */
  private lastTransactionHash(id: number): string {
    const a = this.accounts;
    const last = a.lastTx[id] as number;
    if (last < 0 && a.known.has(id)) return (a.known.get(id) as KnownAccount).lastTransHash;
    return this.hasher.base64(HashKind.transaction, last < 0 ? 2 ** 40 + id : last);
  }

  private codeHash(id: number): string | null {
    return this.accounts.status[id] === Status.active ? (this.codes[this.accounts.code[id] as number] as CodeInfo).hash : null;
  }

  private stateRow(id: number, hash: string): void {
    const a = this.accounts;
    this.sink.write(
      "account_states",
      `${hash}\t${a.raw[id]}\t${a.balance[id]}\t{}\t${statusNames[a.status[id] as number]}\t\\N\t${this.dataHash(id) ?? NULL}\t${this.codeHash(id) ?? NULL}\n`,
    );
  }

  private execute(node: Node): void {
    const r = this.random;
    const a = this.accounts;
    const trace = node.trace;
    const id = node.account;
    const master = a.workchain[id] === -1;
    const block = master ? this.mcBlock : (this.shardBlocks[a.shard[id] as number] as BlockStats);
    const blockShard = master ? masterShard : (this.shardIds[a.shard[id] as number] as string);
    const blockWorkchain = master ? -1 : 0;
    const now = master ? this.utime : this.utime - 1;

    let lt = Math.max(this.baseLt + 1, a.nextLt[id] as number);
    if (node.inKind === "int" && lt <= node.createdLt) lt = node.createdLt + 1;
    // Follow mode: a trace's new transaction comes after all its others, so the batch's trace row has a higher end_lt
    // than the committed one and the worker's upsert (`where traces.end_lt < excluded.end_lt`) takes it; a lower lt
    // (a busy account of another branch ran ahead) would leave the row counting fewer transactions than are visible.
    if (this.live !== undefined && lt <= trace.endLt) lt = trace.endLt + 1;
    const txIndex = this.txCounter++;
    const txHash = this.hasher.base64(HashKind.transaction, txIndex);
    node.txHash = txHash;
    node.lt = lt;
    node.now = now;
    node.mcSeqno = this.mcSeqno;
    if (node.parent === undefined) {
      trace.id = txHash;
      trace.startLt = lt;
      trace.startUtime = now;
      trace.mcStart = this.mcSeqno;
    }
    const traceId = trace.id;

    // The external message arrives now: its hash is fixed, and its body is written with it.
    if (node.inKind === "ext") {
      const msgIndex = this.msgCounter++;
      node.msgHash = this.hasher.base64(HashKind.message, msgIndex);
      node.msgNorm = r.chance(knobs.normalizedHashShare) ? this.hasher.base64(HashKind.messageNorm, msgIndex) : null;
      trace.externalHash = node.msgHash;
      trace.externalNorm = node.msgNorm;
      this.writeBody(node.body, false);
      if (node.initHash !== null) this.writeInit(node);
      node.msgTail = `\\N\t${a.raw[id]}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t${node.opcode ?? NULL}\t\\N\t\\N\t\\N\t0\t${node.body.hash}\t${node.initHash ?? NULL}`;
    }

    // State before.
    const origStatus = a.status[id] as number;
    const stateBefore = this.stateHash(id);
    if (origStatus !== Status.nonexist && (a.state[id] as number) < 0 && a.genesisWritten[id] === 0) {
      a.genesisWritten[id] = 1;
      this.stateRow(id, stateBefore);
    }

    // Phases.
    const internal = node.inKind === "int";
    const credit = internal ? node.value : 0;
    const gasPrice = master ? 10000 : 400;
    // Storage is paid for the time since the account's last transaction (nothing before it exists).
    const storageFee = master || origStatus === Status.nonexist ? 0 : Math.round(Math.max(0, now - (a.lastNow[id] as number)) * 0.02 * (1 + r.float()));
    let status = origStatus;
    let activated = false;
    if (node.initHash !== null && status !== Status.active) {
      status = Status.active;
      activated = true;
    }
    // The compute phase is skipped without code (no_state), or when the message cannot buy the flat gas
    // (no_gas: the 1-nanoton transfer notifications); else it runs, and fails when planned so.
    const gasLimit = internal ? Math.min(1_000_000, Math.floor(credit / gasPrice)) : 0;
    const skipReason = status !== Status.active ? "no_state" : internal && !master && credit < flatGasPrice ? "no_gas" : null;
    const computeSkipped = skipReason !== null;
    const computeSuccess = !computeSkipped && node.fail !== 1;
    const aborted = !computeSuccess;
    node.aborted = aborted;
    let gasUsed = computeSkipped ? 0 : node.gas + r.int(Math.max(1, node.gas >> 3));
    if (internal && gasUsed > gasLimit) gasUsed = gasLimit;
    const gasFees = master ? 0 : gasUsed * gasPrice;

    // Out messages (children that carry the trace on, and logs).
    const children = node.children;
    let outValue = 0;
    let fwdTotal = 0;
    let outBits = 0;
    let nextLt = lt + 1;
    for (const child of children) {
      const msgIndex = this.msgCounter++;
      child.msgHash = this.hasher.base64(HashKind.message, msgIndex);
      child.createdLt = nextLt++;
      child.createdAt = now;
      const bits = child.body === emptyCell ? 0 : Math.ceil(child.body.boc.length * 0.75) * 8;
      child.fwdFee = 266_669 + bits * 120 + (child.initHash === null ? 0 : 300_000);
      fwdTotal += child.fwdFee;
      outBits += bits + 600;
      outValue += child.value;
      this.writeBody(child.body, child.sharedBody);
      if (child.initHash !== null) this.writeInit(child);
      child.msgTail =
        `${a.raw[id]}\t${a.raw[child.account]}\t${child.value}\t{}\t${child.fwdFee}\t0\t0\t${child.createdLt}\t${now}\t` +
        `${child.opcode === null ? NULL : child.opcode | 0}\tt\t${bool(child.bounce)}\t${bool(child.bounced)}\t\\N\t${child.body.hash}\t${child.initHash ?? NULL}`;
      this.sink.write("messages", `${txHash}\t${lt}\t${this.mcSeqno}\t${child.msgHash}\t\\N\tout\t${traceId}\t${child.msgTail}\n`);
      this.totals.messages++;
      if (child.dropped) {
        trace.droppedSent++;
        continue;
      }
      trace.inFlightMessages++;
      if (child.delay === 0 && !master) this.queue.push(child);
      else this.schedule(child);
    }
    for (let i = 0; i < node.logs; i++) {
      const msgIndex = this.msgCounter++;
      const log = this.body.reset().uint(node.logOpcode, 32).uint64(this.queryCounter++).coins(credit).finish();
      this.writeBody(log, false);
      this.sink.write(
        "messages",
        `${txHash}\t${lt}\t${this.mcSeqno}\t${this.hasher.base64(HashKind.message, msgIndex)}\t\\N\tout\t${traceId}\t${a.raw[id]}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t${nextLt++}\t${now}\t${node.logOpcode | 0}\t\\N\t\\N\t\\N\t\\N\t${log.hash}\t\\N\n`,
      );
      this.totals.messages++;
      outBits += 400;
    }
    const outCount = children.length + node.logs;
    const actionFees = Math.round(fwdTotal / 3);
    const totalFees = gasFees + storageFee + actionFees;

    // The in message's row.
    if (node.inKind !== "none") {
      this.sink.write("messages", `${txHash}\t${lt}\t${this.mcSeqno}\t${node.msgHash}\t${node.msgNorm ?? NULL}\tin\t${traceId}\t${node.msgTail}\n`);
      this.totals.messages++;
    }

    // Balance and state after.
    let balance = (a.balance[id] as number) + credit - totalFees - (aborted ? 0 : outValue);
    if (aborted && node.bounce) balance -= credit; // the value goes back with the bounce
    if (balance < 0) balance = r.int(1000);
    a.balance[id] = Math.round(balance);
    if (computeSkipped && node.bounce) status = origStatus; // bounced: nothing stays
    else if (computeSkipped && origStatus === Status.nonexist) status = Status.uninit;
    a.status[id] = status;
    let stateAfter: string;
    if (status === Status.nonexist) {
      stateAfter = nonexistStateHash;
    } else {
      a.state[id] = this.stateCounter++;
      if (computeSuccess && (node.inKind === "ext" || a.kind[id] !== Kind.wallet || activated)) a.data[id] = this.dataCounter++;
      stateAfter = this.hasher.base64(HashKind.accountState, a.state[id] as number);
      this.stateRow(id, stateAfter);
    }

    // The transaction row.
    const prevTx = a.lastTx[id] as number;
    const prevHash = origStatus === Status.nonexist && prevTx < 0 ? zeroHash : this.lastTransactionHash(id);
    const prevLt = origStatus === Status.nonexist && prevTx < 0 ? 0 : (a.lastLt[id] as number);
    const tick = node.inKind === "none";
    const creditPh = internal ? `\\N\t${credit}\t{}` : "\\N\t\\N\t\\N";
    const compute = computeSkipped
      ? `t\t${skipReason}\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N`
      : `f\t\\N\t${bool(computeSuccess)}\tf\t${bool(activated)}\t${gasFees}\t${gasUsed}\t${gasLimit}\t${internal || tick ? NULL : 10000}\t0\t${computeSuccess ? 0 : node.exitCode}\t\\N\t${Math.round(gasUsed / 22)}\t${zeroHash}\t${zeroHash}`;
    const action = aborted
      ? `\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N`
      : `t\tt\tf\tunchanged\t${outCount === 0 ? NULL : fwdTotal}\t${outCount === 0 ? NULL : actionFees}\t0\t\\N\t${outCount}\t0\t0\t${outCount}\t` +
        `${outCount === 0 ? emptyCell.hash : this.hasher.base64(HashKind.actionList, txIndex)}\t${outCount}\t${outBits}`;
    const bounce = aborted && node.bounce ? `ok\t1\t${300 + r.int(400)}\t\\N\t266669\t177779` : `\\N\t\\N\t\\N\t\\N\t\\N\t\\N`;
    this.sink.write(
      "transactions",
      `${a.raw[id]}\t${txHash}\t${lt}\t${blockWorkchain}\t${blockShard}\t${block.seqno}\t${this.mcSeqno}\t${traceId}\t${prevHash}\t${prevLt}\t${now}\t` +
        `${statusNames[origStatus]}\t${statusNames[status]}\t${totalFees}\t{}\t${stateBefore}\t${stateAfter}\t${tick ? "tick_tock" : "ord"}\t` +
        `${bool(aborted)}\tf\t${tick ? NULL : bool(!node.bounce)}\t${tick ? "f" : NULL}\t\\N\t${storageFee}\t\\N\tunchanged\t${creditPh}\t${compute}\t${action}\t` +
        `${bounce}\t\\N\t\\N\t\\N\t\\N\n`,
    );

    // Bookkeeping.
    a.lastTx[id] = txIndex;
    a.lastLt[id] = lt;
    a.nextLt[id] = nextLt;
    a.lastNow[id] = now;
    a.txs[id] = (a.txs[id] as number) + 1;
    block.txCount++;
    if (nextLt > block.endLt) block.endLt = nextLt;
    trace.executed++;
    if (node.inKind === "int") trace.inFlightMessages--;
    if (this.live !== undefined) {
      this.touchedTraces.add(trace);
      this.touchedAccounts.add(id);
      this.roundTransactions++;
    }
    trace.edges += (node.inKind === "none" ? 0 : 1) + node.logs;
    if (lt > trace.endLt) trace.endLt = lt;
    if (now > trace.endUtime) trace.endUtime = now;
    if (this.mcSeqno > trace.mcEnd) trace.mcEnd = this.mcSeqno;
    if (--trace.remaining === 0) this.finish(trace);
  }

  private writeInit(node: Node): void {
    // A StateInit is keyed by its hash like any body, so write each one once.
    if (this.sharedBodies.has(node.initHash as string)) return;
    this.sharedBodies.add(node.initHash as string);
    this.accounts.initWritten[node.account] = 1;
    this.sink.write("message_contents", `${node.initHash}\t${node.initBoc}\n`);
  }

  private schedule(node: Node): void {
    const round = this.round + Math.max(1, node.delay) * (this.live?.deliverySpacing ?? 1);
    const list = this.scheduled.get(round);
    if (list === undefined) this.scheduled.set(round, [node]);
    else list.push(node);
  }

  private finish(trace: Trace): void {
    this.inFlight--;
    this.totals.traces++;
    if (trace.executed > this.totals.largest) this.totals.largest = trace.executed;
    const pending = trace.droppedEdges > 0;
    if (pending) this.totals.pending++;
    if (this.live !== undefined) {
      // The row goes with the round's other trace rows (endRound); the classifier writes the actions later.
      this.roundCompleted++;
      if (!pending) {
        const rows = { actions: [] as string[], actionAccounts: [] as string[] };
        for (const action of trace.actions) this.actionRows(trace, action, rows);
        this.live.classifiable(trace.id, this.mcSeqno, rows);
      }
      return;
    }
    const classified = !pending && this.planned < this.unclassifiedFrom;
    this.sink.write("traces", this.traceLine(trace, classified ? "ok" : "unclassified"));
    if (classified) for (const action of trace.actions) this.sink.write("actions", this.actionRows(trace, action).actions[0] as string);
  }

  /**
   * The trace's row as it stands: complete, or pending while messages of it are on their way (a live trace still
   * growing, or one whose last message is never delivered).
   */
  private traceLine(trace: Trace, classification: "ok" | "unclassified"): string {
    // Sent and not received: the dropped messages already sent, and those a transaction of the trace has yet to receive.
    const pendingEdges = trace.droppedSent + trace.inFlightMessages;
    return (
      `${trace.id}\t${trace.externalHash ?? NULL}\t${trace.externalNorm ?? NULL}\t${trace.mcStart}\t${trace.mcEnd}\t${trace.startLt}\t${trace.startUtime}\t` +
      `${trace.endLt}\t${trace.endUtime}\t${pendingEdges > 0 ? "pending" : "complete"}\t${pendingEdges}\t${trace.edges}\t${trace.executed}\t` +
      `${classification}\n`
    );
  }

  /** The action's row (and, in follow mode, its action_accounts rows), appended to `rows`. */
  private actionRows(trace: Trace, action: ActionSpec, rows = { actions: [] as string[], actionAccounts: [] as string[] }): { actions: string[]; actionAccounts: string[] } {
    const a = this.accounts;
    const addr = (id: number | undefined | null) => (id === undefined || id === null ? NULL : (a.raw[id] as string));
    let startLt = Number.POSITIVE_INFINITY;
    let endLt = 0;
    let startUtime = Number.POSITIVE_INFINITY;
    let endUtime = 0;
    let mcEnd = 0;
    const hashes: string[] = [];
    for (const node of action.nodes) {
      if (node.txHash === "") continue;
      hashes.push(node.txHash);
      if (node.lt < startLt) startLt = node.lt;
      if (node.lt > endLt) endLt = node.lt;
      if (node.now < startUtime) startUtime = node.now;
      if (node.now > endUtime) endUtime = node.now;
      if (node.mcSeqno > mcEnd) mcEnd = node.mcSeqno;
    }
    const actionId = this.hasher.base64(HashKind.action, this.actionCounter++);
    if (this.live !== undefined) {
      // The classifier lists every account an action involves, once each.
      const involved = new Set([action.source, action.sourceSecondary, action.destination, action.destinationSecondary].filter((id) => id !== undefined));
      for (const id of involved) {
        rows.actionAccounts.push(`${actionId}\t${trace.id}\t${a.raw[id]}\t${trace.endLt}\t${endLt}\t${trace.endUtime}\t${endUtime}\n`);
      }
    }
    const tonTransfer = action.type === "ton_transfer" ? copyText(composite([action.comment ?? null, false])) : NULL;
    const j = action.jetton;
    const jettonTransfer =
      j === undefined ? NULL : copyText(composite([addr(j.responseDestination), j.forwardAmount, j.queryId, null, null, j.comment, false]));
    const s = action.swap;
    const dexTransfer = (t: DexTransfer) =>
      composite([t.amount, t.asset === null ? null : addr(t.asset), addr(t.source), addr(t.destination), t.sourceJettonWallet === null ? null : addr(t.sourceJettonWallet), t.destinationJettonWallet === null ? null : addr(t.destinationJettonWallet)]);
    const swap = s === undefined ? NULL : copyText(composite([s.dex, addr(action.source), dexTransfer(s.incoming), dexTransfer(s.outgoing), "{}", null]));
    rows.actions.push(
      `${trace.id}\t${actionId}\t${startLt}\t${endLt}\t${startUtime}\t${endUtime}\t${addr(action.source)}\t${addr(action.sourceSecondary)}\t` +
        `${addr(action.destination)}\t${addr(action.destinationSecondary)}\t${addr(action.asset)}\t\\N\t${addr(action.asset2)}\t\\N\t` +
        `${action.opcode === undefined || action.opcode === null ? NULL : action.opcode >>> 0}\t${plainArray(hashes)}\t${action.type}\t${tonTransfer}\t` +
        `${num(action.value ?? null)}\t${num(action.amount ?? null)}\t${jettonTransfer}\t${swap}\t${bool(action.success)}\t${trace.endLt}\t` +
        `${trace.externalHash ?? NULL}\t${trace.externalNorm ?? NULL}\t${trace.endUtime}\t${mcEnd}\t${trace.mcEnd}\t\\N\t{}\t{}\n`,
    );
    this.totals.actions++;
    return rows;
  }

  // ---- Rounds and blocks ----

  private beginRound(): void {
    this.mcSeqno = this.mc0 + this.round;
    this.baseLt = this.lt0 + Math.round(this.round * 1.0692) * 1_000_000;
    this.mcBlock.seqno = this.mcSeqno;
    this.mcBlock.txCount = 0;
    this.mcBlock.endLt = this.baseLt + 1;
    for (let s = 0; s < this.shards; s++) {
      const block = this.shardBlocks[s] as BlockStats;
      block.seqno = (this.shardSeqno0[s] as number) + this.round;
      block.txCount = 0;
      block.endLt = this.baseLt + 1;
    }
  }

  private endRound(): void {
    const r = this.random;
    const mc = this.mcSeqno;
    const catchain = Math.floor(mc / 70);
    const validatorList = this.hasher.bytes(HashKind.createdBy, 1_000_000 + Math.floor(mc / 65536)).readInt32LE(0);
    const prevKey = mc - (mc % 16384);
    const row = (workchain: number, shard: string, block: BlockStats, startLt: number, utime: number, mcRef: number, prev: string) => {
      const index = this.blockCounter++;
      const createdBy = this.hasher.base64(HashKind.createdBy, r.int(this.validators));
      this.sink.write(
        "blocks",
        `${workchain}\t${shard}\t${block.seqno}\t${this.hasher.base64(HashKind.blockRoot, index)}\t${this.hasher.base64(HashKind.blockFile, index)}\t` +
          `-1\t${masterShard}\t${mc}\t${globalId}\t0\tf\tf\tf\t${bool(workchain === -1)}\tf\t${bool(workchain === -1 && mc % 16384 === 0)}\tf\t1\t` +
          `${utime}\t${startLt}\t${block.endLt}\t${validatorList}\t${catchain}\t${mc - (workchain === -1 ? 0 : 1)}\t${prevKey}\t${workchain === -1 ? 1 : 0}\t` +
          `${mcRef}\t${this.hasher.base64(HashKind.randSeed, index)}\t${createdBy}\t${block.txCount}\t{"${prev}"}\n`,
      );
    };
    row(-1, masterShard, this.mcBlock, this.baseLt, this.utime, 0, `(-1,${masterShard},${mc - 1})`);
    this.sink.write("shard_state", `${mc}\t-1\t${masterShard}\t${mc}\n`);
    for (let s = 0; s < this.shards; s++) {
      const block = this.shardBlocks[s] as BlockStats;
      const shard = this.shardIds[s] as string;
      row(0, shard, block, this.baseLt, this.utime - 1, mc - 1, `(0,${shard},${block.seqno - 1})`);
      this.sink.write("shard_state", `${mc}\t0\t${shard}\t${block.seqno}\n`);
      this.totals.shardBlocks++;
    }
    this.utime += r.range(knobs.roundSeconds[0], knobs.roundSeconds[1]);
  }

  /** One round: a masterchain block and a block per shard, with the transactions they hold. */
  private playRound(target: number): void {
    this.beginRound();
    this.queue = this.scheduled.get(this.round) ?? [];
    this.scheduled.delete(this.round);
    for (let i = 0; i < knobs.tickTocksPerMcBlock && this.planned < this.n; i++) {
      this.tickTock(i % 2 === 0 ? this.elector : this.config);
      this.roundStarted++;
    }
    const want = target * (0.6 + 0.8 * this.random.float());
    for (let started = 0; started < want && this.planned < this.n; ) {
      started += this.startTrace(this.n - this.planned);
      this.roundStarted++;
    }
    for (let i = 0; i < this.queue.length; i++) this.execute(this.queue[i] as Node);
    this.endRound();
  }

  /**
   * Follow mode: the next round, written to the sink as one batch of the worker would write it: the blocks and what
   * they hold, the row of every trace that grew in it, and the latest state of every account it touched.
   */
  step(): RoundInfo {
    const live = this.live;
    if (live === undefined) throw new Error("step() is for follow mode (the live option)");
    this.roundTransactions = 0;
    this.roundStarted = 0;
    this.roundCompleted = 0;
    this.playRound(live.transactionsPerRound);
    for (const trace of this.touchedTraces) this.sink.write("traces", this.traceLine(trace, "unclassified"));
    for (const id of this.touchedAccounts) {
      // As in the generated tables, an account that does not exist (a bounce to nowhere) has no latest state.
      if (this.accounts.status[id] !== Status.nonexist) this.sink.write("latest_account_states", this.latestStateLine(id));
    }
    this.touchedTraces.clear();
    this.touchedAccounts.clear();
    const info = { mcSeqno: this.mcSeqno, transactions: this.roundTransactions, tracesStarted: this.roundStarted, tracesCompleted: this.roundCompleted };
    this.round++;
    return info;
  }

  async run(): Promise<Summary> {
    if (this.live !== undefined) throw new Error("run() generates a fixed chain; follow mode goes round by round with step()");
    const target = knobs.txPerShardBlock * this.shards;
    for (this.round = 0; ; this.round++) {
      this.playRound(target);
      if (this.afterRound !== undefined) await this.afterRound({ transactions: this.txCounter, rounds: this.round + 1, tracesInFlight: this.inFlight });
      if (this.planned >= this.n && this.scheduled.size === 0 && this.inFlight === 0) break;
      if (this.planned >= this.n && this.scheduled.size === 0) throw new Error(`${this.inFlight} traces never finished`);
    }
    if (this.txCounter !== this.n) throw new Error(`generated ${this.txCounter} transactions, wanted ${this.n}`);
    this.writeAccountTables();
    return this.summary();
  }

  // ---- Account-derived tables, at the end ----

  private writeAccountTables(): void {
    const a = this.accounts;
    const r = this.random;
    for (let id = 0; id < a.count; id++) {
      const status = a.status[id] as number;
      if (status === Status.nonexist) continue;
      this.sink.write("latest_account_states", this.latestStateLine(id));
      if (a.kind[id] === Kind.jettonWallet) {
        const info = this.jettons[a.jetton[id] as number] as JettonInfo;
        this.sink.write(
          "jetton_wallets",
          `${a.raw[id]}\t${Math.max(0, a.jettonBalance[id] as number)}\t${a.raw[a.owner[id] as number]}\t${a.raw[info.master]}\t${a.lastLt[id]}\t` +
            `${this.codeHash(id) ?? NULL}\t${this.dataHash(id) ?? NULL}\n`,
        );
      }
      if (a.kind[id] === Kind.wallet && status === Status.active && r.chance(knobs.domainShare)) {
        const item = this.hasher.hex(HashKind.address, 2 ** 41 + id);
        this.sink.write(
          "dns_entries",
          `0:${item}\t${a.raw[id]}\t${domainName(id)}.ton\t\\N\t${a.raw[id]}\t${a.lastLt[id]}\n`,
        );
      }
    }
    for (const [j, info] of this.jettons.entries()) {
      const master = info.master;
      const content = JSON.stringify({ uri: `https://example.org/jettons/${j}.json` });
      const walletCode = (this.codes[info.walletCode] as CodeInfo).hash;
      this.sink.write(
        "jetton_masters",
        `${a.raw[master]}\t${Math.round(1e9 * 10 ** Math.min(info.decimals, 6))}\tt\t${a.raw[this.wallets[j] as number]}\t${copyText(content)}\t${walletCode}\t` +
          `${a.lastLt[master]}\t${this.codeHash(master)}\t${this.dataHash(master)}\n`,
      );
      const extra = JSON.stringify({ decimals: String(info.decimals), _image_small: `https://example.org/img/${j}/small.png` });
      this.sink.write(
        "address_metadata",
        `${a.raw[master]}\tjetton_masters\tt\t${copyText(info.name)}\t${copyText(`${info.name}: a synthetic jetton`)}\t${copyText(extra)}\t` +
          `${copyText(info.symbol)}\thttps://example.org/img/${j}.png\t${this.utime}\t${this.utime + 86400}\tt\n`,
      );
    }
    for (const code of this.codes) {
      if (code.methods.length === 0) continue;
      const ids = [...new Set(code.methods.map(getMethodId))].sort((x, y) => x - y);
      this.sink.write("contract_methods", `${code.hash}\t${plainArray(ids)}\n`);
    }
  }

  private latestStateLine(id: number): string {
    const a = this.accounts;
    return (
      `${a.raw[id]}\t\\N\t${this.stateHash(id)}\t${a.balance[id]}\t{}\t${statusNames[a.status[id] as number]}\t${a.lastNow[id]}\t` +
      `${this.lastTransactionHash(id)}\t${a.lastLt[id]}\t\\N\t${this.dataHash(id) ?? NULL}\t${this.codeHash(id) ?? NULL}\t\\N\t\\N\n`
    );
  }

  private summary(): Summary {
    const a = this.accounts;
    const top: { account: string; transactions: number }[] = [];
    const order = Array.from({ length: a.count }, (_, i) => i).sort((x, y) => (a.txs[y] as number) - (a.txs[x] as number));
    for (const id of order.slice(0, 5)) top.push({ account: a.raw[id] as string, transactions: a.txs[id] as number });
    let accounts = 0;
    for (let id = 0; id < a.count; id++) if (a.status[id] !== Status.nonexist) accounts++;
    return {
      transactions: this.txCounter,
      messages: this.totals.messages,
      traces: this.totals.traces,
      pendingTraces: this.totals.pending,
      giantTraces: this.totals.giant,
      actions: this.totals.actions,
      accounts,
      masterchainBlocks: this.round + 1,
      shardBlocks: this.totals.shardBlocks,
      firstUtime: this.firstUtime,
      lastUtime: this.utime,
      topAccounts: top,
      largestTrace: this.totals.largest,
    };
  }
}

function domainName(id: number): string {
  const syllables = ["ka", "to", "mi", "ra", "zen", "lo", "vi", "no", "sa", "ter", "ox", "qu"];
  let name = "";
  for (let v = id + 7; v > 0; v = Math.floor(v / syllables.length)) name += syllables[v % syllables.length];
  return name;
}
