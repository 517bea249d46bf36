import { hash } from "node:crypto";

// Seeded randomness for the synthetic chain. Everything the generator writes derives from one seed through
// these: a small PRNG (sfc32) for decisions, and SHA-256 of (seed, kind, counter) for the 32-byte hashes, so a
// hash is unique by construction (distinct inputs) and looks like a real one (uniformly spread, which matters
// for the B-tree indexes built on them). No Math.random, no clock.

/** sfc32 (Chris Doty-Humphrey's Small Fast Counting generator): 128-bit state, 32-bit output, passes PractRand. */
export class Random {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = 0) {
    this.a = 0x9e3779b9 ^ stream;
    this.b = seed | 0;
    this.c = (seed / 0x100000000) | 0;
    this.d = 1;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** A uniform unsigned 32-bit integer. */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 0x100000000;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Uniform integer in [min, max]. */
  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Index into `weights` chosen with probability proportional to its weight. */
  weighted(weights: readonly number[]): number {
    let total = 0;
    for (const w of weights) total += w;
    let x = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i] as number;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }

  /** Log-uniform in [min, max): amounts spread over orders of magnitude, as balances and transfers are. */
  logUniform(min: number, max: number): number {
    return Math.exp(Math.log(min) + this.float() * (Math.log(max) - Math.log(min)));
  }

  /** Pareto-distributed integer >= min with tail index alpha (smaller alpha, heavier tail), capped at max. */
  pareto(min: number, alpha: number, max: number): number {
    const x = Math.floor(min / Math.pow(1 - this.float(), 1 / alpha));
    return x > max ? max : x;
  }

  /** A signed 32-bit integer. */
  int32(): number {
    return this.next() | 0;
  }
}

/**
 * Zipf-like ranks: rank r in [0, n) is drawn with probability proportional to 1 / (r + 1)^s, except that the
 * first ranks may be given fixed shares (`head`): the few accounts everybody deals with (exchanges, services)
 * are busier than a pure power law makes its first ranks. The cumulative table costs 8 bytes a rank; a draw is
 * a binary search.
 */
export class Zipf {
  readonly n: number;
  private readonly cdf: Float64Array;

  constructor(n: number, s: number, head: readonly number[] = []) {
    this.n = n;
    this.cdf = new Float64Array(n);
    const fixed = Math.min(head.length, n);
    let headShare = 0;
    for (let r = 0; r < fixed; r++) headShare += head[r] as number;
    let tail = 0;
    for (let r = fixed; r < n; r++) tail += 1 / Math.pow(r + 1, s);
    const tailShare = fixed === n ? 0 : 1 - headShare;
    let sum = 0;
    for (let r = 0; r < n; r++) {
      sum += r < fixed ? (head[r] as number) / (fixed === n ? headShare : 1) : (tailShare * (1 / Math.pow(r + 1, s))) / tail;
      this.cdf[r] = sum;
    }
    this.cdf[n - 1] = 1;
  }

  /** The probability of rank r. */
  share(r: number): number {
    return (this.cdf[r] as number) - (r === 0 ? 0 : (this.cdf[r - 1] as number));
  }

  sample(random: Random): number {
    const x = random.float();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.cdf[mid] as number) <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** What a derived hash is of; part of the hashed input, so hashes of different kinds never coincide. */
export const HashKind = {
  transaction: 1,
  message: 2,
  messageNorm: 3,
  accountState: 4,
  accountData: 5,
  action: 6,
  blockRoot: 7,
  blockFile: 8,
  randSeed: 9,
  createdBy: 10,
  address: 11,
  vmState: 12,
  actionList: 13,
  signature: 14,
  codeHash: 15,
} as const;
export type HashKind = (typeof HashKind)[keyof typeof HashKind];

/** 32-byte hashes of (seed, kind, counter): deterministic, unique per (kind, counter). */
export class Hasher {
  private readonly input = Buffer.alloc(12);

  constructor(seed: number) {
    this.input.writeUInt32LE(seed >>> 0, 0);
  }

  bytes(kind: HashKind, counter: number): Buffer {
    this.input[4] = kind;
    this.input.writeUIntLE(counter, 5, 6);
    this.input[11] = 0;
    return hash("sha256", this.input, "buffer");
  }

  /** Standard padded base64, the index's form of a hash. */
  base64(kind: HashKind, counter: number): string {
    this.input[4] = kind;
    this.input.writeUIntLE(counter, 5, 6);
    this.input[11] = 0;
    return hash("sha256", this.input, "base64");
  }

  /** Upper-case hex of the hash: the account-id part of a raw address. */
  hex(kind: HashKind, counter: number): string {
    this.input[4] = kind;
    this.input.writeUIntLE(counter, 5, 6);
    this.input[11] = 0;
    return hash("sha256", this.input, "hex").toUpperCase();
  }
}
