/**
 * Float helpers from before `Money`. Deprecated: use `Money.of(x).round()`,
 * `Money.of(x, currency).format()` and `Money.parse(text)`.
 */

/** @deprecated use `Money.of(x).round().toNumber()` */
export function roundMoney(amount: number): number {
  return Math.round(amount * 100 + Number.EPSILON) / 100;
}

/** @deprecated use `Money.of(x, currency).format()` */
export function fmtMoney(amount: number, currency = "USD"): string {
  return `${roundMoney(amount).toFixed(2)} ${currency}`;
}

/** @deprecated use `Money.parse(text).toNumber()` */
export function parseMoney(text: string): number {
  const amount = Number.parseFloat(text.trim().split(" ")[0].replaceAll(",", ""));
  if (Number.isNaN(amount)) {
    throw new Error(`not an amount: ${text}`);
  }
  return roundMoney(amount);
}
