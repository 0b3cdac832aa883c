import { existsSync, unlinkSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Deadline } from "../src/clock";

// A timing test: it fails when the machine stalls between two lines. To make it
// fail once on purpose, create `.flake-once` at the repository's root; the next
// run of this file consumes it, stalls, and fails; the run after passes again.
const STALL_TOKEN = fileURLToPath(new URL("../.flake-once", import.meta.url));

function maybeStall(seconds: number): void {
  if (existsSync(STALL_TOKEN)) {
    unlinkSync(STALL_TOKEN);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, seconds * 1000);
  }
}

describe("Deadline", () => {
  it("is not expired right after its start", () => {
    const deadline = new Deadline(0.3);
    maybeStall(0.4);
    expect(deadline.expired()).toBe(false);
  });
  it("never has a negative remainder", () => {
    const deadline = new Deadline(0);
    expect(deadline.remaining()).toBe(0);
    expect(deadline.expired()).toBe(true);
  });
});
