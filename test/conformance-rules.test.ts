import { describe, expect, it } from "vitest";
import { conformTransaction } from "./support/conformance.ts";

// The exception list's rules on their own, for the forms no recording in fixtures/ carries.
describe("the conformance exception list", () => {
  it("takes a 2024 skipped compute phase ({type: skipped, skip_reason}) as ours ({skipped: true, reason})", () => {
    const ours = { description: { compute_ph: { skipped: true, reason: "no_state" } } };
    const recorded = { description: { compute_ph: { type: "skipped", skip_reason: "no_state" } } };
    expect(conformTransaction(ours, recorded)).toEqual(recorded);
  });

  it("does not take a skipped compute phase with another reason as ours", () => {
    const ours = { description: { compute_ph: { skipped: true, reason: "no_gas" } } };
    const recorded = { description: { compute_ph: { type: "skipped", skip_reason: "no_state" } } };
    expect(conformTransaction(ours, recorded)).not.toEqual(recorded);
  });
});
