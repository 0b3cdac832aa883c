import { fmtMoney, parseMoney } from "./compat";
import type { Invoice } from "./invoice";

/** The invoice as text: a line per item, then subtotal, tax and total. */
export function report(invoice: Invoice): string {
  const lines = invoice.items.map((item) => item.describe(invoice.currency));
  lines.push(`subtotal ${fmtMoney(invoice.subtotal(), invoice.currency)}`);
  lines.push(`tax ${fmtMoney(invoice.tax(), invoice.currency)}`);
  lines.push(`total ${invoice.totalText()}`);
  return lines.join("\n");
}

/** The total a report states, read back. */
export function reportedTotal(text: string): number {
  const last = text.split("\n").at(-1) ?? "";
  return parseMoney(last.replace("total ", ""));
}

/** The sum of the totals of many reports. */
export function sumOfReports(texts: string[]): string {
  const total = texts.reduce((sum, text) => sum + reportedTotal(text), 0);
  return fmtMoney(total);
}

/** An amount read from an imported spreadsheet cell ("1,234.50 USD"). */
export function cell(text: string): number {
  return parseMoney(text);
}
