// Scanning helpers shared by every resource's data access: the index's NULLs become absent optional fields.

export function optional<T>(value: T | null | undefined): T | undefined {
  return value ?? undefined;
}
