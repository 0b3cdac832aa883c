import { describe, expect, it } from "vitest";
import { Invoice, LineItem } from "../src/invoice";

function invoice(): Invoice {
  const made = new Invoice("US");
  made.add(new LineItem("widget", 3, 2.675));
  made.add(new LineItem("gadget", 1, 10));
  return made;
}

describe("Invoice", () => {
  it("sums its items", () => {
    expect(invoice().subtotal()).toBe(18.02);
  });
  it("adds the tax", () => {
    expect(invoice().total()).toBe(19.28);
  });
  it("says its total", () => {
    expect(invoice().totalText()).toBe("19.28 USD");
  });
  it("describes an item", () => {
    expect(new LineItem("widget", 3, 2.675).describe("EUR")).toBe("3 x widget @ 2.68 EUR");
  });
});
