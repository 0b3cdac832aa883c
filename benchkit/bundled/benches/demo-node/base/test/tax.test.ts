import { describe, expect, it } from "vitest";
import { taxFor, taxOfEach, withTax } from "../src/tax";

describe("tax", () => {
  it("rounds the tax to the cent", () => {
    expect(taxFor(10.05, "US")).toBe(0.7);
  });
  it("rounds half a cent up", () => {
    expect(taxFor(0.25, "EU")).toBe(0.05);
    expect(taxFor(12.25, "US")).toBe(0.86);
  });
  it("adds the tax", () => {
    expect(withTax(100, "UK")).toBe(120);
  });
  it("taxes each amount", () => {
    expect(taxOfEach([10.05, 10.05], "US")).toBe(1.4);
  });
  it("knows no other region", () => {
    expect(() => taxFor(1, "XX")).toThrow("no tax rate");
  });
});
