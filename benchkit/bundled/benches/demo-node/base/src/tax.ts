import { roundMoney } from "./compat";

const RATES: Record<string, number> = { EU: 0.2, UK: 0.2, US: 0.07 };

/** The tax on an amount in a region, rounded to the cent. */
export function taxFor(amount: number, region: string): number {
  const rate = RATES[region];
  if (rate === undefined) {
    throw new Error(`no tax rate for ${region}`);
  }
  return roundMoney(amount * rate);
}

/** The amount with its tax. */
export function withTax(amount: number, region: string): number {
  return roundMoney(amount + taxFor(amount, region));
}

/** The tax of a list of amounts, each rounded, then summed. */
export function taxOfEach(amounts: number[], region: string): number {
  return roundMoney(amounts.reduce((sum, amount) => sum + taxFor(amount, region), 0));
}
