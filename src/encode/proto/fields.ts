import type { ProtoWriter } from "./writer.ts";

// Field presence as toBinary writes it. A field with explicit presence (proto3 `optional`, a message) is written
// whenever the scanned object has it, even at its zero value: here, whenever the column is not NULL (scanning
// turns NULL into an absent field). A field without (proto3 implicit presence) is left out at its zero value:
// "", false, and for integers whatever protobuf-es's loose `value != 0` takes for zero ("0", 0, 0n).

export function optionalString(w: ProtoWriter, no: number, value: string | null | undefined): void {
  if (value != null) w.string(no, value);
}

export function optionalInt64(w: ProtoWriter, no: number, value: string | number | bigint | null | undefined): void {
  if (value != null) w.int64(no, value);
}

export function optionalInt32(w: ProtoWriter, no: number, value: number | null | undefined): void {
  if (value != null) w.int32(no, value);
}

export function optionalBool(w: ProtoWriter, no: number, value: boolean | null | undefined): void {
  if (value != null) w.bool(no, value);
}

export function implicitString(w: ProtoWriter, no: number, value: string): void {
  if (value !== "") w.string(no, value);
}

export function implicitInt64(w: ProtoWriter, no: number, value: string | number | bigint): void {
  if ((value as number) != 0) w.int64(no, value);
}

export function implicitInt32(w: ProtoWriter, no: number, value: number): void {
  if (value != 0) w.int32(no, value);
}

export function implicitBool(w: ProtoWriter, no: number, value: boolean): void {
  if (value) w.bool(no, true);
}
