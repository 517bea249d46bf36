import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

// src/encode/proto/writer.ts's ProtoWriter on @bufbuild/protobuf/wire's BinaryWriter, field for field: what
// bench/proto-writer.ts puts in its place (through a module hook) to compare the two byte writers on the same encoder.
// Not used by the service.

export const varint = 0;
export const bit64 = 1;
export const lengthDelimited = 2;

export class ProtoWriter {
  #w = new BinaryWriter();
  #depth = 0;

  reset(): void {
    // A writer left half-written (a failed message) still has forks open: a fresh one then.
    if (this.#depth !== 0) this.#w = new BinaryWriter();
    this.#depth = 0;
    this.#w.finish();
  }

  capacity(): number {
    return 0;
  }

  finish(): Uint8Array {
    return this.#w.finish();
  }

  tag(no: number, wire: number): void {
    this.#w.tag(no, wire);
  }

  string(no: number, value: string): void {
    this.#w.tag(no, WireType.LengthDelimited).string(value);
  }

  bool(no: number, value: boolean): void {
    this.#w.tag(no, WireType.Varint).bool(value);
  }

  int32(no: number, value: number): void {
    this.#w.tag(no, WireType.Varint).int32(value);
  }

  uint32(no: number, value: number): void {
    this.#w.tag(no, WireType.Varint).uint32(value);
  }

  int64(no: number, value: string | number | bigint): void {
    this.#w.tag(no, WireType.Varint).int64(value);
  }

  double(no: number, value: number): void {
    this.#w.tag(no, WireType.Bit64).double(value);
  }

  raw(no: number, wire: number, bytes: Uint8Array): void {
    this.#w.tag(no, wire).raw(bytes);
  }

  fork(no: number): void {
    this.#w.tag(no, WireType.LengthDelimited).fork();
    this.#depth++;
  }

  forkBare(): void {
    this.#w.fork();
    this.#depth++;
  }

  join(): void {
    this.#w.join();
    this.#depth--;
  }
}
