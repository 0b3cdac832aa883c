import { describe, expect, it } from "vitest";
import { Money } from "../src/money";

describe("Money", () => {
  it("rounds half a cent up", () => {
    expect(Money.of(2.675).round().toNumber()).toBe(2.68);
  });
  it("formats with its currency", () => {
    expect(Money.of(3.5, "EUR").format()).toBe("3.50 EUR");
  });
  it("adds the same currency only", () => {
    expect(Money.of(1).plus(Money.of(2)).toNumber()).toBe(3);
    expect(() => Money.of(1).plus(Money.of(2, "EUR"))).toThrow("do not add");
  });
});
