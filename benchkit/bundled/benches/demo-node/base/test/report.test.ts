import { describe, expect, it } from "vitest";
import { Invoice, LineItem } from "../src/invoice";
import { cell, report, reportedTotal, sumOfReports } from "../src/report";

function text(): string {
  const invoice = new Invoice("EU", "EUR");
  invoice.add(new LineItem("widget", 2, 5));
  return report(invoice);
}

describe("report", () => {
  it("lists items and totals", () => {
    expect(text()).toBe(
      "2 x widget @ 5.00 EUR\nsubtotal 10.00 EUR\ntax 2.00 EUR\ntotal 12.00 EUR",
    );
  });
  it("reads its total back", () => {
    expect(reportedTotal(text())).toBe(12);
  });
  it("sums reports", () => {
    expect(sumOfReports([text(), text()])).toBe("24.00 USD");
  });
  it("reads a cell", () => {
    expect(cell("1,234.505 USD")).toBe(1234.51);
  });
});
