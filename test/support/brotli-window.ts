/**
 * The window a brotli stream declares in its first bits (RFC 7932 §9.1, WBITS): its encoder keeps that much of the
 * text behind it, and its decoder must hold as much, so it bounds the memory of both ends.
 */
export function brotliWindowBytes(stream: Buffer): number {
  const first = stream[0];
  if (first === undefined) throw new Error("an empty brotli stream has no header");
  if ((first & 1) === 0) return 2 ** 16;
  const wide = (first >> 1) & 7;
  if (wide !== 0) return 2 ** (17 + wide);
  const narrow = (first >> 4) & 7;
  if (narrow === 1) throw new Error("a large-window brotli stream (not RFC 7932)");
  return 2 ** (narrow === 0 ? 17 : 8 + narrow);
}
